//! What opening refuses: a foreign key, a key id rewritten within one ring,
//! an expired value (after authentication), values past the size cap and
//! malformed input; no error carries the plaintext or the key.

use super::*;

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
