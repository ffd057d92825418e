//! `rollout-forensics rules [ID] [-o table|json|markdown]`: the rules the analyzer applies, from
//! its registry. Without an id, one line per rule; with one, its documentation (what it detects,
//! why it matters, an example). `-o markdown` without an id prints the generated part of
//! docs/rules.md.

use std::io::Write;

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use rf_analyzer::Rule;
use serde::Serialize;

use crate::exit::Exit;

#[derive(Debug, Args)]
pub struct RulesArgs {
    /// A rule's id (`rerender-restart`): print its documentation. Without it, list every rule.
    #[arg(value_name = "ID")]
    pub id: Option<String>,
    /// `table` for a person, `json` for scripts, `markdown` as in docs/rules.md.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = RulesFormat::Table)]
    pub format: RulesFormat,
}

/// Output formats of `rules`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum RulesFormat {
    /// One line per rule; a rule's documentation as written.
    Table,
    /// The id, severities, summary and documentation of each rule.
    Json,
    /// A table of the rules, then a section per rule (the generated part of docs/rules.md).
    Markdown,
}

/// One rule, as `-o json` prints it.
#[derive(Debug, Serialize)]
struct RuleJson {
    id: &'static str,
    /// The severity of its findings (`gitops-health-mismatch` can also report `info`).
    severity: &'static str,
    /// As its documentation says them: `error`, or `info or warning`.
    severities: String,
    summary: String,
    /// What checks it: `analyze` (recordings, `now`, `watch`, `check`), `lint` (rendered
    /// manifests, before the sync) and `lint --live` (rendered manifests against the cluster).
    checked_by: Vec<&'static str>,
    /// Markdown.
    documentation: String,
}

/// What checks `rule`.
fn checked_by(rule: Rule) -> Vec<&'static str> {
    let mut by = vec!["analyze"];
    if rf_analyzer::lint::LINT_RULES.contains(&rule) {
        by.push("lint");
    }
    if rf_analyzer::lint::gate::GATE_RULES.contains(&rule) {
        by.push("lint --live");
    }
    by
}

impl RuleJson {
    fn of(rule: Rule) -> Self {
        RuleJson {
            id: rule.id(),
            severity: rule.severity().as_str(),
            severities: rule.severity_words(),
            summary: rule.summary(),
            checked_by: checked_by(rule),
            documentation: rule.documentation(),
        }
    }
}

pub fn run(args: &RulesArgs, out: &mut dyn Write) -> Result<Exit> {
    let rules: Vec<Rule> = match &args.id {
        None => Rule::ALL.to_vec(),
        Some(id) => match Rule::from_id(id) {
            Some(rule) => vec![rule],
            None => {
                let ids = Rule::ALL.iter().map(|r| r.id().to_owned());
                let nearest = crate::input::nearest_first(id, ids);
                bail!(
                    "no rule {id:?}; the rules, nearest first: {}",
                    crate::input::listing(&nearest)
                );
            }
        },
    };
    match (args.format, &args.id) {
        (RulesFormat::Table, None) => {
            let width = rules.iter().map(|r| r.id().len()).max().unwrap_or(0);
            let sev = rules
                .iter()
                .map(|r| r.severity_words().len())
                .max()
                .unwrap_or(0);
            let by = rules
                .iter()
                .map(|r| checked_by(*r).join(", ").len())
                .max()
                .unwrap_or(0);
            for rule in &rules {
                writeln!(
                    out,
                    "{:width$}  {:sev$}  {:by$}  {}",
                    rule.id(),
                    rule.severity_words(),
                    checked_by(*rule).join(", "),
                    rule.summary()
                )?;
            }
        }
        (RulesFormat::Table, Some(_)) => {
            for rule in &rules {
                out.write_all(rule.documentation().as_bytes())?;
            }
        }
        (RulesFormat::Json, None) => {
            let all: Vec<RuleJson> = rules.iter().map(|&r| RuleJson::of(r)).collect();
            serde_json::to_writer_pretty(&mut *out, &all)?;
            writeln!(out)?;
        }
        (RulesFormat::Json, Some(_)) => {
            serde_json::to_writer_pretty(&mut *out, &RuleJson::of(rules[0]))?;
            writeln!(out)?;
        }
        (RulesFormat::Markdown, id) => {
            out.write_all(markdown(&rules, id.is_none()).as_bytes())?;
        }
    }
    out.flush()?;
    Ok(Exit::Ok)
}

/// A table of `rules` (when `table`), then a section per rule: its documentation, its headings
/// one level down.
fn markdown(rules: &[Rule], table: bool) -> String {
    let mut md = String::new();
    if table {
        md.push_str("| id | severity | checked by | finds |\n|---|---|---|---|\n");
        for rule in rules {
            md.push_str(&format!(
                "| [`{}`](#{}) | {} | {} | {} |\n",
                rule.id(),
                anchor(*rule),
                rule.severity_words(),
                checked_by(*rule).join(", "),
                rule.summary().trim_end_matches('.').replace('|', "\\|")
            ));
        }
    }
    for rule in rules {
        if !md.is_empty() {
            md.push('\n');
        }
        md.push_str(&format!(
            "## `{}` ({})\n\n",
            rule.id(),
            rule.severity_words()
        ));
        let doc = rule.documentation();
        // The first paragraph is the heading's and the table's; the rest goes one level down.
        let body = doc.split_once("\n\n").map_or("", |(_, rest)| rest);
        for line in body.lines() {
            if line.starts_with("# ") {
                md.push_str("##");
            }
            md.push_str(line);
            md.push('\n');
        }
    }
    md
}

/// The anchor GitHub gives the heading `` ## `id` (severity) ``.
pub(crate) fn anchor(rule: Rule) -> String {
    format!("{}-{}", rule.id(), rule.severity_words().replace(' ', "-"))
}
