//! The part of a JSON report that `dupfind remove`, `move` and `link` read: the roots, and each
//! cluster's representative and duplicates with the file each was read from. Unknown fields are
//! ignored (fields may be added within a schema version); a report that lacks what acting
//! needs is refused with what to do.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use base64::Engine as _;
use serde::Deserialize;

use crate::report::{FileOut, SCHEMA_VERSION};

#[derive(Deserialize)]
struct ReportIn {
    schema_version: u32,
    roots: Option<Vec<String>>,
    roots_bytes: Option<Vec<Option<String>>>,
    clusters: Vec<ClusterIn>,
}

#[derive(Deserialize)]
struct ClusterIn {
    representative: Option<MemberIn>,
    duplicates: Vec<DuplicateIn>,
}

#[derive(Deserialize)]
struct MemberIn {
    path: String,
    path_bytes: Option<String>,
    line: Option<u64>,
    bytes: u64,
    #[serde(default)]
    indexed: bool,
    #[serde(default)]
    aliases: Vec<String>,
    aliases_bytes: Option<Vec<Option<String>>>,
    content_hash: Option<String>,
    file: Option<FileOut>,
}

#[derive(Deserialize)]
struct DuplicateIn {
    #[serde(flatten)]
    member: MemberIn,
    exact: bool,
}

/// What a member of an object store is, for a message: never acted on.
pub const OBJECT: &str = "an object of an object store (remove, move and link act on local files)";

/// A member of a cluster as the commands see it.
#[derive(Debug)]
pub struct Member {
    /// Its path and then its aliases, as their exact bytes.
    pub names: Vec<PathBuf>,
    /// What it is, when it is no file this scan read (a dump record, an indexed document,
    /// standard input, a member of a report without `file`): never acted on.
    pub not_a_file: Option<&'static str>,
    /// The file as read.
    pub file: Option<FileOut>,
    /// Its content hash (`content_hash`).
    pub hash: Option<u128>,
    /// A document of the index (`--against`): its path is the one the index recorded.
    pub indexed: bool,
    /// The size of its content as compared (decompressed for a compressed file).
    pub bytes: u64,
    /// For a record of a JSON Lines dump: its line.
    pub line: Option<u64>,
}

impl Member {
    /// Its path for a message: `dump.jsonl:12` for a record of a dump.
    pub fn shown(&self) -> String {
        let path = crate::messages::display_path(&self.names[0]);
        match self.line {
            Some(line) => format!("{path}:{line}"),
            None => path,
        }
    }
}

/// A duplicate: a member, and whether its content is identical to the representative's.
#[derive(Debug)]
pub struct Duplicate {
    /// The member.
    pub member: Member,
    /// `exact` in the report.
    pub exact: bool,
}

/// A cluster: the representative (None with `--keep none`) and the duplicates.
#[derive(Debug)]
pub struct Cluster {
    /// The member kept.
    pub representative: Option<Member>,
    /// The members verified against it.
    pub duplicates: Vec<Duplicate>,
}

/// The report: its roots and clusters.
#[derive(Debug)]
pub struct Acting {
    /// The roots walked, as their exact bytes.
    pub roots: Vec<PathBuf>,
    /// The clusters.
    pub clusters: Vec<Cluster>,
}

/// Reads the report at `path` (`-`: standard input).
pub fn read(path: &Path) -> Result<Acting> {
    let shown = crate::messages::display_path(path);
    let mut text = Vec::new();
    if path == Path::new("-") {
        std::io::stdin()
            .lock()
            .read_to_end(&mut text)
            .context("cannot read the report from standard input")?;
    } else {
        text = std::fs::read(path).with_context(|| format!("cannot read the report {shown}"))?;
    }
    parse(&text).with_context(|| {
        format!(
            "{shown} is not a report dupfind can act on (write one with `dupfind scan --format \
             json`)"
        )
    })
}

/// The report in `text`.
pub fn parse(text: &[u8]) -> Result<Acting> {
    let first = text.split(|&b| b == b'\n').next().unwrap_or_default();
    let header = serde_json::from_slice::<serde_json::Value>(first)
        .is_ok_and(|v| v.get("type").is_some_and(|t| t == "header"));
    if header {
        bail!("it is a JSON Lines report (--format jsonl): act on --format json");
    }
    let r: ReportIn = serde_json::from_slice(text).context("not a JSON report")?;
    if r.schema_version != SCHEMA_VERSION {
        bail!(
            "its schema_version is {}, this dupfind reads {SCHEMA_VERSION}",
            r.schema_version
        );
    }
    let Some(roots) = r.roots else {
        bail!("it has no `roots`: it was written by an older dupfind; scan again");
    };
    // A URL root holds no local file; read as a path, it would name another directory.
    let roots = (exact_names(roots, r.roots_bytes.as_deref())?.into_iter())
        .filter(|r| !crate::store::is_url(r))
        .collect();
    let clusters = (r.clusters.into_iter())
        .map(|c| {
            Ok(Cluster {
                representative: c.representative.map(member).transpose()?,
                duplicates: (c.duplicates.into_iter())
                    .map(|d| {
                        Ok(Duplicate {
                            member: member(d.member)?,
                            exact: d.exact,
                        })
                    })
                    .collect::<Result<_>>()?,
            })
        })
        .collect::<Result<_>>()?;
    Ok(Acting { roots, clusters })
}

fn member(m: MemberIn) -> Result<Member> {
    let path = exact_names(vec![m.path], m.path_bytes.map(|b| vec![Some(b)]).as_deref())?;
    let mut names = path;
    names.extend(exact_names(m.aliases, m.aliases_bytes.as_deref())?);
    let stdin = names[0] == Path::new(crate::input::stdin::NAME);
    // Checked first: a URL read as a local path would name another file (`s3://b/k` is the
    // local `s3:/b/k`).
    let not_a_file = if crate::store::is_url(&names[0]) {
        Some(OBJECT)
    } else if m.line.is_some() {
        Some("a record of a JSON Lines dump")
    } else if m.indexed {
        Some("a document of the index (--against)")
    } else if stdin {
        Some("standard input")
    } else if m.file.is_none() || m.content_hash.is_none() {
        Some("a member without `file` (a report of an older dupfind?)")
    } else {
        None
    };
    let hash = match &m.content_hash {
        Some(h) => Some(
            u128::from_str_radix(h, 16)
                .ok()
                .filter(|_| h.len() == 32)
                .with_context(|| format!("content_hash {h:?} is not 32 hex digits"))?,
        ),
        None => None,
    };
    Ok(Member {
        names,
        not_a_file,
        file: m.file,
        hash,
        indexed: m.indexed,
        bytes: m.bytes,
        line: m.line,
    })
}

/// Names as their exact bytes: the base64 a report keeps of a name that is not UTF-8, else its
/// text.
fn exact_names(lossy: Vec<String>, bytes: Option<&[Option<String>]>) -> Result<Vec<PathBuf>> {
    use std::os::unix::ffi::OsStringExt;
    let mut out = Vec::with_capacity(lossy.len());
    for (i, name) in lossy.into_iter().enumerate() {
        match bytes.and_then(|b| b.get(i)).and_then(Option::as_deref) {
            Some(b64) => {
                let raw = base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .with_context(|| format!("the bytes of {name:?} are not base64"))?;
                out.push(PathBuf::from(std::ffi::OsString::from_vec(raw)));
            }
            None => out.push(PathBuf::from(name)),
        }
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_report_without_roots_or_of_another_schema_is_refused() {
        let old = br#"{"schema_version": 2, "clusters": []}"#;
        assert!(format!("{:#}", parse(old).unwrap_err()).contains("no `roots`"));
        let next = br#"{"schema_version": 3, "roots": [], "clusters": []}"#;
        assert!(format!("{:#}", parse(next).unwrap_err()).contains("schema_version is 3"));
        assert!(parse(b"[1, 2").is_err());
    }

    #[test]
    fn records_indexed_documents_and_standard_input_are_no_files() {
        let file = r#""content_hash": "000000000000000000000000000000ff",
            "file": {"device": 1, "inode": 2, "size": 3, "links": 1, "disk_bytes": 4096}"#;
        let text = format!(
            r#"{{"schema_version": 2, "roots": ["r"], "clusters": [{{
            "representative": {{"path": "r/a", "bytes": 3, "aliases": [], {file}}},
            "duplicates": [
              {{"path": "r/d.jsonl", "line": 4, "bytes": 3, "aliases": [], "exact": true, {file}}},
              {{"path": "x", "indexed": true, "bytes": 3, "aliases": [], "exact": true}},
              {{"path": "-", "bytes": 3, "aliases": [], "exact": true, {file}}},
              {{"path": "r/b", "path_bytes": "ci9i/w==", "bytes": 3, "aliases": ["r/c"],
                "exact": false, {file}}}
            ]}}]}}"#
        );
        let r = parse(text.as_bytes()).unwrap();
        let d = &r.clusters[0].duplicates;
        assert!(d[..3].iter().all(|d| d.member.not_a_file.is_some()));
        assert_eq!(d[3].member.not_a_file, None);
        assert_eq!(d[3].member.hash, Some(0xff));
        use std::os::unix::ffi::OsStrExt;
        assert_eq!(d[3].member.names[0].as_os_str().as_bytes(), b"r/b\xff");
        assert_eq!(d[3].member.names[1], Path::new("r/c"));
    }

    #[test]
    fn an_object_of_a_store_is_no_file_and_a_url_root_no_directory() {
        let file = r#""content_hash": "000000000000000000000000000000ff",
            "file": {"device": 0, "inode": 0, "size": 3, "links": 1, "disk_bytes": 3}"#;
        let text = format!(
            r#"{{"schema_version": 2, "roots": ["s3://b/p/", "loc"], "clusters": [{{
            "representative": {{"path": "s3://b/p/a", "bytes": 3, "aliases": [], {file}}},
            "duplicates": [
              {{"path": "S3://b/p/c", "bytes": 3, "aliases": [], "exact": true, {file}}}
            ]}}]}}"#
        );
        let r = parse(text.as_bytes()).unwrap();
        assert_eq!(r.roots, [PathBuf::from("loc")]);
        let c = &r.clusters[0];
        assert_eq!(c.representative.as_ref().unwrap().not_a_file, Some(OBJECT));
        assert_eq!(c.duplicates[0].member.not_a_file, Some(OBJECT));
    }
}
