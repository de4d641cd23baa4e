//! Params: the effective settings of a scan, as the report's `params` states them.

use crate::config::{Config, MethodConfig};
use crate::report::Params;
use crate::verify::judge::simhash_similarity;

/// The report's `params`: the effective settings.
pub fn params(cfg: &Config) -> Params {
    let mut p = Params {
        method: "minhash",
        shingle: match cfg.shingle {
            crate::sketch::shingle::ShingleKind::Word => "word",
            crate::sketch::shingle::ShingleKind::Char => "char",
        },
        ngram: cfg.ngram,
        normalize: (!cfg.normalize.is_none()).then(|| cfg.normalize.name()),
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
        keep_by: cfg.keep_by.as_ref().map(|k| k.name()),
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
            p.containment = containment.is_some();
        }
        MethodConfig::SimHash {
            max_distance,
            report_distance,
            pieces,
        } => {
            if report_distance < max_distance {
                p.min_similarity = Some(simhash_similarity(*report_distance));
            }
            p.method = "simhash";
            p.bits = Some(64);
            p.max_distance = Some(*max_distance);
            p.pieces = Some(pieces.len());
        }
    }
    p
}
