//! `grids3 search BUCKET QUERY`: a metadata search (`GET /<bucket>?search=…`, see
//! docs/search.md) followed through its pages, one line per object found.
//!
//! It signs as the key it is given, so the search has exactly that key's rights (the gateway
//! decides which keys and which metadata it may see); the root key is only the default.

use std::io::Write;

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use serde::Deserialize;

use crate::auth::sigv4::uri_encode;
use crate::bench::http::{Conn, Signer};

/// One page's answer, as `ListObjects` (v1) shapes it.
#[derive(Deserialize, Debug)]
#[serde(rename_all = "PascalCase")]
struct Page {
    #[serde(default)]
    contents: Vec<Found>,
    #[serde(default)]
    is_truncated: bool,
    #[serde(default)]
    next_marker: Option<String>,
}

#[derive(Deserialize, Debug)]
#[serde(rename_all = "PascalCase")]
struct Found {
    key: String,
    size: i64,
    last_modified: String,
    #[serde(default, rename = "ETag")]
    etag: String,
}

/// An S3 error answer.
#[derive(Deserialize, Debug)]
#[serde(rename_all = "PascalCase")]
struct Refusal {
    #[serde(default)]
    code: String,
    #[serde(default)]
    message: String,
}

/// What to search and how to print it.
pub struct Search<'a> {
    pub bucket: &'a str,
    pub query: &'a str,
    pub prefix: &'a str,
    /// At most this many objects (0: all).
    pub max: usize,
    pub page_size: usize,
    pub json: bool,
}

/// The query string of the page after `marker`.
fn page_query(s: &Search<'_>, marker: Option<&str>) -> String {
    let size = if s.max > 0 {
        s.page_size.min(s.max)
    } else {
        s.page_size
    };
    let mut q = vec![
        format!("search={}", uri_encode(s.query, true)),
        format!("max-keys={}", size.clamp(1, 1000)),
    ];
    if !s.prefix.is_empty() {
        q.push(format!("prefix={}", uri_encode(s.prefix, true)));
    }
    if let Some(m) = marker {
        q.push(format!("marker={}", uri_encode(m, true)));
    }
    q.join("&")
}

/// Runs the search, printing each object found to `out`; returns how many were printed.
pub async fn run(signer: Signer, s: &Search<'_>, out: &mut impl Write) -> Result<usize> {
    let mut conn = Conn::new(std::sync::Arc::new(signer));
    let path = format!("/{}", uri_encode(s.bucket, false));
    let (mut marker, mut printed) = (None::<String>, 0_usize);
    loop {
        let query = page_query(s, marker.as_deref());
        let a = conn
            .send("GET", &path, &query, Bytes::new(), &[], true)
            .await
            .context("sending the search")?;
        let body = String::from_utf8_lossy(&a.body);
        if a.status != 200 {
            let r: Refusal = quick_xml::de::from_str(&body).unwrap_or(Refusal {
                code: String::new(),
                message: body.chars().take(500).collect(),
            });
            bail!(
                "the gateway answered {}: {} {}",
                a.status,
                r.code,
                r.message
            );
        }
        let page: Page = quick_xml::de::from_str(&body).context("reading the answer")?;
        for f in &page.contents {
            if s.max > 0 && printed >= s.max {
                return Ok(printed);
            }
            if s.json {
                let line = serde_json::json!({
                    "key": f.key, "size": f.size, "lastModified": f.last_modified,
                    "etag": f.etag.trim_matches('"'),
                });
                writeln!(out, "{line}")?;
            } else {
                writeln!(out, "{}\t{}\t{}", f.key, f.size, f.last_modified)?;
            }
            printed += 1;
        }
        if !page.is_truncated || (s.max > 0 && printed >= s.max) {
            return Ok(printed);
        }
        // A truncated page always names where the next starts (grids3 sends NextMarker
        // whenever it truncates, even without a delimiter); a page without one would repeat.
        match (page.next_marker, page.contents.last()) {
            (Some(m), _) if !m.is_empty() => marker = Some(m),
            (_, Some(last)) => marker = Some(last.key.clone()),
            _ => bail!("a truncated page named no next marker"),
        }
    }
}
