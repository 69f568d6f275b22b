pub(crate) mod server;
pub(crate) mod topology;
