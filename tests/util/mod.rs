//! Test helpers: a temporary directory to write files into, the real binary run inside it (with a
//! hang guard), seeded text with near-duplicates made to order, and an independent Jaccard to
//! check the similarities dupfind reports; the `families` and `chain` fixtures many tests start
//! from; and `schema`, the walk of a whole report that checks every key.

use std::collections::HashSet;
use std::fs;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use dupfind::api::mix64;
use serde_json::Value;

mod fixtures;
pub mod s3;
pub mod schema;
pub mod www;

pub use fixtures::{assert_families, assert_well_formed_clusters, chain, families};

/// The dupfind binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_dupfind")
}

/// How long a run may take before the test calls it hung. A guard against a blocked child (a
/// FIFO opened, stdin read), never an assertion about speed: a healthy run takes well under a
/// second, and this leaves room for a debug build on a loaded machine.
pub const HANG_GUARD: Duration = Duration::from_secs(300);

/// A temporary directory that is the working directory of every run.
pub struct TestDir {
    dir: tempfile::TempDir,
}

/// What a run printed and how it ended.
pub struct Run {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// The exit code (panics when the process died from a signal).
    pub fn code(&self) -> i32 {
        self.status.code().unwrap_or_else(|| {
            panic!(
                "killed by a signal ({:?}); stderr: {}",
                self.status, self.stderr
            )
        })
    }

    /// stdout parsed as one JSON document.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}): {}\nstderr: {}",
                self.stdout, self.stderr
            )
        })
    }

    /// stdout parsed as JSON Lines, one value per line.
    pub fn jsonl(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|l| {
                serde_json::from_str(l).unwrap_or_else(|e| panic!("line is not JSON ({e}): {l:?}"))
            })
            .collect()
    }

    /// stderr without the banding note and progress lines: only warnings and errors.
    pub fn warnings(&self) -> Vec<&str> {
        self.stderr
            .lines()
            .filter(|l| {
                !l.starts_with("dupfind: note: threshold") && !l.starts_with("dupfind: progress: ")
            })
            .collect()
    }
}

impl Default for TestDir {
    fn default() -> Self {
        Self::new()
    }
}

impl TestDir {
    pub fn new() -> TestDir {
        TestDir {
            dir: tempfile::tempdir().expect("creating a temporary directory"),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// Writes `contents` to `rel`, creating parent directories.
    pub fn write(&self, rel: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> &TestDir {
        let path = self.dir.path().join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).expect("creating parent directories");
        }
        fs::write(&path, contents).expect("writing a test file");
        self
    }

    /// Creates the directory `rel` and its parents.
    pub fn mkdir(&self, rel: impl AsRef<Path>) -> &TestDir {
        fs::create_dir_all(self.join(rel)).expect("creating a directory");
        self
    }

    /// The binary with `args`, in this directory, stdin null, stdout and stderr captured.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(bin());
        c.args(args)
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    /// Runs dupfind with `args` in this directory.
    pub fn run(&self, args: &[&str]) -> Run {
        run_command(self.command(args))
    }
}

/// The lock of the index in `dir`, held as another writer holds it until the file is dropped.
pub fn index_lock_held(dir: &Path) -> fs::File {
    let lock = fs::File::options()
        .write(true)
        .open(dir.join("lock"))
        .unwrap();
    lock.lock().unwrap();
    lock
}

/// Runs a command whose stdout and stderr are piped, within [`HANG_GUARD`].
pub fn run_command(mut cmd: Command) -> Run {
    let child = cmd.spawn().expect("starting the command");
    wait_guarded(child)
}

/// Waits for a child whose stdout and stderr are piped, reading both meanwhile (so a long
/// report cannot fill the pipe and stall the child); kills it and fails the test when it has
/// not ended within [`HANG_GUARD`].
pub fn wait_guarded(mut child: Child) -> Run {
    let drain = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut p) = pipe {
                p.read_to_end(&mut buf).expect("reading the child's output");
            }
            buf
        })
    };
    let out = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("polling the child") {
            break status;
        }
        if start.elapsed() > HANG_GUARD {
            child.kill().expect("killing a hung child");
            let _ = child.wait();
            panic!("the command did not finish within {HANG_GUARD:?}: it hung");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let stdout = out.join().expect("stdout reader");
    let stderr = err.join().expect("stderr reader");
    Run {
        status,
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

/// Waits until a thread of process `pid` is blocked in one of the system calls `nrs` on file
/// descriptor `fd`, its first argument (as /proc/PID/task/TID/syscall shows it), so that a
/// signal sent next finds it there: a state reached, not a time waited. Fails the test after
/// [`HANG_GUARD`].
pub fn wait_in_syscall(pid: u32, nrs: &[libc::c_long], fd: u32) {
    let wanted: Vec<String> = nrs.iter().map(|nr| format!("{nr} {fd:#x} ")).collect();
    let start = Instant::now();
    loop {
        let tasks = fs::read_dir(format!("/proc/{pid}/task"))
            .into_iter()
            .flatten();
        let now: Vec<String> = (tasks.flatten())
            .filter_map(|t| fs::read_to_string(t.path().join("syscall")).ok())
            .collect();
        if now.iter().any(|s| wanted.iter().any(|w| s.starts_with(w))) {
            return;
        }
        assert!(
            start.elapsed() < HANG_GUARD,
            "process {pid} never blocked in system calls {nrs:?} on fd {fd}: {now:?}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

// ---------------------------------------------------------------------------------------------
// Running without root's privileges

/// The effective user id of the test process.
pub fn euid() -> u32 {
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// A way to run dupfind so that file permissions apply to it.
pub enum Unprivileged {
    /// Not root: run the binary directly.
    Direct,
    /// Root (who reads any file regardless of its mode): run through `setpriv` as nobody
    /// (65534). `_copy` keeps alive a world-executable copy of the binary when the original's
    /// path is not open to others.
    Nobody {
        program: PathBuf,
        _copy: Option<tempfile::TempDir>,
    },
}

const SETPRIV: &str = "/usr/bin/setpriv";
const NOBODY: [&str; 3] = ["--reuid=65534", "--regid=65534", "--clear-groups"];

impl Unprivileged {
    /// `None` when running as root and no way to drop privileges works here.
    pub fn get() -> Option<Unprivileged> {
        if euid() != 0 {
            return Some(Unprivileged::Direct);
        }
        if !Path::new(SETPRIV).exists() {
            return None;
        }
        let runs_as_nobody = |program: &Path| {
            Command::new(SETPRIV)
                .args(NOBODY)
                .arg(program)
                .arg("--version")
                .stdin(Stdio::null())
                .output()
                .is_ok_and(|o| o.status.success() && o.stdout.starts_with(b"dupfind "))
        };
        if runs_as_nobody(Path::new(bin())) {
            return Some(Unprivileged::Nobody {
                program: PathBuf::from(bin()),
                _copy: None,
            });
        }
        // The binary sits under a directory nobody may not enter: run a copy from a directory
        // that everyone may.
        let copy = tempfile::tempdir().ok()?;
        fs::set_permissions(copy.path(), fs::Permissions::from_mode(0o755)).ok()?;
        let program = copy.path().join("dupfind");
        fs::copy(bin(), &program).ok()?;
        fs::set_permissions(&program, fs::Permissions::from_mode(0o755)).ok()?;
        runs_as_nobody(&program).then_some(Unprivileged::Nobody {
            program,
            _copy: Some(copy),
        })
    }

    /// dupfind with `args` in `dir`, as [`TestDir::command`] does.
    pub fn command(&self, dir: &Path, args: &[&str]) -> Command {
        let mut c = match self {
            Unprivileged::Direct => Command::new(bin()),
            Unprivileged::Nobody { program, .. } => {
                let mut c = Command::new(SETPRIV);
                c.args(NOBODY).arg(program);
                c
            }
        };
        c.args(args)
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }
}

/// Makes a tree readable by everyone: directories 0755, files 0644 (links are left alone).
pub fn open_to_others(path: &Path) {
    let meta = fs::symlink_metadata(path).expect("stat");
    if meta.is_dir() {
        fs::set_permissions(path, fs::Permissions::from_mode(0o755)).expect("chmod");
        for e in fs::read_dir(path).expect("read_dir") {
            open_to_others(&e.expect("dir entry").path());
        }
    } else if meta.is_file() {
        fs::set_permissions(path, fs::Permissions::from_mode(0o644)).expect("chmod");
    }
}

// ---------------------------------------------------------------------------------------------
// The file system

pub fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
}

pub fn chmod(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

/// Every non-directory below `dir`.
pub fn walk_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.is_dir() {
            out.extend(walk_files(&path));
        } else {
            out.push(path);
        }
    }
    out
}

pub type Snapshot = Vec<(std::path::PathBuf, u64, u32, std::time::SystemTime)>;

/// Every entry below `dir`: path, size, mode and mtime.
pub fn snapshot(dir: &Path, out: &mut Snapshot) {
    let mut entries: Vec<_> = fs::read_dir(dir).unwrap().map(|e| e.unwrap()).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let meta = fs::symlink_metadata(e.path()).unwrap();
        out.push((e.path(), meta.len(), meta.mode(), meta.modified().unwrap()));
        if meta.is_dir() {
            snapshot(&e.path(), out);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Text

const VOCABULARY: &str = "time person year way day thing man world life hand part child eye \
woman place work week case point government company number group problem fact be have do say \
get make go know take see come think look want give use find tell ask seem feel try leave \
call good new first last long great little own other old right big high different small large \
next early young important few public bad same able to of in for on with at by from up about \
into over after beneath under above the and a that i it not he as you this but his they her \
she or an will my one all would there their river mountain copper lantern harbor violin orchard \
meadow glacier pepper saddle thunder marble velvet canyon falcon ember quartz willow anchor \
beacon cobalt dune ferry garnet hollow ivory jasper kettle lagoon maple nectar oasis pebble \
quiver raven summit timber umber valley walnut yonder zephyr almond bramble cedar delta basket \
candle feather ginger hammer island jungle ladder mirror needle orange pillow rocket shadow \
ticket window button carpet dragon engine forest garden helmet insect jacket kitten lemon \
magnet napkin ocean parrot rabbit silver tunnel violet wagon yellow zipper bottle cotton \
desert eagle fossil goblet harvest iceberg kernel lizard mosaic nickel olive planet riddle \
spider tomato unicorn vessel whistle sketch wander gather murmur settle linger scatter borrow";

/// Words per line in generated text.
const LINE: usize = 12;

fn render(words: &[&str]) -> String {
    words
        .chunks(LINE)
        .map(|line| line.join(" "))
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// A seeded document of `words` words drawn from a vocabulary of about 270, twelve to a line.
/// Two documents from different seeds share no word 5-shingle in practice (each shingle is one
/// of 270^5 ≈ 10^12).
pub fn text(seed: u64, words: usize) -> String {
    let vocab: Vec<&str> = VOCABULARY.split_whitespace().collect();
    // SplitMix64 over a mixed seed: streams from nearby raw seeds would be shifted copies.
    let mut state = mix64(seed ^ 0x5EED_5EED);
    let picked: Vec<&str> = (0..words)
        .map(|_| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            vocab[(mix64(state) % vocab.len() as u64) as usize]
        })
        .collect();
    render(&picked)
}

/// `base` with the words at the given positions (0-based, counted over words) replaced by
/// words that occur nowhere else. Each replaced word changes at most 5 word 5-shingles.
pub fn edit(base: &str, positions: &[usize]) -> String {
    let replaced: Vec<String> = base
        .split_whitespace()
        .enumerate()
        .map(|(i, w)| {
            if positions.contains(&i) {
                format!("edited{i}")
            } else {
                w.to_string()
            }
        })
        .collect();
    let words: Vec<&str> = replaced.iter().map(String::as_str).collect();
    render(&words)
}

/// Tokens as dupfind normalizes them: lowercased, split at Unicode white space.
fn tokens(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_lowercase).collect()
}

fn jaccard<T: std::hash::Hash + Eq>(a: HashSet<T>, b: HashSet<T>) -> f64 {
    let common = a.intersection(&b).count();
    let union = a.len() + b.len() - common;
    common as f64 / union as f64
}

/// Exact Jaccard similarity of the word n-shingle sets, computed independently of dupfind (a
/// text of fewer than n tokens is one shingle of all of them).
pub fn word_jaccard(a: &str, b: &str, n: usize) -> f64 {
    let set = |t: &str| -> HashSet<Vec<String>> {
        let toks = tokens(t);
        if toks.len() < n {
            return HashSet::from([toks]);
        }
        toks.windows(n).map(<[String]>::to_vec).collect()
    };
    jaccard(set(a), set(b))
}

/// Exact Jaccard similarity of the character n-shingle sets of the normalized texts.
pub fn char_jaccard(a: &str, b: &str, n: usize) -> f64 {
    let set = |t: &str| -> HashSet<Vec<char>> {
        let chars: Vec<char> = tokens(t).join(" ").chars().collect();
        if chars.len() < n {
            return HashSet::from([chars]);
        }
        chars.windows(n).map(<[char]>::to_vec).collect()
    };
    jaccard(set(a), set(b))
}

// ---------------------------------------------------------------------------------------------
// Reading reports

/// The member paths of every cluster, in output order.
pub fn cluster_paths(report: &Value) -> Vec<Vec<String>> {
    cluster_members(report, |m| {
        m["path"].as_str().expect("path is a string").to_string()
    })
}

/// [`cluster_paths`] with `prefix` taken off every path: the report of a store's objects (or a
/// web server's) beside that of the same files on disk.
pub fn cluster_paths_below(report: &Value, prefix: &str) -> Vec<Vec<String>> {
    cluster_paths(report)
        .into_iter()
        .map(|c| {
            c.into_iter()
                .map(|p| p.strip_prefix(prefix).map(str::to_string).unwrap_or(p))
                .collect()
        })
        .collect()
}

/// The report's statistics but the bytes reclaimable, which count a file's blocks on disk and
/// an object's bytes.
pub fn stats_but_reclaimable(report: &Value) -> Value {
    let mut stats = report["stats"].clone();
    stats
        .as_object_mut()
        .expect("stats is an object")
        .remove("reclaimable_bytes");
    stats
}

/// `f` of every member of every cluster, collected per cluster (members in output order).
pub fn cluster_members<T, C: FromIterator<T>>(report: &Value, f: impl Fn(&Value) -> T) -> Vec<C> {
    clusters(report)
        .iter()
        .map(|c| {
            c["members"]
                .as_array()
                .expect("members is an array")
                .iter()
                .map(&f)
                .collect()
        })
        .collect()
}

/// The `clusters` array.
pub fn clusters(report: &Value) -> &Vec<Value> {
    report["clusters"].as_array().expect("clusters is an array")
}

/// Every pair of every cluster.
pub fn all_pairs(report: &Value) -> Vec<&Value> {
    clusters(report)
        .iter()
        .flat_map(|c| c["pairs"].as_array().expect("pairs is an array"))
        .collect()
}

/// A command line written as one string, split at white space.
pub fn words(s: &str) -> Vec<&str> {
    s.split_whitespace().collect()
}

/// Paths as dupfind prints them for the root ".".
pub fn dot(rel: &str) -> String {
    format!("./{rel}")
}

/// `paths` as `./`-prefixed strings.
pub fn dots(paths: &[&str]) -> Vec<String> {
    paths.iter().map(|p| dot(p)).collect()
}

/// A report with what depends on the machine and the moment its files were written rather than
/// on their contents made zero: the device and inode numbers, the bytes on disk (which the file
/// system's block size sets) and the modification times, in JSON (`"inode": 1234`) and in the
/// text summary (`4.0 KiB (4,096 bytes) reclaimable`).
pub fn machine_neutral(report: &str) -> String {
    let mut out = String::with_capacity(report.len());
    for line in report.split_inclusive('\n') {
        let mut line = line.to_string();
        for key in [
            "\"device\":",
            "\"inode\":",
            "\"disk_bytes\":",
            "\"reclaimable_bytes\":",
            "\"modified_secs\":",
            "\"modified_nanos\":",
        ] {
            line = zero_numbers_after(&line, key);
        }
        // `…(1 exact group), 12.0 KiB (12,288 bytes) reclaimable; …`
        if let Some(at) = line.find(" reclaimable;") {
            let start = line[..at].rfind(", ").map_or(0, |i| i + 2);
            line = format!("{}0 bytes{}", &line[..start], &line[at..]);
        }
        out.push_str(&line);
    }
    out
}

/// A size as text summaries give it, below 1 MiB: `512 bytes`, `8.0 KiB (8,192 bytes)`.
pub fn size_in_words(n: u64) -> String {
    assert!(n < 1 << 20, "size_in_words: {n} is not below 1 MiB");
    match n {
        1 => "1 byte".to_string(),
        0..1024 => format!("{n} bytes"),
        _ => format!(
            "{:.1} KiB ({},{:03} bytes)",
            n as f64 / 1024.0,
            n / 1000,
            n % 1000
        ),
    }
}

fn zero_numbers_after(line: &str, key: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(at) = rest.find(key) {
        let (head, tail) = rest.split_at(at + key.len());
        out.push_str(head);
        let spaces = tail.len() - tail.trim_start().len();
        out.push_str(&tail[..spaces]);
        let tail = &tail[spaces..];
        let digits = tail.len() - tail.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        out.push_str(if digits > 0 { "0" } else { "" });
        rest = &tail[digits..];
    }
    out.push_str(rest);
    out
}

/// A JSON report without what describes the files as stored rather than the documents: the
/// `roots`, each member's `file` and `stats.reclaimable_bytes`. For comparing the reports of
/// the same documents held in other files (compressed, in another tree, from an older
/// release's fixture).
pub fn without_stored_files(mut report: Value) -> Value {
    fn walk(v: &mut Value) {
        match v {
            Value::Object(map) => {
                map.remove("file");
                map.values_mut().for_each(walk);
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    if let Some(map) = report.as_object_mut() {
        map.remove("roots");
        map.remove("roots_bytes");
    }
    if let Some(stats) = report.get_mut("stats").and_then(Value::as_object_mut) {
        stats.remove("reclaimable_bytes");
    }
    walk(&mut report);
    report
}
