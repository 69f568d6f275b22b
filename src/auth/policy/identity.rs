//! A principal's identity policies taken together, as AWS evaluates them: an explicit Deny in
//! any of them wins, else an Allow in any of them allows, else they say nothing. The verdict
//! names the policy and statement that decided, for "why was this denied".

use std::sync::Arc;

use super::{Context, Policy, Verdict};

/// Every identity policy that applies to one principal, each with where it comes from
/// (`user inline policy <name>`, `managed policy <arn> (v2)`, ...).
#[derive(Clone, Debug, Default)]
pub struct IdentityPolicies {
    /// `(label, policy)`.
    pub policies: Vec<(String, Arc<Policy>)>,
}

/// The identity policies' verdict and what decided it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdentityVerdict {
    /// Deny, Allow, or Silent (an implicit deny).
    pub verdict: Verdict,
    /// `<policy label>, statement <sid>` of the deciding statement.
    pub by: Option<String>,
}

impl IdentityPolicies {
    /// The verdict on one request.
    pub fn evaluate(&self, cx: &Context) -> IdentityVerdict {
        let mut allowed = None;
        for (label, p) in &self.policies {
            match p.evaluate_why(cx) {
                (Verdict::Deny, sid) => {
                    return IdentityVerdict {
                        verdict: Verdict::Deny,
                        by: Some(format!("{label}, statement {}", sid.unwrap_or("?"))),
                    }
                }
                (Verdict::Allow, sid) if allowed.is_none() => {
                    allowed = Some(format!("{label}, statement {}", sid.unwrap_or("?")));
                }
                _ => {}
            }
        }
        IdentityVerdict {
            verdict: if allowed.is_some() {
                Verdict::Allow
            } else {
                Verdict::Silent
            },
            by: allowed,
        }
    }
}

#[cfg(test)]
#[path = "identity_tests.rs"]
mod tests;
