//! What a file looks like from its first bytes: a recording, a kubectl watch capture, an audit
//! log, or something else. Used to say what a file is when it is given to the wrong command.

use std::fmt;
use std::io::Read;
use std::path::Path;

/// How much of a file (after gzip, if it is gzip) is looked at.
const LOOK: usize = 64 * 1024;

/// What the start of a file looks like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Looks {
    /// Nothing in it.
    Empty,
    /// A rollout-forensics recording.
    Recording,
    /// JSON with Kubernetes objects or watch events: what `kubectl get -w -o json` prints.
    KubectlCapture,
    /// API server audit events (audit.k8s.io).
    AuditLog,
    /// JSON, but neither of the above.
    OtherJson,
    /// Text that is not JSON.
    Text,
    /// Binary data.
    Binary,
}

impl fmt::Display for Looks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Looks::Empty => "empty",
            Looks::Recording => "a rollout-forensics recording",
            Looks::KubectlCapture => "a kubectl watch capture (Kubernetes objects as JSON)",
            Looks::AuditLog => "an API server audit log (audit.k8s.io events)",
            Looks::OtherJson => "JSON, but no Kubernetes objects or audit events",
            Looks::Text => "text that is not JSON",
            Looks::Binary => "binary data",
        })
    }
}

/// For a file that is not a recording: what it is, and the command that reads it.
pub fn not_a_recording(path: &Path) -> Option<String> {
    let (looks, gzip) = sniff(path)?;
    let import = |from: &str| {
        let out = path.with_extension("rfr");
        format!(
            "it looks like {looks}: import it first: rollout-forensics import --from {from} {} -o {}",
            path.display(),
            out.display()
        )
    };
    match looks {
        Looks::KubectlCapture => Some(import("kubectl-watch")),
        Looks::AuditLog => Some(import("audit-log")),
        Looks::Recording | Looks::Empty => None,
        other => Some(format!(
            "it looks like {}{other}",
            if gzip { "gzip of " } else { "" }
        )),
    }
}

/// Fails unless `path` can be what `import --from` reads: a kubectl capture or an audit log
/// (`audit` says which), plain or gzip. Says what the file looks like instead.
pub fn check_import(path: &Path, from: crate::commands::import::From) -> anyhow::Result<()> {
    use crate::commands::import::From;
    let Some((looks, gzip)) = sniff(path) else {
        // Unreadable: the import says why when it opens it.
        return Ok(());
    };
    let what = format!("{}{looks}", if gzip { "gzip of " } else { "" });
    let wrong = |why: &str| anyhow::anyhow!("{} is {what}: {why}", path.display());
    match (looks, from) {
        (Looks::Recording, _) => Err(anyhow::anyhow!(
            "{} is already a recording: analyze it (rollout-forensics analyze {})",
            path.display(),
            path.display()
        )),
        (Looks::Binary | Looks::Text, From::AuditLog) => {
            Err(wrong("an audit log is JSON lines of audit.k8s.io events"))
        }
        (Looks::Binary | Looks::Text, From::KubectlWatch) => Err(wrong(
            "a kubectl capture is the JSON that kubectl get -w -o json prints",
        )),
        (Looks::Binary | Looks::Text, From::Events) => Err(wrong(
            "an Events export is the JSON that kubectl get events -o json prints, or JSON lines of Events (a controller's log imports with --from controller-log)",
        )),
        (Looks::Binary, From::GkeAudit | From::EksAudit) => Err(wrong(
            "a cloud's audit log export is JSON (or, from S3, lines of a time and JSON)",
        )),
        (Looks::Text, From::GkeAudit) => Err(wrong(
            "GKE's audit log is the JSON that gcloud logging read --format=json prints",
        )),
        (Looks::Binary, From::ControllerLog) => Err(wrong(
            "the controller's log is the text (or JSON lines) kubectl logs prints",
        )),
        (Looks::AuditLog, From::KubectlWatch | From::Events | From::ControllerLog) => {
            Err(wrong("import it with --from audit-log"))
        }
        (Looks::KubectlCapture, From::AuditLog) => Err(wrong(
            "import it with --from kubectl-watch (or --from events)",
        )),
        _ => Ok(()),
    }
}

/// What `path` looks like, and whether it is gzip-compressed. `None` when it cannot be read.
pub fn sniff(path: &Path) -> Option<(Looks, bool)> {
    let mut head = Vec::with_capacity(LOOK);
    std::fs::File::open(path)
        .ok()?
        .take(LOOK as u64)
        .read_to_end(&mut head)
        .ok()?;
    if head.starts_with(&[0x1f, 0x8b]) {
        let mut inner = Vec::with_capacity(LOOK);
        // A cut or damaged member still shows what it starts with.
        let _ = flate2::read::MultiGzDecoder::new(&head[..])
            .take(LOOK as u64)
            .read_to_end(&mut inner);
        return Some((classify(&inner), true));
    }
    Some((classify(&head), false))
}

/// What `bytes`, the start of a file, look like.
pub fn classify(bytes: &[u8]) -> Looks {
    if bytes.is_empty() {
        return Looks::Empty;
    }
    if bytes.starts_with(&rf_format::MAGIC) {
        return Looks::Recording;
    }
    // The look may end inside a character.
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default()
        }
        Err(_) => return Looks::Binary,
    };
    if text.contains('\0') {
        return Looks::Binary;
    }
    let Some(start) = text.find(['{', '[']) else {
        return Looks::Text;
    };
    // Only blank lines or a few lines of kubectl's own warnings may come before the JSON.
    if text[..start]
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count()
        > 5
    {
        return Looks::Text;
    }
    let json = &text[start..];
    if json.contains("\"auditID\"") && json.contains("audit.k8s.io/") {
        Looks::AuditLog
    } else if json.contains("\"apiVersion\"") && json.contains("\"kind\"") {
        Looks::KubectlCapture
    } else {
        Looks::OtherJson
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_told_apart_by_their_start() {
        assert_eq!(classify(b""), Looks::Empty);
        assert_eq!(classify(b"RFORENSI\x02\0\0\0"), Looks::Recording);
        assert_eq!(
            classify(br#"{"type":"ADDED","object":{"apiVersion":"argoproj.io/v1alpha1","kind":"Rollout"}}"#),
            Looks::KubectlCapture
        );
        assert_eq!(
            classify(
                br#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"a1"}"#
            ),
            Looks::AuditLog
        );
        assert_eq!(classify(b"{\"a\": 1}\n"), Looks::OtherJson);
        assert_eq!(classify(b"apiVersion: v1\nkind: Pod\n"), Looks::Text);
        assert_eq!(classify(b"\x00\x01\x02garbage{"), Looks::Binary);
        assert_eq!(classify(&[0xff, 0xfe, b'{']), Looks::Binary);
        // Cut inside a character: still text.
        let mut cut = br#"{"apiVersion":"v1","kind":"Pod","x":""#.to_vec();
        cut.extend_from_slice(&"é".as_bytes()[..1]);
        assert_eq!(classify(&cut), Looks::KubectlCapture);
    }
}
