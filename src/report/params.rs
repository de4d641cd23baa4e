//! Settings: what a scan says about its parameters, in the report (`params`) and on stderr
//! (the banding chosen from `--threshold`, and a poor S-curve).

use crate::candidates::containment;
use crate::config::{Config, MethodConfig};
use crate::report::Params;
use crate::sketch::simhash;
use crate::verify::judge::simhash_similarity;

/// Says on stderr which banding `--threshold` chose and what it means for a pair at the
/// threshold (after the roots are known to be there, so an error comes alone).
pub fn note_banding(cfg: &Config) {
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

/// The report's `params`: the effective settings.
pub fn params(cfg: &Config) -> Params {
    let mut p = Params {
        method: "minhash",
        shingle: match cfg.shingle {
            crate::sketch::shingle::ShingleKind::Word => "word",
            crate::sketch::shingle::ShingleKind::Char => "char",
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
        cluster: cfg.cluster.name(),
        keep: cfg.keep.name(),
        containment: false,
    };
    match &cfg.method {
        MethodConfig::MinHash {
            sketch,
            num_perm,
            banding,
            threshold,
            report_threshold,
            verify,
            bottom_k,
            containment,
            ..
        } => {
            p.sketch = Some(if *bottom_k { "bottom-k" } else { sketch.name() });
            p.num_perm = Some(*num_perm);
            p.bands = Some(banding.bands);
            p.rows = Some(banding.rows);
            p.threshold = Some(*threshold);
            if report_threshold > threshold {
                p.min_similarity = Some(*report_threshold);
            }
            p.verify = verify.name();
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
