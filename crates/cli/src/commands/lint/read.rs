//! Reading rendered manifests: files, directories and stdin, each read whole; their text is
//! split into objects by [`rf_analyzer::lint::manifests`].

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use rf_analyzer::lint::manifests::documents;
pub use rf_analyzer::lint::manifests::{Input, Manifests};

/// The most one input may hold: a render of ten thousand objects is a few tens of MiB.
pub const MAX_INPUT: u64 = 256 << 20;

/// How deep a directory is walked.
const MAX_DEPTH: usize = 32;

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
