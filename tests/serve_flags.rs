//! `thinkwire serve`'s access-control flags, on the real binary (issue
//! #13): listening on a non-loopback address without tokens logs a
//! warning; a tokens file readable by others, or holding a short token, is
//! refused at start naming the file or the line, never the token; a bad
//! `--allowed-origins` is refused naming the value. All of it before the
//! model loads.
#![cfg(unix)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn thinkwire() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_thinkwire"));
    command
        .env("NO_COLOR", "1")
        .env("RUST_LOG", "info")
        .env_remove("THINKWIRE_AUTH_TOKENS_FILE")
        .env_remove("THINKWIRE_ALLOWED_ORIGINS");
    command
}

#[test]
fn a_public_address_without_tokens_is_warned_about() {
    let mut child = thinkwire()
        .args(["serve", "--listen", "0.0.0.0:0", "--ephemeral-key"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let started = Instant::now();
    let mut warned = false;
    for line in BufReader::new(stderr).lines().map_while(Result::ok) {
        if line.contains("WARN") && line.contains("without authentication") {
            warned = true;
            break;
        }
        if started.elapsed() > Duration::from_secs(60) {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(warned, "no warning about a public address without tokens");
}

/// Runs `serve` with `args` and returns its failure output.
fn refused(args: &[&str]) -> String {
    let output = thinkwire()
        .arg("serve")
        .args(["--listen", "127.0.0.1:0", "--ephemeral-key"])
        .args(args)
        .output()
        .unwrap();
    assert!(!output.status.success(), "serve started with {args:?}");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn bad_tokens_files_and_origins_are_refused_without_quoting_tokens() {
    let dir = std::env::temp_dir().join(format!("tw-serve-flags-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("tokens");
    let token = "secret-token-7f3a9c2e4b1d";
    std::fs::write(&path, format!("{token}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let file = path.to_str().unwrap();

    let err = refused(&["--auth-tokens-file", file]);
    assert!(err.contains("chmod 600"), "{err}");
    assert!(!err.contains(token), "the error quotes the token: {err}");

    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(&path, "short-secret\n").unwrap();
    let err = refused(&["--auth-tokens-file", file]);
    assert!(err.contains("line 1"), "{err}");
    assert!(
        !err.contains("short-secret"),
        "the error quotes the token: {err}"
    );

    let err = refused(&["--kv-cache-dtype", "int4"]);
    assert!(
        err.contains("--kv-cache-dtype: expected auto, f32 or f16, not \"int4\""),
        "{err}"
    );

    let err = refused(&["--sample-on", "gpu"]);
    assert!(
        err.contains("--sample-on: expected auto, device or host, not \"gpu\""),
        "{err}"
    );

    let err = refused(&["--overlap-steps", "yes"]);
    assert!(
        err.contains("--overlap-steps: expected auto, on or off, not \"yes\""),
        "{err}"
    );

    let err = refused(&["--max-batch", "0"]);
    assert!(err.contains("--max-batch must be at least 1"), "{err}");
    let err = refused(&["--prefill-chunk", "0"]);
    assert!(err.contains("--prefill-chunk must be at least 1"), "{err}");

    let err = refused(&["--allowed-origins", "app.example.com"]);
    assert!(
        err.contains("\"app.example.com\" is not an origin"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
