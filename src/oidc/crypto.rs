//! jsonwebtoken's cryptography, on `ring`: RS256 and ES256 verification, nothing else.
//!
//! jsonwebtoken (10 and later) asks for a process-wide crypto provider. Its two built-in ones
//! would link a second crypto library (aws-lc) or the RustCrypto RSA crate; grids3 already
//! has `ring` (TLS, the keyring), so this provider verifies with it. It has no HMAC and no
//! signing at all: even if a check above it were lost, an `HS256` token (the classic attack
//! of an HMAC keyed with the provider's public key) has nothing here to verify it.

use std::sync::Once;

use jsonwebtoken::crypto::{CryptoProvider, JwtSigner, JwtVerifier, KeyUtils};
use jsonwebtoken::errors::{ErrorKind, Result};
use jsonwebtoken::signature::{Error as SigError, Verifier};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, DecodingKeyKind, EncodingKey};
use ring::signature as rsig;

/// The provider: ring verifiers for RS256 and ES256.
static PROVIDER: CryptoProvider = CryptoProvider {
    signer_factory,
    verifier_factory,
    key_utils: KeyUtils::new_unimplemented(),
};

/// Installs the provider once per process. If an embedding program installed another one
/// first, that one stays (jsonwebtoken allows one); verification then still only accepts
/// RS256 and ES256, which `verify` checks before it calls jsonwebtoken.
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = PROVIDER.install_default();
    });
}

/// grids3 never signs a JWT.
fn signer_factory(_: &Algorithm, _: &EncodingKey) -> Result<Box<dyn JwtSigner>> {
    Err(ErrorKind::InvalidAlgorithm.into())
}

fn verifier_factory(alg: &Algorithm, key: &DecodingKey) -> Result<Box<dyn JwtVerifier>> {
    match (alg, key.family(), key.kind()) {
        (Algorithm::RS256, AlgorithmFamily::Rsa, DecodingKeyKind::RsaModulusExponent { n, e }) => {
            Ok(Box::new(RingVerifier::Rs256 {
                n: n.clone(),
                e: e.clone(),
            }))
        }
        (Algorithm::ES256, AlgorithmFamily::Ec, DecodingKeyKind::SecretOrDer(point)) => {
            Ok(Box::new(RingVerifier::Es256 {
                point: point.clone(),
            }))
        }
        _ => Err(ErrorKind::InvalidAlgorithm.into()),
    }
}

/// A public key ready to check one signature.
enum RingVerifier {
    /// An RSA key by its components; PKCS#1 v1.5 with SHA-256, 2048 to 8192 bits.
    Rs256 { n: Vec<u8>, e: Vec<u8> },
    /// A P-256 point, uncompressed (0x04 || x || y); the JWS signature is r || s.
    Es256 { point: Vec<u8> },
}

impl Verifier<Vec<u8>> for RingVerifier {
    fn verify(&self, msg: &[u8], signature: &Vec<u8>) -> std::result::Result<(), SigError> {
        let ok = match self {
            RingVerifier::Rs256 { n, e } => rsig::RsaPublicKeyComponents { n, e }
                .verify(&rsig::RSA_PKCS1_2048_8192_SHA256, msg, signature)
                .is_ok(),
            RingVerifier::Es256 { point } => {
                rsig::UnparsedPublicKey::new(&rsig::ECDSA_P256_SHA256_FIXED, point)
                    .verify(msg, signature)
                    .is_ok()
            }
        };
        if ok {
            Ok(())
        } else {
            Err(SigError::new())
        }
    }
}

impl JwtVerifier for RingVerifier {
    fn algorithm(&self) -> Algorithm {
        match self {
            RingVerifier::Rs256 { .. } => Algorithm::RS256,
            RingVerifier::Es256 { .. } => Algorithm::ES256,
        }
    }
}
