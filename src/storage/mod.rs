//! Storage: the GridFS engine, the metastore and the object layer over both. Handlers reach
//! MongoDB only through here.

pub mod content;
pub mod gridfs;
pub mod identity;
pub mod meta;
pub mod objects;
pub mod ranges;
pub mod sharding;
pub mod versions;
