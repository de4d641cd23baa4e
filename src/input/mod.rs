//! Inputs: the roots → files and dump records → their bytes. The OS side of the pipeline.

pub mod decompress;
pub mod jsonl;
pub mod read;
pub mod readahead;
pub mod spill;
pub mod walk;
mod walk_split;
mod walker;
