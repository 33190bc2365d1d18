//! Streaming detokenization: token ids in, text pieces out.
//!
//! Byte-level BPE tokens are byte strings; one character may span several
//! tokens (an emoji is four bytes, often two or three tokens). A piece is
//! only emitted once its bytes form whole UTF-8 characters, so a client
//! never sees a broken character, and the concatenation of all pieces
//! (after [`IncrementalDecoder::finish`]) equals decoding all ids at once.
//!
//! ```no_run
//! # fn demo(tokenizer: &thinkwire_chat::Tokenizer, ids: &[u32]) -> thinkwire_chat::Result<()> {
//! let mut decoder = tokenizer.incremental_decoder(true);
//! let mut text = String::new();
//! for &id in ids {
//!     text.push_str(&decoder.push(id)?);
//! }
//! text.push_str(&decoder.finish()?);
//! assert_eq!(text, tokenizer.decode(ids, true)?);
//! # Ok(()) }
//! ```
//!
//! Two strategies:
//! - byte-level decoders (GPT-2 family): exact bytes per token, emitting
//!   the longest complete UTF-8 prefix; invalid sequences become U+FFFD as
//!   `String::from_utf8_lossy` (and so Hugging Face) makes them.
//! - any other decoder (SentencePiece metaspace, byte fallback): decode a
//!   short window of ids before and after the last emitted point and emit
//!   the difference, which keeps context-dependent rules right (a leading
//!   `▁` is a space except at the very start) and holds back text that ends
//!   in U+FFFD (a character still incomplete). One case cannot stream
//!   exactly: `tokenizers`' ByteFallback decoder turns a whole run of byte
//!   tokens into U+FFFD when any of it is invalid, rewriting characters
//!   already shown; there the pieces hold U+FFFD only for the bytes not yet
//!   shown (the held ids decoded on their own).

use crate::error::Result;
use crate::tokenizer::Tokenizer;

/// A token-by-token decoder for one generation. See the module docs.
pub struct IncrementalDecoder {
    tokenizer: Tokenizer,
    skip_special_tokens: bool,
    state: State,
}

enum State {
    Bytes {
        /// Bytes of an incomplete trailing UTF-8 sequence.
        pending: Vec<u8>,
    },
    Window {
        /// Ids from `prefix_offset` on (earlier ones are dropped).
        ids: Vec<u32>,
        /// `ids[..read]` have been emitted; `ids[..prefix]` of those are
        /// dropped context. Kept relative to `ids`.
        read: usize,
    },
}

/// After this many ids without a complete character, the held text is a
/// real U+FFFD and not a character in progress (UTF-8 has at most 4 bytes,
/// and byte-fallback tokens carry one byte each).
const MAX_HELD_IDS: usize = 8;

impl IncrementalDecoder {
    /// A decoder over `tokenizer`.
    pub fn new(tokenizer: Tokenizer, skip_special_tokens: bool) -> Self {
        let state = if tokenizer.is_byte_level() {
            State::Bytes {
                pending: Vec::new(),
            }
        } else {
            State::Window {
                ids: Vec::new(),
                read: 0,
            }
        };
        Self {
            tokenizer,
            skip_special_tokens,
            state,
        }
    }

    /// Feeds one id; returns the text it completes (often empty while a
    /// character is in progress).
    pub fn push(&mut self, id: u32) -> Result<String> {
        match &mut self.state {
            State::Bytes { pending } => {
                if !(self.skip_special_tokens && self.tokenizer.is_special(id)) {
                    pending.extend_from_slice(self.tokenizer.token_bytes(id).unwrap_or(&[]));
                }
                Ok(take_complete(pending))
            }
            State::Window { ids, read } => {
                ids.push(id);
                let prefix = self
                    .tokenizer
                    .decode(&ids[..*read], self.skip_special_tokens)?;
                let full = self.tokenizer.decode(ids, self.skip_special_tokens)?;
                let held = ids.len() - *read;
                let incomplete = full.ends_with('\u{FFFD}') && held < MAX_HELD_IDS;
                let new = match full.strip_prefix(prefix.as_str()) {
                    Some(rest) => rest.to_owned(),
                    None => self
                        .tokenizer
                        .decode(&ids[*read..], self.skip_special_tokens)?,
                };
                if new.is_empty() || incomplete {
                    return Ok(String::new());
                }
                // The ids just emitted stay as context for the next window;
                // older ones are dropped.
                ids.drain(..*read);
                *read = ids.len();
                Ok(new)
            }
        }
    }

    /// Ends the stream: returns what was held back (an incomplete
    /// character becomes U+FFFD, as a one-shot decode makes it).
    pub fn finish(self) -> Result<String> {
        match self.state {
            State::Bytes { pending } => Ok(String::from_utf8_lossy(&pending).into_owned()),
            State::Window { ids, read } => {
                let prefix = self
                    .tokenizer
                    .decode(&ids[..read], self.skip_special_tokens)?;
                let full = self.tokenizer.decode(&ids, self.skip_special_tokens)?;
                match full.strip_prefix(prefix.as_str()) {
                    Some(rest) => Ok(rest.to_owned()),
                    None => self
                        .tokenizer
                        .decode(&ids[read..], self.skip_special_tokens),
                }
            }
        }
    }
}

/// Removes and returns the longest prefix of `pending` that decodes, with
/// invalid sequences replaced by U+FFFD; leaves an incomplete but possibly
/// valid tail in place.
fn take_complete(pending: &mut Vec<u8>) -> String {
    let mut out = String::new();
    let mut start = 0;
    loop {
        match std::str::from_utf8(&pending[start..]) {
            Ok(s) => {
                out.push_str(s);
                start = pending.len();
                break;
            }
            Err(e) => {
                let valid = start + e.valid_up_to();
                // `valid_up_to` marks a UTF-8 boundary, so this slice is
                // valid and the lossy conversion is a plain copy.
                out.push_str(&String::from_utf8_lossy(&pending[start..valid]));
                match e.error_len() {
                    Some(n) => {
                        out.push('\u{FFFD}');
                        start = valid + n;
                    }
                    None => {
                        start = valid;
                        break;
                    }
                }
            }
        }
    }
    pending.drain(..start);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn take_complete_holds_partial_characters() {
        let euro = "€".as_bytes(); // e2 82 ac
        let mut p = vec![b'a', euro[0]];
        assert_eq!(take_complete(&mut p), "a");
        assert_eq!(p, vec![euro[0]]);
        p.push(euro[1]);
        assert_eq!(take_complete(&mut p), "");
        p.push(euro[2]);
        assert_eq!(take_complete(&mut p), "€");
        assert!(p.is_empty());
        // An invalid byte is replaced at once, like from_utf8_lossy.
        let mut p = vec![0xff, b'b', 0xe2, 0x28];
        assert_eq!(take_complete(&mut p), "\u{FFFD}b\u{FFFD}(");
        assert!(p.is_empty());
    }
}
