//! Storage: the GridFS engine and the metastore. Handlers reach MongoDB only through here.

pub mod gridfs;
