//! `analyze -o markdown`: a postmortem section to paste into an incident document or a pull
//! request: summary, a timeline table per rollout, then each finding with its proof and the
//! commands to run.
//!
//! Recordings hold user data (names, messages, annotations), so every text from the report is
//! escaped: characters Markdown would read as markup are backslash-escaped, and in table cells
//! `|` is escaped and line breaks become `<br>`. Commands go in fenced blocks whose fence is
//! longer than any run of backticks inside.

use std::io::{self, Write};

use rf_analyzer::{Finding, Report, Severity, Timeline, human_duration, rfc3339};

use super::{Clock, count_line};

/// Timeline rows written per rollout; the rest are counted (`timeline` shows every one).
pub const MAX_TIMELINE_ROWS: usize = 1000;

/// Escapes text for Markdown prose: what CommonMark or GitHub would read as markup is
/// backslash-escaped, line breaks become spaces.
pub fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    // What makes a line a heading, a quote or a list item when it starts one.
    let digits = s.chars().take_while(char::is_ascii_digit).count();
    let block_marker = match s.chars().next() {
        Some('#' | '>' | '-' | '+' | '=') => Some(0),
        Some(c) if c.is_ascii_digit() && matches!(s.chars().nth(digits), Some('.' | ')')) => {
            Some(digits)
        }
        _ => None,
    };
    for (i, c) in s.chars().enumerate() {
        if Some(i) == block_marker {
            out.push('\\');
            out.push(c);
            continue;
        }
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '|' | '~' | '&' => {
                out.push('\\');
                out.push(c);
            }
            '\r' => {}
            '\n' => out.push(' '),
            _ => out.push(c),
        }
    }
    out
}

/// Escapes text for a table cell: as [`text`], with line breaks as `<br>`.
pub fn cell(s: &str) -> String {
    s.split('\n').map(text).collect::<Vec<_>>().join("<br>")
}

/// A fenced code block of `lang` holding `lines`, its fence longer than any backtick run in them.
pub fn fence(lang: &str, lines: &[String]) -> String {
    let longest = lines
        .iter()
        .flat_map(|l| l.split(|c| c != '`'))
        .map(str::len)
        .max()
        .unwrap_or(0);
    let f = "`".repeat(longest.max(2) + 1);
    let mut out = format!("{f}{lang}\n");
    for l in lines {
        // A line break inside a command would run a second command: keep it one line.
        out.push_str(&l.replace(['\r', '\n'], " "));
        out.push('\n');
    }
    out.push_str(&f);
    out.push('\n');
    out
}

fn plural(n: usize, one: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {one}s")
    }
}

/// The rollouts a report is about: its timelines', then its findings'.
fn rollout_names(report: &Report) -> Vec<String> {
    let mut names: Vec<String> = report
        .timelines
        .iter()
        .map(|t| format!("{}/{}", t.rollout.namespace, t.rollout.name))
        .chain(
            report
                .findings
                .iter()
                .map(|f| format!("{}/{}", f.rollout.namespace, f.rollout.name)),
        )
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The title: the rollout, or how many.
pub fn title(report: &Report) -> String {
    match rollout_names(report).as_slice() {
        [] => "Incident report".to_owned(),
        [one] => format!("Incident report: {one}"),
        many => format!("Incident report: {} rollouts", many.len()),
    }
}

fn file_end(f: &rf_analyzer::FileSummary) -> &'static str {
    match f.end {
        Some(rf_analyzer::FileEnd::Closed) => "closed cleanly",
        Some(rf_analyzer::FileEnd::Unclosed) => "not closed (recorder killed or still running)",
        Some(rf_analyzer::FileEnd::Truncated) => "TRUNCATED",
        Some(rf_analyzer::FileEnd::Corrupt) => "CORRUPT",
        None => "read up to --until",
    }
}

/// Findings of one severity, by rule: `rerender-restart, pause-lost ×2`.
fn rules_of(findings: &[Finding], sev: Severity) -> String {
    let mut rules: Vec<(&str, usize)> = Vec::new();
    for f in findings.iter().filter(|f| f.severity == sev) {
        match rules.iter_mut().find(|(r, _)| *r == f.rule.id()) {
            Some((_, n)) => *n += 1,
            None => rules.push((f.rule.id(), 1)),
        }
    }
    rules
        .iter()
        .map(|(r, n)| {
            if *n == 1 {
                (*r).to_owned()
            } else {
                format!("{r} ×{n}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn summary(w: &mut dyn Write, report: &Report, clock: Clock) -> io::Result<()> {
    let s = &report.recording;
    writeln!(w, "## Summary\n")?;
    for f in &s.files {
        writeln!(
            w,
            "- **Recording:** {} ({}{})",
            text(&f.name),
            file_end(f),
            f.error
                .as_deref()
                .map(|e| format!(": {}", text(e)))
                .unwrap_or_default()
        )?;
    }
    match (&s.first_record_at, &s.ended_at) {
        (Some(a), Some(b)) => writeln!(
            w,
            "- **Span:** {} .. {} ({})",
            text(a),
            text(b),
            human_duration((s.span_seconds * 1e9) as i64)
        )?,
        _ => writeln!(w, "- **Span:** no records")?,
    }
    let kinds: Vec<String> = s
        .by_kind
        .iter()
        .map(|(k, n)| format!("{} {n}", text(k)))
        .collect();
    writeln!(
        w,
        "- **Records:** {}{}",
        s.records,
        if kinds.is_empty() {
            String::new()
        } else {
            format!(" ({})", kinds.join(", "))
        }
    )?;
    if s.gaps.is_empty() {
        writeln!(w, "- **Gaps:** none")?;
    } else {
        writeln!(
            w,
            "- **Gaps:** {} (events in them are unknown)",
            s.gaps.len()
        )?;
        for g in &s.gaps {
            writeln!(
                w,
                "  - {} {} {}: {}",
                clock.show(g.at),
                text(&g.kind),
                if g.namespace.is_empty() {
                    "(all namespaces)".to_owned()
                } else {
                    text(&g.namespace)
                },
                text(&g.reason)
            )?;
        }
    }
    writeln!(
        w,
        "- **Complete:** {}",
        if s.complete {
            "yes: every file closed cleanly, no gap"
        } else {
            "no: a file was not closed cleanly or has a gap; what is missing is unknown"
        }
    )?;
    if s.window.since.is_some() || s.window.until.is_some() {
        writeln!(
            w,
            "- **Window:** since {}, until {}",
            s.window
                .since
                .as_deref()
                .map_or("the start".to_owned(), text),
            s.window.until.as_deref().map_or("the end".to_owned(), text)
        )?;
    }
    if report.findings.is_empty() {
        writeln!(
            w,
            "- **Findings:** none: nothing in this recording matches a known failure"
        )?;
    } else {
        writeln!(w, "- **Findings:** {}", count_line(&report.findings))?;
        for sev in [Severity::Error, Severity::Warning, Severity::Info] {
            let rules = rules_of(&report.findings, sev);
            if !rules.is_empty() {
                writeln!(w, "  - {}: {}", sev.as_str(), rules)?;
            }
        }
    }
    for warning in &s.warnings {
        writeln!(w, "- **Input warning:** {}", text(warning))?;
    }
    for note in &s.undecided {
        writeln!(w, "- **Not decided:** {}", text(note))?;
    }
    for ns in &s.empty_namespaces {
        writeln!(
            w,
            "- **Not recorded:** {}",
            text(&super::empty_namespace(ns))
        )?;
    }
    for note in &s.before {
        writeln!(w, "- **Before the recording:** {}", text(note))?;
    }
    writeln!(w)
}

fn overview(w: &mut dyn Write, report: &Report, clock: Clock) -> io::Result<()> {
    if report.findings.is_empty() {
        return Ok(());
    }
    writeln!(w, "## What happened\n")?;
    writeln!(w, "| # | time | severity | rule | object | what happened |")?;
    writeln!(w, "|---|---|---|---|---|---|")?;
    for (i, f) in report.findings.iter().enumerate() {
        writeln!(
            w,
            "| [{}](#finding-{}) | {} | {} | {} | {} | {} |",
            i + 1,
            i + 1,
            clock.show(f.at),
            f.severity.as_str(),
            f.rule.id(),
            cell(&f.subject.to_string()),
            cell(&match &f.resolved {
                Some(r) => format!("{} (resolved at {})", f.summary, clock.show(r.at)),
                None => f.summary.clone(),
            })
        )?;
    }
    writeln!(w)
}

/// `## At the end`: each rollout's phase, step, revisions and ReplicaSets' pods when the
/// analysis ended.
fn end_states(w: &mut dyn Write, report: &Report, clock: Clock) -> io::Result<()> {
    let Some(first) = report.rollouts.first() else {
        return Ok(());
    };
    writeln!(
        w,
        "## At the end ({})
",
        clock.show(first.at)
    )?;
    writeln!(w, "| rollout | state | ReplicaSets |")?;
    writeln!(w, "|---|---|---|")?;
    for e in &report.rollouts {
        let mut state = e.describe();
        if let Some(m) = e.message() {
            state.push_str(&format!(" · {m}"));
        }
        for app in &e.applications {
            state.push_str(&format!(" · {}", app.describe()));
        }
        writeln!(
            w,
            "| {} | {} | {} |",
            cell(&format!("{}/{}", e.rollout.namespace, e.rollout.name)),
            cell(&state),
            cell(&e.pods().join("; "))
        )?;
    }
    writeln!(w)
}

fn seq(file: u32, seq: u64, files: usize) -> String {
    if files > 1 {
        format!("{file}:{seq}")
    } else {
        seq.to_string()
    }
}

fn timeline(w: &mut dyn Write, t: &Timeline, clock: Clock, files: usize) -> io::Result<()> {
    writeln!(
        w,
        "## Timeline: {}/{}\n",
        text(&t.rollout.namespace),
        text(&t.rollout.name)
    )?;
    let shown = t.entries.len().min(MAX_TIMELINE_ROWS);
    writeln!(
        w,
        "{}{}.\n",
        plural(t.entries.len(), "change"),
        if t.truncated {
            " (the analyzer kept only the first ones)"
        } else {
            ""
        }
    )?;
    if t.entries.is_empty() {
        return Ok(());
    }
    writeln!(
        w,
        "| time | # | what changed | step | pod hash | phase | replicasets (ready/replicas) |"
    )?;
    writeln!(w, "|---|---|---|---|---|---|---|")?;
    for e in t.entries.iter().take(shown) {
        let mut phase = e.phase.as_deref().unwrap_or("-").to_owned();
        if !e.pause.is_empty() {
            phase.push_str(&format!(" (paused: {})", e.pause.join(", ")));
        }
        if e.abort {
            phase.push_str(" (aborted)");
        }
        let rs: Vec<String> = e
            .replicasets
            .iter()
            .map(|r| {
                let role = match r.role {
                    rf_analyzer::Role::New => "new",
                    rf_analyzer::Role::Stable => "stable",
                    rf_analyzer::Role::Other => "other",
                };
                format!("{} {role} {}/{}", r.hash, r.ready, r.replicas)
            })
            .collect();
        writeln!(
            w,
            "| {} | {} | {} | {}/{} | {} | {} | {} |",
            clock.show(e.at),
            seq(e.file, e.seq, files),
            cell(&e.changes.join("\n")),
            e.step_index,
            e.step_count,
            cell(e.pod_hash.as_deref().unwrap_or("-")),
            cell(&phase),
            cell(&rs.join("\n"))
        )?;
    }
    if t.entries.len() > shown {
        writeln!(
            w,
            "\n{} more changes not shown here: `rollout-forensics timeline` lists every one.",
            t.entries.len() - shown
        )?;
    }
    writeln!(w)?;
    if !t.traffic.is_empty() {
        writeln!(w, "### Service endpoints by revision\n")?;
        writeln!(w, "| time | # | service | ready endpoints by pod hash |")?;
        writeln!(w, "|---|---|---|---|")?;
        for e in t.traffic.iter().take(MAX_TIMELINE_ROWS) {
            let by_hash: Vec<String> = e
                .endpoints
                .iter()
                .map(|(h, pods)| {
                    let h = if h.is_empty() { "unknown revision" } else { h };
                    let mut names = pods.iter().take(3).cloned().collect::<Vec<_>>().join(", ");
                    if pods.len() > 3 {
                        names.push_str(", ...");
                    }
                    format!("{h}: {} ({names})", pods.len())
                })
                .collect();
            writeln!(
                w,
                "| {} | {} | {} | {} |",
                clock.show(e.at),
                seq(e.file, e.seq, files),
                cell(&e.service),
                if by_hash.is_empty() {
                    "none".to_owned()
                } else {
                    cell(&by_hash.join("\n"))
                }
            )?;
        }
        if t.traffic.len() > MAX_TIMELINE_ROWS {
            writeln!(
                w,
                "\n{} more endpoint changes not shown here (`-o json --timelines` has every one).",
                t.traffic.len() - MAX_TIMELINE_ROWS
            )?;
        }
        writeln!(w)?;
    }
    Ok(())
}

fn finding(w: &mut dyn Write, i: usize, f: &Finding, clock: Clock, files: usize) -> io::Result<()> {
    writeln!(w, "<a id=\"finding-{}\"></a>\n", i + 1)?;
    writeln!(
        w,
        "### {}. {} {} · {} · {}\n",
        i + 1,
        f.severity.as_str().to_uppercase(),
        f.rule.id(),
        text(&f.subject.to_string()),
        clock.show(f.at)
    )?;
    writeln!(w, "{}\n", text(&f.summary))?;
    if !f.explanation.is_empty() {
        writeln!(w, "**Why.** {}\n", text(&f.explanation))?;
    }
    if let Some(r) = &f.reconstructed {
        for (title, lines) in [
            ("Reconstructed from what the cluster kept.", &r.from),
            ("Cannot be known from it.", &r.unknown),
        ] {
            if lines.is_empty() {
                continue;
            }
            writeln!(w, "**{title}**\n")?;
            for line in lines {
                writeln!(w, "- {}", text(line))?;
            }
            writeln!(w)?;
        }
    }
    if !f.evidence.is_empty() {
        writeln!(w, "**Proof.**\n")?;
        writeln!(w, "| time | # | object | detail |")?;
        writeln!(w, "|---|---|---|---|")?;
        for e in &f.evidence {
            writeln!(
                w,
                "| {} | {} | {} | {} |",
                cell(&e.time_words(|t| clock.show(t))),
                seq(e.file, e.seq, files),
                cell(&e.object.to_string()),
                cell(&e.detail)
            )?;
        }
        writeln!(w)?;
    }
    if let Some(r) = &f.resolved {
        writeln!(
            w,
            "**Now.** Nothing to run: {}. The advice at the time was: {}\n",
            text(&r.line().replacen(&rfc3339(r.at), &clock.show(r.at), 1)),
            text(&f.remedy.summary)
        )?;
        if !f.remedy.prevention.is_empty() {
            writeln!(w, "**Prevent.** {}\n", text(&f.remedy.prevention))?;
        }
        return Ok(());
    }
    if !f.remedy.summary.is_empty() {
        writeln!(w, "**Now.** {}\n", text(&f.remedy.summary))?;
    }
    if !f.remedy.commands.is_empty() {
        write!(w, "{}", fence("sh", &f.remedy.commands))?;
        writeln!(w)?;
    }
    if !f.remedy.decisions.is_empty() {
        writeln!(w, "**{}**\n", super::DECISION)?;
        write!(w, "{}", fence("sh", &f.remedy.decisions))?;
        writeln!(w)?;
    }
    if !f.remedy.prevention.is_empty() {
        writeln!(w, "**Prevent.** {}\n", text(&f.remedy.prevention))?;
    }
    Ok(())
}

/// Writes the report as a Markdown postmortem section.
pub fn write(w: &mut dyn Write, report: &Report) -> io::Result<()> {
    let clock = Clock::for_summary(&report.recording);
    let files = report.recording.files.len();
    writeln!(w, "# {}\n", text(&title(report)))?;
    summary(w, report, clock)?;
    overview(w, report, clock)?;
    end_states(w, report, clock)?;
    for t in &report.timelines {
        timeline(w, t, clock, files)?;
    }
    if !report.findings.is_empty() {
        writeln!(w, "## Findings\n")?;
        for (i, f) in report.findings.iter().enumerate() {
            finding(w, i, f, clock, files)?;
        }
    }
    writeln!(
        w,
        "_Written by {} {} (`analyze -o markdown`); times are UTC{}._",
        text(&report.tool.name),
        text(&report.tool.version),
        if clock_is_time_only(report) {
            ", on the day of the recording"
        } else {
            ""
        }
    )
}

fn clock_is_time_only(report: &Report) -> bool {
    let day = |t: &Option<String>| t.as_deref().and_then(|t| t.get(..10)).map(str::to_owned);
    day(&report.recording.first_record_at) == day(&report.recording.ended_at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_cells_escape_pipes_newlines_and_markup() {
        assert_eq!(cell("a|b\nc"), "a\\|b<br>c");
        assert_eq!(cell("<script>*x*</script>"), "\\<script>\\*x\\*\\</script>");
        assert_eq!(cell("step 1 -> 0"), "step 1 -> 0");
        assert_eq!(text("# not a heading"), "\\# not a heading");
        assert_eq!(text("> not a quote"), "\\> not a quote");
        assert_eq!(text("12. not a list"), "12\\. not a list");
        assert_eq!(text("a # b 1. c"), "a # b 1. c");
    }

    #[test]
    fn a_fence_is_longer_than_any_backtick_run_inside() {
        let f = fence("sh", &["echo ````".to_owned()]);
        assert!(f.starts_with("`````sh\n"), "{f}");
        assert!(f.ends_with("\n`````\n"), "{f}");
        let f = fence("sh", &["kubectl get rs\nrm -rf /".to_owned()]);
        assert_eq!(f, "```sh\nkubectl get rs rm -rf /\n```\n");
    }
}
