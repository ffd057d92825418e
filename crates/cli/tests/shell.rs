//! What a package installs beside the binary: shell completions, man pages, and the binary as
//! kubectl's `forensics` plugin. Each is checked by the program that uses it: the shell parses
//! and loads the completion script, groff formats the pages, the real kubectl runs the plugin.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::{Command, Output, Stdio};

use common::{bin, need, text};

fn run(cmd: &mut Command) -> Output {
    let o = cmd.output().unwrap();
    assert!(
        o.status.success(),
        "{cmd:?}: {}\n{}",
        text(&o.stdout),
        text(&o.stderr)
    );
    o
}

fn completions(home: &Path, shell: &str) -> String {
    let o = run(bin(home).args(["completions", shell]));
    text(&o.stdout)
}

/// The script bash loads registers the completion of every command, and completes a command
/// and a subcommand's flag as bash would (through the function it registered); the flag is
/// what clap_complete's own script misses for a name with a hyphen (clap-rs/clap#6421).
#[test]
fn bash_completion_loads_and_completes_commands_and_flags() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("rollout-forensics.bash");
    std::fs::write(&script, completions(dir.path(), "bash")).unwrap();
    // Complete `rollout-forensics an<TAB>` and `rollout-forensics check --expect-i<TAB>`.
    let probe = format!(
        r#"set -e
source '{}'
complete -p rollout-forensics
COMP_WORDS=(rollout-forensics an); COMP_CWORD=1; COMP_LINE='rollout-forensics an'; COMP_POINT=${{#COMP_LINE}}
_rollout__forensics rollout-forensics an rollout-forensics
echo "words: ${{COMPREPLY[*]}}"
COMP_WORDS=(rollout-forensics check --expect-i); COMP_CWORD=2; COMP_LINE='rollout-forensics check --expect-i'; COMP_POINT=${{#COMP_LINE}}
_rollout__forensics rollout-forensics --expect-i check
echo "flags: ${{COMPREPLY[*]}}"
"#,
        script.display()
    );
    let o = run(Command::new("bash").args(["--norc", "-c", &probe]));
    let out = text(&o.stdout);
    assert!(
        out.contains("-F _rollout__forensics rollout-forensics")
            && out.contains("words: analyze")
            && out.contains("flags: --expect-image"),
        "{out}"
    );
}

#[test]
fn zsh_and_fish_completions_parse_in_their_shells() {
    need("zsh", "apt-get install zsh");
    need("fish", "apt-get install fish");
    let dir = tempfile::tempdir().unwrap();
    let zsh = completions(dir.path(), "zsh");
    assert!(zsh.starts_with("#compdef rollout-forensics"), "{zsh}");
    let file = dir.path().join("_rollout-forensics");
    std::fs::write(&file, &zsh).unwrap();
    run(Command::new("zsh").arg("-n").arg(&file));

    let fish = completions(dir.path(), "fish");
    let file = dir.path().join("rollout-forensics.fish");
    std::fs::write(&file, &fish).unwrap();
    run(Command::new("fish").arg("--no-execute").arg(&file));
    // Loaded, fish completes the commands from it.
    let o = run(Command::new("fish").args([
        "--no-config",
        "-c",
        &format!(
            "source '{}'; complete -C 'rollout-forensics ch'",
            file.display()
        ),
    ]));
    let out = text(&o.stdout);
    assert!(out.lines().any(|l| l.starts_with("check")), "{out}");
}

#[test]
fn an_unknown_shell_is_an_error_that_names_the_shells() {
    let dir = tempfile::tempdir().unwrap();
    let o = bin(dir.path())
        .args(["completions", "tcsh"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains("invalid value 'tcsh'") && err.contains("bash") && err.contains("fish"),
        "{err}"
    );
    assert!(o.stdout.is_empty());
}

/// `man` prints the main page; `man --dir` writes one page per command, each of which groff
/// formats without a warning, named as `man` looks it up.
#[test]
fn man_pages_format_cleanly_one_per_command() {
    need("groff", "apt-get install groff-base");
    let dir = tempfile::tempdir().unwrap();
    let main = text(&run(bin(dir.path()).arg("man")).stdout);
    assert!(main.contains(".TH rollout-forensics 1"), "{main}");
    let pages = dir.path().join("man1");
    std::fs::create_dir(&pages).unwrap();
    let listed = text(&run(bin(dir.path()).arg("man").arg("--dir").arg(&pages)).stdout);
    let mut names: Vec<String> = std::fs::read_dir(&pages)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(listed.lines().count(), names.len(), "{listed}");
    for command in ["analyze", "check", "record", "serve", "wait", "completions"] {
        assert!(
            names.contains(&format!("rollout-forensics-{command}.1")),
            "{names:?}"
        );
    }
    assert!(names.contains(&"rollout-forensics.1".to_owned()));
    for name in &names {
        let page = pages.join(name);
        let o = run(Command::new("groff")
            .args(["-man", "-Tutf8", "-ww", "-z"])
            .arg(&page));
        assert!(o.stderr.is_empty(), "{name}: {}", text(&o.stderr));
    }
    let check = std::fs::read_to_string(pages.join("rollout-forensics-check.1")).unwrap();
    assert!(
        check.contains(r"\fBrollout\-forensics check\fR") && check.contains(r"\-\-expect\-image"),
        "{check}"
    );
    // A directory that is not there yet is made, with its parents.
    let fresh = dir.path().join("share/man/man1");
    let o = bin(dir.path())
        .args(["man", "--dir"])
        .arg(&fresh)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(fresh.join("rollout-forensics-check.1").is_file());
    // A file where the directory should be is an error, and nothing is written.
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let o = bin(dir.path())
        .args(["man", "--dir"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("not a directory"),
        "{}",
        text(&o.stderr)
    );
}

/// With the binary on the PATH as `kubectl-forensics`, the real kubectl runs it as
/// `kubectl forensics`: the same report as the binary's own, and help that names the command
/// the user typed.
#[test]
fn kubectl_runs_the_binary_as_its_forensics_plugin() {
    need("kubectl", "apt-get install kubernetes-client");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bin");
    std::fs::create_dir(&path).unwrap();
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_rollout-forensics"),
        path.join("kubectl-forensics"),
    )
    .unwrap();
    let search = std::env::join_paths(std::iter::once(path.clone()).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    let recording = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../recordings/abort.rfr");
    let kubectl = |args: &[&str]| {
        Command::new("kubectl")
            .args(args)
            .env("PATH", &search)
            .env("HOME", dir.path())
            .env_remove("KUBECONFIG")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let listed = kubectl(&["plugin", "list", "--name-only"]);
    assert!(
        text(&listed.stdout)
            .lines()
            .any(|l| l == "kubectl-forensics"),
        "{}{}",
        text(&listed.stdout),
        text(&listed.stderr)
    );
    let rec = recording.to_str().unwrap();
    let via = kubectl(&["forensics", "analyze", "-o", "json", rec]);
    // The abort is an error finding (`rollout-stopped`): exit 1 from both.
    let direct = bin(dir.path())
        .args(["analyze", "-o", "json", rec])
        .output()
        .unwrap();
    assert_eq!(direct.status.code(), Some(1), "{}", text(&direct.stderr));
    assert_eq!(
        via.status.code(),
        direct.status.code(),
        "{}",
        text(&via.stderr)
    );
    assert_eq!(text(&via.stdout), text(&direct.stdout));
    let help = kubectl(&["forensics", "--help"]);
    assert!(
        text(&help.stdout).contains("Usage: kubectl forensics <COMMAND>"),
        "{}",
        text(&help.stdout)
    );
    let wrong = kubectl(&["forensics", "analyze", "--no-such-flag"]);
    assert_eq!(wrong.status.code(), Some(2));
    assert!(
        text(&wrong.stderr).contains("Usage: kubectl forensics analyze"),
        "{}",
        text(&wrong.stderr)
    );
}
