//! `make refitctl-docs`: shell completions and man pages, generated from refitctl's own clap
//! definition so they cannot drift from it. Writes DIR/completions/{refitctl.bash, _refitctl,
//! refitctl.fish} and DIR/man/refitctl.1 with a page per subcommand (refitctl-update.1, ...).
//!
//! cli.rs is compiled in here as it is, so it must need nothing of refitctl but clap.

#![allow(clippy::print_stdout)]

use clap::CommandFactory;
use std::path::{Path, PathBuf};

#[allow(dead_code)]
#[path = "../src/cli.rs"]
mod cli;

fn generate(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    use clap_complete::Shell;
    let mut written = Vec::new();
    let completions = dir.join("completions");
    std::fs::create_dir_all(&completions)?;
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        let mut cmd = cli::Cli::command();
        written.push(clap_complete::generate_to(
            shell,
            &mut cmd,
            "refitctl",
            &completions,
        )?);
    }
    let man = dir.join("man");
    std::fs::create_dir_all(&man)?;
    let cmd = cli::Cli::command();
    clap_mangen::generate_to(cmd, &man)?;
    let mut pages: Vec<PathBuf> = std::fs::read_dir(&man)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    pages.sort();
    written.extend(pages);
    Ok(written)
}

fn main() -> std::process::ExitCode {
    let Some(dir) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: refitctl-docs DIR (make refitctl-docs writes build/refitctl)");
        return std::process::ExitCode::from(64);
    };
    match generate(&dir) {
        Ok(files) => {
            for f in files {
                println!("{}", f.display());
            }
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("refitctl-docs: cannot write {}: {e}", dir.display());
            std::process::ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completions_and_man_pages_name_every_subcommand_and_option() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        generate(dir.path())?;
        let bash = std::fs::read_to_string(dir.path().join("completions/refitctl.bash"))?;
        for word in [
            "update",
            "plan",
            "--detailed-exitcode",
            "--forget",
            "--limit",
        ] {
            assert!(bash.contains(word), "bash completion lacks {word}");
        }
        // The names --forget takes complete too.
        assert!(bash.contains("image-archive"));
        assert!(dir.path().join("completions/_refitctl").is_file());
        assert!(dir.path().join("completions/refitctl.fish").is_file());
        let top = std::fs::read_to_string(dir.path().join("man/refitctl.1"))?;
        assert!(top.contains(".TH refitctl 1"), "{top}");
        assert!(
            top.contains("refused by preflight"),
            "exit codes in the page"
        );
        let update = std::fs::read_to_string(dir.path().join("man/refitctl-update.1"))?;
        assert!(update.contains("detailed\\-exitcode"), "{update}");
        Ok(())
    }
}
