//! Explain: what a MinHash banding or a SimHash piece table will find, before any scan runs.
//!
//! Every figure comes from the functions the scan itself calls ([`Banding::choose`] with
//! [`RECALL_WEIGHT`], [`Banding::candidate_probability`], [`estimate_floor`],
//! [`simhash::pieces`]), so what is printed is what `scan` does. Pure: [`explain`] returns
//! values, [`render_text`] writes them for a terminal, and the JSON is [`Explanation`]
//! serialized. It reads no files and knows of the corpus only its size (`--docs`).

use crate::config::banding::{estimate_floor, Banding, RECALL_WEIGHT};
use crate::config::MAX_NUM_PERM;
use crate::messages::count;
use crate::sketch::simhash;
use anyhow::{bail, Result};

/// Version of the explain schema; bumped only when a field changes meaning or disappears.
pub const SCHEMA_VERSION: u32 = 1;

/// Per-document memory besides the signature and bucket entries, a round figure for the
/// document's records; the path's own bytes come on top.
pub const DOC_OVERHEAD_BYTES: u64 = 64;

/// One bucket entry: an 8-byte band or piece key and a 4-byte document id.
pub const BUCKET_ENTRY_BYTES: u64 = 12;

/// Largest `--max-distance` that `scan` accepts (config.rs): 32 pieces of 2 bits.
const MAX_DISTANCE: u32 = 31;

/// The SimHash curve is tabulated for distances 0..=16, a quarter of the bits.
const MAX_CURVE_DISTANCE: u32 = 16;

/// Above this many chance candidates per document verification dominates the run: across a
/// million documents, a thousand each is half a billion pairs.
const CHANCE_CANDIDATES_WARN: f64 = 1000.0;

mod model;
mod notes;
mod render;
#[cfg(test)]
mod tests;

pub use model::*;
pub use notes::note_banding;
pub use render::render_text;

fn memory(signature_bytes: u64, tables: u64) -> Memory {
    let bucket_bytes = tables * BUCKET_ENTRY_BYTES;
    Memory {
        signature_bytes,
        bucket_entries: tables,
        bucket_bytes,
        overhead_bytes: DOC_OVERHEAD_BYTES,
        total_bytes: signature_bytes + bucket_bytes + DOC_OVERHEAD_BYTES,
    }
}

/// Validates the parameters as `scan` does and works out what they imply.
pub fn explain(method: &ExplainMethod) -> Result<Explanation> {
    let (method, warnings, notes) = match *method {
        ExplainMethod::MinHash {
            threshold,
            num_perm,
            bands,
            rows,
        } => explain_minhash(threshold, num_perm, bands, rows)?,
        ExplainMethod::SimHash { max_distance, docs } => explain_simhash(max_distance, docs)?,
    };
    Ok(Explanation {
        schema_version: SCHEMA_VERSION,
        method,
        normalize: None,
        warnings,
        notes,
    })
}

/// A method's figures, its warnings and its notes.
type Parts = Result<(MethodExplanation, Vec<String>, Vec<String>)>;

fn explain_minhash(t: f64, k: usize, bands: Option<usize>, rows: Option<usize>) -> Parts {
    if !(t > 0.0 && t <= 1.0) {
        bail!("--threshold must be in (0, 1], not {t}");
    }
    if k == 0 || k > MAX_NUM_PERM {
        bail!("--num-perm must be between 1 and {MAX_NUM_PERM}, not {k}");
    }
    let given = crate::config::given_banding(bands, rows, k);
    let chosen = Banding::choose(t, k, RECALL_WEIGHT);
    let banding = given.unwrap_or(chosen);
    let Banding { bands: b, rows: r } = banding;
    let used = b.saturating_mul(r);
    if b == 0 || r == 0 {
        bail!(
            "--bands and --rows must be at least 1 and --bands × --rows at most --num-perm ({k})"
        );
    }
    if used > k {
        bail!(
            "--bands {b} × --rows {r} = {used} is more than --num-perm {k}: \
             a signature has only {k} values"
        );
    }
    let point = |s: f64| CurvePoint {
        similarity: s,
        probability: banding.candidate_probability(s),
    };
    // Values in no band still serve the similarity estimate (the prefilter, `--verify
    // estimate`, `--pairs`), so they are not wasted: the chosen banding is the best of all
    // b·r ≤ K, and at t = 0.8, K = 128 that is 19 × 6 = 114. A banding given by hand that
    // leaves room for more bands of its rows may have meant them: a note, never said of the
    // chosen one (given by hand or not), nor when one number was given and the other filled K.
    let mut notes = Vec::new();
    let fit = k / r;
    if bands.is_some() && rows.is_some() && banding != chosen && fit > b {
        notes.push(format!(
            "{} of {k} signature values are in no band ({b} × {r} = {used}), only in the \
             similarity estimate: {} of {} would fit in K = {k}",
            k - used,
            count(fit as u64, "band"),
            count(r as u64, "row")
        ));
    }
    let warnings = poor_curve_note(&banding, t).into_iter().collect();
    let m = MinHashExplanation {
        threshold: t,
        num_perm: k,
        bands: b,
        rows: r,
        banding_chosen: given.is_none(),
        given: match (bands, rows) {
            (None, None) => Given::Neither,
            (Some(_), None) => Given::Bands,
            (None, Some(_)) => Given::Rows,
            (Some(_), Some(_)) => Given::Both,
        },
        chosen,
        values_used: used,
        values_unused: k - used,
        curve: (1..=10).map(|i| point(f64::from(i) / 10.0)).collect(),
        // Rounded to 1e-9 so that 0.8 + 0.05 is 0.85, not 0.8500000000000001.
        near_threshold: [t - 0.05, t, t + 0.05]
            .map(|s| (s * 1e9).round() / 1e9)
            .into_iter()
            .filter(|s| (0.0..=1.0).contains(s))
            .map(point)
            .collect(),
        at_threshold: banding.candidate_probability(t),
        false_positive_mass: banding.false_positive_mass(t),
        false_negative_mass: banding.false_negative_mass(t),
        crossing: crossing(&banding),
        crossing_approximation: banding.approximate_threshold(),
        estimate_floor: estimate_floor(t, k),
        standard_error: (t * (1.0 - t) / k as f64).sqrt(),
        memory: memory(4 * k as u64, b as u64),
    };
    Ok((MethodExplanation::MinHash(m), warnings, notes))
}

fn explain_simhash(d: u32, docs: u64) -> Parts {
    if d > MAX_DISTANCE {
        bail!("--max-distance must be between 0 and {MAX_DISTANCE}, not {d}");
    }
    if docs == 0 {
        bail!("--docs must be at least 1");
    }
    let pieces = simhash::pieces(d);
    // Union bound over the pieces, capped at N − 1 where it stops meaning anything (D = 31: 8).
    let per_other: f64 = pieces.iter().map(|&(_, w)| 0.5f64.powi(w as i32)).sum();
    let chance = (docs - 1) as f64 * per_other.min(1.0);
    let mut warnings = Vec::new();
    if chance > CHANCE_CANDIDATES_WARN {
        warnings.push(format!(
            "many chance candidates: about {chance:.0} per document among {docs} documents; \
             a smaller --max-distance gives wider pieces"
        ));
    }
    let curve = (0..=MAX_CURVE_DISTANCE).map(|distance| DistancePoint {
        distance,
        probability: piece_candidate_probability(&pieces, distance),
    });
    let s = SimHashExplanation {
        bits: 64,
        max_distance: d,
        pieces: pieces
            .iter()
            .map(|&(shift, width)| Piece { shift, width })
            .collect(),
        tables: pieces.len(),
        curve: curve.collect(),
        docs,
        chance_candidates_per_doc: chance,
        cosine_at_max_distance: (std::f64::consts::PI * f64::from(d) / 64.0).cos(),
        memory: memory(8, pieces.len() as u64),
    };
    Ok((MethodExplanation::SimHash(s), warnings, Vec::new()))
}

/// A note when pairs just above the threshold are often missed: P(t + 0.05) < 0.95, more than
/// 5% of the pairs at t + 0.05 never become candidates. `scan` prints it on stderr.
pub fn poor_curve_note(banding: &Banding, threshold: f64) -> Option<String> {
    let s = (threshold + 0.05).min(1.0);
    let p = banding.candidate_probability(s);
    (p < 0.95).then(|| {
        format!(
            "false-negative probability > 5% at threshold + 0.05: {} × {} miss a pair at \
             similarity {s:.2} with probability {:.3} (fewer rows would find it)",
            count(banding.bands as u64, "band"),
            count(banding.rows as u64, "row"),
            1.0 - p
        )
    })
}

/// The similarity where the S-curve crosses 0.5, by bisection: P rises from P(0) = 0 to
/// P(1) = 1, and 100 halvings reach the resolution of an f64.
pub fn crossing(banding: &Banding) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if banding.candidate_probability(mid) < 0.5 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

/// Probability that two fingerprints at Hamming distance `d` agree on at least one of `pieces`
/// (which cover the 64 bits), the d differing bits being a uniformly random d-subset.
///
/// A pair is missed when every piece holds a differing bit. Such placements are counted
/// exactly, piece by piece (`ways[k]`: placements of k bits that hit every piece so far). This
/// equals inclusion–exclusion over subsets of pieces, without its 2^32 signed terms at D = 31.
/// It is 1 for d ≤ D: d bits cannot hit D + 1 pieces.
pub fn piece_candidate_probability(pieces: &[(u32, u32)], d: u32) -> f64 {
    let d = d as usize;
    if d > 64 {
        return 0.0;
    }
    let mut ways = vec![0u128; d + 1];
    ways[0] = 1;
    for &(_, w) in pieces {
        let mut next = vec![0u128; d + 1];
        for (k, &n) in ways.iter().enumerate() {
            for j in 1..=(w as usize).min(d - k) {
                next[k + j] += n * binomial(w as usize, j);
            }
        }
        ways = next;
    }
    1.0 - ways[d] as f64 / binomial(64, d) as f64
}

/// C(n, k), exact: every partial product is itself a binomial coefficient.
fn binomial(n: usize, k: usize) -> u128 {
    if k > n {
        return 0;
    }
    (0..k).fold(1u128, |acc, i| acc * (n - i) as u128 / (i + 1) as u128)
}
