//! Scan: the pipeline, top to bottom.
//!
//! walk → read, hash, shingle and sketch each file (parallel) → group byte-identical files →
//! bucket signatures by band or piece → load the shingle sets that verification needs →
//! verify candidates → cluster → report.
//!
//! Memory: shingle sets are not held for every document. Each document keeps its signature
//! (K u32 values) or fingerprint; sets are kept during the first pass only while a fixed budget
//! lasts ([`crate::set_cache`]), and exact verification ([`crate::exact`]) loads the sets of
//! candidates a bounded batch at a time, deriving again from their files those not kept.

use std::collections::HashMap;
use std::sync::Mutex;

use anyhow::Result;
use rayon::prelude::*;

use crate::buckets::Buckets;
use crate::cli::ClusterArg;
use crate::cluster::{clusters, Cluster, Pair, UnionFind};
use crate::config::{Config, MethodConfig};
use crate::containment;
use crate::doc::{Claims, DocResult, DocWorker, Engine, Outcome, Sketcher};
use crate::exact::ExactVerifier;
use crate::exit::ExitCode;
use crate::keep;
use crate::kmv::{Kmv, DEFAULT_KMV_K};
use crate::lsh::{band_key, estimate_floor};
use crate::messages::{display_path, InputError, Messages};
use crate::minhash::{estimate, MinHasher};
use crate::oracle::{simhash_similarity, Oracle};
use crate::report::{ErrorOut, Params, Report, Stats, SCHEMA_VERSION};
use crate::results;
use crate::set_cache::SetCache;
use crate::simhash;
use crate::strict::split_component;
use crate::verify::{all_buckets, connect, containment_at_least, jaccard_at_least, Score};
use crate::walk::{walk, FileEntry};

/// A finished scan: the report and the exit status it implies.
pub struct ScanOutput {
    /// What to print.
    pub report: Report,
    /// 0 when every input was read, 2 otherwise.
    pub code: ExitCode,
}

/// Runs the whole pipeline on the configured roots.
pub fn scan(cfg: &Config) -> Result<ScanOutput> {
    let msgs = &cfg.messages;
    let walked = walk(&cfg.walk, msgs)?;
    note_banding(cfg);
    let files = walked.files;
    let mut errors = walked.errors;
    let mut stats = Stats {
        files_seen: walked.files_seen,
        ..Stats::default()
    };
    stats.skipped.not_regular = walked.skipped.not_regular;
    stats.skipped.symlink = walked.skipped.symlink;
    stats.skipped.outside_roots = walked.skipped.outside_roots;
    stats.skipped.too_short = walked.skipped.too_short;
    stats.skipped.too_large = walked.skipped.too_large;

    let engine = engine(cfg);
    let lanes = match &cfg.method {
        MethodConfig::MinHash { num_perm, .. } => *num_perm,
        MethodConfig::SimHash { .. } => 1,
    };
    let mut sigs = vec![0u32; files.len() * lanes];
    let (mut docs, distinct) = sketch_all(cfg, &files, &engine, &mut sigs, lanes);
    stats.distinct_shingles = distinct.estimate().round() as u64;
    stats.distinct_shingles_error = distinct.relative_error();
    record_outcomes(&files, &docs, &mut stats, &mut errors, msgs);

    let (exact_pairs, units) = group_exact(&mut docs, &mut sigs, lanes, &mut stats);
    let tables = bucket(cfg, &units, &sigs, lanes, &docs);

    let mut uf = UnionFind::new(files.len());
    for p in &exact_pairs {
        uf.union(p.lo, p.hi);
    }
    let sig = |d: u32| &sigs[d as usize * lanes..(d as usize + 1) * lanes];
    let verification = match &cfg.method {
        MethodConfig::MinHash {
            report_threshold,
            containment: true,
            ..
        } => {
            let sizes: Vec<u64> = docs.iter().map(|d| d.shingles).collect();
            let size = |d: u32| sizes[d as usize];
            let verifier = ExactVerifier {
                files: &files,
                engine: &engine,
                msgs,
                threshold: *report_threshold,
                measure: containment_at_least,
                plausible: |a: u32, b: u32| {
                    let e = estimate(sig(a), sig(b));
                    containment::plausible(e, size(a), size(b), lanes, *report_threshold)
                },
            };
            verifier.run(&mut docs, &tables, &mut uf, &mut errors)
        }
        MethodConfig::MinHash {
            report_threshold,
            exact: true,
            ..
        } => {
            let floor = estimate_floor(*report_threshold, lanes);
            let verifier = ExactVerifier {
                files: &files,
                engine: &engine,
                msgs,
                threshold: *report_threshold,
                measure: jaccard_at_least,
                plausible: |a: u32, b: u32| estimate(sig(a), sig(b)) >= floor,
            };
            verifier.run(&mut docs, &tables, &mut uf, &mut errors)
        }
        MethodConfig::MinHash {
            report_threshold,
            exact: false,
            ..
        } => connect(&all_buckets(&tables), &mut uf, |lo, hi| {
            let e = estimate(sig(lo), sig(hi));
            (e >= *report_threshold).then_some((e, None))
        }),
        MethodConfig::SimHash {
            report_distance, ..
        } => connect(&all_buckets(&tables), &mut uf, |lo, hi| {
            let d = simhash::distance(docs[lo as usize].fingerprint, docs[hi as usize].fingerprint);
            (d <= *report_distance).then_some((simhash_similarity(d), Some(d)) as Score)
        }),
    };
    stats.candidate_pairs = verification.checked;
    stats.verified_pairs = verification.passed;
    drop(tables);

    let canon = canonical(files.len(), &exact_pairs);
    let oracle = Oracle {
        method: &cfg.method,
        lanes,
        sigs: &sigs,
        docs: &docs,
        canon: &canon,
    };
    let mut pairs = exact_pairs;
    pairs.extend(verification.pairs);
    let components = clusters(files.len(), &pairs);
    let facts = |d: u32| keep::Facts {
        id: d,
        path: &files[d as usize].path,
        bytes: docs[d as usize].bytes,
        modified: files[d as usize].modified,
    };
    let found: Vec<(u32, Cluster)> = match cfg.cluster {
        ClusterArg::Components => components
            .into_iter()
            .map(|c| {
                let mut order = c.members.clone();
                keep::sort(cfg.keep, &mut order, facts);
                if oracle.is_containment() {
                    containment::largest_first(&mut order, |d| oracle.size(d));
                }
                (order[0], c)
            })
            .collect(),
        ClusterArg::Strict => strict_clusters(
            cfg,
            components,
            &oracle,
            &engine,
            &files,
            facts,
            &mut errors,
        ),
    };
    stats.clusters = found.len() as u64;
    let clustered: u64 = found.iter().map(|(_, c)| c.members.len() as u64).sum();
    let exact_copies = (0..files.len()).filter(|&d| canon[d] != d as u32).count() as u64;
    stats.unique_documents = stats.documents - clustered;
    stats.exact_copies = exact_copies;
    stats.near_copies = clustered - stats.clusters - exact_copies;
    let inputs = results::Inputs {
        files: &files,
        oracle: &oracle,
        engine: &engine,
        evidence: cfg.pairs,
    };
    let cluster_records = results::cluster_records(&inputs, &found, &mut errors);
    errors.sort_by(|a, b| a.path.cmp(&b.path));
    errors.dedup_by(|a, b| a.path == b.path);
    stats.skipped.error = errors.len() as u64;

    let code = if !errors.is_empty() {
        ExitCode::Error
    } else if cfg.exit_code && !found.is_empty() {
        ExitCode::DuplicatesFound
    } else {
        ExitCode::Success
    };
    let report = Report {
        schema_version: SCHEMA_VERSION,
        dupfind_version: env!("CARGO_PKG_VERSION"),
        params: params(cfg),
        stats,
        clusters: cluster_records,
        errors: errors
            .iter()
            .map(|e| {
                let (path, path_bytes) = crate::report::path_fields(&e.path);
                ErrorOut {
                    path,
                    path_bytes,
                    error: e.error.clone(),
                }
            })
            .collect(),
    };
    Ok(ScanOutput { report, code })
}

/// For each document, the document that holds its content's sketches (itself unless it is a
/// byte-identical copy).
fn canonical(n: usize, exact_pairs: &[Pair]) -> Vec<u32> {
    let mut canon: Vec<u32> = (0..n as u32).collect();
    for p in exact_pairs {
        canon[p.hi as usize] = p.lo;
    }
    canon
}

/// `--cluster strict`: each component split by greedy centers in `--keep` order. Exact MinHash
/// verification loads the component's sets (one component at a time, so memory stays that of
/// the largest component).
fn strict_clusters<'a>(
    cfg: &Config,
    components: Vec<Cluster>,
    oracle: &Oracle,
    engine: &Engine,
    files: &'a [FileEntry],
    facts: impl Fn(u32) -> keep::Facts<'a> + Copy,
    errors: &mut Vec<InputError>,
) -> Vec<(u32, Cluster)> {
    let mut out = Vec::new();
    for c in components {
        let mut order = c.members;
        keep::sort(cfg.keep, &mut order, facts);
        let sets = if oracle.needs_sets() {
            results::member_sets(oracle, engine, files, &order, errors)
        } else {
            HashMap::new()
        };
        let set = |d: u32| sets.get(&oracle.canon[d as usize]).map(|s| &s[..]);
        out.extend(split_component(&order, |rep, doc| {
            let pair_sets = set(rep).zip(set(doc));
            oracle.check(rep, doc, pair_sets)
        }));
    }
    for (_, c) in &mut out {
        for p in &mut c.pairs {
            p.2.exact = oracle.same_content(p.2.lo, p.2.hi);
        }
    }
    // Clusters in order of their first member, as with components.
    out.sort_by_key(|(_, c)| c.members[0]);
    out
}

fn engine(cfg: &Config) -> Engine {
    let sketcher = match &cfg.method {
        MethodConfig::MinHash {
            sketch, num_perm, ..
        } => Sketcher::MinHash {
            hasher: MinHasher::new(*sketch, *num_perm, cfg.seed),
        },
        MethodConfig::SimHash { .. } => Sketcher::SimHash { seed: cfg.seed },
    };
    Engine {
        shingle: cfg.shingle,
        ngram: cfg.ngram,
        max_size: cfg.walk.max_size,
        sizes: matches!(
            cfg.method,
            MethodConfig::MinHash {
                containment: true,
                ..
            }
        ),
        sketcher,
    }
}

fn sketch_all(
    cfg: &Config,
    files: &[FileEntry],
    engine: &Engine,
    sigs: &mut [u32],
    lanes: usize,
) -> (Vec<DocResult>, Kmv) {
    let msgs = &cfg.messages;
    let claims = Claims::default();
    let distinct = Mutex::new(Kmv::new(DEFAULT_KMV_K));
    // Only exact MinHash verification needs shingle sets again.
    let cache = match &cfg.method {
        MethodConfig::MinHash {
            banding,
            exact: true,
            ..
        } => Some(SetCache::new(files.len(), *banding)),
        _ => None,
    };
    let bar = msgs.progress_bar(files.len() as u64, "reading");
    let docs = files
        .par_iter()
        .zip(sigs.par_chunks_mut(lanes))
        .map_init(
            || DocWorker::counting(engine, &distinct),
            |w, (file, sig)| {
                let r = w.process(file, sig, &claims, cache.as_ref());
                bar.inc(1);
                r
            },
        )
        .collect();
    bar.finish_and_clear();
    let distinct = distinct.into_inner().unwrap_or_else(|e| e.into_inner());
    (docs, distinct)
}

fn record_outcomes(
    files: &[FileEntry],
    docs: &[DocResult],
    stats: &mut Stats,
    errors: &mut Vec<InputError>,
    msgs: &Messages,
) {
    for (file, doc) in files.iter().zip(docs) {
        match &doc.outcome {
            Outcome::Sketched | Outcome::Duplicate | Outcome::Empty => {}
            Outcome::Binary => stats.skipped.binary += 1,
            Outcome::NotRegular => stats.skipped.not_regular += 1,
            Outcome::TooLarge(n) => {
                stats.skipped.too_large += 1;
                msgs.warn(&format!(
                    "{}: skipped, grew to {n} bytes",
                    display_path(&file.path)
                ));
            }
            Outcome::Failed(reason) => {
                msgs.warn(&format!("{}: {reason}", display_path(&file.path)));
                errors.push(InputError {
                    path: file.path.clone(),
                    error: reason.clone(),
                });
            }
        }
    }
    // Walk errors and read errors together, in path order.
    errors.sort_by(|a, b| a.path.cmp(&b.path));
}

/// Groups byte-identical documents. Returns their pairs (each copy to the group's first
/// document) and the ids of the distinct-content documents to bucket, in increasing order.
/// Each group's signature, fingerprint and set are moved to its first document.
fn group_exact(
    docs: &mut [DocResult],
    sigs: &mut [u32],
    lanes: usize,
    stats: &mut Stats,
) -> (Vec<Pair>, Vec<u32>) {
    let mut groups: HashMap<u128, Vec<u32>> = HashMap::new();
    let mut order: Vec<u128> = Vec::new();
    for (i, d) in docs.iter().enumerate() {
        if matches!(d.outcome, Outcome::Sketched | Outcome::Duplicate) {
            let g = groups.entry(d.hash).or_default();
            if g.is_empty() {
                order.push(d.hash);
            }
            g.push(i as u32);
        }
    }
    let mut pairs = Vec::new();
    let mut units = Vec::new();
    for hash in order {
        let members = &groups[&hash];
        let first = members[0] as usize;
        let Some(&sketched) = members
            .iter()
            .find(|&&m| docs[m as usize].outcome == Outcome::Sketched)
        else {
            // The claimer found no token: every copy is empty.
            for &m in members {
                docs[m as usize].outcome = Outcome::Empty;
            }
            continue;
        };
        let sketched = sketched as usize;
        if sketched != first {
            sigs.copy_within(sketched * lanes..(sketched + 1) * lanes, first * lanes);
            docs[first].fingerprint = docs[sketched].fingerprint;
            docs[first].set = docs[sketched].set.take();
            docs[first].shingles = docs[sketched].shingles;
            docs[sketched].outcome = Outcome::Duplicate;
            docs[first].outcome = Outcome::Sketched;
        }
        units.push(first as u32);
        if members.len() > 1 {
            stats.exact_groups += 1;
        }
        for &m in &members[1..] {
            pairs.push(Pair {
                lo: first as u32,
                hi: m,
                similarity: 1.0,
                distance: None,
                exact: true,
            });
        }
    }
    // Empty documents (including copies of an empty claimer) never join a cluster.
    for d in docs.iter() {
        match d.outcome {
            Outcome::Sketched | Outcome::Duplicate => {
                stats.documents += 1;
                stats.bytes += d.bytes;
            }
            Outcome::Empty => stats.skipped.empty += 1,
            _ => {}
        }
    }
    units.sort_unstable();
    (pairs, units)
}

/// One `Buckets` per band (MinHash) or piece (SimHash).
fn bucket(
    cfg: &Config,
    units: &[u32],
    sigs: &[u32],
    lanes: usize,
    docs: &[DocResult],
) -> Vec<Buckets> {
    match &cfg.method {
        MethodConfig::MinHash {
            containment: true,
            threshold,
            num_perm,
            ..
        } => {
            let sizes: Vec<u64> = docs.iter().map(|d| d.shingles).collect();
            let scheme = containment::Scheme::new(*threshold, *num_perm);
            containment::tables(&scheme, units, sigs, lanes, &sizes)
        }
        MethodConfig::MinHash { banding, .. } => (0..banding.bands)
            .map(|band| {
                let r = banding.rows;
                let entries = units
                    .par_iter()
                    .map(|&u| {
                        let start = u as usize * lanes + band * r;
                        (band_key(band, &sigs[start..start + r]), u)
                    })
                    .collect();
                Buckets::from_keys(entries)
            })
            .collect(),
        MethodConfig::SimHash { max_distance, .. } => simhash::pieces(*max_distance)
            .into_iter()
            .map(|piece| {
                let entries = units
                    .par_iter()
                    .map(|&u| (simhash::piece_key(piece, docs[u as usize].fingerprint), u))
                    .collect();
                Buckets::from_keys(entries)
            })
            .collect(),
    }
}

/// Says on stderr which banding `--threshold` chose and what it means for a pair at the
/// threshold (after the roots are known to be there, so an error comes alone).
fn note_banding(cfg: &Config) {
    if let MethodConfig::MinHash {
        containment: true,
        threshold,
        num_perm,
        ..
    } = &cfg.method
    {
        cfg.messages
            .note(&containment::Scheme::new(*threshold, *num_perm).describe());
        return;
    }
    if let MethodConfig::MinHash {
        banding,
        banding_chosen: true,
        threshold,
        num_perm,
        ..
    } = &cfg.method
    {
        cfg.messages.note(&format!(
            "threshold {threshold}: {} bands × {} rows of {num_perm} signature values; a pair at \
             the threshold becomes a candidate with probability {:.4}",
            banding.bands,
            banding.rows,
            banding.candidate_probability(*threshold)
        ));
    }
    if let MethodConfig::MinHash {
        banding, threshold, ..
    } = &cfg.method
    {
        if let Some(note) = crate::explain::poor_curve_note(banding, *threshold) {
            cfg.messages
                .note(&format!("{note} (see `dupfind explain`)"));
        }
    }
}

fn params(cfg: &Config) -> Params {
    let mut p = Params {
        method: "minhash",
        shingle: match cfg.shingle {
            crate::shingle::ShingleKind::Word => "word",
            crate::shingle::ShingleKind::Char => "char",
        },
        ngram: cfg.ngram,
        sketch: None,
        num_perm: None,
        bands: None,
        rows: None,
        threshold: None,
        bits: None,
        max_distance: None,
        pieces: None,
        verify: "exact",
        seed: cfg.seed,
        min_similarity: None,
        cluster: match cfg.cluster {
            ClusterArg::Components => "components",
            ClusterArg::Strict => "strict",
        },
        keep: keep::name(cfg.keep),
        containment: false,
    };
    match &cfg.method {
        MethodConfig::MinHash {
            sketch,
            num_perm,
            banding,
            threshold,
            report_threshold,
            exact,
            containment,
            ..
        } => {
            p.sketch = Some(sketch.name());
            p.num_perm = Some(*num_perm);
            p.bands = Some(banding.bands);
            p.rows = Some(banding.rows);
            p.threshold = Some(*threshold);
            if report_threshold > threshold {
                p.min_similarity = Some(*report_threshold);
            }
            p.verify = if *exact { "exact" } else { "estimate" };
            p.containment = *containment;
        }
        MethodConfig::SimHash {
            max_distance,
            report_distance,
        } => {
            if report_distance < max_distance {
                p.min_similarity = Some(simhash_similarity(*report_distance));
            }
            p.method = "simhash";
            p.bits = Some(64);
            p.max_distance = Some(*max_distance);
            p.pieces = Some(simhash::pieces(*max_distance).len());
        }
    }
    p
}
