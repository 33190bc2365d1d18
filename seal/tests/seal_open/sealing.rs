//! What sealing gives: round trips, the documented envelope header, a fresh
//! nonce every time, old values open after rotation, and rings built from
//! keys or from a key list agree.

use super::*;

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
