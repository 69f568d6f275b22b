//! `<WebsiteConfiguration>`: the request of PutBucketWebsite and the response of
//! GetBucketWebsite (validated by `s3::rules::website`, served by `crate::website`).

use serde::{Deserialize, Serialize};

/// `<WebsiteConfiguration>`.
#[derive(Serialize, Deserialize, Debug, Default, Clone, PartialEq)]
pub struct WebsiteConfiguration {
    /// Namespace (responses).
    #[serde(rename = "@xmlns", default, skip_deserializing)]
    pub xmlns: &'static str,
    /// `RedirectAllRequestsTo`: every request is redirected (nothing else may be set).
    #[serde(
        rename = "RedirectAllRequestsTo",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub redirect_all: Option<RedirectAllRequestsTo>,
    /// `IndexDocument`.
    #[serde(
        rename = "IndexDocument",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub index_document: Option<IndexDocument>,
    /// `ErrorDocument`.
    #[serde(
        rename = "ErrorDocument",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub error_document: Option<ErrorDocument>,
    /// `RoutingRules`, applied in order.
    #[serde(
        rename = "RoutingRules",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub routing_rules: Option<RoutingRules>,
}

/// `<IndexDocument>`.
#[derive(Serialize, Deserialize, Debug, Default, Clone, PartialEq)]
pub struct IndexDocument {
    /// `Suffix`: appended to a request for a folder (`/`, `dir/`).
    #[serde(rename = "Suffix", default)]
    pub suffix: String,
}

/// `<ErrorDocument>`.
#[derive(Serialize, Deserialize, Debug, Default, Clone, PartialEq)]
pub struct ErrorDocument {
    /// `Key`: the object served with a 4XX error.
    #[serde(rename = "Key", default)]
    pub key: String,
}

/// `<RedirectAllRequestsTo>`.
#[derive(Serialize, Deserialize, Debug, Default, Clone, PartialEq)]
pub struct RedirectAllRequestsTo {
    /// `HostName` (required: a configuration without it is `MalformedXML`).
    #[serde(rename = "HostName", default, skip_serializing_if = "Option::is_none")]
    pub host_name: Option<String>,
    /// `Protocol` (`http` or `https`; the request's when absent).
    #[serde(rename = "Protocol", default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
}

/// `<RoutingRules>`.
#[derive(Serialize, Deserialize, Debug, Default, Clone, PartialEq)]
pub struct RoutingRules {
    /// The rules, in order.
    #[serde(rename = "RoutingRule", default)]
    pub rules: Vec<RoutingRule>,
}

/// `<RoutingRule>`.
#[derive(Serialize, Deserialize, Debug, Default, Clone, PartialEq)]
pub struct RoutingRule {
    /// `Condition`; a rule without one applies to every request.
    #[serde(rename = "Condition", default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<Condition>,
    /// `Redirect` (required).
    #[serde(rename = "Redirect", default, skip_serializing_if = "Option::is_none")]
    pub redirect: Option<Redirect>,
}

/// `<Condition>`.
#[derive(Serialize, Deserialize, Debug, Default, Clone, PartialEq)]
pub struct Condition {
    /// `KeyPrefixEquals`.
    #[serde(
        rename = "KeyPrefixEquals",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub key_prefix_equals: Option<String>,
    /// `HttpErrorCodeReturnedEquals`.
    #[serde(
        rename = "HttpErrorCodeReturnedEquals",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub http_error_code_returned_equals: Option<String>,
}

/// `<Redirect>`.
#[derive(Serialize, Deserialize, Debug, Default, Clone, PartialEq)]
pub struct Redirect {
    /// `HostName` (the request's when absent).
    #[serde(rename = "HostName", default, skip_serializing_if = "Option::is_none")]
    pub host_name: Option<String>,
    /// `HttpRedirectCode` (301 when absent).
    #[serde(
        rename = "HttpRedirectCode",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub http_redirect_code: Option<String>,
    /// `Protocol` (the request's when absent).
    #[serde(rename = "Protocol", default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// `ReplaceKeyPrefixWith`.
    #[serde(
        rename = "ReplaceKeyPrefixWith",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub replace_key_prefix_with: Option<String>,
    /// `ReplaceKeyWith`.
    #[serde(
        rename = "ReplaceKeyWith",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub replace_key_with: Option<String>,
}
