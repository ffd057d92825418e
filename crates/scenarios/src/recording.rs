//! A finished simulation: a header and its records, writable as a recording file.

use std::io::Write;

use rf_format::{Header, Kind, Op, Record, Source, Timestamp, Writer};

/// The header and records of a simulated recording.
#[derive(Debug, Clone)]
pub struct Recording {
    /// The header a recorder would have written (generator, namespace, kinds).
    pub header: Header,
    /// The records, `seq` from 1.
    pub records: Vec<Record>,
    /// When the simulated recorder stopped: nothing is written while nothing changes, so this
    /// can be long after the last record. Written as the file's trailer.
    pub closed_at: Timestamp,
}

impl Recording {
    pub(crate) fn new(
        name: &str,
        namespaces: Vec<String>,
        kinds: Vec<Kind>,
        (start, end): (i64, i64),
        records: Vec<Record>,
    ) -> Self {
        let source = Source {
            context: Some(format!("rf-scenarios/{name}")),
            server: None,
            namespaces,
            label_selector: None,
            kinds,
        };
        let mut header = Header::new(
            concat!("rf-scenarios ", env!("CARGO_PKG_VERSION")),
            Timestamp::from_unix_seconds(start),
            source,
        );
        header
            .notes
            .insert("generator".to_owned(), format!("rf-scenarios {name}"));
        Recording {
            header,
            records,
            closed_at: Timestamp::from_unix_seconds(end),
        }
    }

    /// Writes the recording with [`rf_format::Writer`], flushing at every second of simulated
    /// time (like the recorder's 1 s flush) and at each `ListEnd`; finishes the
    /// writer and returns the underlying writer.
    pub fn write_to<W: Write>(&self, w: W) -> rf_format::Result<W> {
        let mut writer = Writer::new(w, &self.header)?;
        let mut flushes = Flushes::default();
        for record in &self.records {
            flushes.write(&mut writer, record)?;
        }
        writer.finish_at(self.closed_at)
    }
}

/// Writes records as the recorder does: a flush at every second of their time, and after each
/// `ListEnd`.
#[derive(Debug, Default)]
pub(crate) struct Flushes {
    open_second: Option<i64>,
}

impl Flushes {
    pub(crate) fn write<W: Write>(
        &mut self,
        writer: &mut Writer<W>,
        record: &Record,
    ) -> rf_format::Result<()> {
        let second = record.observed_at.as_unix_nanos().div_euclid(1_000_000_000);
        if self.open_second.is_some_and(|s| s != second) {
            writer.flush()?;
        }
        writer.write(record)?;
        self.open_second = Some(second);
        if record.op == Op::ListEnd {
            writer.flush()?;
            self.open_second = None;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use rf_format::{End, Reader};

    use super::*;

    #[test]
    fn write_to_round_trips_through_the_reader() {
        let recording = crate::generate("rerender-race").unwrap();
        let bytes = recording.write_to(Vec::new()).unwrap();
        let mut reader = Reader::new(bytes.as_slice()).unwrap();
        assert_eq!(reader.header(), &recording.header);
        let records: Vec<Record> = (&mut reader).map(Result::unwrap).collect();
        assert_eq!(records, recording.records);
        assert_eq!(reader.end(), Some(End::Closed));
    }

    #[test]
    fn the_writer_flushes_at_every_simulated_second_and_list_end() {
        let recording = crate::generate("abort").unwrap();
        let counter = recording.write_to(FlushCounter::default()).unwrap();
        let seconds: std::collections::BTreeSet<i64> = recording
            .records
            .iter()
            .map(|r| r.observed_at.as_unix_nanos() / 1_000_000_000)
            .collect();
        // The header, one list end per recorded kind in the first second, one per later second
        // (the last one also holds the end marker).
        let lists = recording.header.source.kinds.len();
        assert_eq!(counter.flushes, 1 + lists + (seconds.len() - 1));
    }

    /// Counts the writer's flushes of the underlying writer.
    #[derive(Default)]
    struct FlushCounter {
        flushes: usize,
    }

    impl Write for FlushCounter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            self.flushes += 1;
            Ok(())
        }
    }
}
