//! The HTTP server: accepts connections on loopback (by default), answers each request from the
//! shared [`Timeline`], and stops cleanly.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinSet;

use crate::clock::Clock;
use crate::error::{Error, Result};
use crate::options::Options;
use crate::timeline::Timeline;

/// State every request reads.
#[derive(Debug)]
pub struct Shared {
    pub timeline: Arc<Timeline>,
    pub options: Options,
    pub clock: Clock,
    pub watches: AtomicU64,
    pub shutdown: watch::Receiver<bool>,
    pub addr: SocketAddr,
}

/// A bound, not yet running, replay server.
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
    shared: Arc<Shared>,
    stop: watch::Sender<bool>,
}

impl Server {
    /// Binds `options.listen` and prepares to serve `timeline`. The clock starts now.
    pub async fn bind(timeline: Arc<Timeline>, options: Options) -> Result<Server> {
        let listener = TcpListener::bind(options.listen)
            .await
            .map_err(|source| Error::Bind {
                addr: options.listen,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| Error::Bind {
            addr: options.listen,
            source,
        })?;
        let (stop, shutdown) = watch::channel(false);
        let clock = Clock::new(&timeline, options.pace);
        Ok(Server {
            listener,
            shared: Arc::new(Shared {
                timeline,
                options,
                clock,
                watches: AtomicU64::new(0),
                shutdown,
                addr,
            }),
            stop,
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.shared.addr
    }

    /// `http://ADDR`, for a kubeconfig.
    pub fn url(&self) -> String {
        format!("http://{}", self.shared.addr)
    }

    /// Serves until `shutdown` completes, then ends every stream and connection.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Result<()> {
        let mut shutdown = std::pin::pin!(shutdown);
        let mut connections = JoinSet::new();
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                accepted = self.listener.accept() => {
                    let stream = match accepted {
                        Ok((stream, _)) => stream,
                        Err(_) => {
                            // Out of descriptors or a connection reset before accept: try again.
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            continue;
                        }
                    };
                    let _ = stream.set_nodelay(true);
                    let shared = self.shared.clone();
                    connections.spawn(async move {
                        let service = service_fn(move |req| {
                            let shared = shared.clone();
                            async move { Ok::<_, Infallible>(crate::api::answer(&shared, &req)) }
                        });
                        let _ = http1::Builder::new()
                            .serve_connection(TokioIo::new(stream), service)
                            .await;
                    });
                }
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
        let _ = self.stop.send(true);
        connections.shutdown().await;
        Ok(())
    }
}

/// A server running on its own thread and runtime, for tests and tools that are not async.
/// Dropping it stops the server.
#[derive(Debug)]
pub struct Background {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Result<()>>>,
}

impl Background {
    /// Binds and starts serving `timeline` on a new thread.
    pub fn start(timeline: Arc<Timeline>, options: Options) -> Result<Background> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(Error::Runtime)?;
        let server = runtime.block_on(Server::bind(timeline, options))?;
        let addr = server.local_addr();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("rf-serve".into())
            .spawn(move || {
                runtime.block_on(server.run(async {
                    let _ = stopped.await;
                }))
            })
            .map_err(Error::Runtime)?;
        Ok(Background {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops the server and waits for its thread.
    pub fn stop(mut self) -> Result<()> {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> Result<()> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.thread.take().map(std::thread::JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(Error::Runtime(std::io::Error::other(
                "the server thread panicked",
            ))),
            None => Ok(()),
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.stop_inner();
    }
}

/// A kubeconfig for `url`: no credentials, context `rollout-forensics-replay` (current), with
/// `namespace` as its default namespace when given.
pub fn kubeconfig(url: &str, namespace: Option<&str>) -> String {
    let q = crate::json::json_string;
    let name = q("rollout-forensics-replay");
    let ns = namespace
        .map(|n| format!("    namespace: {}\n", q(n)))
        .unwrap_or_default();
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: {name}\n  cluster:\n    server: {}\ncontexts:\n- name: {name}\n  context:\n    cluster: {name}\n    user: {name}\n{ns}current-context: {name}\nusers:\n- name: {name}\n  user: {{}}\npreferences: {{}}\n",
        q(url)
    )
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::net::TcpStream;

    use super::*;
    use crate::options::Pace;

    const RECORDING: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../recordings/rerender-race.rfr"
    );

    /// The whole response to a GET of `path` (the server closes the connection after it).
    fn get(addr: SocketAddr, path: &str) -> String {
        let mut s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        )
        .expect("request");
        let mut out = Vec::new();
        s.read_to_end(&mut out).expect("response");
        String::from_utf8_lossy(&out).into_owned()
    }

    #[test]
    fn a_scratch_file_that_no_longer_reads_is_a_500_and_a_watch_s_error_event() {
        let file = std::fs::File::open(RECORDING).expect("recording");
        let tl = Arc::new(Timeline::read(file).expect("timeline"));
        let options = Options {
            pace: Pace::At(tl.end()),
            ..Options::default()
        };
        let server = Background::start(Arc::clone(&tl), options).expect("server");
        let addr = server.local_addr();
        let list = "/apis/apps/v1/namespaces/payments/replicasets";
        let ok = get(addr, list);
        assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
        let rv = ok
            .split("\"resourceVersion\":\"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .expect("the list's resourceVersion")
            .to_owned();

        tl.spill().fail_reads();
        let failed = get(addr, list);
        assert!(failed.starts_with("HTTP/1.1 500"), "{failed}");
        assert!(failed.contains("\"reason\":\"InternalError\""), "{failed}");
        assert!(failed.contains("cannot be read"), "{failed}");
        // A watch from before the last events needs versions it can no longer read: it ends
        // with an ERROR event that says why.
        let base = tl.kind("apps", "replicasets").expect("kind").base_rv();
        assert_ne!(base.to_string(), rv, "the watch has events to send");
        let watched = get(addr, &format!("{list}?watch=1&resourceVersion={base}"));
        assert!(watched.starts_with("HTTP/1.1 200"), "{watched}");
        assert!(
            watched.contains("{\"type\":\"ERROR\",\"object\":{"),
            "{watched}"
        );
        assert!(watched.contains("\"code\":500"), "{watched}");
        assert!(watched.contains("cannot be read"), "{watched}");
        // The server goes on answering.
        let version = get(addr, "/version");
        assert!(version.starts_with("HTTP/1.1 200"), "{version}");
        server.stop().expect("stop");
    }
}
