//! One object: its bytes by range requests, whole, or streamed as they arrive.
//!
//! Range reads (a Parquet dump's footer, page headers and column chunks; a plain dump's records
//! read again) go through a few cached windows: a read that misses fetches a window from its
//! offset on, as far as the range the reader said it wants ([`Object::want`]: the column chunks
//! it decodes) or [`WINDOW`] bytes, so that the page headers and pages read one after another
//! cost one request, and no column that is not read is fetched. Near the end of the object the
//! window reaches back to the footer's likely start.

use std::io::Read;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures::StreamExt;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt};

use super::client;

/// Bytes fetched at once by a range read that misses the windows: large enough that reading a
/// column chunk page by page costs a request every few MB, small enough that [`WINDOWS`] of
/// them stay a small part of any memory budget.
pub const WINDOW: u64 = 4 << 20;
/// Windows kept: one per column read side by side (the text, the id, `--keep-by`'s) and one
/// for the footer.
const WINDOWS: usize = 4;
/// A miss this close to the end fetches the object's tail: the footer and its length.
const TAIL: u64 = 64 << 10;

/// An object of a store, by its URL: cloning shares its windows.
#[derive(Clone)]
pub struct Object {
    inner: Arc<Inner>,
}

struct Inner {
    url: String,
    store: Arc<dyn ObjectStore>,
    key: object_store::path::Path,
    size: u64,
    cache: Mutex<Cache>,
}

#[derive(Default)]
struct Cache {
    /// (offset, bytes), the most recently used last.
    windows: Vec<(u64, Bytes)>,
    /// Ranges (start, end) the reader will read, sorted: a window stops at the end of its own.
    wanted: Vec<(u64, u64)>,
    /// How much of a wanted range a miss fetches: [`WINDOW`] when the ranges are read whole,
    /// [`TAIL`] when only their page headers are.
    window: u64,
}

impl std::fmt::Debug for Object {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Object({}, {} bytes)", self.inner.url, self.inner.size)
    }
}

impl Object {
    /// The object at `url` whose size a listing gave: no request until it is read.
    pub fn listed(url: &str, size: u64) -> Result<Object, String> {
        let parsed = client::parse(url)?;
        let store = client::store(&parsed.base)?;
        Ok(Object::with(url, store, parsed.key, size))
    }

    fn with(
        url: &str,
        store: Arc<dyn ObjectStore>,
        key: object_store::path::Path,
        size: u64,
    ) -> Object {
        Object {
            inner: Arc::new(Inner {
                url: url.to_string(),
                store,
                key,
                size,
                cache: Mutex::new(Cache::default()),
            }),
        }
    }

    pub fn size(&self) -> u64 {
        self.inner.size
    }

    /// The ranges (start, length) a reader is about to read: a window that misses stops at the
    /// end of the range it starts in, so that nothing between them is fetched.
    /// `headers`: only their page headers are read (a small window at each), not the whole.
    pub fn want(&self, ranges: &[(u64, u64)], headers: bool) {
        if let Ok(mut c) = self.inner.cache.lock() {
            c.wanted = ranges
                .iter()
                .map(|&(s, l)| (s, s.saturating_add(l)))
                .collect();
            c.wanted.sort_unstable();
            c.window = if headers { TAIL } else { WINDOW };
        }
    }

    /// The most memory the windows hold at once.
    pub const fn buffered() -> u64 {
        WINDOW * WINDOWS as u64
    }

    /// Reads at `offset` into `buf`; 0 at the end.
    pub fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        if offset >= self.inner.size || buf.is_empty() {
            return Ok(0);
        }
        let window = self.window(offset, buf.len() as u64)?;
        let (start, bytes) = window;
        let from = (offset - start) as usize;
        let n = (bytes.len() - from).min(buf.len());
        buf[..n].copy_from_slice(&bytes[from..from + n]);
        Ok(n)
    }

    /// A window holding `offset`, from the cache or fetched.
    fn window(&self, offset: u64, len: u64) -> std::io::Result<(u64, Bytes)> {
        let size = self.inner.size;
        let (start, end) = {
            let mut c = self.inner.cache.lock().map_err(|_| poisoned())?;
            let hit = c
                .windows
                .iter()
                .position(|(s, b)| *s <= offset && offset < s + b.len() as u64);
            if let Some(i) = hit {
                let w = c.windows.remove(i);
                c.windows.push(w.clone());
                return Ok(w);
            }
            let wanted_end = c
                .wanted
                .iter()
                .find(|&&(s, e)| s <= offset && offset < e)
                .map(|&(_, e)| e);
            let end = match wanted_end {
                Some(e) => e.min(offset.saturating_add(c.window.max(len))),
                None => offset.saturating_add(WINDOW.min(TAIL).max(len)),
            };
            let end = end.min(size);
            if size - offset <= TAIL && wanted_end.is_none() {
                (size.saturating_sub(TAIL).min(offset), size)
            } else {
                (offset, end)
            }
        };
        let bytes = self.get_range(start, end)?;
        let mut c = self.inner.cache.lock().map_err(|_| poisoned())?;
        if c.windows.len() >= WINDOWS {
            c.windows.remove(0);
        }
        c.windows.push((start, bytes.clone()));
        Ok((start, bytes))
    }

    /// Bytes `start..end`, one request (or none, when they were fetched before: [`kept`]); an
    /// object shorter than they reach is an error.
    fn get_range(&self, start: u64, end: u64) -> std::io::Result<Bytes> {
        let i = &self.inner;
        if let Some(bytes) = kept::read(&i.url, i.size, start, end) {
            return Ok(bytes);
        }
        // The whole object (a small one, read by its tail window) is a plain GET.
        let bytes = if start == 0 && end == i.size {
            self.range_of_whole(start, end)?
        } else {
            let got = client::block_on(i.store.get_range(&i.key, start..end)).map_err(other)?;
            client::count(1, end - start);
            match got {
                Err(object_store::Error::NotSupported { .. }) => self.range_of_whole(start, end)?,
                got => got.map_err(|e| other(client::reason(&e)))?,
            }
        };
        if (bytes.len() as u64) < end - start {
            return Err(other(format!(
                "object is shorter ({} bytes read at {start}) than listed ({} bytes): changed \
                 or truncated since",
                bytes.len(),
                i.size
            )));
        }
        kept::keep(&i.url, i.size, start, &bytes);
        Ok(bytes)
    }

    /// Bytes `start..end` of a plain GET of the whole object: all of them, or a range of a
    /// server that answered a range request with the whole object (a 200, as HTTP allows:
    /// python's http.server and many static servers ignore `Range`), which the client refuses.
    /// The bytes before `start` are read and dropped, and the request is dropped at `end`.
    fn range_of_whole(&self, start: u64, end: u64) -> std::io::Result<Bytes> {
        let (mut body, _) = self.open(0)?;
        let mut skip = start;
        let mut bytes = Vec::with_capacity((end - start) as usize);
        while (bytes.len() as u64) < end - start {
            let Some(chunk) = client::block_on(body.next()).map_err(other)? else {
                break;
            };
            let chunk = chunk.map_err(|e| other(client::reason(&e)))?;
            client::count(0, chunk.len() as u64);
            let from = skip.min(chunk.len() as u64);
            skip -= from;
            let want = (end - start) as usize - bytes.len();
            let rest = &chunk[from as usize..];
            bytes.extend_from_slice(&rest[..rest.len().min(want)]);
        }
        Ok(Bytes::from(bytes))
    }

    /// The object's bytes from `from` to its listed size, streamed, and how many bytes at the
    /// start of the stream come before `from`. From 0 it is a plain GET: the whole object is
    /// wanted, and a range asked for would gain nothing and be refused where the server
    /// ignores ranges. From further on, a range request; where the server answers it with the
    /// whole object, which the client refuses, a plain GET whose first `from` bytes the reader
    /// drops.
    fn open(&self, from: u64) -> std::io::Result<(Body, u64)> {
        let i = &self.inner;
        let size = i.size;
        let get = |range: Option<GetRange>| {
            let opts = GetOptions::new().with_range(range);
            let got = client::block_on(i.store.get_opts(&i.key, opts)).map_err(other);
            client::count(1, 0);
            got
        };
        let (got, skip) = match from {
            0 => (get(None)?, 0),
            _ => match get(Some(GetRange::Bounded(from..size)))? {
                Err(object_store::Error::NotSupported { .. }) => (get(None)?, from),
                got => (got, 0),
            },
        };
        let got = got.map_err(|e| other(client::reason(&e)))?;
        if got.meta.size != size {
            return Err(other(format!(
                "object changed since it was listed ({size} bytes then, {} now)",
                got.meta.size
            )));
        }
        Ok((got.into_stream(), skip))
    }

    /// The whole object into `buf` (one GET), refusing more than `max` bytes: a document.
    pub fn read_whole(&self, max: u64, buf: &mut Vec<u8>) -> Result<(), String> {
        buf.clear();
        if let Some(bytes) = super::prefetch::take(&self.inner.url) {
            if bytes.len() as u64 == self.inner.size {
                buf.extend_from_slice(&bytes);
                return Ok(());
            }
        }
        let mut stream = self.stream(0)?;
        let limit = max.saturating_add(1);
        (&mut stream)
            .take(limit)
            .read_to_end(buf)
            .map_err(|e| e.to_string())?;
        if buf.len() as u64 > max {
            return Err(format!(
                "object grew past --max-size {max} since it was listed"
            ));
        }
        if buf.len() as u64 != self.inner.size {
            return Err(format!(
                "object changed since it was listed ({} bytes then, {} now)",
                self.inner.size,
                buf.len()
            ));
        }
        Ok(())
    }

    /// The object from `from` to its listed size, streamed: its bytes are handed on as they
    /// arrive, never held whole. A window already fetched at `from` (the magic bytes' read)
    /// is handed on first and not fetched again.
    pub fn stream(&self, from: u64) -> Result<StreamRead, String> {
        let head = self
            .inner
            .cache
            .lock()
            .ok()
            .and_then(|c| {
                c.windows
                    .iter()
                    .find(|(s, b)| *s <= from && from < s + b.len() as u64)
                    .map(|(s, b)| b.slice((from - s) as usize..))
            })
            .unwrap_or_default();
        Ok(StreamRead {
            object: self.clone(),
            at: from + head.len() as u64,
            current: head,
            body: None,
            skip: 0,
        })
    }
}

/// An object read from an offset to its end, one streamed GET.
pub struct StreamRead {
    object: Object,
    /// The offset of the first byte after `current`.
    at: u64,
    current: Bytes,
    body: Option<Body>,
    /// Bytes of `body` still to drop before `at`: a server that ignores ranges sends the
    /// object from its start ([`Object::open`]).
    skip: u64,
}

type Body = futures::stream::BoxStream<'static, object_store::Result<Bytes>>;

impl Read for StreamRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let size = self.object.inner.size;
        while self.current.is_empty() {
            if self.at >= size {
                return Ok(0);
            }
            if self.body.is_none() {
                let (body, skip) = self.object.open(self.at)?;
                (self.body, self.skip) = (Some(body), skip);
            }
            let Some(body) = self.body.as_mut() else {
                return Ok(0);
            };
            match client::block_on(body.next()).map_err(other)? {
                Some(Ok(bytes)) => {
                    client::count(0, bytes.len() as u64);
                    let dropped = self.skip.min(bytes.len() as u64);
                    self.skip -= dropped;
                    let bytes = bytes.slice(dropped as usize..);
                    self.at += bytes.len() as u64;
                    self.current = bytes;
                }
                Some(Err(e)) => return Err(other(client::reason(&e))),
                None => {
                    return Err(other(format!(
                        "object ended at {} of its {size} bytes: truncated, or the connection \
                         was cut",
                        self.at
                    )))
                }
            }
        }
        let n = self.current.len().min(buf.len());
        buf[..n].copy_from_slice(&self.current[..n]);
        self.current = self.current.slice(n..);
        Ok(n)
    }
}

fn other(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> std::io::Error {
    std::io::Error::other(e)
}

fn poisoned() -> std::io::Error {
    other("an object's cache was poisoned by a panic")
}

/// The ranges of objects fetched by range requests, kept in a temporary file with no name (it
/// goes when the process does, however it ends) so that a second read of them costs no request:
/// verification reads the texts of a Parquet dump's candidates again, and `--write-dataset` its
/// rows, and each fetched the text column again (2.3 times the dump's bytes were fetched on the
/// 10k benchmark corpus). What is read again is then the version the first pass read. The disk,
/// not memory, holds them, as the spill holds a compressed dump's texts (`crate::input::spill`):
/// at most [`KEEP_MOST`] bytes; past it, ranges are fetched again.
mod kept {
    use std::collections::HashMap;
    use std::fs::File;
    use std::io::{Read, Seek, SeekFrom, Write};
    use std::sync::Mutex;

    use bytes::Bytes;

    pub const KEEP_MOST: u64 = 4 << 30;

    /// A range of an object kept: its start, its length, and where it is in the file.
    type Range = (u64, u64, u64);

    #[derive(Default)]
    struct Kept {
        /// None until a range is kept; None again if it cannot be written.
        file: Option<File>,
        written: u64,
        /// By object (URL and listed size).
        ranges: HashMap<(String, u64), Vec<Range>>,
        failed: bool,
    }

    static KEPT: Mutex<Option<Kept>> = Mutex::new(None);

    /// Bytes `start..end` of the object at `url` (of `size` bytes when listed), if a range kept
    /// holds them.
    pub fn read(url: &str, size: u64, start: u64, end: u64) -> Option<Bytes> {
        let mut guard = KEPT.lock().ok()?;
        let kept = guard.as_mut()?;
        let ranges = kept.ranges.get(&(url.to_string(), size))?;
        let &(s, _, at) = ranges
            .iter()
            .find(|&&(s, len, _)| s <= start && end <= s + len)?;
        let file = kept.file.as_mut()?;
        let mut buf = vec![0u8; (end - start) as usize];
        file.seek(SeekFrom::Start(at + (start - s))).ok()?;
        file.read_exact(&mut buf).ok()?;
        Some(Bytes::from(buf))
    }

    /// Keeps `bytes`, fetched at `start` of the object at `url`, unless that would pass
    /// [`KEEP_MOST`]; a failure to write is not an error (the range is fetched again).
    pub fn keep(url: &str, size: u64, start: u64, bytes: &[u8]) {
        let Ok(mut guard) = KEPT.lock() else {
            return;
        };
        let kept = guard.get_or_insert_with(Kept::default);
        let len = bytes.len() as u64;
        if kept.failed || kept.written + len > KEEP_MOST {
            return;
        }
        if kept.file.is_none() {
            kept.file = tempfile::tempfile().ok();
        }
        let at = kept.written;
        let written = kept
            .file
            .as_mut()
            .is_some_and(|f| f.seek(SeekFrom::Start(at)).is_ok() && f.write_all(bytes).is_ok());
        if !written {
            kept.failed = true;
            kept.file = None;
            kept.ranges.clear();
            return;
        }
        kept.written += len;
        (kept.ranges.entry((url.to_string(), size)).or_default()).push((start, len, at));
    }
}
