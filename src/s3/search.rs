//! Metadata search (issue 63): `GET /<bucket>?search=<query>`, Zenko CloudServer's API. The
//! answer is a listing (`ListBucketResult`, v1 by default, v2 with `list-type=2`) of the
//! current objects that match, in key order; see docs/search.md.
//!
//! - **Authorization:** `s3:ListBucket` on the bucket, with the request's `prefix` as
//!   `s3:prefix`, as for a listing (Zenko checks an action of its own, `s3:MetadataSearch`;
//!   the issue asked for a search to be a listing's right). The search never leaves the
//!   prefix.
//! - **What each caller matches on:** metadata (`content-type`, `x-amz-meta-*`) and tags only
//!   where it may read them, per key, as MinIO's metadata listing decides (GetObject,
//!   GetObjectTagging; an SSE-C object tells neither). Elsewhere they are missing.
//! - **Pages:** `max-keys` (at most 1,000), `marker` (v1), `continuation-token` and
//!   `start-after` (v2). A page also ends when its time is spent ([`PAGE_BUDGET`]): it is
//!   then truncated with a `NextMarker` (v1, given whenever a search page is truncated:
//!   where the scan got to, which need not be a listed key) or a continuation token.
//! - **Refused:** a query that does not parse (`400 InvalidArgument`, with the position),
//!   and `delimiter` (a search has no common prefixes).
//! - **Versions** (`?versions&search=`): `search_versions`.

use std::time::{Duration, Instant};

use axum::http::StatusCode;
use axum::response::Response;
use base64::Engine;

use crate::error::{S3Error, S3Result};
use crate::s3::authz::per_key::{may, may_on_version, Caller};
use crate::s3::lookup::require_bucket;
use crate::s3::op::Op;
use crate::s3::request::S3Request;
use crate::s3::respond::{encode_if, listed_contents, owner_of, xml_response};
use crate::search::Field;
use crate::state::AppState;
use crate::storage::meta::BucketInfo;
use crate::storage::objects::search_plan::{plan, Driver};
use crate::storage::objects::{Kept, Matcher, ObjectInfo, SearchScan, View};
use crate::xml::{self, to_xml, S3_NS};

/// The time one page of a search may take before it answers what it has.
pub const PAGE_BUDGET: Duration = Duration::from_secs(5);
/// Objects evaluated between two yields to the runtime.
const YIELD_EVERY: usize = 16;

/// Whether the caller reads every object's metadata and tags in this bucket, whatever its
/// key: the root key (no session policy, no temporary credentials) where no bucket policy
/// could deny it. (SSE-C objects still show neither.)
fn reads_everything(req: &S3Request, bucket: &BucketInfo) -> bool {
    let a = &req.auth;
    a.root && a.sessions.is_empty() && a.token.is_none() && bucket.policy.is_none()
}

/// What the caller sees of `o`: in a search of versions, of that version, as a GET of it
/// (`?versionId=`) is authorized.
async fn view_of(
    st: &AppState,
    who: &Caller,
    o: &ObjectInfo,
    all: bool,
    versions: bool,
) -> S3Result<View> {
    let sealed = o
        .meta
        .sse
        .as_ref()
        .is_some_and(|s| s.mode == crate::crypto::MODE_C);
    if sealed {
        return Ok(View::LISTED);
    }
    if all {
        return Ok(View::ALL);
    }
    if versions {
        let v = o.version_id.as_deref().unwrap_or("null");
        return Ok(View {
            meta: may_on_version(st, who, &Op::GetObject, o, v).await?,
            tags: may_on_version(st, who, &Op::GetObjectTagging, o, v).await?,
        });
    }
    Ok(View {
        meta: may(st, who, &Op::GetObject, o).await?,
        tags: may(st, who, &Op::GetObjectTagging, o).await?,
    })
}

/// A search's query, made ready, and what the caller may see: the test each batch of
/// examined objects goes through (for current objects and for versions alike).
pub(super) struct Searcher {
    matcher: Matcher,
    /// The time a page may take.
    pub(super) budget: Duration,
    /// When the page's time is spent.
    deadline: Instant,
    /// It searches versions: each is judged as a GET of that version.
    versions: bool,
    /// The declared index the query can be read by.
    pub(super) driver: Option<Driver>,
    who: Caller,
    all: bool,
}

impl Searcher {
    /// The search `req` asks for (of `versions`, or of current objects): its query parsed
    /// (400 InvalidArgument naming the position), and `delimiter` refused.
    pub(super) fn of(
        st: &AppState,
        req: &S3Request,
        bucket: &BucketInfo,
        versions: bool,
    ) -> S3Result<Self> {
        let query = crate::search::parse(req.q("search").unwrap_or_default())
            .map_err(|e| S3Error::invalid_argument(e.to_string()))?;
        if req.q("delimiter").is_some_and(|d| !d.is_empty()) {
            return Err(S3Error::invalid_argument(
                "A search does not take a delimiter: it lists matching objects only",
            ));
        }
        let ready: Vec<String> = bucket
            .search_indexes
            .iter()
            .filter(|d| d.ready)
            .map(|d| d.field.clone())
            .collect();
        let all = reads_everything(req, bucket);
        // (A test shortens it to see pages end on time, whatever their queries cost.)
        let budget = crate::failpoint::limit("search.page_budget", &bucket.name, PAGE_BUDGET);
        // An index reads only the objects whose value equals the query's: what a caller may
        // not read would then cost time only where it matched (a timing leak, review of
        // issue 63). So a field a view can hide drives the read only for a caller that reads
        // everything; size and last-modified, which every lister sees, for any caller.
        let driver = plan(&query, &ready).filter(|d| {
            all || !matches!(
                crate::search::Field::named(&d.field),
                Some(Field::ContentType | Field::Meta(_) | Field::Tag(_))
            )
        });
        Ok(Self {
            driver,
            matcher: Matcher::new(&query).map_err(S3Error::invalid_argument)?,
            who: Caller::of(st, req),
            all,
            versions,
            budget,
            deadline: Instant::now() + budget,
        })
    }

    /// The objects of `batch` that match as the caller sees each. Where the query names what
    /// a view hides, the view of every examined object is decided, whether or not it could
    /// match: the time a page takes then tells nothing of values the caller may not read.
    ///
    /// Evaluation is what a query makes costly (64 patterns on 2 KiB values), so it stops
    /// when the page's time is spent, where a key ends (the page then ends there), having
    /// examined the first key at least; and it yields now and then, so that a client that
    /// hangs up stops it and other requests are served meanwhile.
    pub(super) async fn keep(&self, st: &AppState, batch: Vec<ObjectInfo>) -> S3Result<Kept> {
        let mut kept = Kept::default();
        let mut last: Option<String> = None;
        for o in batch {
            let key_ends = last.as_deref() != Some(o.key());
            if key_ends && kept.examined > 0 && Instant::now() >= self.deadline {
                break;
            }
            if kept.examined % YIELD_EVERY == YIELD_EVERY - 1 {
                tokio::task::yield_now().await;
            }
            let view = if self.matcher.depends_on_view() {
                view_of(st, &self.who, &o, self.all, self.versions).await?
            } else {
                View::ALL
            };
            kept.examined += 1;
            if key_ends {
                last = Some(o.key().to_owned());
            }
            if self.matcher.matches(&o, view) {
                kept.objects.push(o);
            }
        }
        Ok(kept)
    }
}

/// `GET /<bucket>?search=…`.
pub async fn search_objects(st: &AppState, req: S3Request) -> S3Result<Response> {
    let bucket = require_bucket(st, req.bucket()).await?;
    let searcher = Searcher::of(st, &req, &bucket, false)?;
    let v2 = match req.q("list-type") {
        None => false,
        Some("2") => true,
        Some(_) => {
            return Err(S3Error::invalid_argument(
                "Invalid List Type specified in Request",
            ))
        }
    };
    let max = req.max_keys()?;
    let url = req.url_encoding()?;
    let prefix = req.q("prefix").unwrap_or_default().to_owned();
    let token = req
        .q("continuation-token")
        .filter(|_| v2)
        .map(str::to_owned);
    let after = match (&token, v2) {
        (Some(t), _) => Some(
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(t)
                .ok()
                .and_then(|b| String::from_utf8(b).ok())
                .ok_or_else(|| {
                    S3Error::invalid_argument("The continuation token provided is incorrect")
                })?,
        ),
        (None, true) => req.q("start-after").map(str::to_owned),
        (None, false) => req.q("marker").map(str::to_owned),
    }
    .filter(|a| !a.is_empty());

    let s = SearchScan {
        prefix: prefix.clone(),
        after: after.clone(),
        max,
        budget: searcher.budget,
        driver: searcher.driver.clone(),
    };
    let searcher = &searcher;
    let page = st
        .store
        .search(&bucket.name, &s, |batch| searcher.keep(st, batch))
        .await?;
    let objects: Vec<&ObjectInfo> = page.objects.iter().collect();
    let owner = |o: &ObjectInfo| {
        owner_of(crate::s3::rules::ownership::object_owner(
            &bucket,
            o.meta.owner.as_deref(),
        ))
    };
    if v2 {
        let fetch_owner = req.q("fetch-owner") == Some("true");
        let contents: Vec<xml::Contents> = objects
            .iter()
            .map(|o| listed_contents(o, url, fetch_owner.then(|| owner(o))))
            .collect();
        let body = xml::ListBucketResultV2 {
            xmlns: S3_NS,
            name: bucket.name.clone(),
            prefix: encode_if(url, &prefix),
            delimiter: None,
            max_keys: max,
            key_count: contents.len(),
            is_truncated: page.truncated,
            encoding_type: url.then(|| "url".to_owned()),
            continuation_token: token,
            next_continuation_token: page
                .next_marker
                .as_ref()
                .map(|m| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(m)),
            start_after: req.q("start-after").map(|s| encode_if(url, s)),
            contents,
            common_prefixes: Vec::new(),
        };
        return Ok(xml_response(
            StatusCode::OK,
            to_xml("ListBucketResult", &body),
        ));
    }
    let contents: Vec<xml::Contents> = objects
        .iter()
        .map(|o| listed_contents(o, url, Some(owner(o))))
        .collect();
    let body = xml::ListBucketResultV1 {
        xmlns: S3_NS,
        name: bucket.name.clone(),
        prefix,
        marker: encode_if(url, req.q("marker").unwrap_or_default()),
        next_marker: page.next_marker.as_ref().map(|m| encode_if(url, m)),
        max_keys: max,
        delimiter: None,
        is_truncated: page.truncated,
        encoding_type: url.then(|| "url".to_owned()),
        contents,
        common_prefixes: Vec::new(),
    };
    Ok(xml_response(
        StatusCode::OK,
        to_xml("ListBucketResult", &body),
    ))
}
