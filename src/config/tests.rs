//! Validation: the defaults a scan runs with, and every refusal naming its flag.

use super::*;

fn err(args: &[&str]) -> String {
    match scan_config(args) {
        Ok(_) => panic!("{args:?} was accepted"),
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn defaults_are_the_documented_ones() {
    let cfg = scan_config(&[]).unwrap();
    assert_eq!(cfg.walk.roots, [PathBuf::from(".")]);
    assert_eq!(cfg.shingle, ShingleKind::Word);
    assert_eq!(cfg.ngram, 5);
    assert_eq!(cfg.seed, 0);
    assert_eq!(cfg.cluster, ClusterMode::Strict);
    assert_eq!(cfg.keep, KeepPolicy::Oldest);
    assert_eq!(cfg.format, OutputFormat::Json);
    assert_eq!(cfg.walk.max_size, 32 << 20);
    assert_eq!(cfg.lanes(), DEFAULT_NUM_PERM);
    assert_eq!(cfg.verify(), Some(Verify::Exact));
    match cfg.method {
        MethodConfig::MinHash {
            banding,
            banding_chosen,
            threshold,
            report_threshold,
            sketch,
            bottom_k,
            containment,
            ..
        } => {
            // The recall-tuned banding for 0.8 at K = 128 (see `banding::Banding::choose`).
            assert_eq!((banding.bands, banding.rows), (19, 6));
            assert!(banding_chosen);
            assert_eq!((threshold, report_threshold), (0.8, 0.8));
            assert_eq!(sketch, SketchKind::Oph);
            assert!(!bottom_k && containment.is_none());
        }
        MethodConfig::SimHash { .. } => panic!("minhash is the default"),
    }
}

#[test]
fn containment_clusters_are_components_and_strict_is_refused_with_it() {
    let cfg = scan_config(&["--containment"]).unwrap();
    assert_eq!(cfg.cluster, ClusterMode::Components);
    assert!(cfg.containment());
    let e = err(&["--containment", "--cluster", "strict"]);
    assert!(
        e.contains("--cluster strict does not apply to --containment"),
        "{e}"
    );
    let e = err(&["--containment", "-m", "simhash"]);
    assert!(
        e.contains("--containment applies to --method minhash"),
        "{e}"
    );
    let e = err(&["--containment", "--verify", "estimate"]);
    assert!(e.contains("--containment needs --verify exact"), "{e}");
    let e = err(&["--containment", "--bands", "4"]);
    assert!(
        e.contains("--bands and --rows do not apply to --containment"),
        "{e}"
    );
    let e = err(&["--containment", "--sketch", "bottom-k"]);
    assert!(e.contains("not --sketch bottom-k"), "{e}");
}

#[test]
fn a_flag_of_the_other_method_is_refused_by_name() {
    for flag in ["--bands", "--rows", "--threshold", "--num-perm"] {
        let e = err(&["-m", "simhash", flag, "4"]);
        assert!(
            e.starts_with(&format!("{flag} applies to --method minhash")),
            "{e}"
        );
    }
    let e = err(&["--max-distance", "3"]);
    assert!(
        e.starts_with("--max-distance applies to --method simhash"),
        "{e}"
    );
}

#[test]
fn out_of_range_values_are_refused() {
    for (args, want) in [
        (&["-n", "0"][..], "--ngram must be between 1 and 64, not 0"),
        (&["-n", "65"], "--ngram must be between 1 and 64, not 65"),
        (&["-t", "0"], "--threshold must be in (0, 1], not 0"),
        (&["-t", "1.5"], "--threshold must be in (0, 1], not 1.5"),
        (&["-k", "0"], "--num-perm must be between 1 and 1024, not 0"),
        (
            &["-k", "2000"],
            "--num-perm must be between 1 and 1024, not 2000",
        ),
        (
            &["--bands", "20", "--rows", "7"],
            "is more than --num-perm 128",
        ),
        (
            &["-m", "simhash", "--max-distance", "32"],
            "between 0 and 31, not 32",
        ),
        (
            &["--min-similarity", "0"],
            "--min-similarity must be in (0, 1], not 0",
        ),
        (
            &["--min-size", "2K", "--max-size", "1K"],
            "--min-size (2048) is larger than --max-size (1024)",
        ),
    ] {
        let e = err(args);
        assert!(e.contains(want), "{args:?}: {e}");
    }
}

#[test]
fn min_similarity_tightens_the_report_and_is_refused_when_looser() {
    let threshold = |args: &[&str]| match scan_config(args).unwrap().method {
        MethodConfig::MinHash {
            report_threshold, ..
        } => report_threshold,
        MethodConfig::SimHash { .. } => unreachable!(),
    };
    assert_eq!(threshold(&["--min-similarity", "0.9"]), 0.9);
    assert_eq!(threshold(&["--min-similarity", "0.8"]), 0.8);
    // Below the threshold it could not report more: refused, not ignored.
    let e = err(&["--min-similarity", "0.5"]);
    assert!(
        e.starts_with("--min-similarity 0.5 is below --threshold 0.8"),
        "{e}"
    );
    let distance = |args: &[&str]| match scan_config(args).unwrap().method {
        MethodConfig::SimHash {
            report_distance, ..
        } => report_distance,
        MethodConfig::MinHash { .. } => unreachable!(),
    };
    // 1 − 3/64 = 0.953125 keeps distance 3 itself; a hair more drops it.
    assert_eq!(
        distance(&["-m", "simhash", "--min-similarity", "0.953125"]),
        3
    );
    assert_eq!(distance(&["-m", "simhash", "--min-similarity", "0.96"]), 2);
    assert_eq!(distance(&["-m", "simhash", "--max-distance", "6"]), 6);
    let e = err(&["-m", "simhash", "--min-similarity", "0.9"]);
    assert!(
        e.starts_with("--min-similarity 0.9 allows a distance of 6, more than --max-distance 3"),
        "{e}"
    );
}

#[test]
fn output_options_that_cannot_apply_together_are_refused() {
    for (args, want) in [
        (&["-0"][..], "-0 (--null) applies to --files-from"),
        (
            &["-0", "--format", "text"],
            "-0 (--null) applies to --files-from",
        ),
        (
            &["--pairs", "--format", "paths"],
            "--pairs adds the evidence for each pair to json, jsonl and text reports",
        ),
        (
            &["--color", "always", "--format", "json"],
            "--color always applies to --format text, not --format json",
        ),
        (
            &["--color", "never", "--format", "paths"],
            "--color never applies to --format text, not --format paths",
        ),
        (
            &["-q", "--progress", "always"],
            "--quiet hides the progress bar --progress always asks for",
        ),
        // Not a terminal (the test's stdout is captured), so the report would be json.
        (
            &["--color", "always"],
            "--color always applies to the text format, and the report is json here",
        ),
    ] {
        let e = err(args);
        assert!(e.starts_with(want), "{args:?}: {e}");
    }
    // What does apply together.
    for args in [
        &["--format", "paths", "-0"][..],
        &["--color", "always", "--format", "text"],
        &["--color", "auto"],
        &["--pairs", "--format", "text"],
        &["-q", "--progress", "never"],
    ] {
        assert!(scan_config(args).is_ok(), "{args:?}");
    }
    let cfg = scan_config(&["--format", "paths", "-0"]).unwrap();
    assert_eq!(cfg.format, OutputFormat::Paths { null: true });
}

#[test]
fn a_lone_bands_or_rows_fills_the_signature() {
    assert_eq!(
        given_banding(Some(16), None, 128),
        Some(Banding { bands: 16, rows: 8 })
    );
    assert_eq!(
        given_banding(None, Some(5), 128),
        Some(Banding { bands: 25, rows: 5 })
    );
    assert_eq!(given_banding(None, None, 128), None);
    let e = err(&["--bands", "200"]);
    assert!(e.contains("--bands and --rows must be at least 1"), "{e}");
}

#[test]
fn an_index_is_refused_where_it_lacks_what_the_scan_needs() {
    for (args, want) in [
        (
            &["--verify", "edit"][..],
            "--verify edit cannot be used with an index",
        ),
        (
            &["--sketch", "bottom-k"],
            "--sketch bottom-k cannot be used with an index",
        ),
        (
            &["--containment"],
            "--containment cannot be used with an index yet",
        ),
    ] {
        let e = err(&[&["--against", "idx"][..], args].concat());
        assert!(e.contains(want), "{args:?}: {e}");
    }
    let cfg = scan_config(&["--against", "idx", "--update"]).unwrap();
    let index = cfg.against.as_ref().unwrap();
    assert!(index.update && !index.create);
    // The index's directory is never scanned, and the walk stats files to compare them.
    assert_eq!(cfg.walk.skip_dirs.len(), 1);
    assert!(!cfg.walk.defer_metadata);
}
