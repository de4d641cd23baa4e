//! Inputs: the roots → files and dump records (JSON Lines, Parquet) → their bytes. The OS side
//! of the pipeline.

pub mod decompress;
pub mod field_value;
pub mod jsonl;
pub mod parquet;
pub mod read;
pub mod readahead;
pub mod source;
pub mod spill;
pub mod stdin;
pub mod table;
pub mod walk;
mod walk_rules;
mod walk_split;
mod walk_url;
mod walker;
