//! Reading rendered manifests: files, directories and stdin; multi-document YAML and JSON;
//! Lists flattened. Each object keeps where it came from: its input, the line its document
//! begins at, and its path in a List, so that a finding can name the file, line and column of
//! the object and of its field ([`Origin::locate`]).

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// The most one input may hold: a render of ten thousand objects is a few tens of MiB.
pub const MAX_INPUT: u64 = 256 << 20;

/// How deep a directory is walked.
const MAX_DEPTH: usize = 32;

/// One input read whole: its name as findings show it, and its text.
pub struct Input {
    pub name: String,
    pub text: String,
}

/// Where an object came from.
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
pub struct Manifests {
    pub inputs: Vec<Input>,
    pub objects: Vec<Value>,
    pub origins: Vec<Origin>,
}

/// Reads `paths` (`-` is stdin; a directory, its `*.yaml`, `*.yml` and `*.json` files, sorted).
pub fn read(paths: &[String]) -> Result<Manifests> {
    let mut inputs = Vec::new();
    for p in paths {
        if p == "-" {
            let mut text = String::new();
            std::io::stdin()
                .lock()
                .take(MAX_INPUT + 1)
                .read_to_string(&mut text)
                .context("failed to read manifests from stdin")?;
            if text.len() as u64 > MAX_INPUT {
                bail!("stdin: more than {} MiB of manifests", MAX_INPUT >> 20);
            }
            inputs.push(Input {
                name: "-".to_owned(),
                text,
            });
            continue;
        }
        let path = Path::new(p);
        let meta = std::fs::metadata(path).with_context(|| format!("{p}: cannot read it"))?;
        if meta.is_dir() {
            let mut files = Vec::new();
            walk(path, 0, &mut files)?;
            if files.is_empty() {
                bail!("{p}: a directory with no *.yaml, *.yml or *.json file");
            }
            for f in files {
                inputs.push(read_file(&f)?);
            }
        } else {
            inputs.push(read_file(path)?);
        }
    }
    let mut m = Manifests {
        inputs,
        objects: Vec::new(),
        origins: Vec::new(),
    };
    for i in 0..m.inputs.len() {
        documents(&mut m, i)?;
    }
    if m.objects.is_empty() {
        bail!(
            "no Kubernetes object in {}: expected rendered manifests (YAML or JSON with apiVersion and kind)",
            m.inputs
                .iter()
                .map(|i| i.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(m)
}

fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) -> Result<()> {
    if depth > MAX_DEPTH {
        bail!(
            "{}: directories nested deeper than {MAX_DEPTH}",
            dir.display()
        );
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("{}: cannot list it", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()
        .with_context(|| format!("{}: cannot list it", dir.display()))?;
    entries.sort();
    for e in entries {
        if e.is_dir() {
            walk(&e, depth + 1, out)?;
        } else if e
            .extension()
            .is_some_and(|x| x == "yaml" || x == "yml" || x == "json")
        {
            out.push(e);
        }
    }
    Ok(())
}

fn read_file(path: &Path) -> Result<Input> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path).with_context(|| format!("{name}: cannot open it"))?;
    let mut text = String::new();
    file.take(MAX_INPUT + 1)
        .read_to_string(&mut text)
        .with_context(|| format!("{name}: cannot read it as text"))?;
    if text.len() as u64 > MAX_INPUT {
        bail!("{name}: more than {} MiB", MAX_INPUT >> 20);
    }
    Ok(Input { name, text })
}

/// A line that ends a YAML document (`---` or `...` at column 0, alone or before a space).
fn marker(line: &str) -> bool {
    ["---", "..."].iter().any(|m| {
        line.strip_prefix(m)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t']))
    })
}

/// Splits input `i` into its documents and their objects.
fn documents(m: &mut Manifests, i: usize) -> Result<()> {
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
            anyhow::anyhow!("{name}{at}: not YAML or JSON: {what}")
        })?;
        let first = first + content;
        match value {
            Value::Null => continue,
            Value::Object(_) => {}
            other => bail!(
                "{name}:{}:1: a document that is not an object ({}): expected Kubernetes objects",
                first + 1,
                kind_of(&other)
            ),
        }
        let kind = value.get("kind").and_then(Value::as_str).unwrap_or("");
        if value.get("apiVersion").and_then(Value::as_str).is_none() || kind.is_empty() {
            bail!(
                "{name}:{}:1: an object without apiVersion and kind: expected Kubernetes objects",
                first + 1
            );
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
