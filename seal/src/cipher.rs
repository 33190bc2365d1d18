//! The one AEAD call path: XChaCha20-Poly1305 in place, detached tag.
//! Everything that seals or opens goes through [`Cipher`], and so does the
//! published test vector below.

use chacha20poly1305::aead::AeadInOut;
use chacha20poly1305::{KeyInit, Tag, XChaCha20Poly1305, XNonce};

use crate::key::Key;

/// Nonce length (XChaCha20: 192 bits).
pub(crate) const NONCE_LEN: usize = 24;
/// Poly1305 tag length.
pub(crate) const TAG_LEN: usize = 16;

/// A keyed cipher. The RustCrypto type keeps its own copy of the key and,
/// with the `zeroize` feature, wipes it on drop.
pub(crate) struct Cipher(XChaCha20Poly1305);

/// Authentication failed (the only way opening can fail here).
#[derive(Debug)]
pub(crate) struct AuthFailed;

impl Cipher {
    pub(crate) fn new(key: &Key) -> Self {
        Self(XChaCha20Poly1305::new(key.bytes().into()))
    }

    /// Encrypts `buf` in place and returns the tag.
    pub(crate) fn seal_in_place(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        buf: &mut [u8],
    ) -> Result<[u8; TAG_LEN], AuthFailed> {
        // Fails only for messages beyond ChaCha20's 256 GiB counter range,
        // which the envelope cap rules out long before.
        let tag = self
            .0
            .encrypt_inout_detached(<&XNonce>::from(nonce), aad, buf.into())
            .map_err(|_| AuthFailed)?;
        Ok(tag.into())
    }

    /// Checks the tag and, only if it matches, decrypts `buf` in place.
    pub(crate) fn open_in_place(
        &self,
        nonce: &[u8; NONCE_LEN],
        aad: &[u8],
        buf: &mut [u8],
        tag: &[u8; TAG_LEN],
    ) -> Result<(), AuthFailed> {
        self.0
            .decrypt_inout_detached(<&XNonce>::from(nonce), aad, buf.into(), <&Tag>::from(tag))
            .map_err(|_| AuthFailed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    /// AEAD_XChaCha20_Poly1305 test vector from draft-irtf-cfrg-xchacha-03,
    /// appendix A.3.1 ("Example and Test Vector for AEAD_XChaCha20_Poly1305"),
    /// <https://datatracker.ietf.org/doc/html/draft-irtf-cfrg-xchacha-03#appendix-A.3.1>.
    #[test]
    fn draft_irtf_cfrg_xchacha_03_a_3_1() {
        let plaintext = b"Ladies and Gentlemen of the class of '99: If I could offer you \
only one tip for the future, sunscreen would be it.";
        let aad = unhex("50515253c0c1c2c3c4c5c6c7");
        let key: [u8; 32] =
            unhex("808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f")
                .try_into()
                .unwrap();
        let iv: [u8; 24] = unhex("404142434445464748494a4b4c4d4e4f5051525354555657")
            .try_into()
            .unwrap();
        let ciphertext = unhex(
            "bd6d179d3e83d43b9576579493c0e939572a1700252bfaccbed2902c21396cbb
             731c7f1b0b4aa6440bf3a82f4eda7e39ae64c6708c54c216cb96b72e1213b452
             2f8c9ba40db5d945b11b69b982c1bb9e3f3fac2bc369488f76b2383565d3fff9
             21f9664c97637da9768812f615c68b13b52e",
        );
        let tag = unhex("c0875924c1c7987947deafd8780acf49");
        assert_eq!(plaintext.len(), 114);

        let cipher = Cipher::new(&Key::from_bytes(&key));
        let mut buf = plaintext.to_vec();
        let got_tag = cipher.seal_in_place(&iv, &aad, &mut buf).unwrap();
        assert_eq!(buf, ciphertext);
        assert_eq!(got_tag[..], tag[..]);

        let tag: [u8; 16] = tag.try_into().unwrap();
        cipher.open_in_place(&iv, &aad, &mut buf, &tag).unwrap();
        assert_eq!(&buf[..], &plaintext[..]);

        // The same vector with one bit of the tag or the AAD changed fails.
        let mut bad_tag = tag;
        bad_tag[15] ^= 0x80;
        let mut ct = ciphertext.clone();
        assert!(cipher.open_in_place(&iv, &aad, &mut ct, &bad_tag).is_err());
        assert_eq!(ct, ciphertext, "nothing decrypted on failure");
        let mut bad_aad = aad.clone();
        bad_aad[0] ^= 1;
        assert!(cipher.open_in_place(&iv, &bad_aad, &mut ct, &tag).is_err());
    }
}
