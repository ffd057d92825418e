//! `rollout-forensics verify FILE... --expect EXPECT.json`: a recording as a regression fixture.
//!
//! The recordings are analyzed exactly as `analyze` does (same input flags), and the findings are
//! compared with those of an expected report, written once by `analyze -o json`. Two findings are
//! the same when their rule, severity and subject (kind, namespace, name) are; messages, times
//! and evidence are not compared, so rewording a summary or a remedy does not break a fixture,
//! while a finding that appears, disappears or changes severity does. Findings are compared as a
//! multiset: three restarts are not one.

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use rf_analyzer::{Finding, Report, SCHEMA_VERSION};
use serde::Deserialize;

use crate::args::{Only, Window};
use crate::commands::analyze::{analyze_files, report_damage};
use crate::exit::Exit;
use crate::input;

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Recording files (.rfr), read as one history in order of their start times.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The expected report: what `analyze -o json` (with the same flags) wrote when the fixture
    /// was made.
    #[arg(long, value_name = "EXPECT.json")]
    pub expect: PathBuf,
    #[command(flatten)]
    pub only: Only,
    #[command(flatten)]
    pub window: Window,
    /// Verify what is readable of a truncated or corrupt recording (the damage is still reported
    /// on stderr).
    #[arg(long)]
    pub partial: bool,
}

/// What identifies a finding in a fixture.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    rule: String,
    severity: String,
    kind: String,
    namespace: String,
    name: String,
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} {} {}/{}",
            self.severity, self.rule, self.kind, self.namespace, self.name
        )
    }
}

impl Key {
    fn of(f: &Finding) -> Self {
        Key {
            rule: f.rule.id().to_owned(),
            severity: f.severity.as_str().to_owned(),
            kind: f.subject.kind.name().to_owned(),
            namespace: f.subject.namespace.clone(),
            name: f.subject.name.clone(),
        }
    }
}

/// The part of a JSON report a fixture needs; every other field is ignored.
#[derive(Debug, Deserialize)]
struct ExpectedReport {
    schema_version: Option<u32>,
    findings: Option<Vec<ExpectedFinding>>,
}

#[derive(Debug, Deserialize)]
struct ExpectedFinding {
    rule: String,
    severity: String,
    subject: ExpectedSubject,
}

#[derive(Debug, Deserialize)]
struct ExpectedSubject {
    kind: String,
    namespace: String,
    name: String,
}

/// Reads the expected findings from a report written by `analyze -o json`.
fn read_expectation(path: &Path) -> Result<Vec<Key>> {
    let context = || format!("invalid expectation {}", path.display());
    let bytes = std::fs::read(path)
        .with_context(|| format!("failed to read expectation {}", path.display()))?;
    let value: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| anyhow::anyhow!("not JSON: {e}"))
        .with_context(context)?;
    if !value.is_object() || value.get("schema_version").is_none() {
        return Err(anyhow::anyhow!(
            "not a rollout-forensics report (no schema_version); write one with `rollout-forensics analyze FILE -o json > EXPECT.json`"
        ))
        .with_context(context);
    }
    let report: ExpectedReport = serde_json::from_value(value)
        .map_err(|e| anyhow::anyhow!("not a rollout-forensics report: {e}"))
        .with_context(context)?;
    match report.schema_version {
        Some(v) if v == SCHEMA_VERSION => {}
        Some(v) => {
            return Err(anyhow::anyhow!(
                "schema_version {v}, this build reads {SCHEMA_VERSION}"
            ))
            .with_context(context);
        }
        None => {
            return Err(anyhow::anyhow!("schema_version is null")).with_context(context);
        }
    }
    let Some(findings) = report.findings else {
        return Err(anyhow::anyhow!(
            "not a rollout-forensics report (no findings array)"
        ))
        .with_context(context);
    };
    Ok(findings
        .into_iter()
        .map(|f| Key {
            rule: f.rule,
            severity: f.severity,
            kind: f.subject.kind,
            namespace: f.subject.namespace,
            name: f.subject.name,
        })
        .collect())
}

fn counts(keys: impl IntoIterator<Item = Key>) -> BTreeMap<Key, usize> {
    let mut m = BTreeMap::new();
    for k in keys {
        *m.entry(k).or_insert(0) += 1;
    }
    m
}

/// The difference between two multisets of findings.
#[derive(Debug, Default, PartialEq, Eq)]
struct Diff {
    /// Expected, not found: key and how many.
    missing: Vec<(Key, usize)>,
    /// Found, not expected.
    unexpected: Vec<(Key, usize)>,
}

impl Diff {
    fn between(expected: Vec<Key>, actual: Vec<Key>) -> Self {
        let expected = counts(expected);
        let actual = counts(actual);
        let mut diff = Diff::default();
        for (k, &n) in &expected {
            let got = actual.get(k).copied().unwrap_or(0);
            if n > got {
                diff.missing.push((k.clone(), n - got));
            }
        }
        for (k, &n) in &actual {
            let want = expected.get(k).copied().unwrap_or(0);
            if n > want {
                diff.unexpected.push((k.clone(), n - want));
            }
        }
        diff
    }

    fn is_empty(&self) -> bool {
        self.missing.is_empty() && self.unexpected.is_empty()
    }

    fn total(list: &[(Key, usize)]) -> usize {
        list.iter().map(|(_, n)| n).sum()
    }

    /// Pairs of a missing and an unexpected finding that differ only in severity.
    fn severity_changes(&self) -> Vec<(&Key, &str)> {
        let mut out = Vec::new();
        for (m, _) in &self.missing {
            for (u, _) in &self.unexpected {
                if (&m.rule, &m.kind, &m.namespace, &m.name)
                    == (&u.rule, &u.kind, &u.namespace, &u.name)
                {
                    out.push((m, u.severity.as_str()));
                }
            }
        }
        out
    }

    fn write(&self, w: &mut dyn Write) -> std::io::Result<()> {
        for (k, n) in &self.missing {
            writeln!(w, "- missing     {n} × {k}")?;
        }
        for (k, n) in &self.unexpected {
            writeln!(w, "+ unexpected  {n} × {k}")?;
        }
        for (k, now) in self.severity_changes() {
            writeln!(
                w,
                "  note: {} {} {}/{} changed severity: {} -> {now}",
                k.rule, k.kind, k.namespace, k.name, k.severity
            )?;
        }
        Ok(())
    }
}

pub fn run(args: &VerifyArgs, out: &mut dyn Write) -> Result<Exit> {
    // Read the expectation first: a wrong --expect is a usage error whatever the recordings say.
    let expected = read_expectation(&args.expect)?;
    let options = input::options(&args.files, &args.only, &args.window, false)?;
    let (report, damage): (Report, _) = analyze_files(&args.files, options, &args.window)?;
    let actual: Vec<Key> = report.findings.iter().map(Key::of).collect();
    let (n_expected, n_actual) = (expected.len(), actual.len());
    let diff = Diff::between(expected, actual);
    if diff.is_empty() {
        writeln!(out, "ok: {n_actual} findings as expected")?;
    } else {
        writeln!(
            out,
            "findings differ from {} (- missing, + unexpected):",
            args.expect.display()
        )?;
        diff.write(out)?;
        writeln!(
            out,
            "{} missing, {} unexpected ({n_expected} expected, {n_actual} found)",
            Diff::total(&diff.missing),
            Diff::total(&diff.unexpected)
        )?;
    }
    out.flush()?;
    if let Some(exit) = report_damage(&damage, args.partial) {
        return Ok(exit);
    }
    if diff.is_empty() {
        Ok(Exit::Ok)
    } else {
        Ok(Exit::Findings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(rule: &str, severity: &str, name: &str) -> Key {
        Key {
            rule: rule.to_owned(),
            severity: severity.to_owned(),
            kind: "Rollout".to_owned(),
            namespace: "payments".to_owned(),
            name: name.to_owned(),
        }
    }

    #[test]
    fn equal_multisets_have_no_difference_whatever_the_order() {
        let a = vec![key("a", "error", "x"), key("b", "warning", "x")];
        let b = vec![key("b", "warning", "x"), key("a", "error", "x")];
        assert!(Diff::between(a, b).is_empty());
    }

    #[test]
    fn a_repeated_finding_counts_each_time() {
        let d = Diff::between(
            vec![key("r", "error", "x"); 3],
            vec![key("r", "error", "x"); 1],
        );
        assert_eq!(d.missing, vec![(key("r", "error", "x"), 2)]);
        assert!(d.unexpected.is_empty());
    }

    #[test]
    fn a_severity_change_is_one_missing_and_one_unexpected_with_a_note() {
        let d = Diff::between(vec![key("r", "warning", "x")], vec![key("r", "error", "x")]);
        assert_eq!(d.missing.len(), 1);
        assert_eq!(d.unexpected.len(), 1);
        let mut out = Vec::new();
        d.write(&mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("changed severity: warning -> error"),
            "{text}"
        );
    }
}
