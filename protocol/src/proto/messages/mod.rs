//! The protobuf messages of `proto/ag_ui.proto`, declared by hand for
//! `prost` (field for field, same names and numbers; `tests/proto_file.rs` holds the
//! two together). `google.protobuf.Value`/`Struct`/`ListValue` are declared
//! here too, wire-compatible with `struct.proto` (`Struct`'s map as its
//! repeated entries, so a JSON object keeps its key order).
//!
//! Why by hand rather than `prost-build`: it needs `protoc` (a system
//! binary the setup would have to install), and the pure-Rust `protox` +
//! `prost-build` pair adds about twenty build dependencies to a crate that
//! is otherwise pure data, for one file that changes with the protocol's
//! version only. The messages are plain declarations; what they mean is in
//! `encode/` and `decode/`.
//!
//! `payload` (what events carry), `events` (the envelope), `content_events`
//! and `run_events` (one message per event type), `json`
//! (`google.protobuf.Value` and friends).

#![allow(missing_docs)]

mod content_events;
mod events;
mod json;
mod payload;
mod run_events;

pub(crate) use self::content_events::*;
pub(crate) use self::events::*;
pub(crate) use self::json::*;
pub(crate) use self::payload::*;
pub(crate) use self::run_events::*;
