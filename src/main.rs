//! The grids3 binary: configuration, the local database for development, serving.

use anyhow::Result;
use grids3::devdb::{LocalDb, Storage};

#[tokio::main]
async fn main() -> Result<()> {
    let local = std::env::args().any(|a| a == "--local-db");
    let db = if local {
        Some(LocalDb::start(Storage::Dir(grids3::devdb::project_dir().join("data/db"))).await?)
    } else {
        None
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:9000").await?;
    println!("grids3 listening on http://{}", listener.local_addr()?);
    if let Some(db) = &db {
        println!("database ({}): {}", db.kind, db.uri);
    }
    axum::serve(listener, axum::Router::new()).await?;
    Ok(())
}
