//! IAM's documented constraints on parameters (the API reference's "Length Constraints" and
//! "Pattern" lines, which botocore's model carries too), and the per-entity policy size quotas.
//!
//! A value outside its length, pattern or enum is AWS's `ValidationError` with the
//! constraint in AWS's words; a value inside them that still is not valid (an ARN of the wrong
//! shape, a reserved tag key) is `InvalidInput`.
//!
//! Lengths count UTF-16 code units, as AWS's Java services count a `String`'s length (for the
//! ASCII and Latin-1 alphabets most constraints allow, that is the number of characters).
//! `\w` in AWS's patterns is Java's: ASCII letters, digits and `_`.
//!
//! Every check has the shape [`Check`]: the parameter's Query name (`UserName`) and its value;
//! AWS's message names the member with a lower-case first letter (`userName`).

use super::error::{IamError, IamResult};

/// A check of one parameter: `(Query name, value)`.
pub type Check = fn(&str, &str) -> IamResult<()>;

/// A managed policy's document: at most this many non-whitespace characters.
pub const MANAGED_POLICY_MAX_CHARS: usize = 6144;
/// All inline policies of one user together.
pub const USER_INLINE_POLICIES_MAX_CHARS: usize = 2048;
/// All inline policies of one group together.
pub const GROUP_INLINE_POLICIES_MAX_CHARS: usize = 5120;
/// All inline policies of one role together.
pub const ROLE_INLINE_POLICIES_MAX_CHARS: usize = 10240;

/// The model's member name for a Query parameter: `UserName` -> `userName`.
pub fn member_name(param: &str) -> String {
    let mut c = param.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => String::new(),
    }
}

fn units(v: &str) -> usize {
    v.encode_utf16().count()
}

/// Length `min..=max` (`max` None: unbounded), AWS's message for the first bound broken.
fn length(member: &str, v: &str, min: usize, max: Option<usize>) -> IamResult<()> {
    let n = units(v);
    if n < min {
        return Err(IamError::validation(
            member,
            &format!("Member must have length greater than or equal to {min}"),
        ));
    }
    if let Some(max) = max.filter(|m| n > *m) {
        return Err(IamError::validation(
            member,
            &format!("Member must have length less than or equal to {max}"),
        ));
    }
    Ok(())
}

fn pattern(member: &str, ok: bool, pattern: &str) -> IamResult<()> {
    if ok {
        Ok(())
    } else {
        Err(IamError::validation(
            member,
            &format!("Member must satisfy regular expression pattern: {pattern}"),
        ))
    }
}

fn name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "_+=,.@-".contains(c)
}

/// A name outside `[\w+=,.@-]+`: IAM words this one itself (seen from AWS for `roleName`,
/// `groupName`, `policyName`), not in the generic constraint form.
fn name(param: &str, v: &str, max: usize) -> IamResult<()> {
    let m = member_name(param);
    length(&m, v, 1, Some(max))?;
    if v.chars().all(name_char) {
        return Ok(());
    }
    Err(IamError::validation_error(format!(
        "The specified value for {m} is invalid. It must contain only alphanumeric characters and/or the following: +=,.@_-"
    )))
}

/// A new user's name (CreateUser `UserName`, UpdateUser `NewUserName`): 1..64 of
/// `[\w+=,.@-]`.
pub fn user_name(param: &str, v: &str) -> IamResult<()> {
    name(param, v, 64)
}

/// An existing user's name (GetUser, DeleteUser, ...): AWS allows 1..128 there.
pub fn existing_user_name(param: &str, v: &str) -> IamResult<()> {
    name(param, v, 128)
}

/// A group's name: 1..128 of `[\w+=,.@-]`.
pub fn group_name(param: &str, v: &str) -> IamResult<()> {
    name(param, v, 128)
}

/// A policy's name (managed or inline): 1..128 of `[\w+=,.@-]`.
pub fn policy_name(param: &str, v: &str) -> IamResult<()> {
    name(param, v, 128)
}

/// A role's name: 1..64 of `[\w+=,.@-]` (AWS's `roleNameType` is 64, not 128).
pub fn role_name(param: &str, v: &str) -> IamResult<()> {
    name(param, v, 64)
}

/// An entity's path (`Path`, `NewPath`): `/` or `/` + printable ASCII + `/`
/// (`(\u002F)|(\u002F[\u0021-\u007E]+\u002F)`), 1..512.
pub fn path(param: &str, v: &str) -> IamResult<()> {
    let m = member_name(param);
    length(&m, v, 1, Some(512))?;
    let ok = v == "/"
        || (v.len() >= 3
            && v.starts_with('/')
            && v.ends_with('/')
            && v.bytes().all(|b| (0x21..=0x7e).contains(&b)));
    if ok {
        return Ok(());
    }
    // IAM's own wording for a path outside its pattern.
    Err(IamError::validation_error(format!(
        "The specified value for {m} is invalid. It must begin and end with / and contain only alphanumeric characters and/or / characters."
    )))
}

/// A `PathPrefix` of ListUsers/ListGroups/ListEntitiesForPolicy: `/` then `[\u0021-\u007F]*`,
/// 1..512.
pub fn path_prefix(param: &str, v: &str) -> IamResult<()> {
    let m = member_name(param);
    length(&m, v, 1, Some(512))?;
    let ok = v.starts_with('/') && v.bytes().all(|b| (0x21..=0x7f).contains(&b));
    if ok {
        return Ok(());
    }
    // IAM's own wording, as for paths.
    Err(IamError::validation_error(format!(
        "The specified value for {m} is invalid. It must begin with the / character and contain only alphanumeric characters and/or / characters."
    )))
}

/// A managed policy's path (CreatePolicy `Path`, ListPolicies and ListAttached*Policies
/// `PathPrefix`): `((/[A-Za-z0-9\.,\+@=_-]+)*)/`, 1..512.
pub fn policy_path(param: &str, v: &str) -> IamResult<()> {
    let m = member_name(param);
    length(&m, v, 1, Some(512))?;
    let seg_ok = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || ".,+@=_-".contains(c))
    };
    let ok = match v.strip_suffix('/') {
        Some("") => true,
        Some(inner) => inner
            .strip_prefix('/')
            .is_some_and(|rest| rest.split('/').all(seg_ok)),
        None => false,
    };
    pattern(&m, ok, "((/[A-Za-z0-9\\.,\\+@=_-]+)*)/")
}

/// A policy document as the protocol allows it: 1..131072 characters of
/// `[\u0009\u000A\u000D\u0020-\u00FF]`. Whether it is a policy is `MalformedPolicyDocument`
/// (the policy parser's question); whether it fits the entity's quota is `LimitExceeded`
/// ([`managed_policy_size`], [`inline_policies_size`]).
pub fn policy_document(param: &str, v: &str) -> IamResult<()> {
    let m = member_name(param);
    length(&m, v, 1, Some(131_072))?;
    let ok = v
        .chars()
        .all(|c| matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{ff}'));
    pattern(&m, ok, "[\\u0009\\u000A\\u000D\\u0020-\\u00FF]+")
}

/// A policy's description: at most 1000 characters. AWS models no pattern; grids3 refuses
/// control characters other than tab, newline and carriage return, which XML 1.0 cannot carry
/// in the answer (AWS's behaviour for them is not documented).
pub fn description(param: &str, v: &str) -> IamResult<()> {
    let m = member_name(param);
    length(&m, v, 0, Some(1000))?;
    let ok = v.chars().all(|c| {
        (!c.is_control() || matches!(c, '\t' | '\n' | '\r'))
            && !matches!(c, '\u{fffe}' | '\u{ffff}')
    });
    if ok {
        Ok(())
    } else {
        Err(IamError::invalid_input(format!(
            "The {param} contains control characters."
        )))
    }
}

/// `\p{Z}`: the space, line and paragraph separators.
fn separator(c: char) -> bool {
    matches!(
        c,
        ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}'
    )
}

/// The tag alphabet `[\p{L}\p{Z}\p{N}_.:/=+\-@]`. `\p{L}` is approximated by Rust's
/// `is_alphabetic` (which also admits letter-like numbers and some combining marks).
fn tag_char(c: char) -> bool {
    c.is_alphabetic() || c.is_numeric() || separator(c) || "_.:/=+-@".contains(c)
}

/// A tag key at a member path (`tags.1.member.key`): 1..128 of the tag alphabet, and not
/// beginning with `aws:` (AWS reserves that prefix for its own tags).
pub fn tag_key_at(member: &str, v: &str) -> IamResult<()> {
    length(member, v, 1, Some(128))?;
    pattern(
        member,
        v.chars().all(tag_char),
        "[\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]+",
    )?;
    if v.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("aws:")) {
        return Err(IamError::invalid_input(
            "Tag keys beginning with 'aws:' are reserved for AWS use.",
        ));
    }
    Ok(())
}

/// A tag value at a member path: 0..256 of the tag alphabet.
pub fn tag_value_at(member: &str, v: &str) -> IamResult<()> {
    length(member, v, 0, Some(256))?;
    pattern(
        member,
        v.chars().all(tag_char),
        "[\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]*",
    )
}

/// `Marker`: 1..320 characters of `[\u0020-\u00FF]`.
pub fn marker(param: &str, v: &str) -> IamResult<()> {
    let m = member_name(param);
    length(&m, v, 1, Some(320))?;
    pattern(
        &m,
        v.chars().all(|c| ('\u{20}'..='\u{ff}').contains(&c)),
        "[\\u0020-\\u00FF]+",
    )
}

/// An access key id: 16..128 of `[\w]`.
pub fn access_key_id(param: &str, v: &str) -> IamResult<()> {
    let m = member_name(param);
    length(&m, v, 16, Some(128))?;
    pattern(
        &m,
        v.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'),
        "[\\w]+",
    )
}

/// An access key's status as UpdateAccessKey sets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyStatus {
    /// The key signs requests.
    Active,
    /// The key is kept but refused.
    Inactive,
}

impl KeyStatus {
    /// The wire word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "Active",
            Self::Inactive => "Inactive",
        }
    }
}

/// `Status`: `Active` or `Inactive` (exact case). AWS's enum also lists `Expired`, which no
/// client can set: grids3 refuses it as `InvalidInput`.
pub fn access_key_status(param: &str, v: &str) -> IamResult<KeyStatus> {
    match v {
        "Active" => Ok(KeyStatus::Active),
        "Inactive" => Ok(KeyStatus::Inactive),
        "Expired" => Err(IamError::invalid_input(
            "An access key's status can be set to Active or Inactive only.",
        )),
        _ => Err(IamError::validation(
            &member_name(param),
            "Member must satisfy enum value set: [Active, Inactive, Expired]",
        )),
    }
}

/// [`access_key_status`] as a [`Check`].
pub fn access_key_status_check(param: &str, v: &str) -> IamResult<()> {
    access_key_status(param, v).map(|_| ())
}

/// A policy version id: `v[1-9][0-9]*(\.[A-Za-z0-9-]*)?` (grids3 gives out `v1`, `v2`...).
pub fn version_id(param: &str, v: &str) -> IamResult<()> {
    let ok = v.strip_prefix('v').is_some_and(|rest| {
        let (num, suffix) = match rest.split_once('.') {
            Some((n, s)) => (n, Some(s)),
            None => (rest, None),
        };
        !num.is_empty()
            && !num.starts_with('0')
            && num.bytes().all(|b| b.is_ascii_digit())
            && suffix.is_none_or(|s| s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
    });
    pattern(&member_name(param), ok, "v[1-9][0-9]*(\\.[A-Za-z0-9-]*)?")
}

/// One of an enum's words (`Scope`: All|AWS|Local, `EntityFilter`, `PolicyUsageFilter`).
pub fn one_of(param: &str, v: &str, allowed: &[&str]) -> IamResult<()> {
    if allowed.contains(&v) {
        return Ok(());
    }
    Err(IamError::validation(
        &member_name(param),
        &format!(
            "Member must satisfy enum value set: [{}]",
            allowed.join(", ")
        ),
    ))
}

/// A managed policy's ARN, taken apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyArn {
    /// The 12-digit account, or `aws` for AWS-managed policies.
    pub account: String,
    /// The policy's path (`/` or `/a/b/`).
    pub path: String,
    /// The policy's name.
    pub name: String,
}

impl std::fmt::Display for PolicyArn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "arn:aws:iam::{}:policy{}{}",
            self.account, self.path, self.name
        )
    }
}

/// `PolicyArn`: 20..2048 characters (`ValidationError`), then the shape
/// `arn:aws:iam::<12 digits|aws>:policy/<path><name>` with a valid policy path and name, else
/// AWS's `InvalidInput` "ARN {arn} is not valid.".
pub fn policy_arn(param: &str, v: &str) -> IamResult<PolicyArn> {
    length(&member_name(param), v, 20, Some(2048))?;
    let invalid = || IamError::invalid_input(format!("ARN {v} is not valid."));
    let rest = v.strip_prefix("arn:aws:iam::").ok_or_else(invalid)?;
    let (account, resource) = rest.split_once(':').ok_or_else(invalid)?;
    let account_ok =
        account == "aws" || (account.len() == 12 && account.bytes().all(|b| b.is_ascii_digit()));
    let full = resource.strip_prefix("policy").ok_or_else(invalid)?;
    let cut = full.rfind('/').ok_or_else(invalid)?;
    let (path, name) = (&full[..=cut], &full[cut + 1..]);
    if !account_ok || policy_path("Path", path).is_err() || policy_name("PolicyName", name).is_err()
    {
        return Err(invalid());
    }
    Ok(PolicyArn {
        account: account.to_owned(),
        path: path.to_owned(),
        name: name.to_owned(),
    })
}

/// [`policy_arn`] as a [`Check`].
pub fn policy_arn_check(param: &str, v: &str) -> IamResult<()> {
    policy_arn(param, v).map(|_| ())
}

/// A user's ARN: `arn:aws:iam::<account>:user<path><name>`.
pub fn user_arn(account: &str, path: &str, name: &str) -> String {
    format!("arn:aws:iam::{account}:user{path}{name}")
}

/// A group's ARN: `arn:aws:iam::<account>:group<path><name>`.
pub fn group_arn(account: &str, path: &str, name: &str) -> String {
    format!("arn:aws:iam::{account}:group{path}{name}")
}

/// The size IAM counts against a policy quota: the document's characters other than
/// whitespace (space, tab, newline, carriage return: the only whitespace
/// [`policy_document`] lets through).
pub fn policy_size(doc: &str) -> usize {
    doc.chars()
        .filter(|c| !matches!(c, ' ' | '\t' | '\n' | '\r'))
        .count()
}

/// A managed policy version's document within [`MANAGED_POLICY_MAX_CHARS`], else AWS's
/// `LimitExceeded` "Cannot exceed quota for PolicySize: 6144".
pub fn managed_policy_size(doc: &str) -> IamResult<()> {
    if policy_size(doc) > MANAGED_POLICY_MAX_CHARS {
        return Err(IamError::limit_exceeded(format!(
            "Cannot exceed quota for PolicySize: {MANAGED_POLICY_MAX_CHARS}"
        )));
    }
    Ok(())
}

/// Who owns inline policies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InlineOwner {
    /// A user (2,048 characters of policies in all).
    User,
    /// A group (5,120).
    Group,
    /// A role (10,240).
    Role,
}

impl InlineOwner {
    /// The owner's quota on the sum of its inline policies' [`policy_size`]s.
    pub fn quota(self) -> usize {
        match self {
            Self::User => USER_INLINE_POLICIES_MAX_CHARS,
            Self::Group => GROUP_INLINE_POLICIES_MAX_CHARS,
            Self::Role => ROLE_INLINE_POLICIES_MAX_CHARS,
        }
    }

    fn word(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Group => "group",
            Self::Role => "role",
        }
    }
}

/// The sum of an owner's inline policies' sizes (with the new or replaced one counted, the one
/// it replaces not) within its quota, else AWS's `LimitExceeded` "Maximum policy size of 2048
/// bytes exceeded for user alice".
pub fn inline_policies_size(owner: InlineOwner, name: &str, total: usize) -> IamResult<()> {
    if total > owner.quota() {
        return Err(IamError::limit_exceeded(format!(
            "Maximum policy size of {} bytes exceeded for {} {name}",
            owner.quota(),
            owner.word()
        )));
    }
    Ok(())
}

#[cfg(test)]
#[path = "validate_tests.rs"]
mod tests;
