//! Fixtures shared by the integration tests: every event type with its
//! optional fields both absent and present, messages of every role, a full
//! run input, and the schema validator.
//!
//! `schema` loads the AG-UI schema and checks values against it;
//! `payloads` builds what events carry (messages, content parts, a run
//! input, usage, patches); `events` lists every event type in its minimal
//! forms and `full_events` in its full ones.

// Each test binary uses some of these: the rest is dead code there, and its
// re-exports unused.
#![allow(dead_code, unused_imports)]

mod events;
mod full_events;
mod payloads;
mod schema;

pub use events::{all_events, with_common};
pub use payloads::{full_input, messages, parts, usage};
pub use schema::{assert_no_null, assert_valid, schema, validator};
