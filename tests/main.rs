//! thinkwire's integration tests, one binary for all of them.
//!
//! Each folder or file beside this one is a suite (the server over real
//! sockets, the parity suites against mlx-lm, the upstream backends, the
//! binary's commands); `support/` is what they share. They are modules of
//! one test crate rather than a binary each: every binary linked the whole
//! server, MLX's bindings and the tokenizers again and compiled `support/`
//! once more, a large share of the test build on two cores. cargo-nextest
//! still runs each test in a process of its own, so no test sees another's
//! state; run one suite with `cargo nextest run -E 'test(/^server::/)'` or
//! `cargo test --test integration server::`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod agent_parity;
mod batch_parity;
mod concurrent_runs;
mod constrained_output;
mod default_model;
mod gpt_oss_harmony;
mod inspect_families;
mod loadtest;
mod loadtest_open;
mod privacy;
mod qwen3_mlx;
mod reasoning_controls;
mod restart;
mod sealed_reasoning;
mod serve_flags;
mod server;
mod shutdown;
mod tool_calls;
mod upstream;
mod upstream_anthropic;
mod upstream_mlx_lm;
mod upstream_responses;
mod upstream_responses_fixtures;
mod upstream_tiny_qwen3;
mod v1_api;
