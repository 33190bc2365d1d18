//! Macro-generated negative tests: one byte flipped in each region of the
//! envelope, every bit flip, each field of the associated data changed,
//! and every truncation or extension.

use super::*;

// --- Negative tests: one byte flipped in each region ---------------------

/// Generates a test that flips one byte (chosen by `$pos` from the decoded
/// length) with `$mask` and expects the open to fail with `$want`.
macro_rules! flip_fails {
    ($($name:ident: $pos:expr, $mask:expr => $want:pat),* $(,)?) => {$(
        #[test]
        fn $name() {
            let (ring, value) = fixture();
            let mut bytes = decode(&value);
            let pos: usize = ($pos)(bytes.len());
            bytes[pos] ^= $mask;
            let got = ring.open(&encode(&bytes), binding(), NOW);
            assert!(matches!(got, Err($want)), "byte {pos}: {got:?}");
        }
    )*};
}

flip_fails! {
    flip_version_low_bit: |_| 0, 0x01 => OpenError::Malformed(Malformed::UnknownVersion(0)),
    flip_version_high_bit: |_| 0, 0x80 => OpenError::Malformed(Malformed::UnknownVersion(0x81)),
    flip_key_id_first: |_| KEY_ID.start, 0x01 => OpenError::UnknownKey(_),
    flip_key_id_last: |_| KEY_ID.end - 1, 0x80 => OpenError::UnknownKey(_),
    flip_nonce_first: |_| NONCE.start, 0x01 => OpenError::Authentication,
    flip_nonce_last: |_| NONCE.end - 1, 0x80 => OpenError::Authentication,
    flip_ciphertext_first: |_| BODY_START, 0x01 => OpenError::Authentication,
    flip_ciphertext_middle: |n: usize| (BODY_START + n - TAG_LEN) / 2, 0x10 => OpenError::Authentication,
    flip_ciphertext_last: |n: usize| n - TAG_LEN - 1, 0x80 => OpenError::Authentication,
    flip_tag_first: |n: usize| n - TAG_LEN, 0x01 => OpenError::Authentication,
    flip_tag_last: |n: usize| n - 1, 0x80 => OpenError::Authentication,
}

#[test]
fn every_single_bit_flip_fails() {
    let (ring, value) = fixture();
    let bytes = decode(&value);
    for pos in 0..bytes.len() {
        for bit in 0..8 {
            let mut b = bytes.clone();
            b[pos] ^= 1 << bit;
            assert!(
                ring.open(&encode(&b), binding(), NOW).is_err(),
                "byte {pos} bit {bit}"
            );
        }
    }
}

// --- Negative tests: each field of the associated data -------------------

fn flip_byte(s: &str, pos: usize) -> String {
    let mut b = s.as_bytes().to_vec();
    b[pos] ^= 0x01; // ASCII stays ASCII
    String::from_utf8(b).unwrap()
}

/// Generates a test that opens the fixture under another binding and
/// expects the one opaque authentication error.
macro_rules! binding_fails {
    ($($name:ident: ($thread:expr, $message:expr);)*) => {$(
        #[test]
        fn $name() {
            let (ring, value) = fixture();
            let thread: String = $thread;
            let message: String = $message;
            assert_ne!((thread.as_str(), message.as_str()), (THREAD, MESSAGE));
            assert_eq!(
                ring.open(&value, Binding::new(&thread, &message), NOW),
                Err(OpenError::Authentication)
            );
        }
    )*};
}

binding_fails! {
    thread_first_byte: (flip_byte(THREAD, 0), MESSAGE.into());
    thread_last_byte: (flip_byte(THREAD, THREAD.len() - 1), MESSAGE.into());
    thread_empty: (String::new(), MESSAGE.into());
    thread_extended: (format!("{THREAD}\0"), MESSAGE.into());
    thread_truncated: (THREAD[..THREAD.len() - 1].into(), MESSAGE.into());
    message_first_byte: (THREAD.into(), flip_byte(MESSAGE, 0));
    message_last_byte: (THREAD.into(), flip_byte(MESSAGE, MESSAGE.len() - 1));
    message_empty: (THREAD.into(), String::new());
    message_extended: (THREAD.into(), format!("{MESSAGE}x"));
    fields_swapped: (MESSAGE.into(), THREAD.into());
    boundary_moved_right: (format!("{THREAD}r"), MESSAGE[1..].into());
    boundary_moved_left: (THREAD[..THREAD.len() - 1].into(), format!("1{MESSAGE}"));
    all_in_thread: (format!("{THREAD}{MESSAGE}"), String::new());
    all_in_message: (String::new(), format!("{THREAD}{MESSAGE}"));
}

// --- Truncation and extension --------------------------------------------

#[test]
fn every_truncation_fails() {
    let (ring, value) = fixture();
    // At the text level (many are not even valid base64 lengths)...
    for n in 0..value.len() {
        assert!(ring.open(&value[..n], binding(), NOW).is_err(), "{n} chars");
    }
    // ...and at the byte level, re-encoded, so every prefix gets past base64.
    let bytes = decode(&value);
    for n in 0..bytes.len() {
        let got = ring.open(&encode(&bytes[..n]), binding(), NOW);
        let want_kind = match n {
            // Header (33) + tag (16) is the least that is not truncated.
            0..=48 => got == Err(Malformed::Truncated { len: n }.into()),
            _ => got == Err(OpenError::Authentication),
        };
        assert!(want_kind, "{n} bytes: {got:?}");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert_eq!(
        ring.open(&encode(&longer), binding(), NOW),
        Err(OpenError::Authentication)
    );
}
