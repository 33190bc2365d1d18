//! A resumable run's names and secrets: the resume id (public, names the
//! run), the resume token (the holder's proof) and the bearer identity that
//! started it. Only SHA-256 digests of the token and of the bearer
//! credential are kept, compared in constant time (`subtle`), as
//! `auth.rs` does for bearer tokens.

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// A SHA-256 digest of a secret.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct SecretDigest([u8; 32]);

impl std::fmt::Debug for SecretDigest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretDigest(..)")
    }
}

impl SecretDigest {
    /// The digest of `secret`.
    pub fn of(secret: &str) -> Self {
        Self(Sha256::digest(secret.as_bytes()).into())
    }

    /// Whether `presented` is the secret, in constant time.
    pub fn matches(&self, presented: &str) -> bool {
        self.same(&Self::of(presented))
    }

    /// Whether two digests are equal, in constant time.
    pub fn same(&self, other: &Self) -> bool {
        self.0.ct_eq(&other.0).into()
    }
}

/// A fresh resume id: `rs-` and 122 random bits (UUID v4, from the OS
/// random source).
pub(crate) fn resume_id() -> String {
    format!("rs-{}", uuid::Uuid::new_v4().simple())
}

/// A fresh resume token: 244 random bits (two UUID v4s, from the OS random
/// source) as 64 hex digits, usable as an HTTP header value.
pub(crate) fn resume_token() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_match_only_their_secret() {
        let token = resume_token();
        assert_eq!(token.len(), 64);
        assert_ne!(token, resume_token());
        let digest = SecretDigest::of(&token);
        assert!(digest.matches(&token));
        assert!(!digest.matches(&token[1..]));
        assert!(!digest.matches(""));
        assert_eq!(format!("{digest:?}"), "SecretDigest(..)");
        assert!(resume_id().starts_with("rs-"));
    }
}
