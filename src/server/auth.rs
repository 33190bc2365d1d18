//! Bearer-token access control (`serve --auth-tokens-file`, issue #13).
//!
//! The tokens file holds one token per line (blank lines and `#` comments
//! are skipped). Only SHA-256 digests of the tokens are kept in memory, and
//! a presented credential is hashed and compared with every digest in
//! constant time (`subtle`), so neither a token's content nor its length
//! leaks through timing. Tokens never appear in logs or errors: a bad line
//! is named by its number.
//!
//! Where a client may put its token:
//! - `Authorization: Bearer <token>` on every protected endpoint;
//! - `x-api-key: <token>` on `/v1/*` (what the Anthropic SDKs send);
//! - on `GET /agent/ws` also as a WebSocket subprotocol
//!   `thinkwire.bearer.<token>`, because a browser's `WebSocket` cannot set
//!   headers; the server then selects the subprotocol `thinkwire`, never
//!   the one holding the token. A query parameter is not accepted: URLs end
//!   up in proxy logs and browser history.
//!
//! ```
//! use thinkwire::server::AuthTokens;
//! let tokens = AuthTokens::parse("# ops\n0123456789abcdef0123\n").unwrap();
//! assert!(tokens.verify("0123456789abcdef0123"));
//! assert!(!tokens.verify("0123456789abcdef0124"));
//! ```

use std::path::{Path, PathBuf};

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::AppState;
use super::rejection::Rejection;
use super::resume::SecretDigest;
use super::v1::{ApiError, Dialect};

/// Shortest token accepted: shorter ones are guessable.
pub const MIN_TOKEN_LEN: usize = 16;

/// The subprotocol prefix that carries a token on a WebSocket upgrade.
pub const WS_TOKEN_PROTOCOL_PREFIX: &str = "thinkwire.bearer.";

/// The subprotocol the server selects when a client offers one.
pub const WS_PROTOCOL: &str = "thinkwire";

/// Why a tokens file was refused. Never holds a token.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The file could not be read.
    #[error("cannot read the tokens file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Group or others may read the file.
    #[error(
        "tokens file {path} is accessible by group or others (mode {mode:04o}); restrict it with `chmod 600 {path}`"
    )]
    Permissions {
        /// The file.
        path: String,
        /// Its permission bits.
        mode: u32,
    },
    /// A line is not a usable token.
    #[error("tokens file line {line}: {reason}")]
    BadLine {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The file holds no token.
    #[error("the tokens file holds no token")]
    Empty,
}

/// Who presented a valid token: its digest, which a resumable run
/// remembers so only the same bearer may resume it (`resume/`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Identity(pub(crate) SecretDigest);

/// The accepted tokens, as digests.
#[derive(Clone)]
pub struct AuthTokens {
    digests: Vec<[u8; 32]>,
}

impl std::fmt::Debug for AuthTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AuthTokens({} tokens)", self.digests.len())
    }
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// RFC 9110 `tchar`: a token must be usable inside a WebSocket subprotocol
/// name, and hex or base64url tokens are.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

impl AuthTokens {
    /// Reads `path` (which must not be readable by group or others).
    pub fn from_file(path: &Path) -> Result<Self, AuthError> {
        let io = |source| AuthError::Io {
            path: path.to_owned(),
            source,
        };
        let meta = std::fs::metadata(path).map_err(io)?;
        check_permissions(path, &meta)?;
        let text = std::fs::read_to_string(path).map_err(io)?;
        Self::parse(&text)
    }

    /// Parses the file's text: one token per line.
    pub fn parse(text: &str) -> Result<Self, AuthError> {
        let mut digests = Vec::new();
        for (index, line) in text.lines().enumerate() {
            let token = line.trim();
            if token.is_empty() || token.starts_with('#') {
                continue;
            }
            let bad = |reason| AuthError::BadLine {
                line: index + 1,
                reason,
            };
            if token.len() < MIN_TOKEN_LEN {
                return Err(bad("shorter than 16 characters"));
            }
            if !token.bytes().all(is_tchar) {
                return Err(bad(
                    "holds characters other than letters, digits and !#$%&'*+-.^_`|~ (use hex or base64url)",
                ));
            }
            digests.push(digest(token));
        }
        if digests.is_empty() {
            return Err(AuthError::Empty);
        }
        Ok(Self { digests })
    }

    /// Whether `presented` is one of the tokens. Every digest is compared,
    /// in constant time, whatever matches.
    pub fn verify(&self, presented: &str) -> bool {
        let presented = digest(presented);
        let mut found = subtle::Choice::from(0);
        for d in &self.digests {
            found |= d.ct_eq(&presented);
        }
        found.into()
    }
}

#[cfg(unix)]
fn check_permissions(path: &Path, meta: &std::fs::Metadata) -> Result<(), AuthError> {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(AuthError::Permissions {
            path: path.display().to_string(),
            mode,
        });
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_permissions(_path: &Path, _meta: &std::fs::Metadata) -> Result<(), AuthError> {
    Ok(())
}

/// The credential a request presents, if any.
fn presented<'h>(headers: &'h HeaderMap, path: &str) -> Option<&'h str> {
    if let Some(value) = headers.get(header::AUTHORIZATION)
        && let Ok(value) = value.to_str()
        && let Some((scheme, token)) = value.split_once(' ')
        && scheme.eq_ignore_ascii_case("bearer")
    {
        return Some(token.trim());
    }
    if path.starts_with("/v1")
        && let Some(value) = headers.get("x-api-key")
    {
        return value.to_str().ok().map(str::trim);
    }
    if path == "/agent/ws" {
        return headers
            .get_all(header::SEC_WEBSOCKET_PROTOCOL)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .find_map(|p| p.trim().strip_prefix(WS_TOKEN_PROTOCOL_PREFIX));
    }
    None
}

/// Refuses a request to a protected route that lacks a valid token (a
/// `route_layer`, so unknown paths still reach the web demo's 404).
pub(super) async fn require_token(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(tokens) = &state.config.auth else {
        return next.run(request).await;
    };
    let path = request.uri().path();
    let (code, message, challenge) = match presented(request.headers(), path) {
        Some(token) if tokens.verify(token) => {
            let identity = Identity(SecretDigest::of(token));
            request.extensions_mut().insert(identity);
            return next.run(request).await;
        }
        Some(_) => (
            "INVALID_TOKEN",
            "the token presented is not valid",
            r#"Bearer realm="thinkwire", error="invalid_token""#,
        ),
        None => (
            "AUTH_REQUIRED",
            "this endpoint requires a token: send Authorization: Bearer <token>",
            r#"Bearer realm="thinkwire""#,
        ),
    };
    // The surface and the code only: never the credential, nor a path the
    // client chose.
    let surface = if path.starts_with("/v1") {
        "v1"
    } else {
        "ag-ui"
    };
    tracing::info!(surface, code, "request refused: not authenticated");
    state.agent.metrics().request_refused(code);
    let mut response = if path.starts_with("/v1") {
        let dialect = if path.starts_with("/v1/messages") {
            Dialect::Anthropic
        } else {
            Dialect::OpenAi
        };
        ApiError {
            status: StatusCode::UNAUTHORIZED,
            code: code.to_owned(),
            message: message.to_owned(),
            param: None,
            retry_after_secs: 1,
        }
        .response(dialect)
    } else {
        Rejection::new(StatusCode::UNAUTHORIZED, code, message).into_response()
    };
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static(challenge),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOKEN: &str = "tok_0123456789abcdef";

    #[test]
    fn verifies_each_token_and_nothing_else() {
        let tokens = AuthTokens::parse(&format!("# comment\n\n {TOKEN} \nabcdefabcdefabcdef\n"))
            .expect("valid file");
        assert!(tokens.verify(TOKEN));
        assert!(tokens.verify("abcdefabcdefabcdef"));
        assert!(!tokens.verify(""));
        assert!(!tokens.verify(&TOKEN[..TOKEN.len() - 1]));
        assert!(!tokens.verify(&format!("{TOKEN}x")));
    }

    #[test]
    fn bad_lines_are_named_by_number_without_the_token() {
        let err = AuthTokens::parse("# c\nshort\n").unwrap_err();
        assert!(matches!(err, AuthError::BadLine { line: 2, .. }), "{err}");
        assert!(!err.to_string().contains("short\n"));
        let err = AuthTokens::parse("abc/def+ghi=jklmnop\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 1") && !err.contains("abc/def"), "{err}");
        assert!(matches!(
            AuthTokens::parse("# none\n"),
            Err(AuthError::Empty)
        ));
    }

    #[test]
    fn debug_never_prints_digests() {
        let tokens = AuthTokens::parse(TOKEN).unwrap();
        assert_eq!(format!("{tokens:?}"), "AuthTokens(1 tokens)");
    }

    #[test]
    fn credentials_by_place() {
        let mut h = HeaderMap::new();
        h.insert("x-api-key", HeaderValue::from_static(TOKEN));
        assert_eq!(presented(&h, "/v1/messages"), Some(TOKEN));
        assert_eq!(presented(&h, "/agent"), None, "x-api-key is for /v1 only");
        h.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static("thinkwire, thinkwire.bearer.tok_0123456789abcdef"),
        );
        assert_eq!(presented(&h, "/agent/ws"), Some(TOKEN));
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("bearer other-token-xxxxxxxx"),
        );
        assert_eq!(presented(&h, "/agent"), Some("other-token-xxxxxxxx"));
    }

    #[test]
    fn permissions_are_checked() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = std::env::temp_dir().join(format!("tw-auth-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tokens");
        std::fs::write(&path, TOKEN).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(matches!(
            AuthTokens::from_file(&path),
            Err(AuthError::Permissions { .. })
        ));
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(AuthTokens::from_file(&path).unwrap().verify(TOKEN));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
