//! DeleteObjects: the multi-object delete.

use axum::http::StatusCode;
use axum::response::Response;
use base64::Engine;
use md5::{Digest, Md5};

use crate::error::{S3Error, S3Result};
use crate::notify::{Change, EventName};
use crate::s3::lookup::require_bucket;
use crate::s3::request::S3Request;
use crate::s3::respond::xml_response;
use crate::state::AppState;
use crate::storage::objects::{Blocked, DeleteCondition, DeleteOutcome};
use crate::xml::{self, to_xml, S3_NS};

/// DeleteObjects (at most 1000 keys; Quiet reports errors only).
pub async fn delete_objects(st: &AppState, mut req: S3Request) -> S3Result<Response> {
    let bucket = req.bucket().to_owned();
    let body = req.body_reader()?.read_to_vec(xml::MAX_XML_BODY).await?;
    if let Some(md5) = req.header("content-md5") {
        let want = base64::engine::general_purpose::STANDARD.encode(Md5::digest(&body));
        if md5.trim() != want {
            return Err(S3Error::bad_digest());
        }
    }
    let request: xml::Delete = xml::from_xml("Delete", &body)?;
    if request.objects.is_empty() || request.objects.len() > 1000 {
        return Err(S3Error::malformed_xml());
    }
    let mut result = xml::DeleteResult {
        xmlns: S3_NS,
        deleted: Vec::new(),
        errors: Vec::new(),
    };
    let b = require_bucket(st, &bucket).await?;
    let versioned = b.versioning.is_some();
    let bypass_governance = req.bypass_governance;
    let (bad, good): (Vec<_>, Vec<_>) = request.objects.into_iter().partition(|o| {
        o.version_id.as_deref().is_some_and(|v| {
            v != "null" && (!versioned || !crate::storage::versions::is_valid_vid(v))
        })
    });
    for o in bad {
        result.errors.push(xml::DeleteError {
            key: o.key,
            version_id: o.version_id,
            code: "NoSuchVersion".into(),
            message: "The specified version does not exist.".into(),
        });
    }
    // A bucket policy decides each entry on its own, as the DeleteObject of its shape
    // (`s3:DeleteObject`, or `s3:DeleteObjectVersion` with a version), as AWS does.
    let (good, denied): (Vec<_>, Vec<_>) = match &req.per_key {
        Some(check) => good
            .into_iter()
            .partition(|o| check.allows(&o.key, o.version_id.as_deref())),
        None => (good, Vec::new()),
    };
    for o in denied {
        result.errors.push(xml::DeleteError {
            key: o.key,
            version_id: o.version_id,
            code: "AccessDenied".into(),
            message: "Access Denied".into(),
        });
    }
    let conditional = good
        .iter()
        .any(|o| o.etag.is_some() || o.last_modified_time.is_some() || o.size.is_some());
    // The events of what was removed, recorded before the answer.
    let mut changes: Vec<Change> = Vec::new();
    let owner = req.auth.account_key().to_owned();
    let mut good = good;
    if versioned && !conditional {
        // Delete markers for the entries that name no version, in one batch (a fixed number
        // of commands however many keys); entries naming a version go key by key below.
        let (plain, named): (Vec<_>, Vec<_>) =
            good.into_iter().partition(|o| o.version_id.is_none());
        good = named;
        let keys: Vec<String> = plain.iter().map(|o| o.key.clone()).collect();
        match st.store.delete_markers(&bucket, &keys, &owner).await {
            Ok(outcomes) => {
                for (o, r) in plain.into_iter().zip(outcomes) {
                    let r = r.map_err(S3Error::from);
                    report(&mut result, &mut changes, request.quiet, o, r);
                }
            }
            Err(e) => {
                let e = S3Error::from(e);
                for o in plain {
                    report(&mut result, &mut changes, request.quiet, o, Err(e.clone()));
                }
            }
        }
    }
    if versioned || conditional {
        // Versions named, delete markers of a suspended bucket, and conditions are decided
        // key by key, each under its key's lock.
        for o in good {
            let cond = DeleteCondition {
                if_match: o.etag.clone(),
                last_modified: match o.last_modified_time.as_deref() {
                    Some(t) => match crate::s3::request::headers::parse_iso8601(t) {
                        Some(t) => Some(t),
                        None => {
                            result.errors.push(xml::DeleteError {
                                key: o.key,
                                version_id: o.version_id,
                                code: "InvalidArgument".into(),
                                message: "Invalid LastModifiedTime".into(),
                            });
                            continue;
                        }
                    },
                    None => None,
                },
                size: o.size,
                revision: None,
                // With a bucket policy, decided per entry on the entry's object.
                bypass_governance: match &req.per_key {
                    Some(check) => check.may_bypass(&o.key, o.version_id.as_deref()),
                    None => bypass_governance,
                },
            };
            let r = st
                .store
                .delete_object(&bucket, &o.key, o.version_id.as_deref(), &cond, &owner)
                .await
                .map_err(S3Error::from);
            report(&mut result, &mut changes, request.quiet, o, r);
        }
        crate::s3::events::record(st, &bucket, &crate::s3::events::origin(&req), &changes).await?;
        return Ok(xml_response(
            StatusCode::OK,
            to_xml("DeleteResult", &result),
        ));
    }
    // All keys in one batch: a fixed number of round trips however many keys.
    let keys: Vec<String> = good.iter().map(|o| o.key.clone()).collect();
    match st.store.delete_keys(&bucket, &keys).await {
        Ok(()) => {
            changes.extend(good.iter().map(|o| removed(&o.key, None, None, false)));
            if !request.quiet {
                result.deleted = good
                    .into_iter()
                    .map(|o| xml::Deleted {
                        key: o.key,
                        version_id: o.version_id,
                        delete_marker: None,
                        delete_marker_version_id: None,
                    })
                    .collect();
            }
        }
        Err(e) => {
            let e = S3Error::from(e);
            for o in good {
                result.errors.push(xml::DeleteError {
                    key: o.key,
                    version_id: o.version_id,
                    code: e.code.into(),
                    message: e.message.clone(),
                });
            }
        }
    }
    crate::s3::events::record(st, &bucket, &crate::s3::events::origin(&req), &changes).await?;
    Ok(xml_response(
        StatusCode::OK,
        to_xml("DeleteResult", &result),
    ))
}

/// The event of what a delete removed.
fn removed(key: &str, asked: Option<&str>, out_version: Option<String>, marker: bool) -> Change {
    Change {
        event: if marker && asked.is_none() {
            EventName::DeleteMarkerCreated
        } else {
            EventName::Delete
        },
        key: key.to_owned(),
        size: None,
        etag: None,
        version_id: out_version,
    }
}

/// Puts one entry's outcome in the answer, and its event among `changes`.
fn report(
    result: &mut xml::DeleteResult,
    changes: &mut Vec<Change>,
    quiet: bool,
    o: xml::DeleteObjectId,
    r: Result<Result<DeleteOutcome, Blocked>, S3Error>,
) {
    let e = match r {
        Ok(Ok(out)) => {
            changes.push(removed(
                &o.key,
                o.version_id.as_deref(),
                out.version_id.clone(),
                out.delete_marker,
            ));
            if !quiet {
                let marker_id = out.delete_marker.then(|| out.version_id.clone());
                result.deleted.push(xml::Deleted {
                    key: o.key,
                    version_id: o.version_id,
                    delete_marker: out.delete_marker.then_some(true),
                    delete_marker_version_id: marker_id.flatten(),
                });
            }
            return;
        }
        Ok(Err(blocked)) => crate::s3::respond::blocked_error(blocked),
        Err(e) => e,
    };
    result.errors.push(xml::DeleteError {
        key: o.key,
        version_id: o.version_id,
        code: e.code.into(),
        message: e.message.clone(),
    });
}
