//! GPT-2's byte-to-character table, the alphabet of byte-level BPE
//! vocabularies (GPT-2, Llama 3, Qwen, SmolLM, gpt-oss).
//!
//! Every byte is mapped to a printable character so that vocabularies can be
//! stored as text: printable Latin-1 bytes map to themselves, the other 68
//! to U+0100 and up in byte order (space becomes `Ġ`, newline `Ċ`).

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
    table().1.get(c as usize).copied().flatten()
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

/// The characters the table uses: the printable bytes' own code points
/// and U+0100 to U+0143 for the other 68. The way back is an array over
/// them: every token of a vocabulary is mapped back when a tokenizer loads
/// (151,000 for Qwen's), and hashing each character took 8 % of a
/// debug-built test that loads one.
const SPAN: usize = 256 + 68;

type Table = ([char; 256], [Option<u8>; SPAN]);

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
        let mut back = [None; SPAN];
        for b in 0..=255u8 {
            if let Some(slot) = back.get_mut(forward[usize::from(b)] as usize) {
                *slot = Some(b);
            }
        }
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
        // Every character of the table stands for one byte; no other does.
        let mapped = (0..=0x10FFFFu32)
            .filter_map(char::from_u32)
            .filter(|&c| char_to_byte(c).is_some())
            .count();
        assert_eq!(mapped, 256);
        assert_eq!(char_to_byte('\u{144}'), None);
        assert_eq!(token_bytes("ĠParis"), b" Paris");
        // "Ã©" is é's two UTF-8 bytes spelled in the table.
        assert_eq!(token_bytes("Ã©"), "é".as_bytes());
        // A character outside the table: the token is taken as plain UTF-8.
        assert_eq!(token_bytes("日本"), "日本".as_bytes());
    }
}
