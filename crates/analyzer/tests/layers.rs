//! The crate's modules are layers (see the crate's documentation): each file uses only its own
//! layer and those below it, no two files use each other however indirectly, and no file
//! reaches for the file system, the environment, a thread, a process or a clock. Read from the
//! sources, test modules left out.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, lowest first; `analyzer.rs` (the engine) and `lib.rs` sit on top.
const LAYERS: &[&str] = &[
    "base",
    "input",
    "report",
    "model",
    "detectors",
    "lint",
    "analyzer",
    "lib",
];

/// What this crate promises never to touch.
const FORBIDDEN: &[&str] = &[
    "std::fs",
    "std::env",
    "std::thread",
    "std::process",
    "std::net",
    "SystemTime",
    "Instant::now",
    "tempfile",
];

/// Source files by module path (`model::rollout`, `base`, `analyzer`), test modules cut off.
fn sources() -> BTreeMap<String, String> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path: PathBuf = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, root, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(root).unwrap().with_extension("");
                let mut module: Vec<String> = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect();
                if module.last().is_some_and(|m| m == "mod") {
                    module.pop();
                }
                let text = std::fs::read_to_string(&path).unwrap();
                out.insert(module.join("::"), code_of(&text));
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeMap::new();
    walk(&root, &root, &mut out);
    out.remove("testkit");
    out
}

/// `text` without comments and without its test modules (a `#[cfg(test)]` before an inline
/// `mod name {`: the convention here puts them last).
fn code_of(text: &str) -> String {
    let mut code = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("#[cfg(test)]")
            && lines
                .peek()
                .is_some_and(|next| next.trim_start().starts_with("mod ") && next.ends_with('{'))
        {
            break;
        }
        if trimmed.starts_with("//") {
            continue;
        }
        code.push_str(line);
        code.push('\n');
    }
    code
}

/// The layer of a module path.
fn layer(module: &str) -> usize {
    let top = module.split("::").next().unwrap_or(module);
    LAYERS
        .iter()
        .position(|l| *l == top)
        .unwrap_or_else(|| panic!("module {module} is in no layer: add it to LAYERS"))
}

/// The names the crate root re-exports, and the module each comes from.
fn reexports(lib: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let flat = lib.replace('\n', " ");
    for stmt in flat.split(';') {
        let Some(rest) = stmt.trim().strip_prefix("pub use ") else {
            continue;
        };
        let (path, names) = match rest.split_once("::{") {
            Some((path, names)) => (path.to_owned(), names.trim_end_matches('}').to_owned()),
            None => {
                let (path, name) = rest.rsplit_once("::").unwrap();
                (path.to_owned(), name.to_owned())
            }
        };
        for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            out.insert(name.to_owned(), path.clone());
        }
    }
    out
}

/// The modules `code` (of module `me`) uses: every `crate::` path, resolved to the longest
/// module it names (`crate::Rule` through the root's re-exports), and `super::` in a child.
fn uses(
    me: &str,
    code: &str,
    modules: &BTreeSet<String>,
    root: &BTreeMap<String, String>,
) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let resolve = |segments: &[&str]| -> Option<String> {
        (1..=segments.len())
            .rev()
            .map(|n| segments[..n].join("::"))
            .find(|m| modules.contains(m))
    };
    let mut add = |path: &str| {
        let segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
        let target = match resolve(&segments) {
            Some(m) => Some(m),
            None => segments.first().and_then(|name| root.get(*name)).cloned(),
        };
        if let Some(t) = target.filter(|t| t != me) {
            out.insert(t);
        }
    };
    for (i, _) in code.match_indices("crate::") {
        let tail = &code[i + "crate::".len()..];
        let path: String = tail
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        if tail[path.len()..].starts_with('{') {
            // `crate::a::{b, c::D}`: each item.
            let inner = &tail[path.len() + 1..tail.find('}').unwrap_or(tail.len())];
            for item in inner.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                add(&format!("{path}{item}"));
            }
        } else {
            add(&path);
        }
    }
    if code.contains("super::") {
        if let Some((parent, _)) = me.rsplit_once("::") {
            out.insert(parent.to_owned());
        }
    }
    out
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let sources = sources();
    let modules: BTreeSet<String> = sources.keys().cloned().collect();
    let root = reexports(&sources["lib"]);
    sources
        .iter()
        .map(|(m, code)| (m.clone(), uses(m, code, &modules, &root)))
        .collect()
}

#[test]
fn every_module_uses_only_its_layer_and_those_below() {
    let mut wrong = Vec::new();
    for (module, used) in graph() {
        for target in used {
            // A layer's own `mod.rs` declares its files, which is no use of them.
            let declares = target.starts_with(&format!("{module}::"));
            if !declares && layer(&target) > layer(&module) {
                wrong.push(format!("{module} uses {target}"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "uses that point up a layer:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn detectors_read_the_model_not_the_input() {
    let wrong: Vec<String> = graph()
        .into_iter()
        .filter(|(m, _)| m.starts_with("detectors"))
        .flat_map(|(m, used)| {
            used.into_iter()
                .filter(|t| t.starts_with("input"))
                .map(move |t| format!("{m} uses {t}"))
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn no_two_modules_use_each_other() {
    let graph = graph();
    // Depth-first, with the path so far: a module met again on it closes a cycle.
    fn visit(
        m: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        cycles: &mut Vec<String>,
    ) {
        if let Some(at) = path.iter().position(|p| p == m) {
            let mut cycle = path[at..].to_vec();
            cycle.push(m.to_owned());
            cycles.push(cycle.join(" -> "));
            return;
        }
        if !done.insert(m.to_owned()) {
            return;
        }
        path.push(m.to_owned());
        for next in graph.get(m).into_iter().flatten() {
            // A parent declaring its children is no use of them.
            if !next.starts_with(&format!("{m}::")) {
                visit(next, graph, path, done, cycles);
            }
        }
        path.pop();
    }
    let mut cycles = Vec::new();
    let mut done = BTreeSet::new();
    for m in graph.keys() {
        visit(m, &graph, &mut Vec::new(), &mut done, &mut cycles);
    }
    assert!(cycles.is_empty(), "import cycles:\n{}", cycles.join("\n"));
}

#[test]
fn no_module_touches_files_the_environment_threads_or_clocks() {
    let mut wrong = Vec::new();
    for (module, code) in sources() {
        for word in FORBIDDEN {
            if code.contains(word) {
                wrong.push(format!("{module} uses {word}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_checks_see_what_they_check() {
    let graph = graph();
    // The reader finds uses at all: the engine uses every layer, a detector the model.
    for below in ["base", "input", "report", "model", "detectors"] {
        assert!(
            graph["analyzer"].iter().any(|t| t.starts_with(below)),
            "analyzer -> {below} not seen: {:?}",
            graph["analyzer"]
        );
    }
    assert!(graph["detectors::pause_lost"].contains("model::rollout"));
    // A use up a layer and a cycle would be caught.
    let code = "use crate::model::rollout::RolloutTrack;\nuse crate::Rule;\n";
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    let sources = sources();
    let root = reexports(&sources["lib"]);
    let used = uses("input::view", code, &modules, &root);
    assert!(
        used.contains("model::rollout") && used.contains("report::finding"),
        "{used:?}"
    );
    assert!(layer("model::rollout") > layer("input::view"));
    assert_eq!(
        code_of("use a;\n// std::fs in a comment\n#[cfg(test)]\nmod tests {\n    std::fs\n}\n"),
        "use a;\n"
    );
}
