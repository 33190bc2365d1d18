//! Sealing and opening through the public API: round trips, rotation,
//! foreign keys, bindings, expiry, and macro-generated negative tests.

// A test file: helpers outside `#[test]` fns may unwrap too.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use proptest::prelude::*;
use thinkwire_seal::{
    Binding, DEFAULT_MAX_ENVELOPE_LEN, Key, KeyRing, Malformed, OpenError, SealError,
    SealedReasoning, inspect,
};

const THREAD: &str = "thread-1";
const MESSAGE: &str = "reasoning-1";
const CREATED: u64 = 1_750_000_000_000;
const NOW: u64 = CREATED + 1_000;
const KEY_A: [u8; 32] = [0x11; 32];
const KEY_B: [u8; 32] = [0x22; 32];

/// Envelope regions (see `envelope.rs`): version 0, key id 1..9, nonce
/// 9..33, ciphertext 33..len-16, tag len-16..len.
const KEY_ID: std::ops::Range<usize> = 1..9;
const NONCE: std::ops::Range<usize> = 9..33;
const BODY_START: usize = 33;
const TAG_LEN: usize = 16;

fn binding() -> Binding<'static> {
    Binding::new(THREAD, MESSAGE)
}

fn reasoning() -> SealedReasoning {
    SealedReasoning::new(
        "First, 2+2. Then — check units. ✓",
        "qwen3-0.6b",
        "think-tags",
        CREATED,
    )
}

fn ring_a() -> KeyRing {
    KeyRing::new(Key::from_bytes(&KEY_A))
}

fn decode(value: &str) -> Vec<u8> {
    URL_SAFE_NO_PAD.decode(value).unwrap()
}

fn encode(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// One sealed value and the ring that made it.
fn fixture() -> (KeyRing, String) {
    let ring = ring_a();
    let value = ring.seal(&reasoning(), binding()).unwrap();
    (ring, value)
}

#[test]
fn round_trip() {
    let (ring, value) = fixture();
    assert!(
        value
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    );
    let opened = ring.open(&value, binding(), NOW).unwrap();
    assert_eq!(opened, reasoning());
    assert_eq!(opened.text, "First, 2+2. Then — check units. ✓");

    let empty = SealedReasoning::new("", "", "", 0);
    let v = ring.seal(&empty, Binding::new("", "")).unwrap();
    assert_eq!(ring.open(&v, Binding::new("", ""), 0).unwrap(), empty);
}

#[test]
fn envelope_header_is_as_documented() {
    let (ring, value) = fixture();
    let bytes = decode(&value);
    assert_eq!(bytes[0], thinkwire_seal::ENVELOPE_VERSION);
    assert_eq!(&bytes[KEY_ID], ring.active_key_id().as_bytes());
    let info = inspect(&value).unwrap();
    assert_eq!(info.version, 1);
    assert_eq!(info.key_id, ring.active_key_id());
    assert_eq!(info.ciphertext_len, bytes.len() - BODY_START - TAG_LEN);
    // Ciphertext is the inner payload's length: nothing is padded or
    // compressed (2 + 8 + 3*4 + lengths of model, format and text).
    let r = reasoning();
    assert_eq!(
        info.ciphertext_len,
        22 + r.model_id.len() + r.format_id.len() + r.text.len()
    );
}

#[test]
fn fresh_nonce_every_time() {
    let ring = ring_a();
    let values: Vec<String> = (0..50)
        .map(|_| ring.seal(&reasoning(), binding()).unwrap())
        .collect();
    let mut nonces: Vec<Vec<u8>> = values.iter().map(|v| decode(v)[NONCE].to_vec()).collect();
    nonces.sort();
    nonces.dedup();
    assert_eq!(nonces.len(), values.len());
    for v in &values {
        assert_eq!(ring.open(v, binding(), NOW).unwrap(), reasoning());
    }
}

#[test]
fn rotation_keeps_old_values_open() {
    let mut ring = ring_a();
    let old_id = ring.active_key_id();
    let old_value = ring.seal(&reasoning(), binding()).unwrap();

    ring.add_active(Key::from_bytes(&KEY_B)).unwrap();
    let new_id = ring.active_key_id();
    assert_ne!(new_id, old_id);
    assert_eq!(new_id, Key::from_bytes(&KEY_B).id());
    assert_eq!(ring.key_ids().collect::<Vec<_>>(), [new_id, old_id]);

    let new_value = ring.seal(&reasoning(), binding()).unwrap();
    assert_eq!(inspect(&new_value).unwrap().key_id, new_id);
    assert_eq!(inspect(&old_value).unwrap().key_id, old_id);
    assert_eq!(ring.open(&old_value, binding(), NOW).unwrap(), reasoning());
    assert_eq!(ring.open(&new_value, binding(), NOW).unwrap(), reasoning());

    // Adding a key already held is refused and changes nothing.
    assert_eq!(ring.add_active(Key::from_bytes(&KEY_A)), Err(old_id));
    assert_eq!(ring.add_previous(Key::from_bytes(&KEY_B)), Err(new_id));
    assert_eq!(ring.active_key_id(), new_id);

    // The active key cannot be retired; the old one can, and then its
    // values are foreign.
    assert!(!ring.retire(new_id));
    assert!(ring.retire(old_id));
    assert!(!ring.retire(old_id));
    assert_eq!(
        ring.open(&old_value, binding(), NOW),
        Err(OpenError::UnknownKey(old_id))
    );
    assert_eq!(ring.open(&new_value, binding(), NOW).unwrap(), reasoning());
}

#[test]
fn ring_from_keys_and_key_list_agree() {
    let ring = KeyRing::from_keys([Key::from_bytes(&KEY_B), Key::from_bytes(&KEY_A)]).unwrap();
    let list = format!(
        "{}\n{}\n",
        Key::from_bytes(&KEY_B).to_text().as_str(),
        Key::from_bytes(&KEY_A).to_text().as_str()
    );
    let parsed = KeyRing::from_key_list(&list).unwrap();
    assert_eq!(
        ring.key_ids().collect::<Vec<_>>(),
        parsed.key_ids().collect::<Vec<_>>()
    );
    // Sealed by one, opened by the other: same keys, same ids.
    let v = ring.seal(&reasoning(), binding()).unwrap();
    assert_eq!(parsed.open(&v, binding(), NOW).unwrap(), reasoning());
    assert!(KeyRing::from_keys([]).is_err());
    assert!(KeyRing::from_keys([Key::from_bytes(&KEY_A), Key::from_bytes(&KEY_A)]).is_err());
}

#[test]
fn foreign_key_is_unknown() {
    let (ring, value) = fixture();
    let other = KeyRing::new(Key::from_bytes(&KEY_B));
    assert_eq!(
        other.open(&value, binding(), NOW),
        Err(OpenError::UnknownKey(ring.active_key_id()))
    );
    // A value whose key id is rewritten to one the ring holds still fails:
    // the key does not match and the id is bound in the associated data.
    let mut bytes = decode(&value);
    bytes[KEY_ID].copy_from_slice(other.active_key_id().as_bytes());
    assert_eq!(
        other.open(&encode(&bytes), binding(), NOW),
        Err(OpenError::Authentication)
    );
}

#[test]
fn key_id_rewritten_within_one_ring_fails() {
    let ring = KeyRing::from_keys([Key::from_bytes(&KEY_A), Key::from_bytes(&KEY_B)]).unwrap();
    let value = ring.seal(&reasoning(), binding()).unwrap();
    let ids: Vec<_> = ring.key_ids().collect();
    let mut bytes = decode(&value);
    bytes[KEY_ID].copy_from_slice(ids[1].as_bytes());
    assert_eq!(
        ring.open(&encode(&bytes), binding(), NOW),
        Err(OpenError::Authentication)
    );
}

#[test]
fn expiry_is_checked_after_authentication() {
    let ring = ring_a();
    let r = reasoning().with_ttl(Duration::from_secs(60));
    let expires = CREATED + 60_000;
    let value = ring.seal(&r, binding()).unwrap();
    assert_eq!(ring.open(&value, binding(), CREATED).unwrap(), r);
    assert_eq!(ring.open(&value, binding(), expires - 1).unwrap(), r);
    assert_eq!(
        ring.open(&value, binding(), expires),
        Err(OpenError::Expired {
            expired_at_ms: expires
        })
    );
    assert_eq!(
        ring.open(&value, binding(), u64::MAX),
        Err(OpenError::Expired {
            expired_at_ms: expires
        })
    );
    // Expired and replayed elsewhere: the binding failure wins, so an
    // attacker learns nothing about the expiry of a value not theirs.
    assert_eq!(
        ring.open(&value, Binding::new("thread-2", MESSAGE), u64::MAX),
        Err(OpenError::Authentication)
    );
    // Expired and tampered: same.
    let mut bytes = decode(&value);
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    assert_eq!(
        ring.open(&encode(&bytes), binding(), u64::MAX),
        Err(OpenError::Authentication)
    );
    // Without an expiry, any time is fine.
    let (ring, value) = fixture();
    assert!(ring.open(&value, binding(), u64::MAX).is_ok());
}

#[test]
fn size_cap() {
    let ring = ring_a().with_max_envelope_len(200);
    assert_eq!(ring.max_envelope_len(), 200);
    let big = SealedReasoning::new("x".repeat(500), "m", "f", 0);
    assert!(matches!(
        ring.seal(&big, binding()),
        Err(SealError::TooLarge { max: 200, .. })
    ));
    // The largest text that fits seals to at most 200 characters and opens.
    let mut fitting = None;
    for n in (0..200).rev() {
        let r = SealedReasoning::new("y".repeat(n), "m", "f", 0);
        if let Ok(v) = ring.seal(&r, binding()) {
            fitting = Some((r, v));
            break;
        }
    }
    let (r, v) = fitting.unwrap();
    assert!(v.len() <= 200 && v.len() > 196, "{}", v.len());
    assert_eq!(ring.open(&v, binding(), 0).unwrap(), r);

    // Opening refuses over-long input before decoding it.
    let huge = "A".repeat(DEFAULT_MAX_ENVELOPE_LEN + 1);
    assert_eq!(
        ring_a().open(&huge, binding(), 0),
        Err(OpenError::Malformed(Malformed::TooLarge {
            len: DEFAULT_MAX_ENVELOPE_LEN + 1,
            max: DEFAULT_MAX_ENVELOPE_LEN
        }))
    );
    let (ring, value) = fixture();
    let ring = ring.with_max_envelope_len(value.len() - 1);
    assert!(matches!(
        ring.open(&value, binding(), NOW),
        Err(OpenError::Malformed(Malformed::TooLarge { .. }))
    ));
}

#[test]
fn malformed_inputs() {
    let ring = ring_a();
    let cases: &[(&str, OpenError)] = &[
        ("", Malformed::Truncated { len: 0 }.into()),
        ("not base64!", Malformed::Base64.into()),
        ("AQ==", Malformed::Base64.into()),
        ("AQ", Malformed::Truncated { len: 1 }.into()),
        ("Ag", Malformed::UnknownVersion(2).into()),
        ("AA", Malformed::UnknownVersion(0).into()),
        (" AQ", Malformed::Base64.into()),
    ];
    for (value, want) in cases {
        assert_eq!(
            ring.open(value, binding(), NOW).as_ref(),
            Err(want),
            "{value:?}"
        );
    }
    // Standard-alphabet base64 (`+`, `/`) and padding are not accepted.
    let (ring, value) = fixture();
    let std = base64::engine::general_purpose::STANDARD.encode(decode(&value));
    if std != value {
        assert_eq!(
            ring.open(&std, binding(), NOW),
            Err(Malformed::Base64.into())
        );
    }
}

#[test]
fn errors_never_contain_plaintext_or_key() {
    let (ring, value) = fixture();
    let key_text = Key::from_bytes(&KEY_A).to_text();
    let mut errors = vec![
        ring.open(&value, Binding::new("x", MESSAGE), NOW)
            .unwrap_err(),
        KeyRing::new(Key::from_bytes(&KEY_B))
            .open(&value, binding(), NOW)
            .unwrap_err(),
        ring.open("AA", binding(), NOW).unwrap_err(),
    ];
    let r = reasoning().with_expires_at_ms(1);
    errors.push(
        ring.open(&ring.seal(&r, binding()).unwrap(), binding(), NOW)
            .unwrap_err(),
    );
    for e in errors {
        for shown in [e.to_string(), format!("{e:?}")] {
            assert!(!shown.contains("2+2"), "{shown}");
            assert!(!shown.contains(&key_text[10..20]), "{shown}");
        }
    }
    let ring_debug = format!("{ring:?}");
    assert!(ring_debug.contains(&ring.active_key_id().to_string()));
    assert!(!ring_debug.contains(&key_text[10..20]));
    assert!(!ring_debug.contains("17, 17"), "{ring_debug}");
}

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

// --- Property tests: nothing panics, nothing forged opens -----------------

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn random_strings_never_open(s in "\\PC{0,300}") {
        prop_assert!(ring_a().open(&s, binding(), NOW).is_err());
    }

    #[test]
    fn random_base64url_never_opens(s in "[A-Za-z0-9_-]{0,300}") {
        prop_assert!(ring_a().open(&s, binding(), NOW).is_err());
    }

    #[test]
    fn random_bytes_with_valid_header_fail_authentication(
        nonce in proptest::collection::vec(any::<u8>(), 24),
        body in proptest::collection::vec(any::<u8>(), 16..400),
    ) {
        let ring = ring_a();
        let mut bytes = vec![1u8];
        bytes.extend_from_slice(ring.active_key_id().as_bytes());
        bytes.extend_from_slice(&nonce);
        bytes.extend_from_slice(&body);
        prop_assert_eq!(ring.open(&encode(&bytes), binding(), NOW), Err(OpenError::Authentication));
    }

    #[test]
    fn random_edits_never_open(pos in any::<prop::sample::Index>(), byte in any::<u8>(),
                               cut in any::<prop::sample::Index>()) {
        let (ring, value) = fixture();
        let mut bytes = decode(&value);
        let i = pos.index(bytes.len());
        prop_assume!(bytes[i] != byte);
        bytes[i] = byte;
        prop_assert!(ring.open(&encode(&bytes), binding(), NOW).is_err());
        let n = cut.index(bytes.len());
        prop_assert!(ring.open(&encode(&bytes[..n]), binding(), NOW).is_err());
    }

    #[test]
    fn round_trips_any_content(text in "\\PC{0,400}", model in "\\PC{0,30}", format in "\\PC{0,30}",
                               thread in "\\PC{0,40}", message in "\\PC{0,40}",
                               created in any::<u64>(), ttl in proptest::option::of(any::<u64>())) {
        let ring = ring_a();
        let mut r = SealedReasoning::new(text, model, format, created);
        if let Some(ttl) = ttl {
            r = r.with_ttl(Duration::from_millis(ttl));
        }
        let b = Binding::new(&thread, &message);
        let v = ring.seal(&r, b).unwrap();
        let now = created;
        match ring.open(&v, b, now) {
            Ok(opened) => prop_assert_eq!(opened, r),
            Err(e) => {
                // Only a zero TTL (or saturation at u64::MAX) is already expired.
                prop_assert!(r.is_expired_at(now));
                prop_assert_eq!(e, OpenError::Expired { expired_at_ms: r.expires_at_ms.unwrap() });
            }
        }
    }
}

/// Rough timings; run with
/// `cargo test -p thinkwire-seal --release --test seal_open -- --ignored --nocapture timing`.
#[test]
#[ignore = "timing, not a correctness check"]
fn timing() {
    let ring = ring_a();
    for size in [1_000usize, 10_000, 100_000] {
        let r = SealedReasoning::new("z".repeat(size), "m", "f", 0);
        let iters = 2_000_000 / size.max(1) + 10;
        let t = std::time::Instant::now();
        let mut v = String::new();
        for _ in 0..iters {
            v = ring.seal(&r, binding()).unwrap();
        }
        let seal = t.elapsed() / u32::try_from(iters).unwrap();
        let t = std::time::Instant::now();
        for _ in 0..iters {
            assert_eq!(ring.open(&v, binding(), 0).unwrap().text.len(), size);
        }
        let open = t.elapsed() / u32::try_from(iters).unwrap();
        println!(
            "{size:>7} B text: {} chars sealed, seal {seal:?}, open {open:?}",
            v.len()
        );
    }
}
