//! The report's counts as the stages leave them: `scan` fills one [`Counts`] in its process,
//! `stage report` merges one from each summary of a staged run (shards and partitions), and
//! either way [`Counts::stats`] turns it into the report's [`Stats`]. The one place the
//! statistics are added up.

use crate::sketch::kmv::Kmv;

use super::model::{Skipped, Stats};

/// Every count of the report but the errors, which need deduplicating first
/// (`skipped.error` stays 0 here; [`super::finish`] sets it), and the index's side.
#[derive(Clone, Debug, Default)]
pub struct Counts {
    /// Non-directory entries that passed the filters.
    pub files_seen: u64,
    /// Files not turned into documents, by reason.
    pub skipped: Skipped,
    /// New documents that hold text (sketched, or a copy of one sketched).
    pub documents: u64,
    /// Their bytes.
    pub bytes: u64,
    /// The distinct-shingle sketch (None before any was merged).
    pub distinct: Option<Kmv>,
    /// Groups of two or more byte-identical documents (with a new one among them).
    pub exact_groups: u64,
    /// New documents that are a byte-identical copy of an earlier one.
    pub exact_copies: u64,
    /// Distinct candidate pairs verified.
    pub candidate_pairs: u64,
    /// Those that passed.
    pub verified_pairs: u64,
    /// Documents of the largest candidate bucket (the largest of those merged).
    pub largest_bucket: u64,
    /// Documents of the largest candidate component (likewise).
    pub largest_component: u64,
    /// `--verify edit`: pairs judged by Jaccard instead (None under other verifications).
    pub edit_fallbacks: Option<u64>,
    /// Clusters found.
    pub clusters: u64,
    /// New documents in them.
    pub clustered: u64,
    /// The bytes on disk removing the clusters' duplicates would free
    /// ([`super::clusters::reclaimable`]): a sum over clusters, since a file is in one.
    pub reclaimable: u64,
    /// Clusters whose representative is a new document (with `--against`, one represented by
    /// an indexed document has no original among the new ones).
    pub originals: u64,
}

impl Counts {
    /// Adds `other`'s counts: sums, the larger of the largest bucket and component, the union
    /// of the distinct-shingle sketches.
    pub fn merge(&mut self, other: &Counts) {
        self.files_seen += other.files_seen;
        add_skipped(&mut self.skipped, &other.skipped);
        self.documents += other.documents;
        self.bytes += other.bytes;
        match (&mut self.distinct, &other.distinct) {
            (Some(a), Some(b)) => a.merge(b),
            (a @ None, b) => a.clone_from(b),
            (Some(_), None) => {}
        }
        self.exact_groups += other.exact_groups;
        self.exact_copies += other.exact_copies;
        self.candidate_pairs += other.candidate_pairs;
        self.verified_pairs += other.verified_pairs;
        self.largest_bucket = self.largest_bucket.max(other.largest_bucket);
        self.largest_component = self.largest_component.max(other.largest_component);
        self.edit_fallbacks = match (self.edit_fallbacks, other.edit_fallbacks) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.clusters += other.clusters;
        self.clustered += other.clustered;
        self.originals += other.originals;
        self.reclaimable += other.reclaimable;
    }

    /// The report's statistics (`skipped.error` and `index` left for the caller): documents
    /// in no cluster, and those in clusters beyond one original per cluster and the exact
    /// copies, so that `documents = unique_documents + clusters + exact_copies + near_copies`.
    pub fn stats(self) -> Stats {
        let distinct = self.distinct.unwrap_or_default();
        Stats {
            files_seen: self.files_seen,
            documents: self.documents,
            bytes: self.bytes,
            reclaimable_bytes: self.reclaimable,
            skipped: self.skipped,
            exact_groups: self.exact_groups,
            candidate_pairs: self.candidate_pairs,
            verified_pairs: self.verified_pairs,
            largest_bucket: self.largest_bucket,
            largest_component: self.largest_component,
            clusters: self.clusters,
            unique_documents: self.documents.saturating_sub(self.clustered),
            exact_copies: self.exact_copies,
            near_copies: (self.clustered).saturating_sub(self.originals + self.exact_copies),
            distinct_shingles: distinct.estimate().round() as u64,
            distinct_shingles_error: distinct.relative_error(),
            edit_fallbacks: self.edit_fallbacks,
            index: None,
        }
    }
}

fn add_skipped(s: &mut Skipped, o: &Skipped) {
    s.binary += o.binary;
    s.empty += o.empty;
    s.too_short += o.too_short;
    s.not_regular += o.not_regular;
    s.too_large += o.too_large;
    s.error += o.error;
    s.symlink += o.symlink;
    s.outside_roots += o.outside_roots;
    s.bad_line += o.bad_line;
    s.hidden += o.hidden;
    s.ignored += o.ignored;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(documents: u64, clustered: u64, largest: u64, fallbacks: Option<u64>) -> Counts {
        let mut distinct = Kmv::new(64);
        distinct.insert_set(&(documents..documents + 10).collect::<Vec<u64>>());
        Counts {
            documents,
            skipped: Skipped {
                binary: 1,
                ..Skipped::default()
            },
            distinct: Some(distinct),
            exact_copies: 1,
            largest_bucket: largest,
            edit_fallbacks: fallbacks,
            clusters: 1,
            clustered,
            originals: 1,
            ..Counts::default()
        }
    }

    #[test]
    fn merged_parts_give_the_stats_of_the_whole() {
        let mut all = Counts::default();
        for p in [
            part(10, 4, 3, None),
            part(20, 5, 7, Some(2)),
            part(5, 0, 1, Some(1)),
        ] {
            all.merge(&p);
        }
        let s = all.stats();
        assert_eq!((s.documents, s.skipped.binary, s.clusters), (35, 3, 3));
        assert_eq!((s.largest_bucket, s.edit_fallbacks), (7, Some(3)));
        // 9 clustered: 3 originals, 3 exact copies, 3 near copies; 26 in no cluster.
        assert_eq!(
            (s.unique_documents, s.exact_copies, s.near_copies),
            (26, 3, 3)
        );
        // Values 5..30 seen, some twice: the union's 25, not the sum's 30.
        assert_eq!(s.distinct_shingles, 25);
    }

    #[test]
    fn without_a_fallback_count_there_is_none() {
        let mut all = Counts::default();
        all.merge(&part(1, 0, 0, None));
        assert_eq!(all.stats().edit_fallbacks, None);
    }
}
