//! grids3: an S3-compatible HTTP object-storage gateway over MongoDB GridFS.

pub mod devdb;
pub mod storage;
