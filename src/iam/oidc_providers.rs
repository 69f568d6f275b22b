//! OpenID Connect providers (issue 61): Create/Get/List/Delete OpenIDConnectProvider,
//! Add/RemoveClientIDTo/FromOpenIDConnectProvider, UpdateOpenIDConnectProviderThumbprint,
//! Tag/UntagOpenIDConnectProvider and ListOpenIDConnectProviderTags. The issuer URL is checked
//! by the same rule that fetching from it obeys (`https`, no private or loopback address unless
//! the operator allows its host): an issuer URL is an SSRF vector. AWS's quotas hold: 5
//! thumbprints and 100 client ids per provider, 100 providers per account.

use super::context::{time, Cx, Facts};
use super::error::{IamError, IamResult};
use super::oidc_xml as xml;
use super::query::Params;
use crate::storage::identity::{OidcProvider, MAX_CLIENT_IDS};

/// Most thumbprints of one provider (AWS's quota, "ThumbprintsPerOpenIdConnectProvider").
pub const MAX_THUMBPRINTS: usize = 5;

/// Handles the providers' actions (`None`: not one of them).
pub async fn dispatch(cx: &Cx<'_>, p: &Params, action: &str) -> Option<IamResult<String>> {
    Some(match action {
        "CreateOpenIDConnectProvider" => create(cx, p).await,
        "GetOpenIDConnectProvider" => get(cx, p).await,
        "ListOpenIDConnectProviders" => list(cx).await,
        "DeleteOpenIDConnectProvider" => delete(cx, p).await,
        "AddClientIDToOpenIDConnectProvider" => client_id(cx, p, true).await,
        "RemoveClientIDFromOpenIDConnectProvider" => client_id(cx, p, false).await,
        "UpdateOpenIDConnectProviderThumbprint" => thumbprints(cx, p).await,
        "TagOpenIDConnectProvider" => tag(cx, p, true).await,
        "UntagOpenIDConnectProvider" => tag(cx, p, false).await,
        "ListOpenIDConnectProviderTags" => list_tags(cx, p).await,
        _ => return None,
    })
}

/// A client id: 1 to 255 characters.
fn client_id_value(v: &str) -> IamResult<()> {
    if v.is_empty() || v.chars().count() > 255 {
        return Err(IamError::validation_value(
            "clientID",
            v,
            "Member must have length less than or equal to 255 and greater than or equal to 1",
        ));
    }
    Ok(())
}

/// A thumbprint: 40 hexadecimal characters.
fn thumbprint(v: &str) -> IamResult<()> {
    if v.len() != 40 || !v.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(IamError::validation_value(
            "thumbprintList.member",
            v,
            "Member must have length greater than or equal to 40 and less than or equal to 40",
        ));
    }
    Ok(())
}

/// The members of list `name`, each checked, duplicates dropped; more than `max` is AWS's
/// LimitExceeded with `quota` named.
fn list_param(
    p: &Params,
    name: &str,
    each: fn(&str) -> IamResult<()>,
    (max, quota): (usize, &str),
) -> IamResult<Vec<String>> {
    let mut out = Vec::new();
    for i in 1.. {
        match p.get(&format!("{name}.member.{i}")) {
            Some(v) => {
                each(v)?;
                if !out.iter().any(|o| o == v) {
                    out.push(v.to_owned());
                }
            }
            None => break,
        }
        if out.len() > max {
            return Err(IamError::limit_exceeded(format!(
                "Cannot exceed quota for {quota}: {max}"
            )));
        }
    }
    Ok(out)
}

const CLIENT_IDS: (usize, &str) = (MAX_CLIENT_IDS, "ClientIdsPerOpenIdConnectProvider");
const THUMBPRINTS: (usize, &str) = (MAX_THUMBPRINTS, "ThumbprintsPerOpenIdConnectProvider");

/// A provider ARN's shape (`arn:aws:iam::<12 digits>:oidc-provider/<host/path>`, 20 to 2048
/// characters, AWS's `arnType`): anything else is a ValidationError, not a provider that is
/// merely missing.
fn provider_arn(arn: &str) -> IamResult<()> {
    let name = arn
        .strip_prefix("arn:aws:iam::")
        .and_then(|r| r.split_once(":oidc-provider/"))
        .filter(|(account, name)| {
            account.len() == 12 && account.bytes().all(|b| b.is_ascii_digit()) && !name.is_empty()
        });
    if name.is_none() || !(20..=2048).contains(&arn.len()) || arn.chars().any(char::is_control) {
        return Err(IamError::validation(
            "openIDConnectProviderArn",
            "Member must be an ARN of an OpenID Connect provider (arn:aws:iam::<account>:oidc-provider/<url>)",
        ));
    }
    Ok(())
}

async fn named(cx: &Cx<'_>, p: &Params) -> IamResult<OidcProvider> {
    let arn = p.required("OpenIDConnectProviderArn")?;
    provider_arn(arn)?;
    Ok(cx.store().oidc_provider(cx.acct(), arn).await?)
}

async fn create(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let url = p.required("Url")?;
    // The rule fetching obeys (https; no loopback, private or link-local address unless the
    // operator allows its host): an issuer URL is an SSRF vector.
    let url = crate::oidc::check_url(cx.st.oidc.policy(), url)
        .map_err(|e| IamError::invalid_input(e.to_string()))?
        .issuer;
    let client_ids = list_param(p, "ClientIDList", client_id_value, CLIENT_IDS)?;
    let thumbprints = list_param(p, "ThumbprintList", thumbprint, THUMBPRINTS)?;
    let tags = p.tags("Tags")?;
    let arn = cx.arn(&format!(
        "oidc-provider/{}",
        crate::storage::identity::provider_name(&url)
    ));
    let facts = Facts::default().request_tags(&tags);
    cx.caller
        .allow_with("iam:CreateOpenIDConnectProvider", &arn, &facts)?;
    if !tags.is_empty() {
        // As for roles: tagging at creation needs the tagging right too.
        cx.caller
            .allow_with("iam:TagOpenIDConnectProvider", &arn, &facts)?;
    }
    let made = cx
        .store()
        .create_oidc_provider(cx.acct(), &url, &client_ids, &thumbprints, &tags)
        .await?;
    Ok(xml::create(&made.arn(), &made.tags, cx.rid))
}

async fn get(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let pr = named(cx, p).await?;
    cx.caller.allow("iam:GetOpenIDConnectProvider", &pr.arn())?;
    Ok(xml::get(
        &pr.name(),
        &pr.client_ids,
        &pr.thumbprints,
        &time(pr.created),
        &pr.tags,
        cx.rid,
    ))
}

async fn list(cx: &Cx<'_>) -> IamResult<String> {
    cx.caller
        .allow("iam:ListOpenIDConnectProviders", &cx.arn("oidc-provider/*"))?;
    let all = cx.store().list_oidc_providers(cx.acct()).await?;
    let arns: Vec<String> = all.iter().map(OidcProvider::arn).collect();
    Ok(xml::list(&arns, cx.rid))
}

async fn delete(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let pr = named(cx, p).await?;
    cx.caller
        .allow("iam:DeleteOpenIDConnectProvider", &pr.arn())?;
    cx.store()
        .delete_oidc_provider(cx.acct(), &pr.arn())
        .await?;
    Ok(super::xml::empty("DeleteOpenIDConnectProvider", cx.rid))
}

fn conflict() -> IamError {
    IamError::new(
        axum::http::StatusCode::CONFLICT,
        "ConcurrentModification",
        "The provider changed while being written; try again.",
    )
}

async fn client_id(cx: &Cx<'_>, p: &Params, add: bool) -> IamResult<String> {
    let id = p.required("ClientID")?;
    client_id_value(id)?;
    let (action, answer) = if add {
        (
            "iam:AddClientIDToOpenIDConnectProvider",
            "AddClientIDToOpenIDConnectProvider",
        )
    } else {
        (
            "iam:RemoveClientIDFromOpenIDConnectProvider",
            "RemoveClientIDFromOpenIDConnectProvider",
        )
    };
    for _ in 0..5 {
        let pr = named(cx, p).await?;
        cx.caller.allow(action, &pr.arn())?;
        let mut ids = pr.client_ids.clone();
        if add {
            if ids.iter().any(|c| c == id) {
                return Ok(super::xml::empty(answer, cx.rid));
            }
            if ids.len() >= MAX_CLIENT_IDS {
                return Err(IamError::limit_exceeded(format!(
                    "Cannot exceed quota for ClientIdsPerOpenIdConnectProvider: {MAX_CLIENT_IDS}"
                )));
            }
            ids.push(id.to_owned());
        } else {
            // AWS: removing a client id that is not there succeeds.
            ids.retain(|c| c != id);
        }
        if cx.store().set_oidc_list(&pr, "clientIds", &ids).await? {
            return Ok(super::xml::empty(answer, cx.rid));
        }
    }
    Err(conflict())
}

async fn thumbprints(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let list = list_param(p, "ThumbprintList", thumbprint, THUMBPRINTS)?;
    if list.is_empty() {
        return Err(IamError::missing_parameter("ThumbprintList.member.1"));
    }
    for _ in 0..5 {
        let pr = named(cx, p).await?;
        cx.caller
            .allow("iam:UpdateOpenIDConnectProviderThumbprint", &pr.arn())?;
        if cx.store().set_oidc_list(&pr, "thumbprints", &list).await? {
            return Ok(super::xml::empty(
                "UpdateOpenIDConnectProviderThumbprint",
                cx.rid,
            ));
        }
    }
    Err(conflict())
}

async fn tag(cx: &Cx<'_>, p: &Params, add: bool) -> IamResult<String> {
    let (adding, removing): (Vec<(String, String)>, Vec<String>) = if add {
        (p.tags("Tags")?, Vec::new())
    } else {
        (
            Vec::new(),
            p.tag_keys("TagKeys")?
                .into_iter()
                .map(str::to_owned)
                .collect(),
        )
    };
    for _ in 0..5 {
        let pr = named(cx, p).await?;
        let on = Facts::default().resource_tags(&pr.tags);
        let (action, facts) = if add {
            ("iam:TagOpenIDConnectProvider", on.request_tags(&adding))
        } else {
            ("iam:UntagOpenIDConnectProvider", on.tag_keys(&removing))
        };
        cx.caller.allow_with(action, &pr.arn(), &facts)?;
        let tags = super::context::merged_tags(&pr.tags, &adding, &removing)?;
        if cx.store().set_oidc_tags(&pr, &tags).await? {
            let answer = if add {
                "TagOpenIDConnectProvider"
            } else {
                "UntagOpenIDConnectProvider"
            };
            return Ok(super::xml::empty(answer, cx.rid));
        }
    }
    Err(conflict())
}

async fn list_tags(cx: &Cx<'_>, p: &Params) -> IamResult<String> {
    let pr = named(cx, p).await?;
    let facts = Facts::default().resource_tags(&pr.tags);
    cx.caller
        .allow_with("iam:ListOpenIDConnectProviderTags", &pr.arn(), &facts)?;
    Ok(xml::list_tags(&pr.tags, cx.rid))
}
