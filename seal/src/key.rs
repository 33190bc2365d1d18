//! Keys and key ids.

use std::fmt;
use std::str::FromStr;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use zeroize::{Zeroize, Zeroizing};

use crate::error::KeyError;

/// Key length in bytes (XChaCha20-Poly1305: 256 bits).
pub const KEY_LEN: usize = 32;

/// Prefix of a key's text form: `tw-key-v1:` then the 32 key bytes in
/// unpadded base64url (43 characters). The prefix makes a key recognisable
/// in a file or a secret store, and the version leaves room for other kinds
/// of key later.
pub const KEY_TEXT_PREFIX: &str = "tw-key-v1:";

/// Domain label for key-id derivation, so a key id can never be mistaken for
/// any other hash of the key.
const KEY_ID_LABEL: &[u8] = b"thinkwire-seal/key-id/v1\0";

/// A 256-bit sealing key.
///
/// Not `Clone` or `Copy`: there is one copy, on the heap (moves do not leave
/// key bytes behind on the stack), wiped on drop. `Debug` prints only the
/// key id; there is no `Display`.
pub struct Key {
    bytes: Box<Zeroizing<[u8; KEY_LEN]>>,
}

impl Key {
    /// A fresh random key from the OS random number generator.
    ///
    /// # Errors
    /// [`KeyError::Rng`] if the OS RNG fails.
    pub fn generate() -> Result<Self, KeyError> {
        let mut bytes = Box::new(Zeroizing::new([0u8; KEY_LEN]));
        getrandom::fill(bytes.as_mut_slice()).map_err(|e| KeyError::Rng {
            reason: e.to_string(),
        })?;
        Ok(Self { bytes })
    }

    /// A key from raw bytes (test vectors, keys from a secret manager).
    /// The caller owns and should wipe its own copy.
    #[must_use]
    pub fn from_bytes(bytes: &[u8; KEY_LEN]) -> Self {
        let mut boxed = Box::new(Zeroizing::new([0u8; KEY_LEN]));
        boxed.copy_from_slice(bytes);
        Self { bytes: boxed }
    }

    /// This key's id: the first 8 bytes of
    /// SHA-256(`"thinkwire-seal/key-id/v1\0"` ‖ key).
    ///
    /// Derived rather than random so that a key needs no companion metadata:
    /// every server given the same key file agrees on the ids. SHA-256 is
    /// one-way and the key has 256 bits of entropy, so 64 bits of a
    /// domain-separated digest reveal nothing usable about the key.
    #[must_use]
    pub fn id(&self) -> KeyId {
        let mut hasher = Sha256::new();
        hasher.update(KEY_ID_LABEL);
        hasher.update(self.bytes.as_slice());
        let mut digest = hasher.finalize();
        let mut id = [0u8; KeyId::LEN];
        id.copy_from_slice(&digest[..KeyId::LEN]);
        digest.as_mut_slice().zeroize();
        KeyId(id)
    }

    /// The key's text form, `tw-key-v1:<base64url>`, as `thinkwire keygen`
    /// prints it and key files hold it. Wiped when dropped.
    #[must_use]
    pub fn to_text(&self) -> Zeroizing<String> {
        let mut out = Zeroizing::new(String::with_capacity(KEY_TEXT_PREFIX.len() + 43));
        out.push_str(KEY_TEXT_PREFIX);
        URL_SAFE_NO_PAD.encode_string(self.bytes.as_slice(), &mut out);
        out
    }

    /// Parses the text form. Surrounding whitespace is ignored.
    ///
    /// # Errors
    /// [`KeyError::Prefix`], [`KeyError::Base64`] or [`KeyError::Length`];
    /// the error never quotes the text.
    pub fn from_text(text: &str) -> Result<Self, KeyError> {
        let encoded = text
            .trim()
            .strip_prefix(KEY_TEXT_PREFIX)
            .ok_or(KeyError::Prefix)?;
        // Decode into a buffer we wipe; refuse anything that is not exactly
        // one key long without decoding an arbitrarily long string.
        if encoded.len() > 64 {
            return Err(KeyError::Length {
                len: encoded.len() * 3 / 4,
            });
        }
        let mut buf = Zeroizing::new([0u8; 48]);
        let len = URL_SAFE_NO_PAD
            .decode_slice(encoded, buf.as_mut_slice())
            .map_err(|_| KeyError::Base64)?;
        let bytes: &[u8; KEY_LEN] = buf
            .get(..len)
            .and_then(|b| b.try_into().ok())
            .ok_or(KeyError::Length { len })?;
        Ok(Self::from_bytes(bytes))
    }

    /// The raw bytes, for the cipher only.
    pub(crate) fn bytes(&self) -> &[u8; KEY_LEN] {
        &self.bytes
    }
}

impl FromStr for Key {
    type Err = KeyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_text(s)
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Key")
            .field("id", &self.id())
            .finish_non_exhaustive()
    }
}

/// A short public name for a key, written in the clear in every envelope so
/// the server knows which key to try. See [`Key::id`] for its derivation.
///
/// Displays as 16 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyId([u8; KeyId::LEN]);

impl KeyId {
    /// Length in bytes.
    pub const LEN: usize = 8;

    /// A key id from its bytes (as read from an envelope).
    #[must_use]
    pub const fn from_bytes(bytes: [u8; Self::LEN]) -> Self {
        Self(bytes)
    }

    /// The id's bytes.
    #[must_use]
    pub const fn as_bytes(&self) -> &[u8; Self::LEN] {
        &self.0
    }
}

impl fmt::Display for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for KeyId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KeyId({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BYTES: [u8; 32] = [
        0xde, 0xad, 0xbe, 0xef, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x10, 0x32, 0x54,
        0x76, 0x98, 0xba, 0xdc, 0xfe, 0x0f, 0x1e, 0x2d, 0x3c, 0x4b, 0x5a, 0x69, 0x78, 0x87, 0x96,
        0xa5, 0xb4,
    ];

    fn hex(bytes: &[u8]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn debug_shows_no_key_bytes() {
        let key = Key::from_bytes(&BYTES);
        let debug = format!("{key:?}");
        let alt = format!("{key:#?}");
        let text = key.to_text();
        let b64 = text.strip_prefix(KEY_TEXT_PREFIX).unwrap();
        for out in [&debug, &alt] {
            assert!(out.starts_with("Key"), "{out}");
            assert!(!out.contains(&hex(&BYTES)));
            assert!(
                !out.contains(&hex(&BYTES[..4])),
                "no 4-byte run of the key in hex"
            );
            assert!(!out.contains(b64));
            assert!(!out.contains(&b64[..8]));
            assert!(!out.contains("222"), "no decimal byte list"); // 0xde = 222
            assert!(!out.contains("173")); // 0xad
        }
        assert!(debug.contains(&key.id().to_string()), "{debug}");
    }

    #[test]
    fn text_round_trip() {
        let key = Key::generate().unwrap();
        let text = key.to_text();
        assert!(text.starts_with(KEY_TEXT_PREFIX));
        assert_eq!(text.len(), KEY_TEXT_PREFIX.len() + 43);
        let back = Key::from_text(&text).unwrap();
        assert_eq!(back.bytes(), key.bytes());
        let spaced = format!("  \t{}\r\n", text.as_str());
        assert_eq!(Key::from_text(&spaced).unwrap().id(), key.id());
        assert_eq!(text.parse::<Key>().unwrap().id(), key.id());
    }

    #[test]
    fn generated_keys_differ() {
        let a = Key::generate().unwrap();
        let b = Key::generate().unwrap();
        assert_ne!(a.bytes(), b.bytes());
        assert_ne!(a.id(), b.id());
    }

    #[test]
    fn key_id_is_derived_and_not_a_prefix_of_the_key() {
        let key = Key::from_bytes(&BYTES);
        let id = key.id();
        assert_eq!(id, Key::from_bytes(&BYTES).id(), "deterministic");
        assert_ne!(id.as_bytes()[..], BYTES[..8]);
        // Pinned so that ids stay stable across releases (servers sharing a
        // key file must agree): SHA-256("thinkwire-seal/key-id/v1\0" ‖ key).
        let mut h = Sha256::new();
        h.update(b"thinkwire-seal/key-id/v1\0");
        h.update(BYTES);
        assert_eq!(id.as_bytes()[..], h.finalize()[..8]);
        assert_eq!(id.to_string().len(), 16);
        assert_eq!(format!("{id:?}"), format!("KeyId({id})"));
    }

    #[test]
    fn bad_key_texts() {
        let good = Key::from_bytes(&BYTES).to_text();
        let b64 = good.strip_prefix(KEY_TEXT_PREFIX).unwrap().to_owned();
        assert_eq!(Key::from_text(&b64).unwrap_err(), KeyError::Prefix);
        assert_eq!(
            Key::from_text("tw-key-v2:abc").unwrap_err(),
            KeyError::Prefix
        );
        assert_eq!(Key::from_text("").unwrap_err(), KeyError::Prefix);
        assert_eq!(
            Key::from_text(&format!("{KEY_TEXT_PREFIX}{}", &b64[..42])).unwrap_err(),
            KeyError::Base64,
            "43 chars minus one leaves non-canonical trailing bits"
        );
        assert_eq!(
            Key::from_text(&format!("{KEY_TEXT_PREFIX}{}", &b64[..40])).unwrap_err(),
            KeyError::Length { len: 30 }
        );
        assert_eq!(
            Key::from_text(&format!("{KEY_TEXT_PREFIX}{b64}AAAA")).unwrap_err(),
            KeyError::Length { len: 35 }
        );
        assert!(matches!(
            Key::from_text(&format!("{KEY_TEXT_PREFIX}{}", "A".repeat(10_000))),
            Err(KeyError::Length { .. })
        ));
        assert_eq!(
            Key::from_text(&format!("{KEY_TEXT_PREFIX}{}=", &b64)).unwrap_err(),
            KeyError::Base64
        );
        let with_plus = format!("{KEY_TEXT_PREFIX}+{}", &b64[1..]);
        assert_eq!(Key::from_text(&with_plus).unwrap_err(), KeyError::Base64);
        // Errors never echo the text.
        let err = Key::from_text(&format!("{KEY_TEXT_PREFIX}{}", &b64[..40])).unwrap_err();
        assert!(!err.to_string().contains(&b64[..8]));
    }

    proptest::proptest! {
        #[test]
        fn from_text_never_panics(s in "\\PC*") {
            let _ = Key::from_text(&s);
            let _ = Key::from_text(&format!("{KEY_TEXT_PREFIX}{s}"));
        }
    }
}
