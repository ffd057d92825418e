//! Rendered manifests as text: multi-document YAML and JSON, Lists flattened. Each object keeps
//! where it came from: its input, the line its document begins at, and its path in a List, so
//! that a finding can name the file, line and column of the object and of its field
//! ([`Origin::locate`]). Reading files and stdin is the caller's.

use serde_json::Value;

/// Why an input is not rendered manifests, with where (`NAME:LINE:COLUMN: ...`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestError(pub String);

impl std::fmt::Display for ManifestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ManifestError {}

/// One input read whole: its name as findings show it, and its text.
#[derive(Debug)]
pub struct Input {
    pub name: String,
    pub text: String,
}

/// Where an object came from.
#[derive(Debug)]
pub struct Origin {
    /// Its input, by index.
    pub input: usize,
    /// The lines of its document: [first, end) of the input's lines.
    pub first: usize,
    pub end: usize,
    /// Its path in its document: empty, or `items`, `N` for an item of a List.
    pub prefix: Vec<String>,
    /// The chart template it was rendered from (Helm's `# Source:` comment).
    pub source: Option<String>,
}

/// The objects of all inputs, in order, each with its origin.
#[derive(Debug)]
pub struct Manifests {
    pub inputs: Vec<Input>,
    pub objects: Vec<Value>,
    pub origins: Vec<Origin>,
}

/// A line that ends a YAML document (`---` or `...` at column 0, alone or before a space).
fn marker(line: &str) -> bool {
    ["---", "..."].iter().any(|m| {
        line.strip_prefix(m)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t']))
    })
}

/// Splits input `i` of `m` into its documents and their objects, added to `m`.
pub fn documents(m: &mut Manifests, i: usize) -> Result<(), ManifestError> {
    let text = &m.inputs[i].text;
    let name = &m.inputs[i].name;
    let lines: Vec<&str> = text.lines().collect();
    let mut start = 0;
    let mut docs = Vec::new();
    for (n, line) in lines.iter().enumerate() {
        if marker(line) {
            docs.push((start, n));
            start = n + 1;
        }
    }
    docs.push((start, lines.len()));
    let mut found = Vec::new();
    for (first, end) in docs {
        let body = &lines[first..end];
        let Some(content) = body
            .iter()
            .position(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        else {
            continue;
        };
        let source = body[..content].iter().rev().find_map(|l| {
            l.trim_start()
                .strip_prefix("# Source:")
                .map(|s| s.trim().to_owned())
        });
        let doc = body.join("\n");
        let value: Value = yaml_serde::from_str(&doc).map_err(|_| {
            // Parsed again preceded by as many empty lines as come before it, so that the
            // parser's lines (in its message too) are the input's: once, on the way out.
            let padded = "\n".repeat(first) + &doc;
            let e = yaml_serde::from_str::<Value>(&padded).err();
            let at = e
                .as_ref()
                .and_then(|e| e.location())
                .map(|l| format!(":{}:{}", l.line(), l.column()))
                .unwrap_or_default();
            let what = e.map(|e| e.to_string()).unwrap_or_default();
            ManifestError(format!("{name}{at}: not YAML or JSON: {what}"))
        })?;
        let first = first + content;
        match value {
            Value::Null => continue,
            Value::Object(_) => {}
            other => {
                return Err(ManifestError(format!(
                    "{name}:{}:1: a document that is not an object ({}): expected Kubernetes objects",
                    first + 1,
                    kind_of(&other)
                )));
            }
        }
        let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
        if value.get("apiVersion").and_then(Value::as_str).is_none() || kind.is_empty() {
            return Err(ManifestError(format!(
                "{name}:{}:1: an object without apiVersion and kind: expected Kubernetes objects",
                first + 1
            )));
        }
        if kind.ends_with("List") {
            if let Some(items) = value.get("items").and_then(Value::as_array) {
                for (n, item) in items.iter().enumerate() {
                    found.push((
                        item.clone(),
                        Origin {
                            input: i,
                            first,
                            end,
                            prefix: vec!["items".to_owned(), n.to_string()],
                            source: source.clone(),
                        },
                    ));
                }
                continue;
            }
        }
        found.push((
            value,
            Origin {
                input: i,
                first,
                end,
                prefix: Vec::new(),
                source,
            },
        ));
    }
    for (v, o) in found {
        m.objects.push(v);
        m.origins.push(o);
    }
    Ok(())
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "empty",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

impl Origin {
    /// The line and column (1-based) of `path` in the object, as near as its text shows it:
    /// the field where it is found, else the nearest enclosing one, else the object's first line.
    /// Block-style YAML (what `helm template` and `kustomize build` write) is followed key by
    /// key and item by item; a flow mapping on one line, key by key within it.
    /// `input` is the input's lines.
    pub fn locate(&self, input: &[&str], path: &[String]) -> (usize, usize) {
        let lines = input.get(self.first..self.end).unwrap_or_default();
        let full: Vec<&String> = self.prefix.iter().chain(path).collect();
        let mut best = (self.first + 1, 1);
        let (mut lo, mut hi) = (0, lines.len());
        // The column keys of the current block must be past.
        let mut parent: isize = -1;
        let mut segs = full.iter();
        while let Some(seg) = segs.next() {
            let found = if let Ok(n) = seg.parse::<usize>() {
                item(&lines[lo..hi], parent, n)
            } else {
                key(&lines[lo..hi], parent, seg)
            };
            let Some((at, col, end)) = found else {
                // A flow mapping on the line found last: the rest of the keys within it.
                if let Some(line) = lines.get(lo.wrapping_sub(1)) {
                    let mut from = 0;
                    let mut pos = None;
                    for s in std::iter::once(seg).chain(segs.by_ref()) {
                        match find_in_line(line, s, from) {
                            Some(c) => {
                                pos = Some(c);
                                from = c;
                            }
                            None => break,
                        }
                    }
                    if let Some(c) = pos {
                        best.1 = c + 1;
                    }
                }
                return best;
            };
            best = (self.first + lo + at + 1, col + 1);
            parent = col as isize;
            // An item's first key may be on its dash line.
            let start = if seg.parse::<usize>().is_ok() {
                lo + at
            } else {
                lo + at + 1
            };
            hi = lo + end;
            lo = start;
            if lo > hi {
                break;
            }
        }
        best
    }
}

/// The indentation of a line, and where its content begins past `- ` item markers: (indent,
/// key column, the content).
fn shape(line: &str) -> (usize, usize, &str) {
    let indent = line.len() - line.trim_start_matches(' ').len();
    let mut col = indent;
    let mut rest = &line[indent..];
    while let Some(r) = rest.strip_prefix("- ") {
        let spaces = r.len() - r.trim_start_matches(' ').len();
        col += 2 + spaces;
        rest = &r[spaces..];
    }
    (indent, col, rest)
}

fn blank(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

/// Whether `content` declares key `k` (plain, or quoted as JSON and YAML allow).
fn declares(content: &str, k: &str) -> bool {
    [
        format!("{k}:"),
        format!("\"{k}\":"),
        format!("'{k}':"),
        format!("\"{k}\" :"),
    ]
    .iter()
    .any(|p| content.starts_with(p.as_str()))
}

/// Key `k` of the block in `lines` whose keys are past column `parent`: (line, column, the
/// end of its value's lines).
fn key(lines: &[&str], parent: isize, k: &str) -> Option<(usize, usize, usize)> {
    let mut block_col = None;
    for (n, line) in lines.iter().enumerate() {
        if blank(line) {
            continue;
        }
        let (indent, col, content) = shape(line);
        if (col as isize) <= parent && (indent as isize) <= parent {
            return None;
        }
        let block = *block_col.get_or_insert(col);
        if col < block {
            return None;
        }
        if col == block && declares(content, k) {
            // Its value's lines: those past its column, and the items of a sequence written
            // at the key's own indentation (`ports:` then `- port: 80`).
            let end = lines[n + 1..]
                .iter()
                .position(|l| {
                    !blank(l) && {
                        let (i, c, _) = shape(l);
                        c <= block || (i <= block && !is_item(&l[i..]))
                    }
                })
                .map_or(lines.len(), |e| n + 1 + e);
            return Some((n, col, end));
        }
    }
    None
}

/// Item `want` of the list in `lines` whose dashes are past column `parent`.
fn item(lines: &[&str], parent: isize, want: usize) -> Option<(usize, usize, usize)> {
    let mut dash_col = None;
    let mut seen = 0;
    for (n, line) in lines.iter().enumerate() {
        if blank(line) {
            continue;
        }
        let (indent, _, _) = shape(line);
        let is_item = is_item(&line[indent..]);
        if (indent as isize) < parent || (!is_item && (indent as isize) <= parent) {
            return None;
        }
        if !is_item {
            continue;
        }
        let col = *dash_col.get_or_insert(indent);
        if indent != col {
            continue;
        }
        if seen == want {
            let end = lines[n + 1..]
                .iter()
                .position(|l| !blank(l) && shape(l).0 <= col)
                .map_or(lines.len(), |e| n + 1 + e);
            return Some((n, col, end));
        }
        seen += 1;
    }
    None
}

/// Whether a line's content (past its indentation) is a sequence item.
fn is_item(content: &str) -> bool {
    content.starts_with("- ") || content == "-"
}

/// The column of key `k` in a flow mapping of `line`, at or after byte `from`.
fn find_in_line(line: &str, k: &str, from: usize) -> Option<usize> {
    let mut at = from;
    while let Some(i) = line.get(at..)?.find(k) {
        let pos = at + i;
        let before = line[..pos].chars().next_back();
        let after = &line[pos + k.len()..];
        let bounded = before.is_none_or(|c| matches!(c, '{' | ' ' | ',' | '"' | '\''));
        let keyed = after
            .trim_start_matches(['"', '\''])
            .trim_start()
            .starts_with(':');
        if bounded && keyed {
            return Some(pos);
        }
        at = pos + k.len();
    }
    None
}

/// The reader's contract on any text, for the fuzz target and its regression test: the text is
/// split into objects or refused with an error that names the input, every object is linted,
/// and every finding is located on a line of the text. Panics where that does not hold.
#[doc(hidden)]
pub fn check_reading(text: &str) {
    let mut m = Manifests {
        inputs: vec![Input {
            name: "fuzz.yaml".to_owned(),
            text: text.to_owned(),
        }],
        objects: Vec::new(),
        origins: Vec::new(),
    };
    if let Err(e) = documents(&mut m, 0) {
        assert!(e.0.starts_with("fuzz.yaml"), "{e}");
        return;
    }
    let lines: Vec<&str> = text.lines().collect();
    for f in super::lint(&m.objects, "default") {
        let (line, column) = m.origins[f.object].locate(&lines, &f.path);
        assert!(line >= 1 && column >= 1, "{line}:{column}");
        assert!(line <= lines.len().max(1), "line {line} of {}", lines.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin_of(text: &str, doc: usize) -> Origin {
        let mut m = Manifests {
            inputs: vec![Input {
                name: "t.yaml".to_owned(),
                text: text.to_owned(),
            }],
            objects: Vec::new(),
            origins: Vec::new(),
        };
        documents(&mut m, 0).unwrap();
        m.origins.remove(doc)
    }

    fn at(text: &str, doc: usize, path: &str) -> (usize, usize) {
        let path: Vec<String> = path.split('.').map(str::to_owned).collect();
        let lines: Vec<&str> = text.lines().collect();
        origin_of(text, doc).locate(&lines, &path)
    }

    const RENDER: &str = "---
# Source: shop/templates/service.yaml
apiVersion: v1
kind: Service
metadata:
  name: checkout-api-legacy
spec:
  ports:
  - port: 80
    targetPort: 8080
  selector:
    app: checkout-api
    version: \"v1\"
---
# Source: shop/templates/rollout.yaml
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: checkout-api}
spec:
  template:
    metadata:
      labels: {app: checkout-api, version: v2}
    spec:
      initContainers: []
      containers:
        - name: init
          image: a:1
        - name: app
          image: registry.example/checkout-api:1.1
";

    #[test]
    fn fields_are_found_in_block_and_flow_yaml() {
        assert_eq!(at(RENDER, 0, "spec.selector.version"), (13, 5));
        assert_eq!(at(RENDER, 0, "spec.ports.0.targetPort"), (10, 5));
        assert_eq!(
            at(RENDER, 1, "spec.template.spec.containers.1.image"),
            (29, 11)
        );
        assert_eq!(
            at(RENDER, 1, "spec.template.spec.containers.0.name"),
            (26, 11)
        );
        assert_eq!(
            at(RENDER, 1, "spec.template.metadata.labels.version"),
            (22, 35)
        );
        // Not there: the nearest enclosing field.
        assert_eq!(
            at(RENDER, 1, "spec.template.metadata.annotations.x"),
            (21, 5)
        );
        assert_eq!(origin_of(RENDER, 1).first + 1, 16);
        assert_eq!(
            origin_of(RENDER, 1).source.as_deref(),
            Some("shop/templates/rollout.yaml")
        );
        assert_eq!(origin_of(RENDER, 0).first + 1, 3);
    }

    #[test]
    fn document_markers_need_column_0() {
        assert!(marker("---") && marker("--- # x") && marker("..."));
        assert!(!marker("----") && !marker(" ---") && !marker("---x"));
    }

    #[test]
    fn a_list_is_flattened_with_the_path_of_each_item() {
        let text = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Service\n  metadata: {name: a}\n- apiVersion: v1\n  kind: Service\n  metadata:\n    name: b\n";
        let o = origin_of(text, 1);
        assert_eq!(o.prefix, ["items", "1"]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            o.locate(&lines, &["metadata".into(), "name".into()]),
            (10, 5)
        );
    }
}
