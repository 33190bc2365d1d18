//! Which browser origins may use the server (`serve --allowed-origins`).
//!
//! Browsers enforce CORS on `fetch`, but not on WebSockets: any page a user
//! visits may open `ws://127.0.0.1:8080/agent/ws` and drive runs on their
//! machine (cross-site WebSocket hijacking). So the upgrade checks `Origin`
//! itself:
//! - no `Origin` header: allowed — it is not a browser (SDKs, curl, the
//!   Node client), and bearer tokens are how those are kept out;
//! - an origin whose host and port are the request's `Host`: allowed — the
//!   server's own pages (the web demo);
//! - an origin in the list, or any origin when the list holds `*`: allowed;
//! - anything else: 403 `ORIGIN_NOT_ALLOWED`.
//!
//! The HTTP endpoints answer CORS (tower-http's `CorsLayer`) for the listed
//! origins only; with no list, cross-origin pages cannot read responses.
//!
//! ```
//! use thinkwire::server::AllowedOrigins;
//! let origins = AllowedOrigins::parse(&["https://app.example.com".into()]).unwrap();
//! assert!(origins.allows("https://app.example.com", Some("127.0.0.1:8080")));
//! assert!(origins.allows("http://127.0.0.1:8080", Some("127.0.0.1:8080")));
//! assert!(!origins.allows("https://evil.example", Some("127.0.0.1:8080")));
//! ```

use std::time::Duration;

use axum::http::{HeaderName, HeaderValue, Method, header};
use tower_http::cors::{AllowHeaders, AllowOrigin, CorsLayer};

/// See the module docs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum AllowedOrigins {
    /// Same-host origins only (the default).
    #[default]
    SameHost,
    /// Any origin (`*`).
    Any,
    /// Same-host origins and these (`scheme://host[:port]`, lowercase).
    List(Vec<String>),
}

/// A value of `--allowed-origins` that is not an origin.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("--allowed-origins: {value:?} is not an origin (scheme://host[:port], or *)")]
pub struct BadOrigin {
    /// The value given.
    pub value: String,
}

impl AllowedOrigins {
    /// Parses the flag's values: origins, or `*`.
    pub fn parse(values: &[String]) -> Result<Self, BadOrigin> {
        let mut list = Vec::new();
        for value in values.iter().map(|v| v.trim()).filter(|v| !v.is_empty()) {
            if value == "*" {
                return Ok(Self::Any);
            }
            let origin = value.trim_end_matches('/').to_ascii_lowercase();
            if split_origin(&origin).is_none() {
                return Err(BadOrigin {
                    value: value.to_owned(),
                });
            }
            list.push(origin);
        }
        Ok(if list.is_empty() {
            Self::SameHost
        } else {
            Self::List(list)
        })
    }

    /// Whether a browser page of `origin` may open a WebSocket on a server
    /// reached as `host` (the request's `Host` header).
    pub fn allows(&self, origin: &str, host: Option<&str>) -> bool {
        let origin = origin.trim().to_ascii_lowercase();
        if let Some(host) = host
            && same_host(&origin, host)
        {
            return true;
        }
        match self {
            Self::SameHost => false,
            Self::Any => true,
            Self::List(list) => list.contains(&origin),
        }
    }

    /// The CORS layer for the HTTP endpoints.
    pub fn cors(&self) -> CorsLayer {
        let allow = match self {
            Self::Any => AllowOrigin::any(),
            Self::SameHost => AllowOrigin::list(std::iter::empty::<HeaderValue>()),
            Self::List(list) => {
                AllowOrigin::list(list.iter().filter_map(|o| HeaderValue::from_str(o).ok()))
            }
        };
        CorsLayer::new()
            .allow_origin(allow)
            .allow_methods([Method::GET, Method::POST])
            // The SDKs send their own headers (x-stainless-*,
            // anthropic-version, ...); the origin is what is vetted.
            .allow_headers(AllowHeaders::mirror_request())
            // A page reads its run's resume grant from these (`resume/`).
            .expose_headers([
                header::RETRY_AFTER,
                header::WWW_AUTHENTICATE,
                HeaderName::from_static(super::sse::RESUME_URL_HEADER),
                HeaderName::from_static(super::sse::RESUME_TOKEN_HEADER),
                HeaderName::from_static(super::sse::RESUME_WINDOW_HEADER),
            ])
            .max_age(Duration::from_secs(600))
    }
}

/// `scheme://authority` with a known scheme and no path.
fn split_origin(origin: &str) -> Option<(&str, &str)> {
    let (scheme, authority) = origin.split_once("://")?;
    let ok = matches!(scheme, "http" | "https")
        && !authority.is_empty()
        && !authority.contains(['/', '?', '#', '@', ' ']);
    ok.then_some((scheme, authority))
}

/// Whether `origin` names the same host and port as `host`, default ports
/// made explicit on both sides.
fn same_host(origin: &str, host: &str) -> bool {
    let Some((scheme, authority)) = split_origin(origin) else {
        return false;
    };
    let default_port = if scheme == "https" { "443" } else { "80" };
    let with_port = |a: &str| -> String {
        // A port follows the last ':' unless that ':' is inside an IPv6 literal.
        match a.rsplit_once(':') {
            Some((_, port)) if !port.contains(']') => a.to_owned(),
            _ => format!("{a}:{default_port}"),
        }
    };
    with_port(authority) == with_port(&host.trim().to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_host_matches_with_default_ports() {
        let o = AllowedOrigins::SameHost;
        assert!(o.allows("http://127.0.0.1:8080", Some("127.0.0.1:8080")));
        assert!(o.allows("HTTP://LocalHost", Some("localhost:80")));
        assert!(o.allows("https://example.com", Some("example.com:443")));
        assert!(o.allows("http://[::1]:8080", Some("[::1]:8080")));
        assert!(!o.allows("http://[::1]", Some("[::1]:8080")));
        assert!(!o.allows("http://127.0.0.1:8081", Some("127.0.0.1:8080")));
        assert!(!o.allows("https://127.0.0.1:8080.evil.com", Some("127.0.0.1:8080")));
        assert!(!o.allows("null", Some("127.0.0.1:8080")));
        assert!(!o.allows("http://127.0.0.1:8080", None));
    }

    #[test]
    fn parses_lists_and_wildcards() {
        let list = |v: &[&str]| -> Vec<String> { v.iter().map(|s| (*s).to_owned()).collect() };
        assert_eq!(AllowedOrigins::parse(&[]), Ok(AllowedOrigins::SameHost));
        assert_eq!(
            AllowedOrigins::parse(&list(&["https://a.example/", "*"])),
            Ok(AllowedOrigins::Any)
        );
        assert_eq!(
            AllowedOrigins::parse(&list(&["HTTPS://A.example/"])),
            Ok(AllowedOrigins::List(vec!["https://a.example".into()]))
        );
        assert!(AllowedOrigins::parse(&list(&["a.example"])).is_err());
        assert!(AllowedOrigins::parse(&list(&["https://a.example/app"])).is_err());
        let any = AllowedOrigins::Any;
        assert!(any.allows("https://anything.example", Some("127.0.0.1:8080")));
    }
}
