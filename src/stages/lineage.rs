//! Where every work file comes from, so that a file in the wrong place, a leftover of an
//! earlier attempt, or one made with other options is an error naming it, never a report.
//!
//! Each task (one stage over one shard or partition) runs as an *attempt* with a fresh random
//! id. Everything it writes names the run, its stage, its shard or partition, that attempt and
//! the digest of `run.json` (Parquet: the key-value metadata `dupfind.lineage`; JSON: the
//! summary's `lineage`). Its summary, written last, also lists the CRC-32 of each Parquet file
//! it wrote (`files`; on an object store, the size and ETag the store gave each too, `objects`)
//! and the attempt of every summary it read (`consumed`), and is sealed: a
//! CRC-32 of its own bytes before the `seal` field. A consumer checks each file against its
//! own place and its producer's summary; `stage report` and `stage status` check the whole
//! chain: a summary whose producer was written again since it read it is stale.
//!
//! CRC-32 (zlib's, which Python has) guards against accidents — a retried task, a file copied
//! to the wrong name, a truncated or bit-flipped file — not against someone who can write the
//! work directory and reseal what they change.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use crate::messages::display_path;

/// A task's place in the run: its stage and its shard or partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Place {
    /// `init`, `sign`, `group`, `components`, `route`, `verify` or `dataset`.
    pub stage: &'static str,
    /// The shard, for per-shard stages (and a key or route file's shard).
    pub shard: Option<u32>,
    /// The partition, for per-partition stages (and a key or route file's partition).
    pub part: Option<u32>,
}

impl Place {
    /// A stage that runs once.
    pub fn once(stage: &'static str) -> Place {
        Place {
            stage,
            shard: None,
            part: None,
        }
    }

    /// Shard `shard` of a per-shard stage.
    pub fn shard(stage: &'static str, shard: u32) -> Place {
        Place {
            stage,
            shard: Some(shard),
            part: None,
        }
    }

    /// Partition `part` of a per-partition stage.
    pub fn part(stage: &'static str, part: u32) -> Place {
        Place {
            stage,
            shard: None,
            part: Some(part),
        }
    }

    /// The same place, for a file that also belongs to partition `part`.
    pub fn with_part(self, part: u32) -> Place {
        Place {
            part: Some(part),
            ..self
        }
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&place_text(self.stage, self.shard, self.part))
    }
}

/// A place in words: "stage sign, shard 0, partition 1".
fn place_text(stage: &str, shard: Option<u32>, part: Option<u32>) -> String {
    let mut s = format!("stage {stage}");
    if let Some(x) = shard {
        s += &format!(", shard {x}");
    }
    if let Some(x) = part {
        s += &format!(", partition {x}");
    }
    s
}

/// What a Parquet work file says of itself (its key-value metadata `dupfind.lineage`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tag {
    /// The run.
    pub run: String,
    /// The stage that wrote it.
    pub stage: String,
    /// Its shard, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<u32>,
    /// Its partition, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part: Option<u32>,
    /// The attempt that wrote it.
    pub attempt: String,
    /// The digest of the `run.json` it was made with.
    pub digest: String,
}

impl Tag {
    fn place_is(&self, p: Place) -> bool {
        self.stage == p.stage && self.shard == p.shard && self.part == p.part
    }

    fn place(&self) -> String {
        place_text(&self.stage, self.shard, self.part)
    }
}

/// A summary's lineage: what wrote it, what it wrote, what it read.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Lineage {
    /// The attempt, its place and the run (as its Parquet files' tags say).
    #[serde(flatten)]
    pub tag: Tag,
    /// The Parquet files it wrote (work-relative names) and their CRC-32s.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
    /// In a work directory on an object store, what the store said of each of those files
    /// when it took it: its size and ETag, which one listing of the work directory shows for
    /// every file (`stage status`) where their CRC-32s would need each file fetched. Absent on
    /// a local disk, and from summaries of earlier builds and of the Python engines.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub objects: BTreeMap<String, ObjectRec>,
    /// The summaries it read (work-relative names) and the attempt each was written by.
    #[serde(default)]
    pub consumed: BTreeMap<String, String>,
}

/// What the store said of a work file it took: its size and ETag.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectRec {
    /// Its bytes.
    pub size: u64,
    /// Its ETag, without quotes.
    pub etag: String,
}

impl ObjectRec {
    /// The record of `stored`, when the store gave it an ETag.
    pub fn of(stored: &crate::store::Stored) -> Option<ObjectRec> {
        Some(ObjectRec {
            size: stored.size,
            etag: stored.e_tag.clone()?,
        })
    }
}

/// A written Parquet file: its work-relative name and CRC-32.
pub struct Written {
    /// The name, relative to the work directory.
    pub rel: String,
    /// Its CRC-32.
    pub crc: u32,
    /// What the store said of it (None on a local disk, or from a store without ETags).
    pub object: Option<ObjectRec>,
}

impl Lineage {
    /// A new attempt at `place` of the run `run` whose `run.json` has digest `digest`.
    pub fn attempt(run: &str, digest: &str, place: Place) -> Lineage {
        Lineage {
            tag: Tag {
                run: run.to_string(),
                stage: place.stage.to_string(),
                shard: place.shard,
                part: place.part,
                attempt: format!("{:016x}", crate::token::fresh_token()),
                digest: digest.to_string(),
            },
            files: BTreeMap::new(),
            objects: BTreeMap::new(),
            consumed: BTreeMap::new(),
        }
    }

    /// The tag of a file this attempt writes at `place` (its own, or with a partition).
    pub fn tag_for(&self, place: Place) -> Tag {
        Tag {
            shard: place.shard,
            part: place.part,
            ..self.tag.clone()
        }
    }

    /// Records a file this attempt wrote.
    pub fn wrote(&mut self, w: Written) {
        if let Some(object) = w.object {
            self.objects.insert(w.rel.clone(), object);
        }
        self.files.insert(w.rel, format!("{:08x}", w.crc));
    }

    /// Records that this attempt read the summary `rel` of `producer`.
    pub fn read(&mut self, rel: &str, producer: &Lineage) {
        self.consumed
            .insert(rel.to_string(), producer.tag.attempt.clone());
    }

    /// Checks the summary at `path` (whose lineage this is) against its place, the run and
    /// the options of `run.json`.
    pub fn check(&self, path: &Path, run: &str, digest: &str, place: Place) -> Result<()> {
        let t = &self.tag;
        if t.run != run {
            bail!(
                "{} belongs to another run (run {}; this work directory's run is {run}); run \
                 that stage again",
                display_path(path),
                t.run
            );
        }
        if !t.place_is(place) {
            bail!(
                "{} was written by {}, not {place}: it is in another task's place; run {place} \
                 again",
                display_path(path),
                t.place()
            );
        }
        if t.digest != digest {
            bail!(
                "{} was made with other options than run.json's (digest {}, run.json's {digest}); \
                 run {place} again",
                display_path(path),
                t.digest
            );
        }
        Ok(())
    }

    /// Checks a Parquet file's tag (`found`) against this producer and the file's `place`,
    /// and its CRC-32 against the one this producer recorded for `rel`.
    pub fn check_file(
        &self,
        path: &Path,
        rel: &str,
        found: Option<&Tag>,
        place: Place,
        crc: impl FnOnce() -> Result<u32>,
    ) -> Result<()> {
        let shown = display_path(path);
        let Some(found) = found else {
            bail!("{shown} was not written by a dupfind stage (it has no lineage)");
        };
        if found.run != self.tag.run {
            bail!(
                "{shown} belongs to another run (run {}; this work directory's run is {}): it was \
                 written with other options or inputs; run that stage again",
                found.run,
                self.tag.run
            );
        }
        if !found.place_is(place) {
            bail!(
                "{shown} was written for {}, not {place}: it is misplaced; run {place} again",
                found.place()
            );
        }
        if found.attempt != self.tag.attempt || found.digest != self.tag.digest {
            bail!(
                "{shown} was written by another attempt of its stage ({}) than the one whose \
                 summary is in place ({}): a leftover of a stage run again; run {place} again",
                found.attempt,
                self.tag.attempt
            );
        }
        let Some(want) = self.files.get(rel) else {
            bail!("{shown} is not among the files its stage's summary lists; run {place} again");
        };
        let got = format!("{:08x}", crc()?);
        if &got != want {
            bail!(
                "{shown} is damaged: its CRC-32 is {got}, its stage recorded {want}; run {place} \
                 again"
            );
        }
        Ok(())
    }
}

/// The work-relative name of `path` (every work file is below the work directory).
pub fn rel(work: &Path, path: &Path) -> String {
    let r = path.strip_prefix(work).unwrap_or(path);
    r.to_string_lossy().into_owned()
}

/// The seal of a summary: the JSON object's last field, `"seal": "xxxxxxxx"`, the CRC-32 of
/// every byte before it. `json` is the object as serialized (ending in `}`); the result is the
/// sealed file's bytes.
pub fn seal(json: &[u8], pretty: bool) -> Vec<u8> {
    let mut out = json.to_vec();
    while out.last().is_some_and(|b| b.is_ascii_whitespace()) {
        out.pop();
    }
    out.pop(); // the closing brace
    while out.last().is_some_and(|b| b.is_ascii_whitespace()) {
        out.pop();
    }
    out.extend_from_slice(if pretty { b",\n  " } else { b"," });
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(format!("\"seal\": \"{crc:08x}\"").as_bytes());
    out.extend_from_slice(if pretty { b"\n}\n" } else { b"}\n" });
    out
}

/// Checks the seal of a summary's bytes; `Err` says what is wrong.
pub fn check_seal(bytes: &[u8]) -> std::result::Result<(), &'static str> {
    const KEY: &[u8] = b"\"seal\": \"";
    let Some(at) = bytes.windows(KEY.len()).rposition(|w| w == KEY) else {
        return Err("it is not sealed");
    };
    let hex = &bytes[at + KEY.len()..];
    let (hex, rest) = hex.split_at(hex.len().min(8));
    if !matches!(rest, b"\"\n}\n" | b"\"}\n") {
        return Err("its seal is not its last field");
    }
    let want = std::str::from_utf8(hex)
        .ok()
        .and_then(|h| u32::from_str_radix(h, 16).ok());
    if want != Some(crc32fast::hash(&bytes[..at])) {
        return Err("its seal does not match its contents");
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_summary_is_json_and_any_changed_byte_breaks_its_seal() {
        let v = serde_json::json!({"a": 1, "b": "x"});
        for pretty in [true, false] {
            let json = if pretty {
                serde_json::to_vec_pretty(&v).unwrap()
            } else {
                serde_json::to_vec(&v).unwrap()
            };
            let sealed = seal(&json, pretty);
            assert_eq!(check_seal(&sealed), Ok(()));
            let back: serde_json::Value = serde_json::from_slice(&sealed).unwrap();
            assert_eq!(back["a"], 1);
            assert!(back["seal"].is_string());
            for i in 0..sealed.len() {
                let mut bad = sealed.clone();
                bad[i] ^= 0x01;
                assert!(check_seal(&bad).is_err(), "byte {i} of {pretty}");
            }
        }
        assert!(check_seal(b"{\"a\": 1}\n").is_err());
    }

    #[test]
    fn python_sealing_gives_the_same_bytes() {
        // contrib/staged/workfiles.py seals json.dumps(obj, indent=2) the same way.
        let python = b"{\n  \"a\": 1\n}";
        let sealed = seal(python, true);
        let text = String::from_utf8(sealed.clone()).unwrap();
        assert!(text.starts_with("{\n  \"a\": 1,\n  \"seal\": \""), "{text}");
        assert_eq!(check_seal(&sealed), Ok(()));
    }
}
