//! The web demo at `/`: static files built by `scripts/setup` into
//! `web-demo/dist`. When they were not built, `/` says so and how to fix it
//! instead of answering a bare 404.

use std::path::PathBuf;

use axum::http::StatusCode;
use axum::response::{Html, IntoResponse};
use axum::routing::{MethodRouter, get_service};
use tower_http::services::{ServeDir, ServeFile};

/// Serves `dir` if it holds a built demo, else an explanation.
pub(super) fn service(dir: Option<PathBuf>) -> MethodRouter {
    match dir {
        Some(dir) if dir.join("index.html").is_file() => {
            let index = ServeFile::new(dir.join("index.html"));
            get_service(ServeDir::new(dir).fallback(index))
        }
        dir => {
            let hint = match dir {
                Some(dir) => format!("nothing is built in {}", dir.display()),
                None => "no web demo folder was found".to_owned(),
            };
            axum::routing::any(move || {
                let hint = hint.clone();
                async move {
                    let body = format!(
                        "<!doctype html><title>thinkwire</title><h1>The web demo is not built</h1>\
                         <p>{hint}. Run <code>scripts/setup</code> (it builds <code>web-demo/dist</code>), \
                         then restart <code>thinkwire serve</code>. The AG-UI endpoints work meanwhile: \
                         <code>POST /agent</code> (SSE) and <code>GET /agent/ws</code>.</p>"
                    );
                    (StatusCode::SERVICE_UNAVAILABLE, Html(body)).into_response()
                }
            })
        }
    }
}
