//! Test helpers: a temporary directory to write files into, the real binary run inside it (with a
//! hang guard), seeded text with near-duplicates made to order, and an independent Jaccard to
//! check the similarities dupfind reports.

use std::collections::HashSet;
use std::fs;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use dupfind::sketch::minhash::mix64;
use serde_json::Value;

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

// ---------------------------------------------------------------------------------------------
// The schema

/// Checks of the report's shape: every documented key, no other, each with its JSON type.
pub mod schema {
    use serde_json::Value;

    use super::clusters;

    fn assert_keys(v: &Value, required: &[&str], optional: &[&str], what: &str) {
        let obj = v
            .as_object()
            .unwrap_or_else(|| panic!("{what} is not an object: {v}"));
        for k in required {
            assert!(obj.contains_key(*k), "{what} lacks {k}: {v}");
        }
        for k in obj.keys() {
            assert!(
                required.contains(&k.as_str()) || optional.contains(&k.as_str()),
                "{what} has an undocumented key {k}"
            );
        }
    }

    fn assert_u64s(v: &Value, keys: &[&str], what: &str) {
        for k in keys {
            assert!(v[*k].is_u64(), "{what}.{k} is not a count: {v}");
        }
    }

    fn assert_params_schema(p: &Value) {
        let simhash = p["method"] == "simhash";
        if simhash {
            let keys = [
                "method",
                "shingle",
                "ngram",
                "bits",
                "max_distance",
                "pieces",
            ];
            let more = ["verify", "seed", "cluster", "keep"];
            assert_keys(
                p,
                &[&keys[..], &more[..]].concat(),
                &["min_similarity"],
                "params",
            );
            assert_u64s(
                p,
                &["ngram", "bits", "max_distance", "pieces", "seed"],
                "params",
            );
        } else {
            let keys = [
                "method", "shingle", "ngram", "sketch", "num_perm", "bands", "rows",
            ];
            let more = ["threshold", "verify", "seed", "cluster", "keep"];
            assert_keys(
                p,
                &[&keys[..], &more[..]].concat(),
                &["min_similarity", "containment"],
                "params",
            );
            assert_u64s(p, &["ngram", "num_perm", "bands", "rows", "seed"], "params");
            if let Some(c) = p.get("containment") {
                assert_eq!(c, true, "present only when true: {p}");
            }
            assert!(p["threshold"].is_f64(), "{p}");
            let sketches = ["oph", "kperm", "bottom-k"];
            assert!(sketches.contains(&p["sketch"].as_str().unwrap()), "{p}");
        }
        assert!(["minhash", "simhash"].contains(&p["method"].as_str().unwrap()));
        assert!(["word", "char"].contains(&p["shingle"].as_str().unwrap()));
        let verify = ["exact", "estimate", "edit"];
        assert!(verify.contains(&p["verify"].as_str().unwrap()), "{p}");
        assert!(["components", "strict"].contains(&p["cluster"].as_str().unwrap()));
        let keeps = [
            "first",
            "largest",
            "smallest",
            "newest",
            "oldest",
            "shortest-path",
        ];
        assert!(keeps.contains(&p["keep"].as_str().unwrap()), "{p}");
        if let Some(m) = p.get("min_similarity") {
            assert!(m.is_f64(), "{p}");
        }
    }

    fn assert_member_schema(m: &Value, extra_required: &[&str], extra_optional: &[&str]) {
        assert_keys(
            m,
            &[&["path", "bytes", "aliases"][..], extra_required].concat(),
            &[
                &["path_bytes", "aliases_bytes", "line", "id", "indexed"][..],
                extra_optional,
            ]
            .concat(),
            "member",
        );
        assert!(m["path"].is_string() && m["bytes"].is_u64(), "{m}");
        if let Some(indexed) = m.get("indexed") {
            assert_eq!(indexed, true, "present only when true: {m}");
        }
        if let Some(line) = m.get("line") {
            assert!(line.as_u64().is_some_and(|l| l >= 1), "{m}");
        }
        if let Some(id) = m.get("id") {
            assert!(id.is_string() && m.get("line").is_some(), "{m}");
        }
        let aliases = m["aliases"].as_array().unwrap();
        assert!(aliases.iter().all(Value::is_string), "{m}");
        if let Some(pb) = m.get("path_bytes") {
            assert!(pb.is_string(), "{m}");
        }
        if let Some(ab) = m.get("aliases_bytes") {
            let ab = ab.as_array().unwrap();
            assert_eq!(ab.len(), aliases.len(), "{m}");
            assert!(ab.iter().all(|b| b.is_null() || b.is_string()), "{m}");
        }
    }

    /// `indexed_clusters`: clusters represented by an indexed document (`--against`), which have
    /// no original among the documents of the run.
    fn assert_stats_schema(s: &Value, indexed_clusters: u64) {
        let counts = [
            "files_seen",
            "documents",
            "bytes",
            "exact_groups",
            "candidate_pairs",
            "verified_pairs",
            "clusters",
            "unique_documents",
            "exact_copies",
            "near_copies",
            "distinct_shingles",
        ];
        let more = ["skipped", "distinct_shingles_error"];
        assert_keys(
            s,
            &[&counts[..], &more[..]].concat(),
            &["edit_fallbacks", "index"],
            "stats",
        );
        if let Some(f) = s.get("edit_fallbacks") {
            assert!(f.is_u64(), "{s}");
        }
        if let Some(index) = s.get("index") {
            let keys = ["generation", "documents", "unchanged_files"];
            assert_keys(index, &keys, &["updated_generation"], "stats.index");
            assert_u64s(index, &keys, "stats.index");
            if let Some(g) = index.get("updated_generation") {
                assert_eq!(
                    g.as_u64(),
                    index["generation"].as_u64().map(|g| g + 1),
                    "{s}"
                );
            }
        } else {
            assert_eq!(indexed_clusters, 0, "indexed members without an index: {s}");
        }
        assert!(s["distinct_shingles_error"].is_f64(), "{s}");
        let parts = [
            "unique_documents",
            "clusters",
            "exact_copies",
            "near_copies",
        ];
        let sum: u64 = parts.iter().map(|k| s[*k].as_u64().unwrap()).sum();
        // With --against, a cluster represented by an indexed document has no original among
        // the documents of the run.
        let documents = s["documents"].as_u64().unwrap();
        assert_eq!(sum, documents + indexed_clusters, "{s}");
        assert_u64s(s, &counts, "stats");
        let skipped = [
            "binary",
            "empty",
            "too_short",
            "not_regular",
            "too_large",
            "error",
            "symlink",
            "outside_roots",
            "bad_line",
        ];
        assert_keys(&s["skipped"], &skipped, &[], "stats.skipped");
        assert_u64s(&s["skipped"], &skipped, "stats.skipped");
    }

    /// A cluster; `extra` are keys beyond the cluster's own (the `type` of a JSON Lines record).
    fn assert_cluster_schema(c: &Value, simhash: bool, extra: &[&str]) {
        let keys = [
            "id",
            "size",
            "min_similarity",
            "max_similarity",
            "representative",
            "duplicates",
            "members",
            "pairs",
        ];
        assert_keys(c, &[&keys[..], extra].concat(), &["linked"], "cluster");
        assert_u64s(c, &["id", "size"], "cluster");
        assert!(
            c["min_similarity"].is_f64() && c["max_similarity"].is_f64(),
            "{c}"
        );
        for m in c["members"].as_array().unwrap() {
            assert_member_schema(m, &[], &[]);
        }
        assert_member_schema(&c["representative"], &[], &[]);
        let duplicates = c["duplicates"].as_array().unwrap();
        // `linked` (components only) is written only when not empty; with `duplicates` it
        // lists every member but the representative.
        let linked = c.get("linked").map_or(&[][..], |l| l.as_array().unwrap());
        assert!(c.get("linked").is_none() || !linked.is_empty(), "{c}");
        assert_eq!(
            duplicates.len() + linked.len() + 1,
            c["members"].as_array().unwrap().len(),
            "{c}"
        );
        for d in duplicates.iter().chain(linked) {
            let optional: &[&str] = if simhash {
                &[]
            } else {
                &["distance", "containment"]
            };
            let required: &[&str] = if simhash {
                &["similarity", "exact", "estimated", "distance"]
            } else {
                &["similarity", "exact", "estimated"]
            };
            assert_member_schema(d, required, optional);
            assert!(
                d["similarity"].is_f64() && d["estimated"].is_boolean(),
                "{d}"
            );
        }
        for p in c["pairs"].as_array().unwrap() {
            if simhash {
                assert_keys(
                    p,
                    &["a", "b", "similarity", "distance", "exact"],
                    &["jaccard", "shared_shingles", "hamming", "cosine", "piece"],
                    "pair",
                );
                assert!(p["distance"].is_u64(), "{p}");
            } else {
                assert_keys(
                    p,
                    &["a", "b", "similarity", "exact"],
                    &[
                        "jaccard",
                        "shared_shingles",
                        "edit_similarity",
                        "estimate",
                        "band",
                        "contained",
                        "container",
                        "containment",
                    ],
                    "pair",
                );
            }
            assert_u64s(p, &["a", "b"], "pair");
            assert!(p["similarity"].is_f64() && p["exact"].is_boolean(), "{p}");
        }
    }

    fn assert_error_schema(e: &Value, extra: &[&str]) {
        assert_keys(
            e,
            &[&["path", "error"][..], extra].concat(),
            &["path_bytes", "line"],
            "error",
        );
        assert!(e["path"].is_string() && e["error"].is_string(), "{e}");
        if let Some(line) = e.get("line") {
            assert!(line.as_u64().is_some_and(|l| l >= 1), "{e}");
        }
    }

    /// Clusters represented by an indexed document; an indexed member always represents its
    /// cluster.
    fn indexed_clusters(clusters: &[Value]) -> u64 {
        let mut n = 0;
        for c in clusters {
            let members = c["members"].as_array().unwrap();
            if members.iter().any(|m| m.get("indexed").is_some()) {
                assert_eq!(c["representative"]["indexed"], true, "{c}");
                n += 1;
            }
        }
        n
    }

    /// Walks a whole `json` report: every documented key, no other, each with its JSON type.
    pub fn assert_schema(report: &Value) {
        let top = [
            "schema_version",
            "dupfind_version",
            "params",
            "stats",
            "clusters",
            "errors",
        ];
        assert_keys(report, &top, &[], "report");
        assert_eq!(report["schema_version"], 2);
        assert_eq!(report["dupfind_version"], env!("CARGO_PKG_VERSION"));
        assert_params_schema(&report["params"]);
        assert_stats_schema(&report["stats"], indexed_clusters(clusters(report)));
        let simhash = report["params"]["method"] == "simhash";
        for c in clusters(report) {
            assert_cluster_schema(c, simhash, &[]);
        }
        for e in report["errors"].as_array().unwrap() {
            assert_error_schema(e, &[]);
        }
    }

    /// The same for JSON Lines records.
    pub fn assert_jsonl_schema(records: &[Value]) {
        let (first, last) = (&records[0], &records[records.len() - 1]);
        assert_keys(
            first,
            &["type", "schema_version", "dupfind_version", "params"],
            &[],
            "header",
        );
        assert_eq!(first["type"], "header");
        assert_params_schema(&first["params"]);
        let simhash = first["params"]["method"] == "simhash";
        assert_keys(last, &["type", "stats"], &[], "summary");
        assert_eq!(last["type"], "summary");
        let body = &records[1..records.len() - 1];
        let cluster_records: Vec<Value> = (body.iter())
            .filter(|r| r["type"] == "cluster")
            .cloned()
            .collect();
        assert_stats_schema(&last["stats"], indexed_clusters(&cluster_records));
        for r in &records[1..records.len() - 1] {
            match r["type"].as_str() {
                Some("cluster") => assert_cluster_schema(r, simhash, &["type"]),
                Some("error") => assert_error_schema(r, &["type"]),
                other => panic!("unexpected record type {other:?}: {r}"),
            }
        }
    }
}
