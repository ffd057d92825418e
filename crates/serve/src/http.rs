//! HTTP plumbing: the response body, Status objects, query strings.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::body::{Bytes, Frame, SizeHint};
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use hyper::{Response, StatusCode};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// A response body: all at once, or a stream of chunks from a watch task.
#[derive(Debug)]
pub enum Body {
    /// A complete body.
    Full(Option<Bytes>),
    /// Chunks as a watch produces them; ends when the producer drops its sender.
    Stream(mpsc::Receiver<Bytes>),
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.get_mut() {
            Body::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Body::Stream(rx) => rx.poll_recv(cx).map(|c| c.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, Body::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Body::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            Body::Full(None) => SizeHint::with_exact(0),
            Body::Stream(_) => SizeHint::default(),
        }
    }
}

pub type Resp = Response<Body>;

fn with_headers(status: StatusCode, content_type: &'static str, body: Body) -> Resp {
    let mut r = Response::new(body);
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r.headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-cache, private"));
    r
}

/// A JSON response.
pub fn json_bytes(status: StatusCode, body: Vec<u8>) -> Resp {
    with_headers(
        status,
        "application/json",
        Body::Full(Some(Bytes::from(body))),
    )
}

/// A JSON response from a value.
pub fn json_value(value: &Value) -> Resp {
    json_bytes(StatusCode::OK, crate::json::to_vec(value))
}

/// A plain-text response.
pub fn text(status: StatusCode, body: &'static str) -> Resp {
    with_headers(
        status,
        "text/plain; charset=utf-8",
        Body::Full(Some(Bytes::from_static(body.as_bytes()))),
    )
}

/// A streamed JSON response (a watch).
pub fn stream(rx: mpsc::Receiver<Bytes>) -> Resp {
    with_headers(StatusCode::OK, "application/json", Body::Stream(rx))
}

/// A `Status` object.
pub fn status_value(code: u16, reason: &str, message: &str, details: Option<Value>) -> Value {
    let mut v = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    });
    if let (Some(d), Some(m)) = (details, v.as_object_mut()) {
        m.insert("details".to_owned(), d);
    }
    v
}

/// A failure response carrying a `Status`.
pub fn status(code: StatusCode, reason: &str, message: &str, details: Option<Value>) -> Resp {
    json_bytes(
        code,
        crate::json::to_vec(&status_value(code.as_u16(), reason, message, details)),
    )
}

/// 500 InternalError for a request that failed inside the server (its scratch file could not
/// be read): `payload` is what the failure carried.
pub fn internal_error(payload: &(dyn std::any::Any + Send)) -> Resp {
    status(
        StatusCode::INTERNAL_SERVER_ERROR,
        "InternalError",
        panic_message(payload),
        None,
    )
}

/// The message a panic carried.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    match payload.downcast_ref::<&'static str>() {
        Some(s) => s,
        None => payload
            .downcast_ref::<String>()
            .map_or("internal error", String::as_str),
    }
}

/// 400 BadRequest naming the parameter.
pub fn bad_request(message: &str) -> Resp {
    status(StatusCode::BAD_REQUEST, "BadRequest", message, None)
}

/// 404 NotFound for a path the server does not know.
pub fn not_found_path() -> Resp {
    status(
        StatusCode::NOT_FOUND,
        "NotFound",
        "the server could not find the requested resource",
        Some(json!({})),
    )
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Decodes `%XX` escapes and `+` in a query component.
pub fn percent_decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let h = bytes.get(i + 1).copied().and_then(hex);
                let l = bytes.get(i + 2).copied().and_then(hex);
                match (h, l) {
                    (Some(h), Some(l)) => out.push(h * 16 + l),
                    _ => return Err(format!("invalid percent-escape in {s:?}")),
                }
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| format!("{s:?} is not UTF-8"))
}

/// Splits a query string into decoded pairs.
pub fn parse_query(q: Option<&str>) -> Result<Vec<(String, String)>, String> {
    let Some(q) = q else { return Ok(Vec::new()) };
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            Ok((percent_decode(k)?, percent_decode(v)?))
        })
        .collect()
}

/// Hex encoding, for continue tokens.
pub fn to_hex(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

/// Hex decoding, for continue tokens.
pub fn from_hex(s: &str) -> Option<String> {
    if s.len() % 2 != 0 {
        return None;
    }
    let bytes = s.as_bytes();
    let out = bytes
        .chunks(2)
        .map(|c| Some(hex(c[0])? * 16 + hex(c[1])?))
        .collect::<Option<Vec<u8>>>()?;
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_decoded() {
        let q = parse_query(Some("labelSelector=app%3Dweb%2Ctier+in+(a)&watch=1&x")).unwrap();
        assert_eq!(
            q,
            [
                ("labelSelector".into(), "app=web,tier in (a)".into()),
                ("watch".into(), "1".into()),
                ("x".into(), String::new())
            ]
        );
        assert!(parse_query(Some("a=%zz")).is_err());
        assert!(parse_query(Some("a=%e2%28")).is_err());
    }

    #[test]
    fn hex_round_trips() {
        let s = "replicasets\n12\nns\nname";
        assert_eq!(from_hex(&to_hex(s)).unwrap(), s);
        assert!(from_hex("abc").is_none());
        assert!(from_hex("zz").is_none());
    }
}
