//! The envelope: layout, associated data, and the checks made before any key
//! is touched.
//!
//! ```text
//! offset  0: version   u8 = 1
//! offset  1: key id    8 bytes
//! offset  9: nonce     24 bytes
//! offset 33: ciphertext (the inner payload, encrypted)
//! end - 16 : Poly1305 tag
//! ```
//!
//! The whole is encoded as base64url without padding, safe in JSON strings
//! and URLs.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use zeroize::Zeroizing;

use crate::ENVELOPE_VERSION;
use crate::cipher::{NONCE_LEN, TAG_LEN};
use crate::error::{Malformed, OpenError};
use crate::key::KeyId;

pub(crate) const KEY_ID_OFFSET: usize = 1;
pub(crate) const NONCE_OFFSET: usize = KEY_ID_OFFSET + KeyId::LEN;
pub(crate) const HEADER_LEN: usize = NONCE_OFFSET + NONCE_LEN;
/// The smallest decodable envelope: a header and a tag around an empty
/// ciphertext (which can never authenticate, but is not malformed).
pub(crate) const MIN_LEN: usize = HEADER_LEN + TAG_LEN;

/// Domain label opening the associated data, so these tags can never be
/// confused with another use of the same key.
const AAD_LABEL: &[u8] = b"thinkwire-seal/reasoning\0";

/// What a sealed value is bound to: the AG-UI thread and the id of the
/// reasoning message it belongs to. The same value presented for any other
/// thread or message fails to open, so a client cannot move reasoning
/// between conversations or messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Binding<'a> {
    /// AG-UI `threadId`.
    pub thread_id: &'a str,
    /// Id of the reasoning message (the `entityId` of
    /// `REASONING_ENCRYPTED_VALUE`).
    pub message_id: &'a str,
}

impl<'a> Binding<'a> {
    /// A binding to a thread and a reasoning message.
    #[must_use]
    pub const fn new(thread_id: &'a str, message_id: &'a str) -> Self {
        Self {
            thread_id,
            message_id,
        }
    }
}

/// Associated data: label ‖ version ‖ key id ‖ len(thread) ‖ thread ‖
/// len(message) ‖ message, lengths as u64 big-endian. The length prefixes
/// make the encoding injective (`("ab","c")` and `("a","bc")` differ); the
/// header fields are included so that nothing in the clear is unauthenticated
/// (the nonce is authenticated by the AEAD itself).
pub(crate) fn associated_data(version: u8, key_id: KeyId, binding: Binding<'_>) -> Vec<u8> {
    let mut aad = Vec::with_capacity(
        AAD_LABEL.len() + 1 + KeyId::LEN + 16 + binding.thread_id.len() + binding.message_id.len(),
    );
    aad.extend_from_slice(AAD_LABEL);
    aad.push(version);
    aad.extend_from_slice(key_id.as_bytes());
    for field in [binding.thread_id, binding.message_id] {
        // usize is at most 64 bits on every target Rust supports.
        aad.extend_from_slice(&(field.len() as u64).to_be_bytes());
        aad.extend_from_slice(field.as_bytes());
    }
    aad
}

/// Number of base64url characters (no padding) for `n` bytes.
pub(crate) const fn encoded_len(n: usize) -> usize {
    n / 3 * 4 + [0, 2, 3][n % 3]
}

/// An envelope decoded and checked for shape: the version is known and the
/// parts have their lengths. The buffer is wiped on drop (it will hold
/// plaintext after decryption).
pub(crate) struct Parsed {
    pub(crate) bytes: Zeroizing<Vec<u8>>,
    pub(crate) key_id: KeyId,
}

impl Parsed {
    /// Cap, decode, check version and length — cheap checks only, in that
    /// order, before any key is looked up.
    pub(crate) fn parse(value: &str, max_len: usize) -> Result<Self, OpenError> {
        if value.len() > max_len {
            return Err(Malformed::TooLarge {
                len: value.len(),
                max: max_len,
            }
            .into());
        }
        let bytes = Zeroizing::new(
            URL_SAFE_NO_PAD
                .decode(value)
                .map_err(|_| Malformed::Base64)?,
        );
        // The version comes first so that a future layout is reported as an
        // unknown version, whatever its length.
        let version = *bytes.first().ok_or(Malformed::Truncated { len: 0 })?;
        if version != ENVELOPE_VERSION {
            return Err(Malformed::UnknownVersion(version).into());
        }
        if bytes.len() < MIN_LEN {
            return Err(Malformed::Truncated { len: bytes.len() }.into());
        }
        let mut id = [0u8; KeyId::LEN];
        id.copy_from_slice(&bytes[KEY_ID_OFFSET..NONCE_OFFSET]);
        Ok(Self {
            bytes,
            key_id: KeyId::from_bytes(id),
        })
    }
}

/// What can be read from a sealed value without a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvelopeInfo {
    /// Envelope version.
    pub version: u8,
    /// Id of the key it was sealed with.
    pub key_id: KeyId,
    /// Length of the encrypted payload (without the tag), in bytes.
    pub ciphertext_len: usize,
}

/// Reads a sealed value's clear header (for `thinkwire inspect` and for
/// logs) without opening it. The same checks as [`crate::KeyRing::open`]
/// make before using a key, with the default size cap.
///
/// # Errors
/// [`OpenError::Malformed`] for anything that is not a version-1 envelope.
pub fn inspect(value: &str) -> Result<EnvelopeInfo, OpenError> {
    let parsed = Parsed::parse(value, crate::DEFAULT_MAX_ENVELOPE_LEN)?;
    Ok(EnvelopeInfo {
        version: ENVELOPE_VERSION,
        key_id: parsed.key_id,
        ciphertext_len: parsed.bytes.len() - MIN_LEN,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoded_len_matches_base64() {
        for n in 0..100 {
            assert_eq!(encoded_len(n), URL_SAFE_NO_PAD.encode(vec![0u8; n]).len());
        }
    }

    #[test]
    fn aad_is_injective_over_field_boundaries() {
        let id = KeyId::from_bytes([7; 8]);
        let a = associated_data(1, id, Binding::new("ab", "c"));
        let b = associated_data(1, id, Binding::new("a", "bc"));
        let c = associated_data(1, id, Binding::new("abc", ""));
        let d = associated_data(1, id, Binding::new("", "abc"));
        assert!(a != b && a != c && a != d && b != c && b != d && c != d);
        assert_ne!(
            a,
            associated_data(1, KeyId::from_bytes([8; 8]), Binding::new("ab", "c"))
        );
        assert_ne!(a, associated_data(2, id, Binding::new("ab", "c")));
    }

    #[test]
    fn aad_layout_is_pinned() {
        let aad = associated_data(1, KeyId::from_bytes([9; 8]), Binding::new("t", "mm"));
        let mut want = b"thinkwire-seal/reasoning\0".to_vec();
        want.push(1);
        want.extend([9; 8]);
        want.extend([0, 0, 0, 0, 0, 0, 0, 1, b't']);
        want.extend([0, 0, 0, 0, 0, 0, 0, 2, b'm', b'm']);
        assert_eq!(aad, want);
    }

    #[test]
    fn parse_checks_in_order() {
        let max = 100;
        assert_eq!(
            Parsed::parse(&"A".repeat(101), max).err(),
            Some(Malformed::TooLarge { len: 101, max }.into())
        );
        // Over the cap is refused even when it is not base64 at all.
        assert_eq!(
            Parsed::parse(&"!".repeat(101), max).err(),
            Some(Malformed::TooLarge { len: 101, max }.into())
        );
        assert_eq!(
            Parsed::parse("!!", max).err(),
            Some(Malformed::Base64.into())
        );
        assert_eq!(
            Parsed::parse("AQ==", max).err(),
            Some(Malformed::Base64.into())
        );
        assert_eq!(
            Parsed::parse("", max).err(),
            Some(Malformed::Truncated { len: 0 }.into())
        );
        assert_eq!(
            Parsed::parse("AQ", max).err(),
            Some(Malformed::Truncated { len: 1 }.into())
        );
        assert_eq!(
            Parsed::parse("Ag", max).err(),
            Some(Malformed::UnknownVersion(2).into())
        );
        let min = URL_SAFE_NO_PAD.encode([&[1u8][..], &[0; MIN_LEN - 1]].concat());
        let p = Parsed::parse(&min, max).unwrap();
        assert_eq!(p.key_id, KeyId::from_bytes([0; 8]));
        let short = URL_SAFE_NO_PAD.encode([&[1u8][..], &[0; MIN_LEN - 2]].concat());
        assert_eq!(
            Parsed::parse(&short, max).err(),
            Some(Malformed::Truncated { len: MIN_LEN - 1 }.into())
        );
    }
}
