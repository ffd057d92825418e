//! Terminal styling: colour only on a terminal, never when `NO_COLOR` is set.

use std::io::IsTerminal;

use rf_analyzer::Severity;

/// Which escapes to use.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    color: bool,
}

impl Style {
    /// Colour when stdout is a terminal and `NO_COLOR` is unset or empty.
    pub fn for_stdout() -> Self {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Style {
            color: !no_color && std::io::stdout().is_terminal(),
        }
    }

    /// No colour: for reports written to a file.
    pub fn plain() -> Self {
        Style { color: false }
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

/// Wraps `text` at `width` columns, each line prefixed with `indent`.
pub fn wrap(text: &str, width: usize, indent: &str) -> String {
    let mut out = String::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && indent.len() + line.len() + 1 + word.len() > width {
            out.push_str(indent);
            out.push_str(&line);
            out.push('\n');
            line.clear();
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
