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

/// Writes `table`, each line without the padding comfy-table leaves at its end. A cell wraps
/// between words, not inside one (`CanaryP auseStep`): each column is at least as wide as its
/// longest word, but for the column with the most text (the free text of a finding or a
/// change), which takes the width that is left and splits only a word longer than that. A
/// table whose other columns' words do not fit the width is wider than it.
pub fn write_table(w: &mut dyn std::io::Write, table: &comfy_table::Table) -> std::io::Result<()> {
    /// The least width left to the free-text column.
    const FREE_TEXT_MIN: usize = 12;
    let mut table = table.clone();
    // Per column: its longest word and all its text, in chars.
    let mut longest: Vec<usize> = Vec::new();
    let mut total: Vec<usize> = Vec::new();
    let rows = table.header().into_iter().chain(table.row_iter());
    for row in rows {
        for (i, cell) in row.cell_iter().enumerate() {
            let content = cell.content();
            let word = content
                .split_whitespace()
                .map(|w| w.chars().count())
                .max()
                .unwrap_or(0);
            if longest.len() <= i {
                longest.resize(i + 1, 0);
                total.resize(i + 1, 0);
            }
            longest[i] = longest[i].max(word);
            total[i] += content.chars().count();
        }
    }
    let free = (0..total.len()).max_by_key(|&i| (total[i], i));
    // Each column's padding (a space each side) and separator.
    let others: usize = (0..longest.len())
        .filter(|&i| Some(i) != free)
        .map(|i| longest[i] + 3)
        .sum();
    let width = usize::from(table.width().unwrap_or(u16::MAX));
    if width < others + FREE_TEXT_MIN + 3 {
        table.set_width(u16::try_from(others + FREE_TEXT_MIN + 3).unwrap_or(u16::MAX));
    }
    let width = usize::from(table.width().unwrap_or(u16::MAX));
    for (i, column) in table.column_iter_mut().enumerate() {
        let mut bound = longest.get(i).copied().unwrap_or(0);
        if Some(i) == free {
            bound = bound.min(width.saturating_sub(others + 3));
        }
        // The bound counts the column's padding.
        column.set_constraint(comfy_table::ColumnConstraint::LowerBoundary(
            comfy_table::Width::Fixed(u16::try_from(bound + 2).unwrap_or(u16::MAX)),
        ));
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_46_a_narrow_table_wraps_cells_between_words_not_inside_them() {
        let mut t = table(50);
        t.set_header(vec!["TIME", "PHASE", "CHANGES"]);
        t.add_row(vec![
            "03:27:53",
            "Paused (CanaryPauseStep)",
            "step 0 -> 1; currentPodHash 66c66dbf9f -> 54477fc49b",
        ]);
        let mut out = Vec::new();
        write_table(&mut out, &t).unwrap();
        let text = String::from_utf8(out).unwrap();
        for word in [
            "(CanaryPauseStep)",
            "66c66dbf9f",
            "54477fc49b",
            "currentPodHash",
        ] {
            assert!(text.contains(word), "{word} cut:\n{text}");
        }
    }
}
