//! Inputs: the roots → files and dump records → their bytes. The OS side of the pipeline.

pub mod dump;
pub mod read;
pub mod readahead;
pub mod spill;
pub mod walk;
