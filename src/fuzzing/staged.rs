//! The staged pipeline's work files (`stages/`): a complete work directory of a small corpus
//! with one file changed, replaced by another or removed, then the stages from `components` on run
//! again in process as `dupfind stage …` runs them, and `stage report`.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::Parser;

use crate::cli::{Cli, Command, StageCommand, StageTask};
use crate::config::Config;
use crate::exit::ExitCode;

/// Two shards and two partitions: every per-task file has a sibling in another task's place to
/// be mistaken for.
const SHARDS: u32 = 2;
const PARTS: u32 = 2;

/// The options of the scan and of the run; JSON whatever stdout is, no warnings per input.
const OPTIONS: [&str; 3] = ["--format", "json", "--quiet"];

/// The stages the first byte after the file's may start from: a file is read by the stages
/// after the one that wrote it, and a stage run again replaces what it wrote.
const FIRST: [&str; 4] = ["components", "route", "verify", "report"];

const FOX: &str = "the quick brown fox jumps over the lazy dog while the farmer watches from the \
                   porch and the sun sets slowly behind the old red barn at the edge of the field";
const UNIVERSE: &str = "in the beginning the universe was created and this has made a lot of \
                        people very angry and been widely regarded as a bad move by most of the \
                        people who noticed";
const STAGED: &str = "a staged pipeline runs each stage as its own process over files in a work \
                      directory so that job arrays and clusters can share the work between many \
                      machines";

/// The corpus: byte-identical copies, near-duplicates, a pair under the threshold, unique
/// texts, and a JSON Lines dump with a near-duplicate record and a bad line (exit status 2).
fn corpus() -> Vec<(&'static str, String)> {
    let unique = |i: u32| {
        let words: Vec<String> = (i * 7..i * 7 + 26).map(|w| format!("w{w}")).collect();
        format!(
            "unique document number {i} with words {}\n",
            words.join(" ")
        )
    };
    vec![
        ("a1.txt", format!("{FOX}\n")),
        ("a2.txt", format!("{}\n", FOX.replace("lazy", "sleepy"))),
        ("a3.txt", format!("{FOX}\n")),
        ("b1.txt", format!("{UNIVERSE}\n")),
        (
            "b2.txt",
            format!("{}\n", UNIVERSE.replace("angry", "upset")),
        ),
        ("b3.txt", format!("{UNIVERSE} indeed\n")),
        ("c1.txt", format!("{STAGED}\n")),
        ("c2.txt", format!("{}\n", STAGED.replace("many", "several"))),
        ("u1.txt", unique(1)),
        ("u2.txt", unique(2)),
        ("u3.txt", unique(3)),
        ("u4.txt", unique(4)),
        (
            "dump.jsonl",
            format!(
                "{{\"text\": \"{UNIVERSE} again\"}}\nnot json\n{{\"text\": \"a short record of \
                 its own with nothing much to say about anything at all\"}}\n"
            ),
        ),
    ]
}

/// The corpus, its complete work directory, and scan's report of it.
struct Fixture {
    /// Holds `corpus/`, `work/` (made once) and `copy/` (the work directory each input changes).
    dir: tempfile::TempDir,
    /// The complete work directory's files (work-relative names, sorted) and their bytes.
    files: Vec<(PathBuf, Vec<u8>)>,
    /// Scan's report and exit status.
    expected: (Vec<u8>, ExitCode),
}

thread_local! {
    /// Made once per thread: a run of every stage takes longer than an input does.
    static FIXTURE: Fixture = Fixture::build()
        .unwrap_or_else(|e| panic!("the staged fuzz target's work directory: {e:#}"));
}

/// The first byte picks a work file (in name order), the second the stage to run again from (components, route, verify
/// or report), and the rest are edits to the file's bytes ([`edit`]). The file is changed in a
/// copy of the complete work directory, those stages run on it in order, each task of a stage
/// (`--threads 1`), and then `stage report`.
///
/// Panics unless a stage returns an error or `stage report` gives scan's report and exit status
/// byte for byte: a changed file is either refused or made no difference (a stage run again
/// replaces it, or nothing reads it).
pub fn staged_work(data: &[u8]) {
    let (pick, rest) = super::choice(data);
    let (first, edits) = super::choice(rest);
    FIXTURE.with(|f| f.check(pick, first % FIRST.len(), edits));
}

impl Fixture {
    fn build() -> Result<Fixture> {
        let dir = tempfile::tempdir()?;
        let corpus_dir = dir.path().join("corpus");
        std::fs::create_dir(&corpus_dir)?;
        for (name, text) in corpus() {
            std::fs::write(corpus_dir.join(name), text)?;
        }
        let Command::Scan(scan) = parse(&["scan".as_ref(), corpus_dir.as_os_str()])? else {
            bail!("`dupfind scan` did not parse as a scan");
        };
        let cfg = Config::for_scan(*scan)?;
        let out = crate::scan::scan(&cfg)?;
        let expected = (render(&out.report, &cfg)?, out.code);
        let work = dir.path().join("work");
        let (shards, parts) = (SHARDS.to_string(), PARTS.to_string());
        let init = [
            "stage", "init", "--work", "", "--shards", &shards, "--parts", &parts,
        ];
        let mut init: Vec<&OsStr> = init.iter().map(OsStr::new).collect();
        init[3] = work.as_os_str();
        init.push(corpus_dir.as_os_str());
        let Command::Stage(init) = parse(&init)? else {
            bail!("`dupfind stage init` did not parse as a stage");
        };
        run_stage(init)?;
        for shard in 0..SHARDS {
            run_stage(StageCommand::Sign {
                task: task(&work),
                shard: (shard, SHARDS),
            })?;
        }
        for part in 0..PARTS {
            run_stage(StageCommand::Group {
                task: task(&work),
                part: (part, PARTS),
            })?;
        }
        let got = rerun(&work, 0)?;
        if got != expected {
            bail!("the staged report of the unchanged corpus is not scan's");
        }
        let mut files = Vec::new();
        walk(&work, &work, &mut files)?;
        files.sort();
        Ok(Fixture {
            dir,
            files,
            expected,
        })
    }

    fn check(&self, pick: usize, first: usize, edits: &[u8]) {
        let copy = self.dir.path().join("copy");
        // A copy that cannot be written (a full disk) says nothing about the stages.
        if self.lay_out(&copy, pick, edits).is_err() {
            return;
        }
        let Ok(got) = rerun(&copy, first) else {
            return;
        };
        assert!(
            got.1 == self.expected.1,
            "stage report exits with {:?}, scan with {:?}",
            got.1,
            self.expected.1
        );
        if got.0 != self.expected.0 {
            let (scan, staged) = (
                String::from_utf8_lossy(&self.expected.0),
                String::from_utf8_lossy(&got.0),
            );
            let at = scan.lines().zip(staged.lines()).position(|(a, b)| a != b);
            let line = |s: &str| at.and_then(|i| s.lines().nth(i)).unwrap_or("").to_string();
            panic!(
                "stage report's report is not scan's (from {}, {} edited); first difference at \
                 line {at:?}:\n  scan:   {}\n  staged: {}",
                FIRST[first],
                self.files[pick % self.files.len()].0.display(),
                line(&scan),
                line(&staged)
            );
        }
    }

    /// Writes the complete work directory to `copy`, the picked file changed by `edits`.
    fn lay_out(&self, copy: &Path, pick: usize, edits: &[u8]) -> std::io::Result<()> {
        match std::fs::remove_dir_all(copy) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let picked = pick % self.files.len();
        for (i, (rel, bytes)) in self.files.iter().enumerate() {
            let changed;
            let bytes = if i == picked {
                changed = edit(Some(bytes.clone()), edits, &self.files);
                changed.as_deref()
            } else {
                Some(&bytes[..])
            };
            if let Some(bytes) = bytes {
                let path = copy.join(rel);
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                std::fs::write(path, bytes)?;
            }
        }
        Ok(())
    }
}

fn parse(args: &[&OsStr]) -> Result<Command> {
    let argv = std::iter::once(OsStr::new("dupfind"))
        .chain(args.iter().copied())
        .chain(OPTIONS.iter().map(OsStr::new))
        .map(OsString::from);
    Ok(Cli::try_parse_from(argv)?.command)
}

fn task(work: &Path) -> StageTask {
    StageTask {
        work: work.to_path_buf(),
        threads: Some(1),
    }
}

/// Runs the stages from `FIRST[first]` on in `work`: every task of each, then the report.
fn rerun(work: &Path, first: usize) -> Result<(Vec<u8>, ExitCode)> {
    if first == 0 {
        run_stage(StageCommand::Components { task: task(work) })?;
    }
    for shard in (0..SHARDS).filter(|_| first <= 1) {
        run_stage(StageCommand::Route {
            task: task(work),
            shard: (shard, SHARDS),
        })?;
    }
    for part in (0..PARTS).filter(|_| first <= 2) {
        run_stage(StageCommand::Verify {
            task: task(work),
            part: (part, PARTS),
        })?;
    }
    let (report, code, cfg, _) =
        crate::stages::report::report(work, &crate::index::staged::Staged)?;
    Ok((render(&report, &cfg)?, code))
}

/// The report's bytes, as `scan` and `stage report` print them.
fn render(report: &crate::report::Report, cfg: &Config) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    crate::report::write(report, cfg.format, cfg.color, &mut out)?;
    Ok(out)
}

/// Every file below `dir` (names relative to `work`) and its bytes.
fn walk(work: &Path, dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) -> Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            walk(work, &path, out)?;
        } else {
            let rel = path.strip_prefix(work)?.to_path_buf();
            out.push((rel, std::fs::read(&path)?));
        }
    }
    Ok(())
}

/// `file` (None: absent) changed by `edits`, a sequence of edits, each an opcode byte (taken
/// modulo 6) and its arguments; an offset is two bytes, little-endian, taken modulo the length
/// (plus one where the end is a place too):
///
/// - 0 `at x`: xor the byte at `at` with `x`;
/// - 1 `at n bytes…`: insert `n` bytes at `at`;
/// - 2 `at`: truncate to `at` bytes;
/// - 3 `i`: replace the whole file by `files[i]` (modulo their count): a file in another's
///   place;
/// - 4: remove it;
/// - 5 `at n bytes…`: overwrite `n` bytes from `at`, extending the file past its end.
///
/// An edit of an absent file starts from an empty one. An edit cut short ends the sequence.
fn edit(
    mut file: Option<Vec<u8>>,
    mut edits: &[u8],
    files: &[(PathBuf, Vec<u8>)],
) -> Option<Vec<u8>> {
    fn take<'a>(edits: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (head, rest) = (edits.get(..n)?, &edits[n..]);
        *edits = rest;
        Some(head)
    }
    fn offset(edits: &mut &[u8], len: usize) -> Option<usize> {
        let at = take(edits, 2)?;
        Some(usize::from(u16::from_le_bytes([at[0], at[1]])) % len.max(1))
    }
    fn payload<'a>(edits: &mut &'a [u8]) -> Option<&'a [u8]> {
        let n = usize::from(*take(edits, 1)?.first()?);
        take(edits, n.min(edits.len()))
    }
    while let Some(op) = take(&mut edits, 1) {
        let bytes = file.get_or_insert_with(Vec::new);
        let len = bytes.len();
        let done = match op[0] % 6 {
            0 => offset(&mut edits, len)
                .zip(take(&mut edits, 1))
                .map(|(at, x)| {
                    if let Some(b) = bytes.get_mut(at) {
                        *b ^= x[0];
                    }
                }),
            1 => offset(&mut edits, len + 1)
                .zip(payload(&mut edits))
                .map(|(at, new)| {
                    bytes.splice(at..at, new.iter().copied());
                }),
            2 => offset(&mut edits, len + 1).map(|at| bytes.truncate(at)),
            3 => take(&mut edits, 1).map(|i| {
                file = Some(files[usize::from(i[0]) % files.len()].1.clone());
            }),
            4 => {
                file = None;
                Some(())
            }
            _ => offset(&mut edits, len + 1)
                .zip(payload(&mut edits))
                .map(|(at, new)| {
                    let end = at + new.len();
                    bytes.resize(len.max(end), 0);
                    bytes[at..end].copy_from_slice(new);
                }),
        };
        if done.is_none() {
            break;
        }
    }
    file
}

/// Runs one stage as the binary does, with the index's side of a run `--against` one.
fn run_stage(cmd: StageCommand) -> anyhow::Result<crate::exit::ExitCode> {
    crate::stages::run(cmd, &crate::index::staged::Staged)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn edits_do_what_their_opcodes_say() {
        let files = vec![(PathBuf::from("a"), b"other".to_vec())];
        let run = |file: &[u8], edits: &[u8]| edit(Some(file.to_vec()), edits, &files);
        assert_eq!(run(b"abc", &[0, 1, 0, 0x20]).unwrap(), b"aBc");
        // Offsets are modulo the length: 4 is 0 in "abc" plus its end.
        assert_eq!(run(b"abc", &[1, 4, 0, 2, b'x', b'y']).unwrap(), b"xyabc");
        assert_eq!(run(b"abc", &[1, 3, 0, 9, b'x']).unwrap(), b"abcx");
        assert_eq!(run(b"abc", &[2, 1, 0]).unwrap(), b"a");
        assert_eq!(run(b"abc", &[3, 1]).unwrap(), b"other");
        assert_eq!(run(b"abc", &[4]), None);
        assert_eq!(
            run(b"abc", &[5, 2, 0, 3, b'x', b'y', b'z']).unwrap(),
            b"abxyz"
        );
        // An absent file is edited as an empty one; an edit cut short ends the sequence.
        assert_eq!(edit(None, &[1, 0, 0, 1, b'n'], &files).unwrap(), b"n");
        assert_eq!(run(b"abc", &[2, 1, 0, 0, 1]).unwrap(), b"a");
        assert_eq!(run(b"abc", &[]).unwrap(), b"abc");
    }
}
