//! SimulatePrincipalPolicy: what a user's (or group's) identity policies say about actions on
//! resources, evaluated by the same engine as real requests, naming the policy and statement
//! that decided. As AWS documents it, only identity-based policies are simulated (plus any in
//! `PolicyInputList`); resource policies, ACLs and the account boundary are not.

use std::collections::HashMap;
use std::sync::Arc;

use super::context::Cx;
use super::error::{IamError, IamResult};
use super::query::Params;
use crate::auth::policy::{self, IdentityPolicies, Verdict, Who};
use crate::xml::escape;

/// Most actions times resources one call evaluates.
const MAX_EVALUATIONS: usize = 1000;

/// Handles SimulatePrincipalPolicy (`None`: another action).
pub async fn dispatch(cx: &Cx<'_>, p: &Params, action: &str) -> Option<IamResult<String>> {
    (action == "SimulatePrincipalPolicy").then_some(())?;
    Some(simulate(cx, p).await)
}

/// The principal an ARN names in the caller's account: its policies, and the condition keys
/// it brings (`aws:username`...).
async fn principal(
    cx: &Cx<'_>,
    arn: &str,
) -> IamResult<(IdentityPolicies, Who, HashMap<String, Vec<String>>)> {
    let prefix = cx.arn("");
    let what = arn
        .strip_prefix(&prefix)
        .ok_or_else(|| IamError::invalid_input(format!("Invalid ARN {arn}")))?;
    let name = what.rsplit('/').next().unwrap_or_default();
    if what.starts_with("user/") {
        let u = cx.store().user(cx.acct(), name).await?;
        if u.arn() != arn {
            return Err(IamError::no_such_entity(format!(
                "User {arn} does not exist"
            )));
        }
        cx.caller.allow("iam:SimulatePrincipalPolicy", &u.arn())?;
        let p = cx
            .st
            .creds
            .principal(&u.id)
            .await?
            .ok_or_else(|| IamError::no_such_entity(format!("User {arn} does not exist")))?;
        let mut values = HashMap::new();
        p.add_condition_values(&mut values);
        let who = p.who(false);
        Ok((p.policies.clone(), who, values))
    } else if what.starts_with("group/") {
        let g = cx.store().group(cx.acct(), name).await?;
        cx.caller.allow("iam:SimulatePrincipalPolicy", &g.arn())?;
        let mut texts: Vec<(String, String)> = g
            .inline
            .iter()
            .map(|(n, t)| (format!("group {} inline policy {n}", g.name), t.clone()))
            .collect();
        for m in cx
            .store()
            .policies_by_arn(&g.attached)
            .await
            .map_err(super::context::db)?
        {
            if let Some(d) = m.default_document() {
                texts.push((
                    format!("managed policy {} ({})", m.arn(), m.default_version),
                    d.to_owned(),
                ));
            }
        }
        let policies = texts
            .into_iter()
            .filter_map(|(l, t)| Some((l, Arc::new(policy::parse_identity(&t).ok()?))))
            .collect();
        let who = Who::Key {
            id: g.id.clone(),
            canonical: String::new(),
            account: cx.acct().id.clone(),
        };
        Ok((IdentityPolicies { policies }, who, HashMap::new()))
    } else {
        Err(IamError::invalid_input(format!(
            "PolicySourceArn {arn} names no user or group (roles come with STS)"
        )))
    }
}

/// Inputs grids3's simulation does not take: refused, never ignored (a simulation that left
/// out a resource policy's Deny or a boundary would answer "allowed" where AWS denies).
const UNSIMULATED: &[&str] = &[
    "ResourcePolicy",
    "ResourceOwner",
    "CallerArn",
    "ResourceHandlingOption",
    "PermissionsBoundaryPolicyInputList",
];

async fn simulate(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    if let Some(n) = p.names().find(|n| {
        UNSIMULATED
            .iter()
            .any(|u| n == u || n.starts_with(&format!("{u}.")))
    }) {
        return Err(IamError::not_implemented(&format!(
            "SimulatePrincipalPolicy with {n}"
        )));
    }
    let arn = p.required("PolicySourceArn")?;
    let actions = p.list("ActionNames")?;
    if actions.is_empty() {
        return Err(IamError::validation(
            "actionNames",
            "Member must not be null",
        ));
    }
    let resources = p.list("ResourceArns")?;
    let resources = if resources.is_empty() {
        vec!["*"]
    } else {
        resources
    };
    if actions.len() * resources.len() > MAX_EVALUATIONS {
        return Err(IamError::invalid_input(
            "Too many actions and resources to simulate at once.",
        ));
    }
    let (mut policies, who, mut values) = principal(cx, arn).await?;
    for (i, text) in p.list("PolicyInputList")?.into_iter().enumerate() {
        let extra = policy::parse_identity(text)
            .map_err(|e| IamError::malformed_policy_document(e.message))?;
        policies
            .policies
            .push((format!("PolicyInputList.{}", i + 1), Arc::new(extra)));
    }
    for (name, vals, _) in context_entries(p)? {
        values.insert(name.to_ascii_lowercase(), vals);
    }
    let mut out = String::new();
    for a in &actions {
        // The engine takes actions as `'static` names: known ones are matched to their
        // constant; others are evaluated under a leaked-free generic name.
        let action: &'static str = static_action(a);
        for r in &resources {
            let v = policies.evaluate(&policy::Context {
                who: who.clone(),
                action,
                resource: (*r).to_owned(),
                values: values.clone(),
            });
            let decision = match v.verdict {
                Verdict::Allow => "allowed",
                Verdict::Deny => "explicitDeny",
                Verdict::Silent => "implicitDeny",
            };
            out.push_str("<member>");
            out.push_str(&format!(
                "<EvalActionName>{}</EvalActionName><EvalResourceName>{}</EvalResourceName><EvalDecision>{decision}</EvalDecision>",
                escape(a),
                escape(r)
            ));
            out.push_str("<MatchedStatements>");
            if let Some(by) = &v.by {
                out.push_str(&format!(
                    "<member><SourcePolicyId>{}</SourcePolicyId><SourcePolicyType>IAM Policy</SourcePolicyType></member>",
                    escape(by)
                ));
            }
            out.push_str("</MatchedStatements><MissingContextValues/></member>");
        }
    }
    Ok(format!(
        "<SimulatePrincipalPolicyResponse xmlns=\"{ns}\"><SimulatePrincipalPolicyResult><IsTruncated>false</IsTruncated><EvaluationResults>{out}</EvaluationResults></SimulatePrincipalPolicyResult><ResponseMetadata><RequestId>{rid}</RequestId></ResponseMetadata></SimulatePrincipalPolicyResponse>",
        ns = super::error::IAM_NS,
        rid = escape(cx.rid)
    ))
}

/// `ContextEntries.member.N.{ContextKeyName, ContextKeyValues.member.M, ContextKeyType}`.
fn context_entries(p: &Params) -> IamResult<Vec<(String, Vec<String>, String)>> {
    let mut out = Vec::new();
    for n in 1..=50 {
        let base = format!("ContextEntries.member.{n}");
        let Some(name) = p.get(&format!("{base}.ContextKeyName")) else {
            break;
        };
        let values = p
            .list(&format!("{base}.ContextKeyValues"))?
            .into_iter()
            .map(str::to_owned)
            .collect();
        let kind = p
            .get(&format!("{base}.ContextKeyType"))
            .unwrap_or("string")
            .to_owned();
        out.push((name.to_owned(), values, kind));
    }
    Ok(out)
}

/// The engine's action names are `'static`: the S3 and IAM actions it knows are matched to
/// their constants; anything else is simulated as an action no policy can name exactly (a
/// wildcard `*` or `service:*` still matches it).
fn static_action(a: &str) -> &'static str {
    if let Some(k) = policy::ACTIONS.iter().find(|k| k.eq_ignore_ascii_case(a)) {
        return k;
    }
    if let Some(k) = super::actions::KNOWN
        .iter()
        .find(|k| k.eq_ignore_ascii_case(a))
    {
        return k;
    }
    match a.split_once(':').map(|(s, _)| s.to_ascii_lowercase()) {
        Some(s) if s == "s3" => "s3:UnknownAction",
        Some(s) if s == "iam" => "iam:UnknownAction",
        _ => "unknown:UnknownAction",
    }
}
