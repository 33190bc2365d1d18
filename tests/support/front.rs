//! A thinkwire in front of an upstream server: the upstream backend, a
//! fresh sealing key, and the server on `127.0.0.1:0`.

use std::time::Duration;

use thinkwire::agent::{Agent, AgentConfig, Backend, UpstreamBackend};
use thinkwire::server::ServerConfig;
use thinkwire::upstream::{Upstream, UpstreamConfig, UpstreamKind};
use thinkwire_reasoning::Registry;
use thinkwire_seal::{Key, KeyRing};

use super::TestServer;

/// The upstream at `url` speaking `kind`, asked for `model`: no key, short
/// timeouts, no retries, Qwen3's reasoning format.
pub fn upstream_config(kind: UpstreamKind, url: String, model: &str) -> UpstreamConfig {
    UpstreamConfig {
        kind,
        url,
        model: model.into(),
        key: None,
        connect_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_secs(5),
        output_timeout: None,
        retries: 0,
        format: Registry::builtin()
            .family("qwen3")
            .expect("the built-in qwen3 format")
            .clone(),
    }
}

/// A thinkwire whose backend is the upstream `config` names, sealing with
/// a key of its own.
pub async fn front(config: UpstreamConfig) -> TestServer {
    front_serving(
        config,
        KeyRing::new(Key::generate().expect("a key")),
        ServerConfig::default(),
    )
    .await
}

/// The same, sealing with `keys` (replicas share a key ring) and serving
/// under `server`.
pub async fn front_serving(
    config: UpstreamConfig,
    keys: KeyRing,
    server: ServerConfig,
) -> TestServer {
    let upstream =
        Upstream::new(config, tokio::runtime::Handle::current()).expect("an upstream client");
    let backend = Backend::Upstream(Box::new(UpstreamBackend::new(
        upstream,
        &Registry::builtin(),
    )));
    TestServer::start(
        Agent::with_backend(backend, keys, AgentConfig::default()),
        server,
    )
    .await
}
