//! The outside review of AssumeRoleWithWebIdentity (finding F5), against a running gateway
//! and `oidc_support`'s provider stand-in (tokens signed in the test, timed by this machine's
//! clock, which the local database shares): unsigned callers learn nothing about roles from
//! the answers, and nothing about the network from a provider that cannot be reached.

use serde_json::json;

use crate::iam::{iam_ok, xml_text};
use crate::oidc_support::{jwt, start_idp, Signer, CLIENT, RSA1_PEM, RSA2_PEM};
use crate::sts::sts_call;
use crate::support;

/// An unsigned AssumeRoleWithWebIdentity call: status, error code (or "" on success) and
/// message (or the session's access key id).
async fn unsigned(gw: &support::Gateway, role: &str, token: &str) -> (u16, String, String) {
    let enc = |s: &str| grids3::percent::uri_encode(s, false);
    let body = format!(
        "Action=AssumeRoleWithWebIdentity&Version=2011-06-15&RoleSessionName=s1&RoleArn={}&WebIdentityToken={}",
        enc(role),
        enc(token)
    );
    let r = reqwest::Client::new()
        .post(gw.endpoint())
        .header("content-type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let text = r.text().await.unwrap();
    if status == 200 {
        return (status, String::new(), xml_text(&text, "AccessKeyId"));
    }
    (status, xml_text(&text, "Code"), xml_text(&text, "Message"))
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn token_of(iss: &str, sub: &str, signer: &Signer, kid: &str) -> String {
    let t = now();
    let claims = json!({"iss": iss, "sub": sub, "aud": CLIENT, "exp": t + 600,
                        "iat": t - 10, "nbf": t - 10});
    jwt(&json!({"alg": "RS256", "kid": kid}), &claims, signer)
}

/// Review F5: (a) the token is verified before the role is looked up, and a missing role is
/// answered exactly as a trust that refuses; (b) IDPCommunicationError carries no detail of
/// the failed fetch.
#[test]
fn answers_reveal_neither_roles_nor_the_network() {
    support::run(async {
        let gw = support::gateway_with("stswebreview", |c| c.oidc_allow_loopback = true).await;
        let key = Signer::rsa(RSA1_PEM);
        let idp = start_idp(json!({"keys": [key.jwk("k1")]})).await;
        let iss = idp.issuer();
        let host = iss.split_once("://").unwrap().1.to_owned();
        let account = xml_text(
            &sts_call(&gw, &[("Action", "GetCallerIdentity")]).await.1,
            "Account",
        );
        let made = iam_ok(
            &gw,
            &[
                ("Action", "CreateOpenIDConnectProvider"),
                ("Url", &iss),
                ("ClientIDList.member.1", CLIENT),
            ],
        )
        .await;
        let provider = xml_text(&made, "OpenIDConnectProviderArn");
        let trust = |sub: &str| {
            json!({"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
                "Principal": {"Federated": provider}, "Action": "sts:AssumeRoleWithWebIdentity",
                "Condition": {"StringEquals": {format!("{host}:sub"): sub}}}]})
            .to_string()
        };
        for (name, sub) in [("for-alice", "alice"), ("for-user", "user-42")] {
            iam_ok(
                &gw,
                &[
                    ("Action", "CreateRole"),
                    ("RoleName", name),
                    ("AssumeRolePolicyDocument", &trust(sub)),
                ],
            )
            .await;
        }
        let role = |name: &str| format!("arn:aws:iam::{account}:role/{name}");
        let good = token_of(&iss, "user-42", &key, "k1");

        // The path still works end to end.
        let (status, code, _) = unsigned(&gw, &role("for-user"), &good).await;
        assert_eq!((status, code.as_str()), (200, ""));

        // (a) A valid token: a trust that refuses and a missing role answer alike.
        let refused = unsigned(&gw, &role("for-alice"), &good).await;
        assert_eq!(refused.1, "AccessDenied", "{refused:?}");
        let missing = unsigned(&gw, &role("nobody"), &good).await;
        assert_eq!(missing, refused);
        // An invalid token (signed by a key the provider does not have): refused as such
        // whether the role exists or not (before the fix a missing role answered
        // AccessDenied before the token was read).
        let forged = token_of(&iss, "user-42", &Signer::rsa(RSA2_PEM), "k1");
        let on_role = unsigned(&gw, &role("for-user"), &forged).await;
        assert_eq!(on_role.1, "InvalidIdentityToken", "{on_role:?}");
        assert_eq!(unsigned(&gw, &role("nobody"), &forged).await, on_role);
        // Also in an account that does not exist.
        let elsewhere = "arn:aws:iam::999999999999:role/for-user";
        let r = unsigned(&gw, elsewhere, &good).await;
        assert_eq!(r.1, "InvalidIdentityToken", "{r:?}");
        let r2 = unsigned(
            &gw,
            &role("nobody-else"),
            &token_of("http://127.0.0.1:9/x", "u", &key, "k1"),
        )
        .await;
        assert_eq!((r.0, &r.1), (r2.0, &r2.1));

        // (b) A registered provider that cannot be reached: nothing listens on its port.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let gone = format!("http://127.0.0.1:{port}");
        iam_ok(
            &gw,
            &[
                ("Action", "CreateOpenIDConnectProvider"),
                ("Url", &gone),
                ("ClientIDList.member.1", CLIENT),
            ],
        )
        .await;
        let (status, code, message) = unsigned(
            &gw,
            &role("for-user"),
            &token_of(&gone, "user-42", &key, "k1"),
        )
        .await;
        assert_eq!((status, code.as_str()), (400, "IDPCommunicationError"));
        for detail in [
            "127.0.0.1",
            &port.to_string(),
            "error",
            "discovery",
            "connect",
        ] {
            assert!(
                !message.contains(detail),
                "the message carries {detail:?}: {message}"
            );
        }
    });
}
