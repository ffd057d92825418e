//! `completions SHELL` and `man [--dir DIR]`: what a package installs beside the binary,
//! generated from the same clap definition the binary parses with, so they never drift.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args, CommandFactory};
use clap_complete::Shell;

use crate::exit::Exit;

/// The name kubectl runs a plugin by: `kubectl forensics ...` runs `kubectl-forensics`.
pub const PLUGIN_FILE: &str = "kubectl-forensics";

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write one page per command into DIR (`rollout-forensics.1`,
    /// `rollout-forensics-analyze.1`, ...) instead of the main page to stdout.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// The CLI's definition under the name it was run by: `kubectl forensics` when run as the
/// kubectl plugin, so help, usage and errors show the command a user types.
pub fn command_as_run(argv0: Option<&str>) -> clap::Command {
    let cmd = crate::args::Cli::command();
    let file = argv0
        .map(Path::new)
        .and_then(|p| p.file_stem())
        .and_then(|s| s.to_str());
    if file == Some(PLUGIN_FILE) {
        cmd.bin_name("kubectl forensics")
    } else {
        cmd
    }
}

pub fn completions(args: &CompletionsArgs, out: &mut dyn Write) -> Result<Exit> {
    let mut cmd = crate::args::Cli::command();
    let name = cmd.get_name().to_owned();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, &name, &mut script);
    if args.shell == Shell::Bash {
        script = mend_bash(&String::from_utf8_lossy(&script), &name).into_bytes();
    }
    out.write_all(&script)?;
    Ok(Exit::Ok)
}

/// clap_complete's bash script for a name with a hyphen spells each subcommand's state two
/// ways: the loop that reads the words makes `rollout__forensics__subcmd__check`, the arm that
/// should answer it is labelled `rollout__subcmd__forensics__subcmd__check`, so no option of a
/// subcommand ever completes (clap-rs/clap#6421). The arms are spelled as the loop spells them;
/// a script without the mismatch is left as it is.
fn mend_bash(script: &str, name: &str) -> String {
    const SEP: &str = "__subcmd__";
    if !name.contains('-') {
        return script.to_owned();
    }
    let wrong = format!("{}{SEP}", name.replace('-', SEP));
    let right = format!("{}{SEP}", name.replace('-', "__"));
    script.replace(&wrong, &right)
}

pub fn man(args: &ManArgs, out: &mut dyn Write) -> Result<Exit> {
    let cmd = crate::args::Cli::command();
    let Some(dir) = &args.dir else {
        clap_mangen::Man::new(cmd)
            .render(out)
            .context("writing the man page")?;
        return Ok(Exit::Ok);
    };
    // Made when it is not there yet (with its parents), as `install -d` would: the usual
    // place, ~/.local/share/man/man1, often is not.
    if dir.exists() && !dir.is_dir() {
        anyhow::bail!("--dir {}: not a directory", dir.display());
    }
    std::fs::create_dir_all(dir)
        .with_context(|| format!("--dir {}: cannot create the directory", dir.display()))?;
    let mut written = Vec::new();
    let name = cmd.get_name().to_owned();
    write_pages(cmd, &name, &name, dir, &mut written)?;
    for path in written {
        writeln!(out, "{}", path.display())?;
    }
    Ok(Exit::Ok)
}

/// Writes the page of `cmd` (run as `bin`, its page titled `title`) and of each of its
/// subcommands (`rollout-forensics-analyze.1`, run as `rollout-forensics analyze`).
fn write_pages(
    cmd: clap::Command,
    bin: &str,
    title: &str,
    dir: &Path,
    written: &mut Vec<PathBuf>,
) -> Result<()> {
    let cmd = cmd
        .bin_name(bin.to_owned())
        .display_name(title.to_owned())
        .version(env!("CARGO_PKG_VERSION"))
        .disable_help_subcommand(true);
    let man = clap_mangen::Man::new(cmd.clone());
    let path = dir.join(man.get_filename());
    crate::atomic::write_atomically(&path, |file| {
        man.render(file)
            .with_context(|| format!("failed to write {}", path.display()))
    })?;
    written.push(path);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = sub.get_name();
        write_pages(
            sub.clone(),
            &format!("{bin} {name}"),
            &format!("{title}-{name}"),
            dir,
            written,
        )?;
    }
    Ok(())
}
