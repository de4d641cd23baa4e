//! The stages in-process on a small corpus written to a temporary directory: what each stage
//! hands the next, and the report they make together.

use std::fs;
use std::path::Path;

use super::*;
use crate::config::scan_config;
use crate::ingest::worker::Outcome;
use crate::sketch::minhash::splitmix64;
use crate::verify;

/// `n` words of seeded text.
fn text(seed: u64, n: usize) -> String {
    let mut state = seed;
    (0..n)
        .map(|_| format!("w{}", splitmix64(&mut state) % 5000))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `base` with the words at `at` replaced.
fn edit(base: &str, at: &[usize]) -> String {
    let mut words: Vec<String> = base.split(' ').map(String::from).collect();
    for &i in at {
        words[i] = format!("edited{i}");
    }
    words.join(" ")
}

/// a; a with two words edited (J ≈ 0.94); a byte-identical copy of a; b unrelated; an empty
/// file; a binary one.
fn corpus(dir: &Path) {
    let a = text(1, 300);
    fs::write(dir.join("a.txt"), &a).unwrap();
    fs::write(dir.join("a-edit.txt"), edit(&a, &[100, 200])).unwrap();
    fs::write(dir.join("a-copy.txt"), &a).unwrap();
    fs::write(dir.join("b.txt"), text(2, 300)).unwrap();
    fs::write(dir.join("empty.txt"), "  \n").unwrap();
    fs::write(dir.join("bin.dat"), b"\x00\x01binary").unwrap();
}

fn config(dir: &Path, args: &[&str]) -> Config {
    let root = dir.to_str().unwrap();
    let mut cfg = scan_config(&[&["-q", "--keep", "first"][..], args, &[root]].concat()).unwrap();
    cfg.messages.quiet = true;
    cfg
}

#[test]
fn each_stage_hands_the_next_what_it_needs() {
    let t = tempfile::tempdir().unwrap();
    corpus(t.path());
    let cfg = config(t.path(), &[]);
    let walked = walk(&cfg.walk, &cfg.messages).unwrap();
    assert_eq!(walked.files_seen, 6);
    let mut joined = index::join(&cfg, walked.files).unwrap();
    let mut engine = ingest::engine(&cfg, None);
    let signed = ingest::sign(&cfg, std::mem::take(&mut joined.to_read), &engine, true).unwrap();
    let indexed = index::attach(&cfg, &mut joined, &signed.corpus).unwrap();
    engine.indexed = joined.stored_sets();
    let mut corpus = Corpus::assemble(indexed, signed.corpus);
    // Path order: a-copy, a-edit, a, b, bin.dat, empty.
    let outcomes: Vec<Outcome> = corpus.docs.iter().map(|d| d.outcome.clone()).collect();
    assert_eq!(corpus.len(), 6);
    assert_eq!(outcomes[4], Outcome::Binary);
    assert_eq!(outcomes[5], Outcome::Empty);
    assert_eq!(corpus.outcomes(cfg.walk.max_size, &cfg.messages).binary, 1);

    // a-copy and a are one content: one unit, one exact pair, the copy's canon is the first.
    let identical = identical::group(&mut corpus);
    assert_eq!(identical.units, [0, 1, 3]);
    assert_eq!(
        (
            identical.pairs[0].lo,
            identical.pairs[0].hi,
            identical.pairs[0].exact
        ),
        (0, 2, true)
    );
    assert_eq!(identical.canon, [0, 1, 0, 3, 4, 5]);
    assert_eq!(
        (identical.groups, identical.documents, identical.empty),
        (1, 4, 1)
    );

    // The edited copy shares bands with the unit of a; b shares none.
    let candidates = candidates::find(&cfg, &corpus, &identical.units);
    let bucketed: Vec<&[u32]> = (candidates.tables.iter())
        .flat_map(|t| (0..t.len()).map(move |i| t.bucket(i)))
        .collect();
    assert!(!bucketed.is_empty());
    assert!(bucketed.iter().all(|b| *b == [0, 1]), "{bucketed:?}");

    let kept = corpus.take_kept_sets();
    let judge = Judge::new(&cfg.method, &corpus, &identical.canon);
    let verified = verify::run(
        &cfg,
        &judge,
        &engine,
        &corpus.files,
        kept,
        &identical,
        &candidates,
        None,
    );
    assert_eq!((verified.checked, verified.passed), (1, 1));
    let pairs: Vec<(u32, u32)> = verified.pairs.iter().map(|p| (p.lo, p.hi)).collect();
    assert_eq!(
        pairs,
        [(0, 2), (0, 1)],
        "the exact pair first, then the verified one"
    );
    assert!(verified.pairs[1].similarity > 0.9 && verified.pairs[1].similarity < 1.0);
    // The sets of both clustered units were kept for clustering.
    assert!(verified.retained.get(0).set.is_some() && verified.retained.get(1).set.is_some());

    let material = cluster::Material {
        judge: &judge,
        engine: &engine,
        retained: &verified.retained,
        known: &verified.known,
    };
    let mut errors = Vec::new();
    let found = cluster::form(&cfg, &material, &corpus, &verified.pairs, &mut errors);
    assert!(errors.is_empty());
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].representative, 0);
    assert_eq!(found[0].cluster.members, [0, 1, 2]);

    // Strict clustering takes the score of a pair verification passed instead of judging it
    // again, and reads no member verification compared: with no set retained and the edited
    // copy gone, a-edit still joins a-copy, with verification's similarity, and nothing is
    // read again.
    let similarity = verified.pairs[1].similarity;
    assert_eq!(
        verified.known.get(1, 0).flatten().map(|s| s.similarity),
        Some(similarity)
    );
    assert_eq!(verified.known.get(0, 3), None);
    let compared: Vec<bool> = (0..4).map(|d| verified.known.compared(d)).collect();
    assert_eq!(compared, [true, true, false, false]);
    fs::remove_file(t.path().join("a-edit.txt")).unwrap();
    let none = crate::verify::reload::Loaded::default();
    let material = cluster::Material {
        retained: &none,
        ..material
    };
    let mut errors = Vec::new();
    let found = cluster::form(&cfg, &material, &corpus, &verified.pairs, &mut errors);
    assert_eq!(found[0].cluster.members, [0, 1, 2]);
    let pair = (found[0].cluster.pairs.iter()).find(|p| (p.2.lo, p.2.hi) == (0, 1));
    assert_eq!(pair.map(|p| p.2.similarity), Some(similarity));
    assert!(errors.is_empty(), "{errors:?}");
}

#[test]
fn the_report_counts_what_the_stages_did() {
    let t = tempfile::tempdir().unwrap();
    corpus(t.path());
    let out = scan(&config(t.path(), &[])).unwrap();
    assert_eq!(out.code, ExitCode::Success);
    let s = &out.report.stats;
    assert_eq!((s.files_seen, s.documents), (6, 4));
    assert_eq!((s.skipped.binary, s.skipped.empty), (1, 1));
    assert_eq!(
        (s.exact_groups, s.candidate_pairs, s.verified_pairs),
        (1, 1, 1)
    );
    assert_eq!(
        (
            s.clusters,
            s.unique_documents,
            s.exact_copies,
            s.near_copies
        ),
        (1, 1, 1, 1)
    );
    let held = out.report.clusters.as_held();
    let c = &held[0];
    assert_eq!(c.size, 3);
    assert!(c.representative().path.ends_with("a-copy.txt"));
    assert_eq!(c.duplicates.len(), 2);
    assert!(c.linked.is_empty());

    // --exit-code: 1 when duplicates were found, and the report is the same.
    let with = scan(&config(t.path(), &["--exit-code"])).unwrap();
    assert_eq!(with.code, ExitCode::DuplicatesFound);
    assert_eq!(with.report.stats.clusters, 1);
}

/// The stages up to the candidates, on the roots of `cfg`.
fn to_candidates(
    cfg: &Config,
) -> (
    crate::ingest::worker::Engine,
    Corpus,
    identical::Identical,
    candidates::Candidates,
) {
    let walked = walk(&cfg.walk, &cfg.messages).unwrap();
    let mut joined = index::join(cfg, walked.files).unwrap();
    let engine = ingest::engine(cfg, None);
    let signed = ingest::sign(cfg, std::mem::take(&mut joined.to_read), &engine, true).unwrap();
    let indexed = index::attach(cfg, &mut joined, &signed.corpus).unwrap();
    let mut corpus = Corpus::assemble(indexed, signed.corpus);
    let identical = identical::group(&mut corpus);
    let candidates = candidates::find(cfg, &corpus, &identical.units);
    (engine, corpus, identical, candidates)
}

/// Verification as `conclude` runs it with strict clustering's rehearsal, no set kept from the
/// first pass.
fn verify_rehearsed(
    cfg: &Config,
    judge: &Judge,
    engine: &crate::ingest::worker::Engine,
    corpus: &Corpus,
    identical: &identical::Identical,
    candidates: &candidates::Candidates,
) -> verify::Verified {
    let rehearsal = cluster::rehearsal(cfg, corpus).unwrap();
    let kept = vec![None; corpus.len()];
    let files = &corpus.files;
    verify::run(
        cfg,
        judge,
        engine,
        files,
        kept,
        identical,
        candidates,
        Some(&rehearsal),
    )
}

#[test]
fn a_candidate_whose_file_changed_is_an_error_and_no_pair() {
    let t = tempfile::tempdir().unwrap();
    corpus(t.path());
    let cfg = config(t.path(), &[]);
    let (engine, corpus, identical, candidates) = to_candidates(&cfg);
    // The kept sets are dropped, as when the set cache is full: verification must read the
    // files again, and a-edit.txt no longer holds what the first pass hashed.
    let kept = vec![None; corpus.len()];
    fs::write(t.path().join("a-edit.txt"), "something else entirely now").unwrap();
    let judge = Judge::new(&cfg.method, &corpus, &identical.canon);
    let verified = verify::run(
        &cfg,
        &judge,
        &engine,
        &corpus.files,
        kept,
        &identical,
        &candidates,
        None,
    );
    assert_eq!(verified.passed, 0);
    assert_eq!(verified.errors.len(), 1);
    assert!(verified.errors[0].path.ends_with("a-edit.txt"));
    assert_eq!(verified.errors[0].error, "file changed during the scan");
}

#[test]
fn a_member_verification_never_compared_is_read_again_for_its_error_alone() {
    // c and its copy are one content that no candidate pair compares: strict clustering reads
    // the file holding it again only for the error of one that changed (it derives no set
    // there), and the copies stay a cluster either way.
    let t = tempfile::tempdir().unwrap();
    corpus(t.path());
    let c = text(3, 300);
    fs::write(t.path().join("c.txt"), &c).unwrap();
    fs::write(t.path().join("c-copy.txt"), &c).unwrap();
    let cfg = config(t.path(), &[]);
    let (engine, corpus, identical, candidates) = to_candidates(&cfg);
    let judge = Judge::new(&cfg.method, &corpus, &identical.canon);
    let verified = verify_rehearsed(&cfg, &judge, &engine, &corpus, &identical, &candidates);
    let copy = (corpus.files.iter()).position(|f| f.path.ends_with("c-copy.txt"));
    assert!(!verified.known.compared(copy.unwrap() as u32));
    let material = cluster::Material {
        judge: &judge,
        engine: &engine,
        retained: &verified.retained,
        known: &verified.known,
    };
    let form = || {
        let mut errors = Vec::new();
        let found = cluster::form(&cfg, &material, &corpus, &verified.pairs, &mut errors);
        let members: Vec<Vec<u32>> = found.into_iter().map(|f| f.cluster.members).collect();
        (members, errors)
    };
    let (clusters, errors) = form();
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(clusters.len(), 2, "{clusters:?}");
    fs::write(t.path().join("c-copy.txt"), "changed since it was read").unwrap();
    let (again, errors) = form();
    assert_eq!(again, clusters);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].path.ends_with("c-copy.txt"));
    assert_eq!(errors[0].error, "file changed during the scan");
}

#[test]
fn verification_makes_the_verdicts_strict_clustering_asks_for() {
    // Three near-copies: verification passes 0-1 and 0-2 (a star from the first), while
    // --keep largest makes the longest, 2, the representative, so strict clustering asks for
    // 2-1 too: with the rehearsal, verification made that verdict while the sets were loaded.
    let t = tempfile::tempdir().unwrap();
    let a = text(1, 300);
    fs::write(t.path().join("x0.txt"), &a).unwrap();
    fs::write(t.path().join("x1.txt"), edit(&a, &[100])).unwrap();
    fs::write(t.path().join("x2.txt"), format!("{a} w1 w2 w3 w4 w5")).unwrap();
    let root = t.path().to_str().unwrap();
    let cfg = scan_config(&["-q", "--keep", "largest", root]).unwrap();
    let (engine, corpus, identical, candidates) = to_candidates(&cfg);
    let judge = Judge::new(&cfg.method, &corpus, &identical.canon);
    let verify = |rehearse: Option<&verify::Rehearse>| {
        let kept = vec![None; corpus.len()];
        verify::run(
            &cfg,
            &judge,
            &engine,
            &corpus.files,
            kept,
            &identical,
            &candidates,
            rehearse,
        )
    };
    let without = verify(None);
    let mut pairs: Vec<(u32, u32)> = without.pairs.iter().map(|p| (p.lo, p.hi)).collect();
    pairs.sort_unstable();
    assert_eq!(pairs, [(0, 1), (0, 2)]);
    assert_eq!(without.known.get(1, 2), None);
    let rehearsal = cluster::rehearsal(&cfg, &corpus).unwrap();
    let with = verify(Some(&rehearsal));
    let score = with.known.get(1, 2).flatten().unwrap();
    let sets: Vec<Box<[u64]>> = (0..3)
        .map(|d| {
            let bytes = fs::read(&corpus.files[d].path).unwrap();
            let mut shingler = crate::sketch::shingle::Shingler::new(cfg.shingle, cfg.ngram);
            crate::ingest::reread::set_of_content(&mut shingler, &bytes, false)
        })
        .collect();
    assert_eq!(score.similarity, verify::jaccard(&sets[1], &sets[2]));
    // Strict clustering then reads nothing again: every member was compared.
    assert!((0..3).all(|d| with.known.compared(d)));
}

#[test]
fn verification_retains_only_the_sets_the_cluster_records_load_again() {
    // a0 ~ a1 ~ a2 with a0 ≁ a2: strict clustering links a2 to a1, and its cluster record
    // checks a2 against a0, loading the cluster's sets again. b0 ~ b1 is a plain pair, whose
    // record needs no set: its sets are not retained (they were, while the budget lasted, on
    // top of the next batches' sets), unless --pairs asks for every pair's evidence.
    let t = tempfile::tempdir().unwrap();
    let a = text(31, 300);
    let a1 = edit(&a, &[20, 60, 100, 140]);
    fs::write(t.path().join("a0.txt"), &a).unwrap();
    fs::write(t.path().join("a1.txt"), &a1).unwrap();
    fs::write(
        t.path().join("a2.txt"),
        edit(&a1, &[170, 190, 210, 230, 250, 270]),
    )
    .unwrap();
    let b = text(32, 300);
    fs::write(t.path().join("b0.txt"), &b).unwrap();
    fs::write(t.path().join("b1.txt"), edit(&b, &[150])).unwrap();
    let retained = |args: &[&str]| {
        let cfg = config(t.path(), args);
        let (engine, corpus, identical, candidates) = to_candidates(&cfg);
        let judge = Judge::new(&cfg.method, &corpus, &identical.canon);
        let verified = verify_rehearsed(&cfg, &judge, &engine, &corpus, &identical, &candidates);
        let material = cluster::Material {
            judge: &judge,
            engine: &engine,
            retained: &verified.retained,
            known: &verified.known,
        };
        let found = cluster::form(&cfg, &material, &corpus, &verified.pairs, &mut Vec::new());
        let linked: Vec<(u32, u32)> = (found.iter())
            .flat_map(|f| f.cluster.pairs.iter().map(move |p| (f.representative, p.2)))
            .filter(|(rep, p)| p.lo != *rep && p.hi != *rep)
            .map(|(_, p)| (p.lo, p.hi))
            .collect();
        assert_eq!(linked, [(1, 2)], "a2 is linked to a1");
        (0..5u32)
            .filter(|&d| verified.retained.get(d).set.is_some())
            .collect::<Vec<u32>>()
    };
    assert_eq!(retained(&[]), [0, 1, 2]);
    assert_eq!(retained(&["--pairs"]), [0, 1, 2, 3, 4]);
}

#[test]
fn the_thread_count_changes_nothing() {
    let t = tempfile::tempdir().unwrap();
    corpus(t.path());
    for i in 0..20u64 {
        let base = text(100 + i / 4, 200);
        fs::write(
            t.path().join(format!("f{i:02}.txt")),
            edit(&base, &[i as usize * 7]),
        )
        .unwrap();
    }
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let out = pool
            .install(|| scan(&config(t.path(), &["--pairs"])))
            .unwrap();
        serde_json::to_string(&out.report).unwrap()
    };
    let one = run(1);
    assert!(one.contains("\"clusters\":[{"), "{one}");
    assert_eq!(one, run(2));
    assert_eq!(one, run(4));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 24, ..Default::default() })]

    /// The report does not depend on the order inputs are named in: the same files listed in
    /// any order (`--files-from`), and as roots in any order, give the same bytes.
    #[test]
    fn output_is_independent_of_input_order(
        order in proptest::strategy::Strategy::prop_shuffle(
            proptest::strategy::Just((0..12usize).collect::<Vec<_>>())
        ),
    ) {
        let t = tempfile::tempdir().unwrap();
        let names: Vec<String> = (0..12).map(|i| format!("d{}/f{i:02}.txt", i % 3)).collect();
        for (i, name) in names.iter().enumerate() {
            let path = t.path().join(name);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            let base = text(500 + i as u64 / 3, 150);
            fs::write(&path, edit(&base, &[i * 11 % 150])).unwrap();
        }
        let listed = |order: &[usize]| -> String {
            let mut cfg = scan_config(&["-q", "--pairs", "--files-from", "/dev/null"]).unwrap();
            cfg.walk.listed = order.iter().map(|&i| t.path().join(&names[i])).collect();
            serde_json::to_string(&scan(&cfg).unwrap().report).unwrap()
        };
        let sorted: Vec<usize> = (0..12).collect();
        let reference = listed(&sorted);
        let clustered = reference.contains("\"clusters\":[{");
        proptest::prop_assert!(clustered, "the corpus has clusters");
        proptest::prop_assert_eq!(&listed(&order), &reference);
        let roots = |first: usize| -> String {
            let dirs: Vec<String> = (0..3).map(|d| format!("d{}", (first + d) % 3)).collect();
            let mut cfg = scan_config(&["-q", "--pairs"]).unwrap();
            cfg.walk.roots = dirs.iter().map(|d| t.path().join(d)).collect();
            serde_json::to_string(&scan(&cfg).unwrap().report).unwrap()
        };
        proptest::prop_assert_eq!(roots(order[0] % 3), roots(0));
    }
}
