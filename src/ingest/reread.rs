//! Reading a document again after the first pass: its bytes (a dump record's from the spill),
//! checked against the content hash the first pass saw, then its shingle set or its token
//! sequence. Verification and the index update call this; an indexed document's set comes from
//! the index instead.

use rayon::prelude::*;
use xxhash_rust::xxh3::xxh3_128;

use crate::input::read::{decode, Decoded, ReadFailure};
use crate::input::walk::FileEntry;
use crate::sketch::shingle::{into_set, Shingler};

use super::worker::{DocWorker, Engine};
use crate::budget::Grant;

impl<'a> DocWorker<'a> {
    /// Reads a document's content again into the worker's buffer (a dump record's text from the
    /// spill); it must still hash to `hash`. The memory budget's grant for it comes back, to be
    /// held while the text is shingled.
    fn reread(&mut self, doc: u32, file: &FileEntry, hash: u128) -> Result<Grant<'a>, String> {
        const CHANGED: &str = "file changed during the scan";
        let engine: &'a Engine = self.engine;
        self.rereading = true;
        let size = file.size.min(engine.limits.max);
        let cost = engine.document_cost(size, 0, size, true);
        let mut grant = engine.budget.reserve(cost).map_err(|o| o.reason_again())?;
        if file.record.is_some() || self.engine.spill.holds(doc) {
            self.engine.spill.read(doc, &mut self.buf)?;
        } else {
            self.read(file, &mut grant).map_err(|f| match f {
                ReadFailure::Error(e) => e,
                _ => CHANGED.to_string(),
            })?;
        }
        if xxh3_128(&self.buf) != hash {
            return Err(CHANGED.to_string());
        }
        Ok(grant)
    }

    /// The document's content read again, checked against `hash` (the staged pipeline carries
    /// it from the route stage to the verify stage).
    pub fn content(&mut self, doc: u32, file: &FileEntry, hash: u128) -> Result<Vec<u8>, String> {
        let _grant = self.reread(doc, file, hash)?;
        let content = self.buf.clone();
        self.trim();
        Ok(content)
    }

    /// Reads a document again for verification and returns its shingle set; the content must
    /// still hash to `hash`. An indexed document's set comes from the index.
    pub fn load_set(
        &mut self,
        doc: u32,
        file: &FileEntry,
        hash: u128,
    ) -> Result<Box<[u64]>, String> {
        if let Some(indexed) = &self.engine.indexed {
            if doc < indexed.count() {
                return indexed.read(doc);
            }
        }
        let grant = self.reread(doc, file, hash)?;
        let mut shingles = std::mem::take(&mut self.shingles);
        shingles.clear();
        if let Some(text) = text_of(&self.buf, file) {
            self.shingler.shingle(&text, &mut shingles);
        }
        into_set(&mut shingles);
        let set = shingles.as_slice().into();
        self.shingles = shingles;
        self.trim();
        drop(grant);
        Ok(set)
    }

    /// Reads a document again only to check that its content still hashes to `hash`: the
    /// errors of [`DocWorker::load_set`], without deriving the set (strict clustering reads the
    /// members verification never compared for those errors alone). An indexed document's set
    /// is read from the index, as `load_set` reads it.
    pub fn check_content(&mut self, doc: u32, file: &FileEntry, hash: u128) -> Result<(), String> {
        if (self.engine.indexed.as_ref()).is_some_and(|ix| doc < ix.count()) {
            return self.load_set(doc, file, hash).map(drop);
        }
        let grant = self.reread(doc, file, hash)?;
        self.trim();
        drop(grant);
        Ok(())
    }

    /// Reads a document again for edit verification and returns its token sequence: the
    /// xxh3-64 hash of each normalized token, in text order. The content must still hash to
    /// `hash`. (An index stores sets, not sequences; `--verify edit` cannot be used with one.)
    pub fn load_tokens(
        &mut self,
        doc: u32,
        file: &FileEntry,
        hash: u128,
    ) -> Result<Box<[u64]>, String> {
        if self
            .engine
            .indexed
            .as_ref()
            .is_some_and(|ix| doc < ix.count())
        {
            return Err("an indexed document has no token sequence".to_string());
        }
        let grant = self.reread(doc, file, hash)?;
        let mut tokens = Vec::new();
        if let Some(text) = text_of(&self.buf, file) {
            self.shingler
                .for_each_token(&text, |t| tokens.push(xxhash_rust::xxh3::xxh3_64(t)));
        }
        self.trim();
        drop(grant);
        Ok(tokens.into_boxed_slice())
    }
}

/// A document's text read again: a record's as it is (it came from a JSON string, so it is
/// UTF-8 and never sniffed for binary); a file's decoded as in the first pass.
fn text_of<'b>(buf: &'b [u8], file: &FileEntry) -> Option<std::borrow::Cow<'b, str>> {
    text_of_kind(buf, file.record.is_some())
}

/// The sorted shingle set of a document's content (`record`: a dump record's text), derived
/// as verification derives it from a file read again: the index derives the sets of the
/// contents it stores with this.
pub fn set_of_content(shingler: &mut Shingler, content: &[u8], record: bool) -> Box<[u64]> {
    let mut shingles = Vec::new();
    if let Some(text) = text_of_kind(content, record) {
        shingler.shingle(&text, &mut shingles);
    }
    into_set(&mut shingles);
    shingles.into_boxed_slice()
}

fn text_of_kind(buf: &[u8], record: bool) -> Option<std::borrow::Cow<'_, str>> {
    match record {
        true => std::str::from_utf8(buf)
            .ok()
            .map(std::borrow::Cow::Borrowed),
        false => match decode(buf) {
            Decoded::Text(text) => Some(text),
            Decoded::Binary => None,
        },
    }
}

/// A document's sorted shingle set (or token sequence), or why it could not be derived again.
pub type LoadedSet = Result<Box<[u64]>, String>;

/// Loads the shingle sets of `docs` (id and content hash) in parallel, in the order given; a
/// file that cannot be read again or changed since it was sketched gives the reason instead.
pub fn load_sets(
    engine: &Engine,
    files: &[FileEntry],
    docs: &[(u32, u128)],
) -> Vec<(u32, LoadedSet)> {
    load_all(engine, files, docs, |w, d, f, h| w.load_set(d, f, h))
}

/// Loads the token sequences of `docs` ([`DocWorker::load_tokens`]) as [`load_sets`] loads sets.
pub fn load_token_seqs(
    engine: &Engine,
    files: &[FileEntry],
    docs: &[(u32, u128)],
) -> Vec<(u32, LoadedSet)> {
    load_all(engine, files, docs, |w, d, f, h| w.load_tokens(d, f, h))
}

/// Checks the contents of `docs` ([`DocWorker::check_content`]) as [`load_sets`] loads sets.
pub fn check_contents(
    engine: &Engine,
    files: &[FileEntry],
    docs: &[(u32, u128)],
) -> Vec<(u32, Result<(), String>)> {
    load_all(engine, files, docs, |w, d, f, h| w.check_content(d, f, h))
}

fn load_all<T: Send>(
    engine: &Engine,
    files: &[FileEntry],
    docs: &[(u32, u128)],
    load: impl Fn(&mut DocWorker, u32, &FileEntry, u128) -> T + Sync,
) -> Vec<(u32, T)> {
    docs.par_iter()
        .map_init(
            || DocWorker::new(engine),
            |w, &(d, hash)| (d, load(w, d, &files[d as usize], hash)),
        )
        .collect()
}
