//! What `explain` computes, as values (the JSON of `explain --format json` is these serialized).

use serde::Serialize;

use crate::config::banding::Banding;

/// What to explain: the parameters of a scan.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ExplainMethod {
    /// MinHash signatures cut into LSH bands.
    MinHash {
        /// Jaccard threshold t, in (0, 1].
        threshold: f64,
        /// Signature length K.
        num_perm: usize,
        /// `--bands` as given; None: as many as fit in K with `--rows`, or chosen from the
        /// threshold when neither is given, as `scan` does.
        bands: Option<usize>,
        /// `--rows` as given; None as for `bands`.
        rows: Option<usize>,
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
    /// `--normalize`'s steps in the order scan applies them, before its lowercasing and white
    /// space (`"nfkc,punct"`); absent without any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub normalize: Option<String>,
    /// One-line warnings about the settings; empty when none apply.
    pub warnings: Vec<String>,
    /// One-line notes about settings given by hand (signature values in no band); empty when
    /// none apply, and always for the defaults.
    pub notes: Vec<String>,
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

/// Which of a banding's two numbers were given on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Given {
    /// Neither: the banding is chosen from the threshold.
    Neither,
    /// `--bands` alone: rows as many as fit in K.
    Bands,
    /// `--rows` alone: bands as many as fit in K.
    Rows,
    /// Both.
    Both,
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
    /// Which of b and r were given (the other as many as fit in K), for the text.
    #[serde(skip)]
    pub given: Given,
    /// The banding the threshold chooses, for the text to say when the one given is the same.
    #[serde(skip)]
    pub chosen: Banding,
    /// Signature values that some band uses: b × r.
    pub values_used: usize,
    /// Signature values in no band, K − b × r: they serve only the similarity estimate.
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
