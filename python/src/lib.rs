//! `dupfind._native`: the engine for the Python package (python/dupfind/__init__.py), through
//! the library's `embed` entry points. Options arrive as the command line the CLI would be given
//! (the package builds it), so they are checked by the CLI's own parser and validation and a
//! refusal carries its message.

use std::ffi::{CStr, OsString};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use arrow_array::{RecordBatchIterator, RecordBatchReader};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule};
use rayon::prelude::*;

use dupfind::embed;

create_exception!(
    _native,
    DupfindError,
    PyException,
    "A run of dupfind that failed, with the CLI's message."
);

/// How often a waiting call looks for Ctrl-C (Python's signal handlers run only in the main
/// thread, between bytecodes or when asked): a tenth of a second is prompt to a person.
const SIGNAL_POLL: Duration = Duration::from_millis(100);

/// The `dupfind` command: the binary's `main` on `argv` (the program name first), in this
/// process; returns the exit status. An option error is printed and ends the process, as the
/// binary does.
#[pyfunction]
fn main(py: Python<'_>, argv: Vec<OsString>) -> i32 {
    py.detach(|| {
        let code = embed::main(&argv);
        // What the report left in stdout's buffer, before Python exits without Rust's cleanup.
        let _ = std::io::Write::flush(&mut std::io::stdout());
        code
    })
}

/// The command line `argv` parsed as the CLI parses it; a refusal is a ValueError with the
/// CLI's message (its first lines, without the usage that follows).
fn parse(argv: &[OsString]) -> PyResult<dupfind::cli::Cli> {
    dupfind::cli::try_parse_from(argv).map_err(|e| {
        let text = e.to_string();
        let text = text.split("\n\nUsage:").next().unwrap_or(&text);
        let text = text
            .split("\n\nFor more information")
            .next()
            .unwrap_or(text);
        PyValueError::new_err(text.trim().trim_start_matches("error: ").to_string())
    })
}

/// A refusal of the options after parsing (the CLI's "dupfind: …" message) or a failed run.
fn failed(err: anyhow::Error) -> PyErr {
    DupfindError::new_err(format!("{err:#}"))
}

/// Runs `dupfind scan …` (`argv`, the program name first) on a thread of its own and returns
/// its JSON report and exit status ([`detached`]); `cleanup`, the caller's temporary
/// directory, is removed by an interrupted scan when it ends.
#[pyfunction]
#[pyo3(signature = (argv, cleanup=None))]
fn scan(
    py: Python<'_>,
    argv: Vec<OsString>,
    cleanup: Option<PathBuf>,
) -> PyResult<(Py<PyBytes>, i32)> {
    let cli = parse(&argv)?;
    let (json, code) = detached(py, cleanup, move |abandoned| {
        embed::scan_json(cli, abandoned)
    })?;
    Ok((PyBytes::new(py, &json).unbind(), code.code()))
}

/// The name of a capsule holding an Arrow C stream (the Arrow PyCapsule interface).
const STREAM: &CStr = c"arrow_array_stream";

/// Runs `dupfind scan …` (`argv`) on the table `data` (any object with `__arrow_c_stream__`),
/// read through the Arrow C stream interface: its batches' buffers are read where they lie,
/// not copied. Its rows are named by the column `id_column` or by their numbers from 0.
/// Returns the JSON report, the exit status, and the five annotation columns for the rows, in
/// order, as a capsule of an Arrow C stream (`pyarrow.table()` of an object whose
/// `__arrow_c_stream__` returns it reads them, again without a copy).
#[pyfunction]
#[pyo3(signature = (data, argv, id_column=None))]
fn dedup<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    argv: Vec<OsString>,
    id_column: Option<String>,
) -> PyResult<(Py<PyBytes>, i32, Bound<'py, PyCapsule>)> {
    let cli = parse(&argv)?;
    let capsule = data.call_method0("__arrow_c_stream__")?;
    let capsule = capsule.cast_into::<PyCapsule>()?;
    let stream = capsule.pointer_checked(Some(STREAM))?;
    // SAFETY: a capsule named "arrow_array_stream" holds an FFI_ArrowArrayStream (the Arrow
    // PyCapsule interface), valid and aligned while the capsule lives; `from_raw` moves it out
    // and leaves a released stream, which the capsule's destructor then leaves alone.
    let reader = unsafe { RecordBatchStreamReader::from_raw(stream.as_ptr().cast()) }
        .map_err(|e| DupfindError::new_err(format!("cannot read the table: {e}")))?;
    let schema = reader.schema();
    let batches = (reader.collect::<Result<Vec<_>, _>>())
        .map_err(|e| DupfindError::new_err(format!("cannot read the table: {e}")))?;
    let (json, code, annotations) = detached(py, None, move |abandoned| {
        embed::scan_table(cli, (schema, batches), id_column.as_deref(), abandoned)
    })?;
    let schema = annotations.schema();
    let batches = RecordBatchIterator::new([Ok(annotations)], schema);
    let out = FFI_ArrowArrayStream::new(Box::new(batches));
    let out = PyCapsule::new_with_value(py, out, STREAM)?;
    Ok((PyBytes::new(py, &json).unbind(), code.code(), out))
}

/// Runs `work` on a thread of its own and returns its answer. Waits with the GIL released,
/// looking for Ctrl-C: then raises KeyboardInterrupt at once, leaving the work to end on its
/// own (the engine has no point to stop at), told by the flag it is given that nobody waits:
/// a scan then updates no index; `cleanup`, the caller's temporary directory, is removed when
/// the work ends, and the caller must leave it alone.
fn detached<T: Send + 'static>(
    py: Python<'_>,
    cleanup: Option<PathBuf>,
    work: impl FnOnce(&AtomicBool) -> anyhow::Result<T> + Send + 'static,
) -> PyResult<T> {
    let abandoned = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let worker = {
        let (abandoned, done, cleanup) = (abandoned.clone(), done.clone(), cleanup.clone());
        move || {
            let out = work(&abandoned);
            // With `abandoned` set first by the waiting side and `done` here, one side at
            // least sees the other's flag (both SeqCst): the directory is removed by whichever
            // sees it, never left behind.
            done.store(true, Ordering::SeqCst);
            if abandoned.load(Ordering::SeqCst) {
                remove(cleanup.as_deref());
            }
            let _ = tx.send(out);
        }
    };
    if let Err(e) = std::thread::Builder::new()
        .name("dupfind-scan".into())
        .spawn(worker)
    {
        return Err(DupfindError::new_err(format!(
            "cannot start the scan's thread: {e}"
        )));
    }
    let rx = Mutex::new(rx);
    loop {
        let waited = py.detach(|| match rx.lock() {
            Ok(rx) => rx.recv_timeout(SIGNAL_POLL),
            Err(_) => Err(mpsc::RecvTimeoutError::Disconnected),
        });
        match waited {
            Ok(Ok(answer)) => return Ok(answer),
            Ok(Err(e)) => return Err(failed(e)),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return Err(DupfindError::new_err(
                    "the scan's thread ended without an answer (a bug: please report it)",
                ))
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Err(interrupt) = py.check_signals() {
                    abandoned.store(true, Ordering::SeqCst);
                    if done.load(Ordering::SeqCst) {
                        remove(cleanup.as_deref());
                    }
                    return Err(interrupt);
                }
            }
        }
    }
}

fn remove(dir: Option<&std::path::Path>) {
    if let Some(dir) = dir {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// The signer of the scan options `argv` (the program name and `scan` first).
fn signer(argv: &[OsString]) -> PyResult<embed::Signer> {
    embed::Signer::new(parse(argv)?).map_err(failed)
}

/// The MinHash signatures of `texts` under the scan options `argv`, as `scan` computes them:
/// `(values, num_perm)`, the values row by row as native-endian u32 (a text without a shingle
/// all u32::MAX). Signed in parallel on `threads` threads (None: all cores), GIL released.
#[pyfunction]
#[pyo3(signature = (texts, argv, threads=None))]
fn signatures(
    py: Python<'_>,
    texts: Vec<String>,
    argv: Vec<OsString>,
    threads: Option<usize>,
) -> PyResult<(Py<PyBytes>, usize)> {
    let signer = signer(&argv)?;
    let k = signer.len();
    let values = py.detach(|| -> anyhow::Result<Vec<u32>> {
        let mut values = vec![0u32; texts.len() * k];
        let pool = dupfind::embed::pool(threads)?;
        pool.install(|| {
            (texts.par_iter())
                .zip(values.par_chunks_mut(k))
                .for_each_init(
                    || signer.fresh(),
                    |s, (text, out)| {
                        s.sign(text, out);
                    },
                )
        });
        Ok(values)
    });
    let values = values.map_err(|e| DupfindError::new_err(format!("{e:#}")))?;
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
    Ok((PyBytes::new(py, &bytes).unbind(), k))
}

/// The exact Jaccard similarity of the shingle sets of `a` and `b` under the scan options
/// `argv`: what `--verify exact` compares (1.0 for two texts without a shingle).
#[pyfunction]
fn jaccard(py: Python<'_>, a: String, b: String, argv: Vec<OsString>) -> PyResult<f64> {
    let mut signer = signer(&argv)?;
    Ok(py.detach(|| {
        let (a, b) = (signer.shingle_set(&a), signer.shingle_set(&b));
        dupfind::api::jaccard(&a, &b)
    }))
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(main, m)?)?;
    m.add_function(wrap_pyfunction!(scan, m)?)?;
    m.add_function(wrap_pyfunction!(dedup, m)?)?;
    m.add_function(wrap_pyfunction!(signatures, m)?)?;
    m.add_function(wrap_pyfunction!(jaccard, m)?)?;
    m.add("DupfindError", m.py().get_type::<DupfindError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
