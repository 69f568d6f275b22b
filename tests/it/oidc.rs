//! Issue 61: OpenID Connect ID token verification (`grids3::oidc`) against a real identity
//! provider stand-in (`oidc_support`: an HTTP server on 127.0.0.1, inside the test, serving a
//! discovery document and a key set of keys the test holds). Tokens are built and signed
//! byte by byte, so that hostile ones (`alg: none`, HS256 keyed with the public key, wrong
//! kid, ...) are exactly what they say. Time is a parameter: every check runs at a fixed
//! `NOW`, never the machine's clock.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use grids3::oidc::{Limits, OidcPolicy, Verifier};
use serde_json::{json, Value};

use crate::oidc_support::{
    claims, clients, code, jwt, start_idp, verifier, Signer, CLIENT, NOW, RSA1024_JWK, RSA1_PEM,
    RSA1_PUB_PEM, RSA2_PEM,
};
use crate::support;

/// Every hostile or broken token is refused with the error the caller maps to STS's answer,
/// and the good RS256 and ES256 tokens (and one within the clock skew) are accepted.
#[test]
fn tokens_are_refused_with_the_right_error_and_good_ones_pass() {
    support::run(async {
        let rsa1 = Signer::rsa(RSA1_PEM);
        let rsa2 = Signer::rsa(RSA2_PEM);
        let ec = Signer::ec();
        let idp = start_idp(json!({"keys": [rsa1.jwk("r1"), ec.jwk("e1"),
            // Keys a verifier must leave out: a symmetric key (never an HMAC secret), an
            // encryption key, a short RSA key.
            {"kty": "oct", "kid": "s1", "k": URL_SAFE_NO_PAD.encode(b"secret")},
            {"kty": "RSA", "kid": "enc", "use": "enc", "n": rsa1.jwk("x")["n"], "e": "AQAB"},
            serde_json::from_str::<Value>(RSA1024_JWK).unwrap()]}))
        .await;
        let iss = idp.issuer();
        let v = verifier(Limits::default());
        let rs = |kid: &str| json!({"alg": "RS256", "typ": "JWT", "kid": kid});
        let with = |k: &str, val: Value| {
            let mut c = claims(&iss);
            c[k] = val;
            c
        };
        let without = |k: &str| {
            let mut c = claims(&iss);
            c.as_object_mut().unwrap().remove(k);
            c
        };
        let good_rs = jwt(&rs("r1"), &claims(&iss), &rsa1);
        let n_bytes = URL_SAFE_NO_PAD
            .decode(rsa1.jwk("r1")["n"].as_str().unwrap())
            .unwrap();
        let big = with("pad", json!("p".repeat(grids3::oidc::MAX_TOKEN_LEN)));
        let cases: Vec<(&str, String, &str, &str)> = vec![
            ("RS256 ok", good_rs.clone(), "accepted", ""),
            (
                "ES256 ok",
                jwt(&json!({"alg": "ES256", "kid": "e1"}), &claims(&iss), &ec),
                "accepted",
                "",
            ),
            (
                "no kid, one RS256 key",
                jwt(&json!({"alg": "RS256"}), &claims(&iss), &rsa1),
                "accepted",
                "",
            ),
            (
                "aud array",
                jwt(&rs("r1"), &with("aud", json!(["x", CLIENT])), &rsa1),
                "accepted",
                "",
            ),
            (
                "expired within skew",
                jwt(&rs("r1"), &with("exp", json!(NOW - 30)), &rsa1),
                "accepted",
                "",
            ),
            (
                "expired",
                jwt(&rs("r1"), &with("exp", json!(NOW - 61)), &rsa1),
                "ExpiredTokenException",
                "Token expired",
            ),
            (
                "no exp",
                jwt(&rs("r1"), &without("exp"), &rsa1),
                "InvalidIdentityToken",
                "no expiration time",
            ),
            (
                "exp as a string",
                jwt(&rs("r1"), &with("exp", json!("9999999999")), &rsa1),
                "InvalidIdentityToken",
                "exp is not a number",
            ),
            (
                "not yet valid",
                jwt(&rs("r1"), &with("nbf", json!(NOW + 300)), &rsa1),
                "InvalidIdentityToken",
                "not valid before",
            ),
            (
                "issued in the future",
                jwt(&rs("r1"), &with("iat", json!(NOW + 300)), &rsa1),
                "InvalidIdentityToken",
                "issued in the future",
            ),
            (
                "wrong audience",
                jwt(&rs("r1"), &with("aud", json!("someone-else")), &rsa1),
                "IncorrectAudience",
                "Incorrect token audience",
            ),
            (
                "no audience",
                jwt(&rs("r1"), &without("aud"), &rsa1),
                "InvalidIdentityToken",
                "no audience (aud)",
            ),
            (
                "wrong issuer",
                jwt(
                    &rs("r1"),
                    &with("iss", json!("https://evil.example")),
                    &rsa1,
                ),
                "InvalidIdentityToken",
                "issuer is not the provider's URL",
            ),
            (
                "issuer with a slash",
                jwt(&rs("r1"), &with("iss", json!(format!("{iss}/"))), &rsa1),
                "InvalidIdentityToken",
                "issuer is not the provider's URL",
            ),
            (
                "no sub",
                jwt(&rs("r1"), &without("sub"), &rsa1),
                "InvalidIdentityToken",
                "no subject",
            ),
            (
                "alg none",
                jwt(
                    &json!({"alg": "none", "kid": "r1"}),
                    &claims(&iss),
                    &Signer::Unsigned,
                ),
                "InvalidIdentityToken",
                "signing algorithm \"none\" is not accepted",
            ),
            (
                "alg None",
                jwt(&json!({"alg": "None"}), &claims(&iss), &Signer::Unsigned),
                "InvalidIdentityToken",
                "signing algorithm \"None\"",
            ),
            (
                "HS256, public key PEM as secret",
                jwt(
                    &json!({"alg": "HS256", "kid": "r1"}),
                    &claims(&iss),
                    &Signer::Hmac(RSA1_PUB_PEM.as_bytes().to_vec()),
                ),
                "InvalidIdentityToken",
                "signing algorithm \"HS256\"",
            ),
            (
                "HS256, PEM without newline",
                jwt(
                    &json!({"alg": "HS256", "kid": "r1"}),
                    &claims(&iss),
                    &Signer::Hmac(RSA1_PUB_PEM.trim_end().as_bytes().to_vec()),
                ),
                "InvalidIdentityToken",
                "signing algorithm \"HS256\"",
            ),
            (
                "HS256, JWK n bytes as secret",
                jwt(
                    &json!({"alg": "HS256", "kid": "r1"}),
                    &claims(&iss),
                    &Signer::Hmac(n_bytes.clone()),
                ),
                "InvalidIdentityToken",
                "signing algorithm \"HS256\"",
            ),
            (
                "HS256, no kid",
                jwt(
                    &json!({"alg": "HS256"}),
                    &claims(&iss),
                    &Signer::Hmac(n_bytes),
                ),
                "InvalidIdentityToken",
                "signing algorithm \"HS256\"",
            ),
            (
                "HS256 with the oct key",
                jwt(
                    &json!({"alg": "HS256", "kid": "s1"}),
                    &claims(&iss),
                    &Signer::Hmac(b"secret".to_vec()),
                ),
                "InvalidIdentityToken",
                "signing algorithm \"HS256\"",
            ),
            (
                "RS384",
                jwt(&json!({"alg": "RS384", "kid": "r1"}), &claims(&iss), &rsa1),
                "InvalidIdentityToken",
                "signing algorithm \"RS384\"",
            ),
            (
                "kid not in the key set",
                jwt(&rs("nope"), &claims(&iss), &rsa1),
                "InvalidIdentityToken",
                "has no key \"nope\"",
            ),
            (
                "EC kid with RS256",
                jwt(&json!({"alg": "RS256", "kid": "e1"}), &claims(&iss), &rsa1),
                "InvalidIdentityToken",
                "is not a RS256 key",
            ),
            (
                "encryption key",
                jwt(&rs("enc"), &claims(&iss), &rsa1),
                "InvalidIdentityToken",
                "has no key \"enc\"",
            ),
            (
                "kid of a 1024-bit key",
                jwt(&rs("short"), &claims(&iss), &rsa1),
                "InvalidIdentityToken",
                "has no key \"short\"",
            ),
            (
                "signed by another key",
                jwt(&rs("r1"), &claims(&iss), &rsa2),
                "InvalidIdentityToken",
                "signature is not valid",
            ),
            (
                "crit header",
                jwt(
                    &json!({"alg": "RS256", "kid": "r1", "crit": ["exp"]}),
                    &claims(&iss),
                    &rsa1,
                ),
                "InvalidIdentityToken",
                "critical extensions",
            ),
            (
                "truncated",
                good_rs[..good_rs.len() / 2].to_owned(),
                "InvalidIdentityToken",
                "",
            ),
            (
                "signature cut",
                good_rs[..good_rs.len() - 4].to_owned(),
                "InvalidIdentityToken",
                "",
            ),
            (
                "two parts",
                good_rs.rsplit_once('.').unwrap().0.to_owned(),
                "InvalidIdentityToken",
                "three base64url parts",
            ),
            (
                "garbage",
                "not a token".into(),
                "InvalidIdentityToken",
                "three base64url parts",
            ),
            (
                "empty",
                String::new(),
                "InvalidIdentityToken",
                "three base64url parts",
            ),
            (
                "over the size bound",
                jwt(&rs("r1"), &big, &rsa1),
                "InvalidIdentityToken",
                "longer than 16384 bytes",
            ),
        ];
        let mut wrong = Vec::new();
        for (name, token, want, why) in &cases {
            let got = v.verify(&iss, &clients(), token, NOW).await;
            let msg = got
                .as_ref()
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            if code(&got) != *want || !msg.contains(why) {
                wrong.push(format!("{name}: want {want} ({why}), got {got:?}"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));

        // What the accepted token carries, and AWS's wording for an expired one.
        let ok = v.verify(&iss, &clients(), &good_rs, NOW).await.unwrap();
        assert_eq!(
            (ok.sub.as_str(), ok.aud.as_str(), ok.exp),
            ("user-42", CLIENT, NOW + 600)
        );
        assert_eq!(ok.amr, vec!["pwd", "mfa"]);
        assert_eq!(ok.issuer, iss);
        assert_eq!(ok.claims["email"], "u@example.com");
        let expired = jwt(&rs("r1"), &with("exp", json!(NOW - 100)), &rsa1);
        let e = v.verify(&iss, &clients(), &expired, NOW).await.unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "Token expired: current date/time {NOW} must be before the expiration date/time {}",
                NOW - 100
            )
        );
        let big_token = jwt(&rs("r1"), &big, &rsa1);
        assert!(big_token.len() > grids3::oidc::MAX_TOKEN_LEN);
        let e = v
            .verify(&iss, &clients(), &big_token, NOW)
            .await
            .unwrap_err();
        assert!(e.to_string().contains("longer than"), "{e}");
        // A token for another client id of the same provider: the audience is what matched.
        let other = jwt(&rs("r1"), &with("aud", json!(["other-client"])), &rsa1);
        assert_eq!(
            v.verify(&iss, &clients(), &other, NOW).await.unwrap().aud,
            "other-client"
        );
    });
}

/// Key rotation: a key the provider withdrew stops verifying once the key set is fetched
/// again (here forced by a token with the new key's kid, after the refetch interval).
#[test]
fn a_rotated_out_key_stops_verifying() {
    support::run(async {
        let old = Signer::rsa(RSA1_PEM);
        let new = Signer::rsa(RSA2_PEM);
        let idp = start_idp(json!({"keys": [old.jwk("k-old")]})).await;
        let iss = idp.issuer();
        let v = verifier(Limits::default());
        let by_old = jwt(
            &json!({"alg": "RS256", "kid": "k-old"}),
            &claims(&iss),
            &old,
        );
        let by_new = jwt(
            &json!({"alg": "RS256", "kid": "k-new"}),
            &claims(&iss),
            &new,
        );
        v.verify(&iss, &clients(), &by_old, NOW).await.unwrap();
        *idp.jwks.lock().unwrap() = json!({"keys": [new.jwk("k-new")]});
        // Cached: the old key still verifies until the set is fetched again.
        v.verify(&iss, &clients(), &by_old, NOW + 5).await.unwrap();
        assert_eq!(idp.jwks_hits.load(Ordering::SeqCst), 1);
        v.verify(&iss, &clients(), &by_new, NOW + 11).await.unwrap();
        assert_eq!(idp.jwks_hits.load(Ordering::SeqCst), 2);
        let e = v
            .verify(&iss, &clients(), &by_old, NOW + 12)
            .await
            .unwrap_err();
        assert_eq!(e.code(), "InvalidIdentityToken", "{e}");
        // Nor after the next permitted refetch: the key is gone, not merely uncached.
        let e = v
            .verify(&iss, &clients(), &by_old, NOW + 30)
            .await
            .unwrap_err();
        assert_eq!(e.code(), "InvalidIdentityToken", "{e}");
        assert_eq!(idp.jwks_hits.load(Ordering::SeqCst), 3);
        // The TTL: after it, the set is fetched again without an unknown kid.
        let later = NOW + 30 + Limits::default().key_ttl_secs;
        let mut c = claims(&iss);
        c["exp"] = json!(later + 600);
        let by_new_later = jwt(&json!({"alg": "RS256", "kid": "k-new"}), &c, &new);
        v.verify(&iss, &clients(), &by_new_later, later)
            .await
            .unwrap();
        assert_eq!(idp.jwks_hits.load(Ordering::SeqCst), 4);
    });
}

/// A storm of tokens with made-up kids, at once and one after another, makes at most one
/// key set fetch per refetch interval.
#[test]
fn unknown_kids_refetch_at_most_once_per_interval() {
    support::run(async {
        let key = Signer::rsa(RSA1_PEM);
        let idp = start_idp(json!({"keys": [key.jwk("k1")]})).await;
        let iss = idp.issuer();
        let v = Arc::new(verifier(Limits::default()));
        let good = jwt(&json!({"alg": "RS256", "kid": "k1"}), &claims(&iss), &key);
        v.verify(&iss, &clients(), &good, NOW).await.unwrap();
        assert_eq!(idp.jwks_hits.load(Ordering::SeqCst), 1);
        let storm = |at: i64, n: usize| {
            let v = v.clone();
            let iss = iss.clone();
            let tokens: Vec<String> = (0..n)
                .map(|i| {
                    let h = json!({"alg": "RS256", "kid": format!("junk-{at}-{i}")});
                    jwt(&h, &claims(&iss), &key)
                })
                .collect();
            async move {
                let ids = clients();
                let all = tokens.iter().map(|t| v.verify(&iss, &ids, t, at));
                for r in futures::future::join_all(all).await {
                    assert_eq!(r.unwrap_err().code(), "InvalidIdentityToken");
                }
            }
        };
        // Concurrent, within the first interval after the first fetch: none.
        storm(NOW + 1, 30).await;
        assert_eq!(idp.jwks_hits.load(Ordering::SeqCst), 1);
        // Concurrent, once the interval has passed: exactly one, however many ask.
        storm(NOW + 10, 30).await;
        assert_eq!(idp.jwks_hits.load(Ordering::SeqCst), 2);
        for t in 11..20 {
            storm(NOW + t, 3).await;
        }
        assert_eq!(idp.jwks_hits.load(Ordering::SeqCst), 2);
        storm(NOW + 20, 5).await;
        assert_eq!(idp.jwks_hits.load(Ordering::SeqCst), 3);
        // The good token kept working throughout, from the cache.
        v.verify(&iss, &clients(), &good, NOW + 21).await.unwrap();
        assert_eq!(idp.jwks_hits.load(Ordering::SeqCst), 3);
        assert_eq!(idp.discovery_hits.load(Ordering::SeqCst), 3);
    });
}

/// A key set over the size bound is refused, whether announced by Content-Length or
/// streamed without end (read piece by piece and abandoned at the bound).
#[test]
fn an_oversized_key_set_is_refused() {
    support::run(async {
        let key = Signer::rsa(RSA1_PEM);
        let idp = start_idp(json!({"keys": [key.jwk("k1")]})).await;
        let iss = idp.issuer();
        let token = jwt(&json!({"alg": "RS256", "kid": "k1"}), &claims(&iss), &key);
        *idp.oversized.lock().unwrap() = Some(300 * 1024);
        let v = verifier(Limits::default());
        let e = v.verify(&iss, &clients(), &token, NOW).await.unwrap_err();
        assert_eq!(e.code(), "IDPCommunicationError", "{e}");
        assert!(e.to_string().contains("larger than 262144 bytes"), "{e}");

        *idp.oversized.lock().unwrap() = None;
        idp.endless.store(true, Ordering::SeqCst);
        // A generous deadline, so that only the size bound can end the read in time.
        let limits = Limits {
            timeout: Duration::from_secs(60),
            ..Limits::default()
        };
        let v = verifier(limits);
        let started = Instant::now();
        let e = v.verify(&iss, &clients(), &token, NOW).await.unwrap_err();
        assert_eq!(e.code(), "IDPCommunicationError", "{e}");
        assert!(e.to_string().contains("larger than"), "{e}");
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{:?}",
            started.elapsed()
        );

        // Within the bound, the same provider is fine.
        idp.endless.store(false, Ordering::SeqCst);
        verifier(Limits::default())
            .verify(&iss, &clients(), &token, NOW)
            .await
            .unwrap();
    });
}

/// A provider that accepts the connection and never answers costs one deadline, then the
/// communication error.
#[test]
fn a_silent_provider_is_bounded_by_the_deadline() {
    support::run(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let held = Arc::new(Mutex::new(Vec::new()));
        let keep = held.clone();
        tokio::spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                keep.lock().unwrap().push(sock);
            }
        });
        let key = Signer::rsa(RSA1_PEM);
        let iss = format!("http://{addr}");
        let token = jwt(&json!({"alg": "RS256", "kid": "k1"}), &claims(&iss), &key);
        let limits = Limits {
            timeout: Duration::from_millis(300),
            ..Limits::default()
        };
        let v = verifier(limits);
        let started = Instant::now();
        let e = v.verify(&iss, &clients(), &token, NOW).await.unwrap_err();
        let took = started.elapsed();
        assert_eq!(e.code(), "IDPCommunicationError", "{e}");
        assert!(took >= Duration::from_millis(300), "{took:?}");
        assert!(took < Duration::from_secs(5), "{took:?}");
        assert_eq!(held.lock().unwrap().len(), 1, "the provider was reached");
        // The failure is remembered for the refetch interval: no second connection.
        let e = v
            .verify(&iss, &clients(), &token, NOW + 1)
            .await
            .unwrap_err();
        assert_eq!(e.code(), "IDPCommunicationError", "{e}");
        assert_eq!(held.lock().unwrap().len(), 1);
    });
}

/// The discovery document must name the configured issuer exactly; its key set URL obeys the
/// URL policy; redirects are not followed; an issuer the policy refuses is not fetched.
#[test]
fn discovery_is_checked_and_the_policy_holds() {
    support::run(async {
        let key = Signer::rsa(RSA1_PEM);
        let idp = start_idp(json!({"keys": [key.jwk("k1")]})).await;
        let iss = idp.issuer();
        let token = jwt(&json!({"alg": "RS256", "kid": "k1"}), &claims(&iss), &key);
        let fresh = || verifier(Limits::default());

        *idp.claimed_issuer.lock().unwrap() = Some("https://accounts.google.com".into());
        let e = fresh()
            .verify(&iss, &clients(), &token, NOW)
            .await
            .unwrap_err();
        assert_eq!(e.code(), "IDPCommunicationError", "{e}");
        assert!(e.to_string().contains("is not the provider's URL"), "{e}");
        *idp.claimed_issuer.lock().unwrap() = Some(format!("{iss}/"));
        let e = fresh()
            .verify(&iss, &clients(), &token, NOW)
            .await
            .unwrap_err();
        assert_eq!(e.code(), "IDPCommunicationError", "{e}");
        *idp.claimed_issuer.lock().unwrap() = None;
        assert_eq!(idp.jwks_hits.load(Ordering::SeqCst), 0);

        // A key set URL on a private or link-local address is refused without a connection
        // (the URL carries the address; nothing is sent there).
        for bad in [
            "http://169.254.169.254/keys",
            "https://10.0.0.1/keys",
            "http://example.com/keys",
        ] {
            *idp.jwks_uri.lock().unwrap() = Some(bad.into());
            let e = fresh()
                .verify(&iss, &clients(), &token, NOW)
                .await
                .unwrap_err();
            assert_eq!(e.code(), "IDPCommunicationError", "{bad}: {e}");
            assert!(e.to_string().contains("jwks_uri refused"), "{e}");
        }
        *idp.jwks_uri.lock().unwrap() = None;

        idp.redirect.store(true, Ordering::SeqCst);
        let e = fresh()
            .verify(&iss, &clients(), &token, NOW)
            .await
            .unwrap_err();
        assert_eq!(e.code(), "IDPCommunicationError", "{e}");
        assert_eq!(idp.elsewhere_hits.load(Ordering::SeqCst), 0);
        idp.redirect.store(false, Ordering::SeqCst);

        // Without allow_loopback, the same provider is not contacted at all.
        let hits = idp.discovery_hits.load(Ordering::SeqCst);
        let strict = Verifier::new(OidcPolicy::default(), Limits::default()).unwrap();
        let e = strict
            .verify(&iss, &clients(), &token, NOW)
            .await
            .unwrap_err();
        assert_eq!(e.code(), "IDPCommunicationError", "{e}");
        let https_localhost = iss.replace("http://127.0.0.1", "https://localhost");
        let e = strict
            .verify(&https_localhost, &clients(), &token, NOW)
            .await
            .unwrap_err();
        assert_eq!(e.code(), "IDPCommunicationError", "{e}");
        assert_eq!(idp.discovery_hits.load(Ordering::SeqCst), hits);

        // And everything in order, the token verifies.
        fresh().verify(&iss, &clients(), &token, NOW).await.unwrap();
    });
}

/// DNS rebinding: a name that passes the URL check (it is no address and not `localhost`) but
/// resolves to a loopback address is refused when grids3 connects, by the policy's resolver,
/// before any request is sent. The name is this machine's own host name, which resolves to
/// 127.0.x.x on the machines the suite runs on (/etc/hosts); the test says so if it does not.
#[test]
fn a_name_that_resolves_to_loopback_is_refused_at_connection() {
    support::run(async {
        let host = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
        let host = host.trim().to_owned();
        let addrs: Vec<std::net::SocketAddr> =
            match tokio::net::lookup_host((host.as_str(), 0)).await {
                Ok(a) => a.collect(),
                Err(_) => Vec::new(),
            };
        if host.is_empty() || addrs.is_empty() || !addrs.iter().all(|a| a.ip().is_loopback()) {
            eprintln!("skipped: host name {host:?} does not resolve to loopback only ({addrs:?})");
            return;
        }
        let idp = start_idp(json!({"keys": []})).await;
        let port = idp.issuer().rsplit(':').next().unwrap().to_owned();
        let iss = format!("https://{host}:{port}");
        let strict = Verifier::new(OidcPolicy::default(), Limits::default()).unwrap();
        assert!(
            grids3::oidc::check_url(strict.policy(), &iss).is_ok(),
            "the URL check passes {iss}"
        );
        let key = Signer::rsa(RSA1_PEM);
        let token = jwt(&json!({"alg": "RS256", "kid": "k1"}), &claims(&iss), &key);
        let e = strict
            .verify(&iss, &clients(), &token, NOW)
            .await
            .unwrap_err();
        assert_eq!(e.code(), "IDPCommunicationError", "{e}");
        assert!(
            e.to_string().contains("no address the OIDC policy allows"),
            "{e}"
        );
        assert_eq!(idp.discovery_hits.load(Ordering::SeqCst), 0);
    });
}

/// The review findings F2 and F6, in their own file.
#[path = "oidc_review.rs"]
mod review;
