//! Scan: the pipeline, top to bottom, one stage call each.
//!
//! inputs (walk) → the index joins → sign (read, shingle, sketch; parallel) → the indexed
//! documents the new ones can meet are attached → identical groups → candidates (bands,
//! pieces, containment classes) → verify → cluster → cluster records → the index's next
//! generation is written → the report (and, once it is delivered, the generation is made live
//! by the caller).
//!
//! Memory: shingle sets are not held for every document. Each document keeps its signature (K
//! u32 values; with `--sketch bottom-k` also K + 1 u64 values) or fingerprint; sets are kept
//! during the first pass only while a fixed budget lasts ([`crate::ingest::set_cache`]), and
//! verification loads the sets (or token sequences) of candidates a bounded batch at a time.

use anyhow::Result;

use crate::candidates::{self, identical};
use crate::cluster;
use crate::conclude::{conclude, Concluded};
use crate::config::Config;
use crate::exit::ExitCode;
use crate::explain::note_banding;
use crate::index;
use crate::ingest::{self, corpus::Corpus};
use crate::input::walk::{walk, Walked};
use crate::report::{self, Report};
use crate::verify::Judge;

/// A finished scan: the report and the exit status it implies.
pub struct ScanOutput {
    /// What to print.
    pub report: Report,
    /// 0 when every input was read, 2 otherwise.
    pub code: ExitCode,
    /// With `--update` or `index build`: the generation to make live once the report is
    /// delivered.
    pub pending: Option<index::Pending>,
    /// With a table as the input ([`Config::table`]): `--annotate`'s five columns for its
    /// rows, in order.
    pub annotations: Option<arrow_array::RecordBatch>,
}

/// Runs the whole pipeline on the configured roots.
pub fn scan(cfg: &Config) -> Result<ScanOutput> {
    if let Some(dir) = &cfg.dataset {
        crate::dataset::refuse_held(dir, crate::dataset::Writer::New)?;
    }
    // Held to the end: the copy of standard input is read again by verification.
    let stdin = crate::input::stdin::capture(cfg.stdin, &cfg.walk)?;
    let Walked {
        mut files,
        mut files_seen,
        mut skipped,
        errors,
    } = walk(&cfg.walk, &cfg.messages)?;
    if let Some(stdin) = &stdin {
        stdin.admit(
            &cfg.walk,
            &cfg.messages,
            &mut files,
            &mut files_seen,
            &mut skipped,
        );
    }
    if let Some(entry) = cfg.table.as_deref().and_then(crate::input::table::entry) {
        files_seen += 1;
        files.insert(0, entry);
    }
    // The files the report and the messages go to are never inputs (report/sink.rs).
    files_seen -= cfg.sink.drop_own(&mut files).min(files_seen);
    ingest::keep_by::check_inputs(cfg, &files)?;
    let dataset_format = (cfg.dataset.as_ref())
        .map(|_| crate::dataset::check_inputs(cfg, &files))
        .transpose()?;
    note_banding(cfg);
    let mut joined = index::join(cfg, files)?;
    // The dataset is written by input, those without a document too, and a Parquet dataset's
    // parts are numbered by input: taken now, while the inputs are known.
    let layout = dataset_format.map(|_| crate::dataset::Layout::of(&joined.to_read));
    let mut engine = ingest::engine(cfg, None);
    let signed = ingest::sign(cfg, std::mem::take(&mut joined.to_read), &engine, true)?;
    ingest::keep_by::check_seen(cfg, &signed.summary.keep_seen)?;
    let indexed = index::attach(cfg, &mut joined, &signed.corpus)?;
    engine.indexed = joined.stored_sets();
    let mut corpus = Corpus::assemble(indexed, signed.corpus);
    let outcomes = corpus.outcomes(cfg.walk.max_size, &cfg.messages);
    let identical = identical::group(&mut corpus);
    let candidates = candidates::find(cfg, &corpus, &identical.units);
    ingest::keep_record_texts(cfg, &engine, &corpus, || candidates.compared(&identical))?;

    let kept = corpus.take_kept_sets();
    let judge = Judge::new(&cfg.method, &corpus, &identical.canon);
    let skew = (candidates.largest_bucket, candidates.largest_component);
    let Concluded {
        verified,
        found,
        clusters,
        mut late_errors,
    } = conclude(cfg, &judge, &engine, &corpus, kept, &identical, candidates);
    if let (Some(dir), Some(format), Some(layout)) = (&cfg.dataset, dataset_format, &layout) {
        let to = (dir.as_path(), (format, layout));
        let clustered = (found.as_slice(), clusters.as_slice());
        late_errors.extend(write_dataset(
            cfg,
            &engine,
            &corpus,
            clustered,
            &signed.prints,
            to,
        )?);
    }
    let annotations = (cfg.table.as_deref())
        .and_then(crate::input::table::find)
        .map(|t| crate::dataset::table_annotations(&corpus, &found, &clusters, t.rows()))
        .transpose()
        .map_err(anyhow::Error::msg)?;
    let (updated, pending) = index::update(cfg, &engine, &corpus, &identical.canon, &joined);

    let (report, code) = report::assemble(
        cfg,
        report::Parts {
            walked: report::WalkCounts {
                files_seen,
                skipped,
                errors,
            },
            index: joined.stats(cfg),
            signed: signed.summary,
            outcomes,
            identical: &identical,
            skew,
            verified,
            found: &found,
            clusters,
            late_errors,
            updated,
            corpus: &corpus,
        },
    );
    Ok(ScanOutput {
        report,
        code,
        pending,
        annotations,
    })
}

/// `--write-dataset`: the documents read now, but the duplicates; returns those that changed.
fn write_dataset(
    cfg: &Config,
    engine: &crate::ingest::worker::Engine,
    corpus: &Corpus,
    (found, clusters): (&[cluster::Found], &[report::ClusterOut]),
    prints: &crate::input::parquet::TextPrints,
    (dir, format): (
        &std::path::Path,
        (crate::config::DatasetFormat, &crate::dataset::Layout),
    ),
) -> Result<Vec<crate::messages::InputError>> {
    use crate::dataset::{self, DatasetDoc, Fate};
    use crate::ingest::worker::Outcome;
    let marks = dataset::marks(found, clusters, corpus.len());
    let docs: Vec<DatasetDoc> = (corpus.new_ids().map(|d| d as usize))
        .filter(|&d| {
            matches!(
                corpus.docs[d].outcome,
                Outcome::Sketched | Outcome::Duplicate
            )
        })
        .map(|d| DatasetDoc {
            doc: d as u32,
            file: &corpus.files[d],
            hash: corpus.docs[d].hash,
            fate: marks[d].map(|m| Fate::of(m, clusters)),
        })
        .collect();
    Ok(dataset::write(dir, 0, format, &docs, cfg, engine, prints)?.errors)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;
