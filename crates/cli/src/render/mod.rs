//! Rendering reports for a person: an incident summary that says what happened, the proof, and
//! what to run.

use std::io::{self, Write};

use rf_analyzer::{Finding, RecordingSummary, Report, Severity, human_duration, rfc3339};
use rf_format::Timestamp;

use crate::args::ReportFormat;
use crate::style::{Style, wrap};

pub mod html;
pub mod markdown;

/// The heading of a finding's commands that move traffic or change the release.
pub const DECISION: &str = "Decide (moves traffic or changes the release):";

/// Writes `report` in `format`. JSON and YAML are the same schema (docs/report-schema.md).
pub fn report(
    w: &mut dyn Write,
    report: &Report,
    format: ReportFormat,
    style: Style,
) -> anyhow::Result<()> {
    match format {
        ReportFormat::Table => analyze_table(w, report, style)?,
        ReportFormat::Json => json(w, report)?,
        // A maintained serde YAML serializer rather than our own emitter: it quotes exactly the
        // strings YAML would otherwise read as another type (`"1.42.0"`, `"null"`, `"yes"`), so
        // the YAML parses back to the JSON report's values (tested).
        ReportFormat::Yaml => yaml_serde::to_writer(&mut *w, report)?,
        ReportFormat::Markdown => markdown::write(w, report)?,
        ReportFormat::Html => html::write(w, report)?,
        ReportFormat::Jsonl => {
            let mut lines = Lines::new(w, report);
            for f in &report.findings {
                lines.write(f)?;
            }
            lines.finish()?;
        }
    }
    Ok(())
}

/// `-o jsonl`: each finding on a line of its own, with where it was recorded.
struct Lines<'a> {
    w: io::BufWriter<&'a mut dyn Write>,
    /// `"cluster":...,"context":...,"recording":[...]` and a comma, put before each finding's own
    /// fields.
    prefix: String,
}

impl<'a> Lines<'a> {
    fn new(w: &'a mut dyn Write, report: &Report) -> Self {
        let files = &report.recording.files;
        let first =
            |f: fn(&rf_analyzer::FileSummary) -> Option<&String>| files.iter().find_map(f).cloned();
        let names: Vec<&str> = files.iter().map(|f| f.name.as_str()).collect();
        let prefix = serde_json::json!({
            "cluster": first(|f| f.server.as_ref()),
            "context": first(|f| f.context.as_ref()),
            "recording": names,
        })
        .to_string();
        // `{...}` without its closing brace, then a comma: the finding's fields follow.
        let prefix = format!("{},", &prefix[..prefix.len() - 1]);
        Lines {
            w: io::BufWriter::with_capacity(64 * 1024, w),
            prefix,
        }
    }

    fn write(&mut self, finding: &Finding) -> anyhow::Result<()> {
        let own = serde_json::to_string(finding)?;
        // The finding's object without its opening brace.
        self.w.write_all(self.prefix.as_bytes())?;
        self.w.write_all(&own.as_bytes()[1..])?;
        self.w.write_all(b"\n")?;
        Ok(())
    }

    fn finish(mut self) -> anyhow::Result<()> {
        self.w.flush()?;
        Ok(())
    }
}

/// Findings from which [`packed_report`] decodes on a thread of its own, and how many that
/// thread hands over at a time.
const DECODE_APART: usize = 1024;
const HANDED: usize = 64;

/// Writes `report` with `packed` as its findings, in a machine format (JSON or YAML): the same
/// bytes as [`report`] of a report holding them, one finding decoded at a time. Many are
/// decoded (inflated, merged) on a thread of their own while this one writes them: a report is
/// written when everything else is done, and on 20,000 findings the two halves of that work
/// each took about 3% of `analyze`'s time, one after the other.
///
/// Every finding packed must be written: packed findings are this process's own bytes, and
/// one that does not decode is a bug, an error here rather than a report short of it.
pub fn packed_report(
    w: &mut dyn Write,
    report: &Report,
    packed: &rf_analyzer::PackedFindings,
    format: ReportFormat,
) -> anyhow::Result<()> {
    if matches!(
        format,
        ReportFormat::Table | ReportFormat::Markdown | ReportFormat::Html
    ) {
        anyhow::bail!("internal error: a {format:?} report is written from decoded findings");
    }
    if format == ReportFormat::Jsonl {
        let mut lines = Lines::new(w, report);
        let mut written = 0;
        for f in packed.iter() {
            lines.write(&f)?;
            written += 1;
        }
        lines.finish()?;
        if written != packed.len() {
            anyhow::bail!(
                "internal error: {} of {} findings could not be read back; the report written is incomplete",
                packed.len().saturating_sub(written),
                packed.len()
            );
        }
        return Ok(());
    }
    let mut write = |findings: &Counted<'_>| -> anyhow::Result<usize> {
        let full = report.with_findings(findings);
        match format {
            ReportFormat::Yaml => yaml_serde::to_writer(&mut *w, &full)?,
            _ => json(w, &full)?,
        }
        Ok(findings.written.get())
    };
    let written = if packed.len() < DECODE_APART {
        write(&Counted::of(Box::new(packed.iter())))?
    } else {
        std::thread::scope(|scope| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<rf_analyzer::Finding>>(4);
            let decoding = std::thread::Builder::new()
                .name("rf-findings".into())
                .spawn_scoped(scope, move || {
                    let mut batch = Vec::with_capacity(HANDED);
                    for f in packed.iter() {
                        batch.push(f);
                        if batch.len() == HANDED
                            && tx
                                .send(std::mem::replace(&mut batch, Vec::with_capacity(HANDED)))
                                .is_err()
                        {
                            // The writer stopped (an error it reports).
                            return;
                        }
                    }
                    let _ = tx.send(batch);
                });
            match decoding {
                Ok(_) => write(&Counted::of(Box::new(rx.into_iter().flatten()))),
                // No thread to be had: decoded here.
                Err(_) => write(&Counted::of(Box::new(packed.iter()))),
            }
        })?
    };
    if written != packed.len() {
        anyhow::bail!(
            "internal error: {} of {} findings could not be read back; the report written is incomplete",
            packed.len().saturating_sub(written),
            packed.len()
        );
    }
    Ok(())
}

/// Findings serialized as an array, once, counting how many were written.
struct Counted<'a> {
    findings: std::cell::RefCell<Option<Box<dyn Iterator<Item = rf_analyzer::Finding> + 'a>>>,
    written: std::cell::Cell<usize>,
}

impl<'a> Counted<'a> {
    fn of(findings: Box<dyn Iterator<Item = rf_analyzer::Finding> + 'a>) -> Self {
        Counted {
            findings: std::cell::RefCell::new(Some(findings)),
            written: std::cell::Cell::new(0),
        }
    }
}

impl serde::Serialize for Counted<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let findings = self.findings.borrow_mut().take().into_iter().flatten();
        s.collect_seq(findings.inspect(|_| self.written.set(self.written.get() + 1)))
    }
}

/// Writes `value` as pretty JSON and a newline. The serializer writes a few bytes at a time
/// (a key, a quote, an indent): into a buffer of its own type, each is a copy, where through
/// `dyn Write` each was a call (a report of 20,000 findings is 43 MB of JSON, written after the
/// last record, when only the thread decoding packed findings runs beside this one).
fn json(w: &mut dyn Write, value: &impl serde::Serialize) -> anyhow::Result<()> {
    let mut buffered = io::BufWriter::with_capacity(64 * 1024, w);
    serde_json::to_writer_pretty(&mut buffered, value)?;
    writeln!(buffered)?;
    buffered.flush()?;
    Ok(())
}

/// Formats times relative to a recording: `13:03:26` when it stays within one UTC day.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    same_day: bool,
}

impl Clock {
    pub fn for_summary(s: &RecordingSummary) -> Self {
        let day = |t: &Option<String>| t.as_deref().map(|t| t.get(..10).unwrap_or(t).to_owned());
        Clock {
            same_day: day(&s.first_record_at) == day(&s.ended_at),
        }
    }

    pub fn show(self, t: Timestamp) -> String {
        let full = rfc3339(t);
        if self.same_day {
            full.get(11..19).map(str::to_owned).unwrap_or(full)
        } else {
            full
        }
    }
}

/// The line that says what was analyzed.
pub fn recording_line(s: &RecordingSummary) -> String {
    let names: Vec<&str> = s.files.iter().map(|f| f.name.as_str()).collect();
    let span = match (&s.first_record_at, &s.ended_at) {
        (Some(a), Some(b)) => format!(
            "{a} .. {b} ({})",
            human_duration((s.span_seconds * 1e9) as i64)
        ),
        _ => "no records".to_owned(),
    };
    let gaps = match s.gaps.len() {
        0 => "no gaps".to_owned(),
        1 => "1 gap".to_owned(),
        n => format!("{n} gaps"),
    };
    let ends: Vec<String> = s
        .files
        .iter()
        .map(|f| match f.end {
            Some(rf_analyzer::FileEnd::Closed) => "closed cleanly".to_owned(),
            Some(rf_analyzer::FileEnd::Unclosed) => {
                "not closed (recorder killed or still running)".to_owned()
            }
            Some(rf_analyzer::FileEnd::Truncated) => "TRUNCATED".to_owned(),
            Some(rf_analyzer::FileEnd::Corrupt) => "CORRUPT".to_owned(),
            None => "read up to --until".to_owned(),
        })
        .collect();
    // A flight recorder's directory holds a day of files: name the first and the last, and
    // count how each ended.
    let (names, ends) = if names.len() > 3 {
        let mut counts: Vec<(String, usize)> = Vec::new();
        for e in ends {
            match counts.iter_mut().find(|(k, _)| *k == e) {
                Some((_, n)) => *n += 1,
                None => counts.push((e, 1)),
            }
        }
        (
            format!(
                "{} files: {} .. {}",
                names.len(),
                names[0],
                names[names.len() - 1]
            ),
            counts
                .into_iter()
                .map(|(e, n)| format!("{n} {e}"))
                .collect::<Vec<_>>()
                .join(", "),
        )
    } else {
        let mut dedup = ends;
        dedup.dedup();
        (names.join(", "), dedup.join(", "))
    };
    format!("{names}\n{span} · {} records · {gaps} · {ends}", s.records)
}

/// What a report says of a namespace it was made of but holds nothing from.
pub fn empty_namespace(ns: &str) -> String {
    format!(
        "nothing was recorded from namespace {ns}: it did not exist or held none of the recorded kinds (kubectl get namespace {ns})"
    )
}

/// `3 errors, 1 warning`: the findings by severity, worst first.
pub fn count_line(findings: &[Finding]) -> String {
    let n = |sev| findings.iter().filter(|f| f.severity == sev).count();
    let mut parts = Vec::new();
    for (sev, word) in [
        (Severity::Error, "error"),
        (Severity::Warning, "warning"),
        (Severity::Info, "info"),
    ] {
        let k = n(sev);
        if k > 0 {
            parts.push(format!(
                "{k} {word}{}",
                if k == 1 || word == "info" { "" } else { "s" }
            ));
        }
    }
    parts.join(", ")
}

/// The whole analyze report as an incident summary.
/// A labelled text under a finding, or a pointer to the finding `earlier` that said it.
fn section(
    w: &mut dyn Write,
    style: Style,
    label: &str,
    text: &str,
    earlier: Option<usize>,
) -> io::Result<()> {
    match earlier {
        Some(n) => writeln!(w, "  {} as [{n}]", style.bold(label)),
        None => {
            writeln!(w, "  {}", style.bold(label))?;
            w.write_all(wrap(text, style.width, "    ", "    ").as_bytes())
        }
    }
}

/// The rollouts a text report tells the end state of: those with findings, or every one when
/// none has a finding and there are few.
const END_STATES_WITHOUT_FINDINGS: usize = 20;

/// `AT THE END`: where each rollout ended, its phase, step and revisions, and its ReplicaSets'
/// pods, so that no one reads a finding's advice against a state the rollout has left.
fn end_states(w: &mut dyn Write, report: &Report, style: Style, clock: Clock) -> io::Result<()> {
    // Once: a rollout per finding, not every finding per rollout.
    let of_findings: std::collections::BTreeSet<&rf_analyzer::Subject> =
        report.findings.iter().map(|f| &f.rollout).collect();
    let with_findings: Vec<&rf_analyzer::RolloutEnd> = report
        .rollouts
        .iter()
        .filter(|e| of_findings.contains(&e.rollout))
        .collect();
    let hidden = report.rollouts.len() - with_findings.len();
    let shown = if with_findings.is_empty() && report.rollouts.len() <= END_STATES_WITHOUT_FINDINGS
    {
        report.rollouts.iter().collect()
    } else {
        with_findings
    };
    let Some(first) = shown.first() else {
        return Ok(());
    };
    writeln!(
        w,
        "{}",
        style.bold(&format!("AT THE END ({})", clock.show(first.at)))
    )?;
    for e in shown {
        let line = format!("{}: {}", e.rollout, e.describe());
        w.write_all(wrap(&line, style.width, "  ", "    ").as_bytes())?;
        if let Some(m) = e.message() {
            w.write_all(wrap(&format!("message: {m}"), style.width, "    ", "      ").as_bytes())?;
        }
        for pods in e.pods() {
            w.write_all(wrap(&format!("rs {pods}"), style.width, "    ", "      ").as_bytes())?;
        }
        for app in &e.applications {
            w.write_all(wrap(&app.describe(), style.width, "    ", "      ").as_bytes())?;
        }
    }
    if !report.findings.is_empty() && hidden > 0 {
        writeln!(
            w,
            "  and {hidden} rollout(s) without findings (`-o json` has each one's end state)"
        )?;
    }
    writeln!(w)
}

pub fn analyze_table(w: &mut dyn Write, report: &Report, style: Style) -> io::Result<()> {
    let s = &report.recording;
    let clock = Clock::for_summary(s);
    for line in recording_line(s).lines() {
        w.write_all(style.bold(&wrap(line, style.width, "", "  ")).as_bytes())?;
    }
    for gap in &s.gaps {
        writeln!(
            w,
            "  gap at {} in {} {}: {} (events in it are unknown)",
            clock.show(gap.at),
            gap.kind,
            if gap.namespace.is_empty() {
                "(all namespaces)"
            } else {
                &gap.namespace
            },
            gap.reason
        )?;
    }
    // On stderr, beside the other diagnostics: the report is what was found.
    for warning in &s.warnings {
        eprintln!("warning: {warning}");
    }
    for note in &s.undecided {
        w.write_all(wrap(&format!("not decided: {note}"), style.width, "  ", "    ").as_bytes())?;
    }
    for ns in &s.empty_namespaces {
        w.write_all(wrap(&empty_namespace(ns), style.width, "  ", "    ").as_bytes())?;
    }
    for note in &s.before {
        let line = format!("before the recording: {note}");
        w.write_all(wrap(&line, style.width, "  ", "    ").as_bytes())?;
    }
    writeln!(w)?;
    if report.findings.is_empty() {
        if !s.before.is_empty() {
            writeln!(
                w,
                "No findings in what was recorded; it began in the middle of a release (above), and says nothing of what happened before it."
            )?;
        } else if !s.empty_namespaces.is_empty() {
            let objects: u64 = s.by_kind.values().sum();
            if objects == 0 {
                writeln!(
                    w,
                    "No findings, and no evidence: the recording holds no object at all, so it says nothing of what ran."
                )?;
            } else {
                writeln!(
                    w,
                    "No findings in what was recorded; it says nothing of the namespaces above."
                )?;
            }
        } else if s.undecided.is_empty() {
            writeln!(
                w,
                "No findings: nothing in this recording matches a known failure."
            )?;
        } else {
            writeln!(
                w,
                "No findings yet: the recording ended before every check could be decided (above)."
            )?;
        }
        if !report.rollouts.is_empty() {
            writeln!(w)?;
            end_states(w, report, style, clock)?;
        }
        return Ok(());
    }

    writeln!(
        w,
        "{}",
        style.bold(&format!("WHAT HAPPENED ({})", count_line(&report.findings)))
    )?;
    let mut rollouts: Vec<&rf_analyzer::Subject> =
        report.findings.iter().map(|f| &f.rollout).collect();
    rollouts.sort();
    rollouts.dedup();
    let many = rollouts.len() > 1;
    if !many {
        if let Some(r) = rollouts.first() {
            writeln!(w, "{r}")?;
        }
    }
    let mut header = vec!["#", "TIME", "SEVERITY", "RULE"];
    if many {
        header.push("ROLLOUT");
    }
    header.push("WHAT HAPPENED");
    let mut table = crate::style::table(style.width);
    table.set_header(header);
    for (i, f) in report.findings.iter().enumerate() {
        let mut row = vec![
            format!("{}", i + 1),
            clock.show(f.at),
            f.severity.as_str().to_owned(),
            f.rule.id().to_owned(),
        ];
        if many {
            row.push(format!("{}/{}", f.rollout.namespace, f.rollout.name));
        }
        row.push(match &f.resolved {
            Some(r) => format!("{} (resolved at {})", f.summary, clock.show(r.at)),
            None => f.summary.clone(),
        });
        table.add_row(row);
    }
    crate::style::write_table(w, &table)?;
    writeln!(w)?;
    end_states(w, report, style, clock)?;

    writeln!(w, "{}", style.bold("PROOF AND REMEDY"))?;
    // A text said under an earlier finding is pointed at, not printed again: the reruns of
    // one race repeat their reasons and remedies finding after finding.
    let mut said: std::collections::HashMap<(&str, String), usize> =
        std::collections::HashMap::new();
    let mut first = |part: &'static str, text: &str, i: usize| -> Option<usize> {
        let at = *said.entry((part, text.to_owned())).or_insert(i);
        (at != i).then_some(at + 1)
    };
    let remedies: Vec<String> = report
        .findings
        .iter()
        .map(|f| {
            let r = &f.remedy;
            format!(
                "{}\n{}\n\n{}\n{:?}",
                r.summary,
                r.commands.join("\n"),
                r.decisions.join("\n"),
                f.resolved
            )
        })
        .collect();
    for (i, f) in report.findings.iter().enumerate() {
        let head = format!(
            "[{}] {} {}",
            i + 1,
            style.severity(f.severity),
            style.bold(f.rule.id())
        );
        let tail = format!("{} · {}", f.subject, clock.show(f.at));
        let plain = format!("[{}] {} {}", i + 1, f.severity.as_str(), f.rule.id());
        // The subject on a line of its own where the heading would not fit.
        if plain.chars().count() + 3 + tail.chars().count() <= style.width {
            writeln!(w, "{head} · {tail}")?;
        } else {
            writeln!(w, "{head}\n    {tail}")?;
        }
        w.write_all(wrap(&f.summary, style.width, "    ", "    ").as_bytes())?;
        if !f.explanation.is_empty() {
            let earlier = first("why", &f.explanation, i);
            section(w, style, "Why:", &f.explanation, earlier)?;
        }
        if let Some(r) = &f.reconstructed {
            for (title, lines) in [
                ("Reconstructed from what the cluster kept:", &r.from),
                ("Cannot be known from it:", &r.unknown),
            ] {
                if lines.is_empty() {
                    continue;
                }
                writeln!(w, "  {}", style.bold(title))?;
                for line in lines {
                    w.write_all(wrap(line, style.width, "    - ", "      ").as_bytes())?;
                }
            }
        }
        if !f.evidence.is_empty() {
            writeln!(w, "  {}", style.bold("Proof:"))?;
            for e in &f.evidence {
                let file = if s.files.len() > 1 {
                    format!("{}:", e.file)
                } else {
                    String::new()
                };
                // Wrapped under its detail; the record's number dimmed.
                let seq = format!("#{file}{:<5}", e.seq);
                let text = format!(
                    "{} {} {}",
                    e.time_words(|t| clock.show(t)),
                    e.object,
                    e.detail
                );
                let lines = wrap(&text, style.width, &format!("    {seq} "), "        ");
                let lines = lines.replacen(&seq, &style.dim(&seq), 1);
                w.write_all(lines.as_bytes())?;
            }
        }
        match (first("now", &remedies[i], i), &f.resolved) {
            (Some(n), _) => writeln!(w, "  {} as [{n}]", style.bold("Now:"))?,
            (None, Some(r)) => {
                writeln!(w, "  {}", style.bold("Now:"))?;
                let text = format!(
                    "Nothing to run: {}. The advice at the time was: {}",
                    r.line().replacen(&rfc3339(r.at), &clock.show(r.at), 1),
                    f.remedy.summary
                );
                w.write_all(wrap(&text, style.width, "    ", "    ").as_bytes())?;
            }
            (None, None) => {
                writeln!(w, "  {}", style.bold("Now:"))?;
                w.write_all(wrap(&f.remedy.summary, style.width, "    ", "    ").as_bytes())?;
                for c in &f.remedy.commands {
                    writeln!(w, "    {}", style.command(&format!("$ {c}")))?;
                }
                if !f.remedy.decisions.is_empty() {
                    writeln!(w, "  {}", style.bold(DECISION))?;
                    for c in &f.remedy.decisions {
                        writeln!(w, "    {}", style.command(&format!("$ {c}")))?;
                    }
                }
            }
        }
        if !f.remedy.prevention.is_empty() {
            let earlier = first("prevent", &f.remedy.prevention, i);
            section(w, style, "Prevent:", &f.remedy.prevention, earlier)?;
        }
        writeln!(w)?;
    }

    // Only commands that end the incident or show more of it: what moves traffic stays under
    // its own finding, as a decision.
    writeln!(w, "{}", style.bold("WHAT TO RUN NOW"))?;
    let mut seen = Vec::new();
    let mut ordered: Vec<&Finding> = report
        .findings
        .iter()
        .filter(|f| f.resolved.is_none())
        .collect();
    ordered.sort_by_key(|f| std::cmp::Reverse(f.severity));
    for f in ordered {
        for c in &f.remedy.commands {
            if !seen.contains(c) {
                seen.push(c.clone());
                writeln!(
                    w,
                    "  {}   {}",
                    style.command(&format!("$ {c}")),
                    style.dim(&format!("# {}", f.rule))
                )?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod packed_tests {
    use rf_analyzer::{Options, PackedFindings, Rule, Subject};
    use rf_format::{Header, Kind, Source};

    use super::*;

    /// `n` findings, and the report (no findings of its own) they go in.
    fn findings(n: usize) -> (Report, Vec<Finding>) {
        let header = Header::new("", Timestamp(0), Source::default());
        let report = rf_analyzer::analyze(&header, [], Options::default());
        let all = (0..n)
            .map(|i| {
                let who = Subject::new(Kind::Rollout, "ns", &format!("r{}", i % 7));
                Finding {
                    rule: Rule::PauseLost,
                    severity: Severity::Error,
                    subject: who.clone(),
                    rollout: who,
                    at: Timestamp(((i * 7919) % 1000) as i64),
                    summary: format!("finding {i}"),
                    explanation: String::new(),
                    evidence: Vec::new(),
                    remedy: rf_analyzer::Remedy::default(),
                    resolved: None,
                    reconstructed: None,
                    window: None,
                }
            })
            .collect();
        (report, all)
    }

    fn packed(all: &[Finding]) -> PackedFindings {
        let mut packed = PackedFindings::default();
        for chunk in all.chunks(61) {
            packed.push(chunk.to_vec());
        }
        packed
    }

    #[test]
    fn packed_findings_are_written_as_the_report_holding_them_on_either_side_of_the_thread() {
        for n in [10, DECODE_APART + HANDED * 3 + 5] {
            let (report, all) = findings(n);
            let packed = packed(&all);
            for format in [ReportFormat::Json, ReportFormat::Yaml, ReportFormat::Jsonl] {
                let mut streamed = Vec::new();
                packed_report(&mut streamed, &report, &packed, format).unwrap();
                let mut holding = report.clone();
                holding.findings = packed.iter().collect();
                let mut plain = Vec::new();
                super::report(&mut plain, &holding, format, Style::plain()).unwrap();
                assert_eq!(holding.findings.len(), n);
                assert!(streamed == plain, "{n} findings as {format:?}");
            }
        }
    }

    /// Accepts `left` bytes, then fails.
    struct Failing {
        left: usize,
    }

    impl Write for Failing {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.left < buf.len() {
                return Err(io::Error::other("disk full"));
            }
            self.left -= buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_writer_that_fails_midway_ends_the_decoding_thread_and_says_why() {
        let (report, all) = findings(3000);
        let packed = packed(&all);
        // Fails after a few findings, while the other thread has thousands to hand over: it
        // must stop (the scope joins it), not block on a channel nobody reads.
        let err = packed_report(
            &mut Failing { left: 70_000 },
            &report,
            &packed,
            ReportFormat::Json,
        )
        .unwrap_err();
        assert!(format!("{err:#}").contains("disk full"), "{err:#}");
    }
}
