//! Inputs: the roots → files and dump records → their bytes. The OS side of the pipeline.

pub mod decompress;
pub mod jsonl;
pub mod read;
pub mod readahead;
pub mod spill;
pub mod walk;
mod walk_split;
mod walker;

/// The paths `dump.rs` gave before it was split into [`decompress`] and [`jsonl`], kept until
/// their callers (config, ingest) name those modules.
pub mod dump {
    pub use super::decompress::{open_stream, read_limited, sniff, Compression};
    pub use super::jsonl::{
        field_path, parse_record, BadLine, JsonlOptions, JsonlReader, Line, RawLine,
    };
}
