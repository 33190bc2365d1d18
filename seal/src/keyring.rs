//! The key ring: seal with the active key, open with any key it holds.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use zeroize::Zeroizing;

use crate::cipher::{Cipher, NONCE_LEN, TAG_LEN};
use crate::envelope::{self, Binding, HEADER_LEN, KEY_ID_OFFSET, NONCE_OFFSET, Parsed};
use crate::error::{KeyListError, Location, OpenError, SealError};
use crate::key::{Key, KeyId};
use crate::payload::SealedReasoning;
use crate::{DEFAULT_MAX_ENVELOPE_LEN, ENVELOPE_VERSION};

struct Entry {
    id: KeyId,
    cipher: Cipher,
}

/// The server's sealing keys.
///
/// The first key is active: every new value is sealed with it. Every key in
/// the ring opens values sealed with it, so rotation is: add the new key as
/// active ([`KeyRing::add_active`]), keep the old one until the values
/// sealed under it have expired or stopped mattering, then
/// [`KeyRing::retire`] it. Conversations in flight keep working throughout.
///
/// Share one ring behind an `Arc`; sealing and opening take `&self`. The
/// ring holds the keys only inside the ciphers, which wipe them on drop.
pub struct KeyRing {
    /// Active key first.
    keys: Vec<Entry>,
    max_envelope_len: usize,
}

impl KeyRing {
    /// A ring holding one key, active.
    #[must_use]
    pub fn new(active: Key) -> Self {
        Self {
            keys: vec![Entry {
                id: active.id(),
                cipher: Cipher::new(&active),
            }],
            max_envelope_len: DEFAULT_MAX_ENVELOPE_LEN,
        }
    }

    /// A ring from keys in order of preference: the first is active.
    ///
    /// # Errors
    /// [`KeyListError::Empty`] for no keys, [`KeyListError::Duplicate`] if
    /// two keys share an id (its location's `line` is the key's 1-based
    /// position in `keys`).
    pub fn from_keys(keys: impl IntoIterator<Item = Key>) -> Result<Self, KeyListError> {
        let mut ring: Option<Self> = None;
        for (i, key) in keys.into_iter().enumerate() {
            match &mut ring {
                None => ring = Some(Self::new(key)),
                Some(r) => r.add_previous(key).map_err(|id| KeyListError::Duplicate {
                    location: Location {
                        line: i + 1,
                        item: 1,
                    },
                    id,
                })?,
            }
        }
        ring.ok_or(KeyListError::Empty)
    }

    /// Sets the cap on the length of a sealed value (encoded characters),
    /// applied before any work when opening and checked when sealing.
    #[must_use]
    pub fn with_max_envelope_len(mut self, max: usize) -> Self {
        self.max_envelope_len = max;
        self
    }

    /// The cap on a sealed value's length, in characters.
    #[must_use]
    pub fn max_envelope_len(&self) -> usize {
        self.max_envelope_len
    }

    /// Makes `key` the active key; the previous keys still open.
    ///
    /// # Errors
    /// The key's id if the ring already holds that key (or, with negligible
    /// probability, another key with the same id); the ring is unchanged.
    pub fn add_active(&mut self, key: Key) -> Result<(), KeyId> {
        let entry = self.entry_for(&key)?;
        self.keys.insert(0, entry);
        tracing::info!(key_id = %self.active_key_id(), "seal: new active key");
        Ok(())
    }

    /// Adds a key that opens old values but does not seal new ones.
    ///
    /// # Errors
    /// As [`KeyRing::add_active`].
    pub fn add_previous(&mut self, key: Key) -> Result<(), KeyId> {
        let entry = self.entry_for(&key)?;
        self.keys.push(entry);
        Ok(())
    }

    fn entry_for(&self, key: &Key) -> Result<Entry, KeyId> {
        let id = key.id();
        if self.keys.iter().any(|e| e.id == id) {
            return Err(id);
        }
        Ok(Entry {
            id,
            cipher: Cipher::new(key),
        })
    }

    /// Removes a non-active key: values sealed with it stop opening (they
    /// fail with [`OpenError::UnknownKey`]). Returns whether a key was
    /// removed; the active key is never removed.
    pub fn retire(&mut self, id: KeyId) -> bool {
        match self.keys.iter().skip(1).position(|e| e.id == id) {
            Some(i) => {
                self.keys.remove(i + 1);
                tracing::info!(key_id = %id, "seal: key retired");
                true
            }
            None => false,
        }
    }

    /// Id of the key that seals new values.
    #[must_use]
    pub fn active_key_id(&self) -> KeyId {
        // The ring is never empty: every constructor adds a key and `retire`
        // keeps the first.
        self.keys[0].id
    }

    /// Ids of all keys, active first.
    pub fn key_ids(&self) -> impl ExactSizeIterator<Item = KeyId> + '_ {
        self.keys.iter().map(|e| e.id)
    }

    /// Seals reasoning for one thread and reasoning message, with the active
    /// key and a fresh random nonce. Returns the base64url string to send as
    /// the `REASONING_ENCRYPTED_VALUE` value.
    ///
    /// # Errors
    /// [`SealError::Rng`] if the OS RNG fails; [`SealError::TooLarge`] if the
    /// value would exceed the ring's cap (it could never be opened).
    pub fn seal(
        &self,
        reasoning: &SealedReasoning,
        binding: Binding<'_>,
    ) -> Result<String, SealError> {
        let active = &self.keys[0];
        let body_len = reasoning.encoded_len();
        let total = HEADER_LEN + body_len + TAG_LEN;
        let encoded = envelope::encoded_len(total);
        if encoded > self.max_envelope_len {
            return Err(SealError::TooLarge {
                len: encoded,
                max: self.max_envelope_len,
            });
        }

        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(|e| SealError::Rng {
            reason: e.to_string(),
        })?;

        // One buffer, sized up front so the plaintext is never copied by a
        // reallocation, and wiped on drop in case sealing stops half-way.
        let mut buf = Zeroizing::new(Vec::with_capacity(total));
        buf.push(ENVELOPE_VERSION);
        buf.extend_from_slice(active.id.as_bytes());
        buf.extend_from_slice(&nonce);
        reasoning.encode_into(&mut buf).ok_or(SealError::TooLarge {
            len: encoded,
            max: self.max_envelope_len,
        })?;
        let aad = envelope::associated_data(ENVELOPE_VERSION, active.id, binding);
        let tag = active
            .cipher
            .seal_in_place(&nonce, &aad, &mut buf[HEADER_LEN..])
            // Only reachable past ChaCha20's 256 GiB limit, far above the cap.
            .map_err(|_| SealError::TooLarge {
                len: encoded,
                max: self.max_envelope_len,
            })?;
        buf.extend_from_slice(&tag);
        debug_assert_eq!(buf.len(), total);
        Ok(URL_SAFE_NO_PAD.encode(buf.as_slice()))
    }

    /// Opens a sealed value presented for `binding`, at time `now_ms`
    /// (ms since the Unix epoch; see [`crate::now_unix_ms`]).
    ///
    /// Checks, in order: length cap, base64, version, length (all
    /// [`OpenError::Malformed`]); key id ([`OpenError::UnknownKey`]);
    /// authentication of everything, binding included
    /// ([`OpenError::Authentication`]); then the payload
    /// ([`OpenError::UnsupportedPayload`]) and its expiry
    /// ([`OpenError::Expired`]).
    ///
    /// # Errors
    /// See above; no input makes it panic.
    pub fn open(
        &self,
        value: &str,
        binding: Binding<'_>,
        now_ms: u64,
    ) -> Result<SealedReasoning, OpenError> {
        let mut parsed = Parsed::parse(value, self.max_envelope_len)?;
        let key_id = parsed.key_id;
        let entry = self
            .keys
            .iter()
            .find(|e| e.id == key_id)
            .ok_or(OpenError::UnknownKey(key_id))?;
        debug_assert_eq!(
            &parsed.bytes[KEY_ID_OFFSET..NONCE_OFFSET],
            key_id.as_bytes()
        );

        let aad = envelope::associated_data(ENVELOPE_VERSION, key_id, binding);
        let bytes: &mut [u8] = parsed.bytes.as_mut_slice();
        // `Parsed::parse` guarantees MIN_LEN bytes, so these splits succeed;
        // they are still written without indexing that could panic.
        let (header, rest) = bytes
            .split_at_mut_checked(HEADER_LEN)
            .ok_or(OpenError::Authentication)?;
        let body_len = rest
            .len()
            .checked_sub(TAG_LEN)
            .ok_or(OpenError::Authentication)?;
        let (body, tag) = rest.split_at_mut(body_len);
        let nonce: &[u8; NONCE_LEN] = header[NONCE_OFFSET..]
            .try_into()
            .map_err(|_| OpenError::Authentication)?;
        let tag: &[u8; TAG_LEN] = (&*tag).try_into().map_err(|_| OpenError::Authentication)?;

        if entry.cipher.open_in_place(nonce, &aad, body, tag).is_err() {
            tracing::debug!(key_id = %key_id, "seal: value failed authentication");
            return Err(OpenError::Authentication);
        }
        let reasoning = SealedReasoning::decode(body)?;
        match reasoning.expires_at_ms {
            Some(at) if now_ms >= at => Err(OpenError::Expired { expired_at_ms: at }),
            _ => Ok(reasoning),
        }
    }
}

impl fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyRing")
            .field("active", &self.active_key_id())
            .field("keys", &self.key_ids().collect::<Vec<_>>())
            .field("max_envelope_len", &self.max_envelope_len)
            .finish()
    }
}
