//! `rollout-forensics serve FILE [--at T | --speed X] [--listen ADDR] [--kubeconfig-out PATH]`

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, bail};
use rf_analyzer::rfc3339;
use rf_format::Timestamp;
use rf_serve::{Faults, Indexing, Options, Pace, Prepared, Server, Timeline, kubeconfig};

use crate::args::ServeArgs;
use crate::exit::Exit;
use crate::input::{self, Recording};
use crate::timespec::TimeSpec;

/// Records read ahead, per batch handed from the reading thread to the indexing one.
const BATCH: usize = 512;

/// What `serve DIR` says to do with files that are not one history.
const ONE_FILE: &str = "serve one of the files (or a directory of one recorder's files)";

/// Reads the whole recording (a file, or a flight recorder's directory: its `*.rfr` files as one
/// history, in order); damage is an error unless `--partial`.
fn load(path: &Path, partial: bool) -> Result<Timeline> {
    let recordings = if path.is_dir() {
        input::open_history_or(&[path.to_owned()], ONE_FILE)?
    } else {
        vec![input::open(path)?]
    };
    // The first file's header, naming every kind and namespace any file names.
    let mut header = match recordings.first() {
        Some(r) => r.reader.header().clone(),
        None => bail!("no recordings in {}", path.display()),
    };
    for r in &recordings[1..] {
        let source = &r.reader.header().source;
        for kind in &source.kinds {
            if !header.source.kinds.contains(kind) {
                header.source.kinds.push(kind.clone());
            }
        }
        for ns in &source.namespaces {
            if !header.source.namespaces.contains(ns) {
                header.source.namespaces.push(ns.clone());
            }
        }
    }
    // Indexed as read: the recording is never held decoded.
    let mut indexing = Indexing::new(&header);
    let mut trailer = None;
    let mut before: Option<(PathBuf, Timestamp)> = None;
    for Recording { path, reader } in recordings {
        // Its delta bodies are the pieces the server keeps versions as, most of the time.
        let mut reader = reader.keep_deltas();
        let start = reader.header().started_at;
        if let Some((prev, end)) = &before {
            input::follows(prev, *end, &path, start, ONE_FILE)?;
        }
        let mut last = start;
        // Read (inflated, rebuilt, decoded) on another core while this one indexes.
        // The object's bytes kept and its metadata read there too.
        let mut preparer = indexing.preparer();
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Prepared>>(4);
        let reading = std::thread::spawn(move || {
            let mut batch = Vec::with_capacity(BATCH);
            let ended = loop {
                // Into a new record, not `next_record`: the object is dropped once indexed,
                // so its spare capacity is not worth a copy to shed.
                let mut r = rf_format::Record::blank();
                match reader.read_into(&mut r) {
                    Ok(true) => {
                        batch.push(preparer.prepare(r, reader.delta()));
                        if batch.len() == BATCH {
                            if tx.send(std::mem::take(&mut batch)).is_err() {
                                break Ok(());
                            }
                            batch.reserve(BATCH);
                        }
                    }
                    Ok(false) => break Ok(()),
                    Err(e) => break Err(e),
                }
            };
            let _ = tx.send(batch);
            (reader, ended)
        });
        for batch in rx {
            for p in batch {
                last = last.max(p.observed_at());
                indexing.push_prepared(p);
            }
        }
        let (reader, ended) = match reading.join() {
            Ok(x) => x,
            Err(_) => bail!("reading {} failed", path.display()),
        };
        match ended {
            Ok(()) => {}
            Err(e) if partial => {
                eprintln!(
                    "warning: {}: {e}; serving the {} complete records before it",
                    path.display(),
                    reader.records_read()
                );
            }
            Err(e) => {
                return Err(e).with_context(|| {
                    format!(
                        "failed to read recording {} ({} complete records before the damage; --partial serves them)",
                        path.display(),
                        reader.records_read()
                    )
                });
            }
        }
        trailer = reader.trailer().copied();
        if let Some(t) = &trailer {
            last = last.max(t.closed_at);
        }
        before = Some((path, last));
    }
    Ok(indexing.finish(header, trailer))
}

fn pace(args: &ServeArgs, timeline: &Timeline) -> Result<Pace> {
    if let Some(speed) = &args.speed {
        if speed == "max" {
            return Ok(Pace::Max);
        }
        return match speed.parse::<f64>() {
            Ok(x) if x.is_finite() && x > 0.0 => Ok(Pace::Speed(x)),
            _ => bail!(
                "invalid --speed {speed:?}: expected a positive number (1 is real time) or max"
            ),
        };
    }
    let t = match &args.at {
        Some(at) => TimeSpec::parse(at)
            .context("in --at")?
            .resolve(timeline.start(), timeline.end())
            .context("in --at")?,
        None => timeline.end(),
    };
    if t < timeline.start() || t > timeline.end() {
        bail!(
            "--at {} is outside the recording, which spans {} .. {}: nothing is known of that moment",
            rfc3339(t),
            rfc3339(timeline.start()),
            rfc3339(timeline.end())
        );
    }
    let first = timeline.time_at(timeline.base_position());
    if t < first {
        eprintln!(
            "warning: --at {} is before the recording's initial lists end ({}); serving that first complete state",
            rfc3339(t),
            rfc3339(first)
        );
    }
    Ok(Pace::At(t))
}

fn describe(pace: Pace, timeline: &Timeline) -> String {
    let first = rfc3339(timeline.time_at(timeline.base_position()));
    match pace {
        Pace::At(t) => format!("state at {}, static", rfc3339(t)),
        Pace::Speed(x) => format!("replaying from {first} at speed {x}"),
        Pace::Max => format!("replaying from {first} at speed max"),
    }
}

/// The default kubeconfig: `<FILE name>.kubeconfig` in a new directory under the temp dir.
fn default_kubeconfig(file: &Path) -> Result<(PathBuf, PathBuf)> {
    let dir = std::env::temp_dir().join(format!("rollout-forensics-serve-{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("failed to create {}", dir.display()))?;
    let name = file
        .file_name()
        .map_or_else(|| "recording".into(), |n| n.to_string_lossy().into_owned());
    Ok((dir.join(format!("{name}.kubeconfig")), dir))
}

/// A rollout to name in the banner's example: the first one served at the start of the
/// replay (`NAME -n NS`), or a placeholder when there is none.
fn rollout_to_try(timeline: &Timeline, pace: Pace) -> String {
    let position = match pace {
        Pace::At(t) => timeline.position_at(t),
        _ => timeline.base_position(),
    };
    timeline
        .kind("argoproj.io", "rollouts")
        .and_then(|k| k.list(position, None).next())
        .map_or_else(
            || "NAME -n NAMESPACE".to_owned(),
            |(key, _)| format!("{} -n {}", key.name, key.namespace),
        )
}

pub fn run(args: &ServeArgs, out: &mut dyn Write) -> Result<Exit> {
    let timeline = load(&args.file, args.partial)?;
    for w in timeline.warnings() {
        eprintln!("warning: {w}");
    }
    let pace = pace(args, &timeline)?;
    let state = describe(pace, &timeline);
    let namespace = timeline.namespaces().first().cloned();
    let rollout = rollout_to_try(&timeline, pace);
    let options = Options {
        listen: args.listen,
        pace,
        faults: Faults {
            close_watch_every: args.fault_close_watch_every,
            gone_every: args.fault_gone_every,
            stall_after: args.fault_stall_after,
        },
        ..Options::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("failed to start the server's runtime")?;
    runtime.block_on(async {
        let scratch = timeline.scratch();
        let server = Server::bind(Arc::new(timeline), options).await?;
        let url = server.url();
        let (config_path, temp_dir) = match &args.kubeconfig_out {
            Some(p) => (p.clone(), None),
            None => {
                let (p, dir) = default_kubeconfig(&args.file)?;
                (p, Some(dir))
            }
        };
        std::fs::write(&config_path, kubeconfig(&url, namespace.as_deref()))
            .with_context(|| format!("failed to write the kubeconfig {}", config_path.display()))?;
        eprintln!("serving {} at {url} ({state})", args.file.display());
        if scratch.in_file {
            eprintln!(
                "scratch file in {} (unlinked): {scratch}",
                std::env::temp_dir().display()
            );
        } else {
            eprintln!("kept in memory, with no scratch file: {scratch}");
        }
        eprintln!(
            "kubeconfig: {}{} (try: kubectl --kubeconfig {} get rollouts,rs)",
            config_path.display(),
            if temp_dir.is_some() {
                ", in a temporary directory removed on exit"
            } else {
                ""
            },
            config_path.display()
        );
        // kubectl takes no flag before a plugin's name: the plugin reads the environment.
        eprintln!(
            "  with the Argo Rollouts plugin: KUBECONFIG={} kubectl argo rollouts get rollout {rollout}",
            config_path.display()
        );
        if !args.listen.ip().is_loopback() {
            eprintln!(
                "warning: listening on {}: anyone who can reach it can read the recording",
                server.local_addr()
            );
        }
        eprintln!("read-only; Ctrl-C stops it");
        // Handle SIGINT before the URL tells anyone the server is up: a client that reads the
        // URL and interrupts at once must still get a clean stop.
        let interrupted = crate::signal::Interrupt::install()?;
        writeln!(out, "{url}")?;
        out.flush()?;
        server.run(interrupted.wait()).await?;
        if let Some(dir) = temp_dir {
            let _ = std::fs::remove_dir_all(dir);
        }
        eprintln!("stopped");
        Ok(Exit::Ok)
    })
}
