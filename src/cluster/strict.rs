//! Strict clusters (`--cluster strict`): greedy center clustering inside each component.
//!
//! Connected components chain: A ~ B and B ~ C put A with C even when A and C share little.
//! Strict clustering visits a component's documents in `--keep` order; each joins the first
//! representative it matches (verified at the threshold, the same check as the scan's), or
//! becomes a representative itself. So every member of a strict cluster is verified against
//! its representative, which is the cluster's most preferred document. Only documents of one
//! component can match, so components are split, never merged.

use crate::cluster::representative::{self, Facts};
use crate::cluster::{Cluster, Found, Material};
use crate::config::KeepPolicy;
use crate::input::walk::FileEntry;
use crate::messages::InputError;
use crate::pairs::Pair;
use crate::pairs::Score;
use crate::verify::members::member_material;
use crate::verify::reload::{Loaded, Want};

/// `--cluster strict`: each component split by greedy centers in `--keep` order. Exact and
/// edit verification load the component's sets or token sequences (one component at a time, so
/// memory stays that of the largest component).
pub fn clusters<'a>(
    components: Vec<Cluster>,
    keep: KeepPolicy,
    material: &Material<'_>,
    files: &'a [FileEntry],
    facts: impl Fn(u32) -> Facts<'a> + Copy,
    errors: &mut Vec<InputError>,
) -> Vec<Found> {
    let judge = material.judge;
    let mut out = Vec::new();
    for c in components {
        let mut order = c.members;
        representative::sort(keep, &mut order, facts);
        let want = Want {
            sets: judge.needs_sets(),
            tokens: judge.needs_tokens(),
        };
        let loaded = if want.sets || want.tokens {
            member_material(
                judge,
                material.engine,
                files,
                &order,
                want,
                material.retained,
                errors,
            )
        } else {
            Loaded::default()
        };
        out.extend(split_component(&order, |rep, doc| {
            judge.check(rep, doc, &loaded)
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
/// `matches(rep, doc)` is the verification check; each cluster's pairs form a star around its
/// representative, which comes first in `members` only if it is also first in path order.
pub fn split_component(
    ordered: &[u32],
    mut matches: impl FnMut(u32, u32) -> Option<Score>,
) -> Vec<Found> {
    let mut groups: Vec<(u32, Vec<Pair>)> = Vec::new();
    for &doc in ordered {
        let joined = groups.iter_mut().find_map(|(rep, pairs)| {
            let Score {
                similarity,
                distance,
            } = matches(*rep, doc)?;
            pairs.push(Pair {
                lo: (*rep).min(doc),
                hi: (*rep).max(doc),
                similarity,
                distance,
                exact: false,
            });
            Some(())
        });
        if joined.is_none() {
            groups.push((doc, Vec::new()));
        }
    }
    groups
        .into_iter()
        .filter(|(_, pairs)| !pairs.is_empty())
        .map(|(rep, pairs)| {
            let mut members: Vec<u32> = pairs.iter().map(|p| p.lo + p.hi - rep).collect();
            members.push(rep);
            members.sort_unstable();
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
        assert_eq!(
            split.len(),
            1,
            "2 is alone: its only match, 1, is not a representative"
        );
        assert_eq!(split[0].representative, 0);
        assert_eq!(split[0].cluster.members, vec![0, 1]);

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
}
