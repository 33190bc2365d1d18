//! GPT-2's byte-to-character table, the alphabet of byte-level BPE
//! vocabularies (GPT-2, Llama 3, Qwen, SmolLM, gpt-oss).
//!
//! Every byte is mapped to a printable character so that vocabularies can be
//! stored as text: printable Latin-1 bytes map to themselves, the other 68
//! to U+0100 and up in byte order (space becomes `Ġ`, newline `Ċ`).

use std::collections::HashMap;
use std::sync::OnceLock;

fn is_printable(b: u8) -> bool {
    matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF)
}

/// The character that stands for byte `b`.
#[cfg(test)]
pub fn byte_to_char(b: u8) -> char {
    table().0[usize::from(b)]
}

/// The byte a vocabulary character stands for, if it is one of the 256.
pub fn char_to_byte(c: char) -> Option<u8> {
    table().1.get(&c).copied()
}

/// The raw bytes of a vocabulary token, as `tokenizers`' ByteLevel decoder
/// computes them: each character mapped back to its byte, or the token's
/// own UTF-8 if any character is outside the table (added tokens written
/// as plain text).
pub fn token_bytes(token: &str) -> Vec<u8> {
    token
        .chars()
        .map(char_to_byte)
        .collect::<Option<Vec<u8>>>()
        .unwrap_or_else(|| token.as_bytes().to_vec())
}

type Table = ([char; 256], HashMap<char, u8>);

fn table() -> &'static Table {
    static TABLE: OnceLock<Table> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut forward = ['\0'; 256];
        let mut next = 256u32;
        for b in 0..=255u8 {
            forward[usize::from(b)] = if is_printable(b) {
                char::from(b)
            } else {
                let c = char::from_u32(next).unwrap_or('\u{FFFD}');
                next += 1;
                c
            };
        }
        let back = forward
            .iter()
            .enumerate()
            .map(|(b, &c)| (c, b as u8))
            .collect();
        (forward, back)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_characters() {
        assert_eq!(byte_to_char(b' '), 'Ġ');
        assert_eq!(byte_to_char(b'\n'), 'Ċ');
        assert_eq!(byte_to_char(b'a'), 'a');
        assert_eq!(byte_to_char(0xAD), 'Ń');
        for b in 0..=255u8 {
            assert_eq!(char_to_byte(byte_to_char(b)), Some(b));
        }
        assert_eq!(token_bytes("ĠParis"), b" Paris");
        // "Ã©" is é's two UTF-8 bytes spelled in the table.
        assert_eq!(token_bytes("Ã©"), "é".as_bytes());
        // A character outside the table: the token is taken as plain UTF-8.
        assert_eq!(token_bytes("日本"), "日本".as_bytes());
    }
}
