//! The group files (`group/part-J.parquet`) read a bucket at a time, one record batch of each
//! in memory, and several of them merged into one stream in (table, key) order. Each file must
//! be in strictly increasing (table, key) order, as `stage group` (and the Spark and DuckDB
//! groupings) write it; a file that is not is an error naming it, never a silently wrong merge.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use arrow_array::{Int32Array, Int64Array, RecordBatch};

use crate::messages::display_path;
use crate::stages::columns::{column, key_from_i64, Int64Lists};
use crate::stages::files::{CheckedParquet, Input};
use crate::stages::group::buckets_path;
use crate::stages::lineage::{Lineage, Place};
use crate::stages::plan::Plan;
use crate::stages::sign::{partition, CONTENT_TABLE};

/// A bucket of a group file.
pub struct Bucket<'a> {
    /// The band or piece; −1 the content table.
    pub table: i32,
    /// The band key (sign-flipped), or the content hash's high half.
    pub key: i64,
    /// Its documents, increasing.
    pub docs: &'a [i64],
    /// The content table's hash low halves, parallel to `docs` (checked); empty for bands.
    pub aux: &'a [i64],
}

/// A group file checked once (tag and CRC-32), whose row groups are then read apart, by as
/// many threads as the stage has.
pub struct GroupParts {
    file: CheckedParquet,
    part: Option<(u32, u32)>,
}

impl GroupParts {
    /// Group partition `part`'s file, written by the attempt `group`.
    pub fn open(work: &Path, plan: &Plan, group: &Lineage, part: u32) -> Result<GroupParts> {
        let place = Place::part("group", part);
        let input = Input::new(work, buckets_path(work, part), group, place);
        Ok(GroupParts {
            file: CheckedParquet::open(&input, "its partition was not grouped completely")?,
            part: Some((part, plan.parts)),
        })
    }

    /// Its row groups.
    pub fn row_groups(&self) -> usize {
        self.file.row_groups()
    }

    /// The least and greatest table of row group `rg`, where the file records them.
    pub fn tables(&self, rg: usize) -> Option<(i32, i32)> {
        self.file.i32_range(rg, "table")
    }

    /// Its buckets in row groups `groups` (all when none), in order.
    pub fn reader(&self, groups: Option<Vec<usize>>) -> Result<GroupFile> {
        Ok(GroupFile {
            path: self.file.path().to_path_buf(),
            part: self.part,
            batches: Box::new(self.file.batches(groups)?),
            chunk: Chunk::default(),
            row: None,
            last: None,
        })
    }
}

/// One group file, read in order.
pub struct GroupFile {
    path: PathBuf,
    /// The partition of band keys its buckets must belong to, when checked.
    part: Option<(u32, u32)>,
    batches: Box<dyn Iterator<Item = Result<RecordBatch>> + Send>,
    chunk: Chunk,
    /// The current bucket's row in `chunk`.
    row: Option<usize>,
    last: Option<(i32, i64)>,
}

/// One record batch's buckets as plain vectors (what a reader holds of each file).
#[derive(Default)]
struct Chunk {
    table: Vec<i32>,
    key: Vec<i64>,
    /// Where each row's documents end in `docs`, and its hashes in `aux`.
    ends: Vec<usize>,
    docs: Vec<i64>,
    aux_ends: Vec<usize>,
    aux: Vec<i64>,
}

impl GroupFile {
    /// Moves to the next bucket; false at the end of the file.
    pub fn advance(&mut self) -> Result<bool> {
        let mut next = self.row.map_or(0, |r| r + 1);
        while next >= self.chunk.table.len() {
            let Some(batch) = self.batches.next() else {
                self.row = None;
                return Ok(false);
            };
            self.fill(&batch?)?;
            next = 0;
        }
        let at = (self.chunk.table[next], self.chunk.key[next]);
        if self.last.is_some_and(|last| last >= at) {
            bail!(
                "{} is not in increasing (table, key) order (a group file is sorted by both, \
                 each bucket once)",
                display_path(&self.path)
            );
        }
        if let Some((part, parts)) = self.part {
            if partition(at.0, key_from_i64(at.1), parts) != part {
                bail!(
                    "{}: the bucket of table {} and key {} belongs to another partition; run \
                     `dupfind stage group --part {part}/{parts}` again",
                    display_path(&self.path),
                    at.0,
                    at.1
                );
            }
        }
        self.last = Some(at);
        self.row = Some(next);
        Ok(true)
    }

    /// The current bucket (none before the first [`GroupFile::advance`] or after the last).
    pub fn bucket(&self) -> Option<Bucket<'_>> {
        let r = self.row?;
        let c = &self.chunk;
        let start = |ends: &[usize]| r.checked_sub(1).map_or(0, |p| ends[p]);
        Some(Bucket {
            table: c.table[r],
            key: c.key[r],
            docs: &c.docs[start(&c.ends)..c.ends[r]],
            aux: &c.aux[start(&c.aux_ends)..c.aux_ends[r]],
        })
    }

    /// The next bucket, as [`GroupFile::advance`] then [`GroupFile::bucket`].
    pub fn next_bucket(&mut self) -> Result<Option<Bucket<'_>>> {
        Ok(if self.advance()? { self.bucket() } else { None })
    }

    fn fill(&mut self, b: &RecordBatch) -> Result<()> {
        let damaged = || format!("{} is damaged", display_path(&self.path));
        let table = column::<Int32Array>(b, "table").with_context(damaged)?;
        let key = column::<Int64Array>(b, "key").with_context(damaged)?;
        let docs = Int64Lists::of(b, "docs").with_context(damaged)?;
        let aux = Int64Lists::of(b, "aux").with_context(damaged)?;
        let c = &mut self.chunk;
        c.table.clear();
        c.table.extend_from_slice(table.values());
        c.key.clear();
        c.key.extend_from_slice(key.values());
        c.ends.clear();
        c.docs.clear();
        c.aux_ends.clear();
        c.aux.clear();
        for k in 0..b.num_rows() {
            let d = docs.get(k).with_context(damaged)?;
            c.docs.extend_from_slice(d);
            c.ends.push(c.docs.len());
            if c.table[k] == CONTENT_TABLE {
                let a = aux.get(k).with_context(damaged)?;
                if a.len() != d.len() {
                    bail!("{}: `aux` is not parallel to `docs`", damaged());
                }
                c.aux.extend_from_slice(a);
            }
            c.aux_ends.push(c.aux.len());
        }
        Ok(())
    }
}

/// The buckets of several group files, in (table, key) order (of two files with the same
/// bucket, which `stage group`'s partitioning never makes, the first file's first).
pub struct Merge {
    files: Vec<GroupFile>,
    heads: BinaryHeap<Reverse<(i32, i64, usize)>>,
    /// The file whose bucket was handed out last: it moves on at the next call.
    current: Option<usize>,
}

impl Merge {
    /// Merges `files`, each at its start.
    pub fn new(files: Vec<GroupFile>) -> Result<Merge> {
        let mut m = Merge {
            heads: BinaryHeap::with_capacity(files.len()),
            files,
            current: None,
        };
        for i in 0..m.files.len() {
            m.push_head(i)?;
        }
        Ok(m)
    }

    fn push_head(&mut self, i: usize) -> Result<()> {
        if self.files[i].advance()? {
            if let Some(b) = self.files[i].bucket() {
                self.heads.push(Reverse((b.table, b.key, i)));
            }
        }
        Ok(())
    }

    /// The next bucket of all the files.
    pub fn next_bucket(&mut self) -> Result<Option<Bucket<'_>>> {
        if let Some(i) = self.current.take() {
            self.push_head(i)?;
        }
        let Some(Reverse((_, _, i))) = self.heads.pop() else {
            return Ok(None);
        };
        self.current = Some(i);
        Ok(self.files[i].bucket())
    }
}

/// The band buckets of several group files in (table, key) order, cut into ranges of that order
/// that threads merge at once, each over the row groups that hold some of its tables (from the
/// files' statistics; every row group where a file has none). Range after range, they are the
/// buckets of [`Merge`] over the whole files, content table left out.
pub struct Ranges<'a> {
    files: &'a [GroupParts],
    /// Each file's row groups' least and greatest table.
    stats: Vec<Vec<Option<(i32, i32)>>>,
    /// Where each range starts; the last goes to the end.
    bounds: Vec<(i32, i64)>,
}

impl<'a> Ranges<'a> {
    /// Up to `n` ranges of `files` (one where a file has no statistics).
    pub fn new(files: &'a [GroupParts], n: usize) -> Ranges<'a> {
        let stats: Vec<Vec<Option<(i32, i32)>>> = (files.iter())
            .map(|f| (0..f.row_groups()).map(|rg| f.tables(rg)).collect())
            .collect();
        let known = || stats.iter().flatten();
        let tables = (known().all(Option::is_some))
            .then(|| known().flatten().map(|&(a, b)| (a.max(0), b)))
            .and_then(|mut t| {
                let first = t.next()?;
                Some(t.fold(first, |x, y| (x.0.min(y.0), x.1.max(y.1))))
            })
            .filter(|t| t.0 <= t.1);
        let bounds = match tables {
            Some(t) if n > 1 => bounds(t, n),
            _ => vec![(i32::MIN, i64::MIN)],
        };
        Ranges {
            files,
            stats,
            bounds,
        }
    }

    /// The ranges.
    pub fn len(&self) -> usize {
        self.bounds.len()
    }

    /// Calls `f` with every band bucket of range `k`, in order.
    pub fn each(&self, k: usize, mut f: impl FnMut(Bucket<'_>) -> Result<()>) -> Result<()> {
        let (lo, hi) = (self.bounds[k], self.bounds.get(k + 1).copied());
        let overlaps = |t: &Option<(i32, i32)>| {
            t.is_none_or(|(a, b)| b >= lo.0 && hi.is_none_or(|hi| a <= hi.0))
        };
        let files = (self.files.iter().zip(&self.stats)).map(|(file, stats)| {
            let groups = (0..stats.len()).filter(|&rg| overlaps(&stats[rg]));
            file.reader(Some(groups.collect()))
        });
        let mut merged = Merge::new(files.collect::<Result<_>>()?)?;
        while let Some(b) = merged.next_bucket()? {
            let at = (b.table, b.key);
            if b.table == CONTENT_TABLE || at < lo {
                continue;
            }
            if hi.is_some_and(|hi| at >= hi) {
                break;
            }
            f(b)?;
        }
        Ok(())
    }
}

/// The bounds of `n` ranges of the (table, key) order covering the band tables `tables`, as
/// even as the order allows: range k holds (table, key) from bound k included to bound k + 1
/// excluded (the last: to the end).
fn bounds(tables: (i32, i32), n: usize) -> Vec<(i32, i64)> {
    let (lo, hi) = tables;
    let span = (i128::from(hi) - i128::from(lo) + 1) << 64;
    (0..n as i128)
        .map(|k| {
            let at = span * k / n as i128;
            let table = i128::from(lo) + (at >> 64);
            let key = (at & ((1 << 64) - 1)) - (1 << 63);
            (table as i32, key as i64)
        })
        .collect()
}

/// A group file's rows: table, key, docs, aux.
#[cfg(test)]
pub type Row = (i32, i64, Vec<i64>, Vec<i64>);

/// A group attempt for tests, at partition 0 of run `run`.
#[cfg(test)]
pub fn test_group() -> Lineage {
    Lineage::attempt("run", "digest", Place::part("group", 0))
}

/// Opens a file [`write_group_file`] wrote.
#[cfg(test)]
pub fn test_parts(work: &Path, path: &Path, group: &Lineage) -> Result<GroupParts> {
    let input = Input::new(work, path.to_path_buf(), group, Place::part("group", 0));
    let file = CheckedParquet::open(&input, "its partition was not grouped completely")?;
    Ok(GroupParts { file, part: None })
}

/// Opens a file [`write_group_file`] wrote, to read it whole.
#[cfg(test)]
pub fn test_open(work: &Path, path: &Path, group: &Lineage) -> Result<GroupFile> {
    test_parts(work, path, group)?.reader(None)
}

/// Writes a group file at `path` in `work` for the attempt `group`, a record batch per item
/// of `batches`.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub fn write_group_file(work: &Path, path: &Path, group: &mut Lineage, batches: &[&[Row]]) {
    use arrow_array::builder::{Int32Builder, Int64Builder, ListBuilder};

    use crate::stages::columns::{arc, batch};
    use crate::stages::files;

    let batches: Vec<RecordBatch> = (batches.iter())
        .map(|rows| {
            let (mut t, mut k) = (Int32Builder::new(), Int64Builder::new());
            let mut docs = ListBuilder::new(Int64Builder::new());
            let mut aux = ListBuilder::new(Int64Builder::new());
            for (table, key, d, a) in rows.iter() {
                t.append_value(*table);
                k.append_value(*key);
                docs.values().append_slice(d);
                docs.append(true);
                aux.values().append_slice(a);
                aux.append(true);
            }
            batch(vec![
                ("table", arc(t.finish())),
                ("key", arc(k.finish())),
                ("docs", arc(docs.finish())),
                ("aux", arc(aux.finish())),
            ])
            .unwrap()
        })
        .collect();
    let schema = batches[0].schema();
    let out = files::Output::new(work, path.to_path_buf(), group, Place::part("group", 0));
    group.wrote(files::write_parquet(&out, schema, &batches).unwrap());
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn read_all(mut m: Merge) -> Result<Vec<Row>> {
        let mut out = Vec::new();
        while let Some(b) = m.next_bucket()? {
            out.push((b.table, b.key, b.docs.to_vec(), b.aux.to_vec()));
        }
        Ok(out)
    }

    /// Buckets dealt to `files` group files, each cut into record batches of `cut` rows (an
    /// empty batch where `cut` is 0), merged back.
    fn round_trip(rows: &[Row], files: usize, deal: &[usize], cut: usize) -> Result<Vec<Row>> {
        let dir = tempfile::tempdir().unwrap();
        let mut group = test_group();
        let mut paths = Vec::new();
        for f in 0..files {
            let mine: Vec<Row> = (rows.iter().enumerate())
                .filter(|(i, _)| deal[i % deal.len()] % files == f)
                .map(|(_, r)| r.clone())
                .collect();
            let mut batches: Vec<&[Row]> = mine.chunks(cut.max(1)).collect();
            if cut == 0 || batches.is_empty() {
                batches.insert(0, &[]);
            }
            let path = dir.path().join(format!("part-{f}.parquet"));
            write_group_file(dir.path(), &path, &mut group, &batches);
            paths.push(path);
        }
        let opened = paths.iter().map(|p| test_open(dir.path(), p, &group));
        read_all(Merge::new(opened.collect::<Result<_>>()?)?)
    }

    fn bucket() -> impl Strategy<Value = Row> {
        (
            -1i32..4,
            any::<i64>(),
            proptest::collection::btree_set(0i64..1000, 2..6),
        )
            .prop_map(|(table, key, docs)| {
                let docs: Vec<i64> = docs.into_iter().collect();
                let aux = if table == CONTENT_TABLE {
                    docs.iter().map(|d| d % 3).collect()
                } else {
                    Vec::new()
                };
                (table, key, docs, aux)
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn merged_files_give_every_bucket_once_in_table_and_key_order(
            rows in proptest::collection::vec(bucket(), 0..60),
            files in 1usize..9,
            deal in proptest::collection::vec(0usize..9, 1..20),
            cut in 0usize..7,
        ) {
            let mut want = rows;
            want.sort_by_key(|r| (r.0, r.1));
            want.dedup_by_key(|r| (r.0, r.1));
            prop_assert_eq!(round_trip(&want, files, &deal, cut).unwrap(), want);
        }
    }

    #[test]
    fn ranges_cut_the_table_and_key_order_evenly_and_in_order() {
        assert_eq!(bounds((0, 18), 1), [(0, i64::MIN)]);
        assert_eq!(bounds((0, 1), 2), [(0, i64::MIN), (1, i64::MIN)]);
        // Within one table: its keys halved, then quartered.
        assert_eq!(bounds((3, 3), 2), [(3, i64::MIN), (3, 0)]);
        assert_eq!(
            bounds((3, 3), 4),
            [
                (3, i64::MIN),
                (3, i64::MIN / 2),
                (3, 0),
                (3, i64::MAX / 2 + 1)
            ]
        );
        let r = bounds((0, 18), 32);
        assert_eq!(r.len(), 32);
        assert!(r.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(r[0], (0, i64::MIN));
        assert_eq!(r[31].0, 18);
    }

    /// Band buckets over several row groups of two files (and a content table), merged whole
    /// and as 1 to 5 ranges: the same buckets in the same order.
    #[test]
    fn ranges_one_after_another_are_the_whole_merge() {
        let dir = tempfile::tempdir().unwrap();
        let mut group = test_group();
        let n = crate::stages::files::ROW_GROUP as i64 * 5 / 2;
        let mut paths = Vec::new();
        for f in 0..2i64 {
            let mut rows: Vec<Row> = vec![(CONTENT_TABLE, f, vec![1, 2], vec![0, 0])];
            rows.extend((0..n).map(|i| {
                let key = (i * 7919 + f).wrapping_mul(0x9E37_79B9_7F4A_7C15_u64 as i64);
                ((i % 5) as i32, key, vec![i, i + 1], vec![])
            }));
            rows.sort_by_key(|r| (r.0, r.1));
            let path = dir.path().join(format!("part-{f}.parquet"));
            write_group_file(dir.path(), &path, &mut group, &[&rows]);
            paths.push(path);
        }
        let parts: Vec<GroupParts> = (paths.iter())
            .map(|p| test_parts(dir.path(), p, &group).unwrap())
            .collect();
        assert!(parts[0].row_groups() >= 3);
        let opened = paths.iter().map(|p| test_open(dir.path(), p, &group));
        let mut whole =
            read_all(Merge::new(opened.collect::<Result<_>>().unwrap()).unwrap()).unwrap();
        whole.retain(|r| r.0 != CONTENT_TABLE);
        assert_eq!(whole.len() as i64, 2 * n);
        for k in 1..=5 {
            let ranges = Ranges::new(&parts, k);
            assert_eq!(ranges.len(), k);
            let mut got = Vec::new();
            for r in 0..k {
                (ranges.each(r, |b| {
                    got.push((b.table, b.key, b.docs.to_vec(), b.aux.to_vec()));
                    Ok(())
                }))
                .unwrap();
            }
            assert!(got == whole, "{k} ranges");
        }
    }

    #[test]
    fn a_group_file_out_of_order_or_with_a_bucket_twice_is_refused_by_name() {
        let a = (0, 5, vec![1, 2], vec![]);
        let b = (0, 4, vec![3, 4], vec![]);
        for rows in [vec![a.clone(), b], vec![a.clone(), a]] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("part-7.parquet");
            let mut group = test_group();
            // Across record batches, as within one.
            write_group_file(dir.path(), &path, &mut group, &[&rows[..1], &rows[1..]]);
            let m = Merge::new(vec![test_open(dir.path(), &path, &group).unwrap()]).unwrap();
            let e = read_all(m).unwrap_err().to_string();
            assert!(
                e.contains("part-7.parquet is not in increasing (table, key) order"),
                "{e}"
            );
        }
    }

    #[test]
    fn content_hashes_not_parallel_to_the_documents_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("part-1.parquet");
        let mut group = test_group();
        let rows: &[Row] = &[(CONTENT_TABLE, 1, vec![1, 2], vec![0])];
        write_group_file(dir.path(), &path, &mut group, &[rows]);
        let e = test_open(dir.path(), &path, &group)
            .unwrap()
            .advance()
            .unwrap_err();
        assert!(
            format!("{e:#}").contains("`aux` is not parallel to `docs`"),
            "{e:#}"
        );
    }
}
