//! The `Condition` element: operators over the request's condition keys. Operators AND, keys
//! under one operator AND, a key's values OR (NOR for negated operators), as AWS documents.

use std::collections::HashMap;
use std::net::IpAddr;

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::{glob_var, malformed, substitute};
use crate::error::S3Result;

/// The comparison an operator makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    StringEquals,
    StringEqualsIgnoreCase,
    StringLike,
    /// `ArnEquals` and `ArnLike`, which IAM defines alike: each of the ARN's six
    /// colon-separated parts matched on its own, case-sensitively, with `*` and `?`.
    ArnLike,
    NumericEquals,
    NumericLessThan,
    NumericLessThanEquals,
    NumericGreaterThan,
    NumericGreaterThanEquals,
    DateEquals,
    DateLessThan,
    DateLessThanEquals,
    DateGreaterThan,
    DateGreaterThanEquals,
    Bool,
    IpAddress,
    Null,
}

/// Set qualifiers for keys with several values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Set {
    Single,
    ForAnyValue,
    ForAllValues,
}

/// One operator applied to one key.
#[derive(Clone, Debug)]
pub struct Condition {
    op: Op,
    negated: bool,
    if_exists: bool,
    set: Set,
    key: String,
    values: Vec<String>,
    /// Policy variables are text here (a policy without `Version: 2012-10-17`, as AWS reads
    /// one): `${aws:username}` matches only itself.
    pub(super) literal: bool,
}

fn operator(name: &str) -> Option<(Op, bool)> {
    use Op::*;
    Some(match name {
        "StringEquals" => (StringEquals, false),
        "StringNotEquals" => (StringEquals, true),
        "StringEqualsIgnoreCase" => (StringEqualsIgnoreCase, false),
        "StringNotEqualsIgnoreCase" => (StringEqualsIgnoreCase, true),
        "StringLike" => (StringLike, false),
        "StringNotLike" => (StringLike, true),
        "ArnEquals" | "ArnLike" => (ArnLike, false),
        "ArnNotEquals" | "ArnNotLike" => (ArnLike, true),
        "NumericEquals" => (NumericEquals, false),
        "NumericNotEquals" => (NumericEquals, true),
        "NumericLessThan" => (NumericLessThan, false),
        "NumericLessThanEquals" => (NumericLessThanEquals, false),
        "NumericGreaterThan" => (NumericGreaterThan, false),
        "NumericGreaterThanEquals" => (NumericGreaterThanEquals, false),
        "DateEquals" => (DateEquals, false),
        "DateNotEquals" => (DateEquals, true),
        "DateLessThan" => (DateLessThan, false),
        "DateLessThanEquals" => (DateLessThanEquals, false),
        "DateGreaterThan" => (DateGreaterThan, false),
        "DateGreaterThanEquals" => (DateGreaterThanEquals, false),
        "Bool" => (Bool, false),
        "IpAddress" => (IpAddress, false),
        "NotIpAddress" => (IpAddress, true),
        "Null" => (Null, false),
        _ => return None,
    })
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Parses a `Condition` element.
pub fn parse(v: &Value) -> S3Result<Vec<Condition>> {
    let block = v
        .as_object()
        .ok_or_else(|| malformed("Condition must be an object"))?;
    let mut out = Vec::new();
    for (name, keys) in block {
        let (set, rest) = if let Some(r) = name.strip_prefix("ForAnyValue:") {
            (Set::ForAnyValue, r)
        } else if let Some(r) = name.strip_prefix("ForAllValues:") {
            (Set::ForAllValues, r)
        } else {
            (Set::Single, name.as_str())
        };
        let (base, if_exists) = match rest.strip_suffix("IfExists") {
            Some(b) if b != "Null" => (b, true),
            _ => (rest, false),
        };
        let (op, negated) =
            operator(base).ok_or_else(|| malformed(format!("Invalid Condition type : {name}")))?;
        let keys = keys
            .as_object()
            .ok_or_else(|| malformed(format!("Condition {name} must map keys to values")))?;
        for (key, vals) in keys {
            let values: Vec<String> = match vals {
                Value::Array(a) if !a.is_empty() => a.iter().map(scalar).collect::<Option<_>>(),
                other => scalar(other).map(|s| vec![s]),
            }
            .ok_or_else(|| malformed(format!("Invalid value for condition key {key}")))?;
            let c = Condition {
                op,
                negated,
                if_exists,
                set,
                key: key.to_ascii_lowercase(),
                values,
                literal: false,
            };
            c.validate()?;
            out.push(c);
        }
    }
    Ok(out)
}

fn number(s: &str) -> Option<f64> {
    s.trim().parse::<f64>().ok()
}

fn date(s: &str) -> Option<DateTime<Utc>> {
    let s = s.trim();
    if let Ok(d) = DateTime::parse_from_rfc3339(s) {
        return Some(d.with_timezone(&Utc));
    }
    if let Ok(d) = chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return Some(d.and_hms_opt(0, 0, 0)?.and_utc());
    }
    // Epoch seconds, which IAM also accepts.
    s.parse::<i64>()
        .ok()
        .and_then(|e| DateTime::from_timestamp(e, 0))
}

/// An IP range (`a.b.c.d/n`, IPv6 too; a bare address is one address).
fn cidr(s: &str) -> Option<(IpAddr, u8)> {
    let (addr, bits) = match s.trim().split_once('/') {
        Some((a, b)) => (a.parse::<IpAddr>().ok()?, b.parse::<u8>().ok()?),
        None => {
            let a = s.trim().parse::<IpAddr>().ok()?;
            (a, if a.is_ipv4() { 32 } else { 128 })
        }
    };
    let max = if addr.is_ipv4() { 32 } else { 128 };
    (bits <= max).then_some((addr, bits))
}

fn in_range(ip: &str, range: (IpAddr, u8)) -> bool {
    let Ok(ip) = ip.trim().parse::<IpAddr>() else {
        return false;
    };
    // An IPv4 client seen through an IPv6 socket (::ffff:a.b.c.d) is the IPv4 address.
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    };
    let (net, bits) = range;
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) => {
            let mask = if bits == 0 {
                0
            } else {
                u32::MAX << (32 - bits)
            };
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) => {
            let mask = if bits == 0 {
                0
            } else {
                u128::MAX << (128 - bits)
            };
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

/// `ArnLike`: both are ARNs (`arn:partition:service:region:account:resource`, the resource
/// keeping any further colons), and each part of `have` matches the same part of `pattern`.
/// A value that is not an ARN matches nothing.
fn arn_like(pattern: &str, have: &str) -> bool {
    let p: Vec<&str> = pattern.splitn(6, ':').collect();
    let h: Vec<&str> = have.splitn(6, ':').collect();
    p.len() == 6 && h.len() == 6 && p.iter().zip(&h).all(|(p, h)| glob_var(p, h, false))
}

impl Condition {
    /// Checks the policy's values for the operator (dates, numbers, ranges, booleans).
    fn validate(&self) -> S3Result<()> {
        let ok = |f: &dyn Fn(&str) -> bool| self.values.iter().all(|v| f(v));
        let valid = match self.op {
            Op::NumericEquals
            | Op::NumericLessThan
            | Op::NumericLessThanEquals
            | Op::NumericGreaterThan
            | Op::NumericGreaterThanEquals => ok(&|v| number(v).is_some()),
            Op::DateEquals
            | Op::DateLessThan
            | Op::DateLessThanEquals
            | Op::DateGreaterThan
            | Op::DateGreaterThanEquals => ok(&|v| date(v).is_some()),
            Op::IpAddress => ok(&|v| cidr(v).is_some()),
            Op::Bool | Op::Null => ok(&|v| matches!(v, "true" | "false")),
            _ => true,
        };
        if valid {
            Ok(())
        } else {
            Err(malformed(format!(
                "Invalid value for condition key {}",
                self.key
            )))
        }
    }

    /// Whether one request value matches one policy value (before negation).
    fn matches(&self, have: &str, want: &str, vars: &HashMap<String, Vec<String>>) -> bool {
        let substitute = |w: &str, vars: &HashMap<String, Vec<String>>| {
            if self.literal {
                Some(w.to_owned())
            } else {
                substitute(w, vars)
            }
        };
        let num = || number(have).zip(number(want));
        let day = || date(have).zip(date(want));
        match self.op {
            Op::StringEquals => substitute(want, vars).is_some_and(|w| w == have),
            Op::StringEqualsIgnoreCase => {
                substitute(want, vars).is_some_and(|w| w.to_lowercase() == have.to_lowercase())
            }
            Op::StringLike => substitute(want, vars).is_some_and(|w| glob_var(&w, have, false)),
            Op::ArnLike => substitute(want, vars).is_some_and(|w| arn_like(&w, have)),
            Op::NumericEquals => num().is_some_and(|(h, w)| h == w),
            Op::NumericLessThan => num().is_some_and(|(h, w)| h < w),
            Op::NumericLessThanEquals => num().is_some_and(|(h, w)| h <= w),
            Op::NumericGreaterThan => num().is_some_and(|(h, w)| h > w),
            Op::NumericGreaterThanEquals => num().is_some_and(|(h, w)| h >= w),
            Op::DateEquals => day().is_some_and(|(h, w)| h == w),
            Op::DateLessThan => day().is_some_and(|(h, w)| h < w),
            Op::DateLessThanEquals => day().is_some_and(|(h, w)| h <= w),
            Op::DateGreaterThan => day().is_some_and(|(h, w)| h > w),
            Op::DateGreaterThanEquals => day().is_some_and(|(h, w)| h >= w),
            Op::Bool => have.eq_ignore_ascii_case(want),
            Op::IpAddress => cidr(want).is_some_and(|r| in_range(have, r)),
            Op::Null => false,
        }
    }

    /// Whether one request value satisfies the condition (any policy value; none for
    /// negated operators).
    fn value_holds(&self, have: &str, vars: &HashMap<String, Vec<String>>) -> bool {
        let any = self.values.iter().any(|w| self.matches(have, w, vars));
        any != self.negated
    }

    /// Whether the condition holds for the request's keys.
    pub fn holds(&self, vars: &HashMap<String, Vec<String>>) -> bool {
        let have = vars.get(&self.key).filter(|v| !v.is_empty());
        if self.op == Op::Null {
            // "Null": "true" means the key must be absent.
            let absent = have.is_none();
            return self.values.iter().any(|v| (v == "true") == absent);
        }
        let Some(have) = have else {
            return match self.set {
                // No values: every one of them (none) satisfies it; none of them does.
                Set::ForAllValues => true,
                Set::ForAnyValue => false,
                Set::Single => self.if_exists || self.negated,
            };
        };
        match self.set {
            Set::ForAllValues => have.iter().all(|h| self.value_holds(h, vars)),
            Set::ForAnyValue | Set::Single => have.iter().any(|h| self.value_holds(h, vars)),
        }
    }

    /// Whether the condition pins the request to a fixed source (then an Allow to everyone is
    /// not public, as S3 judges policies).
    pub fn restricts_source(&self) -> bool {
        !self.negated
            && matches!(
                self.key.as_str(),
                "aws:sourceip"
                    | "aws:sourcevpc"
                    | "aws:sourcevpce"
                    | "aws:sourcearn"
                    | "aws:sourceaccount"
                    | "aws:principalorgid"
                    | "aws:userid"
                    | "aws:username"
                    | "aws:principalarn"
            )
            && !self
                .values
                .iter()
                .any(|v| v.contains('*') || v == "0.0.0.0/0" || v == "::/0")
    }

    /// Whether it reads the addressed object's tags.
    pub fn needs_object_tags(&self) -> bool {
        self.key.starts_with("s3:existingobjecttag/")
    }
}
