//! Opening sealed reasoning with a valid key ring: a value that is not one
//! this ring sealed for this binding never opens, nothing panics, and what
//! the ring seals always opens to itself. The seed corpus holds values
//! sealed with the ring's keys, so mutations reach authentication.
//!
//! Input: `thread \n message \n value`; when the first byte is `#` the rest
//! is sealed first and opened back (the round trip).
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use thinkwire_fuzz::key_ring;
use thinkwire_seal::{Binding, KeyRing, SealedReasoning, inspect};

fn ring() -> &'static KeyRing {
    static RING: OnceLock<KeyRing> = OnceLock::new();
    RING.get_or_init(key_ring)
}

/// The clock the seeds were sealed at, plus an hour.
const NOW_MS: u64 = 1_700_000_000_000 + 3_600_000;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.splitn(3, '\n');
    let (Some(thread), Some(message), Some(value)) = (parts.next(), parts.next(), parts.next())
    else {
        return;
    };
    let binding = Binding::new(thread, message);
    if let Some(reasoning) = thread.strip_prefix('#') {
        let sealed = SealedReasoning::new(reasoning, message, value, NOW_MS);
        let Ok(value) = ring().seal(&sealed, binding) else {
            return;
        };
        let opened = ring()
            .open(&value, binding, NOW_MS)
            .expect("a fresh value opens");
        assert_eq!(opened, sealed);
        assert!(inspect(&value).is_ok());
        return;
    }
    if let Ok(opened) = ring().open(value, binding, NOW_MS) {
        // Only a value this ring sealed authenticates: its clear header
        // names one of the ring's keys, and sealing what it holds again
        // (fresh nonce) opens to the same reasoning.
        let info = inspect(value).expect("an opened value inspects");
        assert!(ring().key_ids().any(|id| id == info.key_id));
        let again = ring().seal(&opened, binding).expect("it seals again");
        assert_eq!(ring().open(&again, binding, NOW_MS).ok(), Some(opened));
    }
    let _ = inspect(value);
});
