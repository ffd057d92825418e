//! `check --probe URL`: one GET through the front door customers use, judged by its status and
//! by the header or body text only the new revision returns.
//!
//! One request per snapshot (no retries of its own: `--retry-for` takes new snapshots and
//! probes again), bounded by `--probe-timeout`, redirects not followed (a redirect is an
//! answer, and not a 2xx one), at most [`BODY_LIMIT`] bytes of the body read.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use http_body_util::BodyExt;
use hyper::Request;
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use serde::Serialize;

/// How much of an answer's body is read and searched for `--expect-body`.
pub(super) const BODY_LIMIT: usize = 1 << 20;
/// How much of the body an answer shows.
const EXCERPT: usize = 200;

/// What to probe and what the answer must show.
#[derive(Debug, Clone)]
pub(super) struct Probe {
    url: String,
    https: bool,
    host: String,
    port: u16,
    /// Path and query, `/` when the URL has none.
    target: String,
    /// Where to connect instead of resolving `host` (`--resolve`).
    connect_to: Option<IpAddr>,
    headers: Vec<(String, String)>,
    body: Option<String>,
    timeout: Duration,
}

/// What the probe got, for a person, `-o json` and the saved snapshot.
#[derive(Debug, Clone, Default, Serialize)]
pub(super) struct ProbeResult {
    pub url: String,
    /// The address connected to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Each expected header as it came back (none: absent).
    pub headers: Vec<(String, Option<String>)>,
    /// The start of the body, for the person reading why the probe failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body_excerpt: Option<String>,
    /// Why no answer came (connection refused, timeout, TLS).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Why the answer is not the new revision's; empty when it is.
    pub failures: Vec<String>,
}

/// Parses `--probe`, `--expect-header`, `--expect-body`, `--resolve` and `--probe-timeout`.
pub(super) fn parse(
    url: &str,
    headers: &[String],
    body: Option<&str>,
    resolve: &[String],
    timeout: Duration,
) -> Result<Probe> {
    let (https, rest) = if let Some(r) = url.strip_prefix("http://") {
        (false, r)
    } else if let Some(r) = url.strip_prefix("https://") {
        (true, r)
    } else {
        bail!("invalid --probe {url:?}: expected an http:// or https:// URL");
    };
    let (authority, target) = match rest.find(['/', '?']) {
        Some(i) if rest[i..].starts_with('/') => (&rest[..i], rest[i..].to_owned()),
        Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
        None => (rest, "/".to_owned()),
    };
    let target = target.split('#').next().unwrap_or("/").to_owned();
    if authority.contains('@') {
        bail!("invalid --probe {url:?}: credentials in the URL are not sent");
    }
    let (host, port) = split_host_port(authority, if https { 443 } else { 80 })
        .with_context(|| format!("invalid --probe {url:?}"))?;
    let mut connect_to = None;
    for r in resolve {
        let (h, p, addr) = parse_resolve(r)?;
        if h.eq_ignore_ascii_case(&host) && p == port {
            connect_to = Some(addr);
        }
    }
    if !resolve.is_empty() && connect_to.is_none() {
        bail!(
            "no --resolve matches the --probe URL's {host}:{port}: --resolve takes HOST:PORT:ADDR for the host and port of the URL"
        );
    }
    let headers = headers
        .iter()
        .map(|h| match h.split_once('=') {
            Some((n, v)) if !n.trim().is_empty() && is_token(n.trim()) => {
                Ok((n.trim().to_ascii_lowercase(), v.to_owned()))
            }
            _ => bail!("invalid --expect-header {h:?}: expected NAME=VALUE, e.g. x-version=v418"),
        })
        .collect::<Result<Vec<_>>>()?;
    if let Some(b) = body.filter(|b| b.is_empty()) {
        bail!("invalid --expect-body {b:?}: empty text matches every answer");
    }
    if timeout.is_zero() {
        bail!("--probe-timeout must be more than 0");
    }
    Ok(Probe {
        url: url.to_owned(),
        https,
        host,
        port,
        target,
        connect_to,
        headers,
        body: body.map(str::to_owned),
        timeout,
    })
}

fn is_token(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`.
fn split_host_port(authority: &str, default_port: u16) -> Result<(String, u16)> {
    let (host, port) = if let Some(rest) = authority.strip_prefix('[') {
        let Some((h, after)) = rest.split_once(']') else {
            bail!("an IPv6 address without its closing ]");
        };
        (h, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        bail!("no host");
    }
    let port = match port {
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .with_context(|| format!("invalid port {p:?}"))?,
        None => default_port,
    };
    Ok((host.to_owned(), port))
}

/// `HOST:PORT:ADDR`, as curl takes it.
fn parse_resolve(s: &str) -> Result<(String, u16, IpAddr)> {
    let bad = || {
        anyhow::anyhow!(
            "invalid --resolve {s:?}: expected HOST:PORT:ADDR, e.g. shop.example.com:443:127.0.0.1"
        )
    };
    let mut parts = s.splitn(3, ':');
    let (Some(host), Some(port), Some(addr)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(bad());
    };
    let port: u16 = port.parse().map_err(|_| bad())?;
    let addr = addr.trim_start_matches('[').trim_end_matches(']');
    let addr: IpAddr = addr.parse().map_err(|_| bad())?;
    if host.is_empty() || port == 0 {
        return Err(bad());
    }
    Ok((host.to_owned(), port, addr))
}

/// What came back, before it is judged.
struct Answer {
    status: u16,
    headers: Vec<(String, Option<String>)>,
    /// The first [`BODY_LIMIT`] bytes of the body.
    body: String,
    truncated: bool,
}

impl Probe {
    /// Sends the request and judges the answer; never fails: what went wrong is in the result.
    pub(super) async fn run(&self) -> ProbeResult {
        let mut result = ProbeResult {
            url: self.url.clone(),
            ..ProbeResult::default()
        };
        match tokio::time::timeout(self.timeout, self.send(&mut result)).await {
            Ok(Ok(answer)) => self.judge(&answer, &mut result),
            Ok(Err(e)) => result.error = Some(format!("{e:#}")),
            Err(_) => {
                result.error = Some(format!(
                    "no answer within {} (--probe-timeout)",
                    rf_analyzer::human_duration(
                        i64::try_from(self.timeout.as_nanos()).unwrap_or(i64::MAX)
                    )
                ));
            }
        }
        if let Some(e) = &result.error {
            result
                .failures
                .push(format!("the probe of {} got no answer: {e}", self.url));
        }
        result
    }

    /// Connects (to the `--resolve` address when given), sends the GET and reads the answer.
    async fn send(&self, result: &mut ProbeResult) -> Result<Answer> {
        let addr = match self.connect_to {
            Some(ip) => SocketAddr::new(ip, self.port),
            None => tokio::net::lookup_host((self.host.as_str(), self.port))
                .await
                .with_context(|| format!("cannot resolve {}", self.host))?
                .next()
                .with_context(|| format!("{} resolves to no address", self.host))?,
        };
        result.address = Some(addr.to_string());
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .with_context(|| format!("cannot connect to {addr}"))?;
        let default_port = if self.https { 443 } else { 80 };
        let host_header = match (self.host.contains(':'), self.port == default_port) {
            (true, true) => format!("[{}]", self.host),
            (true, false) => format!("[{}]:{}", self.host, self.port),
            (false, true) => self.host.clone(),
            (false, false) => format!("{}:{}", self.host, self.port),
        };
        let request = Request::get(self.target.as_str())
            .header(hyper::header::HOST, host_header)
            .header(
                hyper::header::USER_AGENT,
                concat!("rollout-forensics/", env!("CARGO_PKG_VERSION"), " check"),
            )
            .header(hyper::header::ACCEPT, "*/*")
            .body(http_body_util::Empty::<Bytes>::new())
            .context("cannot build the request")?;
        let response = if self.https {
            let tls = tls_connector()?;
            let name = rustls::pki_types::ServerName::try_from(self.host.clone())
                .with_context(|| format!("{} is not a name TLS can verify", self.host))?;
            let stream = tls
                .connect(name, tcp)
                .await
                .with_context(|| format!("TLS with {} at {addr} failed", self.host))?;
            exchange(TokioIo::new(stream), request).await?
        } else {
            exchange(TokioIo::new(tcp), request).await?
        };
        let (parts, mut body) = response.into_parts();
        let headers = self
            .headers
            .iter()
            .map(|(name, _)| {
                let got = parts
                    .headers
                    .get_all(name.as_str())
                    .iter()
                    .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                    .collect::<Vec<_>>();
                (name.clone(), (!got.is_empty()).then(|| got.join(", ")))
            })
            .collect();
        let mut bytes = Vec::new();
        let mut truncated = false;
        while let Some(frame) = body.frame().await {
            let frame = frame.context("the answer's body was cut off")?;
            if let Ok(data) = frame.into_data() {
                let room = BODY_LIMIT - bytes.len();
                if data.len() >= room {
                    bytes.extend_from_slice(&data[..room]);
                    truncated = data.len() > room || body.frame().await.is_some();
                    break;
                }
                bytes.extend_from_slice(&data);
            }
        }
        Ok(Answer {
            status: parts.status.as_u16(),
            headers,
            body: String::from_utf8_lossy(&bytes).into_owned(),
            truncated,
        })
    }

    /// The answer against what is expected: a 2xx status, each header, the body text.
    fn judge(&self, answer: &Answer, result: &mut ProbeResult) {
        let excerpt: String = answer.body.chars().take(EXCERPT).collect();
        let body_words = match excerpt.trim() {
            "" => String::new(),
            e => format!(" (body: {e:?})"),
        };
        result.status = Some(answer.status);
        result.headers = answer.headers.clone();
        result.body_excerpt = Some(excerpt.clone());
        let url = &self.url;
        if !(200..300).contains(&answer.status) {
            result.failures.push(format!(
                "the probe of {url} answered {}, not a 2xx status{body_words}",
                answer.status
            ));
        }
        for ((name, want), (_, got)) in self.headers.iter().zip(&answer.headers) {
            match got {
                Some(g) if g == want => {}
                Some(g) => result.failures.push(format!(
                    "the probe of {url} answered {name}: {g}, expected {want}: customers do not reach the expected revision"
                )),
                None => result.failures.push(format!(
                    "the probe of {url} answered without a {name} header, expected {name}: {want}"
                )),
            }
        }
        if let Some(expected) = self.body.as_deref().filter(|e| !answer.body.contains(e)) {
            result.failures.push(format!(
                "the probe of {url} answered a body{} without {expected:?}{body_words}",
                if answer.truncated {
                    format!(" whose first {} KiB are", BODY_LIMIT / 1024)
                } else {
                    String::new()
                }
            ));
        }
    }
}

/// The TLS client: the platform's trust store, as kube's client uses.
fn tls_connector() -> Result<tokio_rustls::TlsConnector> {
    use rustls_platform_verifier::BuilderVerifierExt;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("no TLS version to offer")?
        .with_platform_verifier()
        .context("cannot read the platform's trust store")?
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

/// One HTTP/1.1 exchange over `io`.
async fn exchange<T>(
    io: TokioIo<T>,
    request: Request<http_body_util::Empty<Bytes>>,
) -> Result<hyper::Response<hyper::body::Incoming>>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(io)
        .await
        .context("the HTTP handshake failed")?;
    // The connection is driven beside the request; it ends with the answer's body.
    tokio::spawn(async move {
        let _ = conn.await;
    });
    sender
        .send_request(request)
        .await
        .context("the request failed")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(url: &str) -> Result<Probe> {
        parse(url, &[], None, &[], Duration::from_secs(5))
    }

    #[test]
    fn urls_give_host_port_and_target() {
        let x = p("http://shop.example.com/api?x=1#frag").unwrap();
        assert_eq!(
            (x.host.as_str(), x.port, x.target.as_str(), x.https),
            ("shop.example.com", 80, "/api?x=1", false)
        );
        let x = p("https://shop.example.com:8443").unwrap();
        assert_eq!((x.port, x.target.as_str(), x.https), (8443, "/", true));
        let x = p("http://[::1]:9000?q").unwrap();
        assert_eq!(
            (x.host.as_str(), x.port, x.target.as_str()),
            ("::1", 9000, "/?q")
        );
        for bad in [
            "shop.example.com",
            "ftp://x/",
            "http://:80/",
            "http://x:0/",
            "http://x:99999/",
            "http://u:p@x/",
        ] {
            assert!(p(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn resolve_must_match_the_url() {
        let x = parse(
            "http://shop.example.com:8080/",
            &[],
            None,
            &["shop.example.com:8080:127.0.0.1".into()],
            Duration::from_secs(1),
        )
        .unwrap();
        assert_eq!(x.connect_to, Some(IpAddr::from([127, 0, 0, 1])));
        let e = parse(
            "http://shop.example.com:8080/",
            &[],
            None,
            &["shop.example.com:80:127.0.0.1".into()],
            Duration::from_secs(1),
        )
        .unwrap_err();
        assert!(e.to_string().contains("no --resolve matches"), "{e}");
        for bad in [
            "shop:80",
            "shop:x:127.0.0.1",
            "shop:80:nowhere",
            ":80:127.0.0.1",
        ] {
            let e = parse(
                "http://shop/",
                &[],
                None,
                &[bad.into()],
                Duration::from_secs(1),
            )
            .unwrap_err();
            assert!(e.to_string().contains("HOST:PORT:ADDR"), "{bad}: {e}");
        }
        let x = parse(
            "http://shop/",
            &[],
            None,
            &["shop:80:[::1]".into()],
            Duration::from_secs(1),
        )
        .unwrap();
        assert_eq!(x.connect_to, Some("::1".parse().unwrap()));
    }

    #[test]
    fn expectations_are_checked_before_anything_is_sent() {
        let h = |h: &str| parse("http://x/", &[h.into()], None, &[], Duration::from_secs(1));
        assert_eq!(
            h("X-Version=v2").unwrap().headers,
            vec![("x-version".into(), "v2".into())]
        );
        assert!(h("x-version").is_err());
        assert!(h("bad name=v").is_err());
        assert!(parse("http://x/", &[], Some(""), &[], Duration::from_secs(1)).is_err());
        assert!(parse("http://x/", &[], None, &[], Duration::ZERO).is_err());
    }
}
