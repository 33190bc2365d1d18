//! The web demo resumes a run by itself after a network blip (issue #34,
//! item 3): Chromium loads the demo through a TCP proxy that cuts the
//! page's first WebSocket mid-reasoning (no close frame, as a failing
//! network); `web-demo/tests/resume.mjs` checks the page resumed, that its
//! reasoning panel holds the whole reasoning once and that the sealed value
//! arrived.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use thinkwire::server::ServerConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::resume_client::resumable_server;
use crate::support::*;

/// Bytes from the server after which the first WebSocket is cut: past the
/// upgrade and `RUN_STARTED`, a dozen reasoning deltas in.
const CUT_AFTER_BYTES: usize = 2_500;

/// A proxy to `target` that cuts the first `/agent/ws` connection once it
/// has carried `CUT_AFTER_BYTES` towards the client.
async fn cutting_proxy(target: SocketAddr) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let cut_done = Arc::new(AtomicBool::new(false));
    tokio::spawn(async move {
        loop {
            let Ok((client, _)) = listener.accept().await else {
                return;
            };
            let Ok(server) = TcpStream::connect(target).await else {
                continue;
            };
            tokio::spawn(pipe(client, server, Arc::clone(&cut_done)));
        }
    });
    addr
}

async fn pipe(client: TcpStream, server: TcpStream, cut_done: Arc<AtomicBool>) {
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let is_socket = Arc::new(AtomicBool::new(false));
    let up = {
        let is_socket = Arc::clone(&is_socket);
        async move {
            let mut buf = vec![0u8; 16 * 1024];
            let mut first = true;
            loop {
                let n = client_read.read(&mut buf).await.unwrap_or(0);
                if n == 0 {
                    return;
                }
                if first && buf[..n].starts_with(b"GET /agent/ws") {
                    is_socket.store(true, Ordering::SeqCst);
                }
                first = false;
                if server_write.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    };
    let down = async move {
        let mut buf = vec![0u8; 16 * 1024];
        let mut carried = 0;
        loop {
            let n = server_read.read(&mut buf).await.unwrap_or(0);
            if n == 0 || client_write.write_all(&buf[..n]).await.is_err() {
                return;
            }
            carried += n;
            if is_socket.load(Ordering::SeqCst)
                && carried >= CUT_AFTER_BYTES
                && !cut_done.swap(true, Ordering::SeqCst)
            {
                // Dropping every half closes both connections mid-stream.
                return;
            }
        }
    };
    tokio::select! {
        () = up => {}
        () = down => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_demo_resumes_a_run_cut_mid_reasoning() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert!(
        root.join("web-demo/dist/index.html").is_file(),
        "the web demo is not built — run scripts/setup (or npm run build in web-demo)"
    );
    let reasoning = "The user wants an answer after some thought. ".repeat(5);
    let reasoning = reasoning.trim_end().to_owned();
    let (server, _) = resumable_server(
        qwen3_turn(&reasoning, "Here is the answer."),
        Duration::from_millis(40),
        Duration::from_secs(30),
        ServerConfig {
            web_dir: Some(root.join("web-demo/dist")),
            ..ServerConfig::default()
        },
    )
    .await;
    let proxy = cutting_proxy(server.addr).await;
    let shots = root.join("target/web-demo-screenshots/resume");
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new("node")
            .arg(root.join("web-demo/tests/resume.mjs"))
            .arg(format!("http://{proxy}/"))
            .arg(shots)
            .args(["--reasoning", &reasoning])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("{stdout}");
    assert!(
        output.status.success(),
        "web demo resume test failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    server.shutdown().await;
}
