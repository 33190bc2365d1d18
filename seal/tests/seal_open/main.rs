//! Sealing and opening through the public API: round trips, rotation,
//! foreign keys, bindings, expiry, and macro-generated negative tests.
//!
//! Here: the fixture every test opens and the envelope's regions, and the
//! ignored timing run; `sealing` (round trips, nonces, rotation, rings),
//! `refusals` (foreign keys, expiry, size, malformed input, what errors
//! say), `tampering` (the macro-generated flips, bindings and truncations)
//! and `props` (property tests) hold the tests.

// A test file: helpers outside `#[test]` fns may unwrap too.
#![allow(clippy::unwrap_used)]

mod props;
mod refusals;
mod sealing;
mod tampering;

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
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
