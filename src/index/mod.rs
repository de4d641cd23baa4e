//! The incremental index: joined to a scan, updated after it, stored on disk.

pub mod against;
pub mod dir;
pub mod store;
