//! The ways an issuer URL or an ID token is refused, each named for the AWS error the caller
//! answers with (IAM's `InvalidInput`, STS's `InvalidIdentityToken`, `ExpiredToken`,
//! `IDPCommunicationError`).

/// Why an issuer URL or an ID token was refused. Messages carry no token material (a token is
/// a bearer credential) and no secret.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OidcError {
    /// The issuer URL (or a URL the provider named) breaks the URL policy: IAM's
    /// `InvalidInput` for CreateOpenIDConnectProvider.
    #[error("{0}")]
    InvalidInput(String),
    /// The token is malformed, too large, signed with an unsupported algorithm (`none`,
    /// `HS256`, ...), signed by no key of the provider's key set, badly signed, from another
    /// issuer, not yet valid, or lacks a required claim: STS's `InvalidIdentityToken`.
    #[error("{0}")]
    InvalidIdentityToken(String),
    /// None of the token's audiences is a registered client id: STS answers
    /// `InvalidIdentityToken` "Incorrect token audience".
    #[error("Incorrect token audience")]
    IncorrectAudience,
    /// The token's `exp` has passed (beyond the allowed skew): STS's `ExpiredToken`.
    #[error("{0}")]
    ExpiredToken(String),
    /// The discovery document or the key set could not be fetched or read (unreachable,
    /// slow, too large, not JSON, an address the policy refuses): STS's
    /// `IDPCommunicationError`.
    #[error("{0}")]
    IdpCommunication(String),
}

impl OidcError {
    /// The AWS error code the caller answers with.
    pub fn code(&self) -> &'static str {
        match self {
            OidcError::InvalidInput(_) => "InvalidInput",
            OidcError::InvalidIdentityToken(_) | OidcError::IncorrectAudience => {
                "InvalidIdentityToken"
            }
            OidcError::ExpiredToken(_) => "ExpiredTokenException",
            OidcError::IdpCommunication(_) => "IDPCommunicationError",
        }
    }
}
