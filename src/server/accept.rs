//! Which HTTP binding a `POST /agent` (or a resume) answers in, from the
//! request's `Accept` (RFC 9110 content negotiation).

use axum::http::{HeaderMap, StatusCode, header};
use thinkwire_protocol::PROTO_MEDIA_TYPE;

use super::rejection::Rejection;

/// The HTTP binding a response is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Binding {
    /// `text/event-stream`, JSON events.
    Sse,
    /// `application/vnd.ag-ui.event+proto`, length-prefixed protobuf.
    Proto,
}

/// Chooses the binding from `Accept` (RFC 9110 §12.5.1):
///
/// - no `Accept` (or an empty one): SSE, the default;
/// - each binding takes the q-value of the most specific range that
///   matches it: SSE `text/event-stream`, `text/*` or `*/*`; protobuf only
///   its own media type, named: a wildcard stands for the default, so a
///   client that never heard of protobuf never receives it;
/// - the higher q-value wins; on a tie, the more specific match, then the
///   range listed first (so `…+proto, text/event-stream` is protobuf,
///   `*/*, …+proto` too, and `text/event-stream, …+proto` is SSE);
/// - neither acceptable (`q=0`, or only other types): `406`.
///
/// Ranges that do not parse (no `/`, a q-value outside 0–1 or with more
/// than three decimals) are ignored.
pub(crate) fn negotiate(headers: &HeaderMap) -> Result<Binding, Rejection> {
    let values: Vec<&str> = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    if values.iter().all(|v| v.trim().is_empty()) {
        return Ok(Binding::Sse);
    }
    let mut sse: Option<Match> = None;
    let mut proto: Option<Match> = None;
    let ranges = values.iter().flat_map(|v| v.split(','));
    for (index, range) in ranges.enumerate() {
        let Some((kind, subtype, q)) = parse_range(range) else {
            continue;
        };
        let sse_specificity = match (kind.as_str(), subtype.as_str()) {
            ("text", "event-stream") => Some(2),
            ("text", "*") => Some(1),
            ("*", "*") => Some(0),
            _ => None,
        };
        if let Some(specificity) = sse_specificity {
            Match::keep(
                &mut sse,
                Match {
                    q,
                    specificity,
                    index,
                },
            );
        }
        if PROTO_MEDIA_TYPE.split_once('/') == Some((kind.as_str(), subtype.as_str())) {
            Match::keep(
                &mut proto,
                Match {
                    q,
                    specificity: 2,
                    index,
                },
            );
        }
    }
    let sse = sse.filter(|m| m.q > 0);
    let proto = proto.filter(|m| m.q > 0);
    match (sse, proto) {
        (None, None) => Err(Rejection::new(
            StatusCode::NOT_ACCEPTABLE,
            "NOT_ACCEPTABLE",
            format!(
                "POST /agent answers as text/event-stream (JSON events) or {PROTO_MEDIA_TYPE} \
                 (protobuf events); the request's Accept allows neither"
            ),
        )),
        (Some(_), None) => Ok(Binding::Sse),
        (None, Some(_)) => Ok(Binding::Proto),
        (Some(s), Some(p)) => {
            let proto_first = (p.q, p.specificity, std::cmp::Reverse(p.index))
                > (s.q, s.specificity, std::cmp::Reverse(s.index));
            Ok(if proto_first {
                Binding::Proto
            } else {
                Binding::Sse
            })
        }
    }
}

/// The range of `Accept` that decides one binding's q-value.
#[derive(Debug, Clone, Copy)]
struct Match {
    /// Thousandths (`q=0.5` is 500).
    q: u16,
    /// 2 for the exact type, 1 for `type/*`, 0 for `*/*`.
    specificity: u8,
    /// Position in the header.
    index: usize,
}

impl Match {
    /// Keeps the more specific of two matches (the first on a tie).
    fn keep(best: &mut Option<Match>, new: Match) {
        if best.is_none_or(|b| new.specificity > b.specificity) {
            *best = Some(new);
        }
    }
}

/// One media range: lowercase type and subtype, and its q-value in
/// thousandths (1000 when absent). `None` for a range that does not parse.
fn parse_range(range: &str) -> Option<(String, String, u16)> {
    let mut params = range.split(';');
    let media = params.next()?.trim().to_ascii_lowercase();
    let (kind, subtype) = media.split_once('/')?;
    let token = |s: &str| !s.is_empty() && !s.contains(|c: char| c.is_whitespace() || c == '/');
    if !token(kind) || !token(subtype) || (kind == "*" && subtype != "*") {
        return None;
    }
    let mut q = 1000;
    for param in params {
        let (name, value) = param.split_once('=').unwrap_or((param, ""));
        if name.trim().eq_ignore_ascii_case("q") {
            q = qvalue(value.trim())?;
            // What follows q is accept-extensions, not media parameters.
            break;
        }
    }
    Some((kind.to_owned(), subtype.to_owned(), q))
}

/// RFC 9110's `qvalue`: `0` to `1` with at most three decimals, in
/// thousandths.
fn qvalue(text: &str) -> Option<u16> {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    if fraction.len() > 3 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let thousandths: u16 = format!("{fraction:0<3}").parse().ok()?;
    match whole {
        "0" => Some(thousandths),
        "1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn pick(accept: &[&str]) -> Option<Binding> {
        let mut headers = HeaderMap::new();
        for value in accept {
            headers.append(header::ACCEPT, HeaderValue::from_str(value).unwrap());
        }
        negotiate(&headers).ok()
    }

    const PROTO: &str = "application/vnd.ag-ui.event+proto";

    #[test]
    fn accept_chooses_the_binding() {
        use Binding::{Proto, Sse};
        let cases: &[(&[&str], Option<Binding>)] = &[
            (&[], Some(Sse)),
            (&[""], Some(Sse)),
            (&["*/*"], Some(Sse)),
            (&["text/*"], Some(Sse)),
            (&["text/event-stream"], Some(Sse)),
            (&["TEXT/Event-Stream; charset=utf-8"], Some(Sse)),
            (&[PROTO], Some(Proto)),
            (&["Application/VND.ag-ui.event+PROTO"], Some(Proto)),
            // The official HttpAgent's own Accept joined after ours.
            (&[PROTO, "text/event-stream"], Some(Proto)),
            (
                &["application/vnd.ag-ui.event+proto, text/event-stream"],
                Some(Proto),
            ),
            (
                &["text/event-stream, application/vnd.ag-ui.event+proto"],
                Some(Sse),
            ),
            (&["*/*, application/vnd.ag-ui.event+proto"], Some(Proto)),
            (
                &["application/vnd.ag-ui.event+proto;q=0.5, text/event-stream"],
                Some(Sse),
            ),
            (
                &["application/vnd.ag-ui.event+proto, text/event-stream;q=0.9"],
                Some(Proto),
            ),
            (
                &["text/event-stream;q=0.2, application/vnd.ag-ui.event+proto;q=0.3"],
                Some(Proto),
            ),
            (
                &["text/event-stream;q=0.300, application/vnd.ag-ui.event+proto;q=0.3"],
                Some(Sse),
            ),
            (
                &["*/*;q=0.1, application/vnd.ag-ui.event+proto;q=0.1"],
                Some(Proto),
            ),
            (&["application/vnd.ag-ui.event+proto;q=0, */*"], Some(Sse)),
            // The most specific range decides: text/event-stream is refused
            // even though */* would take it.
            (&["text/event-stream;q=0, */*"], None),
            (
                &["text/event-stream;q=0, */*, application/vnd.ag-ui.event+proto;q=0.1"],
                Some(Proto),
            ),
            (&["application/json"], None),
            (&["application/*"], None),
            (&["application/vnd.ag-ui.event+proto;q=0"], None),
            (&["*/*;q=0"], None),
            // Malformed ranges are ignored.
            (&["text/event-stream;q=2"], None),
            (
                &["text/event-stream;q=0.0001, application/vnd.ag-ui.event+proto"],
                Some(Proto),
            ),
            (
                &["nonsense, application/vnd.ag-ui.event+proto"],
                Some(Proto),
            ),
            (&["*/json"], None),
            (&["text/event-stream;q=1.0"], Some(Sse)),
            (&["text/event-stream;q=1.5"], None),
        ];
        for (accept, want) in cases {
            assert_eq!(pick(accept), *want, "{accept:?}");
        }
    }

    #[test]
    fn qvalues() {
        for (text, q) in [
            ("0", 0),
            ("0.5", 500),
            ("0.123", 123),
            ("1", 1000),
            ("1.000", 1000),
            ("0.", 0),
        ] {
            assert_eq!(qvalue(text), Some(q), "{text}");
        }
        for text in ["", "1.001", "2", "0.1234", "-0", "0.a", ".5", "abc"] {
            assert_eq!(qvalue(text), None, "{text}");
        }
    }
}
