//! Helpers shared by the CLI's end-to-end tests: the real binary with no kubeconfig from the
//! environment, bounded runs, and `serve` on loopback. Every child process is killed on every
//! path and every wait is bounded.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Longest any one command may run before the test fails (and kills it).
pub const LIMIT: Duration = Duration::from_secs(60);

pub fn recording(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../recordings")
        .join(format!("{name}.rfr"))
}

/// (rule, subject name) of each finding of a JSON report, in the report's order.
pub fn findings(report: &serde_json::Value) -> Vec<(String, String)> {
    report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap().to_owned(),
                f["subject"]["name"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A child process, killed and reaped when dropped (on every path, panics included).
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The binary, with no kubeconfig from the environment to find.
pub fn bin(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rollout-forensics"));
    c.env("HOME", home)
        .env_remove("KUBECONFIG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .env_remove("KUBERNETES_SERVICE_PORT")
        .stdin(Stdio::null());
    c
}

/// Reads a pipe to its end on a thread.
pub fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut all = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut all);
        }
        all
    })
}

/// Sends `signal` (`-INT`, `-TERM`) to `child`, as Ctrl-C or a supervisor does.
pub fn signal(child: &Killed, signal: &str) {
    let id = child.0.id().to_string();
    assert!(
        Command::new("kill")
            .args([signal, &id])
            .status()
            .unwrap()
            .success(),
        "kill {signal} {id}"
    );
}

/// Waits for `child` to exit; fails the test (the guard kills it) after `limit`.
pub fn wait_bounded(child: &mut Killed, limit: Duration, what: &str) -> ExitStatus {
    let started = Instant::now();
    loop {
        if let Some(status) = child.0.try_wait().unwrap() {
            return status;
        }
        assert!(
            started.elapsed() < limit,
            "{what} did not finish within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `cmd` to completion, killed (and the test failed) after [`LIMIT`].
pub fn run_bounded(mut cmd: Command) -> Output {
    let mut child = Killed(
        cmd.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let out = drain(child.0.stdout.take());
    let err = drain(child.0.stderr.take());
    let status = wait_bounded(&mut child, LIMIT, &format!("{cmd:?}"));
    Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// A running `rollout-forensics serve`; killed when dropped.
pub struct Served {
    _child: Killed,
    pub kubeconfig: PathBuf,
    pub dir: tempfile::TempDir,
}

/// Serves `file` on loopback and waits (at most 30 s) for the URL line on stdout.
pub fn serve(file: &Path, extra: &[&str]) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let mut child = Killed(
        bin(dir.path())
            .arg("serve")
            .arg(file)
            .args(extra)
            .arg("--kubeconfig-out")
            .arg(&kubeconfig)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let stdout = child.0.stdout.take().unwrap();
    // Keep reading stderr so serve never blocks on a full pipe.
    drop(drain(child.0.stderr.take()));
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let url = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("serve prints its URL within 30 s")
        .trim()
        .to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{url:?}");
    assert!(kubeconfig.exists(), "serve wrote its kubeconfig");
    Served {
        _child: child,
        kubeconfig,
        dir,
    }
}

/// A tool a test needs runs (`tool --version`; kubectl and go say it with a subcommand): it
/// fails saying how to install it otherwise (.ci/run installs them all).
#[allow(dead_code)]
pub fn need(tool: &str, install: &str) {
    let version: &[&str] = match tool {
        "kubectl" => &["version", "--client"],
        "go" => &["version"],
        _ => &["--version"],
    };
    let ok = Command::new(tool)
        .args(version)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "this test needs {tool}: {install}");
}
