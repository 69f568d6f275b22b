//! `grids3 bench`'s arguments (kept apart from the server's configuration).

/// `grids3 bench`: what to measure.
#[derive(clap::Args, Clone, Debug)]
pub struct BenchArgs {
    /// The gateway's URL. Unset: the one in `data/local.env` (written by `--local-db`), else
    /// http://127.0.0.1:9000.
    #[arg(long, env = "GRIDS3_ENDPOINT")]
    pub endpoint: Option<String>,
    /// PEM certificates to trust for an https endpoint.
    #[arg(long, env = "GRIDS3_CA_BUNDLE")]
    pub ca_bundle: Option<std::path::PathBuf>,
    /// Operations, run in this order: put, get, head, list, delete, multidelete (DeleteObjects
    /// of 1,000 keys), mixed (45 % GET, 30 % HEAD, 15 % PUT, 10 % DELETE).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "put,get,head,list,multidelete"
    )]
    pub ops: Vec<String>,
    /// Object size: bytes, or with KiB, MiB, GiB.
    #[arg(long, default_value = "4KiB")]
    pub size: String,
    /// Concurrent workers, each with its own keep-alive connection.
    #[arg(long, default_value_t = 32)]
    pub concurrency: usize,
    /// Seconds each operation runs.
    #[arg(long, default_value_t = 10)]
    pub duration: u64,
    /// Keys written (untimed) before an operation that reads or deletes, if fewer exist.
    #[arg(long, default_value_t = 2000)]
    pub objects: usize,
    /// The bucket (created if missing).
    #[arg(long, default_value = "grids3-bench")]
    pub bucket: String,
    /// After each operation, the same shape of work with the raw driver on the gateway's
    /// database (MONGODB_URI and GRIDS3_DATABASE, else those `--local-db` wrote), printed as
    /// a ratio.
    #[arg(long)]
    pub baseline: bool,
    /// The gateway's process id: its CPU seconds per GiB moved are printed.
    #[arg(long)]
    pub gateway_pid: Option<u32>,
    /// Sign with temporary credentials (STS GetSessionToken of the key, an hour), as an SDK
    /// with session credentials does: every request then carries a session token.
    #[arg(long)]
    pub session: bool,
}
