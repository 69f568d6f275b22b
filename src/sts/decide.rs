//! Who may assume a role: AWS's joining of the role's trust policy (a resource policy on the
//! role) with the caller's identity policies, decided from verdicts alone.
//!
//! - An explicit Deny in either, or a caller's session policy that does not allow
//!   `sts:AssumeRole`, refuses.
//! - Within the role's account, a trust policy that names the caller itself (its user ARN,
//!   its role's or session's ARN, or, for the account's root credentials, the account) is
//!   enough; one that names only the account delegates to the account's identity policies,
//!   which must then allow `sts:AssumeRole` on the role.
//! - From another account, both are needed: the trust policy names the caller or its account,
//!   and the caller's identity policies (implicitly, for that account's root credentials)
//!   allow it.
//! - A role's session assuming its own role needs a trust policy that names the role itself
//!   (AWS's rule since 2022: an account-wide trust no longer lets a role re-assume itself, the
//!   loop that let a session renew itself forever and shed its session policy).

use crate::auth::policy::Verdict;

/// What the decision is made from.
#[derive(Clone, Copy, Debug)]
pub struct Assume {
    /// The trust policy's verdict on the caller (its account named counts).
    pub trust: Verdict,
    /// The trust policy's verdict on the caller itself (only statements that name it).
    pub trust_direct: Verdict,
    /// The caller's identity policies' verdict on `sts:AssumeRole` on the role; `None` for an
    /// account's root credentials (they may do everything in their account).
    pub identity: Option<Verdict>,
    /// Whether the caller is in the role's account.
    pub same_account: bool,
    /// Whether the caller's session policies (a service account's, a session's) allow it.
    pub sessions_allow: bool,
    /// Whether the caller is a session of this very role.
    pub itself: bool,
}

/// Why an AssumeRole is refused (the message says which policy).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The trust policy denies it, or does not allow it.
    Trust,
    /// The caller's identity policies deny it, or do not allow it.
    Identity,
    /// A session policy of the caller does not allow it.
    Session,
}

/// Whether the caller may assume the role.
pub fn may_assume(a: Assume) -> Result<(), Refusal> {
    if !a.sessions_allow {
        return Err(Refusal::Session);
    }
    if a.trust == Verdict::Deny || a.trust_direct == Verdict::Deny {
        return Err(Refusal::Trust);
    }
    let identity = a.identity.unwrap_or(Verdict::Allow);
    if identity == Verdict::Deny {
        return Err(Refusal::Identity);
    }
    if a.itself {
        return if a.trust_direct == Verdict::Allow {
            Ok(())
        } else {
            Err(Refusal::Trust)
        };
    }
    if a.same_account && a.trust_direct == Verdict::Allow {
        return Ok(());
    }
    if a.trust != Verdict::Allow {
        return Err(Refusal::Trust);
    }
    if identity != Verdict::Allow {
        return Err(Refusal::Identity);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use Verdict::{Allow, Deny, Silent};

    fn base() -> Assume {
        Assume {
            trust: Silent,
            trust_direct: Silent,
            identity: Some(Silent),
            same_account: true,
            sessions_allow: true,
            itself: false,
        }
    }

    /// AWS's documented cases, one row each: (case, input, expected).
    #[test]
    fn trust_and_identity_join_as_aws_joins_them() {
        let rows: Vec<(&str, Assume, Result<(), Refusal>)> = vec![
            (
                "same account, trust names the user: no identity policy needed",
                Assume {
                    trust: Allow,
                    trust_direct: Allow,
                    ..base()
                },
                Ok(()),
            ),
            (
                "same account, trust names the account only: identity must allow",
                Assume {
                    trust: Allow,
                    ..base()
                },
                Err(Refusal::Identity),
            ),
            (
                "same account, trust names the account, identity allows",
                Assume {
                    trust: Allow,
                    identity: Some(Allow),
                    ..base()
                },
                Ok(()),
            ),
            (
                "same account, root credentials, trust names the account",
                Assume {
                    trust: Allow,
                    trust_direct: Allow,
                    identity: None,
                    ..base()
                },
                Ok(()),
            ),
            (
                "trust silent: identity alone is not enough",
                Assume {
                    identity: Some(Allow),
                    ..base()
                },
                Err(Refusal::Trust),
            ),
            (
                "cross account: trust names the user, identity silent",
                Assume {
                    trust: Allow,
                    trust_direct: Allow,
                    same_account: false,
                    ..base()
                },
                Err(Refusal::Identity),
            ),
            (
                "cross account: both allow",
                Assume {
                    trust: Allow,
                    trust_direct: Allow,
                    identity: Some(Allow),
                    same_account: false,
                    ..base()
                },
                Ok(()),
            ),
            (
                "cross account: the other account's root credentials, trust names it",
                Assume {
                    trust: Allow,
                    identity: None,
                    same_account: false,
                    ..base()
                },
                Ok(()),
            ),
            (
                "an identity Deny beats a trust that names the user",
                Assume {
                    trust: Allow,
                    trust_direct: Allow,
                    identity: Some(Deny),
                    ..base()
                },
                Err(Refusal::Identity),
            ),
            (
                "a trust Deny beats everything",
                Assume {
                    trust: Deny,
                    trust_direct: Deny,
                    identity: Some(Allow),
                    ..base()
                },
                Err(Refusal::Trust),
            ),
            (
                "a session policy that does not allow it refuses",
                Assume {
                    trust: Allow,
                    trust_direct: Allow,
                    identity: Some(Allow),
                    sessions_allow: false,
                    ..base()
                },
                Err(Refusal::Session),
            ),
            (
                "a role re-assuming itself through an account-wide trust: refused",
                Assume {
                    trust: Allow,
                    identity: Some(Allow),
                    itself: true,
                    ..base()
                },
                Err(Refusal::Trust),
            ),
            (
                "a role re-assuming itself where its trust names it",
                Assume {
                    trust: Allow,
                    trust_direct: Allow,
                    itself: true,
                    ..base()
                },
                Ok(()),
            ),
        ];
        for (case, input, want) in rows {
            assert_eq!(may_assume(input), want, "{case}");
        }
    }
}
