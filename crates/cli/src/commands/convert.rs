//! `rollout-forensics convert FILE -o OUT [--format-version N] [--records-per-file N]`: the same
//! recording in another format version, such as version 1 for a rollout-forensics build that
//! reads only version 1, or split into the files of a flight recorder's directory.

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use rf_format::{End, FORMAT_VERSION, Header, Reader, Record, Writer};

use crate::atomic::write_atomically;
use crate::exit::Exit;

#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// The recording to read.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The recording to write. Written to a temporary file and renamed when complete; nothing
    /// is written when FILE is damaged.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: PathBuf,
    /// The format version to write: 1 writes every object whole (readable by every
    /// rollout-forensics); 2 writes objects as deltas from their previous version.
    #[arg(
        long = "format-version",
        value_name = "N",
        default_value_t = FORMAT_VERSION,
        value_parser = clap::value_parser!(u32).range(1..=i64::from(FORMAT_VERSION)),
    )]
    pub format_version: u32,
    /// Split the recording into files of this many records, written into the directory OUT
    /// (made if missing) as a flight recorder writes them: each ends when the next one starts (when
    /// its first record was observed), so `analyze OUT` and `serve OUT` read them as one history.
    #[arg(
        long = "records-per-file",
        value_name = "N",
        value_parser = clap::value_parser!(u64).range(1..),
    )]
    pub records_per_file: Option<u64>,
}

pub fn run(args: &ConvertArgs, _out: &mut dyn Write) -> Result<Exit> {
    if let Some(n) = args.records_per_file {
        return split(args, n);
    }
    let mut recording = crate::input::open(&args.file)?;
    let header = recording.reader.header().clone();
    let from = recording.reader.format_version();
    let path = args.file.display().to_string();
    let mut records = 0u64;
    let mut end = None;
    write_atomically(&args.output, |file| {
        let mut writer = writer(file, &header, args.format_version)?;
        for record in &mut recording.reader {
            let record = record.with_context(|| format!("failed to read recording {path}"))?;
            writer.write(&record)?;
            records += 1;
        }
        end = recording.reader.end();
        end_as_read(writer, &recording.reader)
    })?;
    eprintln!(
        "wrote {records} records from {path} (format version {from}) to {} (format version {}){}",
        args.output.display(),
        args.format_version,
        if end == Some(End::Closed) {
            ""
        } else {
            ", not closed, as the input was not"
        }
    );
    Ok(Exit::Ok)
}

/// A writer of format version `version` into `file`, starting with `header`.
fn writer<'a>(
    file: &'a mut std::fs::File,
    header: &Header,
    version: u32,
) -> Result<Writer<BufWriter<&'a mut std::fs::File>>> {
    Ok(Writer::with_format(
        BufWriter::new(file),
        header,
        Writer::<Vec<u8>>::LEVEL,
        version,
    )?)
}

/// Ends what `writer` wrote as `reader`'s recording ended: closed at its close time, or (a
/// recording that was not closed stays so) every record and no end marker.
fn end_as_read<W: Write, R: std::io::Read>(
    mut writer: Writer<W>,
    reader: &Reader<R>,
) -> Result<()> {
    match (reader.end(), reader.trailer()) {
        (Some(End::Closed), Some(trailer)) => {
            writer.finish_at(trailer.closed_at)?.flush()?;
        }
        _ => writer.flush()?,
    }
    Ok(())
}

/// Writes the records of `args.file` into files of `n` records in the directory `args.output`.
fn split(args: &ConvertArgs, n: u64) -> Result<Exit> {
    let dir = &args.output;
    std::fs::create_dir_all(dir).with_context(|| format!("failed to make {}", dir.display()))?;
    let taken = std::fs::read_dir(dir)
        .with_context(|| format!("failed to read {}", dir.display()))?
        .filter_map(|e| e.ok())
        .any(|e| e.file_name().to_string_lossy().contains(".rfr"));
    if taken {
        bail!(
            "{} already holds recordings: split into an empty or new directory, so that its \
             files are one history",
            dir.display()
        );
    }
    let mut recording = crate::input::open(&args.file)?;
    let header = recording.reader.header().clone();
    let path = args.file.display().to_string();
    let stem = args
        .file
        .file_stem()
        .map_or_else(|| "recording".into(), |s| s.to_string_lossy().into_owned());
    let next = |reader: &mut Reader<_>| -> Result<Option<Record>> {
        reader
            .next()
            .transpose()
            .with_context(|| format!("failed to read recording {path}"))
    };
    let reader = &mut recording.reader;
    let mut written: Vec<PathBuf> = Vec::new();
    let result = (|| -> Result<u64> {
        let mut pending = next(reader)?;
        let mut records = 0u64;
        loop {
            let file = dir.join(format!("{stem}-{:05}.rfr", written.len()));
            let mut h = header.clone();
            if let (false, Some(first)) = (written.is_empty(), &pending) {
                h.started_at = first.observed_at;
            }
            write_atomically(&file, |f| {
                let mut writer = writer(f, &h, args.format_version)?;
                let mut last = h.started_at;
                let mut count = 0;
                while count < n {
                    let Some(r) = pending.take() else { break };
                    writer.write(&r)?;
                    last = r.observed_at;
                    count += 1;
                    pending = next(reader)?;
                }
                records += count;
                if let Some(first) = &pending {
                    // Rotated when the next file's first record came: no time between the files.
                    writer.finish_at(first.observed_at.max(last))?.flush()?;
                    return Ok(());
                }
                end_as_read(writer, reader)
            })?;
            written.push(file);
            if pending.is_none() {
                return Ok(records);
            }
        }
    })();
    let records = match result {
        Ok(records) => records,
        Err(e) => {
            // Damage part way: no files of a history that is not all there.
            for f in &written {
                let _ = std::fs::remove_file(f);
            }
            return Err(e);
        }
    };
    let files = written.len();
    eprintln!(
        "wrote {records} records from {path} into {files} files of at most {n} records in {}",
        dir.display()
    );
    Ok(Exit::Ok)
}
