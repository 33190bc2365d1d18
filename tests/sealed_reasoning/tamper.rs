//! Altering a sealed value's bytes: a base64url codec and a one-byte flip
//! inside the ciphertext.

/// A base64url (no padding) codec, to alter a sealed value's bytes.
mod b64 {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

    pub fn decode(text: &str) -> Vec<u8> {
        let mut bits = 0u32;
        let mut count = 0;
        let mut out = Vec::new();
        for c in text.bytes() {
            let v = ALPHABET.iter().position(|&a| a == c).expect("base64url") as u32;
            bits = (bits << 6) | v;
            count += 6;
            if count >= 8 {
                count -= 8;
                out.push((bits >> count) as u8);
                bits &= (1 << count) - 1;
            }
        }
        out
    }

    pub fn encode(bytes: &[u8]) -> String {
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let mut n = 0u32;
            for (i, b) in chunk.iter().enumerate() {
                n |= u32::from(*b) << (16 - 8 * i);
            }
            for i in 0..=chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            }
        }
        out
    }
}

/// `sealed` with one byte of its ciphertext flipped.
pub fn flip_one_byte(sealed: &str) -> String {
    let mut bytes = b64::decode(sealed);
    assert_eq!(b64::encode(&bytes), sealed, "the codec round-trips");
    // Past the clear header (version, key id, nonce: 33 bytes).
    let at = 33 + (bytes.len() - 33) / 2;
    bytes[at] ^= 0x01;
    b64::encode(&bytes)
}
