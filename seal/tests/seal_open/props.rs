//! Property tests: nothing panics, nothing forged opens, any content
//! round-trips.

use proptest::prelude::*;

use super::*;

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
