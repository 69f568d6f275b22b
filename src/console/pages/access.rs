//! Effective permissions: for a user (or the signed-in key itself), a bucket and an optional
//! key or prefix, the answer each S3 action would get, and the rule (for a user: the identity
//! policy and statement) that decided it. Each answer is the real decision, computed by the
//! same code that authorizes S3 requests (`s3::authz::explain`, and `authorize` for the two
//! account-level actions), for an `Auth` of that user as its key signs (`Auth::of_key` of one
//! of its keys as stored; for a user without one, the user itself with no key).
//!
//! Another user's view is shown only to a caller that IAM allows `iam:SimulatePrincipalPolicy`
//! on that user (an account's root credentials always, within their account): it tells as
//! much as AWS's policy simulator would.
//!
//! The request's own facts are those of the browser's request to the console (its address,
//! transport and time); conditions on headers an S3 client would send (a Referer, a tag) see
//! none. Object actions are decided for an object named exactly as typed (a prefix typed as
//! `home/alice/` is the object `home/alice/`, which `home/alice/*` in a policy matches).

use std::collections::HashMap;

use axum::extract::{Request, State};
use axum::http::HeaderMap;
use axum::response::Response;

use super::idcommon::with_status;
use super::{field, html, signed_get, Ctx};
use crate::auth::policy::{self, Verdict};
use crate::auth::Auth;
use crate::console::iamcall::{self, UserList};
use crate::console::idviews::{self, Decision};
use crate::iam::IamError;
use crate::s3::actions::{actions_for, Shape};
use crate::s3::authz::{self, Target};
use crate::s3::op::Op;
use crate::s3::request::access::Access;
use crate::state::AppState;
use crate::storage::meta::UserOfKey;

/// The operations whose actions the view decides: for each action of
/// `auth::policy::ACTIONS`, the first of these (plain, or addressing a version) that is
/// checked as it (see the test that holds every action to a row).
fn candidates() -> Vec<Op> {
    use Op::*;
    let mut ops = vec![
        ListObjectsV2,
        ListObjectVersions,
        ListMultipartUploads,
        GetBucketLocation,
        GetBucketVersioning,
        PutBucketVersioning,
        GetObjectLockConfiguration,
        PutObjectLockConfiguration,
        GetObject,
        PutObject,
        DeleteObject,
        GetObjectAttributes,
        GetObjectTagging,
        PutObjectTagging,
        DeleteObjectTagging,
        GetObjectAcl,
        PutObjectAcl,
        GetObjectRetention,
        PutObjectRetention,
        GetObjectLegalHold,
        PutObjectLegalHold,
        GetObjectTorrent,
        AbortMultipartUpload,
        ListParts,
        GetBucketAcl,
        PutBucketAcl,
        GetBucketCors,
        PutBucketCors,
        GetBucketTagging,
        PutBucketTagging,
        DeleteBucket,
        GetBucketPolicy,
        PutBucketPolicy,
        DeleteBucketPolicy,
        GetBucketPolicyStatus,
        GetPublicAccessBlock,
        PutPublicAccessBlock,
        GetBucketOwnershipControls,
        PutBucketOwnershipControls,
        GetBucketWebsite,
        GetBucketLifecycleConfiguration,
        PutBucketLifecycleConfiguration,
        GetBucketEncryption,
        PutBucketEncryption,
        GetBucketLogging,
        PutBucketLogging,
        GetBucketNotificationConfiguration,
    ];
    ops.extend(
        crate::s3::op::SUBRESOURCES
            .iter()
            .map(|(sub, _)| GetUnconfigured(sub)),
    );
    ops
}

/// One row of the view: an action, the operation and shape it is decided as.
struct Row {
    action: &'static str,
    op: Op,
    shape: Shape,
}

/// A row for each action of `auth::policy::ACTIONS` that an operation is checked as
/// (`s3:BypassGovernanceRetention` is asked only beside another action, and has none).
fn rows() -> Vec<Row> {
    let ops = candidates();
    let mut out = Vec::new();
    for &action in policy::ACTIONS {
        'found: for op in &ops {
            for version in [false, true] {
                let shape = Shape {
                    version,
                    ..Shape::default()
                };
                if actions_for(op, shape).first() == Some(&action) {
                    out.push(Row {
                        action,
                        op: op.clone(),
                        shape,
                    });
                    break 'found;
                }
            }
        }
    }
    out
}

/// Whether an operation addresses an object (else its bucket).
fn on_object(op: &Op) -> bool {
    use Op::*;
    matches!(
        op,
        GetObject
            | HeadObject
            | PutObject
            | DeleteObject
            | GetObjectAttributes
            | GetObjectTagging
            | PutObjectTagging
            | DeleteObjectTagging
            | GetObjectAcl
            | PutObjectAcl
            | GetObjectRetention
            | PutObjectRetention
            | GetObjectLegalHold
            | PutObjectLegalHold
            | GetObjectTorrent
            | AbortMultipartUpload
            | ListParts
    )
}

/// The `Auth` a user's S3 requests carry: one of its active keys as stored, as `Auth::of_key`
/// builds it for a request that key signs (a key with session policies of its own is passed
/// over: its view is narrower than the user's); for a user without such a key, the user with
/// no key (the user's id stands in as the key id, which owns nothing and holds no grant).
async fn auth_of_user(
    st: &AppState,
    account_key: &str,
    u: &crate::storage::identity::User,
) -> Result<Auth, IamError> {
    for k in st.creds.identity().user_keys(u).await? {
        if !k.active {
            continue;
        }
        if let Some(stored) = st.creds.secret_of(&k.id).await? {
            if stored.sessions.is_empty() {
                return Ok(Auth::of_key(k.id, &stored));
            }
        }
    }
    let mut a = Auth::unsigned_body(u.id.clone(), false);
    a.user = Some(UserOfKey {
        id: u.id.clone(),
        account_key: account_key.to_owned(),
        role_session: None,
    });
    Ok(a)
}

/// Why an account-level action (ListAllMyBuckets, CreateBucket) was decided so: for a user,
/// its identity policies' deciding statement.
async fn account_why(
    st: &AppState,
    auth: &Auth,
    action: &'static str,
    resource: &str,
    values: &HashMap<String, Vec<String>>,
    allowed: bool,
) -> Result<String, IamError> {
    let Some(u) = &auth.user else {
        return Ok(if allowed {
            "an account's own key may".to_owned()
        } else {
            "a session policy of the key does not allow it".to_owned()
        });
    };
    let Some(p) = st.creds.principal_of(u).await? else {
        return Ok("the IAM user no longer exists".to_owned());
    };
    let mut values = values.clone();
    p.add_condition_values(&mut values);
    let v = p.policies.evaluate(&policy::Context {
        who: p.who(false),
        action,
        resource: resource.to_owned(),
        values,
    });
    let by = v.by.map(|b| format!(" ({b})")).unwrap_or_default();
    Ok(match (allowed, v.verdict) {
        (true, _) => format!("an identity-based policy allows it{by}"),
        (false, Verdict::Deny) => format!("an explicit deny in an identity-based policy{by}"),
        (false, Verdict::Allow) => "a session policy of the key does not allow it".to_owned(),
        (false, Verdict::Silent) => "no identity-based policy allows it".to_owned(),
    })
}

/// Every row's decision for `auth` on `bucket` (and `key`).
async fn decide(
    st: &AppState,
    ctx: &Ctx,
    auth: &Auth,
    bucket: &str,
    key: &str,
) -> Result<Vec<Decision>, IamError> {
    let now = st.store.meta().clock().now().to_chrono();
    let ip = ctx
        .parts
        .extensions
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip());
    let transport = crate::tls::Transport::of(&ctx.parts.extensions);
    let facts_of = |query: &[(String, String)]| {
        authz::facts(&HeaderMap::new(), query, auth, ip, transport, now)
    };
    let plain = facts_of(&[]);
    let mut out = Vec::new();
    // The account-level actions, as `authorize` decides them.
    for (action, op, resource) in [
        (
            "s3:ListAllMyBuckets",
            Op::ListBuckets,
            "arn:aws:s3:::*".to_owned(),
        ),
        (
            "s3:CreateBucket",
            Op::CreateBucket,
            format!("arn:aws:s3:::{bucket}"),
        ),
    ] {
        let t = Target {
            bucket,
            key: None,
            facts: &plain,
            shape: Shape::default(),
        };
        let allowed = match authz::authorize(st, &op, auth, &t, None).await {
            Ok(_) => true,
            Err(e) if e.code == "AccessDenied" => false,
            Err(e) => return Err(IamError::from(e)),
        };
        out.push(Decision {
            action: action.to_owned(),
            scope: "account",
            allowed,
            why: account_why(st, auth, action, &resource, &plain, allowed).await?,
        });
    }
    let listing = if key.is_empty() {
        plain.clone()
    } else {
        facts_of(&[("prefix".to_owned(), key.to_owned())])
    };
    for row in rows() {
        let object = on_object(&row.op);
        let lists = matches!(
            row.op,
            Op::ListObjectsV2 | Op::ListObjectVersions | Op::ListMultipartUploads
        );
        let t = Target {
            bucket,
            key: object.then_some(key),
            facts: if lists { &listing } else { &plain },
            shape: row.shape,
        };
        let ex = authz::explain(st, &row.op, auth, &t).await?;
        if !ex.bucket_exists {
            return Err(IamError::from(crate::error::S3Error::no_such_bucket()));
        }
        let by = ex
            .by
            .as_ref()
            .map(|b| format!(" ({b})"))
            .unwrap_or_default();
        let (allowed, why) = match ex.access {
            Access::Granted | Access::GrantedUnlisted => (true, format!("{}{by}", ex.rule)),
            Access::Denied | Access::MethodNotAllowed => (false, format!("{}{by}", ex.rule)),
            // Where the object's ACL decides, look at the object as the request would.
            Access::IfObjectAcl { .. } => {
                let found = st
                    .store
                    .head(bucket, key)
                    .await
                    .map_err(|e| IamError::from(crate::error::S3Error::from(e)))?;
                match crate::s3::rules::acl::require_object_access(auth, ex.access, found) {
                    Ok(_) => (true, "the object's ACL allows it".to_owned()),
                    Err(e) if e.code == "NoSuchKey" => (
                        false,
                        "left to the object's ACL, and there is no such key (404)".to_owned(),
                    ),
                    Err(_) => (
                        false,
                        "left to the object's ACL, which does not allow it (or there is no such key: 403)".to_owned(),
                    ),
                }
            }
        };
        out.push(Decision {
            action: row.action.to_owned(),
            scope: if object { "object" } else { "bucket" },
            allowed,
            why,
        });
    }
    Ok(out)
}

/// GET /identity/access?user=&bucket=&key=: the effective permissions.
pub async fn access(State(st): State<AppState>, req: Request) -> Response {
    let (ctx, q) = match signed_get(&st, req).await {
        Ok(x) => x,
        Err(r) => return r,
    };
    let user = field(&q, "user").unwrap_or("").trim().to_owned();
    let bucket = field(&q, "bucket").unwrap_or("").trim().to_owned();
    let key = field(&q, "key").unwrap_or("").to_owned();
    let call = ctx.iam(&st);
    // Names to pick from, when the caller may list them.
    let users = call
        .read_all::<UserList>("ListUsers", &[])
        .await
        .map(|l| l.into_iter().map(|u| u.name).collect())
        .unwrap_or_default();
    let mut view = idviews::Access {
        who: ctx.who(),
        csrf: ctx.csrf(),
        root: ctx.signed.root,
        error: None,
        user: user.clone(),
        bucket: bucket.clone(),
        key: key.clone(),
        subject: String::new(),
        rows: Vec::new(),
        users,
    };
    if bucket.is_empty() {
        return html(view);
    }
    let outcome = async {
        let (auth, subject) = if user.is_empty() {
            let me = ctx.signed.session.access_key.clone();
            let stored = st
                .creds
                .secret_of(&me)
                .await?
                .ok_or_else(IamError::invalid_client_token_id)?;
            (Auth::of_key(me.clone(), &stored), format!("The key {me}"))
        } else {
            let caller = call.caller().await?;
            let u = st.creds.identity().user(&caller.account, &user).await?;
            caller.allow("iam:SimulatePrincipalPolicy", &u.arn())?;
            let auth = auth_of_user(&st, &caller.account.key, &u).await?;
            (auth, format!("The user {} ({})", u.name, u.arn()))
        };
        let rows = decide(&st, &ctx, &auth, &bucket, &key).await?;
        let on = if key.is_empty() {
            format!("bucket {bucket}")
        } else {
            format!("bucket {bucket}, key {key}")
        };
        Ok::<_, IamError>((format!("{subject}, on {on}:"), rows))
    }
    .await;
    match outcome {
        Ok((subject, rows)) => {
            view.subject = subject;
            view.rows = rows;
            html(view)
        }
        Err(e) => {
            view.error = Some(iamcall::reason(&e));
            with_status(html(view), Some(&e))
        }
    }
}

#[cfg(test)]
mod tests {
    /// Every action grids3 knows (but the bypass, asked only beside another) has its row, so
    /// the view cannot fall behind the vocabulary.
    #[test]
    fn every_known_action_has_a_row() {
        let rows = super::rows();
        for a in crate::auth::policy::ACTIONS {
            if *a == crate::s3::actions::BYPASS {
                continue;
            }
            assert!(rows.iter().any(|r| r.action == *a), "no row for {a}");
        }
        assert!(rows
            .iter()
            .any(|r| r.action == "s3:GetObjectVersion" && r.shape.version));
    }
}
