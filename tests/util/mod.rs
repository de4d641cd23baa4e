//! Test helpers: a temporary directory to write files into, the real binary run inside it, and
//! seeded text with near-duplicates made to order.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use dupfind::minhash::mix64 as mix;
use serde_json::Value;

/// The dupfind binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_dupfind")
}

/// A temporary directory that is the working directory of every run.
pub struct TestDir {
    dir: tempfile::TempDir,
}

/// What a run printed and how it ended.
pub struct Run {
    pub status: std::process::ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// The exit code (panics when the process died from a signal).
    pub fn code(&self) -> i32 {
        self.status
            .code()
            .unwrap_or_else(|| panic!("killed by a signal; stderr: {}", self.stderr))
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

    pub fn join(&self, rel: &str) -> PathBuf {
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
        finish(self.command(args).output().expect("running dupfind"))
    }
}

pub fn finish(out: Output) -> Run {
    Run {
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

const VOCABULARY: &str = "time person year way day thing man world life hand part child eye \
woman place work week case point government company number group problem fact be have do say \
get make go know take see come think look want give use find tell ask work seem feel try leave \
call good new first last long great little own other old right big high different small large \
next early young important few public bad same able to of in for on with at by from up about \
into over after beneath under above the and a that i it not he as you this but his they her \
she or an will my one all would there their river mountain copper lantern harbor violin orchard \
meadow glacier pepper saddle thunder marble velvet canyon falcon ember quartz willow anchor \
beacon cobalt dune ferry garnet hollow ivory jasper kettle lagoon maple nectar oasis pebble \
quiver raven summit timber umber valley walnut yonder zephyr almond bramble cedar delta";

/// A seeded document of `words` words drawn from a fixed vocabulary.
pub fn text(seed: u64, words: usize) -> String {
    let vocab: Vec<&str> = VOCABULARY.split_whitespace().collect();
    // The seed is mixed first: SplitMix64 streams from nearby raw seeds are shifted copies of
    // each other, which would make "unrelated" documents share most of their text.
    let mut state = mix(seed ^ 0x5EED);
    let mut out = Vec::with_capacity(words);
    for i in 0..words {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let z = mix(state);
        out.push(vocab[(z % vocab.len() as u64) as usize]);
        if i % 12 == 11 {
            out.push("\n");
        }
    }
    out.join(" ")
}

/// `base` with the words at the given positions (counted over words, not lines) replaced.
pub fn edit(base: &str, positions: &[usize]) -> String {
    base.split(' ')
        .enumerate()
        .map(|(i, w)| {
            if positions.contains(&i) {
                format!("edited{i}")
            } else {
                w.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The member paths of every cluster, in output order.
pub fn cluster_paths(report: &Value) -> Vec<Vec<String>> {
    report["clusters"]
        .as_array()
        .expect("clusters is an array")
        .iter()
        .map(|c| {
            c["members"]
                .as_array()
                .expect("members is an array")
                .iter()
                .map(|m| m["path"].as_str().expect("path is a string").to_string())
                .collect()
        })
        .collect()
}

/// Paths as dupfind prints them for the root ".".
pub fn dot(rel: &str) -> String {
    format!("./{rel}")
}
