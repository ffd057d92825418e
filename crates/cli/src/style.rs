//! Terminal styling: colour only on a terminal, never when `NO_COLOR` is set.

use std::io::IsTerminal;

use rf_analyzer::Severity;

/// Which escapes to use, and how wide the output may be.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    color: bool,
    /// Columns: the terminal's, or [`PLAIN_WIDTH`] off a terminal.
    pub width: usize,
}

/// The width of output that is not on a terminal (a file, a pipe, a CI log).
pub const PLAIN_WIDTH: usize = 100;

/// The narrowest and widest a terminal's output is laid out: narrower, the tables cannot fit
/// their columns; wider, the text lines are too long to read.
const WIDTHS: std::ops::RangeInclusive<usize> = 60..=200;

impl Style {
    /// Colour when stdout is a terminal and `NO_COLOR` is unset or empty; the terminal's width
    /// (`COLUMNS` when set, as shells export it), or [`PLAIN_WIDTH`] off a terminal.
    pub fn for_stdout() -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let terminal = std::io::stdout().is_terminal();
        Style {
            color: !no_color && terminal,
            width: if terminal {
                terminal_width()
            } else {
                PLAIN_WIDTH
            },
        }
    }

    /// No colour, [`PLAIN_WIDTH`]: for reports written to a file.
    pub fn plain() -> Self {
        Style {
            color: false,
            width: PLAIN_WIDTH,
        }
    }

    fn paint(self, code: &str, s: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{s}\x1b[0m")
        } else {
            s.to_owned()
        }
    }

    pub fn bold(self, s: &str) -> String {
        self.paint("1", s)
    }

    pub fn dim(self, s: &str) -> String {
        self.paint("2", s)
    }

    pub fn severity(self, sev: Severity) -> String {
        let label = sev.as_str().to_uppercase();
        match sev {
            Severity::Error => self.paint("1;31", &label),
            Severity::Warning => self.paint("1;33", &label),
            Severity::Info => self.paint("1;36", &label),
        }
    }

    pub fn command(self, s: &str) -> String {
        self.paint("1;32", s)
    }
}

/// The terminal's columns, within [`WIDTHS`].
fn terminal_width() -> usize {
    let columns = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .or_else(|| comfy_table::Table::new().width().map(usize::from))
        .unwrap_or(PLAIN_WIDTH);
    columns.clamp(*WIDTHS.start(), *WIDTHS.end())
}

/// A table for a person: a line under the header and none between rows (a row that wraps is
/// told by its first column), `width` columns at the most.
pub fn table(width: usize) -> comfy_table::Table {
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_HORIZONTAL_ONLY)
        .remove_style(comfy_table::TableComponent::HorizontalLines)
        .remove_style(comfy_table::TableComponent::MiddleIntersections)
        .remove_style(comfy_table::TableComponent::LeftBorderIntersections)
        .remove_style(comfy_table::TableComponent::RightBorderIntersections)
        .set_content_arrangement(comfy_table::ContentArrangement::Dynamic)
        .set_width(u16::try_from(width).unwrap_or(u16::MAX));
    t
}

/// Writes `table`, each line without the padding comfy-table leaves at its end.
pub fn write_table(w: &mut dyn std::io::Write, table: &comfy_table::Table) -> std::io::Result<()> {
    for line in table.lines() {
        writeln!(w, "{}", line.trim_end())?;
    }
    Ok(())
}

/// Wraps `text` at `width` columns, the first line prefixed with `first`, the others with
/// `rest`. A word longer than a line stands alone on its line.
pub fn wrap(text: &str, width: usize, first: &str, rest: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    let mut indent = first;
    for word in text.split_whitespace() {
        let len = |s: &str| s.chars().count();
        if !line.is_empty() && len(indent) + len(&line) + 1 + len(word) > width {
            out.push_str(indent);
            out.push_str(&line);
            out.push('\n');
            line.clear();
            indent = rest;
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        out.push_str(indent);
        out.push_str(&line);
        out.push('\n');
    }
    out
}
