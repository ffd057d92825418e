//! `rollout-forensics convert FILE -o OUT [--format-version N]`: the same recording in another
//! format version, such as version 1 for a rollout-forensics build that reads only version 1.

use std::io::{BufWriter, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use rf_format::{End, FORMAT_VERSION, Writer};

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
}

pub fn run(args: &ConvertArgs, _out: &mut dyn Write) -> Result<Exit> {
    let mut recording = crate::input::open(&args.file)?;
    let header = recording.reader.header().clone();
    let from = recording.reader.format_version();
    let path = args.file.display().to_string();
    let mut records = 0u64;
    let mut end = None;
    write_atomically(&args.output, |file| {
        let mut writer = Writer::with_format(
            BufWriter::new(file),
            &header,
            Writer::<Vec<u8>>::LEVEL,
            args.format_version,
        )?;
        for record in &mut recording.reader {
            let record = record.with_context(|| format!("failed to read recording {path}"))?;
            writer.write(&record)?;
            records += 1;
        }
        end = recording.reader.end();
        match (end, recording.reader.trailer()) {
            (Some(End::Closed), Some(trailer)) => {
                writer.finish_at(trailer.closed_at)?.flush()?;
            }
            // A recording that was not closed stays so: every record, no end marker.
            _ => writer.flush()?,
        }
        Ok(())
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
