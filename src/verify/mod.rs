//! Verification: candidate pairs → verified pairs. Every decision on a pair is the one
//! [`Judge`]'s; this module only chooses how the material it needs is brought in: shingle sets
//! (exact Jaccard or containment, [`sets`]) or token sequences (edit similarity, [`edit`]) a
//! batch of candidate components at a time, or nothing (the signatures' estimate, SimHash).

mod batches;
mod connect;
pub mod edit;
pub mod judge;
pub mod lcs;
pub mod measures;
pub mod members;
mod order;
mod parity;
pub mod reload;
pub mod sets;

pub use connect::{all_buckets, connect};
pub use judge::Judge;
pub use measures::{intersection, jaccard, jaccard_at_least};

use crate::candidates::identical::Identical;
use crate::candidates::Candidates;
use crate::config::{Config, Verify};
use crate::ingest::worker::Engine;
use crate::input::walk::FileEntry;
use crate::messages::InputError;
use crate::pairs::{DocId, Pair, Score, UnionFind};

use batches::Set;
use connect::pair_key;

/// What verification found.
#[derive(Debug, Default)]
pub struct Verified {
    /// The byte-identical pairs, then the verified pairs that joined two components, in the
    /// order they were accepted: a spanning set of every component.
    pub pairs: Vec<Pair>,
    /// Distinct candidate pairs checked.
    pub checked: u64,
    /// Checked pairs that passed.
    pub passed: u64,
    /// `--verify edit`: pairs judged by Jaccard because a document is over the token cap.
    pub fallbacks: Option<u64>,
    /// Documents that could not be read again, or changed since the first pass.
    pub errors: Vec<InputError>,
    /// Sets of clustered documents kept from verification (within a budget), for clustering
    /// and the report.
    pub retained: Loaded,
    /// The scores of the pairs that passed, where the judge would give them again.
    pub known: Known,
}

/// Verdicts verification made, for strict clustering to look up instead of judging those pairs
/// again and reading their sets a third time: the scores of the candidate pairs that passed,
/// and the verdicts strict clustering's split asks for, made on each component as soon as its
/// batch is verified, while the sets are loaded ([`sets::Rehearse`]). Strict clustering checks
/// each member against its representative; on the 10k benchmark corpus 2,055 exact Jaccards were
/// so repeated beside verification's 2,970, and with character shingles, whose sets outgrow what
/// verification retains, the sets of 1,277 documents were derived again from their files. Held
/// only where the verdict on a candidate is [`Judge::check`]'s ([`Judge::candidate_is_check`]),
/// so a verdict looked up is the one a check would make. Pairs are of the documents holding
/// their contents (`Judge::canon`), as candidates are.
#[derive(Debug, Default)]
pub struct Known {
    verdicts: Vec<(u64, Option<Score>)>,
    /// The documents of those pairs, in id order: their sets were loaded and compared.
    compared: Vec<DocId>,
}

impl Known {
    fn new(passing: &[Pair], rehearsed: Vec<(u64, Option<Score>)>) -> Known {
        let mut verdicts: Vec<(u64, Option<Score>)> = (passing.iter())
            .map(|p| {
                let score = Score {
                    similarity: p.similarity,
                    distance: p.distance,
                };
                (pair_key(p.lo, p.hi), Some(score))
            })
            .chain(rehearsed)
            .collect();
        // A pair twice has one verdict (the judge's), kept once.
        verdicts.sort_unstable_by_key(|v| v.0);
        verdicts.dedup_by_key(|v| v.0);
        let mut compared: Vec<DocId> = (verdicts.iter())
            .flat_map(|&(key, _)| [(key >> 32) as DocId, key as DocId])
            .collect();
        compared.sort_unstable();
        compared.dedup();
        Known { verdicts, compared }
    }

    /// The verdict on the pair of `a` and `b`, when verification made it.
    pub fn get(&self, a: DocId, b: DocId) -> Option<Option<Score>> {
        let key = pair_key(a, b);
        let i = self.verdicts.binary_search_by_key(&key, |v| v.0).ok()?;
        Some(self.verdicts[i].1)
    }

    /// True when `d` is of a pair verification judged: its set was read and compared.
    pub fn compared(&self, d: DocId) -> bool {
        self.compared.binary_search(&d).is_ok()
    }
}

/// Verifies every candidate with the judge, bringing in the material it needs. `kept` holds
/// the sets the first pass kept (consumed as they are used). With `rehearse` (strict
/// clustering's split), exact verification also makes the verdicts it will ask for.
// The stage's inputs are the corpus's parts that scan and `stage verify` hold apart.
#[allow(clippy::too_many_arguments)]
pub fn run(
    cfg: &Config,
    judge: &Judge,
    engine: &Engine,
    files: &[FileEntry],
    mut kept: Vec<Option<Set>>,
    identical: &Identical,
    candidates: &Candidates,
    rehearse: Option<&Rehearse>,
) -> Verified {
    let mut uf = UnionFind::new(files.len());
    for p in &identical.pairs {
        uf.union(p.lo, p.hi);
    }
    let tables = &candidates.tables;
    let mut out = Verified::default();
    let verification = match cfg.verify() {
        Some(Verify::Exact) => SetVerifier {
            files,
            engine,
            judge,
            msgs: &cfg.messages,
            rehearse: rehearse.filter(|_| judge.candidate_is_check()),
        }
        .run(
            &mut kept,
            tables,
            &mut uf,
            &mut out.errors,
            &mut out.retained,
        ),
        Some(Verify::Edit) => {
            let verifier = EditVerifier {
                files,
                engine,
                judge,
                msgs: &cfg.messages,
            };
            let (v, fallbacks) = verifier.run(&mut kept, tables, &mut uf, &mut out.errors);
            out.fallbacks = Some(fallbacks);
            v
        }
        // The estimate and SimHash need nothing but the signatures.
        Some(Verify::Estimate) | None => connect(&all_buckets(tables), &mut uf, |lo, hi| {
            judge.candidate(lo, hi, &Loaded::default()).score
        }),
    };
    out.checked = verification.checked + candidates.ruled_out;
    out.passed = verification.passed;
    if judge.candidate_is_check() {
        out.known = Known::new(&verification.passing, verification.rehearsed);
    }
    out.pairs = identical.pairs.clone();
    out.pairs.extend(verification.pairs);
    out
}

use edit::EditVerifier;
use reload::Loaded;
use sets::SetVerifier;
pub use sets::{Check, Rehearse};
