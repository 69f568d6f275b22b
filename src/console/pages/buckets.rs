//! Buckets and folders: the list, creating and deleting buckets, a folder's page, deleting
//! objects and whole folders.

use super::*;

/// GET /: the buckets this key may list.
pub async fn buckets(State(st): State<AppState>, req: Request) -> Response {
    let ctx = match signed_in(&st, req.into_parts().0).await {
        Ok(c) => c,
        Err(r) => return r,
    };
    let (list, error) = match ctx
        .caller(&st)
        .xml::<BucketList>(Method::GET, None, &[])
        .await
    {
        Ok(l) => (l, None),
        Err(e) => (BucketList::default(), Some(reason(&e))),
    };
    html(views::Buckets {
        who: ctx.who(),
        csrf: ctx.csrf(),
        root: ctx.signed.root,
        error,
        buckets: list
            .buckets
            .bucket
            .into_iter()
            .map(|b| views::BucketRow {
                name: b.name,
                created: b.creation_date,
            })
            .collect(),
    })
}

/// POST /buckets/create: CreateBucket (with Object Lock and the storage mode as its headers
/// ask), then PutBucketVersioning when asked.
pub async fn create_bucket(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, f) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let name = field(&f, "name").unwrap_or("").trim().to_owned();
    let caller = ctx.caller(&st);
    let mut headers = Vec::new();
    if field(&f, "object_lock") == Some("on") {
        headers.push(("x-amz-bucket-object-lock-enabled", "true".to_owned()));
    }
    if let Some(mode) = field(&f, "storage").filter(|m| !m.is_empty()) {
        headers.push(("x-grids3-storage-mode", mode.to_owned()));
    }
    if let Err(e) = caller
        .send(Method::PUT, Some(&name), None, &[], &headers, Body::empty())
        .await
    {
        return ctx.message(e.status, "The bucket was not created", Some(e), "/");
    }
    if field(&f, "versioning") == Some("on") {
        let body = format!(
            "<VersioningConfiguration xmlns=\"{}\"><Status>Enabled</Status></VersioningConfiguration>",
            crate::xml::S3_NS
        );
        if let Err(e) = caller
            .send(
                Method::PUT,
                Some(&name),
                None,
                &[("versioning", "")],
                &[],
                Body::from(body),
            )
            .await
        {
            return ctx.message(
                e.status,
                "The bucket was created without versioning",
                Some(e),
                "/",
            );
        }
    }
    see_other(&format!(
        "/browse?bucket={}",
        crate::percent::uri_encode(&name, false)
    ))
}

/// POST /buckets/delete: DeleteBucket.
pub async fn delete_bucket(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, f) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let bucket = field(&f, "bucket").unwrap_or("").to_owned();
    match ctx
        .caller(&st)
        .send(Method::DELETE, Some(&bucket), None, &[], &[], Body::empty())
        .await
    {
        Ok(_) => see_other("/"),
        Err(e) => ctx.message(
            e.status,
            "The bucket was not deleted",
            Some(e),
            &format!(
                "/browse?bucket={}",
                crate::percent::uri_encode(&bucket, false)
            ),
        ),
    }
}

/// GET /browse?bucket=&prefix=&token=: one page of a folder (ListObjectsV2 with `/` as the
/// delimiter: bounded queries, so a page costs the same at 100k keys).
pub async fn browse(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, q) = match signed_get(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let bucket = field(&q, "bucket").unwrap_or("").to_owned();
    let prefix = field(&q, "prefix").unwrap_or("").to_owned();
    // A metadata search (docs/search.md) lists the matching objects under the prefix, not
    // folders, in pages like the folder's.
    let search = field(&q, "search").unwrap_or("").trim().to_owned();
    let mut query = vec![
        ("list-type", "2"),
        ("max-keys", PAGE),
        ("encoding-type", "url"),
        ("prefix", prefix.as_str()),
    ];
    if search.is_empty() {
        query.push(("delimiter", "/"));
    } else {
        query.push(("search", search.as_str()));
    }
    if let Some(t) = field(&q, "token").filter(|t| !t.is_empty()) {
        query.push(("continuation-token", t));
    }
    let (list, error) = match ctx
        .caller(&st)
        .xml::<ObjectList>(Method::GET, Some(&bucket), &query)
        .await
    {
        Ok(l) => (l, None),
        Err(e) => (ObjectList::default(), Some(reason(&e))),
    };
    // Keys came URL-encoded (encoding-type=url): any byte a key holds survives the XML.
    let decode = |s: &str| crate::percent::decode(s);
    let short = |full: &str| {
        full.strip_prefix(prefix.as_str())
            .unwrap_or(full)
            .to_owned()
    };
    let mut crumbs = Vec::new();
    let mut at = String::new();
    for part in prefix.split_inclusive('/') {
        at.push_str(part);
        crumbs.push(views::Crumb {
            label: part.trim_end_matches('/').to_owned(),
            prefix: at.clone(),
        });
    }
    // Only a folder that was listed follows its changes (a search's results would take in
    // objects that do not match).
    let live = match (&error, search.is_empty()) {
        (None, true) => super::live::listen_url(&st, &ctx, &bucket, &prefix).await,
        _ => None,
    };
    html(views::Browse {
        live: live.unwrap_or_default(),
        who: ctx.who(),
        csrf: ctx.csrf(),
        root: ctx.signed.root,
        error,
        crumbs,
        folders: list
            .prefixes
            .iter()
            .map(|p| {
                let full = decode(&p.prefix);
                views::Folder {
                    name: short(&full),
                    prefix: full,
                }
            })
            .collect(),
        objects: list
            .contents
            .iter()
            .map(|o| {
                let key = decode(&o.key);
                views::ObjectRow {
                    name: short(&key),
                    key,
                    size: o.size,
                    modified: o.last_modified.clone(),
                }
            })
            .collect(),
        next: list.next.filter(|_| list.truncated),
        bucket,
        prefix,
        search,
    })
}

/// POST /objects/delete: DeleteObject of each selected key, each authorized on its own.
pub async fn delete_objects(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, f) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let bucket = field(&f, "bucket").unwrap_or("").to_owned();
    let prefix = field(&f, "prefix").unwrap_or("").to_owned();
    let back = format!(
        "/browse?bucket={}&prefix={}",
        crate::percent::uri_encode(&bucket, false),
        crate::percent::uri_encode(&prefix, false)
    );
    let caller = ctx.caller(&st);
    let keys: Vec<&String> = f
        .iter()
        .filter(|(k, _)| k == "key")
        .map(|(_, v)| v)
        .collect();
    // A page shows 200 keys: a form naming more did not come from it.
    if keys.len() > 1000 {
        let e = S3Error::invalid_argument("At most 1,000 objects are deleted at once");
        return ctx.message(
            StatusCode::BAD_REQUEST,
            "Nothing was deleted",
            Some(e),
            &back,
        );
    }
    for key in keys {
        if let Err(e) = caller
            .send(
                Method::DELETE,
                Some(&bucket),
                Some(key),
                &[],
                &[],
                Body::empty(),
            )
            .await
        {
            return ctx.message(e.status, &format!("{key} was not deleted"), Some(e), &back);
        }
    }
    see_other(&back)
}

/// Objects one folder deletion removes at most (more are left for the next request, and
/// the page says so).
const FOLDER_DELETE_MAX: usize = 10_000;

/// POST /folders/delete: every object under a folder's prefix (listed as the key lists them,
/// each DeleteObject authorized on its own), after the page's confirmation.
pub async fn delete_folder(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, f) = match signed_post(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let bucket = field(&f, "bucket").unwrap_or("").to_owned();
    let folder = field(&f, "folder").unwrap_or("").to_owned();
    let back = format!(
        "/browse?bucket={}&prefix={}",
        crate::percent::uri_encode(&bucket, false),
        crate::percent::uri_encode(field(&f, "prefix").unwrap_or(""), false)
    );
    // A folder is a prefix ending in `/`; an empty one would be the whole bucket.
    if folder.is_empty() || !folder.ends_with('/') {
        let e = S3Error::invalid_argument("A folder is a prefix ending in /");
        return ctx.message(
            StatusCode::BAD_REQUEST,
            "Nothing was deleted",
            Some(e),
            &back,
        );
    }
    let caller = ctx.caller(&st);
    let mut deleted = 0usize;
    let mut token: Option<String> = None;
    loop {
        let mut query = vec![
            ("list-type", "2"),
            ("max-keys", "1000"),
            ("encoding-type", "url"),
            ("prefix", folder.as_str()),
        ];
        if let Some(t) = token.as_deref() {
            query.push(("continuation-token", t));
        }
        let list = match caller
            .xml::<ObjectList>(Method::GET, Some(&bucket), &query)
            .await
        {
            Ok(l) => l,
            Err(e) => return ctx.message(e.status, "The folder was not deleted", Some(e), &back),
        };
        for o in &list.contents {
            let key = crate::percent::decode(&o.key);
            if let Err(e) = caller
                .send(
                    Method::DELETE,
                    Some(&bucket),
                    Some(&key),
                    &[],
                    &[],
                    Body::empty(),
                )
                .await
            {
                let title = format!("{deleted} objects were deleted; {key} was not");
                return ctx.message(e.status, &title, Some(e), &back);
            }
            deleted += 1;
            if deleted >= FOLDER_DELETE_MAX {
                let title =
                    format!("{deleted} objects were deleted; more remain: delete the folder again");
                return ctx.message(StatusCode::OK, &title, None, &back);
            }
        }
        match list.next.filter(|_| list.truncated) {
            Some(t) => token = Some(t),
            None => break,
        }
    }
    see_other(&back)
}
