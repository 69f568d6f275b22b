//! The ACL model, as pure functions: grants (a grantee and a permission), the canned ACLs as
//! grant lists, the `x-amz-grant-*` headers, and whether a list of grants allows a principal a
//! permission. Handlers gather the grants (the bucket's from `__metastore`, an object's from
//! its `metadata`), and the authorization (`s3::authz`) and the object step ask [`allows`].
//!
//! What grids3 stores is the grants beyond the owner's: the bucket's owner always has
//! FULL_CONTROL of the bucket and of every object in it (grids3 has no object owners distinct
//! from the bucket's), so ACLs only ever open access to others.

use axum::http::HeaderMap;

use crate::error::{S3Error, S3Result};

/// The AllUsers group: everyone, unsigned requests included.
pub const ALL_USERS: &str = "http://acs.amazonaws.com/groups/global/AllUsers";
/// The AuthenticatedUsers group: any request signed with a valid grids3 key.
pub const AUTHENTICATED_USERS: &str = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers";
/// The LogDelivery group, which grids3 has no use for (it writes no access logs).
const LOG_DELIVERY: &str = "http://acs.amazonaws.com/groups/s3/LogDelivery";

/// An ACL permission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Perm {
    /// Bucket: list. Object: read data and metadata.
    Read,
    /// Bucket: create, overwrite and delete objects. (Not a permission on objects.)
    Write,
    /// Read the ACL.
    ReadAcp,
    /// Write the ACL.
    WriteAcp,
    /// All of the above.
    FullControl,
}

impl Perm {
    /// From the XML / stored name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "READ" => Perm::Read,
            "WRITE" => Perm::Write,
            "READ_ACP" => Perm::ReadAcp,
            "WRITE_ACP" => Perm::WriteAcp,
            "FULL_CONTROL" => Perm::FullControl,
            _ => return None,
        })
    }

    /// The XML / stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Perm::Read => "READ",
            Perm::Write => "WRITE",
            Perm::ReadAcp => "READ_ACP",
            Perm::WriteAcp => "WRITE_ACP",
            Perm::FullControl => "FULL_CONTROL",
        }
    }

    /// Whether holding `self` gives `want`.
    fn covers(self, want: Perm) -> bool {
        self == want || self == Perm::FullControl
    }
}

/// Who a grant is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Grantee {
    /// A grids3 access key, by its canonical user id (see `s3::owner_of`).
    User(String),
    /// Everyone ([`ALL_USERS`]).
    AllUsers,
    /// Any valid key ([`AUTHENTICATED_USERS`]).
    AuthenticatedUsers,
}

impl Grantee {
    /// The stored form: the canonical id, or the group's URI.
    pub fn as_stored(&self) -> &str {
        match self {
            Grantee::User(id) => id,
            Grantee::AllUsers => ALL_USERS,
            Grantee::AuthenticatedUsers => AUTHENTICATED_USERS,
        }
    }

    /// From the stored form.
    pub fn from_stored(s: &str) -> Self {
        match s {
            ALL_USERS => Grantee::AllUsers,
            AUTHENTICATED_USERS => Grantee::AuthenticatedUsers,
            id => Grantee::User(id.to_owned()),
        }
    }

    /// A group grantee from its URI (AWS also accepts the `http://` URI without `www`
    /// variations only; anything else is refused).
    pub fn group(uri: &str) -> S3Result<Self> {
        match uri.trim() {
            ALL_USERS => Ok(Grantee::AllUsers),
            AUTHENTICATED_USERS => Ok(Grantee::AuthenticatedUsers),
            LOG_DELIVERY => Err(S3Error::not_implemented()
                .with_message("grids3 writes no access logs: the LogDelivery group has no use")),
            other => Err(S3Error::invalid_argument(format!(
                "Invalid group uri: {other}"
            ))),
        }
    }
}

/// One grant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// Who.
    pub grantee: Grantee,
    /// What.
    pub perm: Perm,
}

impl Grant {
    /// A grant.
    pub fn new(grantee: Grantee, perm: Perm) -> Self {
        Self { grantee, perm }
    }

    /// The stored pair (grantee, permission).
    pub fn to_stored(&self) -> (String, String) {
        (
            self.grantee.as_stored().to_owned(),
            self.perm.as_str().to_owned(),
        )
    }
}

/// Grants from their stored pairs (unknown permissions, which grids3 never writes, are
/// dropped: they grant nothing).
pub fn from_stored(pairs: &[(String, String)]) -> Vec<Grant> {
    pairs
        .iter()
        .filter_map(|(g, p)| Some(Grant::new(Grantee::from_stored(g), Perm::parse(p)?)))
        .collect()
}

/// Stored pairs from grants.
pub fn to_stored(grants: &[Grant]) -> Vec<(String, String)> {
    grants.iter().map(Grant::to_stored).collect()
}

/// The stored mark of an exact ACL: one set from `x-amz-grant-*` headers or an
/// AccessControlPolicy document, which lists the owner's own grants (or none) itself, so the
/// owner's FULL_CONTROL is not implied. An ACL without it (a canned ACL, or one grids3 stored
/// before exact ACLs) implies the owner's FULL_CONTROL. Its permission parses as none, so
/// [`from_stored`] (and an older grids3) skips it.
const EXACT_MARK: (&str, &str) = ("grids3:exact-acl", "EXACT");

/// Stored pairs from grants, marked exact when they were given explicitly.
pub fn to_stored_as(grants: &[Grant], exact: bool) -> Vec<(String, String)> {
    let mut out = to_stored(grants);
    if exact {
        out.push((EXACT_MARK.0.to_owned(), EXACT_MARK.1.to_owned()));
    }
    out
}

/// Whether stored grants are an exact ACL (see [`to_stored_as`]).
pub fn is_exact(pairs: &[(String, String)]) -> bool {
    pairs
        .iter()
        .any(|(g, p)| g == EXACT_MARK.0 && p == EXACT_MARK.1)
}

/// Whether a request's ACL headers are explicit grants (an exact ACL), not a canned ACL.
pub fn explicit_in_headers(h: &HeaderMap) -> bool {
    GRANT_HEADERS.iter().any(|(n, _)| h.contains_key(*n))
}

/// The order AWS lists grants in, which clients that compare lists in order expect: group
/// grantees first, then canonical users, each in the order granted.
pub fn listing_order(grants: &[Grant]) -> Vec<Grant> {
    let (groups, users): (Vec<Grant>, Vec<Grant>) = grants
        .iter()
        .cloned()
        .partition(|g| !matches!(g.grantee, Grantee::User(_)));
    groups.into_iter().chain(users).collect()
}

/// Who is asking, for an ACL.
#[derive(Clone, Copy, Debug)]
pub enum Principal<'a> {
    /// An unsigned request.
    Anonymous,
    /// A signed request, by the key's canonical user id.
    Key(&'a str),
}

/// Whether `grants` give `who` the permission `want`.
pub fn allows(grants: &[Grant], who: Principal<'_>, want: Perm) -> bool {
    grants.iter().any(|g| {
        g.perm.covers(want)
            && match (&g.grantee, who) {
                (Grantee::AllUsers, _) => true,
                (Grantee::AuthenticatedUsers, Principal::Key(_)) => true,
                (Grantee::User(id), Principal::Key(me)) => id == me,
                _ => false,
            }
    })
}

/// Canned ACLs AWS defines.
pub const CANNED: &[&str] = &[
    "private",
    "public-read",
    "public-read-write",
    "aws-exec-read",
    "authenticated-read",
    "bucket-owner-read",
    "bucket-owner-full-control",
    "log-delivery-write",
];

/// The grants (beyond the owner's) of a canned ACL, on a bucket or an object.
///
/// On an object, `public-read-write` lists AllUsers WRITE as AWS does (three grants with the
/// owner's), though WRITE lets nobody do anything on an object; `bucket-owner-read` and
/// `bucket-owner-full-control` grant nothing more, because the bucket's owner owns every
/// object in grids3. `aws-exec-read` (EC2 reading AMI bundles) and `log-delivery-write`
/// (access logs) name services grids3 does not have, so they are refused.
pub fn canned(acl: &str, _object: bool) -> S3Result<Vec<Grant>> {
    use Grantee::*;
    let g = Grant::new;
    Ok(match acl {
        "private" | "bucket-owner-read" | "bucket-owner-full-control" => vec![],
        "public-read" => vec![g(AllUsers, Perm::Read)],
        // On an object too AWS lists AllUsers WRITE (three grants with the owner's), though
        // WRITE gives nothing on an object: it is listed, and decides nothing.
        "public-read-write" => vec![g(AllUsers, Perm::Read), g(AllUsers, Perm::Write)],
        "authenticated-read" => vec![g(AuthenticatedUsers, Perm::Read)],
        "aws-exec-read" | "log-delivery-write" => {
            return Err(S3Error::not_implemented().with_message(format!(
                "x-amz-acl: {acl} is not implemented: it grants to a service grids3 does not have"
            )))
        }
        other => {
            return Err(S3Error::invalid_argument(format!(
                "Invalid canned ACL: {other}"
            )))
        }
    })
}

/// The `x-amz-grant-*` headers and the permission each gives.
pub const GRANT_HEADERS: &[(&str, Perm)] = &[
    ("x-amz-grant-read", Perm::Read),
    ("x-amz-grant-write", Perm::Write),
    ("x-amz-grant-read-acp", Perm::ReadAcp),
    ("x-amz-grant-write-acp", Perm::WriteAcp),
    ("x-amz-grant-full-control", Perm::FullControl),
];

/// The ACL a request asks for with `x-amz-acl` or `x-amz-grant-*` (`None`: neither header).
/// AWS refuses both kinds at once, and so does grids3. Canonical ids are checked for shape
/// here; whether they name a key is checked by the caller (`known`).
pub fn from_headers(h: &HeaderMap, object: bool) -> S3Result<Option<Vec<Grant>>> {
    let canned_acl = h.get("x-amz-acl").map(|v| v.to_str().unwrap_or("?").trim());
    let has_grants = GRANT_HEADERS.iter().any(|(n, _)| h.contains_key(*n));
    match (canned_acl, has_grants) {
        (None, false) => Ok(None),
        (Some(_), true) => Err(S3Error::invalid_request(
            "Specifying both Canned ACLs and Header Grants is not allowed",
        )),
        (Some(acl), false) => canned(acl, object).map(Some),
        (None, true) => {
            let mut out = Vec::new();
            for (name, perm) in GRANT_HEADERS {
                if object && *perm == Perm::Write && h.contains_key(*name) {
                    return Err(S3Error::not_implemented().with_message(
                        "x-amz-grant-write is not supported for objects (AWS has no object WRITE permission)",
                    ));
                }
                for v in h.get_all(*name) {
                    let v = v.to_str().map_err(|_| bad_grant(name))?;
                    for grantee in parse_grantees(v).ok_or_else(|| bad_grant(name))? {
                        out.push(Grant::new(grantee?, *perm));
                    }
                }
            }
            Ok(Some(out))
        }
    }
}

fn bad_grant(name: &str) -> S3Error {
    S3Error::invalid_argument(format!("Invalid {name} header value"))
}

/// `id="…", uri="…", emailAddress="…"`: the grantees of one grant header (`None`: not that
/// shape).
fn parse_grantees(v: &str) -> Option<Vec<S3Result<Grantee>>> {
    let mut out = Vec::new();
    for item in v.split(',') {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let (k, val) = item.split_once('=')?;
        let val = val.trim().trim_matches('"');
        out.push(match k.trim().to_ascii_lowercase().as_str() {
            "id" => user(val),
            "uri" => Grantee::group(val),
            "emailaddress" => Err(S3Error::unresolvable_grant_by_email()),
            _ => return None,
        });
    }
    (!out.is_empty()).then_some(out)
}

/// A canonical-user grantee: 64 hex digits, as AWS's (and grids3's) canonical ids are.
pub fn user(id: &str) -> S3Result<Grantee> {
    let id = id.trim();
    if id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(Grantee::User(id.to_ascii_lowercase()))
    } else {
        Err(S3Error::invalid_argument("Invalid id"))
    }
}

/// The stored grants of a new object from its request's headers (checked beforehand by
/// [`crate::s3::lookup::request_acl`]; private when there are none).
pub fn object_grants_from_headers(h: &HeaderMap) -> Vec<(String, String)> {
    from_headers(h, true)
        .ok()
        .flatten()
        .map(|g| to_stored_as(&g, explicit_in_headers(h)))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::s3::request::test_headers as headers;

    const ID: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    const OTHER: &str = "f123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    #[test]
    fn decisions_table() {
        use Principal::*;
        let public_rw = canned("public-read-write", false).unwrap();
        let auth_read = canned("authenticated-read", false).unwrap();
        let to_id = vec![Grant::new(Grantee::User(ID.into()), Perm::FullControl)];
        let read_acp = vec![Grant::new(Grantee::User(ID.into()), Perm::ReadAcp)];
        let cases: &[(&[Grant], Principal, Perm, bool)] = &[
            (&[], Anonymous, Perm::Read, false),
            (&[], Key(ID), Perm::Read, false),
            (&public_rw, Anonymous, Perm::Read, true),
            (&public_rw, Anonymous, Perm::Write, true),
            (&public_rw, Anonymous, Perm::ReadAcp, false),
            (&public_rw, Key(ID), Perm::Write, true),
            (&auth_read, Anonymous, Perm::Read, false),
            (&auth_read, Key(OTHER), Perm::Read, true),
            (&auth_read, Key(OTHER), Perm::Write, false),
            (&to_id, Key(ID), Perm::Write, true),
            (&to_id, Key(ID), Perm::WriteAcp, true),
            (&to_id, Key(OTHER), Perm::Read, false),
            (&to_id, Anonymous, Perm::Read, false),
            (&read_acp, Key(ID), Perm::ReadAcp, true),
            (&read_acp, Key(ID), Perm::Read, false),
        ];
        for (i, (grants, who, want, expect)) in cases.iter().enumerate() {
            assert_eq!(allows(grants, *who, *want), *expect, "case {i}");
        }
    }

    #[test]
    fn canned_acls() {
        assert_eq!(canned("private", false).unwrap(), vec![]);
        assert_eq!(canned("bucket-owner-full-control", true).unwrap(), vec![]);
        // Issue 40, item 5: AWS lists AllUsers WRITE on an object too.
        assert_eq!(
            canned("public-read-write", true).unwrap(),
            vec![
                Grant::new(Grantee::AllUsers, Perm::Read),
                Grant::new(Grantee::AllUsers, Perm::Write)
            ]
        );
        assert_eq!(canned("public-read-write", false).unwrap().len(), 2);
        assert_eq!(
            canned("log-delivery-write", false).unwrap_err().code,
            "NotImplemented"
        );
        assert_eq!(
            canned("aws-exec-read", true).unwrap_err().code,
            "NotImplemented"
        );
        assert_eq!(
            canned("nonsense", true).unwrap_err().code,
            "InvalidArgument"
        );
    }

    #[test]
    fn grant_headers() {
        assert_eq!(from_headers(&HeaderMap::new(), true).unwrap(), None);
        let h = headers(&[
            (
                "x-amz-grant-read",
                "uri=\"http://acs.amazonaws.com/groups/global/AllUsers\"",
            ),
            (
                "x-amz-grant-full-control",
                "id=\"0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef\"",
            ),
        ]);
        assert_eq!(
            from_headers(&h, true).unwrap().unwrap(),
            vec![
                Grant::new(Grantee::AllUsers, Perm::Read),
                Grant::new(Grantee::User(ID.into()), Perm::FullControl)
            ]
        );
        let two = headers(&[(
            "x-amz-grant-read",
            "id=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef, uri=http://acs.amazonaws.com/groups/global/AuthenticatedUsers",
        )]);
        assert_eq!(from_headers(&two, false).unwrap().unwrap().len(), 2);
        let code = |pairs: &[(&'static str, &'static str)], object| {
            from_headers(&headers(pairs), object).unwrap_err().code
        };
        assert_eq!(
            code(
                &[("x-amz-acl", "private"), ("x-amz-grant-read", "id=\"x\"")],
                true
            ),
            "InvalidRequest"
        );
        assert_eq!(
            code(&[("x-amz-grant-read", "id=\"short\"")], true),
            "InvalidArgument"
        );
        assert_eq!(
            code(&[("x-amz-grant-read", "nonsense")], true),
            "InvalidArgument"
        );
        assert_eq!(
            code(&[("x-amz-grant-read", "emailAddress=\"a@b.c\"")], true),
            "UnresolvableGrantByEmailAddress"
        );
        assert_eq!(
            code(
                &[(
                    "x-amz-grant-write",
                    "uri=\"http://acs.amazonaws.com/groups/global/AllUsers\""
                )],
                true
            ),
            "NotImplemented"
        );
        assert_eq!(
            code(
                &[(
                    "x-amz-grant-write",
                    "uri=\"http://acs.amazonaws.com/groups/s3/LogDelivery\""
                )],
                false
            ),
            "NotImplemented"
        );
        assert_eq!(code(&[("x-amz-acl", "nonsense")], false), "InvalidArgument");
    }
}
