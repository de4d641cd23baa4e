//! A cluster as written: its members (each held once), its representative, its duplicates and
//! linked members pointing into them, and its pairs.

use std::path::{Path, PathBuf};

use serde::ser::{SerializeStruct, Serializer};
use serde::Serialize;

use crate::ingest::worker::DocResult;

/// One cluster.
///
/// Each member is held once, in `members`; the representative and the duplicates point into it
/// and are written out in full. Holding a member twice, every optional field inline, took about
/// 180 MB more at the end of a scan of a million files (300,000 of them clustered).
#[derive(Debug)]
pub struct ClusterOut {
    /// Position in `clusters`.
    pub id: usize,
    /// Number of members.
    pub size: usize,
    /// Smallest similarity among `pairs`.
    pub min_similarity: f64,
    /// Largest similarity among `pairs`.
    pub max_similarity: f64,
    /// Index into `members` of the member to keep, chosen by `--keep` (with `--cluster
    /// strict`, the center every other member was verified against). With `--keep none`, the
    /// member that would have been chosen first (path order), written as null.
    pub representative: usize,
    /// False with `--keep none`: no member is kept, `representative` is written as null and
    /// `duplicates` holds every member.
    pub kept: bool,
    /// The members verified against the representative (at the threshold, by the active
    /// verification), in path order: the files a user could remove in favour of it.
    pub duplicates: Vec<DuplicateOut>,
    /// The other members, joined to the cluster through a chain of other members (with
    /// `--cluster strict`, a document whose partners were all taken) but not verified against
    /// the representative; never safe to remove in its favour. Written only when not empty.
    pub linked: Vec<DuplicateOut>,
    /// The documents, in path order.
    pub members: Vec<MemberOut>,
    /// The verified pairs that joined the cluster: size − 1 of them, a spanning tree.
    pub pairs: Vec<PairOut>,
}

impl ClusterOut {
    /// The member to keep (with `--keep none`, see [`ClusterOut::kept`]: the member that would
    /// have been).
    pub fn representative(&self) -> &MemberOut {
        &self.members[self.representative]
    }

    /// The member a duplicate is.
    pub fn member(&self, d: &DuplicateOut) -> &MemberOut {
        &self.members[d.member as usize]
    }
}

impl Serialize for ClusterOut {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = s.serialize_struct("ClusterOut", 9)?;
        out.serialize_field("id", &self.id)?;
        out.serialize_field("size", &self.size)?;
        out.serialize_field("min_similarity", &self.min_similarity)?;
        out.serialize_field("max_similarity", &self.max_similarity)?;
        if self.kept {
            out.serialize_field("representative", self.representative())?;
        } else {
            out.serialize_field("representative", &None::<MemberOut>)?;
        }
        out.serialize_field("duplicates", &Duplicates(self, &self.duplicates))?;
        if !self.linked.is_empty() {
            out.serialize_field("linked", &Duplicates(self, &self.linked))?;
        }
        out.serialize_field("members", &Identities(&self.members))?;
        out.serialize_field("pairs", &self.pairs)?;
        out.end()
    }
}

/// A cluster's duplicates (or linked members), each written as its member's fields followed by
/// its own.
struct Duplicates<'a>(&'a ClusterOut, &'a [DuplicateOut]);

impl Serialize for Duplicates<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.1.iter().map(|d| DuplicateFields {
            member: self.0.member(d),
            duplicate: d,
        }))
    }
}

struct DuplicateFields<'a> {
    member: &'a MemberOut,
    duplicate: &'a DuplicateOut,
}

impl Serialize for DuplicateFields<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let d = self.duplicate;
        let mut out = s.serialize_struct("DuplicateOut", 15)?;
        self.member.fields(&mut out)?;
        out.serialize_field("similarity", &d.similarity)?;
        if let Some(distance) = d.distance {
            out.serialize_field("distance", &distance)?;
        }
        out.serialize_field("exact", &d.exact)?;
        out.serialize_field("estimated", &d.estimated)?;
        if let Some(containment) = d.containment {
            out.serialize_field("containment", &containment)?;
        }
        out.end()
    }
}

/// One document in a cluster. Written as `path`, `path_bytes` (only when `path` is lossy UTF-8:
/// base64 of the exact bytes), `line` and `id` (a record of a JSON Lines dump: its 1-based line
/// and its id field, when it has them), `bytes`, `aliases`, `indexed` (only when true),
/// `aliases_bytes` (only when some alias is lossy), `content_hash` and `file` (a file this run
/// read).
#[derive(Clone, Debug)]
pub struct MemberOut {
    /// The path (lossy UTF-8 when the name is not valid UTF-8).
    pub path: Box<str>,
    /// Size in bytes (of a dump record: of its text).
    pub bytes: u64,
    /// True for a document of the index scanned against (`--against`).
    pub indexed: bool,
    /// xxh3-128 of the content compared.
    pub hash: u128,
    /// The fields most members lack, allocated only for those that have one.
    pub more: Option<Box<MemberMore>>,
    /// The file as this run read it, for `dupfind remove`, `move` and `link` to check that it
    /// is unchanged (None for a dump record, an indexed document and standard input).
    pub file: Option<Box<FileOut>>,
}

/// A file as the scan read it: what `dupfind remove`, `move` and `link` compare with the file
/// they find before acting on it, and what removing it would free.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct FileOut {
    /// The device it is on (st_dev).
    pub device: u64,
    /// Its inode number.
    pub inode: u64,
    /// Its size in bytes (of a compressed file: compressed, as on disk).
    pub size: u64,
    /// Its modification time, whole seconds since the Unix epoch (negative before it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified_secs: Option<i64>,
    /// The nanoseconds of its modification time past `modified_secs`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified_nanos: Option<u32>,
    /// Its names (hard links) when read, inside the roots or not.
    pub links: u32,
    /// The bytes it took on disk when read: st_blocks × 512.
    pub disk_bytes: u64,
}

impl FileOut {
    /// The file of a document this run read from a file of its own (its `links` count is
    /// known only then); None for a dump record, an indexed document and standard input (its
    /// copy in a temporary file is no file to act on).
    pub fn read_now(f: &crate::input::walk::FileEntry, doc: &DocResult) -> Option<FileOut> {
        if doc.links == 0 || f.record.is_some() || crate::input::stdin::is_stdin(&f.path) {
            return None;
        }
        let modified = f.modified.map(crate::input::read::time_parts);
        Some(FileOut {
            device: f.id.0,
            inode: f.id.1,
            size: f.size,
            modified_secs: modified.map(|m| m.0),
            modified_nanos: modified.and_then(|m| u32::try_from(m.1).ok()),
            links: doc.links,
            disk_bytes: doc.disk,
        })
    }
}

/// `stats.reclaimable_bytes`: the bytes on disk of the files listed as duplicates, each inode
/// once (a file is one member whatever its names, but a member stands for its inode here in
/// case two ever share one), counted only when every name of it is listed: removing the names
/// of a file that has another one elsewhere frees nothing. An object of a store has no inode
/// (device and inode 0, which no file has): each is its own.
pub fn reclaimable(clusters: &[ClusterOut]) -> u64 {
    let mut seen = std::collections::HashSet::new();
    (clusters.iter())
        .flat_map(|c| c.duplicates.iter().map(|d| c.member(d)))
        .filter_map(|m| {
            let f = m.file.as_deref()?;
            let names = 1 + m.more.as_ref().map_or(0, |x| x.aliases.len());
            let id = (f.device, f.inode);
            let first = id == (0, 0) || seen.insert(id);
            (names >= f.links as usize && first).then_some(f.disk_bytes)
        })
        .sum()
}

/// A content hash as the report writes it: 32 lowercase hex digits. Written a digit at a time
/// into a string of their size: `format!` went through the formatting machinery and grew its
/// string, 2.7 M instructions of a 10k scan's report (issue 26).
pub fn hash_hex(hash: u128) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 32];
    for (i, digit) in out.iter_mut().enumerate() {
        *digit = DIGITS[(hash >> (124 - 4 * i)) as usize & 0xf];
    }
    // Bytes, then one check: pushing 32 chars cost 650 instructions a member.
    String::from_utf8_lossy(&out).into_owned()
}

/// What only some members have.
#[derive(Clone, Debug, Default)]
pub struct MemberMore {
    /// Base64 of the exact path bytes, when `path` is lossy.
    pub path_bytes: Option<String>,
    /// For a record of a JSON Lines dump: its 1-based line number.
    pub line: Option<u64>,
    /// For a record of a JSON Lines dump: its id field, when it has one.
    pub id: Option<String>,
    /// Other names of the same file (hard links).
    pub aliases: Vec<String>,
    /// Base64 of each alias's bytes (null where the alias is valid UTF-8), when some alias is
    /// lossy.
    pub aliases_bytes: Option<Vec<Option<String>>>,
}

impl MemberOut {
    /// For a record of a JSON Lines dump: its line.
    pub fn line(&self) -> Option<u64> {
        self.more.as_ref().and_then(|m| m.line)
    }

    /// For a record of a JSON Lines dump: its id field.
    pub fn id(&self) -> Option<&str> {
        self.more.as_ref().and_then(|m| m.id.as_deref())
    }

    /// The exact bytes of its path, when `path` is lossy UTF-8.
    pub fn path_bytes(&self) -> Option<Vec<u8>> {
        use base64::Engine;
        let base64 = self.more.as_ref()?.path_bytes.as_ref()?;
        base64::engine::general_purpose::STANDARD
            .decode(base64)
            .ok()
    }

    fn fields<S: SerializeStruct>(&self, out: &mut S) -> Result<(), S::Error> {
        self.identity_fields(out)?;
        out.serialize_field("content_hash", &hash_hex(self.hash))?;
        if let Some(file) = &self.file {
            out.serialize_field("file", file)?;
        }
        Ok(())
    }

    /// The fields that say which document it is: all but what it held when read (the content
    /// hash and the file), which the cluster's `members` list leaves out, as each member is
    /// written with them once already, as the representative, a duplicate or a linked member.
    fn identity_fields<S: SerializeStruct>(&self, out: &mut S) -> Result<(), S::Error> {
        let more = self.more.as_deref();
        out.serialize_field("path", &*self.path)?;
        if let Some(bytes) = more.and_then(|m| m.path_bytes.as_ref()) {
            out.serialize_field("path_bytes", bytes)?;
        }
        if let Some(line) = more.and_then(|m| m.line) {
            out.serialize_field("line", &line)?;
        }
        if let Some(id) = more.and_then(|m| m.id.as_ref()) {
            out.serialize_field("id", id)?;
        }
        out.serialize_field("bytes", &self.bytes)?;
        out.serialize_field("aliases", more.map_or(&[][..], |m| &m.aliases[..]))?;
        if self.indexed {
            out.serialize_field("indexed", &true)?;
        }
        if let Some(bytes) = more.and_then(|m| m.aliases_bytes.as_ref()) {
            out.serialize_field("aliases_bytes", bytes)?;
        }
        Ok(())
    }
}

/// A cluster's `members`, each by its identity fields only.
struct Identities<'a>(&'a [MemberOut]);

impl Serialize for Identities<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(Identity))
    }
}

struct Identity<'a>(&'a MemberOut);

impl Serialize for Identity<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = s.serialize_struct("MemberOut", 8)?;
        self.0.identity_fields(&mut out)?;
        out.end()
    }
}

impl Serialize for MemberOut {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = s.serialize_struct("MemberOut", 10)?;
        self.fields(&mut out)?;
        out.end()
    }
}

/// A member other than the representative (a duplicate, or a linked member), with its similarity
/// to the representative. Written with its member's fields first.
#[derive(Debug)]
pub struct DuplicateOut {
    /// Index into the cluster's `members`.
    pub member: u32,
    /// Similarity to the representative: Jaccard (`--verify edit`: edit similarity; SimHash:
    /// 1 − distance/64).
    pub similarity: f64,
    /// SimHash Hamming distance to the representative.
    pub distance: Option<u32>,
    /// True when byte-identical to the representative.
    pub exact: bool,
    /// True when `similarity` is the MinHash signature estimate (`--verify estimate`, or a
    /// linked member whose shingle sets could not be read again).
    pub estimated: bool,
    /// `--containment`: the share of this document's shingles found in the representative,
    /// the largest member (the same value as `similarity`).
    pub containment: Option<f64>,
}

/// One verified pair of a cluster.
#[derive(Debug, Default, Serialize)]
pub struct PairOut {
    /// Index into `members`.
    pub a: u32,
    /// Index into `members` (a < b).
    pub b: u32,
    /// Jaccard similarity of the shingle sets (or its estimate with --verify estimate; the
    /// token edit similarity with --verify edit); SimHash: 1 − distance/64.
    pub similarity: f64,
    /// SimHash Hamming distance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distance: Option<u32>,
    /// True when the two files are byte-identical.
    pub exact: bool,
    /// The fields only `--containment` and `--pairs` write, allocated only for them.
    #[serde(flatten)]
    pub more: Option<Box<PairMore>>,
}

impl PairOut {
    /// The optional fields, allocated on first use.
    pub fn more(&mut self) -> &mut PairMore {
        self.more.get_or_insert_with(Box::default)
    }
}

/// What only some pairs have.
#[derive(Debug, Default, Serialize)]
pub struct PairMore {
    /// `--containment`: index into `members` of the contained document, the one with fewer
    /// distinct shingles (on a tie, the later in path order).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contained: Option<u32>,
    /// `--containment`: index into `members` of the containing document.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container: Option<u32>,
    /// `--containment`: |A∩B| / |A| with A the contained document (the same value as
    /// `similarity`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub containment: Option<f64>,
    /// `--pairs`: exact Jaccard similarity of the two shingle sets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jaccard: Option<f64>,
    /// `--pairs`: shingles the two documents share, |A∩B|.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared_shingles: Option<u64>,
    /// `--pairs` with `--verify edit`: token edit similarity (absent when a document is over the
    /// cap).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub edit_similarity: Option<f64>,
    /// `--pairs` (MinHash): the signatures' estimate of the Jaccard similarity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimate: Option<f64>,
    /// `--pairs` (MinHash): the first band whose rows agree, the one that made the pair a
    /// candidate; absent when no band agrees (possible only for byte-identical copies, which
    /// are grouped by content hash, and which share every band in practice).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub band: Option<usize>,
    /// `--pairs` (SimHash): Hamming distance of the fingerprints.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hamming: Option<u32>,
    /// `--pairs` (SimHash): the cosine similarity the distance implies, cos(π·d/64).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cosine: Option<f64>,
    /// `--pairs` (SimHash): the first piece in which the fingerprints agree.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub piece: Option<usize>,
}

/// The lossy path and, when lossy, the base64 of its exact bytes.
pub fn path_fields(path: &Path) -> (String, Option<String>) {
    use base64::Engine;
    let exact = lossy_path_bytes(path);
    let base64 = exact.map(|b| base64::engine::general_purpose::STANDARD.encode(b));
    (path.to_string_lossy().into_owned(), base64)
}

/// The exact bytes of `path` when its name is not valid UTF-8 (its lossy form is not the
/// name), None when it is.
pub fn lossy_path_bytes(path: &Path) -> Option<Vec<u8>> {
    path.to_str().is_none().then(|| exact_bytes(path))
}

#[cfg(unix)]
fn exact_bytes(path: &Path) -> Vec<u8> {
    use std::os::unix::ffi::OsStrExt;
    path.as_os_str().as_bytes().to_vec()
}

#[cfg(not(unix))]
fn exact_bytes(path: &Path) -> Vec<u8> {
    path.to_string_lossy().as_bytes().to_vec()
}

impl MemberOut {
    /// A member from its path, dump record, size, aliases and content hash.
    pub fn new(
        path: &Path,
        record: Option<&crate::input::walk::Record>,
        (bytes, hash): (u64, u128),
        aliases: &[PathBuf],
    ) -> Self {
        let (path, path_bytes) = path_fields(path);
        let more = (path_bytes.is_some() || record.is_some() || !aliases.is_empty()).then(|| {
            let fields: Vec<(String, Option<String>)> =
                aliases.iter().map(|a| path_fields(a)).collect();
            let any_lossy = fields.iter().any(|f| f.1.is_some());
            Box::new(MemberMore {
                path_bytes,
                line: record.map(|r| r.line),
                id: record.and_then(|r| r.id.clone()),
                aliases_bytes: any_lossy.then(|| fields.iter().map(|f| f.1.clone()).collect()),
                aliases: fields.into_iter().map(|f| f.0).collect(),
            })
        });
        MemberOut {
            path: path.into_boxed_str(),
            bytes,
            indexed: false,
            hash,
            more,
            file: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn non_utf8_paths_keep_their_exact_bytes() {
        use std::ffi::OsStr;
        use std::os::unix::ffi::OsStrExt;
        let p = Path::new(OsStr::from_bytes(b"dir/caf\xE9.txt"));
        let (lossy, bytes) = path_fields(p);
        assert_eq!(lossy, "dir/caf\u{FFFD}.txt");
        assert_eq!(bytes.as_deref(), Some("ZGlyL2NhZukudHh0"));
        assert_eq!(
            path_fields(Path::new("ok.txt")),
            ("ok.txt".to_string(), None)
        );
    }

    #[test]
    fn content_hashes_are_32_lowercase_hex_digits_as_format_writes_them() {
        for hash in [
            0,
            1,
            0xab,
            u128::MAX,
            u128::MAX / 3,
            0x0123_4567_89ab_cdef << 60,
        ] {
            assert_eq!(hash_hex(hash), format!("{hash:032x}"));
        }
    }
}
