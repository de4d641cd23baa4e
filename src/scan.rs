//! Scan: the pipeline, top to bottom.
//!
//! walk → read, hash, shingle and sketch each file (parallel) → group byte-identical files →
//! bucket signatures by band or piece → load the shingle sets that verification needs →
//! verify candidates → cluster → report.
//!
//! Memory: shingle sets are not held for every document. Each document keeps its signature
//! (K u32 values; with `--sketch bottom-k` also K + 1 u64 values) or fingerprint; sets are kept during the first pass only while a fixed budget
//! lasts ([`crate::ingest::set_cache`]), and exact verification ([`crate::verify::sets`]) loads the sets of
//! candidates a bounded batch at a time, deriving again from their files those not kept. Edit
//! verification ([`crate::verify::edit`]) loads token sequences the same way.

use anyhow::Result;
use rayon::prelude::*;

use crate::candidates::buckets::Buckets;
use crate::candidates::containment;
use crate::candidates::identical;
use crate::candidates::lsh::{band_key, estimate_floor};
use crate::config::ClusterMode;
use crate::cluster::representative;
use crate::cluster::strict::split_component;
use crate::cluster::{clusters, Cluster, UnionFind};
use crate::config::{Config, MethodConfig, Verify};
use crate::exit::ExitCode;
use crate::index::against;
use crate::ingest::set_cache::SetCache;
use crate::ingest::worker::{DocResult, Engine, Outcome, Sketcher};
use crate::ingest::{spill_records, Ingest, Ingested};
use crate::input::read::SizeLimits;
use crate::input::walk::{walk, FileEntry};
use crate::messages::{display_path, InputError, Messages};
use crate::report::build;
use crate::report::params;
use crate::report::{ErrorOut, IndexStats, Report, Stats, SCHEMA_VERSION};
use crate::sketch::minhash::{estimate, MinHasher};
use crate::sketch::simhash;
use crate::verify::edit::EditVerifier;
use crate::verify::judge::{simhash_similarity, Oracle};
use crate::verify::reload::{Loaded, Want};
use crate::verify::sets::ExactVerifier;
use crate::verify::{all_buckets, connect, containment_verified, jaccard_at_least, Score};

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
    params::note_banding(cfg);
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

    let lanes = match &cfg.method {
        MethodConfig::MinHash { num_perm, .. } => *num_perm,
        MethodConfig::SimHash { .. } => 1,
    };
    // With an index, its documents come first (ids 0..first_new), then the inputs read now.
    let (to_read, mut files, mut docs, mut sigs, indexed) = match &cfg.against {
        Some(against) => {
            let j = against::join(against, cfg, files)?;
            stats.index = Some(IndexStats {
                generation: j.generation,
                documents: j.entries.len() as u64,
                unchanged_files: j.unchanged,
                updated_generation: None,
            });
            (j.to_read, j.entries, j.docs, j.sigs, j.sets)
        }
        None => (files, Vec::new(), Vec::new(), Vec::new(), None),
    };
    let first_new = files.len() as u32;
    let engine = engine(cfg, indexed.clone());
    let ingested = ingest(cfg, to_read, &engine, lanes);
    // Without an index the first pass's vectors are taken as they are (signatures are most of
    // the memory, and extending an empty vector would copy them).
    append(&mut files, ingested.entries);
    append(&mut docs, ingested.docs);
    append(&mut sigs, ingested.sigs);
    let files = files;
    stats.distinct_shingles = ingested.distinct.estimate().round() as u64;
    stats.distinct_shingles_error = ingested.distinct.relative_error();
    stats.skipped.bad_line = ingested.bad_lines;
    stats.skipped.empty += ingested.empty_dumps;
    errors.extend(ingested.errors);
    record_outcomes(
        &files,
        &docs,
        cfg.walk.max_size,
        &mut stats,
        &mut errors,
        msgs,
    );

    let mut bottom = ingested.bottom;
    let (exact_pairs, units) = identical::group_exact(
        &mut docs,
        &mut sigs,
        lanes,
        first_new,
        &mut bottom,
        &mut stats,
    );
    let (mut tables, ruled_out) = bucket(cfg, &units, &sigs, lanes, &docs);
    if first_new > 0 {
        tables.iter_mut().for_each(|t| t.keep_from(first_new));
    }
    let updating = cfg.against.as_ref().is_some_and(|a| a.update);
    let new_records = || (first_new as usize..files.len()).filter(|&d| files[d].record.is_some());
    if new_records().next().is_some() && (needs_texts(cfg) || updating) {
        let mut wanted: Vec<u32> = if updating {
            // Every new record goes into the index with its set.
            new_records().map(|d| d as u32).collect()
        } else {
            let mut w: Vec<u32> = tables
                .iter()
                .flat_map(|t| t.docs().iter().copied())
                .collect();
            w.extend(exact_pairs.iter().map(|p| p.lo));
            w
        };
        wanted.retain(|&d| d >= first_new);
        wanted.sort_unstable();
        wanted.dedup();
        if let Err(e) = spill_records(&engine, &files, &wanted, &cfg.jsonl) {
            anyhow::bail!(
                "cannot store the texts of dump records for verification in a temporary file: {}",
                crate::messages::io_reason(&e)
            );
        }
    }

    let mut uf = UnionFind::new(files.len());
    for p in &exact_pairs {
        uf.union(p.lo, p.hi);
    }
    let sig = |d: u32| &sigs[d as usize * lanes..(d as usize + 1) * lanes];
    // Units hold their content's sketches, so no `canon` is needed here.
    let jaccard_estimate = |a: u32, b: u32| match bottom.is_on() {
        true => bottom.estimate(a, b),
        false => estimate(sig(a), sig(b)),
    };
    let verification = match &cfg.method {
        MethodConfig::MinHash {
            report_threshold,
            containment: true,
            ..
        } => {
            let verifier = ExactVerifier {
                files: &files,
                engine: &engine,
                msgs,
                threshold: *report_threshold,
                measure: containment_verified,
                // The candidates passed the estimate prefilter already.
                plausible: |_: u32, _: u32| true,
            };
            verifier.run(&mut docs, &tables, &mut uf, &mut errors)
        }
        MethodConfig::MinHash {
            report_threshold,
            verify: Verify::Exact,
            ..
        } => {
            let floor = estimate_floor(*report_threshold, lanes);
            let verifier = ExactVerifier {
                files: &files,
                engine: &engine,
                msgs,
                threshold: *report_threshold,
                measure: jaccard_at_least,
                plausible: |a: u32, b: u32| {
                    b.max(a) >= first_new && jaccard_estimate(a, b) >= floor
                },
            };
            verifier.run(&mut docs, &tables, &mut uf, &mut errors)
        }
        MethodConfig::MinHash {
            report_threshold,
            verify: Verify::Edit,
            ..
        } => {
            let verifier = EditVerifier {
                files: &files,
                engine: &engine,
                msgs,
                threshold: *report_threshold,
            };
            let (v, fallbacks) = verifier.run(&mut docs, &tables, &mut uf, &mut errors);
            stats.edit_fallbacks = Some(fallbacks);
            v
        }
        MethodConfig::MinHash {
            report_threshold,
            verify: Verify::Estimate,
            ..
        } => connect(&all_buckets(&tables), &mut uf, |lo, hi| {
            if hi < first_new {
                return None;
            }
            let e = jaccard_estimate(lo, hi);
            (e >= *report_threshold).then_some((e, None))
        }),
        MethodConfig::SimHash {
            report_distance, ..
        } => connect(&all_buckets(&tables), &mut uf, |lo, hi| {
            if hi < first_new {
                return None;
            }
            let d = simhash::distance(docs[lo as usize].fingerprint, docs[hi as usize].fingerprint);
            (d <= *report_distance).then_some((simhash_similarity(d), Some(d)) as Score)
        }),
    };
    stats.candidate_pairs = verification.checked + ruled_out;
    stats.verified_pairs = verification.passed;
    drop(tables);

    let canon = identical::canonical(files.len(), &exact_pairs);
    let oracle = Oracle {
        method: &cfg.method,
        lanes,
        sigs: &sigs,
        docs: &docs,
        canon: &canon,
        bottom: &bottom,
    };
    let mut pairs = exact_pairs;
    pairs.extend(verification.pairs);
    let components = clusters(files.len(), &pairs);
    let facts = |d: u32| representative::Facts {
        id: d,
        path: &files[d as usize].path,
        bytes: docs[d as usize].bytes,
        modified: files[d as usize].modified,
        indexed: d < first_new,
    };
    let found: Vec<(u32, Cluster)> = match cfg.cluster {
        ClusterMode::Components => components
            .into_iter()
            .map(|c| {
                let mut order = c.members.clone();
                representative::sort(cfg.keep, &mut order, facts);
                if oracle.is_containment() {
                    containment::largest_first(&mut order, |d| oracle.size(d));
                }
                (order[0], c)
            })
            .collect(),
        ClusterMode::Strict => strict_clusters(
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
    // Counted over the new documents: with --against, a cluster whose representative is an
    // indexed document has no original among them.
    let clustered: u64 = found
        .iter()
        .map(|(_, c)| c.members.iter().filter(|&&d| d >= first_new).count() as u64)
        .sum();
    let originals = found.iter().filter(|(rep, _)| *rep >= first_new).count() as u64;
    let exact_copies = (first_new as usize..files.len())
        .filter(|&d| canon[d] != d as u32)
        .count() as u64;
    stats.unique_documents = stats.documents.saturating_sub(clustered);
    stats.exact_copies = exact_copies;
    stats.near_copies = clustered.saturating_sub(originals + exact_copies);
    let inputs = build::Inputs {
        files: &files,
        oracle: &oracle,
        engine: &engine,
        evidence: cfg.pairs,
        first_new,
    };
    let cluster_records = build::cluster_records(&inputs, &found, &mut errors);
    if let Some(against) = cfg.against.as_ref().filter(|a| a.update) {
        let update = against::Update {
            cfg,
            engine: &engine,
            files: &files,
            docs: &docs,
            sigs: &sigs,
            lanes,
            canon: &canon,
            indexed: indexed.as_deref(),
        };
        let generation = stats.index.as_ref().map_or(0, |s| s.generation);
        match update.write(against, generation, &mut errors) {
            Ok(written) => {
                if let Some(s) = &mut stats.index {
                    s.updated_generation = Some(written);
                }
            }
            // The scan itself is complete: its report is still printed, the failure is an
            // error of the run (exit 2), and the index is as it was.
            Err(e) => {
                let reason = format!("index not updated: {e:#}");
                msgs.warn(&format!("{}: {reason}", display_path(&against.dir)));
                errors.push(InputError {
                    path: against.dir.clone(),
                    line: None,
                    error: reason,
                });
            }
        }
    }
    errors.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
    errors.dedup_by(|a, b| (&a.path, a.line) == (&b.path, b.line));
    stats.skipped.error = errors.len() as u64 - stats.skipped.bad_line;

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
        params: params::params(cfg),
        stats,
        clusters: cluster_records,
        errors: errors
            .iter()
            .map(|e| {
                let (path, path_bytes) = crate::report::path_fields(&e.path);
                ErrorOut {
                    path,
                    path_bytes,
                    line: e.line,
                    error: e.error.clone(),
                }
            })
            .collect(),
    };
    Ok(ScanOutput { report, code })
}

/// `--cluster strict`: each component split by greedy centers in `--keep` order. Exact and
/// edit verification load the component's sets or token sequences (one component at a time, so
/// memory stays that of the largest component).
fn strict_clusters<'a>(
    cfg: &Config,
    components: Vec<Cluster>,
    oracle: &Oracle,
    engine: &Engine,
    files: &'a [FileEntry],
    facts: impl Fn(u32) -> representative::Facts<'a> + Copy,
    errors: &mut Vec<InputError>,
) -> Vec<(u32, Cluster)> {
    let mut out = Vec::new();
    for c in components {
        let mut order = c.members;
        representative::sort(cfg.keep, &mut order, facts);
        let want = Want {
            sets: oracle.needs_sets(),
            tokens: oracle.needs_tokens(),
        };
        let loaded = if want.sets || want.tokens {
            build::member_material(oracle, engine, files, &order, want, errors)
        } else {
            Loaded::default()
        };
        out.extend(split_component(&order, |rep, doc| {
            oracle.check(rep, doc, &loaded)
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

fn engine(cfg: &Config, indexed: Option<std::sync::Arc<against::IndexedSets>>) -> Engine {
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
        limits: SizeLimits {
            min: cfg.walk.min_size,
            max: cfg.walk.max_size,
        },
        sizes: matches!(
            cfg.method,
            MethodConfig::MinHash {
                containment: true,
                ..
            }
        ),
        sketcher,
        spill: Default::default(),
        indexed,
    }
}

/// Whether verification or the report reads documents' texts again: exact and edit
/// verification and `--pairs` evidence do.
fn needs_texts(cfg: &Config) -> bool {
    cfg.pairs
        || matches!(
            cfg.method,
            MethodConfig::MinHash {
                verify: Verify::Exact | Verify::Edit,
                ..
            }
        )
}

fn ingest(cfg: &Config, files: Vec<FileEntry>, engine: &Engine, lanes: usize) -> Ingested {
    // Only exact MinHash verification needs shingle sets again. A dump's documents are not
    // counted until it is read, so its share of the cache's bitmap is estimated from its size.
    let cache = match &cfg.method {
        MethodConfig::MinHash {
            banding,
            verify: Verify::Exact,
            ..
        } => {
            let documents: u64 = files
                .iter()
                .map(|f| if f.dump { f.size / 1024 + 1 } else { 1 })
                .sum();
            Some(SetCache::new(documents as usize, *banding))
        }
        _ => None,
    };
    let bottom_k = match &cfg.method {
        MethodConfig::MinHash {
            bottom_k: true,
            num_perm,
            ..
        } => Some((*num_perm, cfg.seed)),
        _ => None,
    };
    Ingest {
        engine,
        lanes,
        bottom_k,
        jsonl: &cfg.jsonl,
        cache: cache.as_ref(),
        msgs: &cfg.messages,
    }
    .run(files)
}

fn record_outcomes(
    files: &[FileEntry],
    docs: &[DocResult],
    max_size: u64,
    stats: &mut Stats,
    errors: &mut Vec<InputError>,
    msgs: &Messages,
) {
    for (file, doc) in files.iter().zip(docs) {
        match &doc.outcome {
            Outcome::Sketched | Outcome::Duplicate | Outcome::Empty => {}
            Outcome::Binary => stats.skipped.binary += 1,
            Outcome::NotRegular => stats.skipped.not_regular += 1,
            Outcome::TooShort => stats.skipped.too_short += 1,
            Outcome::TooLarge(n) => {
                stats.skipped.too_large += 1;
                msgs.warn(&format!(
                    "{}: skipped, {n} bytes is over --max-size {max_size}",
                    display_path(&file.path)
                ));
            }
            Outcome::GrewTooLarge(n) => {
                stats.skipped.too_large += 1;
                msgs.warn(&format!(
                    "{}: skipped, {n} bytes or more when read (over --max-size)",
                    display_path(&file.path)
                ));
            }
            Outcome::Failed(reason) => {
                msgs.warn(&format!("{}: {reason}", display_path(&file.path)));
                errors.push(file.error(None, reason.clone()));
            }
        }
    }
    // Walk errors and read errors together, in path order.
    errors.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
}

/// One `Buckets` per band (MinHash) or piece (SimHash); with `--containment`, the plausible
/// candidate pairs as two-document buckets, and the number of candidate pairs the estimate
/// prefilter ruled out on the way (0 otherwise: verification counts those).
fn bucket(
    cfg: &Config,
    units: &[u32],
    sigs: &[u32],
    lanes: usize,
    docs: &[DocResult],
) -> (Vec<Buckets>, u64) {
    let tables = match &cfg.method {
        MethodConfig::MinHash {
            containment: true,
            threshold,
            report_threshold,
            num_perm,
            ..
        } => {
            let sizes: Vec<u64> = docs.iter().map(|d| d.shingles).collect();
            let scheme = containment::Scheme::new(*threshold, *num_perm);
            let c = containment::candidates(&scheme, units, sigs, lanes, &sizes, *report_threshold);
            let plausible: u64 = c.tables.iter().map(|t| t.len() as u64).sum();
            if let Some(note) = containment::crowding_note(plausible + c.implausible, units.len()) {
                cfg.messages.note(&note);
            }
            return (c.tables, c.implausible);
        }
        // Bands are keyed and sorted side by side: each table's counting sort is serial.
        MethodConfig::MinHash { banding, .. } => (0..banding.bands)
            .into_par_iter()
            .map(|band| {
                let r = banding.rows;
                let entries = units
                    .par_iter()
                    .enumerate()
                    .map(|(i, &u)| {
                        if let Some(&ahead) = units.get(i + PREFETCH_AHEAD) {
                            // A band's pass reads 24 bytes of each 512-byte signature, a
                            // stride the hardware prefetchers did not follow.
                            crate::cpu::prefetch(&sigs[ahead as usize * lanes + band * r]);
                        }
                        let start = u as usize * lanes + band * r;
                        (band_key(band, &sigs[start..start + r]), u)
                    })
                    .collect();
                Buckets::from_keys(entries)
            })
            .collect(),
        MethodConfig::SimHash { max_distance, .. } => simhash::pieces(*max_distance)
            .into_par_iter()
            .map(|piece| {
                let entries = units
                    .par_iter()
                    .map(|&u| (simhash::piece_key(piece, docs[u as usize].fingerprint), u))
                    .collect();
                Buckets::from_keys(entries)
            })
            .collect(),
    };
    (tables, 0)
}

/// How many documents ahead a band's pass asks for the signature values it will key.
const PREFETCH_AHEAD: usize = 16;

/// `v` followed by `more`, moving `more` when `v` is empty.
fn append<T>(v: &mut Vec<T>, mut more: Vec<T>) {
    if v.is_empty() {
        *v = more;
    } else {
        v.append(&mut more);
    }
}
