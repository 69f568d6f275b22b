//! Session policies: policies carried by a credential (a MinIO service account's, and STS
//! sessions' in issue 61) that cut what it may do. A request is allowed only if every one of
//! them allows it, besides whatever else allows it: the intersection, never a union, so a
//! session policy can only take rights away. A service account made by a service account
//! carries its maker's session policies too, so rights only narrow along the chain (the
//! escalation MinIO fixed in 2025-10 came from a session policy checked where a missing
//! Allow counted as allowed).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::policy::{self, Context, Policy, Verdict};

/// Parsed session policies by their text: parsed once, not per request (bounded).
type Parsed = HashMap<String, Arc<Policy>>;

/// The parsed policies of `texts`. A text that does not parse (it did when stored) stands
/// for a policy that allows nothing: failing closed.
pub fn parse_all(texts: &[String]) -> Vec<Arc<Policy>> {
    static CACHE: std::sync::LazyLock<Mutex<Parsed>> = std::sync::LazyLock::new(Default::default);
    texts
        .iter()
        .map(|t| {
            if let Some(p) = CACHE.lock().expect("session cache").get(t) {
                return p.clone();
            }
            let p = Arc::new(policy::parse_identity(t).unwrap_or_else(|e| {
                tracing::error!(error = %e.message, "a stored session policy does not parse; it allows nothing");
                Policy::empty()
            }));
            let mut c = CACHE.lock().expect("session cache");
            if c.len() >= 10_000 {
                c.clear();
            }
            c.insert(t.clone(), p.clone());
            p
        })
        .collect()
}

/// Whether every session policy allows the request (true when there are none).
pub fn allows(sessions: &[Arc<Policy>], cx: &Context) -> bool {
    sessions.iter().all(|p| p.evaluate(cx) == Verdict::Allow)
}
