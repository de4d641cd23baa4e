//! The fuzz targets' committed inputs replayed on the stable toolchain: every file under
//! `fuzz/seeds/<target>/` and `fuzz/regressions/<target>/` goes through the function the
//! target calls (`dupfind::fuzzing`), which checks the target's invariants (a `--max-size`
//! bound, fast paths equal to the scalar one, …) and panics where one is broken.

use std::collections::BTreeSet;
use std::fs;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

use dupfind::fuzzing::TARGETS;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz")
}

/// The input files of `target` in `fuzz/<kind>/`, sorted; none when the folder is missing.
fn inputs(kind: &str, target: &str) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(fuzz_dir().join(kind).join(target)) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    files.sort();
    files
}

#[test]
fn every_seed_and_regression_input_passes_its_target() {
    let mut failed = Vec::new();
    let mut ran = 0;
    for (name, target) in TARGETS {
        let seeds = inputs("seeds", name);
        assert!(!seeds.is_empty(), "fuzz/seeds/{name}/ has no input");
        for path in seeds.iter().chain(&inputs("regressions", name)) {
            let data = fs::read(path).unwrap();
            if catch_unwind(AssertUnwindSafe(|| target(&data))).is_err() {
                failed.push(path.display().to_string());
            }
            ran += 1;
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {ran} inputs failed: {failed:#?}",
        failed.len()
    );
}

#[test]
fn every_input_folder_and_fuzz_binary_names_a_target() {
    let targets: BTreeSet<&str> = TARGETS.iter().map(|(name, _)| *name).collect();
    for kind in ["seeds", "regressions"] {
        let Ok(folders) = fs::read_dir(fuzz_dir().join(kind)) else {
            continue;
        };
        for entry in folders {
            let entry = entry.unwrap();
            if !entry.file_type().unwrap().is_dir() {
                continue;
            }
            let name = entry.file_name();
            let name = name.to_string_lossy();
            assert!(targets.contains(&*name), "fuzz/{kind}/{name} is no target");
        }
    }
    let manifest = fs::read_to_string(fuzz_dir().join("Cargo.toml")).unwrap();
    let bins: BTreeSet<&str> = manifest
        .lines()
        .filter_map(|l| l.strip_prefix("name = \""))
        .filter_map(|l| l.strip_suffix('"'))
        .filter(|name| *name != "dupfind-fuzz")
        .collect();
    assert_eq!(bins, targets, "fuzz/Cargo.toml's binaries");
    for name in &targets {
        let source = fuzz_dir().join("fuzz_targets").join(format!("{name}.rs"));
        let source = fs::read_to_string(&source).unwrap();
        assert!(
            source.contains(&format!("dupfind::fuzzing::{name}(data)")),
            "fuzz_targets/{name}.rs does not call its function"
        );
    }
}
