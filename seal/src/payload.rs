//! What is sealed: the reasoning text and what replaying it needs.
//!
//! Inner encoding, version 1 (all integers big-endian):
//!
//! ```text
//! version u8 = 1
//! flags   u8           bit 0: an expiry follows; other bits must be 0
//! created_at_ms u64
//! [expires_at_ms u64]  only with flag bit 0
//! model_id  u32 length ‖ UTF-8
//! format_id u32 length ‖ UTF-8
//! text      u32 length ‖ UTF-8
//! [provider kind u32 length ‖ UTF-8,
//!  provider data u32 length ‖ UTF-8]   only with flag bit 1
//! ```
//!
//! The provider item is what an upstream provider needs back verbatim with
//! this reasoning (Anthropic's thinking `signature`, a `redacted_thinking`
//! block's data, OpenAI's `encrypted_content`): the envelope says which.
//!
//! Binary rather than JSON: smaller (it is sent back on every turn), no
//! escaping, and exact — the decoder must consume every byte.

use std::fmt;
use std::time::Duration;

use crate::error::OpenError;

/// Inner payload version this crate writes and reads.
const PAYLOAD_VERSION: u8 = 1;
const FLAG_EXPIRES: u8 = 0b0000_0001;
const FLAG_PROVIDER: u8 = 0b0000_0010;

/// An upstream provider's own opaque reasoning item, sealed with the text
/// and handed back to that provider verbatim.
#[derive(Clone, PartialEq, Eq)]
pub struct ProviderItem {
    /// Which provider and item, e.g. `anthropic.thinking`.
    pub kind: String,
    /// The item, as the provider gave it (opaque here).
    pub data: String,
}

impl fmt::Debug for ProviderItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProviderItem")
            .field("kind", &self.kind)
            .field("data_len", &self.data.len())
            .finish()
    }
}

/// Reasoning as it is sealed and as it comes back out.
///
/// `Debug` shows sizes and ids, never the text.
#[derive(Clone, PartialEq, Eq)]
pub struct SealedReasoning {
    /// The reasoning text, exactly as the model produced it.
    pub text: String,
    /// The model that produced it (replaying reasoning into another model's
    /// template is the caller's decision; it needs to know).
    pub model_id: String,
    /// The reasoning format family (how the text was delimited, e.g. think
    /// tags or Harmony channels), so it is re-rendered the same way.
    pub format_id: String,
    /// When it was sealed, ms since the Unix epoch.
    pub created_at_ms: u64,
    /// After this instant (ms since the Unix epoch) the value no longer
    /// opens. `None`: it never expires (until its key is retired).
    pub expires_at_ms: Option<u64>,
    /// What an upstream provider needs back with this reasoning, if any.
    pub provider: Option<ProviderItem>,
}

impl SealedReasoning {
    /// Reasoning that does not expire.
    #[must_use]
    pub fn new(
        text: impl Into<String>,
        model_id: impl Into<String>,
        format_id: impl Into<String>,
        created_at_ms: u64,
    ) -> Self {
        Self {
            text: text.into(),
            model_id: model_id.into(),
            format_id: format_id.into(),
            created_at_ms,
            expires_at_ms: None,
            provider: None,
        }
    }

    /// Carries `item` for the provider.
    #[must_use]
    pub fn with_provider(mut self, item: ProviderItem) -> Self {
        self.provider = Some(item);
        self
    }

    /// Expires at the given instant (ms since the Unix epoch).
    #[must_use]
    pub fn with_expires_at_ms(mut self, expires_at_ms: u64) -> Self {
        self.expires_at_ms = Some(expires_at_ms);
        self
    }

    /// Expires `ttl` after its creation time.
    #[must_use]
    pub fn with_ttl(self, ttl: Duration) -> Self {
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        let at = self.created_at_ms.saturating_add(ttl_ms);
        self.with_expires_at_ms(at)
    }

    /// Whether it has expired at `now_ms`: an expiry instant is the first
    /// millisecond at which the value is refused.
    #[must_use]
    pub fn is_expired_at(&self, now_ms: u64) -> bool {
        self.expires_at_ms.is_some_and(|at| now_ms >= at)
    }

    /// Length of the inner encoding.
    pub(crate) fn encoded_len(&self) -> usize {
        1 + 1
            + 8
            + if self.expires_at_ms.is_some() { 8 } else { 0 }
            + 3 * 4
            + self.model_id.len()
            + self.format_id.len()
            + self.text.len()
            + self
                .provider
                .as_ref()
                .map_or(0, |p| 2 * 4 + p.kind.len() + p.data.len())
    }

    /// Appends the inner encoding to `out`. `None` if a field is longer than
    /// its u32 length prefix allows.
    pub(crate) fn encode_into(&self, out: &mut Vec<u8>) -> Option<()> {
        out.push(PAYLOAD_VERSION);
        let mut flags = 0;
        if self.expires_at_ms.is_some() {
            flags |= FLAG_EXPIRES;
        }
        if self.provider.is_some() {
            flags |= FLAG_PROVIDER;
        }
        out.push(flags);
        out.extend_from_slice(&self.created_at_ms.to_be_bytes());
        if let Some(at) = self.expires_at_ms {
            out.extend_from_slice(&at.to_be_bytes());
        }
        let provider = self.provider.as_ref();
        let fields = [&self.model_id, &self.format_id, &self.text]
            .into_iter()
            .chain(provider.map(|p| &p.kind))
            .chain(provider.map(|p| &p.data));
        for field in fields {
            let len = u32::try_from(field.len()).ok()?;
            out.extend_from_slice(&len.to_be_bytes());
            out.extend_from_slice(field.as_bytes());
        }
        Some(())
    }

    /// Decodes an authenticated inner payload. Any deviation (unknown
    /// version or flag, wrong lengths, bad UTF-8, trailing bytes) is
    /// [`OpenError::UnsupportedPayload`].
    pub(crate) fn decode(bytes: &[u8]) -> Result<Self, OpenError> {
        let mut r = Reader(bytes);
        let version = r.u8()?;
        if version != PAYLOAD_VERSION {
            return Err(OpenError::UnsupportedPayload);
        }
        let flags = r.u8()?;
        if flags & !(FLAG_EXPIRES | FLAG_PROVIDER) != 0 {
            return Err(OpenError::UnsupportedPayload);
        }
        let created_at_ms = r.u64()?;
        let expires_at_ms = if flags & FLAG_EXPIRES != 0 {
            Some(r.u64()?)
        } else {
            None
        };
        let model_id = r.string()?;
        let format_id = r.string()?;
        let text = r.string()?;
        let provider = if flags & FLAG_PROVIDER != 0 {
            Some(ProviderItem {
                kind: r.string()?,
                data: r.string()?,
            })
        } else {
            None
        };
        if !r.0.is_empty() {
            return Err(OpenError::UnsupportedPayload);
        }
        Ok(Self {
            text,
            model_id,
            format_id,
            created_at_ms,
            expires_at_ms,
            provider,
        })
    }
}

impl fmt::Debug for SealedReasoning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SealedReasoning")
            .field("text_len", &self.text.len())
            .field("model_id", &self.model_id)
            .field("format_id", &self.format_id)
            .field("created_at_ms", &self.created_at_ms)
            .field("expires_at_ms", &self.expires_at_ms)
            .field("provider", &self.provider)
            .finish()
    }
}

/// A cursor over authenticated bytes; every read is bounds-checked.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], OpenError> {
        let (head, rest) = self
            .0
            .split_first_chunk::<N>()
            .ok_or(OpenError::UnsupportedPayload)?;
        self.0 = rest;
        Ok(*head)
    }

    fn u8(&mut self) -> Result<u8, OpenError> {
        Ok(self.take::<1>()?[0])
    }

    fn u64(&mut self) -> Result<u64, OpenError> {
        Ok(u64::from_be_bytes(self.take()?))
    }

    fn string(&mut self) -> Result<String, OpenError> {
        let len = usize::try_from(u32::from_be_bytes(self.take()?))
            .map_err(|_| OpenError::UnsupportedPayload)?;
        if len > self.0.len() {
            return Err(OpenError::UnsupportedPayload);
        }
        let (field, rest) = self.0.split_at(len);
        self.0 = rest;
        String::from_utf8(field.to_vec()).map_err(|_| OpenError::UnsupportedPayload)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> SealedReasoning {
        SealedReasoning::new(
            "step 1… then 2",
            "qwen3-0.6b",
            "think-tags",
            1_700_000_000_000,
        )
    }

    fn encode(p: &SealedReasoning) -> Vec<u8> {
        let mut out = Vec::new();
        p.encode_into(&mut out).unwrap();
        assert_eq!(out.len(), p.encoded_len());
        out
    }

    #[test]
    fn round_trip_with_and_without_expiry() {
        for p in [
            sample(),
            sample().with_expires_at_ms(42),
            SealedReasoning::new("", "", "", 0),
            sample().with_provider(ProviderItem {
                kind: "anthropic.thinking".into(),
                data: "EqoBCkgIARAB".into(),
            }),
            sample().with_expires_at_ms(7).with_provider(ProviderItem {
                kind: "k".into(),
                data: String::new(),
            }),
        ] {
            assert_eq!(SealedReasoning::decode(&encode(&p)).unwrap(), p);
        }
    }

    #[test]
    fn provider_item_layout_is_pinned() {
        let p = SealedReasoning::new("t", "m", "f", 0).with_provider(ProviderItem {
            kind: "k".into(),
            data: "d".into(),
        });
        let bytes = encode(&p);
        assert_eq!(bytes[1], FLAG_PROVIDER);
        assert!(bytes.ends_with(&[0, 0, 0, 1, b't', 0, 0, 0, 1, b'k', 0, 0, 0, 1, b'd']));
        // Without the flag, the trailing item is refused, not ignored.
        let mut unflagged = bytes.clone();
        unflagged[1] = 0;
        assert!(SealedReasoning::decode(&unflagged).is_err());
    }

    #[test]
    fn layout_is_pinned() {
        let p = SealedReasoning::new("t", "m", "f", 0x0102).with_expires_at_ms(0x0304);
        assert_eq!(
            encode(&p),
            [
                1, 1, 0, 0, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 3, 4, 0, 0, 0, 1, b'm', 0, 0, 0, 1,
                b'f', 0, 0, 0, 1, b't'
            ]
        );
    }

    #[test]
    fn ttl_and_expiry() {
        let p = sample().with_ttl(Duration::from_secs(10));
        assert_eq!(p.expires_at_ms, Some(1_700_000_010_000));
        assert!(!p.is_expired_at(1_700_000_009_999));
        assert!(p.is_expired_at(1_700_000_010_000));
        assert!(!sample().is_expired_at(u64::MAX));
        let far = SealedReasoning::new("", "", "", u64::MAX - 1).with_ttl(Duration::MAX);
        assert_eq!(far.expires_at_ms, Some(u64::MAX));
    }

    #[test]
    fn debug_hides_text() {
        let p = SealedReasoning::new("the secret chain of thought", "m", "f", 1);
        let d = format!("{p:?}");
        assert!(!d.contains("secret"), "{d}");
        assert!(d.contains("text_len: 27"), "{d}");
    }

    #[test]
    fn rejects_deviations() {
        let good = encode(&sample().with_expires_at_ms(5));
        // Every strict prefix and every extension fails.
        for n in 0..good.len() {
            assert_eq!(
                SealedReasoning::decode(&good[..n]),
                Err(OpenError::UnsupportedPayload)
            );
        }
        let mut longer = good.clone();
        longer.push(0);
        assert_eq!(
            SealedReasoning::decode(&longer),
            Err(OpenError::UnsupportedPayload)
        );
        let mut v2 = good.clone();
        v2[0] = 2;
        assert_eq!(
            SealedReasoning::decode(&v2),
            Err(OpenError::UnsupportedPayload)
        );
        let mut flag = good.clone();
        flag[1] |= 0b10;
        assert_eq!(
            SealedReasoning::decode(&flag),
            Err(OpenError::UnsupportedPayload)
        );
        let mut utf8 = encode(&SealedReasoning::new("é", "", "", 0));
        let last = utf8.len() - 1;
        utf8[last] = 0xff;
        assert_eq!(
            SealedReasoning::decode(&utf8),
            Err(OpenError::UnsupportedPayload)
        );
        let mut huge_len = encode(&SealedReasoning::new("", "", "", 0));
        huge_len[10..14].copy_from_slice(&u32::MAX.to_be_bytes());
        assert_eq!(
            SealedReasoning::decode(&huge_len),
            Err(OpenError::UnsupportedPayload)
        );
    }

    proptest::proptest! {
        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..200)) {
            let _ = SealedReasoning::decode(&bytes);
        }

        #[test]
        fn round_trips(text in "\\PC*", model in "\\PC{0,20}", format in "\\PC{0,20}",
                       created in proptest::num::u64::ANY,
                       expires in proptest::option::of(proptest::num::u64::ANY),
                       provider in proptest::option::of(("\\PC{0,20}", "\\PC*"))) {
            let provider = provider.map(|(kind, data)| ProviderItem { kind, data });
            let p = SealedReasoning { text, model_id: model, format_id: format,
                                      created_at_ms: created, expires_at_ms: expires, provider };
            proptest::prop_assert_eq!(SealedReasoning::decode(&encode(&p)).unwrap(), p);
        }
    }
}
