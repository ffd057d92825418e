//! `analyze -o html`: one self-contained page that shows an incident at a glance.
//!
//! Per rollout, one inline SVG chart on a shared time axis (layout: `docs/reports.md`): finding
//! markers, the current and stable pod-template hash as coloured strips (and the current hash as
//! background bands behind every lane), the phase, the canary step as a step line, one lane per
//! ReplicaSet (replicas as an area, ready as a line) and one per Service and revision (ready
//! endpoint pods, from the timeline's `traffic`). Below: what to run now, and every finding with
//! its proof and commands.
//!
//! The page loads nothing: no fonts, scripts, styles or images from anywhere, so it opens from a
//! mail attachment or an air-gapped laptop. A little inline JavaScript shows a time cursor and
//! copies a finding into the details panel when its marker is clicked; without it, the markers
//! still show their text on hover (SVG `<title>`) and link to the finding.
//!
//! Recordings hold user data, so every string from the report goes through [`esc`]; nothing from
//! the report ever reaches the script or the style sheet. Its size is bounded whatever the input:
//! a lane with more than [`MAX_POINTS`] changes is drawn from its minimum, maximum, first and last
//! value per column of [`BUCKET_PX`] pixels, strips merge segments narrower than a pixel, and the
//! numbers of charts, lanes, markers and listed findings are capped; the page says where.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{self, Write};

use chrono::DateTime;
use rf_analyzer::{Finding, Report, Role, Severity, Subject, Timeline, parse_rfc3339, rfc3339};
use rf_format::Timestamp;

use super::markdown::title;
use super::{count_line, recording_line};

/// Changes drawn exactly per lane; above it a lane is downsampled.
pub const MAX_POINTS: usize = 400;
/// Width of a downsampling column, in chart units.
pub const BUCKET_PX: f64 = 4.0;
/// Rollouts drawn; the others are named.
pub const MAX_CHARTS: usize = 40;
/// ReplicaSet lanes, and Service lanes, per chart.
pub const MAX_LANES: usize = 12;
/// Finding markers per chart.
pub const MAX_MARKERS: usize = 300;
/// Findings listed with their proof.
pub const MAX_FINDINGS: usize = 500;
/// Proof lines listed per finding.
pub const MAX_EVIDENCE: usize = 40;
/// Commands under "What to run now", and how many of them are shown before "more".
pub const MAX_COMMANDS: usize = 60;
const COMMANDS_SHOWN: usize = 8;

/// Chart geometry, in SVG user units.
const WIDTH: f64 = 1240.0;
const X0: f64 = 226.0;
const X1: f64 = 1222.0;
const AXIS_H: f64 = 26.0;
const MARKER_ROW: f64 = 17.0;
const MAX_MARKER_ROWS: usize = 5;
const STRIP_H: f64 = 20.0;
const STEP_H: f64 = 96.0;
const RS_H: f64 = 46.0;
const SVC_H: f64 = 38.0;
const GAP: f64 = 8.0;

/// Colours of pod-template hashes, in order of first appearance (Tableau 10).
const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#9c755f", "#ff9da7", "#edc948",
    "#e15759", "#bab0ac",
];

/// Escapes text for HTML and SVG, in element content and in quoted attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Control characters other than tab and line breaks are not allowed in HTML text.
            c if c.is_control() && c != '\n' && c != '\t' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// Cuts `s` to `max` characters, with an ellipsis.
fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

fn severity_color(s: Severity) -> &'static str {
    match s {
        Severity::Error => "#cf222e",
        Severity::Warning => "#bf8700",
        Severity::Info => "#0969da",
    }
}

fn phase_color(phase: &str) -> &'static str {
    match phase {
        "Healthy" => "#2da44e",
        "Progressing" => "#0969da",
        "Paused" => "#bf8700",
        "Degraded" => "#cf222e",
        _ => "#8c959f",
    }
}

/// A darker shade of a `#rrggbb` colour (for lines over an area of that colour).
fn darken(hex: &str) -> String {
    let c = |i: usize| {
        hex.get(i..i + 2)
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .unwrap_or(0)
    };
    let d = |v: u8| (f64::from(v) * 0.55) as u8;
    format!("#{:02x}{:02x}{:02x}", d(c(1)), d(c(3)), d(c(5)))
}

/// One piece of a chart's time axis: a linear stretch, or a quiet stretch drawn shorter.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Piece {
    t0: i64,
    t1: i64,
    x0: f64,
    x1: f64,
    /// Nothing happens in it and it is drawn shorter than its duration (an axis break).
    broken: bool,
}

/// Maps times to x positions on a chart: linear, except that long quiet stretches (no change,
/// no finding) are cut short and marked as axis breaks, so the minutes after an incident do not
/// squeeze the incident into a corner.
#[derive(Clone, Debug)]
struct Axis {
    t0: i64,
    t1: i64,
    pieces: Vec<Piece>,
    same_day: bool,
}

/// A stretch with no change is quiet when it lasts this share of the span or more...
const QUIET_SHARE: f64 = 0.08;
/// ...and quiet stretches are drawn short when together they take this share of it or more...
const QUIETS_SHARE: f64 = 0.4;
/// ...all of them together as long as this share of the rest.
const BREAKS_SHARE: f64 = 0.3;

impl Axis {
    /// The axis over `times` (any order): quiet stretches longer than their share are shortened.
    fn new(times: &[i64]) -> (Self, bool) {
        let mut times: Vec<i64> = times.to_vec();
        times.sort_unstable();
        times.dedup();
        let t0 = times.first().copied().unwrap_or(0);
        let zero = times.len() < 2;
        if zero {
            times = vec![t0, t0 + 1_000_000_000];
        }
        let t1 = times.last().copied().unwrap_or(t0);
        let gaps: Vec<f64> = times.windows(2).map(|w| (w[1] - w[0]) as f64).collect();
        // Quiet stretches: longer than QUIET_SHARE of the span each, and only when together
        // they take more than QUIETS_SHARE of it. Each is drawn as long as BREAKS_SHARE of the
        // rest, shared among them (never longer than it lasted).
        let span: f64 = gaps.iter().sum();
        let mut sorted = gaps.clone();
        sorted.sort_by(f64::total_cmp);
        let median = sorted.get(sorted.len() / 2).copied().unwrap_or(0.0);
        // Quiet next to the incident's own pace, too: ten times the median time between changes.
        let quiet = |g: f64| g >= QUIET_SHARE * span && g >= 10.0 * median && g > 0.0;
        let quiet_total: f64 = gaps.iter().copied().filter(|&g| quiet(g)).sum();
        let cut = |g: f64| quiet(g) && quiet_total >= QUIETS_SHARE * span;
        let linear = span
            - if quiet_total >= QUIETS_SHARE * span {
                quiet_total
            } else {
                0.0
            };
        let breaks = gaps.iter().filter(|&&g| cut(g)).count().max(1) as f64;
        let broken = BREAKS_SHARE * linear.max(1.0) / breaks;
        let drawn: Vec<(f64, bool)> = gaps
            .iter()
            .map(|&g| {
                if cut(g) {
                    (broken.min(g), true)
                } else {
                    (g, false)
                }
            })
            .collect();
        let total: f64 = drawn.iter().map(|d| d.0).sum::<f64>().max(1.0);
        let mut pieces: Vec<Piece> = Vec::new();
        let mut x = X0;
        for (k, &(d, broken)) in drawn.iter().enumerate() {
            let w = d / total * (X1 - X0);
            let (a, b) = (times[k], times[k + 1]);
            match pieces.last_mut() {
                Some(last) if !last.broken && !broken => {
                    last.t1 = b;
                    last.x1 = x + w;
                }
                _ => pieces.push(Piece {
                    t0: a,
                    t1: b,
                    x0: x,
                    x1: x + w,
                    broken,
                }),
            }
            x += w;
        }
        let day = |t: i64| DateTime::from_timestamp_nanos(t).date_naive();
        (
            Axis {
                t0,
                t1,
                pieces,
                same_day: day(t0) == day(t1),
            },
            zero,
        )
    }

    fn x(&self, t: Timestamp) -> f64 {
        let t = t.0.clamp(self.t0, self.t1);
        let i = self.pieces.partition_point(|p| p.t1 < t);
        match self.pieces.get(i).or(self.pieces.last()) {
            Some(p) if p.t1 > p.t0 => {
                p.x0 + (t - p.t0) as f64 / (p.t1 - p.t0) as f64 * (p.x1 - p.x0)
            }
            Some(p) => p.x0,
            None => X0,
        }
    }

    fn label(&self, t: i64) -> String {
        let dt = DateTime::from_timestamp_nanos(t);
        if self.same_day {
            dt.format("%H:%M:%S").to_string()
        } else {
            dt.format("%m-%d %H:%M").to_string()
        }
    }

    /// Tick times in the linear pieces: round multiples of a step at least ~90 units apart.
    fn ticks(&self) -> Vec<i64> {
        const S: i64 = 1_000_000_000;
        let (time, width) = self
            .pieces
            .iter()
            .filter(|p| !p.broken)
            .fold((0i64, 0.0), |(t, w), p| {
                (t + (p.t1 - p.t0), w + (p.x1 - p.x0))
            });
        let per_unit = if width > 0.0 {
            time as f64 / width
        } else {
            1.0
        };
        let steps = [
            S,
            2 * S,
            5 * S,
            10 * S,
            15 * S,
            30 * S,
            60 * S,
            120 * S,
            300 * S,
            600 * S,
            900 * S,
            1800 * S,
            3600 * S,
            7200 * S,
            3 * 3600 * S,
            6 * 3600 * S,
            12 * 3600 * S,
            86400 * S,
            7 * 86400 * S,
            30 * 86400 * S,
        ];
        let step = steps
            .iter()
            .copied()
            .find(|&s| s as f64 / per_unit >= 90.0)
            .unwrap_or(365 * 86400 * S);
        let mut out: Vec<i64> = Vec::new();
        let mut last_x = f64::MIN;
        for p in self.pieces.iter().filter(|p| !p.broken) {
            let first = p.t0.div_euclid(step) * step + if p.t0 % step == 0 { 0 } else { step };
            for t in (0..200)
                .map(|i| first + i * step)
                .take_while(|t| *t <= p.t1)
            {
                let x = self.x(Timestamp(t));
                if x - last_x >= 70.0 {
                    out.push(t);
                    last_x = x;
                }
            }
        }
        out
    }
}

/// A number for SVG: one decimal at most.
fn n(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r.fract() == 0.0 {
        format!("{r:.0}")
    } else {
        format!("{r:.1}")
    }
}

/// The points of a step function `(x, value)`, at most about 4 per [`BUCKET_PX`] column when
/// there are more than [`MAX_POINTS`]: first, minimum, maximum and last of each column.
fn downsample(points: &[(f64, f64)]) -> (Vec<(f64, f64)>, bool) {
    if points.len() <= MAX_POINTS {
        return (points.to_vec(), false);
    }
    let mut out: Vec<(f64, f64)> = Vec::new();
    let mut i = 0;
    while i < points.len() {
        let bucket = ((points[i].0 - X0) / BUCKET_PX).floor();
        let mut j = i;
        while j < points.len() && ((points[j].0 - X0) / BUCKET_PX).floor() == bucket {
            j += 1;
        }
        let col = &points[i..j];
        let (mut lo, mut hi) = (0, 0);
        for (k, p) in col.iter().enumerate() {
            if p.1 < col[lo].1 {
                lo = k;
            }
            if p.1 > col[hi].1 {
                hi = k;
            }
        }
        let mut keep = vec![0, lo, hi, col.len() - 1];
        keep.sort_unstable();
        keep.dedup();
        out.extend(keep.into_iter().map(|k| col[k]));
        i = j;
    }
    (out, true)
}

/// An SVG path of a step function from `points` (sorted by x), held until `x_end`.
fn step_path(points: &[(f64, f64)], x_end: f64, y: impl Fn(f64) -> f64) -> String {
    let mut d = String::new();
    for (i, &(x, v)) in points.iter().enumerate() {
        if i == 0 {
            let _ = write!(d, "M{},{}", n(x), n(y(v)));
        } else {
            let _ = write!(d, "H{}V{}", n(x), n(y(v)));
        }
    }
    if !points.is_empty() {
        let _ = write!(d, "H{}", n(x_end));
    }
    d
}

/// Segments `(x_start, x_end, value)` of a piecewise-constant value; segments narrower than a
/// pixel are merged into the next when there are many.
fn segments<T: Clone + PartialEq>(points: &[(f64, T)], x_end: f64) -> Vec<(f64, f64, T)> {
    let mut segs: Vec<(f64, f64, T)> = Vec::new();
    for (i, (x, v)) in points.iter().enumerate() {
        let end = points.get(i + 1).map_or(x_end, |p| p.0);
        match segs.last_mut() {
            Some(last) if last.2 == *v => last.1 = end,
            _ => segs.push((*x, end, v.clone())),
        }
    }
    if segs.len() > MAX_POINTS {
        let mut merged: Vec<(f64, f64, T)> = Vec::new();
        for s in segs {
            match merged.last_mut() {
                Some(last) if last.1 - last.0 < 1.0 => {
                    last.1 = s.1;
                    last.2 = s.2;
                }
                _ => merged.push(s),
            }
        }
        return merged;
    }
    segs
}

/// Colours per pod-template hash, in order of first appearance in a timeline.
#[derive(Debug, Default)]
struct Colors {
    by_hash: BTreeMap<String, &'static str>,
    order: Vec<String>,
}

impl Colors {
    fn of(t: &Timeline) -> Self {
        let mut c = Colors::default();
        for e in &t.entries {
            for h in e.pod_hash.iter().chain(e.stable_rs.iter()) {
                c.add(h);
            }
            for r in &e.replicasets {
                c.add(&r.hash);
            }
        }
        for e in &t.traffic {
            for h in e.endpoints.keys() {
                c.add(h);
            }
        }
        c
    }

    fn add(&mut self, h: &str) {
        if h.is_empty() || self.by_hash.contains_key(h) {
            return;
        }
        let i = self.by_hash.len() % PALETTE.len();
        self.by_hash.insert(h.to_owned(), PALETTE[i]);
        self.order.push(h.to_owned());
    }

    fn get(&self, h: &str) -> &'static str {
        self.by_hash.get(h).copied().unwrap_or("#8c959f")
    }
}

/// The axis of a chart: the recording's span, widened to every entry and finding of the rollout,
/// with a break in each long quiet stretch between them.
fn axis(report: &Report, t: &Timeline, findings: &[(usize, &Finding)]) -> (Axis, bool) {
    let s = &report.recording;
    let parse = |v: &Option<String>| v.as_deref().and_then(parse_rfc3339).map(|t| t.0);
    let mut times: Vec<i64> = [parse(&s.first_record_at), parse(&s.ended_at)]
        .into_iter()
        .flatten()
        .collect();
    times.extend(t.entries.iter().map(|e| e.at.0));
    times.extend(t.traffic.iter().map(|e| e.at.0));
    times.extend(findings.iter().map(|(_, f)| f.at.0));
    times.extend(s.gaps.iter().map(|g| g.at.0));
    Axis::new(&times)
}

/// The text a marker shows on hover: rule, summary, proof, commands (bounded).
fn marker_title(i: usize, f: &Finding, axis: &Axis) -> String {
    let mut s = format!(
        "#{} {} {} · {} · {}\n{}",
        i + 1,
        f.severity.as_str().to_uppercase(),
        f.rule.id(),
        f.subject,
        axis.label(f.at.0),
        f.summary
    );
    if !f.evidence.is_empty() {
        s.push_str("\n\nProof:");
        for e in f.evidence.iter().take(6) {
            let _ = write!(
                s,
                "\n  #{} {} {} {}",
                e.seq,
                e.time_words(|t| axis.label(t.0)),
                e.object,
                cut(&e.detail, 160)
            );
        }
        if f.evidence.len() > 6 {
            let _ = write!(s, "\n  … {} more", f.evidence.len() - 6);
        }
    }
    if !f.remedy.commands.is_empty() {
        s.push_str("\n\nRun:");
        for c in f.remedy.commands.iter().take(4) {
            let _ = write!(s, "\n  $ {}", cut(c, 200));
        }
    }
    s.push_str("\n\n(click for the details)");
    esc(&cut(&s, 2400))
}

/// One lane of a chart: a label and what is drawn in it.
struct Lane {
    /// The pod-template hash it shows.
    hash: String,
    label: String,
    sublabel: String,
    sublabel_alert: bool,
    title: String,
    height: f64,
    body: String,
}

/// The per-ReplicaSet series of a timeline: (name, hash) -> points (t, replicas, ready, role).
type RsSeries = Vec<(String, String, Vec<(Timestamp, i64, i64, Role)>)>;

fn replicaset_series(t: &Timeline) -> RsSeries {
    let mut order: Vec<(String, String)> = Vec::new();
    let mut points: BTreeMap<String, Vec<(Timestamp, i64, i64, Role)>> = BTreeMap::new();
    for e in &t.entries {
        for r in &e.replicasets {
            if !points.contains_key(r.name.as_str()) {
                order.push((r.name.to_string(), r.hash.to_string()));
                points.insert(r.name.to_string(), Vec::new());
            }
        }
        // An entry lists the ReplicaSets with replicas or that just changed: one it does not
        // list has none.
        for (name, series) in points.iter_mut() {
            let (replicas, ready, role) = match e.replicasets.iter().find(|r| r.name == name) {
                Some(r) => (r.replicas, r.ready, r.role),
                None => (
                    0,
                    0,
                    series.last().map_or(Role::Other, |&(_, _, _, role)| role),
                ),
            };
            if series
                .last()
                .is_none_or(|&(_, a, b, c)| (a, b, c) != (replicas, ready, role))
            {
                series.push((e.at, replicas, ready, role));
            }
        }
    }
    order
        .into_iter()
        .map(|(name, hash)| {
            let p = points.remove(&name).unwrap_or_default();
            (name, hash, p)
        })
        .collect()
}

fn role_word(r: Role) -> &'static str {
    match r {
        Role::New => "new (current)",
        Role::Stable => "stable",
        Role::Other => "other",
    }
}

/// The lanes of the ReplicaSets and a note on those not drawn.
fn replicaset_lanes(
    t: &Timeline,
    end: Option<&rf_analyzer::RolloutEnd>,
    axis: &Axis,
    colors: &Colors,
    x_end: f64,
) -> (Vec<Lane>, String) {
    let series = replicaset_series(t);
    let mut lanes = Vec::new();
    let mut never = 0;
    let mut over = 0;
    for (name, hash, points) in &series {
        if points.iter().all(|&(_, r, rd, _)| r == 0 && rd == 0) {
            never += 1;
            continue;
        }
        if lanes.len() == MAX_LANES {
            over += 1;
            continue;
        }
        let color = colors.get(hash);
        // Each lane on its own scale, so one pod left running is as visible as five.
        let max = points
            .iter()
            .map(|&(_, r, rd, _)| r.max(rd))
            .max()
            .unwrap_or(0)
            .max(1) as f64;
        let inner = RS_H - 16.0;
        let y = |v: f64| RS_H - 4.0 - v / max * inner;
        let replicas: Vec<(f64, f64)> = points
            .iter()
            .map(|&(at, r, _, _)| (axis.x(at), r as f64))
            .collect();
        let ready: Vec<(f64, f64)> = points
            .iter()
            .map(|&(at, _, rd, _)| (axis.x(at), rd as f64))
            .collect();
        let (replicas, ds1) = downsample(&replicas);
        let (ready, ds2) = downsample(&ready);
        let mut body = String::new();
        let line = step_path(&replicas, x_end, y);
        if let Some(&(first, _)) = replicas.first() {
            let _ = write!(
                body,
                r#"<path class="area" d="{line}V{}H{}Z" fill="{color}" fill-opacity="0.35" stroke="{color}" stroke-width="1.5"/>"#,
                n(y(0.0)),
                n(first)
            );
        }
        let _ = write!(
            body,
            r#"<path class="ready" d="{}" fill="none" stroke="{}" stroke-width="2.5" stroke-dasharray="5 3"/>"#,
            step_path(&ready, x_end, y),
            darken(color)
        );
        // Values at each change, when there is room.
        if !(ds1 || ds2) && points.len() <= 60 {
            let mut last_x = f64::MIN;
            for (i, &(at, r, rd, _)) in points.iter().enumerate() {
                let x = axis.x(at);
                let next = points.get(i + 1).map_or(x_end, |p| axis.x(p.0));
                if next - x >= 26.0 && x - last_x >= 26.0 {
                    let _ = write!(
                        body,
                        r#"<text class="val" x="{}" y="{}">{rd}/{r}</text>"#,
                        n(x + 3.0),
                        n(y(r as f64) - 3.0)
                    );
                    last_x = x;
                }
            }
        }
        let (_, r_end, rd_end, role_end) =
            points
                .last()
                .copied()
                .unwrap_or((Timestamp::default(), 0, 0, Role::Other));
        // The role at the end is the rollout's last status's, not the last one a timeline
        // entry that listed this ReplicaSet gave it.
        let (role_end, current) = match end {
            Some(e) => (e.role(hash), e.pod_hash.as_deref() == Some(hash.as_str())),
            None => (role_end, role_end == Role::New),
        };
        let alert = role_end == Role::Other && r_end > 0;
        let sublabel = if alert {
            format!("other: still {r_end} pod(s) at the end")
        } else if role_end == Role::Stable && current {
            format!("stable (current) · {rd_end}/{r_end} at the end")
        } else {
            format!("{} · {rd_end}/{r_end} at the end", role_word(role_end))
        };
        lanes.push(Lane {
            hash: hash.clone(),
            label: format!("rs {}", cut(name, 30)),
            sublabel,
            sublabel_alert: alert,
            title: format!(
                "ReplicaSet {name} (hash {hash}): replicas (area) and ready (dashed), 0..{max}{}",
                if ds1 || ds2 { "; downsampled" } else { "" }
            ),
            height: RS_H,
            body,
        });
    }
    let mut note = String::new();
    if never > 0 {
        let _ = write!(
            note,
            "{never} ReplicaSet(s) with no pods throughout are not drawn. "
        );
    }
    if over > 0 {
        let _ = write!(
            note,
            "{over} more ReplicaSet(s) not drawn (at most {MAX_LANES} lanes). "
        );
    }
    (lanes, note)
}

/// The lanes of Service endpoints by revision, and a note.
fn service_lanes(t: &Timeline, axis: &Axis, colors: &Colors, x_end: f64) -> (Vec<Lane>, String) {
    // (service, hash) -> points (x, ready endpoint pods)
    let mut series: BTreeMap<(String, String), Vec<(f64, f64)>> = BTreeMap::new();
    let mut services: BTreeMap<&str, Vec<&rf_analyzer::TrafficEntry>> = BTreeMap::new();
    for e in &t.traffic {
        services.entry(e.service.as_str()).or_default().push(e);
    }
    for (svc, entries) in &services {
        let mut hashes: Vec<&str> = entries
            .iter()
            .flat_map(|e| e.endpoints.keys().map(String::as_str))
            .collect();
        // Every revision that was current gets a lane, so one the Service never reached shows
        // as a flat zero beside the revisions it did.
        hashes.extend(t.entries.iter().filter_map(|e| e.pod_hash.as_deref()));
        hashes.sort_unstable();
        hashes.dedup();
        for h in hashes {
            let mut points: Vec<(f64, f64)> = Vec::new();
            for e in entries {
                let count = e.endpoints.get(h).map_or(0, Vec::len) as f64;
                if points.last().is_none_or(|p| p.1 != count) {
                    points.push((axis.x(e.at), count));
                }
            }
            series.insert(((*svc).to_owned(), h.to_owned()), points);
        }
    }
    let max = series
        .values()
        .flat_map(|p| p.iter().map(|v| v.1))
        .fold(1.0, f64::max);
    let mut lanes = Vec::new();
    let mut over = 0;
    for ((svc, hash), points) in &series {
        if lanes.len() == MAX_LANES {
            over += 1;
            continue;
        }
        let color = colors.get(hash);
        let y = |v: f64| SVC_H - 4.0 - v / max * (SVC_H - 10.0);
        let (points, ds) = downsample(points);
        let line = step_path(&points, x_end, y);
        let mut body = String::new();
        if let Some(&(first, _)) = points.first() {
            let _ = write!(
                body,
                r#"<path d="{line}V{}H{}Z" fill="{color}" fill-opacity="0.55" stroke="{color}" stroke-width="1.5"/>"#,
                n(y(0.0)),
                n(first)
            );
        }
        if !ds && points.len() <= 60 {
            let mut last_x = f64::MIN;
            for (i, &(x, v)) in points.iter().enumerate() {
                let next = points.get(i + 1).map_or(x_end, |p| p.0);
                if next - x >= 18.0 && x - last_x >= 18.0 {
                    let _ = write!(
                        body,
                        r#"<text class="val" x="{}" y="{}">{v}</text>"#,
                        n(x + 3.0),
                        n((y(v) - 3.0).max(9.0))
                    );
                    last_x = x;
                }
            }
        }
        let rev = if hash.is_empty() {
            "pods of no known revision".to_owned()
        } else {
            format!("→ {hash}")
        };
        lanes.push(Lane {
            hash: hash.clone(),
            label: format!("svc {}", cut(svc, 30)),
            sublabel: rev,
            sublabel_alert: hash.is_empty(),
            title: format!(
                "Service {svc}: ready endpoint pods of revision {}, 0..{max}{}",
                if hash.is_empty() { "(unknown)" } else { hash },
                if ds { "; downsampled" } else { "" }
            ),
            height: SVC_H,
            body,
        });
    }
    let note = if over > 0 {
        format!("{over} more Service lane(s) not drawn (at most {MAX_LANES}). ")
    } else {
        String::new()
    };
    (lanes, note)
}

/// The height of an analysis lane.
const ANALYSIS_H: f64 = 22.0;

/// One lane of analysis: a dot at each change of an AnalysisRun of the timeline (its start,
/// each measurement, its end), coloured by the phase the change names; hover for its words.
fn analysis_lane(t: &Timeline, axis: &Axis) -> Option<Lane> {
    let entries: Vec<&rf_analyzer::TimelineEntry> = t
        .entries
        .iter()
        .filter(|e| e.source == "AnalysisRun")
        .collect();
    if entries.is_empty() {
        return None;
    }
    let mut body = String::new();
    let mut failed = false;
    for e in entries.iter().take(MAX_POINTS) {
        for c in &e.changes {
            // The phase the change names: a measurement's (`metric M: Failed (...)`) or the run's.
            let word = |w: &str| {
                c.contains(&format!(": {w}"))
                    || c.ends_with(&format!(" {w}"))
                    || c.contains(&format!(" {w}:"))
            };
            let color = if word("Failed") || word("Error") {
                failed = true;
                "#c62828"
            } else if word("Inconclusive") {
                "#ef6c00"
            } else if word("Successful") {
                "#2e7d32"
            } else {
                "#607d8b"
            };
            let _ = write!(
                body,
                r#"<circle cx="{}" cy="{}" r="4" fill="{color}"><title>{}</title></circle>"#,
                n(axis.x(e.at)),
                n(ANALYSIS_H / 2.0),
                esc(&format!("{}: {c}", axis.label(e.at.0)))
            );
        }
    }
    Some(Lane {
        hash: String::new(),
        label: "analysis".to_owned(),
        sublabel: if failed {
            "failed".to_owned()
        } else {
            String::new()
        },
        sublabel_alert: failed,
        title: format!(
            "AnalysisRuns: {} change(s); hover a dot for the run, the metric and the value",
            entries.len()
        ),
        height: ANALYSIS_H,
        body,
    })
}

/// One rollout's chart.
fn chart(
    out: &mut String,
    report: &Report,
    index: usize,
    t: &Timeline,
    findings: &[(usize, &Finding)],
) {
    let (axis, zero) = axis(report, t, findings);
    let colors = Colors::of(t);
    let x_end = X1;
    let mut notes = String::new();
    if zero {
        notes.push_str("The recording spans no time: the axis shows one second. ");
    }
    if t.truncated {
        notes.push_str(
            "The analyzer kept only the first changes of this rollout (the timeline was cut). ",
        );
    }

    // Markers: stacked in rows where they would overlap.
    // A marker carries its rule id beside it (to its left near the right edge) where the row has
    // room; markers that would overlap go to the next row.
    let mut rows_end: Vec<f64> = Vec::new();
    let mut rows_last: Vec<usize> = Vec::new();
    // (finding index, finding, x, row, label: None, or Some(true) right / Some(false) left)
    let mut placed: Vec<(usize, &Finding, f64, usize, Option<bool>)> = Vec::new();
    for &(i, f) in findings.iter().take(MAX_MARKERS) {
        let x = axis.x(f.at);
        let label_w = 12.0 + f.rule.id().len() as f64 * 6.3;
        let right = x + label_w <= X1 + 14.0;
        let (left_edge, right_edge) = if right {
            (x - 8.0, x + label_w)
        } else {
            (x - label_w, x + 8.0)
        };
        let fits = rows_end.iter().position(|&end| end + 4.0 <= left_edge);
        let (row, label) = match fits {
            Some(r) => (r, Some(right)),
            None if rows_end.len() < MAX_MARKER_ROWS => {
                rows_end.push(f64::MIN);
                rows_last.push(usize::MAX);
                (rows_end.len() - 1, Some(right))
            }
            None => {
                // Every row is taken here: the row that frees first, without labels in the way.
                let mut r = 0;
                for (k, end) in rows_end.iter().enumerate() {
                    if *end < rows_end[r] {
                        r = k;
                    }
                }
                if let Some(prev) = placed.get_mut(rows_last[r]) {
                    prev.4 = None;
                }
                (r, None)
            }
        };
        rows_end[row] = if label.is_some() { right_edge } else { x + 8.0 };
        rows_last[row] = placed.len();
        placed.push((i, f, x, row, label));
    }
    if findings.len() > MAX_MARKERS {
        let _ = write!(
            notes,
            "Only the first {MAX_MARKERS} of {} findings are marked. ",
            findings.len()
        );
    }
    let marker_h = (rows_end.len().max(1) as f64) * MARKER_ROW + 4.0;

    // The value strips from the entries.
    let pod: Vec<(f64, String)> = t
        .entries
        .iter()
        .map(|e| {
            (
                axis.x(e.at),
                e.pod_hash.as_deref().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let stable: Vec<(f64, String)> = t
        .entries
        .iter()
        .map(|e| {
            (
                axis.x(e.at),
                e.stable_rs.as_deref().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let phase: Vec<(f64, String)> = t
        .entries
        .iter()
        .map(|e| {
            let mut p = e.phase.as_deref().unwrap_or_default().to_owned();
            if e.abort {
                p.push_str(" (aborted)");
            }
            (axis.x(e.at), p)
        })
        .collect();
    let pod = segments(&pod, x_end);
    let stable = segments(&stable, x_end);
    let phase = segments(&phase, x_end);
    let max_step = t
        .entries
        .iter()
        .map(|e| (e.step_count as i64).max(e.step_index))
        .max()
        .unwrap_or(0)
        .max(1);
    let steps: Vec<(f64, f64)> = {
        let mut v: Vec<(f64, f64)> = Vec::new();
        for e in &t.entries {
            let s = e.step_index as f64;
            if v.last().is_none_or(|p| p.1 != s) {
                v.push((axis.x(e.at), s));
            }
        }
        v
    };
    let paused: Vec<(f64, bool)> = t
        .entries
        .iter()
        .map(|e| (axis.x(e.at), !e.pause.is_empty()))
        .collect();
    let paused = segments(&paused, x_end);
    let end = report.rollouts.iter().find(|e| e.rollout == t.rollout);
    let (rs_lanes, rs_note) = replicaset_lanes(t, end, &axis, &colors, x_end);
    let (svc_lanes, svc_note) = service_lanes(t, &axis, &colors, x_end);
    let analysis = analysis_lane(t, &axis);
    notes.push_str(&rs_note);
    notes.push_str(&svc_note);

    // Vertical layout.
    let y_markers = AXIS_H;
    let y_pod = y_markers + marker_h;
    let y_stable = y_pod + STRIP_H + 2.0;
    let y_phase = y_stable + STRIP_H * 0.7 + 2.0;
    let y_step = y_phase + STRIP_H + GAP;
    let mut y = y_step + STEP_H + GAP;
    let mut lane_y = Vec::new();
    for l in &rs_lanes {
        lane_y.push(y);
        y += l.height + 4.0;
    }
    if !rs_lanes.is_empty() {
        y += 4.0;
    }
    let mut svc_y = Vec::new();
    let svc_empty_y = y;
    if svc_lanes.is_empty() {
        y += 22.0;
    } else {
        for l in &svc_lanes {
            svc_y.push(y);
            y += l.height + 4.0;
        }
    }
    let analysis_y = y;
    if let Some(l) = &analysis {
        y += l.height + 4.0;
    }
    let bottom = y + 2.0;
    let height = bottom + 22.0;

    let _ = write!(
        out,
        r#"<svg class="chart" id="chart-{index}" viewBox="0 0 {w} {h}" width="100%" role="img" aria-label="timeline of {label}" data-pieces="{pieces}" data-same-day="{sd}" preserveAspectRatio="xMinYMin meet">"#,
        w = n(WIDTH),
        h = n(height),
        label = esc(&format!("{}/{}", t.rollout.namespace, t.rollout.name)),
        pieces = axis
            .pieces
            .iter()
            .map(|p| format!("{},{},{},{}", t_ms(p.t0), t_ms(p.t1), n(p.x0), n(p.x1)))
            .collect::<Vec<_>>()
            .join(";"),
        sd = axis.same_day,
    );
    let _ = write!(
        out,
        r#"<title>{}</title>"#,
        esc(&format!(
            "Rollout {}/{}",
            t.rollout.namespace, t.rollout.name
        ))
    );

    // Background bands: the current pod hash behind every lane.
    for (a, b, h) in &pod {
        if h.is_empty() {
            continue;
        }
        let _ = write!(
            out,
            r#"<rect class="band" x="{}" y="{}" width="{}" height="{}" fill="{}" fill-opacity="0.10"/>"#,
            n(*a),
            n(y_pod),
            n((b - a).max(0.5)),
            n(bottom - y_pod),
            colors.get(h)
        );
    }
    // Time axis: ticks and grid lines, top and bottom labels.
    // No tick label under the label of an axis break.
    let near_break = |x: f64| {
        axis.pieces
            .iter()
            .any(|p| p.broken && p.x1 - p.x0 >= 50.0 && x > p.x0 - 40.0 && x < p.x1 + 40.0)
    };
    for tick in axis.ticks() {
        let xf = axis.x(Timestamp(tick));
        if near_break(xf) {
            continue;
        }
        let x = n(xf);
        let label = esc(&axis.label(tick));
        let anchor = if xf > X1 - 30.0 {
            "end"
        } else if xf < X0 + 30.0 {
            "start"
        } else {
            "middle"
        };
        let _ = write!(
            out,
            r#"<line class="grid" x1="{x}" x2="{x}" y1="{}" y2="{}"/><text class="tick" x="{x}" y="16" text-anchor="{anchor}">{label}</text><text class="tick" x="{x}" y="{}" text-anchor="{anchor}">{label}</text>"#,
            n(AXIS_H - 4.0),
            n(bottom),
            n(bottom + 15.0)
        );
    }
    // Axis breaks: quiet stretches drawn shorter than they lasted (drawn over the lanes below).
    let mut breaks = String::new();
    for p in axis.pieces.iter().filter(|p| p.broken) {
        let (a, b) = (p.x0, p.x1);
        let mid = n((a + b) / 2.0);
        let quiet = rf_analyzer::human_duration(p.t1 - p.t0);
        let _ = write!(
            breaks,
            r#"<g class="brk"><title>{}</title><rect x="{}" y="{}" width="{}" height="{}"/><path d="M{},{}l4,-6l4,6M{},{}l4,-6l4,6"/><text x="{mid}" y="14" text-anchor="middle">{}</text></g>"#,
            esc(&format!(
                "{} to {}: nothing changed for {quiet}; this stretch is drawn shorter",
                axis.label(p.t0),
                axis.label(p.t1)
            )),
            n(a),
            n(AXIS_H - 4.0),
            n((b - a).max(0.5)),
            n(bottom - AXIS_H + 4.0),
            n(a + (b - a) / 2.0 - 7.0),
            n(AXIS_H),
            n(a + (b - a) / 2.0 - 1.0),
            n(AXIS_H),
            esc(&if b - a >= 100.0 {
                format!("⋯ {quiet} quiet ⋯")
            } else if b - a >= 50.0 {
                format!("⋯ {quiet} ⋯")
            } else {
                String::new()
            })
        );
    }
    let _ = write!(
        out,
        r#"<line class="axis" x1="{X0}" x2="{X1}" y1="{0}" y2="{0}"/><line class="axis" x1="{X0}" x2="{X1}" y1="{1}" y2="{1}"/>"#,
        n(AXIS_H - 4.0),
        n(bottom)
    );
    // Gaps in the recording.
    for g in &report.recording.gaps {
        let at = Timestamp(g.at.0);
        if at.0 < axis.t0 || at.0 > axis.t1 {
            continue;
        }
        let x = n(axis.x(at));
        let _ = write!(
            out,
            r#"<g class="gap"><title>{}</title><line x1="{x}" x2="{x}" y1="{}" y2="{}"/></g>"#,
            esc(&format!(
                "gap at {}: {} {}: {} (events in it are unknown)",
                axis.label(at.0),
                g.kind,
                g.namespace,
                g.reason
            )),
            n(y_pod),
            n(bottom)
        );
    }

    // Left labels of the strips.
    let label = |out: &mut String, y: f64, h: f64, text: &str, title: &str| {
        let _ = write!(
            out,
            r#"<text class="lbl" x="{}" y="{}" text-anchor="end"><title>{}</title>{}</text>"#,
            n(X0 - 8.0),
            n(y + h / 2.0 + 4.0),
            esc(title),
            esc(text)
        );
    };
    label(
        out,
        y_markers,
        MARKER_ROW,
        "findings",
        "one marker per finding, coloured by severity: hover for the text, click for the details",
    );
    label(
        out,
        y_pod,
        STRIP_H,
        "current pod hash",
        "status.currentPodHash: the pod template the rollout is moving to; the background bands repeat it",
    );
    label(
        out,
        y_stable,
        STRIP_H * 0.7,
        "stable",
        "status.stableRS: the revision that is fully promoted",
    );
    label(out, y_phase, STRIP_H, "phase", "status.phase");

    // Strips.
    let strip = |out: &mut String,
                 y: f64,
                 h: f64,
                 segs: &[(f64, f64, String)],
                 color: &dyn Fn(&str) -> &'static str,
                 what: &str| {
        let titled = segs.len() <= 200;
        for (a, b, v) in segs {
            if v.is_empty() {
                continue;
            }
            let w = (b - a).max(0.5);
            let _ = write!(out, "<g>");
            if titled {
                let _ = write!(out, "<title>{}</title>", esc(&format!("{what} {v}")));
            }
            let _ = write!(
                out,
                r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{}" rx="2"/>"#,
                n(*a),
                n(y),
                n(w),
                n(h),
                color(v)
            );
            let chars = ((w - 6.0) / (h * 0.36)).floor();
            if chars >= 4.0 {
                let _ = write!(
                    out,
                    r#"<text class="seg" x="{}" y="{}" font-size="{}">{}</text>"#,
                    n(a + 4.0),
                    n(y + h * 0.72),
                    n(h * 0.6),
                    esc(&cut(v, chars as usize))
                );
            }
            let _ = write!(out, "</g>");
        }
    };
    let hash_color = |h: &str| colors.get(h);
    strip(out, y_pod, STRIP_H, &pod, &hash_color, "current pod hash");
    strip(out, y_stable, STRIP_H * 0.7, &stable, &hash_color, "stable");
    strip(
        out,
        y_phase,
        STRIP_H,
        &phase,
        &|p: &str| phase_color(p.split(' ').next().unwrap_or(p)),
        "phase",
    );

    // Step lane.
    let step_count = t.entries.last().map_or(0, |e| e.step_count);
    let _ = write!(
        out,
        r#"<g><title>status.currentStepIndex over time (shaded: paused)</title><text class="lbl" x="{x}" y="{}" text-anchor="end">canary step</text><text class="sub" x="{x}" y="{}" text-anchor="end">{}</text></g>"#,
        n(y_step + STEP_H / 2.0 - 2.0),
        n(y_step + STEP_H / 2.0 + 12.0),
        esc(&format!("index, of {step_count} steps")),
        x = n(X0 - 22.0)
    );
    let step_y = |v: f64| y_step + STEP_H - 6.0 - v / max_step as f64 * (STEP_H - 14.0);
    let _ = write!(
        out,
        r#"<rect class="lane" x="{X0}" y="{}" width="{}" height="{}"/>"#,
        n(y_step),
        n(X1 - X0),
        n(STEP_H)
    );
    for (a, b, p) in &paused {
        if *p {
            let _ = write!(
                out,
                r#"<rect class="paused" x="{}" y="{}" width="{}" height="{}"><title>paused</title></rect>"#,
                n(*a),
                n(y_step),
                n((b - a).max(0.5)),
                n(STEP_H)
            );
        }
    }
    let grid_every = (max_step / 8).max(1);
    for s in (0..=max_step).step_by(grid_every as usize) {
        let yy = n(step_y(s as f64));
        let _ = write!(
            out,
            r#"<line class="sgrid" x1="{X0}" x2="{X1}" y1="{yy}" y2="{yy}"/><text class="sval" x="{}" y="{}" text-anchor="end">{s}</text>"#,
            n(X0 - 4.0),
            n(step_y(s as f64) + 3.0)
        );
    }
    let (steps_drawn, steps_ds) = downsample(&steps);
    let _ = write!(
        out,
        r#"<path class="step" d="{}"><title>{}</title></path>"#,
        step_path(&steps_drawn, x_end, step_y),
        esc(&format!(
            "canary step index (0..{max_step}){}",
            if steps_ds { "; downsampled" } else { "" }
        ))
    );
    if !steps_ds && steps_drawn.len() <= 80 {
        let mut last_x = f64::MIN;
        for (i, &(x, v)) in steps_drawn.iter().enumerate() {
            let next = steps_drawn.get(i + 1).map_or(x_end, |p| p.0);
            if x - last_x >= 14.0 && next - x >= 10.0 {
                let _ = write!(
                    out,
                    r#"<text class="stepval" x="{}" y="{}">{}</text>"#,
                    n(x + 3.0),
                    n(step_y(v) - 4.0),
                    v
                );
                last_x = x;
            }
        }
    }

    // ReplicaSet and Service lanes.
    let lane = |out: &mut String, y: f64, l: &Lane| {
        let _ = write!(
            out,
            r#"<g class="lanegroup" transform="translate(0,{})"><title>{}</title><rect class="lane" x="{X0}" y="0" width="{}" height="{}"/><text class="lbl" x="{}" y="{}" text-anchor="end">{}</text><text class="sub{}" x="{}" y="{}" text-anchor="end">{}</text><g transform="translate(0,0)">{}</g></g>"#,
            n(y),
            esc(&l.title),
            n(X1 - X0),
            n(l.height),
            n(X0 - 8.0),
            n(l.height / 2.0 - 1.0),
            esc(&l.label),
            if l.sublabel_alert { " alert" } else { "" },
            n(X0 - 8.0),
            n(l.height / 2.0 + 12.0),
            esc(&l.sublabel),
            l.body
        );
    };
    for (l, y) in rs_lanes.iter().zip(&lane_y) {
        lane(out, *y, l);
    }
    if svc_lanes.is_empty() {
        let _ = write!(
            out,
            r#"<text class="lbl" x="{}" y="{}" text-anchor="end">service endpoints</text><text class="none" x="{}" y="{}">no Service endpoint changes in this recording for this rollout</text>"#,
            n(X0 - 8.0),
            n(svc_empty_y + 15.0),
            n(X0 + 6.0),
            n(svc_empty_y + 15.0)
        );
    } else {
        for (l, y) in svc_lanes.iter().zip(&svc_y) {
            lane(out, *y, l);
        }
    }
    if let Some(l) = &analysis {
        lane(out, analysis_y, l);
    }

    out.push_str(&breaks);

    // End of the recording.
    if let Some(end) = report.recording.ended_at.as_deref().and_then(parse_rfc3339) {
        let x = n(axis.x(end));
        let _ = write!(
            out,
            r#"<g class="end"><title>{}</title><line x1="{x}" x2="{x}" y1="{}" y2="{}"/></g>"#,
            esc(&format!(
                "end of the analysis {}: end-of-recording checks ran here",
                rfc3339(end)
            )),
            n(y_pod),
            n(bottom)
        );
    }

    // Markers last, on top.
    for (i, f, x, row, labelled) in &placed {
        let cy = y_markers + (*row as f64 + 0.5) * MARKER_ROW;
        let color = severity_color(f.severity);
        let _ = write!(
            out,
            r##"<a href="#f{num}" class="mk" data-f="f{num}" data-chart="{index}" tabindex="0"><title>{title}</title><line x1="{x}" x2="{x}" y1="{y1}" y2="{y2}" stroke="{color}"/><circle cx="{x}" cy="{cy}" r="7.5" fill="{color}"/><text x="{x}" y="{ty}" text-anchor="middle">{num}</text>{label}</a>"##,
            label = match labelled {
                Some(right) => format!(
                    r#"<text class="rule sev-{}" x="{}" y="{}" text-anchor="{}">{}</text>"#,
                    f.severity.as_str(),
                    n(if *right { x + 10.0 } else { x - 10.0 }),
                    n(cy + 4.0),
                    if *right { "start" } else { "end" },
                    esc(f.rule.id())
                ),
                None => String::new(),
            },
            num = i + 1,
            title = marker_title(*i, f, &axis),
            x = n(*x),
            y1 = n(cy + 7.5),
            y2 = n(bottom),
            cy = n(cy),
            ty = n(cy + 3.5),
        );
    }
    // The time cursor (moved by the script).
    let _ = write!(
        out,
        r#"<g class="cursor" visibility="hidden"><line x1="0" x2="0" y1="{}" y2="{}"/><rect x="-30" y="{}" width="60" height="15" rx="3"/><text x="0" y="{}" text-anchor="middle"></text></g>"#,
        n(AXIS_H - 4.0),
        n(bottom),
        n(bottom + 3.0),
        n(bottom + 14.0)
    );
    out.push_str("</svg>\n");

    // Legend and notes.
    out.push_str(r#"<div class="legend">"#);
    let used: std::collections::BTreeSet<&str> = pod
        .iter()
        .chain(stable.iter())
        .map(|s| s.2.as_str())
        .chain(
            rs_lanes
                .iter()
                .chain(svc_lanes.iter())
                .map(|l| l.hash.as_str()),
        )
        .collect();
    for h in colors.order.iter().filter(|h| used.contains(h.as_str())) {
        let c = colors.get(h);
        let _ = write!(
            out,
            r#"<span><i style="background:{c}"></i>{}</span>"#,
            esc(h)
        );
    }
    out.push_str(
        r#"<span class="key"><i class="k-area"></i>replicas</span><span class="key"><i class="k-ready"></i>ready</span><span class="key"><i class="k-paused"></i>paused</span>"#,
    );
    for s in [Severity::Error, Severity::Warning, Severity::Info] {
        let _ = write!(
            out,
            r#"<span class="key"><i class="dot" style="background:{}"></i>{}</span>"#,
            severity_color(s),
            s.as_str()
        );
    }
    out.push_str("</div>\n");
    let downsampled = out.contains("; downsampled");
    if downsampled {
        let _ = write!(
            notes,
            "Lanes with more than {MAX_POINTS} changes are drawn from the first, lowest, highest and last value of each {BUCKET_PX}-unit column (hover a lane to see which). "
        );
    }
    if !notes.is_empty() {
        let _ = write!(out, r#"<p class="note">{}</p>"#, esc(notes.trim()));
    }
}

fn t_ms(nanos: i64) -> i64 {
    nanos.div_euclid(1_000_000)
}

fn subject_line(s: &Subject) -> String {
    format!("{} {}/{}", s.kind, s.namespace, s.name)
}

fn finding_article(out: &mut String, i: usize, f: &Finding, axis_label: &dyn Fn(i64) -> String) {
    let sev = f.severity.as_str();
    let _ = write!(
        out,
        r#"<article class="finding sev-{sev}" id="f{num}"><h3><span class="num">{num}</span><span class="badge sev-{sev}">{SEV}</span> <code>{rule}</code> <span class="subj">{subj}</span> <span class="time">{time}</span></h3><p class="summary">{summary}</p>"#,
        num = i + 1,
        SEV = sev.to_uppercase(),
        rule = esc(f.rule.id()),
        subj = esc(&subject_line(&f.subject)),
        time = esc(&axis_label(f.at.0)),
        summary = esc(&f.summary)
    );
    if !f.explanation.is_empty() {
        let _ = write!(out, r#"<p><b>Why.</b> {}</p>"#, esc(&f.explanation));
    }
    if let Some(r) = &f.reconstructed {
        out.push_str(r#"<div class="reconstructed"><p><span class="badge mark-reconstructed">RECONSTRUCTED</span> from what the cluster kept, not seen in the recording:</p><ul>"#);
        for line in &r.from {
            let _ = write!(out, "<li>{}</li>", esc(line));
        }
        out.push_str("</ul>");
        if !r.unknown.is_empty() {
            out.push_str("<p>Cannot be known from it:</p><ul>");
            for line in &r.unknown {
                let _ = write!(out, "<li>{}</li>", esc(line));
            }
            out.push_str("</ul>");
        }
        out.push_str("</div>");
    }
    if !f.evidence.is_empty() {
        out.push_str(r#"<table class="evidence"><thead><tr><th>time</th><th>#</th><th>object</th><th>detail</th></tr></thead><tbody>"#);
        for e in f.evidence.iter().take(MAX_EVIDENCE) {
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&e.time_words(|t| axis_label(t.0))),
                if e.file > 0 {
                    format!("{}:{}", e.file, e.seq)
                } else {
                    e.seq.to_string()
                },
                esc(&subject_line(&e.object)),
                esc(&e.detail)
            );
        }
        out.push_str("</tbody></table>");
        if f.evidence.len() > MAX_EVIDENCE {
            let _ = write!(
                out,
                r#"<p class="note">{} more proof lines: <code>analyze -o json</code> has them all.</p>"#,
                f.evidence.len() - MAX_EVIDENCE
            );
        }
    }
    if let Some(r) = &f.resolved {
        let _ = write!(
            out,
            r#"<p class="resolved"><b>Now.</b> Nothing to run: resolved at {}: {}. The advice at the time was: {}</p>"#,
            esc(&axis_label(r.at.0)),
            esc(&r.how),
            esc(&f.remedy.summary)
        );
    } else if !f.remedy.summary.is_empty() {
        let _ = write!(out, r#"<p><b>Now.</b> {}</p>"#, esc(&f.remedy.summary));
    }
    if f.resolved.is_none() && !f.remedy.commands.is_empty() {
        out.push_str("<pre class=\"cmd\">");
        for c in &f.remedy.commands {
            let _ = writeln!(out, "<code>$ {}</code>", esc(c));
        }
        out.push_str("</pre>");
    }
    if f.resolved.is_none() && !f.remedy.decisions.is_empty() {
        let _ = write!(out, "<p><b>{}</b></p>", esc(super::DECISION));
        out.push_str("<pre class=\"cmd\">");
        for c in &f.remedy.decisions {
            let _ = writeln!(out, "<code>$ {}</code>", esc(c));
        }
        out.push_str("</pre>");
    }
    if !f.remedy.prevention.is_empty() {
        let _ = write!(
            out,
            r#"<p><b>Prevent.</b> {}</p>"#,
            esc(&f.remedy.prevention)
        );
    }
    out.push_str("</article>\n");
}

const STYLE: &str = r#"
:root{--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--bg:#fff;--soft:#f6f8fa}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--fg);background:var(--bg)}
main{max-width:1320px;margin:0 auto;padding:18px 24px 40px}
h1{font-size:22px;margin:0 0 4px}
h2{font-size:18px;margin:26px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{font-size:15px;margin:0 0 6px}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;font-size:12.5px}
.meta{color:var(--muted);margin:0;white-space:pre-line}
.counts{margin:8px 0 0;display:flex;gap:8px;flex-wrap:wrap}
.badge{display:inline-block;border-radius:10px;padding:1px 8px;color:#fff;font-size:12px;font-weight:600;vertical-align:1px}
.sev-error.badge,.badge.sev-error{background:#cf222e}.badge.sev-warning{background:#bf8700}.badge.sev-info{background:#0969da}
.badge.mark-reconstructed{background:#6e7781}.reconstructed{border-left:3px solid #6e7781;padding-left:8px}
.ok{background:#2da44e}.bad{background:#cf222e}
.run{background:var(--soft);border:1px solid var(--line);border-radius:6px;padding:8px 12px;margin-top:12px}
.run pre{margin:4px 0 0;white-space:pre-wrap}
.run .why{color:var(--muted)}
.run summary{cursor:pointer;color:var(--muted);font-size:12.5px}
section.rollout{margin-top:8px}
svg.chart{display:block;background:#fff;border:1px solid var(--line);border-radius:6px;font-family:system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif;user-select:none}
svg .tick{font-size:11px;fill:var(--muted)}
svg .grid{stroke:#eaeef2;stroke-width:1}
svg .axis{stroke:#afb8c1;stroke-width:1}
svg .lbl{font-size:12.5px;fill:var(--fg);font-weight:600}
svg .sub{font-size:11px;fill:var(--muted)}
svg .sub.alert{fill:#cf222e;font-weight:600}
svg .seg{fill:#fff;font-weight:600;font-family:ui-monospace,Menlo,Consolas,monospace;paint-order:stroke;stroke:rgba(0,0,0,.25);stroke-width:2px}
svg .lane{fill:#fff;fill-opacity:.55;stroke:#d8dee4;stroke-width:1}
svg .paused{fill:#bf8700;fill-opacity:.16}
svg .sgrid{stroke:#eaeef2;stroke-dasharray:2 3}
svg .sval{font-size:10px;fill:var(--muted)}
svg .step{fill:none;stroke:#1f2328;stroke-width:3;stroke-linejoin:round}
svg .stepval{font-size:11px;font-weight:700;fill:#1f2328}
svg .val{font-size:10.5px;fill:#1f2328;font-weight:600}
svg .none{font-size:12px;fill:var(--muted);font-style:italic}
svg .gap line{stroke:#8c959f;stroke-width:6;stroke-opacity:.35}
svg .end line{stroke:#59636e;stroke-width:1.5;stroke-dasharray:6 3}
svg .mk{cursor:pointer}
svg .mk line{stroke-width:1.5;stroke-dasharray:3 3;stroke-opacity:.75}
svg .mk circle{stroke:#fff;stroke-width:1.5}
svg .mk text{font-size:10px;font-weight:700;fill:#fff;pointer-events:none}
svg .mk text.rule{font-size:11.5px;font-weight:600;pointer-events:auto}
svg .mk text.sev-error{fill:#cf222e}svg .mk text.sev-warning{fill:#9a6700}svg .mk text.sev-info{fill:#0969da}
svg .brk rect{fill:#f6f8fa;fill-opacity:.7}
svg .brk path{fill:none;stroke:#8c959f;stroke-width:1.5}
svg .brk text{font-size:11px;fill:var(--muted);font-style:italic}
svg .mk:hover circle,svg .mk:focus circle,svg .mk.sel circle{stroke:#1f2328;stroke-width:2.5}
svg .mk:hover line,svg .mk.sel line{stroke-width:2.5;stroke-dasharray:none;stroke-opacity:1}
svg .cursor line{stroke:#1f2328;stroke-opacity:.4;pointer-events:none}
svg .cursor rect{fill:#1f2328}
svg .cursor text{fill:#fff;font-size:11px}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;margin:6px 2px;color:var(--muted);font-size:12.5px}
.legend i{display:inline-block;width:12px;height:12px;border-radius:2px;margin-right:5px;vertical-align:-1px}
.legend span:not(.key){font-family:ui-monospace,Menlo,Consolas,monospace;color:var(--fg)}
.legend .k-area{background:#4e79a759;border:1.5px solid #4e79a7}
.legend .k-ready{border-top:2.5px dashed #2c4a6b;height:0;margin-bottom:4px}
.legend .k-paused{background:#bf870029}
.legend .dot{border-radius:50%}
.details{border:1px solid var(--line);border-left:4px solid #8c959f;border-radius:6px;padding:10px 14px;margin:8px 0 4px;background:var(--soft)}
.details.empty{color:var(--muted);font-style:italic}
.note{color:var(--muted);font-size:12.5px;margin:4px 2px}
article.finding{border:1px solid var(--line);border-left:4px solid #8c959f;border-radius:6px;padding:10px 14px;margin:10px 0}
article.sev-error,.details.sev-error{border-left-color:#cf222e}
article.sev-warning,.details.sev-warning{border-left-color:#bf8700}
article.sev-info,.details.sev-info{border-left-color:#0969da}
article:target{box-shadow:0 0 0 3px #0969da55}
.num{display:inline-block;min-width:22px;text-align:center;border-radius:11px;background:#1f2328;color:#fff;font-size:12px;margin-right:6px;padding:0 4px}
.subj{font-weight:400}.time{color:var(--muted);font-weight:400}
.summary{font-weight:600}
table{border-collapse:collapse;margin:6px 0;width:100%}
th,td{border:1px solid var(--line);padding:3px 7px;text-align:left;vertical-align:top;font-size:12.5px}
th{background:var(--soft)}
td:nth-child(1),td:nth-child(2){white-space:nowrap;font-family:ui-monospace,Menlo,Consolas,monospace}
pre.cmd{background:#1f2328;color:#f0f3f6;border-radius:6px;padding:8px 12px;white-space:pre-wrap;overflow-wrap:anywhere}
footer{color:var(--muted);font-size:12px;margin-top:30px;border-top:1px solid var(--line);padding-top:8px}
"#;

/// The page's only script: a time cursor over each chart and the details panel. It reads only
/// the page's own elements; nothing from the report is in it.
const SCRIPT: &str = r#"
(function(){
  function fmt(ms, sameDay){
    var s = new Date(ms).toISOString();
    return sameDay ? s.slice(11,19) : s.slice(5,10)+' '+s.slice(11,16);
  }
  document.querySelectorAll('svg.chart').forEach(function(svg){
    var cur = svg.querySelector('.cursor');
    var pieces = svg.dataset.pieces.split(';').map(function(s){ return s.split(',').map(Number); });
    var same = svg.dataset.sameDay === 'true';
    svg.addEventListener('mousemove', function(ev){
      var m = svg.getScreenCTM(); if(!m) return;
      var p = svg.createSVGPoint(); p.x = ev.clientX; p.y = ev.clientY;
      var q = p.matrixTransform(m.inverse());
      var hit = pieces.filter(function(pc){ return q.x >= pc[2] && q.x <= pc[3]; })[0];
      if(!hit){ cur.setAttribute('visibility','hidden'); return; }
      var t = hit[3] > hit[2] ? hit[0] + (q.x-hit[2])/(hit[3]-hit[2])*(hit[1]-hit[0]) : hit[0];
      cur.setAttribute('visibility','visible');
      cur.setAttribute('transform','translate('+q.x+',0)');
      cur.querySelector('text').textContent = fmt(t, same);
    });
    svg.addEventListener('mouseleave', function(){ cur.setAttribute('visibility','hidden'); });
  });
  function show(mk){
    var id = mk.getAttribute('data-f'), chart = mk.getAttribute('data-chart');
    var src = document.getElementById(id), panel = document.getElementById('details-'+chart);
    if(!src || !panel) return;
    panel.replaceChildren.apply(panel, Array.prototype.map.call(src.childNodes, function(n){ return n.cloneNode(true); }));
    panel.className = 'details ' + (src.className.match(/sev-\w+/)||[''])[0];
    document.querySelectorAll('.mk.sel').forEach(function(m){ m.classList.remove('sel'); });
    mk.classList.add('sel');
  }
  document.querySelectorAll('.mk').forEach(function(mk){
    mk.addEventListener('click', function(ev){ ev.preventDefault(); show(mk); });
    mk.addEventListener('keydown', function(ev){ if(ev.key==='Enter'||ev.key===' '){ ev.preventDefault(); show(mk); } });
  });
})();
"#;

/// Writes the report as one self-contained HTML page.
pub fn write(w: &mut dyn Write, report: &Report) -> io::Result<()> {
    let mut out = String::with_capacity(64 * 1024);
    let s = &report.recording;
    let title = title(report);
    let counts = count_line(&report.findings);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><meta name=\"generator\" content=\"{} {}\"><title>{}{}</title><style>{STYLE}</style></head>\n<body><main>\n",
        esc(&report.tool.name),
        esc(&report.tool.version),
        esc(&title),
        esc(&if counts.is_empty() {
            String::new()
        } else {
            format!(" — {counts}")
        })
    );
    let _ = write!(
        out,
        "<header><h1>{}</h1><p class=\"meta\">{}</p><div class=\"counts\">",
        esc(&title),
        esc(&recording_line(s))
    );
    for sev in [Severity::Error, Severity::Warning, Severity::Info] {
        let k = report.findings.iter().filter(|f| f.severity == sev).count();
        if k > 0 {
            let _ = write!(
                out,
                r#"<span class="badge sev-{0}">{k} {0}{1}</span>"#,
                sev.as_str(),
                if k == 1 || sev == Severity::Info {
                    ""
                } else {
                    "s"
                }
            );
        }
    }
    if report.findings.is_empty() {
        out.push_str(r#"<span class="badge ok">no findings</span>"#);
    }
    let _ = write!(
        out,
        r#"<span class="badge {}">{}</span>"#,
        if s.complete { "ok" } else { "bad" },
        if s.complete {
            "complete recording".to_owned()
        } else if s.gaps.is_empty() {
            "incomplete recording".to_owned()
        } else {
            format!("incomplete: {} gap(s)", s.gaps.len())
        }
    );
    out.push_str("</div>");
    for g in &s.gaps {
        let _ = write!(
            out,
            r#"<p class="note">gap at {} in {} {}: {} (events in it are unknown)</p>"#,
            esc(&rfc3339(g.at)),
            esc(&g.kind),
            esc(if g.namespace.is_empty() {
                "(all namespaces)"
            } else {
                &g.namespace
            }),
            esc(&g.reason)
        );
    }
    for warning in &s.warnings {
        let _ = write!(out, r#"<p class="note">warning: {}</p>"#, esc(warning));
    }
    for note in &s.undecided {
        let _ = write!(out, r#"<p class="note">not decided: {}</p>"#, esc(note));
    }
    for ns in &s.empty_namespaces {
        let _ = write!(
            out,
            r#"<p class="note">{}</p>"#,
            esc(&super::empty_namespace(ns))
        );
    }
    for note in &s.before {
        let _ = write!(
            out,
            r#"<p class="note">before the recording: {}</p>"#,
            esc(note)
        );
    }
    // What to run now: every command, errors first, without repeats; the first few shown, the
    // rest one click away.
    let mut ordered: Vec<(usize, &Finding)> = report
        .findings
        .iter()
        .enumerate()
        .filter(|(_, f)| f.resolved.is_none())
        .collect();
    ordered.sort_by_key(|(_, f)| std::cmp::Reverse(f.severity));
    let mut seen: Vec<&str> = Vec::new();
    let mut lines: Vec<String> = Vec::new();
    for (i, f) in ordered {
        for c in &f.remedy.commands {
            if !seen.contains(&c.as_str()) && seen.len() < MAX_COMMANDS {
                seen.push(c);
                lines.push(format!(
                    "<code>$ {}</code>   <span class=\"why\"># {} (#{})</span>\n",
                    esc(c),
                    esc(f.rule.id()),
                    i + 1
                ));
            }
        }
    }
    if !lines.is_empty() {
        let shown = lines.len().min(COMMANDS_SHOWN);
        let _ = write!(
            out,
            "<div class=\"run\"><b>What to run now</b><pre>{}</pre>",
            lines[..shown].concat()
        );
        if lines.len() > shown {
            let _ = write!(
                out,
                "<details><summary>{} more commands</summary><pre>{}</pre></details>",
                lines.len() - shown,
                lines[shown..].concat()
            );
        }
        out.push_str("</div>");
    }
    out.push_str("</header>\n");

    let axis_label = {
        let day = |t: &Option<String>| t.as_deref().and_then(|t| t.get(..10)).map(str::to_owned);
        let same_day = day(&s.first_record_at) == day(&s.ended_at);
        move |t: i64| {
            let full = rfc3339(Timestamp(t));
            if same_day {
                full.get(11..)
                    .map(|x| x.trim_end_matches('Z').to_owned())
                    .unwrap_or(full)
            } else {
                full
            }
        }
    };

    if report.timelines.is_empty() {
        out.push_str(r#"<p class="note">No rollout timelines in this report: the recording holds no Rollout (or none matched <code>--rollout</code>).</p>"#);
    }
    for (index, t) in report.timelines.iter().enumerate() {
        let findings: Vec<(usize, &Finding)> = report
            .findings
            .iter()
            .enumerate()
            .filter(|(_, f)| f.rollout == t.rollout)
            .collect();
        let _ = write!(
            out,
            r#"<section class="rollout" id="rollout-{index}"><h2>Rollout {}</h2>"#,
            esc(&format!("{}/{}", t.rollout.namespace, t.rollout.name))
        );
        if let Some(e) = report.rollouts.iter().find(|e| e.rollout == t.rollout) {
            let _ = write!(
                out,
                r#"<p class="end"><b>At the end ({}).</b> {}{}</p>"#,
                esc(&axis_label(e.at.0)),
                esc(&e.describe()),
                esc(&e
                    .pods()
                    .iter()
                    .map(|p| format!(" · rs {p}"))
                    .chain(
                        e.applications
                            .iter()
                            .map(|a| format!(" · {}", a.describe()))
                    )
                    .collect::<String>())
            );
        }
        if index >= MAX_CHARTS {
            let _ = write!(
                out,
                r#"<p class="note">Not drawn: at most {MAX_CHARTS} charts per page (use <code>--rollout</code>). {} change(s), {} finding(s).</p></section>"#,
                t.entries.len(),
                findings.len()
            );
            continue;
        }
        let _ = write!(
            out,
            r#"<p class="note">{} change(s), {} endpoint change(s), {} finding(s). Hover a marker for its finding, click it for the details below the chart.</p>"#,
            t.entries.len(),
            t.traffic.len(),
            findings.len()
        );
        chart(&mut out, report, index, t, &findings);
        let _ = write!(
            out,
            r#"<div class="details empty" id="details-{index}" aria-live="polite">Click a marker to see its finding here.</div></section>"#
        );
        out.push('\n');
    }

    out.push_str("<section id=\"findings\"><h2>Findings</h2>\n");
    if report.findings.is_empty() {
        out.push_str("<p>No findings: nothing in this recording matches a known failure.</p>");
    }
    for (i, f) in report.findings.iter().enumerate().take(MAX_FINDINGS) {
        finding_article(&mut out, i, f, &axis_label);
    }
    if report.findings.len() > MAX_FINDINGS {
        let _ = write!(
            out,
            r#"<p class="note">{} more findings are not listed (at most {MAX_FINDINGS}): <code>analyze -o json</code> has them all.</p>"#,
            report.findings.len() - MAX_FINDINGS
        );
    }
    out.push_str("</section>\n");
    let _ = write!(
        out,
        "<footer>Written by {} {} (<code>analyze -o html</code>). Times are UTC. This page loads nothing from the network. Layout: docs/reports.md in the rollout-forensics repository.</footer>\n</main><script>{SCRIPT}</script></body></html>\n",
        esc(&report.tool.name),
        esc(&report.tool.version)
    );
    w.write_all(out.as_bytes())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use rf_analyzer::{
        Evidence, RecordingSummary, Remedy, ReplicaSetState, Rule, TimelineEntry, Tool,
        TrafficEntry,
    };
    use rf_format::Kind;

    use super::*;

    const S: i64 = 1_000_000_000;
    /// 2026-03-14T13:00:00Z
    const T0: i64 = 1_773_493_200;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_unix_seconds(T0 + secs)
    }

    fn rollout(name: &str) -> Subject {
        Subject::new(Kind::Rollout, "payments", name)
    }

    fn entry(secs: i64, hash: &str, step: i64, rs: &[(&str, i64, i64)]) -> TimelineEntry {
        TimelineEntry {
            at: at(secs),
            file: 0,
            seq: secs as u64 + 1,
            source: "Rollout".to_owned(),
            changes: vec![format!("step -> {step}")],
            actor: None,
            generation: Some(1),
            observed_generation: None,
            pod_hash: Some(hash.into()),
            stable_rs: Some("aaaa".into()),
            step_index: step,
            step_count: 4,
            phase: Some("Progressing".into()),
            pause: Vec::new(),
            abort: false,
            message: None,
            replicasets: rs
                .iter()
                .map(|&(h, replicas, ready)| ReplicaSetState {
                    name: format!("app-{h}").into(),
                    hash: h.into(),
                    role: if h == hash { Role::New } else { Role::Other },
                    replicas,
                    ready,
                })
                .collect(),
        }
    }

    fn finding(name: &str, secs: i64, summary: &str) -> Finding {
        Finding {
            rule: Rule::RerenderRestart,
            severity: Severity::Error,
            subject: rollout(name),
            rollout: rollout(name),
            at: at(secs),
            summary: summary.to_owned(),
            explanation: "why".to_owned(),
            evidence: vec![Evidence {
                file: 0,
                seq: 7,
                at: at(secs),
                object: rollout(name),
                detail: "detail & more".to_owned(),
                listed: false,
            }],
            remedy: Remedy {
                summary: "now".to_owned(),
                commands: vec![format!("kubectl argo rollouts get rollout {name}")],
                decisions: Vec::new(),
                prevention: "prevent".to_owned(),
            },
            resolved: None,
            reconstructed: None,
            window: None,
        }
    }

    fn report(timelines: Vec<Timeline>, findings: Vec<Finding>, span: i64) -> Report {
        Report {
            schema_version: 1,
            tool: Tool {
                name: "rollout-forensics".to_owned(),
                version: "0.1.0".to_owned(),
            },
            recording: RecordingSummary {
                first_record_at: Some(rfc3339(at(0))),
                last_record_at: Some(rfc3339(at(span))),
                ended_at: Some(rfc3339(at(span))),
                span_seconds: span as f64,
                records: 10,
                complete: true,
                ..RecordingSummary::default()
            },
            findings,
            timelines,
            rollouts: Vec::new(),
        }
    }

    fn html(r: &Report) -> String {
        let mut out = Vec::new();
        write(&mut out, r).unwrap();
        String::from_utf8(out).unwrap()
    }

    fn traffic(secs: i64, service: &str, by_hash: &[(&str, usize)]) -> TrafficEntry {
        TrafficEntry {
            at: at(secs),
            file: 0,
            seq: secs as u64 + 100,
            service: service.to_owned(),
            endpoints: by_hash
                .iter()
                .map(|&(h, k)| {
                    (
                        h.to_owned(),
                        (0..k).map(|i| format!("app-{h}-{i}")).collect(),
                    )
                })
                .collect::<BTreeMap<_, _>>(),
        }
    }

    #[test]
    fn analysis_runs_get_a_lane_with_a_dot_per_change_coloured_by_phase() {
        let run = |secs: i64, change: &str| {
            let mut e = entry(secs, "bbbb", 1, &[("aaaa", 4, 4), ("bbbb", 1, 1)]);
            e.source = "AnalysisRun".to_owned();
            e.changes = vec![change.to_owned()];
            e
        };
        let t = Timeline {
            rollout: rollout("app"),
            entries: vec![
                entry(0, "aaaa", 4, &[("aaaa", 5, 5)]),
                run(
                    10,
                    "AnalysisRun app-bbbb-2-1 (Step analysis) of revision bbbb: metric ok (web GET http://m/ok)",
                ),
                run(12, "app-bbbb-2-1 metric ok: Successful (true)"),
                run(14, "app-bbbb-2-1 metric ok: Failed (false)"),
                run(
                    14,
                    "app-bbbb-2-1 Failed: metric ok <&> Failed by successCondition result == true",
                ),
            ],
            traffic: Vec::new(),
            truncated: false,
        };
        let page = html(&report(vec![t], Vec::new(), 60));
        assert!(page.contains(">analysis<"), "{page}");
        assert_eq!(page.matches(r##"fill="#2e7d32""##).count(), 1);
        assert_eq!(page.matches(r##"fill="#c62828""##).count(), 2);
        assert!(page.contains("metric ok &lt;&amp;&gt; Failed"), "escaped");
        // Without AnalysisRuns, no lane.
        let t = Timeline {
            rollout: rollout("app"),
            entries: vec![entry(0, "aaaa", 4, &[("aaaa", 5, 5)])],
            traffic: Vec::new(),
            truncated: false,
        };
        assert!(!html(&report(vec![t], Vec::new(), 60)).contains(">analysis<"));
    }

    #[test]
    fn service_endpoints_get_one_lane_per_service_and_revision() {
        let t = Timeline {
            rollout: rollout("app"),
            entries: vec![
                entry(0, "aaaa", 4, &[("aaaa", 5, 5)]),
                entry(10, "bbbb", 0, &[("aaaa", 5, 5), ("bbbb", 1, 0)]),
                entry(20, "bbbb", 1, &[("aaaa", 4, 4), ("bbbb", 1, 1)]),
            ],
            traffic: vec![
                traffic(0, "app-stable", &[("aaaa", 5)]),
                traffic(21, "app-canary", &[("bbbb", 1)]),
                traffic(22, "app-stable", &[("aaaa", 4), ("", 1)]),
            ],
            truncated: false,
        };
        let page = html(&report(vec![t], vec![finding("app", 10, "restart")], 60));
        assert_eq!(page.matches("<svg").count(), 1);
        assert!(page.contains("svc app-stable"), "{page}");
        assert!(page.contains("svc app-canary"));
        assert!(page.contains("→ bbbb"));
        assert!(page.contains("pods of no known revision"));
        // app-stable: aaaa, "" and bbbb (current at 10 s, never in its endpoints: a flat zero);
        // app-canary: bbbb and aaaa (current at the start, never in its endpoints).
        assert_eq!(page.matches(">svc ").count(), 5);
        assert!(!page.contains("no Service endpoint changes"));
        assert!(!page.contains("NaN"));
    }

    #[test]
    fn issue_46_replicaset_roles_at_the_end_come_from_the_rollouts_last_status() {
        // aaaa was stable and is scaled down; bbbb was new, and is stable and current at the
        // end: the entries' roles (bbbb new, aaaa stable to its last listing) are not the end's.
        let mut first = entry(0, "bbbb", 0, &[("aaaa", 4, 4), ("bbbb", 1, 1)]);
        first.replicasets[0].role = Role::Stable;
        let t = Timeline {
            rollout: rollout("web"),
            entries: vec![first, entry(10, "bbbb", 4, &[("bbbb", 4, 4)])],
            traffic: Vec::new(),
            truncated: false,
        };
        let mut r = report(vec![t], Vec::new(), 30);
        r.rollouts = vec![rf_analyzer::RolloutEnd {
            rollout: rollout("web"),
            at: at(30),
            strategy: "canary",
            phase: Some("Healthy".into()),
            step_index: 4,
            step_count: 4,
            pod_hash: Some("bbbb".into()),
            stable_rs: Some("bbbb".into()),
            pause: Vec::new(),
            abort: false,
            message: None,
            deleted: false,
            replicasets: vec![ReplicaSetState {
                name: "app-bbbb".into(),
                hash: "bbbb".into(),
                role: Role::Stable,
                replicas: 4,
                ready: 4,
            }],
            last_settled: None,
            applications: Vec::new(),
        }];
        let page = html(&r);
        assert!(page.contains("stable (current) · 4/4 at the end"), "{page}");
        assert!(page.contains("other · 0/0 at the end"), "{page}");
        assert!(!page.contains("stable · 0/0 at the end"), "{page}");
        assert!(!page.contains("new (current) · 4/4"), "{page}");
        assert!(
            page.contains("<b>At the end (13:00:30).</b> Healthy on bbbb · rs app-bbbb stable (current) 4/4 ready"),
            "{page}"
        );
    }

    #[test]
    fn text_from_the_report_is_escaped_in_html_and_svg() {
        let evil = "<script>alert(1)</script>";
        let mut f = finding(evil, 10, "\"><img src=x onerror=alert(2)>");
        f.remedy.commands.push("echo '</pre><b>x</b>'".to_owned());
        let mut e = entry(0, "aaaa", 0, &[("aaaa", 1, 1)]);
        e.phase = Some("<i>Paused</i>".into());
        let t = Timeline {
            rollout: rollout(evil),
            entries: vec![e, entry(10, "<b>", 1, &[("<b>", 1, 1)])],
            traffic: vec![traffic(5, "<svc>", &[("aaaa", 1)])],
            truncated: false,
        };
        let page = html(&report(vec![t], vec![f], 30));
        assert!(!page.contains("<script>alert"), "raw name in the page");
        assert!(!page.contains("<img"));
        assert!(!page.contains("<b>x"));
        assert!(!page.contains("<i>Paused"));
        assert!(!page.contains("<svc>"));
        assert_eq!(
            page.matches("<script>").count(),
            1,
            "only the page's own script"
        );
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    }

    #[test]
    fn a_report_without_timelines_has_no_chart_but_lists_the_findings() {
        let page = html(&report(Vec::new(), vec![finding("app", 0, "x")], 0));
        assert_eq!(page.matches("<svg").count(), 0);
        assert!(page.contains("No rollout timelines"));
        assert!(page.contains(r#"id="f1""#));
    }

    #[test]
    fn one_entry_at_a_zero_length_span_still_draws_a_chart() {
        let t = Timeline {
            rollout: rollout("app"),
            entries: vec![entry(0, "aaaa", 0, &[("aaaa", 1, 1)])],
            traffic: Vec::new(),
            truncated: false,
        };
        let page = html(&report(vec![t], vec![finding("app", 0, "x")], 0));
        assert_eq!(page.matches("<svg").count(), 1);
        assert!(page.contains("spans no time"));
        assert_eq!(page.matches(r#"class="mk""#).count(), 1);
        for bad in ["NaN", "inf\"", "inf,", "infH", "infV"] {
            assert!(!page.contains(bad), "{bad} in the page");
        }
    }

    #[test]
    fn thousands_of_changes_are_downsampled_and_the_page_stays_small() {
        let entries: Vec<TimelineEntry> = (0..20_000)
            .map(|i| {
                let hash = if (i / 50) % 2 == 0 { "aaaa" } else { "bbbb" };
                entry(
                    i,
                    hash,
                    i % 5,
                    &[("aaaa", i % 7, i % 3), ("bbbb", 1 + i % 2, 1)],
                )
            })
            .collect();
        let traffic_entries: Vec<TrafficEntry> = (0..20_000)
            .map(|i| traffic(i, "app", &[("aaaa", (i % 9) as usize), ("bbbb", 1)]))
            .collect();
        let findings: Vec<Finding> = (0..2_000).map(|i| finding("app", i * 10, "x")).collect();
        let t = Timeline {
            rollout: rollout("app"),
            entries,
            traffic: traffic_entries,
            truncated: true,
        };
        let page = html(&report(vec![t], findings, 20_000));
        assert!(page.len() < 1_500_000, "{} bytes", page.len());
        assert!(page.contains("downsampled"));
        assert!(page.contains(&format!("Only the first {MAX_MARKERS} of 2000 findings")));
        assert!(page.contains("more findings are not listed"));
        assert!(page.contains("the timeline was cut"));
        assert!(!page.contains("NaN"));
    }

    #[test]
    fn long_quiet_stretches_become_axis_breaks() {
        let times: Vec<i64> = [0, 5, 10, 20, 45, 300, 310, 330, 345, 600]
            .iter()
            .map(|t| t * S)
            .collect();
        let (a, zero) = Axis::new(&times);
        assert!(!zero);
        let breaks: Vec<&Piece> = a.pieces.iter().filter(|p| p.broken).collect();
        assert_eq!(breaks.len(), 2, "{:?}", a.pieces);
        assert_eq!((breaks[0].t0, breaks[0].t1), (45 * S, 300 * S));
        // The busy minutes get most of the width.
        let busy: f64 = a
            .pieces
            .iter()
            .filter(|p| !p.broken)
            .map(|p| p.x1 - p.x0)
            .sum();
        assert!(busy > 0.7 * (X1 - X0), "{busy}");
        // Monotonic, from X0 to X1.
        assert_eq!(a.x(Timestamp(0)), X0);
        assert!((a.x(Timestamp(600 * S)) - X1).abs() < 1e-6);
        let xs: Vec<f64> = (0..=600).map(|t| a.x(Timestamp(t * S))).collect();
        assert!(xs.windows(2).all(|w| w[0] <= w[1]));
    }

    #[test]
    fn an_evenly_busy_history_is_drawn_to_scale() {
        let times: Vec<i64> = (0..60).map(|t| t * 10 * S).collect();
        let (a, _) = Axis::new(&times);
        assert_eq!(a.pieces.len(), 1);
        assert!(!a.pieces[0].broken);
        // Stretches as long as the others are not quiet, however long.
        let times: Vec<i64> = [0, 10, 20, 21, 22, 60].iter().map(|t| t * S).collect();
        let (a, _) = Axis::new(&times);
        assert!(a.pieces.iter().all(|p| !p.broken), "{:?}", a.pieces);
    }

    #[test]
    fn downsampling_keeps_the_lowest_and_highest_value_of_each_column() {
        let points: Vec<(f64, f64)> = (0..5000)
            .map(|i| {
                (
                    X0 + i as f64 * 0.2,
                    if i == 2501 { 99.0 } else { (i % 3) as f64 },
                )
            })
            .collect();
        let (out, ds) = downsample(&points);
        assert!(ds);
        assert!(out.len() <= 4 * ((1000.0 / BUCKET_PX) as usize + 1));
        assert!(out.iter().any(|p| p.1 == 99.0));
        assert!(out.windows(2).all(|w| w[0].0 <= w[1].0));
    }

    #[test]
    fn escaping_covers_the_five_html_specials() {
        assert_eq!(
            esc(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }
}
