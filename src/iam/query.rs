//! The request side of the IAM Query API: `Action=CreateUser&Version=2010-05-08&UserName=alice`
//! as a form-urlencoded POST body (what boto3 and the AWS CLI send) or as the URL's query (IAM
//! accepts both; a request may split its parameters between them), read into [`Params`].
//!
//! Lists arrive flattened, the way botocore's `QuerySerializer` writes them:
//! `TagKeys.member.1=a&TagKeys.member.2=b`, and structures in lists as
//! `Tags.member.1.Key=k&Tags.member.1.Value=v`; an empty list is the bare name with an empty
//! value (`Tags=`). Members are numbered from 1 **without gaps**: a request with `.member.1`
//! and `.member.3` but no `.member.2` is refused (`InvalidInput`) rather than read as two
//! members, because a member silently dropped (a tag not applied) is worse than an error no
//! SDK ever provokes (every SDK numbers from 1 consecutively).
//!
//! Bounds: at most [`MAX_PARAMS`] parameters per request (the largest IAM request grids3
//! serves, TagUser with 50 tags, has about 110 with the signing parameters); the body's size
//! is capped by the caller before it is read. The same parameter twice (in the query and the
//! body, or twice in one) with different values is refused: which one would the client mean?

use std::collections::BTreeMap;

use super::error::{IamError, IamResult};
use super::validate::{self, member_name, Check};

/// The one IAM API version.
pub const API_VERSION: &str = "2010-05-08";

/// At most this many parameters in one request.
pub const MAX_PARAMS: usize = 256;

/// `MaxItems` when the request gives none (AWS's default).
pub const DEFAULT_MAX_ITEMS: usize = 100;

/// The largest `MaxItems` (AWS's bound).
pub const MAX_MAX_ITEMS: usize = 1000;

/// At most this many tags in one request (and on one entity: AWS's quota).
pub const MAX_TAGS: usize = 50;

/// The parameters of one IAM request, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    map: BTreeMap<String, String>,
    action: String,
}

impl Params {
    /// Reads the URL's raw query (if any) and the form body together, then checks `Action`
    /// (present: else `MissingAction`) and `Version` (`2010-05-08`: else `InvalidAction`, as
    /// AWS answers an operation not found for the version asked).
    pub fn parse(query: Option<&str>, body: &[u8]) -> IamResult<Self> {
        Self::parse_for(query, body, API_VERSION)
    }

    /// [`Params::parse`] for another Query service's `version` (STS's `2011-06-15`).
    pub fn parse_for(query: Option<&str>, body: &[u8], version: &str) -> IamResult<Self> {
        let body = std::str::from_utf8(body).map_err(|_| {
            IamError::malformed_query_string("The request body is not UTF-8 form data.")
        })?;
        let mut pairs = decode_pairs(query.unwrap_or(""))?;
        pairs.extend(decode_pairs(body)?);
        Self::from_pairs_for(pairs, version)
    }

    /// The same from decoded pairs.
    pub fn from_pairs(pairs: impl IntoIterator<Item = (String, String)>) -> IamResult<Self> {
        Self::from_pairs_for(pairs, API_VERSION)
    }

    fn from_pairs_for(
        pairs: impl IntoIterator<Item = (String, String)>,
        version: &str,
    ) -> IamResult<Self> {
        let mut map = BTreeMap::new();
        for (k, v) in pairs {
            if map.len() >= MAX_PARAMS && !map.contains_key(&k) {
                return Err(IamError::invalid_input(format!(
                    "The request has more than {MAX_PARAMS} parameters."
                )));
            }
            match map.get(&k) {
                Some(old) if *old != v => {
                    return Err(IamError::invalid_input(format!(
                        "The parameter {k} is given more than once with different values."
                    )))
                }
                Some(_) => {}
                None => {
                    map.insert(k, v);
                }
            }
        }
        let action = match map.get("Action") {
            Some(a) if !a.is_empty() => a.clone(),
            _ => return Err(IamError::missing_action()),
        };
        match map.get("Version").map(String::as_str) {
            Some(v) if v == version => {}
            Some(v) if !v.is_empty() => return Err(IamError::invalid_action(&action, v)),
            _ => return Err(IamError::invalid_action(&action, "NO_VERSION_SPECIFIED")),
        }
        Ok(Self { map, action })
    }

    /// The `Action` parameter (present and non-empty; whether it names an operation is the
    /// dispatcher's question: `InvalidAction` or `NotImplemented`).
    pub fn action(&self) -> &str {
        &self.action
    }

    /// A parameter as sent (`Some("")` for `Name=`).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.map.get(name).map(String::as_str)
    }

    /// Every parameter name (signing parameters included), in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.map.keys().map(String::as_str)
    }

    /// A required parameter: missing is AWS's `ValidationError` "1 validation error
    /// detected: Value at 'userName' failed to satisfy constraint: Member must not be null".
    pub fn required(&self, name: &str) -> IamResult<&str> {
        self.get(name)
            .ok_or_else(|| IamError::validation(&member_name(name), "Member must not be null"))
    }

    /// A required parameter that must also pass `check` (one of [`validate`]'s checks).
    pub fn required_checked(&self, name: &str, check: Check) -> IamResult<&str> {
        let v = self.required(name)?;
        check(name, v)?;
        Ok(v)
    }

    /// An optional parameter that, when given, must pass `check`.
    pub fn checked(&self, name: &str, check: Check) -> IamResult<Option<&str>> {
        match self.get(name) {
            Some(v) => {
                check(name, v)?;
                Ok(Some(v))
            }
            None => Ok(None),
        }
    }

    /// A boolean parameter (`SetAsDefault`, `OnlyAttached`): `true` or `false` (any case).
    pub fn bool(&self, name: &str) -> IamResult<Option<bool>> {
        match self.get(name) {
            None => Ok(None),
            Some(v) if v.eq_ignore_ascii_case("true") => Ok(Some(true)),
            Some(v) if v.eq_ignore_ascii_case("false") => Ok(Some(false)),
            Some(v) => Err(IamError::validation_value(
                &member_name(name),
                v,
                "Member must be true or false",
            )),
        }
    }

    /// `MaxItems`: 1..=1000, [`DEFAULT_MAX_ITEMS`] when absent.
    pub fn max_items(&self) -> IamResult<usize> {
        let Some(v) = self.get("MaxItems") else {
            return Ok(DEFAULT_MAX_ITEMS);
        };
        // One message for every value outside 1..=1000, a non-number included.
        let bad = || {
            IamError::validation_value("maxItems", v, "Member must have value between 1 and 1000")
        };
        let n: usize = v.parse().map_err(|_| bad())?;
        if !(1..=MAX_MAX_ITEMS).contains(&n) {
            return Err(bad());
        }
        Ok(n)
    }

    /// `Marker`: 1..320 characters of `[\u0020-\u00FF]`, as modelled. Whether it is one of
    /// ours (a marker grids3 gave out) is the handler's question (`InvalidInput` if not).
    pub fn marker(&self) -> IamResult<Option<&str>> {
        self.checked("Marker", validate::marker)
    }

    /// The members of a list of strings (`TagKeys.member.N`), in N order; empty for `Name=`
    /// or no members at all.
    pub fn list(&self, name: &str) -> IamResult<Vec<&str>> {
        let members = self.members(name)?;
        let mut out = Vec::with_capacity(members.len());
        for (n, fields) in members {
            match fields.as_slice() {
                [("", v)] => out.push(*v),
                _ => {
                    return Err(IamError::invalid_input(format!(
                        "{name}.member.{n} must be a single value."
                    )))
                }
            }
        }
        Ok(out)
    }

    /// The tags of `Tags.member.N.Key` / `.Value`, in N order, checked as AWS checks them: at
    /// most 50, each key 1..128 and value 0..256 characters of the tag alphabet, both present
    /// (else `MissingParameter`), no key twice (case-insensitively), no key beginning with
    /// `aws:`.
    pub fn tags(&self, name: &str) -> IamResult<Vec<(String, String)>> {
        let members = self.members(name)?;
        if members.len() > MAX_TAGS {
            return Err(IamError::validation(
                &member_name(name),
                "Member must have length less than or equal to 50",
            ));
        }
        let mut out: Vec<(String, String)> = Vec::with_capacity(members.len());
        for (n, fields) in members {
            let mut key = None;
            let mut value = None;
            for (field, v) in fields {
                match field {
                    "Key" => key = Some(v),
                    "Value" => value = Some(v),
                    _ => {
                        return Err(IamError::invalid_input(format!(
                            "{name}.member.{n}.{field} is not a field of a tag."
                        )))
                    }
                }
            }
            let at = |f: &str| format!("{}.{n}.member.{f}", member_name(name));
            let key =
                key.ok_or_else(|| IamError::missing_parameter(&format!("{name}.member.{n}.Key")))?;
            let value = value
                .ok_or_else(|| IamError::missing_parameter(&format!("{name}.member.{n}.Value")))?;
            validate::tag_key_at(&at("key"), key)?;
            validate::tag_value_at(&at("value"), value)?;
            if out.iter().any(|(k, _)| k.eq_ignore_ascii_case(key)) {
                return Err(IamError::invalid_input(
                    "Duplicate tag keys found. Please note that Tag keys are case insensitive.",
                ));
            }
            out.push((key.to_owned(), value.to_owned()));
        }
        Ok(out)
    }

    /// The members of a list of tag keys (`TagKeys.member.N`, UntagUser): at most 50, each a
    /// valid tag key.
    pub fn tag_keys(&self, name: &str) -> IamResult<Vec<&str>> {
        let keys = self.list(name)?;
        if keys.len() > MAX_TAGS {
            return Err(IamError::validation(
                &member_name(name),
                "Member must have length less than or equal to 50",
            ));
        }
        for (i, k) in keys.iter().enumerate() {
            validate::tag_key_at(&format!("{}.{}.member", member_name(name), i + 1), k)?;
        }
        Ok(keys)
    }

    /// The members of list `name` by number, each with its fields (`""` for a plain member,
    /// `"Key"`/`"Value"` for `.member.N.Key`), numbered 1..=n without gaps.
    fn members(&self, name: &str) -> IamResult<Vec<(u32, Fields<'_>)>> {
        let prefix = format!("{name}.member.");
        let mut by_n: BTreeMap<u32, Fields<'_>> = BTreeMap::new();
        for (k, v) in self.map.range(prefix.clone()..) {
            let Some(rest) = k.strip_prefix(&prefix) else {
                break;
            };
            let (num, field) = rest.split_once('.').unwrap_or((rest, ""));
            let n = index(num).ok_or_else(|| {
                IamError::invalid_input(format!(
                    "{k}: list members are numbered 1, 2, 3... (no zero, sign or leading zero)."
                ))
            })?;
            by_n.entry(n).or_default().push((field, v.as_str()));
        }
        if let Some(v) = self.get(name) {
            if !v.is_empty() || !by_n.is_empty() {
                return Err(IamError::invalid_input(format!(
                    "{name} is a list: give its members as {name}.member.N (or {name}= for none)."
                )));
            }
        }
        for (i, n) in by_n.keys().enumerate() {
            if *n as usize != i + 1 {
                return Err(IamError::invalid_input(format!(
                    "{name}.member.{n} is given but {name}.member.{} is not: list members are numbered from 1 without gaps.",
                    i + 1
                )));
            }
        }
        Ok(by_n.into_iter().collect())
    }
}

/// The fields of one list member: `(field, value)`, field `""` for a plain member.
type Fields<'a> = Vec<(&'a str, &'a str)>;

/// A list index: decimal, no sign, no leading zero, at least 1.
fn index(s: &str) -> Option<u32> {
    if s.is_empty() || s.len() > 4 || s.starts_with('0') || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// `a=1&b=x+y%21` as decoded pairs: `+` is a space (form encoding; a literal `+` arrives as
/// `%2B`), `%XX` a byte, and the bytes must be UTF-8. A segment without `=` is a name with an
/// empty value; empty segments are skipped.
fn decode_pairs(raw: &str) -> IamResult<Vec<(String, String)>> {
    let mut out = Vec::new();
    for seg in raw.split('&').filter(|s| !s.is_empty()) {
        if out.len() > MAX_PARAMS {
            return Err(IamError::invalid_input(format!(
                "The request has more than {MAX_PARAMS} parameters."
            )));
        }
        let (k, v) = seg.split_once('=').unwrap_or((seg, ""));
        out.push((decode(k)?, decode(v)?));
    }
    Ok(out)
}

fn decode(s: &str) -> IamResult<String> {
    let plus = s.replace('+', " ");
    percent_encoding::percent_decode_str(&plus)
        .decode_utf8()
        .map(|c| c.into_owned())
        .map_err(|_| {
            IamError::malformed_query_string("A parameter is not UTF-8 once percent-decoded.")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(body: &str) -> IamResult<Params> {
        Params::parse(None, body.as_bytes())
    }

    const V: &str = "Action=CreateUser&Version=2010-05-08";

    #[test]
    fn parses_body_and_query_together() {
        let q = p("Action=CreateUser&Version=2010-05-08&UserName=al%2Bice&Path=%2Fa+b%2F").unwrap();
        assert_eq!(q.action(), "CreateUser");
        assert_eq!(q.get("UserName"), Some("al+ice"));
        assert_eq!(q.get("Path"), Some("/a b/"));
        assert_eq!(q.get("Nope"), None);
        let q = Params::parse(Some("Action=GetUser&Version=2010-05-08"), b"UserName=bob").unwrap();
        assert_eq!((q.action(), q.get("UserName")), ("GetUser", Some("bob")));
        // The same value twice is one parameter; two values are refused.
        assert!(Params::parse(Some(V), format!("{V}&UserName=a").as_bytes()).is_ok());
        let e = Params::parse(Some("UserName=a"), format!("{V}&UserName=b").as_bytes());
        assert_eq!(e.unwrap_err().code, "InvalidInput");
        // A name without `=` has an empty value; empty segments are skipped.
        let q = p(&format!("{V}&&Tags&")).unwrap();
        assert_eq!(q.get("Tags"), Some(""));
    }

    /// Bodies as boto3 1.44 sent them (captured from a local server; one tag value changed,
    /// since `&` is outside the tag alphabet): `+` for a space, the empty list as `Tags=`,
    /// booleans as `true`.
    #[test]
    fn boto3_bodies() {
        let q = p("Action=CreateUser&Version=2010-05-08&UserName=alice&Path=%2Fa+b%2F&Tags.member.1.Key=team&Tags.member.1.Value=a%2Bb%3Dc%3A%2Fd+e&Tags.member.2.Key=env&Tags.member.2.Value=").unwrap();
        assert_eq!(
            q.required_checked("UserName", validate::user_name).unwrap(),
            "alice"
        );
        assert_eq!(q.get("Path"), Some("/a b/"));
        assert_eq!(
            q.tags("Tags").unwrap(),
            vec![
                ("team".into(), "a+b=c:/d e".into()),
                ("env".into(), "".into())
            ]
        );
        let q = p("Action=UntagUser&Version=2010-05-08&UserName=alice&TagKeys.member.1=team&TagKeys.member.2=env").unwrap();
        assert_eq!(q.tag_keys("TagKeys").unwrap(), ["team", "env"]);
        let q = p("Action=TagUser&Version=2010-05-08&UserName=alice&Tags=").unwrap();
        assert_eq!(q.tags("Tags").unwrap(), vec![]);
        let q = p("Action=PutUserPolicy&Version=2010-05-08&UserName=alice&PolicyName=p&PolicyDocument=%7B%22Version%22%3A+%222012-10-17%22%2C+%22Statement%22%3A+%5B%7B%22Effect%22%3A+%22Allow%22%2C+%22Action%22%3A+%22s3%3A%2A%22%2C+%22Resource%22%3A+%22%2A%22%7D%5D%7D").unwrap();
        assert_eq!(
            q.required_checked("PolicyDocument", validate::policy_document).unwrap(),
            "{\"Version\": \"2012-10-17\", \"Statement\": [{\"Effect\": \"Allow\", \"Action\": \"s3:*\", \"Resource\": \"*\"}]}"
        );
        let q = p("Action=ListPolicies&Version=2010-05-08&OnlyAttached=true&MaxItems=5&Marker=abc")
            .unwrap();
        assert_eq!(q.bool("OnlyAttached").unwrap(), Some(true));
        assert_eq!(q.max_items().unwrap(), 5);
        assert_eq!(q.marker().unwrap(), Some("abc"));
    }

    /// Every body boto3 sent in `tests/py/iam_shapes.py` (written with `--bodies FILE`, read
    /// from `IAM_BODIES`; run with `--ignored`) parses, and each parameter passes its check.
    #[test]
    #[ignore]
    fn captured_boto3_bodies() {
        let path = std::env::var("IAM_BODIES").expect("IAM_BODIES names the captured bodies");
        let sent: Vec<(String, String)> =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert!(sent.len() > 40, "{} bodies", sent.len());
        for (action, body) in &sent {
            let q = Params::parse(None, body.as_bytes()).unwrap_or_else(|e| panic!("{body}: {e}"));
            assert_eq!(q.action(), action);
            let checks: &[(&str, Check)] = &[
                ("UserName", validate::existing_user_name),
                ("NewUserName", validate::user_name),
                ("GroupName", validate::group_name),
                ("PolicyName", validate::policy_name),
                ("NewPath", validate::path),
                ("PathPrefix", validate::path_prefix),
                ("PolicyDocument", validate::policy_document),
                ("Description", validate::description),
                ("PolicyArn", validate::policy_arn_check),
                ("VersionId", validate::version_id),
                ("AccessKeyId", validate::access_key_id),
                ("Status", validate::access_key_status_check),
            ];
            for (name, check) in checks {
                q.checked(name, *check)
                    .unwrap_or_else(|e| panic!("{action} {name}: {e}"));
            }
            let path_check: Check = if action == "CreatePolicy" {
                validate::policy_path
            } else {
                validate::path
            };
            q.checked("Path", path_check).unwrap();
            q.tags("Tags").unwrap_or_else(|e| panic!("{action}: {e}"));
            q.tag_keys("TagKeys").unwrap();
            q.max_items().unwrap();
            q.marker().unwrap();
            q.bool("SetAsDefault").unwrap();
            q.bool("OnlyAttached").unwrap();
        }
    }

    #[test]
    fn action_and_version() {
        assert_eq!(p("Version=2010-05-08").unwrap_err().code, "MissingAction");
        assert_eq!(
            p("Action=&Version=2010-05-08").unwrap_err().code,
            "MissingAction"
        );
        let e = p("Action=ListUsers&Version=2011-01-01").unwrap_err();
        assert_eq!((e.status.as_u16(), e.code), (400, "InvalidAction"));
        assert_eq!(
            e.message,
            "Could not find operation ListUsers for version 2011-01-01"
        );
        let e = p("Action=ListUsers").unwrap_err();
        assert_eq!(
            e.message,
            "Could not find operation ListUsers for version NO_VERSION_SPECIFIED"
        );
    }

    #[test]
    fn undecodable_and_too_many() {
        let e = Params::parse(None, b"Action=A&Version=2010-05-08&X=%FF").unwrap_err();
        assert_eq!((e.status.as_u16(), e.code), (404, "MalformedQueryString"));
        let e = Params::parse(None, b"Action=A&Version=2010-05-08&X=\xff").unwrap_err();
        assert_eq!(e.code, "MalformedQueryString");
        let mut body = V.to_owned();
        for i in 0..MAX_PARAMS - 2 {
            body.push_str(&format!("&P{i}=x"));
        }
        assert!(p(&body).is_ok(), "exactly {MAX_PARAMS} parameters pass");
        body.push_str("&One=more");
        assert_eq!(p(&body).unwrap_err().code, "InvalidInput");
    }

    #[test]
    fn required_is_aws_null_message() {
        let q = p(V).unwrap();
        let e = q.required("UserName").unwrap_err();
        assert_eq!((e.status.as_u16(), e.code), (400, "ValidationError"));
        assert_eq!(
            e.message,
            "1 validation error detected: Value at 'userName' failed to satisfy constraint: Member must not be null"
        );
        let q = p(&format!("{V}&UserName=bad%20name")).unwrap();
        let e = q
            .required_checked("UserName", validate::user_name)
            .unwrap_err();
        assert_eq!(e.code, "ValidationError");
        assert!(
            e.message.contains("value for userName is invalid"),
            "{}",
            e.message
        );
        assert_eq!(q.checked("Path", validate::path).unwrap(), None);
    }

    #[test]
    fn lists_in_member_order() {
        let q = p(&format!(
            "{V}&TagKeys.member.2=b&TagKeys.member.10=j&TagKeys.member.1=a&{}",
            (3..=9)
                .map(|i| format!("TagKeys.member.{i}=k{i}"))
                .collect::<Vec<_>>()
                .join("&")
        ))
        .unwrap();
        let l = q.list("TagKeys").unwrap();
        assert_eq!(l[..3], ["a", "b", "k3"]);
        assert_eq!(l[9], "j");
        // None, or the bare name for an empty list.
        assert!(p(V).unwrap().list("TagKeys").unwrap().is_empty());
        assert!(p(&format!("{V}&TagKeys="))
            .unwrap()
            .list("TagKeys")
            .unwrap()
            .is_empty());
    }

    #[test]
    fn lists_refuse_gaps_and_odd_indexes() {
        for bad in [
            "TagKeys.member.1=a&TagKeys.member.3=c",
            "TagKeys.member.2=b",
            "TagKeys.member.0=a",
            "TagKeys.member.01=a",
            "TagKeys.member.x=a",
            "TagKeys.member.-1=a",
            "TagKeys.member.1.Key=a",
            "TagKeys=a",
            "TagKeys=&TagKeys.member.1=a",
        ] {
            let e = p(&format!("{V}&{bad}"))
                .unwrap()
                .list("TagKeys")
                .unwrap_err();
            assert_eq!(e.code, "InvalidInput", "{bad}");
        }
    }

    #[test]
    fn tags_parse_and_validate() {
        let q = p(&format!(
            "{V}&Tags.member.1.Key=team&Tags.member.1.Value=&Tags.member.2.Value=v2&Tags.member.2.Key=env"
        ))
        .unwrap();
        assert_eq!(
            q.tags("Tags").unwrap(),
            vec![("team".into(), "".into()), ("env".into(), "v2".into())]
        );
        let err = |s: &str| p(&format!("{V}&{s}")).unwrap().tags("Tags").unwrap_err();
        let e = err("Tags.member.1.Key=a");
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                "MissingParameter",
                "The request must contain the parameter Tags.member.1.Value."
            )
        );
        let e = err("Tags.member.1.Value=a");
        assert_eq!(
            (e.code, e.message.as_str()),
            (
                "MissingParameter",
                "The request must contain the parameter Tags.member.1.Key."
            )
        );
        let e = err(
            "Tags.member.1.Key=a&Tags.member.1.Value=&Tags.member.2.Key=A&Tags.member.2.Value=",
        );
        assert_eq!(e.code, "InvalidInput");
        assert!(e.message.starts_with("Duplicate tag keys found."));
        let e = err("Tags.member.1.Key=a&Tags.member.1.Value=&Tags.member.1.Colour=red");
        assert_eq!(e.code, "InvalidInput");
        let e = err("Tags.member.1.Key=a%21&Tags.member.1.Value=");
        assert_eq!(e.code, "ValidationError");
        assert!(
            e.message.contains("at 'tags.1.member.key'"),
            "{}",
            e.message
        );
        let e = err("Tags.member.1.Key=aws%3Aname&Tags.member.1.Value=");
        assert_eq!(e.code, "InvalidInput");
        let e = err(
            "Tags.member.1.Key=a&Tags.member.1.Value=&Tags.member.3.Key=c&Tags.member.3.Value=",
        );
        assert_eq!(e.code, "InvalidInput");
        let fifty = |n: usize| {
            (1..=n)
                .map(|i| format!("Tags.member.{i}.Key=k{i}&Tags.member.{i}.Value=v"))
                .collect::<Vec<_>>()
                .join("&")
        };
        assert_eq!(
            p(&format!("{V}&{}", fifty(50)))
                .unwrap()
                .tags("Tags")
                .unwrap()
                .len(),
            50
        );
        let e = p(&format!("{V}&{}", fifty(51)))
            .unwrap()
            .tags("Tags")
            .unwrap_err();
        assert_eq!(e.code, "ValidationError");
        assert!(
            e.message.contains("less than or equal to 50"),
            "{}",
            e.message
        );
    }

    #[test]
    fn tag_keys_bounded() {
        let keys = |n: usize| {
            (1..=n)
                .map(|i| format!("TagKeys.member.{i}=k{i}"))
                .collect::<Vec<_>>()
                .join("&")
        };
        let q = p(&format!("{V}&{}", keys(50))).unwrap();
        assert_eq!(q.tag_keys("TagKeys").unwrap().len(), 50);
        let q = p(&format!("{V}&{}", keys(51))).unwrap();
        assert_eq!(q.tag_keys("TagKeys").unwrap_err().code, "ValidationError");
        let q = p(&format!("{V}&TagKeys.member.1=a%3Cb")).unwrap();
        assert_eq!(q.tag_keys("TagKeys").unwrap_err().code, "ValidationError");
    }

    #[test]
    fn max_items_marker_bool() {
        assert_eq!(p(V).unwrap().max_items().unwrap(), 100);
        let mi = |v: &str| p(&format!("{V}&MaxItems={v}")).unwrap().max_items();
        assert_eq!(mi("1").unwrap(), 1);
        assert_eq!(mi("1000").unwrap(), 1000);
        for bad in ["0", "1001", "-5", "abc", "", "99999999999999999999"] {
            let e = mi(bad).unwrap_err();
            assert_eq!(e.code, "ValidationError", "{bad}");
            assert_eq!(e.message, format!("1 validation error detected: Value '{bad}' at 'maxItems' failed to satisfy constraint: Member must have value between 1 and 1000"));
        }
        assert_eq!(p(V).unwrap().marker().unwrap(), None);
        let mk = |v: &str| {
            p(&format!("{V}&Marker={v}"))
                .unwrap()
                .marker()
                .map(|m| m.map(str::to_owned))
        };
        assert_eq!(mk("abc").unwrap().as_deref(), Some("abc"));
        assert_eq!(mk("").unwrap_err().code, "ValidationError");
        assert_eq!(mk(&"a".repeat(321)).unwrap_err().code, "ValidationError");
        assert!(mk(&"a".repeat(320)).is_ok());
        assert_eq!(mk("%0A").unwrap_err().code, "ValidationError");
        let b = |v: &str| {
            p(&format!("{V}&SetAsDefault={v}"))
                .unwrap()
                .bool("SetAsDefault")
        };
        assert_eq!(b("true").unwrap(), Some(true));
        assert_eq!(b("False").unwrap(), Some(false));
        assert_eq!(b("yes").unwrap_err().code, "ValidationError");
        assert_eq!(p(V).unwrap().bool("SetAsDefault").unwrap(), None);
    }
}
