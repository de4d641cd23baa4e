//! The corpus of a scan: every document by id, with its result and signature. With an index,
//! its documents come first (ids `0..first_new`), then the inputs read now, in input order.

use crate::ingest::worker::{DocResult, Outcome};
use crate::input::walk::FileEntry;
use crate::messages::{display_path, InputError, Messages};
use crate::sketch::bottomk::Sketches;

/// A sorted (or, kept from the first pass, unsorted) shingle set.
pub type Set = Box<[u64]>;

/// The documents of a scan, by id.
pub struct Corpus {
    /// Where each document came from (a file, or a record of a dump).
    pub files: Vec<FileEntry>,
    /// What the first pass found of each (content hash, size, fingerprint, outcome).
    pub docs: Vec<DocResult>,
    /// MinHash signatures, `lanes` values per document.
    pub sigs: Vec<u32>,
    /// Signature values per document.
    pub lanes: usize,
    /// `--sketch bottom-k`: each document's sketch (off otherwise).
    pub bottom: Sketches,
    /// Documents below this id come from the index scanned against (read through
    /// [`Corpus::is_new`], [`Corpus::new_ids`] and [`Corpus::indexed`]).
    first_new: u32,
}

/// What the first pass says about the documents it could not sketch.
#[derive(Debug, Default)]
pub struct Outcomes {
    /// A NUL byte near the start.
    pub binary: u64,
    /// No longer a regular file when opened.
    pub not_regular: u64,
    /// Under `--min-size` when opened.
    pub too_short: u64,
    /// Over `--max-size` when opened or read.
    pub too_large: u64,
    /// Could not be read.
    pub errors: Vec<InputError>,
}

impl Corpus {
    /// Documents of one pass (none of them indexed): `lanes` signature values each in `sigs`.
    pub fn new(
        files: Vec<FileEntry>,
        docs: Vec<DocResult>,
        sigs: Vec<u32>,
        lanes: usize,
        bottom: Sketches,
    ) -> Corpus {
        Corpus {
            files,
            docs,
            sigs,
            lanes,
            bottom,
            first_new: 0,
        }
    }

    /// No documents.
    pub fn empty(lanes: usize) -> Corpus {
        Corpus::new(
            Vec::new(),
            Vec::new(),
            Vec::new(),
            lanes,
            Sketches::default(),
        )
    }

    /// The indexed documents (`files`, `docs`, `sigs`; possibly none) followed by `new` ones.
    pub fn assemble(indexed: Corpus, new: Corpus) -> Corpus {
        let mut c = indexed;
        c.first_new = c.files.len() as u32;
        // Without an index the first pass's vectors are taken as they are (signatures are most
        // of the memory, and extending an empty vector would copy them).
        append(&mut c.files, new.files);
        append(&mut c.docs, new.docs);
        append(&mut c.sigs, new.sigs);
        c.bottom = new.bottom;
        c
    }

    /// Takes the first `n` documents as indexed ones: a staged verify task's partition, whose
    /// indexed documents come first by id, as [`Corpus::assemble`] puts them.
    pub fn with_indexed(mut self, n: u32) -> Corpus {
        self.first_new = n;
        self
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Number of indexed documents (the first ids).
    pub fn indexed(&self) -> u32 {
        self.first_new
    }

    /// True when `d` was read by this scan, not taken from the index.
    pub fn is_new(&self, d: u32) -> bool {
        d >= self.first_new
    }

    /// The ids of the documents read by this scan, in order.
    pub fn new_ids(&self) -> std::ops::Range<u32> {
        self.first_new..self.len() as u32
    }

    /// The first pass's results of the documents read by this scan.
    pub fn new_docs(&self) -> &[DocResult] {
        &self.docs[self.first_new as usize..]
    }

    /// The sets the first pass kept (for exact verification), taken out of the results so that
    /// verification can consume them while the rest is read by the judge.
    pub fn take_kept_sets(&mut self) -> Vec<Option<Set>> {
        self.docs.iter_mut().map(|d| d.set.take()).collect()
    }

    /// Counts what became of the documents that were not sketched, warning about those too
    /// large or unreadable (in document order).
    pub fn outcomes(&self, max_size: u64, msgs: &Messages) -> Outcomes {
        let mut out = Outcomes::default();
        for (file, doc) in self.files.iter().zip(&self.docs) {
            if doc.json_lines {
                msgs.warn(&format!(
                    "{}: holds JSON Lines (one JSON value a line) but is named .json, so it was \
                     read as one document; rename it *.jsonl to read each line as a document \
                     (or give --dumps always when every input is a dump)",
                    display_path(&file.path)
                ));
            }
            match &doc.outcome {
                Outcome::Sketched | Outcome::Duplicate | Outcome::Empty => {}
                Outcome::Binary => out.binary += 1,
                Outcome::NotRegular => out.not_regular += 1,
                Outcome::TooShort => out.too_short += 1,
                Outcome::TooLarge(n) => {
                    out.too_large += 1;
                    msgs.warn(&format!(
                        "{}: skipped, {n} bytes is over --max-size {max_size}",
                        display_path(&file.path)
                    ));
                }
                Outcome::GrewTooLarge(n) => {
                    out.too_large += 1;
                    msgs.warn(&format!(
                        "{}: skipped, {n} bytes or more when read (over --max-size)",
                        display_path(&file.path)
                    ));
                }
                Outcome::Failed(reason) => {
                    msgs.warn(&format!("{}: {reason}", display_path(&file.path)));
                    out.errors.push(file.error(None, reason.clone()));
                }
            }
        }
        out
    }
}

/// `v` followed by `more`, moving `more` when `v` is empty.
fn append<T>(v: &mut Vec<T>, mut more: Vec<T>) {
    if v.is_empty() {
        *v = more;
    } else {
        v.append(&mut more);
    }
}
