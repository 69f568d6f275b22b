//! The outside review of the OIDC verifier (findings F2, F6): the key cache never makes a
//! token with a cached key wait for a fetch; a provider that cannot be reached is answered as
//! such for keys the cache lacks; `azp` must name a registered client. The provider stand-in
//! is `oidc_support`'s; its slowness is decided by the test (a key set answer held until
//! released), never by a timer.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use grids3::oidc::Limits;
use serde_json::json;

use crate::oidc_support::{
    claims, clients, code, jwt, start_idp, verifier, Signer, CLIENT, NOW, RSA1_PEM,
};
use crate::support;

/// Review F2: while a refetch forced by a made-up kid waits on a slow provider (its key set
/// answer held by the test), a token whose key is cached verifies at once; the made-up kid
/// is answered once the provider answers.
#[test]
fn a_cached_key_verifies_while_a_refetch_is_in_flight() {
    support::run(async {
        let key = Signer::rsa(RSA1_PEM);
        let idp = start_idp(json!({"keys": [key.jwk("k1")]})).await;
        let iss = idp.issuer();
        // A long fetch deadline: only the test's release ends the held fetch.
        let v = Arc::new(verifier(Limits {
            timeout: Duration::from_secs(600),
            ..Limits::default()
        }));
        let good = jwt(&json!({"alg": "RS256", "kid": "k1"}), &claims(&iss), &key);
        let bogus = jwt(
            &json!({"alg": "RS256", "kid": "bogus"}),
            &claims(&iss),
            &key,
        );
        v.verify(&iss, &clients(), &good, NOW).await.unwrap();
        assert_eq!(idp.jwks_hits.load(Ordering::SeqCst), 1);

        idp.hold_keys.store(true, Ordering::SeqCst);
        let in_flight = {
            let (v, iss) = (v.clone(), iss.clone());
            tokio::spawn(async move { v.verify(&iss, &clients(), &bogus, NOW + 10).await })
        };
        // The refetch has reached the provider's key set, which holds it.
        idp.holding.notified().await;
        assert_eq!(idp.jwks_hits.load(Ordering::SeqCst), 2);
        assert!(!in_flight.is_finished());

        // A good token meanwhile: answered from the cache. Before the fix it waited for the
        // held fetch (the issuer's lock was held across it), i.e. until the release below.
        let prompt = tokio::time::timeout(
            Duration::from_secs(20),
            v.verify(&iss, &clients(), &good, NOW + 10),
        )
        .await;
        let verified = prompt.expect("the cached key waited for the in-flight fetch");
        assert_eq!(verified.unwrap().sub, "user-42");
        assert!(!in_flight.is_finished(), "the fetch is still held");

        idp.hold_keys.store(false, Ordering::SeqCst);
        idp.release.notify_one();
        let e = in_flight.await.unwrap().unwrap_err();
        assert_eq!(e.code(), "InvalidIdentityToken", "{e}");
        assert_eq!(idp.jwks_hits.load(Ordering::SeqCst), 2);
    });
}

/// Review F6(a): once a refetch has failed (the provider answers 503), a kid the cache lacks
/// is answered IDPCommunicationError for the rest of the refetch interval, not "no such
/// key"; a cached kid keeps verifying.
#[test]
fn an_unreachable_provider_is_answered_as_such_for_uncached_kids() {
    support::run(async {
        let key = Signer::rsa(RSA1_PEM);
        let idp = start_idp(json!({"keys": [key.jwk("k1")]})).await;
        let iss = idp.issuer();
        let v = verifier(Limits::default());
        let good = jwt(&json!({"alg": "RS256", "kid": "k1"}), &claims(&iss), &key);
        let rotated = jwt(&json!({"alg": "RS256", "kid": "k2"}), &claims(&iss), &key);
        v.verify(&iss, &clients(), &good, NOW).await.unwrap();

        idp.unavailable.store(true, Ordering::SeqCst);
        // The refetch itself fails.
        let r = v.verify(&iss, &clients(), &rotated, NOW + 10).await;
        assert_eq!(code(&r), "IDPCommunicationError", "{r:?}");
        assert_eq!(idp.discovery_hits.load(Ordering::SeqCst), 2);
        // Within the interval no new fetch starts; the answer is still the provider's
        // failure (before the fix: InvalidIdentityToken, "no key k2").
        let r = v.verify(&iss, &clients(), &rotated, NOW + 12).await;
        assert_eq!(code(&r), "IDPCommunicationError", "{r:?}");
        assert_eq!(idp.discovery_hits.load(Ordering::SeqCst), 2);
        // The cached key is unaffected.
        v.verify(&iss, &clients(), &good, NOW + 12).await.unwrap();

        // Once the provider is back and the interval passed, the kid is simply unknown.
        idp.unavailable.store(false, Ordering::SeqCst);
        let r = v.verify(&iss, &clients(), &rotated, NOW + 21).await;
        assert_eq!(code(&r), "InvalidIdentityToken", "{r:?}");
        let r = v.verify(&iss, &clients(), &rotated, NOW + 22).await;
        assert_eq!(code(&r), "InvalidIdentityToken", "{r:?}");
    });
}

/// Review F6(c): `azp`, when present, must be a registered client id (with one audience or
/// several); a token issued to another client that names ours among its audiences is
/// refused.
#[test]
fn azp_must_be_a_registered_client() {
    support::run(async {
        let key = Signer::rsa(RSA1_PEM);
        let idp = start_idp(json!({"keys": [key.jwk("k1")]})).await;
        let iss = idp.issuer();
        let v = verifier(Limits::default());
        let token = |aud: serde_json::Value, azp: Option<serde_json::Value>| {
            let mut c = claims(&iss);
            c["aud"] = aud;
            if let Some(azp) = azp {
                c["azp"] = azp;
            }
            jwt(&json!({"alg": "RS256", "kid": "k1"}), &c, &key)
        };
        let cases = [
            ("one aud, no azp", json!(CLIENT), None, "accepted"),
            ("several, no azp", json!([CLIENT, "x"]), None, "accepted"),
            (
                "several, azp ours",
                json!(["x", CLIENT]),
                Some(json!(CLIENT)),
                "accepted",
            ),
            (
                "azp another registered client",
                json!(CLIENT),
                Some(json!("other-client")),
                "accepted",
            ),
            (
                "several, azp not ours",
                json!([CLIENT, "x"]),
                Some(json!("x")),
                "IncorrectAudience",
            ),
            (
                "one aud, azp not ours",
                json!(CLIENT),
                Some(json!("someone-else")),
                "IncorrectAudience",
            ),
            (
                "azp not a string",
                json!(CLIENT),
                Some(json!([CLIENT])),
                "InvalidIdentityToken",
            ),
        ];
        let mut wrong = Vec::new();
        for (name, aud, azp, want) in cases {
            let r = v.verify(&iss, &clients(), &token(aud, azp), NOW).await;
            if code(&r) != want {
                wrong.push(format!("{name}: want {want}, got {r:?}"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    });
}
