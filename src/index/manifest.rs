//! The manifest: the small file that names an index's generation, identity, parameters and
//! segments. A commit replaces it whole (a fresh temporary file, fsync, rename over
//! `manifest`, fsync of the directory), so the rename is the one commit point of every write.
//!
//! The file is one line `dupfind-index-manifest 2 <xxh3-64 of the rest, 16 hex digits>` and
//! then JSON, so that people and other tools can read it (`tail -n +2 manifest | jq`).

use std::io::Read;

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::xxh3_64;

use crate::index::dir::IndexDir;
use crate::index::segment::{data_name, table_name, Expected};
use crate::index::store::IndexParams;
use crate::messages::display_path;

/// The manifest's file name.
pub const MANIFEST: &str = "manifest";
/// The format version of an index made of a manifest and segments.
pub const FORMAT_VERSION: u32 = 2;
/// The first word of a manifest.
const TAG: &str = "dupfind-index-manifest";
/// A manifest larger than this is refused unread (one segment takes about 300 bytes).
const MAX_BYTES: u64 = 64 << 20;

/// An index's current state.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// 2.
    pub format_version: u32,
    /// Random, set when the index is built (or upgraded from format 1): a rebuilt index is
    /// another index even at the same generation.
    #[serde(with = "hex128")]
    pub index_id: u128,
    /// 1 when built, one more at each commit.
    pub generation: u64,
    /// The number the next segment gets (numbers are never reused).
    pub next_segment: u64,
    /// The parameters of every segment's signatures and keys.
    pub params: IndexParams,
    /// The live segments, oldest first.
    pub segments: Vec<SegmentEntry>,
}

/// A live segment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentEntry {
    /// Its number.
    pub number: u64,
    /// `seg-NNNNNN.dfs`.
    pub file: String,
    /// The file's length.
    pub bytes: u64,
    /// The xxh3-64 of its header.
    #[serde(with = "hex64")]
    pub header_sum: u64,
    /// Its rows.
    pub documents: u64,
    /// Documents of older segments it removes.
    pub tombstones: u64,
    /// `seg-NNNNNN.docs.parquet`, its document table.
    pub table: String,
    /// The table's length and xxh3-64.
    pub table_bytes: u64,
    #[serde(with = "hex64")]
    pub table_sum: u64,
}

impl SegmentEntry {
    /// What the segment file must be.
    pub fn expected(&self, index_id: u128, lanes: usize) -> Expected {
        Expected {
            number: self.number,
            bytes: self.bytes,
            header_sum: self.header_sum,
            index_id,
            lanes,
        }
    }
}

impl Manifest {
    /// The manifest's bytes.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let mut body = serde_json::to_vec_pretty(self)?;
        body.push(b'\n');
        Ok(seal(&body))
    }

    /// Decodes and checks a manifest's bytes.
    pub fn decode(bytes: &[u8]) -> Result<Manifest> {
        let nl = bytes
            .iter()
            .position(|&b| b == b'\n')
            .context("not a dupfind index manifest (no first line)")?;
        let first = std::str::from_utf8(&bytes[..nl]).unwrap_or("");
        let mut words = first.split(' ');
        if words.next() != Some(TAG) {
            bail!("not a dupfind index manifest (bad first line)");
        }
        let version = words.next().unwrap_or("");
        if version != FORMAT_VERSION.to_string() {
            bail!("index format version {version} is not supported; this build reads version {FORMAT_VERSION} (and 1)");
        }
        let sum = words.next().context("corrupt manifest: no checksum")?;
        let body = &bytes[nl + 1..];
        if sum != format!("{:016x}", xxh3_64(body)) || words.next().is_some() {
            bail!("corrupt manifest: checksum mismatch");
        }
        let m: Manifest = serde_json::from_slice(body).context("corrupt manifest: not its JSON")?;
        m.check()?;
        Ok(m)
    }

    fn check(&self) -> Result<()> {
        if self.format_version != FORMAT_VERSION || self.generation == 0 {
            bail!("corrupt manifest: impossible version or generation");
        }
        self.params.check().context("corrupt manifest")?;
        let mut seen = std::collections::HashSet::new();
        for s in &self.segments {
            if s.file != data_name(s.number) || s.table != table_name(s.number) {
                bail!(
                    "corrupt manifest: segment {} is not named as segments are",
                    s.number
                );
            }
            if s.number >= self.next_segment || !seen.insert(s.number) {
                bail!(
                    "corrupt manifest: segment {} is listed twice or out of range",
                    s.number
                );
            }
        }
        Ok(())
    }

    /// A new index's manifest at `generation`, under a new identity, with no segment yet.
    pub fn fresh(params: IndexParams, generation: u64) -> Manifest {
        Manifest {
            format_version: FORMAT_VERSION,
            index_id: new_index_id(),
            generation,
            next_segment: 1,
            params,
            segments: Vec::new(),
        }
    }

    /// Takes the number of a new segment: the first from `next_segment` whose names nothing in
    /// `dir` holds (a directory another user made under a segment's name, which no sweep
    /// removes, would stop the rename that puts the segment in place); an error rather than a
    /// wrap past u64::MAX, which a forged manifest could ask for.
    pub fn take_segment(&mut self, dir: &IndexDir) -> Result<u64> {
        let used_up = || {
            anyhow!(
                "{}: its next segment number, {}, leaves none for a new segment (a damaged or \
                 forged manifest); build the index again",
                display_path(&dir.join(MANIFEST)),
                self.next_segment
            )
        };
        let mut number = self.next_segment;
        while dir.kind(&data_name(number))?.is_some() || dir.kind(&table_name(number))?.is_some() {
            number = number.checked_add(1).ok_or_else(used_up)?;
        }
        self.next_segment = number.checked_add(1).ok_or_else(used_up)?;
        Ok(number)
    }

    /// The next generation's number; an error rather than a wrap past u64::MAX.
    pub fn next_generation(&self) -> Result<u64> {
        self.generation.checked_add(1).ok_or_else(|| {
            anyhow!(
                "the index is at generation {}, the last there can be; build it again",
                self.generation
            )
        })
    }
}

/// A manifest's bytes around `body`: the first line, with its checksum, then `body`.
pub fn seal(body: &[u8]) -> Vec<u8> {
    let mut out = format!("{TAG} {FORMAT_VERSION} {:016x}\n", xxh3_64(body)).into_bytes();
    out.extend_from_slice(body);
    out
}

/// The manifest of `dir`; None when it has none.
pub fn read(dir: &IndexDir) -> Result<Option<Manifest>> {
    Ok(read_sized(dir)?.map(|(m, _)| m))
}

/// The manifest of `dir` and its length in bytes; None when it has none.
pub fn read_sized(dir: &IndexDir) -> Result<Option<(Manifest, u64)>> {
    let path = dir.join(MANIFEST);
    let Some(mut file) = dir.open_file(MANIFEST)? else {
        return Ok(None);
    };
    let shown = display_path(&path);
    let len = file
        .metadata()
        .with_context(|| format!("reading {shown}"))?
        .len();
    if len > MAX_BYTES {
        bail!("{shown}: corrupt manifest: {len} bytes is not a manifest's size");
    }
    let mut bytes = Vec::with_capacity(len as usize);
    (&mut file)
        .take(MAX_BYTES)
        .read_to_end(&mut bytes)
        .with_context(|| format!("reading {shown}"))?;
    let m = Manifest::decode(&bytes).with_context(|| shown.to_string())?;
    Ok(Some((m, bytes.len() as u64)))
}

/// Writes `m` to a fresh temporary file in `dir`, synced, with the permissions
/// [`crate::index::dir::new_file_mode`] gives for `mode` (the manifest's it replaces); returns
/// its name.
pub fn write_temp(dir: &IndexDir, m: &Manifest, mode: Option<u32>) -> Result<String> {
    let bytes = m.encode()?;
    let (temp, file) = dir.create_temp(MANIFEST, mode)?;
    let io = || format!("writing {}", display_path(&dir.join(&temp)));
    let written = std::io::Write::write_all(&mut &file, &bytes)
        .with_context(io)
        .and_then(|()| file.sync_all().with_context(io));
    if let Err(e) = written {
        let _ = dir.remove(&temp);
        return Err(e);
    }
    Ok(temp)
}

/// A new index's identity: random (from the standard library's per-process hash keys, which
/// the OS seeds), mixed with the clock and the process id.
pub fn new_index_id() -> u128 {
    use std::hash::{BuildHasher, Hasher};
    let mut a = std::collections::hash_map::RandomState::new().build_hasher();
    a.write_u64(crate::token::fresh_token());
    let mut b = std::collections::hash_map::RandomState::new().build_hasher();
    b.write_u64(a.finish());
    (u128::from(a.finish()) << 64) | u128::from(b.finish())
}

mod hex64 {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{v:016x}"))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        let s = String::deserialize(d)?;
        u64::from_str_radix(&s, 16).map_err(serde::de::Error::custom)
    }
}

mod hex128 {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &u128, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{v:032x}"))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u128, D::Error> {
        let s = String::deserialize(d)?;
        u128::from_str_radix(&s, 16).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    pub(crate) fn sample() -> Manifest {
        Manifest {
            format_version: 2,
            index_id: u128::MAX - 9,
            generation: 3,
            next_segment: 4,
            params: IndexParams {
                method: "minhash".into(),
                shingle: "word".into(),
                ngram: 5,
                num_perm: 4,
                sketch: "oph".into(),
                bands: 2,
                rows: 2,
                seed: 0,
                hashing: 2,
                max_distance: 0,
                normalize: "none".into(),
            },
            segments: vec![SegmentEntry {
                number: 3,
                file: data_name(3),
                bytes: 1000,
                header_sum: u64::MAX,
                documents: 5,
                tombstones: 1,
                table: table_name(3),
                table_bytes: 10,
                table_sum: 0,
            }],
        }
    }

    #[test]
    fn manifests_round_trip_and_damage_or_forgery_is_refused() {
        let m = sample();
        let b = m.encode().unwrap();
        assert_eq!(Manifest::decode(&b).unwrap(), m);
        for i in 0..b.len() {
            let mut bad = b.clone();
            bad[i] ^= 0x20;
            assert!(Manifest::decode(&bad).is_err(), "byte {i}");
        }
        assert!(Manifest::decode(&b[..b.len() - 1]).is_err());
        // Re-checksummed forgeries that name files other than segments.
        for forge in [
            |m: &mut Manifest| m.segments[0].file = "../../etc/passwd".into(),
            |m: &mut Manifest| m.segments[0].number = 9,
            |m: &mut Manifest| m.generation = 0,
            |m: &mut Manifest| m.segments.push(m.segments[0].clone()),
        ] {
            let mut f = sample();
            forge(&mut f);
            assert!(Manifest::decode(&f.encode().unwrap()).is_err());
        }
        let mut last = sample();
        last.generation = u64::MAX;
        assert!(last.next_generation().is_err());
        assert_ne!(new_index_id(), new_index_id());
    }

    #[test]
    fn segment_numbers_skip_names_taken_and_never_wrap() {
        let t = tempfile::tempdir().unwrap();
        let dir = IndexDir::open(t.path()).unwrap().unwrap();
        std::fs::create_dir(t.path().join(data_name(4))).unwrap();
        std::fs::write(t.path().join(table_name(5)), "").unwrap();
        let mut m = sample();
        assert_eq!(m.take_segment(&dir).unwrap(), 6);
        assert_eq!(m.take_segment(&dir).unwrap(), 7);
        assert_eq!(m.next_segment, 8);
        // A forged manifest whose next number is the last there is: an error, nothing taken.
        m.next_segment = u64::MAX;
        let e = m.take_segment(&dir).unwrap_err();
        assert!(
            format!("{e:#}").contains(
                "its next segment number, 18446744073709551615, leaves none for a new segment"
            ),
            "{e:#}"
        );
        assert_eq!(m.next_segment, u64::MAX);
    }

    #[test]
    fn forged_parameters_are_refused_before_keys_are_cut_with_them() {
        // Each would be a table per band or piece: billions of them, or an overflow.
        for forge in [
            |m: &mut Manifest| {
                m.params.num_perm = 1 << 30;
                m.params.bands = 1 << 30;
                m.params.rows = 1;
            },
            |m: &mut Manifest| m.params.bands = 3,
            |m: &mut Manifest| {
                m.params.method = "simhash".into();
                m.params.max_distance = u32::MAX;
            },
            |m: &mut Manifest| m.params.method = "minhash2".into(),
        ] {
            let mut f = sample();
            forge(&mut f);
            let e = Manifest::decode(&f.encode().unwrap()).unwrap_err();
            assert!(
                format!("{e:#}").starts_with("corrupt manifest: its "),
                "{e:#}"
            );
        }
        let mut simhash = sample();
        simhash.params.method = "simhash".into();
        simhash.params.max_distance = 31;
        assert!(Manifest::decode(&simhash.encode().unwrap()).is_ok());
    }
}
