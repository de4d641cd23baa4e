//! The fuzz targets' entry points (`fuzz/`, cargo-fuzz) and what the replay test
//! (`tests/integration/fuzz.rs`) runs every committed input through: each takes arbitrary bytes,
//! runs one parser or decoder as dupfind runs it (`staged_work`: the staged pipeline's last
//! stages over an edited work directory), and panics only where dupfind would, or where an
//! invariant stated on the function is broken. Not a stable interface: a target is added
//! here and in `fuzz/Cargo.toml`, and its inputs under `fuzz/seeds/` and `fuzz/regressions/`.
//!
//! Where a target needs a choice besides the bytes under test (the field paths, a size limit,
//! the shingle length), the input's first byte makes it, so every input is one file.

mod args;
mod decompress;
mod index;
mod jsonl;
mod parquet;
mod segment;
mod shingles;
mod staged;

pub use args::{globs, size_arg};
pub use decompress::decompress;
pub use index::index_v1;
pub use jsonl::jsonl;
pub use parquet::parquet;
pub use segment::index_segment;
pub use shingles::shingles;
pub use staged::staged_work;

/// A fuzz target's entry point: one input, a panic where an invariant is broken.
pub type Target = fn(&[u8]);

/// The fuzz targets by name, as `fuzz/Cargo.toml` names them and `fuzz/seeds/` and
/// `fuzz/regressions/` hold their inputs.
pub const TARGETS: [(&str, Target); 9] = [
    ("jsonl", jsonl),
    ("parquet", parquet),
    ("decompress", decompress),
    ("index_v1", index_v1),
    ("index_segment", index_segment),
    ("shingles", shingles),
    ("size_arg", size_arg),
    ("globs", globs),
    ("staged_work", staged_work),
];

/// The first byte, which picks among the target's choices, and the rest.
fn choice(data: &[u8]) -> (usize, &[u8]) {
    match data.split_first() {
        Some((&first, rest)) => (usize::from(first), rest),
        None => (0, data),
    }
}
