//! Strict clusters (`--cluster strict`): greedy center clustering inside each component.
//!
//! Connected components chain: A ~ B and B ~ C put A with C even when A and C share little.
//! Strict clustering visits a component's documents in `--keep` order; each joins the first
//! representative it matches (verified at the threshold, the same check as the scan's), or
//! becomes a representative itself. So every duplicate of a strict cluster is verified against
//! its representative, which is the cluster's most preferred document. A document left alone
//! although it has a verified partner joins its partner's cluster as a linked member (see
//! `link_orphans`). Only documents of one component can match, so components are split, never
//! merged.

use std::borrow::Cow;
use std::collections::HashSet;

use crate::cluster::representative::{self, Facts, Order};
use crate::cluster::{Cluster, Found, Material};
use crate::input::walk::FileEntry;
use crate::messages::InputError;
use crate::pairs::Pair;
use crate::pairs::Score;
use crate::verify::members::{member_material, member_material_checking};
use crate::verify::reload::{Loaded, Want};

/// `--cluster strict`: each component split by greedy centers in `--keep` order. Edit
/// verification loads the component's token sequences (one component at a time, so memory
/// stays that of the largest component). Exact verification first takes the verdicts known
/// without sets: byte-identical pairs, and pairs verification passed (`material.known`). Then it
/// reads again the members verification did not compare, for the errors of those that cannot
/// be (checked against their content hash, not shingled), loads the sets of the pairs not
/// known, and any other a check asks for, one at a time. Reading every member a third time, as
/// it did, was a fifth of a scan with character shingles, whose sets outgrow what verification
/// retains.
pub fn clusters<'a>(
    components: Vec<Cluster>,
    keep: Order,
    material: &Material<'_>,
    files: &'a [FileEntry],
    facts: impl Fn(u32) -> Facts<'a> + Copy,
    errors: &mut Vec<InputError>,
) -> Vec<Found> {
    let judge = material.judge;
    let canon = |d: u32| judge.canon[d as usize];
    let none = Loaded::default();
    // The verdict on a pair when it needs no material.
    let known = |rep: u32, doc: u32| match judge.same_content(rep, doc) {
        true => Some(judge.check(rep, doc, &none)),
        false => material.known.get(canon(rep), canon(doc)),
    };
    let want = Want {
        sets: judge.needs_sets(),
        tokens: judge.needs_tokens(),
    };
    let load = |members: &[u32], errors: &mut Vec<InputError>| {
        member_material(
            judge,
            material.engine,
            files,
            members,
            want,
            material.retained,
            errors,
        )
    };
    let mut out = Vec::new();
    for c in components {
        let mut order = c.members;
        representative::sort(keep, &mut order, facts);
        if !(want.sets || want.tokens) {
            out.extend(split_component(&order, |rep, doc| {
                judge.check(rep, doc, &none)
            }));
            continue;
        }
        if !judge.candidate_is_check() {
            let loaded = load(&order, errors);
            out.extend(split_component(&order, |rep, doc| {
                judge.check(rep, doc, &loaded)
            }));
            continue;
        }
        // The split with the known verdicts only, noting the pairs that are not.
        let mut unknown = Vec::new();
        let split = split_component(&order, |rep, doc| {
            known(rep, doc).unwrap_or_else(|| {
                unknown.extend([rep, doc]);
                None
            })
        });
        let mut wanted: Vec<u32> = (order.iter().copied())
            .filter(|&d| !material.known.compared(canon(d)))
            .chain(unknown.iter().copied())
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        // Sets are derived for the pairs not known only: the other members are read again for
        // the errors of those that cannot be, not shingled (two thirds of the files strict
        // clustering read in a real corpus, many of them byte-identical copies).
        let unknown_sets: HashSet<u32> = unknown.iter().map(|&d| canon(d)).collect();
        let needs_set = |c: u32| unknown_sets.contains(&c);
        let (mut sets, unread) = match wanted.is_empty() {
            true => (Loaded::default(), Vec::new()),
            false => match member_material_checking(
                judge,
                material.engine,
                files,
                &wanted,
                want,
                material.retained,
                needs_set,
                errors,
            ) {
                (Cow::Owned(sets), unread) => (sets, unread),
                // All retained: copied, only these.
                (Cow::Borrowed(retained), unread) => {
                    let mut sets = Loaded::default();
                    for c in wanted.iter().map(|&d| canon(d)) {
                        if let Some(set) = retained.set_copy(c) {
                            sets.insert_set(c, set);
                        }
                    }
                    (sets, unread)
                }
            },
        };
        if unknown.is_empty() {
            out.extend(split);
            continue;
        }
        // Each document is read once: one that failed is not tried again (nor said twice). One
        // only checked, or retained and not copied, is read (or copied) when a check asks for it.
        let mut tried: HashSet<u32> = wanted.iter().map(|&d| canon(d)).collect();
        for c in unread {
            tried.remove(&c);
        }
        out.extend(split_component(&order, |rep, doc| {
            if let Some(verdict) = known(rep, doc) {
                return verdict;
            }
            for d in [rep, doc] {
                if tried.insert(canon(d)) {
                    let more = load(&[d], errors);
                    if let Some(set) = more.get(canon(d)).set {
                        sets.insert_set(canon(d), set.into());
                    }
                }
            }
            judge.check(rep, doc, &sets)
        }));
    }
    for f in &mut out {
        for p in &mut f.cluster.pairs {
            p.2.exact = judge.same_content(p.2.lo, p.2.hi);
        }
    }
    // Clusters in order of their first member, as with components.
    out.sort_by_key(|f| f.cluster.members[0]);
    out
}

/// Splits one component, given in `--keep` order, into strict clusters (singletons dropped).
/// `matches(partner, doc)` is the verification check; each cluster's pairs are a star around its
/// representative, which comes first in `members` only if it is also first in path order, and
/// one pair for each linked member ([`link_orphans`]).
pub fn split_component(
    ordered: &[u32],
    mut matches: impl FnMut(u32, u32) -> Option<Score>,
) -> Vec<Found> {
    let mut groups: Vec<(u32, Vec<Pair>)> = Vec::new();
    for &doc in ordered {
        let joined = groups.iter_mut().find_map(|(rep, pairs)| {
            pairs.push(pair(*rep, doc, matches(*rep, doc)?));
            Some(())
        });
        if joined.is_none() {
            groups.push((doc, Vec::new()));
        }
    }
    link_orphans(&mut groups, &mut matches);
    groups
        .into_iter()
        .filter(|(_, pairs)| !pairs.is_empty())
        .map(|(rep, pairs)| {
            let mut members: Vec<u32> = pairs.iter().flat_map(|p| [p.lo, p.hi]).collect();
            members.push(rep);
            members.sort_unstable();
            members.dedup();
            let mut star: Vec<(usize, usize, Pair)> = pairs
                .into_iter()
                .map(|p| {
                    let a = members.binary_search(&p.lo).unwrap_or_default();
                    let b = members.binary_search(&p.hi).unwrap_or_default();
                    (a, b, p)
                })
                .collect();
            star.sort_by_key(|p| (p.0, p.1));
            Found {
                representative: rep,
                cluster: Cluster {
                    members,
                    pairs: star,
                },
            }
        })
        .collect()
}

fn pair(x: u32, y: u32, score: Score) -> Pair {
    Pair {
        lo: x.min(y),
        hi: x.max(y),
        similarity: score.similarity,
        distance: score.distance,
        exact: false,
    }
}

/// Gives each orphan, a document left alone by the greedy pass, to the cluster of its best
/// verified partner, with that pair as its evidence.
///
/// Every document of a component has a verified partner, but an orphan's partners were all
/// taken as duplicates of representatives it is below the threshold to (it would have joined a
/// partner that represents, and a partner visited after it would have joined it). Dropped, it
/// would appear nowhere in the report, though it has been seen before: `--against` asks exactly
/// that. Joined to its partner's cluster it is not verified against the representative, so the
/// report lists it as `linked`, never as a duplicate to remove. Its partner is the duplicate it
/// matches with the highest similarity, ties to the lowest id: the strongest evidence, and not
/// an accident of which duplicate was checked first. Orphans match no other orphan (the later
/// would have joined the earlier), so one pass over the duplicates finds every partner. That
/// costs an orphan a check per duplicate of its component; as a representative in the greedy
/// pass it already cost every later document one.
fn link_orphans(
    groups: &mut [(u32, Vec<Pair>)],
    matches: &mut impl FnMut(u32, u32) -> Option<Score>,
) {
    // Only duplicates can be partners: an orphan was checked against every representative (as
    // one itself, or as a document visiting them), and matched none.
    let taken: Vec<(usize, u32)> = (groups.iter().enumerate())
        .flat_map(|(g, (rep, pairs))| pairs.iter().map(move |p| (g, p.lo + p.hi - rep)))
        .collect();
    let orphans: Vec<u32> = (groups.iter())
        .filter(|(_, pairs)| pairs.is_empty())
        .map(|&(rep, _)| rep)
        .collect();
    for orphan in orphans {
        let best = (taken.iter())
            .filter_map(|&(g, d)| Some((g, d, matches(d, orphan)?)))
            .min_by(|x, y| (y.2.similarity.total_cmp(&x.2.similarity)).then(x.1.cmp(&y.1)));
        if let Some((g, partner, score)) = best {
            groups[g].1.push(pair(partner, orphan, score));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chain_splits_at_its_far_end() {
        // 0 ~ 1 and 1 ~ 2, but 0 ≁ 2: components would give {0, 1, 2}.
        let sim = |a: u32, b: u32| match (a.min(b), a.max(b)) {
            (0, 1) | (1, 2) => Some(Score::of(0.85)),
            _ => None,
        };
        let split = split_component(&[0, 1, 2], sim);
        assert_eq!(split.len(), 1);
        assert_eq!(split[0].representative, 0);
        // 2's only match, 1, is not a representative: 2 joins 1's cluster through that pair.
        assert_eq!(split[0].cluster.members, vec![0, 1, 2]);
        let pairs: Vec<(usize, usize)> =
            split[0].cluster.pairs.iter().map(|p| (p.0, p.1)).collect();
        assert_eq!(pairs, [(0, 1), (1, 2)]);

        // Visiting 1 first (another --keep order), it takes both ends.
        let split = split_component(&[1, 0, 2], sim);
        assert_eq!(split.len(), 1);
        assert_eq!(split[0].representative, 1);
        assert_eq!(split[0].cluster.members, vec![0, 1, 2]);
        assert_eq!(split[0].cluster.pairs.len(), 2);
        assert!(split[0]
            .cluster
            .pairs
            .iter()
            .all(|p| p.2.lo == 1 || p.2.hi == 1));
    }

    #[test]
    fn every_member_matches_its_representative() {
        // Documents are points on a line; similar when within 2 of each other.
        let pos = [0i32, 1, 2, 3, 4, 5, 6, 7, 20, 21];
        let sim = |a: u32, b: u32| {
            ((pos[a as usize] - pos[b as usize]).abs() <= 2).then_some(Score::of(0.9))
        };
        let order: Vec<u32> = (0..pos.len() as u32).collect();
        let split = split_component(&order, sim);
        let reps: Vec<u32> = split.iter().map(|s| s.representative).collect();
        assert_eq!(reps, vec![0, 3, 6, 8]);
        for Found {
            representative: rep,
            cluster: c,
        } in &split
        {
            for &m in &c.members {
                assert!(sim(*rep, m).is_some() || m == *rep);
            }
            assert_eq!(c.pairs.len(), c.members.len() - 1);
        }
    }

    #[test]
    fn an_orphan_joins_the_cluster_of_its_most_similar_partner_ties_to_the_lowest_id() {
        // 0 and 1 represent (0 ≁ 1); 2 joins 0, 3 and 4 join 1; 5 matches 2, 3 and 4 only.
        let score = |sim: [f64; 3]| {
            move |a: u32, b: u32| match (a.min(b), a.max(b)) {
                (0, 2) | (1, 3) | (1, 4) => Some(Score::of(0.9)),
                (2, 5) => Some(Score::of(sim[0])),
                (3, 5) => Some(Score::of(sim[1])),
                (4, 5) => Some(Score::of(sim[2])),
                _ => None,
            }
        };
        let linked_to = |sim: [f64; 3]| {
            let split = split_component(&[0, 1, 2, 3, 4, 5], score(sim));
            assert_eq!(split.len(), 2);
            let holder: Vec<&Found> = (split.iter())
                .filter(|f| f.cluster.members.contains(&5))
                .collect();
            assert_eq!(holder.len(), 1, "{split:?}");
            let c = &holder[0].cluster;
            assert_eq!(c.pairs.len(), c.members.len() - 1);
            let partner: Vec<u32> = (c.pairs.iter())
                .filter(|p| p.2.hi == 5)
                .map(|p| p.2.lo)
                .collect();
            assert_eq!(partner.len(), 1, "{c:?}");
            (holder[0].representative, partner[0])
        };
        assert_eq!(linked_to([0.81, 0.85, 0.83]), (1, 3));
        assert_eq!(linked_to([0.85, 0.81, 0.83]), (0, 2));
        assert_eq!(linked_to([0.82, 0.85, 0.85]), (1, 3));
        assert_eq!(linked_to([0.85, 0.85, 0.85]), (0, 2));
    }
}
