//! Explain: what a MinHash banding or a SimHash piece table will find, before any scan runs.
//!
//! Every figure comes from the functions the scan itself calls ([`Banding::choose`] with
//! [`RECALL_WEIGHT`], [`Banding::candidate_probability`], [`estimate_floor`],
//! [`simhash::pieces`]), so what is printed is what `scan` does. Pure: [`explain`] returns
//! values, [`render_text`] writes them for a terminal, and the JSON is [`Explanation`]
//! serialized. It reads no files and knows of the corpus only its size (`--docs`).

use std::io::{self, Write};

use anyhow::{bail, Result};
use serde::Serialize;

use crate::candidates::containment;
use crate::candidates::lsh::{estimate_floor, Banding, RECALL_WEIGHT};
use crate::config::{Config, MethodConfig, MAX_NUM_PERM};
use crate::sketch::simhash;

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

/// What to explain: the parameters of a scan.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ExplainMethod {
    /// MinHash signatures cut into LSH bands.
    MinHash {
        /// Jaccard threshold t, in (0, 1].
        threshold: f64,
        /// Signature length K.
        num_perm: usize,
        /// The banding the user gave; None: chosen from the threshold as `scan` does.
        banding: Option<Banding>,
    },
    /// 64-bit SimHash fingerprints and pigeonhole pieces.
    SimHash {
        /// Largest Hamming distance D of a duplicate pair.
        max_distance: u32,
        /// Number of documents N in the corpus.
        docs: u64,
    },
}

/// The whole explanation, as printed with `--format json`.
#[derive(Clone, Debug, Serialize)]
pub struct Explanation {
    /// Explain schema version.
    pub schema_version: u32,
    /// `"kind": "minhash"` or `"simhash"`, followed by that method's fields.
    #[serde(flatten)]
    pub method: MethodExplanation,
    /// One-line warnings about the settings; empty when none apply.
    pub warnings: Vec<String>,
}

/// The figures of one method, tagged by `kind`.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum MethodExplanation {
    /// MinHash and LSH bands.
    MinHash(MinHashExplanation),
    /// SimHash and pieces.
    SimHash(SimHashExplanation),
}

/// What a MinHash banding does.
#[derive(Clone, Debug, Serialize)]
pub struct MinHashExplanation {
    /// Jaccard threshold t.
    pub threshold: f64,
    /// Signature length K.
    pub num_perm: usize,
    /// LSH bands b.
    pub bands: usize,
    /// Signature values per band r.
    pub rows: usize,
    /// True when the banding was chosen from the threshold, false when given.
    pub banding_chosen: bool,
    /// Signature values that some band uses: b × r.
    pub values_used: usize,
    /// Signature values computed and stored but in no band: K − b × r.
    pub values_unused: usize,
    /// P(candidate) at similarity 0.1, 0.2, …, 1.0: the S-curve 1 − (1 − s^r)^b.
    pub curve: Vec<CurvePoint>,
    /// P(candidate) at t − 0.05, t and t + 0.05, those within [0, 1].
    pub near_threshold: Vec<CurvePoint>,
    /// P(candidate) of a pair exactly at the threshold.
    pub at_threshold: f64,
    /// ∫₀ᵗ P(s) ds: the curve's area below the threshold (chance candidates).
    pub false_positive_mass: f64,
    /// ∫ₜ¹ (1 − P(s)) ds: the area missing above the threshold (pairs never found).
    pub false_negative_mass: f64,
    /// The similarity where P(s) = 0.5, solved by bisection.
    pub crossing: f64,
    /// The usual approximation of `crossing`, (1/b)^(1/r).
    pub crossing_approximation: f64,
    /// Exact verification skips candidates whose signature estimate is below this.
    pub estimate_floor: f64,
    /// Standard error of the MinHash estimate at the threshold, √(t(1 − t)/K).
    pub standard_error: f64,
    /// Memory per document.
    pub memory: Memory,
}

/// What a SimHash piece table does.
#[derive(Clone, Debug, Serialize)]
pub struct SimHashExplanation {
    /// Fingerprint bits (64).
    pub bits: u32,
    /// Largest Hamming distance D of a duplicate pair.
    pub max_distance: u32,
    /// The D + 1 contiguous pieces, one table each.
    pub pieces: Vec<Piece>,
    /// Number of tables a fingerprint is bucketed in (= pieces).
    pub tables: usize,
    /// P(candidate) of a pair at Hamming distance 0..=16, its differing bits placed at random.
    pub curve: Vec<DistancePoint>,
    /// Number of documents N the chance candidates are counted for.
    pub docs: u64,
    /// Expected chance candidates per document among N random fingerprints, an upper bound by
    /// the union bound: (N − 1) × Σ 2^(−width), at most N − 1.
    pub chance_candidates_per_doc: f64,
    /// The cosine similarity whose expected distance is D: cos(π·D/64).
    pub cosine_at_max_distance: f64,
    /// Memory per document.
    pub memory: Memory,
}

/// One point of the MinHash S-curve.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct CurvePoint {
    /// Jaccard similarity s of a pair.
    pub similarity: f64,
    /// Probability that the pair becomes a candidate.
    pub probability: f64,
}

/// One point of the SimHash candidate curve.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct DistancePoint {
    /// Hamming distance d of a pair.
    pub distance: u32,
    /// Probability that the pair becomes a candidate.
    pub probability: f64,
}

/// One SimHash piece: bits `shift .. shift + width` of the fingerprint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Piece {
    /// Lowest bit of the piece.
    pub shift: u32,
    /// Bits in the piece.
    pub width: u32,
}

/// Estimated memory per document, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Memory {
    /// The signature (all K values × 4 bytes, used or not) or fingerprint (8 bytes).
    pub signature_bytes: u64,
    /// Bucket entries, one per table (band or piece), of [`BUCKET_ENTRY_BYTES`] each.
    pub bucket_entries: u64,
    /// Bytes of the bucket entries.
    pub bucket_bytes: u64,
    /// Fixed overhead, [`DOC_OVERHEAD_BYTES`]; the path's own bytes come on top.
    pub overhead_bytes: u64,
    /// signature_bytes + bucket_bytes + overhead_bytes.
    pub total_bytes: u64,
}

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
    let (method, warnings) = match *method {
        ExplainMethod::MinHash {
            threshold,
            num_perm,
            banding,
        } => explain_minhash(threshold, num_perm, banding)?,
        ExplainMethod::SimHash { max_distance, docs } => explain_simhash(max_distance, docs)?,
    };
    Ok(Explanation {
        schema_version: SCHEMA_VERSION,
        method,
        warnings,
    })
}

/// A method's figures and its warnings.
type Parts = Result<(MethodExplanation, Vec<String>)>;

fn explain_minhash(t: f64, k: usize, given: Option<Banding>) -> Parts {
    if !(t > 0.0 && t <= 1.0) {
        bail!("--threshold must be in (0, 1], not {t}");
    }
    if k == 0 || k > MAX_NUM_PERM {
        bail!("--num-perm must be between 1 and {MAX_NUM_PERM}, not {k}");
    }
    let banding = given.unwrap_or_else(|| Banding::choose(t, k, RECALL_WEIGHT));
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
    let mut warnings = Vec::new();
    if used < k {
        warnings.push(format!(
            "unused signature values: {} of {k} are computed but in no band ({b} × {r} = {used})",
            k - used
        ));
    }
    warnings.extend(poor_curve_note(&banding, t));
    let m = MinHashExplanation {
        threshold: t,
        num_perm: k,
        bands: b,
        rows: r,
        banding_chosen: given.is_none(),
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
    Ok((MethodExplanation::MinHash(m), warnings))
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
    Ok((MethodExplanation::SimHash(s), warnings))
}

/// A note when pairs just above the threshold are often missed: P(t + 0.05) < 0.95, more than
/// 5% of the pairs at t + 0.05 never become candidates. `scan` prints it on stderr.
pub fn poor_curve_note(banding: &Banding, threshold: f64) -> Option<String> {
    let s = (threshold + 0.05).min(1.0);
    let p = banding.candidate_probability(s);
    (p < 0.95).then(|| {
        format!(
            "false-negative probability > 5% at threshold + 0.05: {} bands × {} rows miss a pair \
             at similarity {s:.2} with probability {:.3} (fewer rows would find it)",
            banding.bands,
            banding.rows,
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

/// Writes the explanation for a terminal: aligned lines, a table of the curve with a bar of
/// `#`, then the warnings.
pub fn render_text(e: &Explanation, out: &mut dyn Write) -> io::Result<()> {
    match &e.method {
        MethodExplanation::MinHash(m) => render_minhash(m, out)?,
        MethodExplanation::SimHash(s) => render_simhash(s, out)?,
    }
    if !e.warnings.is_empty() {
        writeln!(out)?;
    }
    for w in &e.warnings {
        writeln!(out, "warning: {w}")?;
    }
    Ok(())
}

fn render_minhash(m: &MinHashExplanation, out: &mut dyn Write) -> io::Result<()> {
    let (t, k, b, r) = (m.threshold, m.num_perm, m.bands, m.rows);
    let how = if m.banding_chosen {
        "chosen from the threshold"
    } else {
        "given"
    };
    let values = match m.values_unused {
        0 => format!("all {k} used"),
        n => format!(
            "{} of {k} used: {n} signature values are UNUSED",
            m.values_used
        ),
    };
    write!(
        out,
        "MinHash, Jaccard threshold {t}, K = {k} signature values\n\
         banding      {b} bands × {r} rows, {how}\n\
         values       {values}\n\
         at t         P({t}) = {:.6}\n\
         crossing     P(s) = 0.5 at s = {:.4}; (1/b)^(1/r) ≈ {:.4}\n\
         fp mass      {:.6}  ∫₀ᵗ P(s) ds, chance candidates\n\
         fn mass      {:.6}  ∫ₜ¹ (1 − P(s)) ds, missed pairs\n\
         prefilter    {:.4}  exact verification skips lower estimates\n\
         std. error   ±{:.4}  √(t(1 − t)/K), of the estimate at t\n\
         memory/doc   {}\n",
        m.at_threshold,
        m.crossing,
        m.crossing_approximation,
        m.false_positive_mass,
        m.false_negative_mass,
        m.estimate_floor,
        m.standard_error,
        memory_text(&m.memory, "signature"),
    )?;
    let mark = |s: f64| match s - t {
        x if x.abs() < 1e-6 => "← threshold",
        x if x < 0.0 => "← t − 0.05",
        _ => "← t + 0.05",
    };
    // The points near the threshold first, so that they win the dedup against the grid (both
    // are the nearest f64 to a multiple of 0.05, so equal when they coincide).
    let near = m
        .near_threshold
        .iter()
        .map(|p| (p.similarity, p.probability, mark(p.similarity)));
    let grid = m.curve.iter().map(|p| (p.similarity, p.probability, ""));
    let mut rows: Vec<_> = near.chain(grid).collect();
    rows.sort_by(|x, y| x.0.total_cmp(&y.0));
    rows.dedup_by(|later, earlier| later.0 == earlier.0);
    let rows = rows
        .into_iter()
        .map(|(s, p, mark)| (format!("{s:.2}"), p, mark));
    table(out, "similarity", rows)
}

fn render_simhash(s: &SimHashExplanation, out: &mut dyn Write) -> io::Result<()> {
    let (d, n) = (s.max_distance, s.docs);
    let ranges: Vec<String> = s
        .pieces
        .iter()
        .map(|p| format!("[{},{})", p.shift, p.shift + p.width))
        .collect();
    // Eight ranges a line: D = 31 has 32 pieces.
    let ranges: Vec<String> = ranges.chunks(8).map(|c| c.join(" ")).collect();
    write!(
        out,
        "SimHash, {}-bit fingerprints, max distance D = {d}\n\
         pieces       {} tables, bits {}\n\
         cosine       {:.4} at distance D, cos(π·D/64)\n\
         chance       ≤ {:.2} per document among N = {n} (union bound, (N − 1)·Σ 2^−width)\n\
         memory/doc   {}\n",
        s.bits,
        s.tables,
        ranges.join("\n             "),
        s.cosine_at_max_distance,
        s.chance_candidates_per_doc,
        memory_text(&s.memory, "fingerprint"),
    )?;
    let rows = s.curve.iter().map(|p| {
        let mark = if p.distance == d { "← D" } else { "" };
        (p.distance.to_string(), p.probability, mark)
    });
    table(out, "distance", rows)
}

/// The curve as rows of x, P and a bar of 40 `#` at P = 1, with an optional mark.
fn table<'a>(
    out: &mut dyn Write,
    head: &str,
    rows: impl Iterator<Item = (String, f64, &'a str)>,
) -> io::Result<()> {
    writeln!(out, "\n  {head:>10}  P(candidate)")?;
    for (x, p, mark) in rows {
        let bar = "#".repeat((p * 40.0).round() as usize);
        let row = format!("  {x:>10}  {p:.6}  {bar:<40}  {mark}");
        writeln!(out, "{}", row.trim_end())?;
    }
    Ok(())
}

fn memory_text(m: &Memory, what: &str) -> String {
    format!(
        "{what} {} B + buckets {} × {BUCKET_ENTRY_BYTES} B + overhead {} B = {} B + path",
        m.signature_bytes, m.bucket_entries, m.overhead_bytes, m.total_bytes
    )
}

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
        if let Some(note) = poor_curve_note(banding, *threshold) {
            cfg.messages
                .note(&format!("{note} (see `dupfind explain`)"));
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::candidates::lsh::band_key;
    use crate::sketch::minhash::{MinHasher, SketchKind};
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};
    use serde_json::json;

    const CHOSEN: Banding = Banding { bands: 19, rows: 6 };
    const GIVEN: Banding = Banding { bands: 10, rows: 5 };

    fn mh(threshold: f64, num_perm: usize, banding: Option<Banding>) -> Result<Explanation> {
        explain(&ExplainMethod::MinHash {
            threshold,
            num_perm,
            banding,
        })
    }

    fn sh(max_distance: u32, docs: u64) -> Result<Explanation> {
        explain(&ExplainMethod::SimHash { max_distance, docs })
    }

    fn minhash(banding: Option<Banding>) -> (MinHashExplanation, Vec<String>) {
        let e = mh(0.8, 128, banding).unwrap();
        match e.method {
            MethodExplanation::MinHash(m) => (m, e.warnings),
            MethodExplanation::SimHash(_) => unreachable!(),
        }
    }

    fn simhash(max_distance: u32) -> SimHashExplanation {
        match sh(max_distance, 1_000_000).unwrap().method {
            MethodExplanation::SimHash(s) => s,
            MethodExplanation::MinHash(_) => unreachable!(),
        }
    }

    /// |hits/n − p| within 4 standard errors of n trials, with a floor of 0.01.
    fn within_4_se(hits: usize, n: usize, p: f64) -> bool {
        let se = (p * (1.0 - p) / n as f64).sqrt().max(0.01);
        (hits as f64 / n as f64 - p).abs() <= 4.0 * se
    }

    #[test]
    fn curve_is_the_closed_form_and_crosses_half_where_solved() {
        let (chosen, _) = minhash(None);
        assert_eq!(
            (chosen.bands, chosen.rows, chosen.banding_chosen),
            (19, 6, true)
        );
        for (m, b) in [(minhash(Some(GIVEN)).0, GIVEN), (chosen, CHOSEN)] {
            let closed = |s: f64| 1.0 - (1.0 - s.powf(b.rows as f64)).powf(b.bands as f64);
            assert_eq!(m.curve.len(), 10);
            for p in m.curve.iter().chain(&m.near_threshold) {
                assert!((p.probability - closed(p.similarity)).abs() < 1e-12);
            }
            let near: Vec<f64> = m.near_threshold.iter().map(|p| p.similarity).collect();
            assert_eq!(near, [0.75, 0.8, 0.85]);
            assert!((m.at_threshold - closed(0.8)).abs() < 1e-12);
            assert!((closed(m.crossing) - 0.5).abs() < 1e-9);
            let approx = (1.0 / b.bands as f64).powf(1.0 / b.rows as f64);
            assert!((m.crossing_approximation - approx).abs() < 1e-12);
            assert_eq!(m.false_positive_mass, b.false_positive_mass(0.8));
            assert_eq!(m.false_negative_mass, b.false_negative_mass(0.8));
            assert_eq!(m.estimate_floor, estimate_floor(0.8, 128));
            assert!((m.standard_error - (0.8f64 * 0.2 / 128.0).sqrt()).abs() < 1e-15);
        }
        for (bands, rows) in [(2, 20), (1, 1), (1, 1024), (128, 1)] {
            let b = Banding { bands, rows };
            assert!(
                (b.candidate_probability(crossing(&b)) - 0.5).abs() < 1e-9,
                "{b:?}"
            );
        }
    }

    #[test]
    fn curve_agrees_with_simulated_minhash_signatures() {
        let mut rng = StdRng::seed_from_u64(7);
        let (mut sa, mut sb, mut scratch) = (vec![0u32; 128], vec![0u32; 128], Vec::new());
        for (kind, banding) in [(SketchKind::Kperm, CHOSEN), (SketchKind::Oph, GIVEN)] {
            let r = banding.rows;
            let key = |sig: &[u32], i: usize| band_key(i, &sig[i * r..(i + 1) * r]);
            // |A ∪ B| = 100 and |A ∩ B| = common: Jaccard exactly common / 100. (100, not 200:
            // K-permutation sketches take most of the time in a debug build.)
            for common in [50, 70, 80, 90] {
                let (s, trials) = (f64::from(common) / 100.0, 400);
                let mut hits = 0;
                for trial in 0..trials {
                    let mut a: Vec<u64> = (0..common).map(|_| rng.random()).collect();
                    let mut b = a.clone();
                    a.extend((0..(100 - common) / 2).map(|_| rng.random::<u64>()));
                    b.extend((0..(100 - common) / 2).map(|_| rng.random::<u64>()));
                    let hasher = MinHasher::new(kind, 128, trial as u64);
                    hasher.sketch(&a, &mut sa, &mut scratch);
                    hasher.sketch(&b, &mut sb, &mut scratch);
                    hits += usize::from((0..banding.bands).any(|i| key(&sa, i) == key(&sb, i)));
                }
                let p = banding.candidate_probability(s);
                assert!(
                    within_4_se(hits, trials, p),
                    "{kind:?} {banding:?} s={s}: {hits} vs {p}"
                );
            }
        }
    }

    #[test]
    fn reports_unused_values_memory_and_poor_curves() {
        let (m, warnings) = minhash(Some(GIVEN));
        assert_eq!((m.values_used, m.values_unused), (50, 78));
        assert!(
            warnings[0].starts_with("unused signature values: 78 of 128"),
            "{warnings:?}"
        );
        let (m, warnings) = minhash(None);
        assert_eq!((m.values_used, m.values_unused), (114, 14));
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].starts_with("unused signature values: 14 of 128"));
        assert!(minhash(Some(Banding { bands: 16, rows: 8 })).1.is_empty());
        assert_eq!(
            (m.memory.bucket_bytes, m.memory.total_bytes),
            (228, 512 + 228 + 64)
        );
        assert_eq!(simhash(3).memory.total_bytes, 8 + 4 * 12 + 64);

        assert_eq!(poor_curve_note(&CHOSEN, 0.8), None);
        let note = poor_curve_note(&Banding { bands: 2, rows: 20 }, 0.8).unwrap();
        assert!(
            note.contains("miss a pair at similarity 0.85 with probability 0.924"),
            "{note}"
        );
        let (_, warnings) = minhash(Some(Banding { bands: 2, rows: 20 }));
        assert!(
            warnings[1].starts_with("false-negative probability > 5%"),
            "{warnings:?}"
        );
    }

    #[test]
    fn rejects_what_scan_rejects() {
        for t in [0.0, -0.1, 1.01, f64::NAN] {
            assert!(mh(t, 128, None).is_err(), "t = {t}");
        }
        assert!(mh(1.0, 128, None).is_ok() && sh(31, 1).is_ok());
        assert!(mh(0.8, 0, None).is_err() && mh(0.8, MAX_NUM_PERM + 1, None).is_err());
        let too_long = Banding {
            bands: 13,
            rows: 10,
        };
        let err = mh(0.8, 128, Some(too_long)).unwrap_err();
        assert!(
            err.to_string().contains("130 is more than --num-perm 128"),
            "{err}"
        );
        for (bands, rows) in [(0, 4), (4, 0), (usize::MAX, 2)] {
            assert!(mh(0.8, 128, Some(Banding { bands, rows })).is_err());
        }
        assert!(sh(32, 1).is_err() && sh(3, 0).is_err());
    }

    /// P(some piece clean) by inclusion–exclusion over every nonempty subset of pieces.
    fn by_inclusion_exclusion(pieces: &[(u32, u32)], d: usize) -> f64 {
        let clean = |width: u32| binomial(64 - width as usize, d) as f64 / binomial(64, d) as f64;
        let term = |set: u32| {
            let width = (0..pieces.len())
                .filter(|i| set >> i & 1 == 1)
                .map(|i| pieces[i].1);
            let sign = if set.count_ones() % 2 == 1 { 1.0 } else { -1.0 };
            sign * clean(width.sum())
        };
        (1u32..1 << pieces.len()).map(term).sum()
    }

    #[test]
    fn simhash_curve_is_one_within_distance_then_falls() {
        for d in [0, 1, 3, 6, 15, 31] {
            let s = simhash(d);
            let pieces: Vec<(u32, u32)> = s.pieces.iter().map(|p| (p.shift, p.width)).collect();
            assert_eq!(
                (&pieces, s.tables, s.curve.len()),
                (&simhash::pieces(d), d as usize + 1, 17)
            );
            for w in s.curve.windows(2) {
                let (prev, p) = (w[0].probability, w[1].probability);
                if w[1].distance <= d {
                    assert_eq!(p, 1.0);
                } else {
                    // D = 0 is one 64-bit piece: 0 for every d ≥ 1.
                    assert!(p < prev || prev == 0.0, "D={d}: {w:?}");
                }
                if d <= 6 {
                    let ie = by_inclusion_exclusion(&pieces, w[1].distance as usize);
                    assert!((p - ie).abs() < 1e-12, "D={d}: {w:?} vs {ie}");
                }
            }
        }
        // Two 32-bit pieces at distance 2: missed only with one bit in each.
        let two = piece_candidate_probability(&simhash::pieces(1), 2);
        assert!((two - (1.0 - 32.0 * 32.0 / 2016.0)).abs() < 1e-15);
    }

    #[test]
    fn simhash_curve_agrees_with_flipped_bits() {
        let mut rng = StdRng::seed_from_u64(3);
        for max_distance in [3u32, 5] {
            let pieces = simhash::pieces(max_distance);
            let key = |fp, p| simhash::piece_key(p, fp);
            for d in max_distance + 1..=max_distance + 4 {
                let trials = 4000;
                let mut hits = 0;
                for _ in 0..trials {
                    let a: u64 = rng.random();
                    let flips = rand::seq::index::sample(&mut rng, 64, d as usize);
                    let b = flips.iter().fold(a, |f, bit| f ^ (1u64 << bit));
                    hits += usize::from(pieces.iter().any(|&p| key(a, p) == key(b, p)));
                }
                let p = piece_candidate_probability(&pieces, d);
                assert!(
                    within_4_se(hits, trials, p),
                    "D={max_distance} d={d}: {hits} vs {p}"
                );
            }
        }
        let s = simhash(3);
        assert!((s.chance_candidates_per_doc - 999_999.0 * 4.0 / 65536.0).abs() < 1e-9);
        let cos = (3.0 * std::f64::consts::PI / 64.0).cos();
        assert!((s.cosine_at_max_distance - cos).abs() < 1e-15);
        let warnings = sh(7, 1_000_000).unwrap().warnings;
        assert!(
            warnings[0].starts_with("many chance candidates"),
            "{warnings:?}"
        );
        assert_eq!(simhash(31).chance_candidates_per_doc, 999_999.0);
    }

    #[test]
    fn text_shows_the_key_numbers() {
        let text = |e: Explanation| {
            let mut out = Vec::new();
            render_text(&e, &mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        let minhash = text(mh(0.8, 128, None).unwrap());
        for needle in [
            "banding      19 bands × 6 rows, chosen from the threshold",
            "114 of 128 used: 14 signature values are UNUSED",
            "P(0.8) = 0.996899",
            "prefilter    0.5677",
            "±0.0354",
            "signature 512 B + buckets 19 × 12 B + overhead 64 B = 804 B + path",
            "        0.80  0.996899  ########################################  ← threshold\n",
            "        0.85  0.999876  ########################################  ← t + 0.05\n",
            "        0.90  0.999999  ########################################\n",
            "warning: unused signature values",
        ] {
            assert!(
                minhash.contains(needle),
                "{needle:?} missing from\n{minhash}"
            );
        }
        let simhash = text(sh(3, 1_000_000).unwrap());
        for needle in [
            "4 tables, bits [0,16) [16,32) [32,48) [48,64)\n",
            "≤ 61.04",
            "← D\n",
        ] {
            assert!(
                simhash.contains(needle),
                "{needle:?} missing from\n{simhash}"
            );
        }
    }

    #[test]
    fn json_uses_the_documented_field_names() {
        let keys = |v: &serde_json::Value| {
            let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
            k.sort();
            k.join(" ")
        };
        let v = serde_json::to_value(mh(0.8, 128, None).unwrap()).unwrap();
        assert_eq!(
            keys(&v),
            "at_threshold banding_chosen bands crossing crossing_approximation curve \
             estimate_floor false_negative_mass false_positive_mass kind memory near_threshold \
             num_perm rows schema_version standard_error threshold values_unused values_used \
             warnings"
        );
        assert_eq!(
            (&v["schema_version"], &v["kind"]),
            (&json!(1), &json!("minhash"))
        );
        assert_eq!(
            (&v["bands"], &v["rows"], &v["values_unused"]),
            (&json!(19), &json!(6), &json!(14))
        );
        assert_eq!(
            v["curve"][9],
            json!({"similarity": 1.0, "probability": 1.0})
        );
        assert_eq!(v["near_threshold"][2]["similarity"], 0.85);
        assert_eq!(
            keys(&v["memory"]),
            "bucket_bytes bucket_entries overhead_bytes signature_bytes total_bytes"
        );
        assert_eq!(v["memory"]["total_bytes"], 804);
        let v = serde_json::to_value(sh(3, 10).unwrap()).unwrap();
        assert_eq!(
            keys(&v),
            "bits chance_candidates_per_doc cosine_at_max_distance curve docs kind max_distance \
             memory pieces schema_version tables warnings"
        );
        assert_eq!((&v["kind"], &v["tables"]), (&json!("simhash"), &json!(4)));
        assert_eq!(v["pieces"][1], json!({"shift": 16, "width": 16}));
        assert_eq!(keys(&v["curve"][4]), "distance probability");
    }
}
