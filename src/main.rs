//! The grids3 binary: configuration, tracing, the local database for development, serving with
//! graceful shutdown.

use anyhow::{bail, Context, Result};
use clap::Parser;
use grids3::config::{Config, DEV_ACCESS_KEY, DEV_SECRET_KEY};
use grids3::devdb::{project_dir, LocalDb, Storage};

/// mimalloc instead of glibc's malloc: under many concurrent streams glibc keeps freed memory
/// in per-thread arenas, so the gateway's RSS stayed near its peak long after the load
/// (measured: 264 MiB 15 s after 16 x 64 MiB transfers); mimalloc returns it (BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Worker threads' stack. Request futures are deep (a versioned write into a content-addressed
/// bucket under a key lock, with the driver's own frames below it, overflowed tokio's 2 MiB
/// default in a debug build); 8 MiB of address space per worker costs nothing until touched.
const WORKER_STACK: usize = 8 << 20;

fn main() -> std::process::ExitCode {
    let result = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(WORKER_STACK)
        .build()
        .context("starting the runtime")
        .and_then(|rt| rt.block_on(run()));
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        // The error and its causes on one line, never a backtrace: returning the error from
        // `main` would print anyhow's backtrace under RUST_BACKTRACE=1, after a message that
        // already says what to do (issue 59: a second start's clear line was followed by one).
        Err(e) => {
            eprintln!("Error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<()> {
    let mut config = Config::parse();
    config.notify_targets = grids3::notify::targets::from_env(std::env::vars())
        .map_err(|e| anyhow::anyhow!("event notification targets: {e}"))?;
    if let Some(grids3::config::Command::Admin {
        endpoint,
        ca_bundle,
        action,
    }) = config.command.clone()
    {
        let endpoint = grids3::local::fill_admin(&mut config, endpoint.as_deref());
        let target = grids3::admin_cli::Target::parse(&endpoint, ca_bundle.as_deref())?;
        println!(
            "{}",
            grids3::admin_cli::run(&config, &target, &action).await?
        );
        return Ok(());
    }
    if let Some(grids3::config::Command::Bench(args)) = config.command.clone() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new("warn"))
            .with_writer(std::io::stderr)
            .init();
        let endpoint = grids3::local::fill_admin(&mut config, args.endpoint.as_deref());
        let target = grids3::admin_cli::Target::parse(&endpoint, args.ca_bundle.as_deref())?;
        let (Some(ak), Some(sk)) = (
            config.root_access_key.clone(),
            config.root_secret_key.clone(),
        ) else {
            bail!("no root key: set GRIDS3_ROOT_ACCESS_KEY and GRIDS3_ROOT_SECRET_KEY, or start a gateway with --local-db");
        };
        let db = if args.baseline {
            // The gateway's database: the configured one, else the local database's.
            let file = grids3::local::read();
            let uri = config
                .mongodb_uri
                .clone()
                .or_else(|| file.get("LOCAL_MONGODB_URI").cloned());
            match uri {
                Some(uri) => {
                    let name = if config.mongodb_uri.is_some() {
                        config.database.clone()
                    } else {
                        file.get("LOCAL_DATABASE")
                            .cloned()
                            .unwrap_or_else(|| config.database.clone())
                    };
                    Some(
                        grids3::metrics::mongodb_client(&uri)
                            .await
                            .context("connecting to MongoDB")?
                            .database(&name),
                    )
                }
                None => None,
            }
        } else {
            None
        };
        let signer = grids3::bench::http::Signer {
            target,
            access_key: ak,
            secret_key: sk,
            region: config.region.clone(),
            session_token: None,
            service: "s3",
        };
        return grids3::bench::run(&args, signer, db).await;
    }
    if let Some(grids3::config::Command::Search(args)) = config.command.clone() {
        let endpoint = grids3::local::fill_admin(&mut config, args.endpoint.as_deref());
        let target = grids3::admin_cli::Target::parse(&endpoint, args.ca_bundle.as_deref())?;
        let (ak, sk) = match (args.access_key.clone(), args.secret_key.clone()) {
            (Some(ak), Some(sk)) => (ak, sk),
            _ => match (config.root_access_key.clone(), config.root_secret_key.clone()) {
                (Some(ak), Some(sk)) => (ak, sk),
                _ => bail!("no key: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or the root key), or start a gateway with --local-db"),
            },
        };
        let signer = grids3::bench::http::Signer {
            target,
            access_key: ak,
            secret_key: sk,
            region: config.region.clone(),
            session_token: std::env::var("AWS_SESSION_TOKEN").ok(),
            service: "s3",
        };
        let search = grids3::search_cli::Search {
            bucket: &args.bucket,
            query: &args.query,
            prefix: &args.prefix,
            max: args.max,
            page_size: args.page_size,
            json: args.json,
        };
        let mut out = std::io::stdout().lock();
        grids3::search_cli::run(signer, &search, &mut out).await?;
        return Ok(());
    }
    if let Some(grids3::config::Command::Fsck { repair, usage }) = &config.command {
        let Some(uri) = config.mongodb_uri.clone() else {
            bail!("set MONGODB_URI (or --mongodb-uri) to the database to check");
        };
        let client = grids3::metrics::mongodb_client(&uri)
            .await
            .context("connecting to MongoDB")?;
        let store = grids3::state::open_store(&config, client).await?;
        if *usage {
            let checks = store.check_usage(*repair).await?;
            print!("{}", grids3::janitor::fsck::render_usage(&checks));
            if checks.iter().any(|c| c.differs()) && !*repair {
                std::process::exit(1);
            }
            return Ok(());
        }
        let report = grids3::janitor::fsck::run(&store, *repair).await?;
        print!("{}", report.render());
        if report.problems() > 0 && !*repair {
            std::process::exit(1);
        }
        return Ok(());
    }
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,mongodb=warn"));
    if config.log_json {
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .json()
            .init();
    } else {
        // Colour only on a terminal: logs redirected to a file or a collector stay plain text
        // (NO_COLOR turns it off on a terminal too).
        let ansi = std::io::IsTerminal::is_terminal(&std::io::stdout())
            && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(ansi)
            .init();
    }

    // The local database lives as long as `main` (dropping it stops the server it started).
    let local = if config.local_db {
        let db = LocalDb::start(Storage::Dir(project_dir().join("data/db"))).await?;
        config.mongodb_uri = Some(db.uri.clone());
        config
            .root_access_key
            .get_or_insert_with(|| DEV_ACCESS_KEY.to_owned());
        config
            .root_secret_key
            .get_or_insert_with(|| DEV_SECRET_KEY.into());
        // SSE-S3 and SSE-KMS work from the first start (the key is kept in data/local.env).
        config.master_key = Some(grids3::local::master_key(&config));
        Some(db)
    } else {
        None
    };
    // The web console (`grids3::console`): off unless asked for, on at 127.0.0.1:9001 with
    // the local database. Known before the state is built: the S3 endpoint lets the console's
    // origin read its answers (`s3::cors`).
    if config.local_db && config.console_listen.is_none() {
        config.console_listen = Some(std::net::SocketAddr::from(([127, 0, 0, 1], 9001)));
    }
    // With the local database, websites answer at `<bucket>.localhost`: browsers resolve
    // every `*.localhost` name to the loopback address (RFC 6761), so the address printed at
    // start-up works as printed (issue 59: `http://127.0.0.1:9002` named the bucket
    // `127.0.0.1`).
    if config.local_db && config.website_domain.is_none() {
        config.website_domain = Some("localhost".to_owned());
    }
    let Some(uri) = config.mongodb_uri.clone() else {
        bail!("set MONGODB_URI (or --mongodb-uri), or pass --local-db for the local development database");
    };
    if config.root_access_key.is_none() || config.root_secret_key.is_none() {
        bail!("GRIDS3_ROOT_ACCESS_KEY and GRIDS3_ROOT_SECRET_KEY must be set");
    }
    if let Some(p) = config.console_sso.problems() {
        bail!("console single sign-on: {p}");
    }
    if let Some(issuer) = config.console_sso.console_oidc_issuer.as_deref() {
        grids3::oidc::check_url(&config.oidc_policy(), issuer)
            .map_err(|e| anyhow::anyhow!("console single sign-on: the issuer URL: {e}"))?;
    }
    let timeout = std::time::Duration::from_secs(config.mongodb_timeout.max(1));
    let client =
        grids3::metrics::mongodb_client_with_timeout(&uri, timeout, config.mongodb_command_metrics)
            .await
            .context("connecting to MongoDB")?;
    let listener = grids3::server::bind(config.listen)
        .with_context(|| format!("binding {}", config.listen))?;
    let addr = listener.local_addr()?;
    // Loaded before anything is served: a pair that does not load stops the start.
    let tls = match (&config.tls_cert, &config.tls_key) {
        (Some(cert), Some(key)) => Some(grids3::tls::Tls::new(cert, key)?),
        _ => None,
    };
    let scheme = if tls.is_some() { "https" } else { "http" };
    // MongoDB may start after grids3 (compose, a reboot): wait for it, saying why.
    let mut pause = std::time::Duration::from_millis(500);
    let state = loop {
        match grids3::start(config.clone(), client.clone()).await {
            Ok(s) => break s,
            Err(e) => {
                tracing::warn!(
                    error = format!("{e:#}"),
                    retry_in_ms = pause.as_millis() as u64,
                    "waiting for MongoDB"
                );
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(std::time::Duration::from_secs(10));
            }
        }
    };

    println!(
        "grids3 serving S3 on {scheme}://{addr} (region {})",
        config.region
    );
    if let Some(db) = &local {
        println!("database: {} at {}", db.kind, db.uri);
        // The secret is shown only when it is the built-in development one (documented in
        // the README's "The two commands"); a secret that came from the environment is never printed.
        let secret = config.root_secret_key.as_deref().unwrap_or_default();
        println!(
            "credentials: AWS_ACCESS_KEY_ID={} AWS_SECRET_ACCESS_KEY={}",
            config.root_access_key.as_deref().unwrap_or_default(),
            if secret == DEV_SECRET_KEY {
                secret
            } else {
                "(as set in GRIDS3_ROOT_SECRET_KEY)"
            }
        );
        let file = grids3::local::write(&config, &format!("{scheme}://{addr}"), &db.uri)?;
        println!(
            "master key: kept in {} (SSE-S3 and SSE-KMS work); so are the credentials, for `grids3 admin` and `set -a; . {}; set +a`",
            file.display(),
            file.display()
        );
        // Commands that work as printed: the project's awscli (in .venv) by its full path,
        // and this very binary for the admin CLI.
        let venv_aws = grids3::devdb::project_dir().join(".venv/bin/aws");
        let aws = if venv_aws.exists() {
            venv_aws.display().to_string()
        } else {
            "aws".to_owned()
        };
        let key = config.root_access_key.as_deref().unwrap_or_default();
        let shown = if secret == DEV_SECRET_KEY {
            secret
        } else {
            "$GRIDS3_ROOT_SECRET_KEY"
        };
        println!(
            "try: AWS_ACCESS_KEY_ID={key} AWS_SECRET_ACCESS_KEY={shown} {aws} --endpoint-url {scheme}://{addr} s3 mb s3://demo"
        );
        if let Ok(me) = std::env::current_exe() {
            println!("admin: {} admin list-keys", me.display());
        }
    }
    grids3::storage::gridfs::budget::configure(config.body_budget_mib.max(1) * 1024 * 1024);
    grids3::storage::gridfs::budget::configure_downloads(
        config.download_budget_mib.max(1) * 1024 * 1024,
    );
    let limits = grids3::server::Limits {
        max_connections: config.max_connections,
        max_connections_per_client: config.max_connections_per_client,
        // Leaked once at start-up, so that the limits stay `Copy` for every connection task.
        trusted_proxies: Box::leak(config.trusted_proxies.clone().into_boxed_slice()),
        header_read_timeout: std::time::Duration::from_secs(config.header_timeout.max(1)),
        shutdown_deadline: std::time::Duration::from_secs(config.shutdown_deadline),
    };
    let background = state.clone();
    if let Some(tls) = &tls {
        tls.spawn_reloader(std::time::Duration::from_secs(
            config.tls_reload_interval.max(1),
        ));
    }
    // One signal stops every listener.
    let (stop, stopping) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown_signal().await;
        let _ = stop.send(true);
    });
    let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    // The website endpoint (`grids3::website`): off unless asked for, on at port 9002 with
    // the local database.
    let website_addr = config.website_listen.or_else(|| {
        config
            .local_db
            .then(|| std::net::SocketAddr::new(config.listen.ip(), 9002))
    });
    let website = match website_addr {
        Some(at) => {
            let l = grids3::server::bind(at)
                .with_context(|| format!("binding the website endpoint to {at}"))?;
            let at = l.local_addr()?;
            println!(
                "websites: {} (a bucket with a website configuration; see docs/websites.md)",
                website_address(scheme, at, config.website_domain.as_deref())
            );
            let app = grids3::website::router(state.clone());
            Some(tokio::spawn(grids3::server::serve(
                l,
                app,
                limits,
                tls.clone(),
                stopped(stopping.clone()),
            )))
        }
        None => None,
    };
    let console = match config.console_listen {
        Some(at) => {
            let l =
                grids3::server::bind(at).with_context(|| format!("binding the console to {at}"))?;
            let at = l.local_addr()?;
            println!("console: {scheme}://{at} (sign in with an access key and its secret)");
            let app = grids3::console::router(state.clone());
            Some(tokio::spawn(grids3::server::serve(
                l,
                app,
                limits,
                tls.clone(),
                stopped(stopping.clone()),
            )))
        }
        None => None,
    };
    grids3::server::serve(listener, grids3::app(state), limits, tls, stopped(stopping)).await?;
    if let Some(c) = console {
        c.await??;
    }
    if let Some(w) = website {
        w.await??;
    }
    // No janitor pass starts against a database that is about to go (the local one).
    background.stop_background();
    tracing::info!("stopped");
    drop(local);
    Ok(())
}

/// SIGINT or SIGTERM: stop accepting, let in-flight requests finish.
async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}

/// The website endpoint's address as start-up prints it: one a browser can open. A Host
/// chooses the bucket, so an IP address alone names none: with a domain that resolves to the
/// listener (`localhost` for a loopback or unspecified listener), `<bucket>.<domain>:port`.
fn website_address(scheme: &str, at: std::net::SocketAddr, domain: Option<&str>) -> String {
    let port = at.port();
    let default_port = (scheme == "http" && port == 80) || (scheme == "https" && port == 443);
    let port = if default_port {
        String::new()
    } else {
        format!(":{port}")
    };
    let reaches = |d: &str| d != "localhost" || at.ip().is_loopback() || at.ip().is_unspecified();
    match domain
        .map(|d| d.trim_matches('.'))
        .filter(|d| !d.is_empty())
    {
        Some(d) if reaches(d) => format!("{scheme}://<bucket>.{d}{port}"),
        Some(d) => format!("{scheme}://{at} (Host <bucket>.{d} or the bucket's name)"),
        None => format!("{scheme}://{at} (Host: the bucket's name; or set --website-domain)"),
    }
}
