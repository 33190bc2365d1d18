//! Integration tests of the server over real sockets: SSE and WebSocket
//! transports, input validation, cancellation, the official AG-UI client,
//! sealed reasoning across turns, and what the server retains.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod access;
mod admission;
mod agui_client;
mod capabilities;
mod limits;
mod proto;
mod resume;
mod resume_budget;
/// The resumable-run client, also what `privacy` cuts runs with.
pub(crate) mod resume_client;
mod resume_refusals;
mod shutdown;
mod sse;
mod web_demo_resume;
mod ws;
