//! Asking quadlet itself whether it accepts a unit, before refit writes it. A unit quadlet
//! rejects generates no service: written over a running one, the service would no longer
//! load after the next `daemon-reload` (at every boot).
//!
//! The check is quadlet's own dry run over a temporary copy of the quadlet dir as it will be:
//! every new text of the run beside the units' siblings and every drop-in directory. What quadlet says of
//! the unit being checked is refused; a sibling's own fault is not this unit's to refuse. A
//! crash of quadlet is refused whoever caused it: the generator stops at it, so at the next
//! boot every unit after it would get no service.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Where distributions install the quadlet generator.
const QUADLET_PATHS: &[&str] = &["/usr/libexec/podman/quadlet", "/usr/lib/podman/quadlet"];

/// The most lines of quadlet's output a refusal quotes.
const QUOTED_LINES: usize = 24;

#[derive(Debug, thiserror::Error)]
pub enum QuadletError {
    #[error(
        "quadlet rejects {unit}: {detail}; fix the unit's options (nothing was written, and the unit on disk is unchanged)"
    )]
    Rejected { unit: String, detail: String },
    #[error(
        "quadlet crashed reading the units with the new {unit} (exit {status}), so at the next boot the units after the crash would get no service: {output}; fix or remove the unit that crashes it (nothing was written)"
    )]
    Crashed {
        unit: String,
        status: String,
        output: String,
    },
    #[error(
        "quadlet is not installed (looked in {}); install podman 4.4 or later, which ships it",
        QUADLET_PATHS.join(", ")
    )]
    Missing,
    #[error("cannot check {unit} with quadlet: {detail}; check that {dir} is readable")]
    Io {
        unit: String,
        dir: PathBuf,
        detail: String,
    },
}

/// A unit's text as a run will write it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewText {
    pub file_name: String,
    pub text: String,
}

pub trait Quadlet: Sync {
    /// Whether quadlet accepts every unit of `units` with its new text, all of them written
    /// at once beside the other units of `quadlet_dir`: a container may refer to a `.network`
    /// the same run writes.
    fn check_all(&self, units: &[NewText], quadlet_dir: &Path) -> Result<(), QuadletError>;

    /// Whether quadlet accepts `text` as the unit `file_name`, with the other units of
    /// `quadlet_dir` beside it.
    fn check(&self, file_name: &str, text: &str, quadlet_dir: &Path) -> Result<(), QuadletError> {
        let one = NewText {
            file_name: file_name.to_string(),
            text: text.to_string(),
        };
        self.check_all(std::slice::from_ref(&one), quadlet_dir)
    }
}

/// The quadlet generator on this host, run with `-dryrun`.
pub struct QuadletBinary;

impl Quadlet for QuadletBinary {
    fn check_all(&self, units: &[NewText], quadlet_dir: &Path) -> Result<(), QuadletError> {
        let bin = QUADLET_PATHS
            .iter()
            .map(Path::new)
            .find(|p| p.exists())
            .ok_or(QuadletError::Missing)?;
        QuadletAt(bin.to_path_buf()).check_all(units, quadlet_dir)
    }
}

/// The quadlet generator at a given path (or a command that runs one, as the conformance
/// suite runs the test hosts' quadlet), run with `-dryrun`.
pub struct QuadletAt(pub PathBuf);

impl Quadlet for QuadletAt {
    fn check_all(&self, units: &[NewText], quadlet_dir: &Path) -> Result<(), QuadletError> {
        let Some(first) = units.first() else {
            return Ok(());
        };
        let io = |detail: String| QuadletError::Io {
            unit: first.file_name.clone(),
            dir: quadlet_dir.to_path_buf(),
            detail,
        };
        let run = |keep: &dyn Fn(&str) -> bool| -> Result<Output, QuadletError> {
            let tmp = tempfile::Builder::new()
                .prefix("refit-quadlet-")
                .tempdir()
                .map_err(|e| io(e.to_string()))?;
            stage(quadlet_dir, tmp.path(), units, keep).map_err(|e| io(e.to_string()))?;
            let out = self.dry_run(tmp.path()).map_err(|e| io(e.to_string()))?;
            // Messages name the real dir, not the temporary copy.
            let tmp_name = tmp.path().display().to_string();
            let real = quadlet_dir.display().to_string();
            let fix = |b: &[u8]| String::from_utf8_lossy(b).replace(&tmp_name, &real);
            Ok(Output {
                status: out.status,
                stdout: fix(&out.stdout).into_bytes(),
                stderr: fix(&out.stderr).into_bytes(),
            })
        };
        let out = run(&|_| true)?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        if let Some(e) = first_rejection(&stderr, units) {
            return Err(e);
        }
        // quadlet exits 1 when it could not convert some unit and carried on with the rest.
        if out.status.success() || (out.status.code() == Some(1) && stderr.contains(MARKER)) {
            return Ok(());
        }
        // A crash stops quadlet wherever it is, maybe before a unit: each one's own fault
        // shows in a run without the other workloads (which are what crash it; the resources
        // they name stay).
        for u in units {
            let alone = run(&|name| name == u.file_name || !is_workload(name))?;
            let stderr = String::from_utf8_lossy(&alone.stderr);
            if let Some(e) = first_rejection(&stderr, std::slice::from_ref(u)) {
                return Err(e);
            }
        }
        Err(QuadletError::Crashed {
            unit: names(units),
            status: out
                .status
                .code()
                .map_or_else(|| "by a signal".to_string(), |c| c.to_string()),
            output: quoted(&stderr),
        })
    }
}

/// The first of `units` that quadlet complains about, with its complaint.
fn first_rejection(stderr: &str, units: &[NewText]) -> Option<QuadletError> {
    units.iter().find_map(|u| {
        rejection(stderr, &u.file_name).map(|detail| QuadletError::Rejected {
            unit: u.file_name.clone(),
            detail,
        })
    })
}

fn names(units: &[NewText]) -> String {
    units
        .iter()
        .map(|u| u.file_name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

impl QuadletAt {
    fn dry_run(&self, dir: &Path) -> std::io::Result<Output> {
        Command::new(&self.0)
            .args(["-dryrun", "-no-kmsg-log"])
            .env("QUADLET_UNIT_DIRS", dir)
            .output()
            .map_err(|e| {
                std::io::Error::new(e.kind(), format!("cannot run {}: {e}", self.0.display()))
            })
    }
}

/// How quadlet starts its complaint about one unit.
const MARKER: &str = "converting \"";

/// A `.container` or `.kube`: a unit that runs something, as opposed to the resources
/// (`.network`, `.volume`, `.pod`, `.image`, `.build`, `.artifact`) units refer to.
fn is_workload(name: &str) -> bool {
    name.ends_with(".container") || name.ends_with(".kube")
}

/// Copies `dir` into `into`: regular files and directories (drop-ins, and units in
/// subdirectories, which quadlet reads too), not instance links, and only the top-level
/// entries `keep` accepts; then writes the new texts `keep` accepts.
fn stage(
    dir: &Path,
    into: &Path,
    units: &[NewText],
    keep: &dyn Fn(&str) -> bool,
) -> std::io::Result<()> {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let name = e.file_name();
            let shown = name.to_string_lossy();
            if units.iter().any(|u| *u.file_name == *shown) || !keep(&shown) {
                continue;
            }
            copy_tree(&e.path(), &into.join(&name))?;
        }
    }
    for u in units.iter().filter(|u| keep(&u.file_name)) {
        std::fs::write(into.join(&u.file_name), &u.text)?;
    }
    Ok(())
}

/// Copies a regular file, or a directory with what it holds; skips links and the rest.
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    let kind = std::fs::symlink_metadata(from)?.file_type();
    if kind.is_file() {
        std::fs::copy(from, to)?;
    } else if kind.is_dir() {
        std::fs::create_dir(to)?;
        for e in std::fs::read_dir(from)?.flatten() {
            copy_tree(&e.path(), &to.join(e.file_name()))?;
        }
    }
    Ok(())
}

/// quadlet's complaint about `file_name`.
fn rejection(stderr: &str, file_name: &str) -> Option<String> {
    let marker = format!("{MARKER}{file_name}\":");
    let lines: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.split_once(&marker).map(|(_, why)| why.trim()))
        .collect();
    (!lines.is_empty()).then(|| lines.join("; "))
}

/// quadlet's output without its progress lines, at most `QUOTED_LINES` of it.
fn quoted(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.contains("Loading source") && !l.trim().is_empty())
        .collect();
    let mut out = lines[..lines.len().min(QUOTED_LINES)].join("\n");
    if lines.len() > QUOTED_LINES {
        out.push_str(&format!("\n[{} more lines]", lines.len() - QUOTED_LINES));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::put_file;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn only_the_checked_units_complaint_counts() {
        let stderr = "quadlet-generator[71]: Loading source unit file /q/bad.container\n\
            quadlet-generator[71]: converting \"other.container\": unsupported key 'X' in group 'Container' in /q/other.container\n\
            quadlet-generator[71]: converting \"bad.container\": unsupported key 'BogusKey' in group 'Container' in /q/bad.container\n";
        assert_eq!(
            rejection(stderr, "bad.container").as_deref(),
            Some("unsupported key 'BogusKey' in group 'Container' in /q/bad.container")
        );
        assert_eq!(rejection(stderr, "good.container"), None);
    }

    #[test]
    fn staging_copies_siblings_and_drop_ins_but_not_links_and_puts_the_new_text() {
        let src = tempfile::tempdir().expect("tmp");
        let dst = tempfile::tempdir().expect("tmp");
        put_file(src.path(), "net.network", "[Network]\n");
        put_file(src.path(), "app.container", "old");
        put_file(
            src.path(),
            "app.container.d/10.conf",
            "[Container]\nLabel=a=1\n",
        );
        put_file(
            src.path(),
            "container.d/20.conf",
            "[Container]\nLabel=b=1\n",
        );
        std::os::unix::fs::symlink("app.container", src.path().join("app@1.container"))
            .expect("link");
        let new = NewText {
            file_name: "app.container".into(),
            text: "new".into(),
        };
        stage(src.path(), dst.path(), &[new], &|_| true).expect("stage");
        let mut names: Vec<_> = std::fs::read_dir(dst.path())
            .expect("read")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "app.container",
                "app.container.d",
                "container.d",
                "net.network"
            ]
        );
        let read = |rel: &str| std::fs::read_to_string(dst.path().join(rel)).expect("r");
        assert_eq!(read("app.container"), "new");
        assert_eq!(read("container.d/20.conf"), "[Container]\nLabel=b=1\n");
    }

    /// A stand-in for quadlet: a script that answers as quadlet does for the files in
    /// `$QUADLET_UNIT_DIRS`.
    fn fake_quadlet(dir: &Path, script: &str) -> QuadletAt {
        let path = dir.join("quadlet");
        std::fs::write(
            &path,
            format!("#!/bin/sh\nd=$QUADLET_UNIT_DIRS\n{script}\n"),
        )
        .expect("w");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        QuadletAt(path)
    }

    /// Crashes, as quadlet 5.4 does on `Mount=type=image` without a source, whenever
    /// `crash.container` is in the dir; else rejects `app.container` when it holds `Bad=`.
    const CRASHES_ON_SIBLING: &str = r#"
if [ -e "$d/crash.container" ]; then
  echo 'panic: runtime error: index out of range [0] with length 0' >&2
  echo "goroutine 1 [running]:" >&2
  exit 2
fi
if grep -q '^Bad=' "$d/app.container"; then
  echo "quadlet-generator[1]: converting \"app.container\": unsupported key 'Bad' in group 'Container' in $d/app.container" >&2
  exit 1
fi
if [ -e "$d/other.container" ]; then
  echo 'quadlet-generator[1]: converting "other.container": no Image or Rootfs key specified' >&2
  exit 1
fi
exit 0"#;

    /// A quadlet dir holding one sibling, and the fake quadlet above.
    struct Scene {
        _bin: tempfile::TempDir,
        q: tempfile::TempDir,
        quadlet: QuadletAt,
    }

    impl Scene {
        fn beside(sibling: &str) -> Scene {
            let bin = tempfile::tempdir().expect("tmp");
            let q = tempfile::tempdir().expect("tmp");
            put_file(q.path(), sibling, "[Container]\n");
            let quadlet = fake_quadlet(bin.path(), CRASHES_ON_SIBLING);
            Scene {
                _bin: bin,
                q,
                quadlet,
            }
        }

        fn check(&self, file_name: &str, text: &str) -> Result<(), QuadletError> {
            self.quadlet.check(file_name, text, self.q.path())
        }
    }

    #[test]
    fn a_crash_of_quadlet_is_a_refusal_with_its_output() {
        let scene = Scene::beside("crash.container");
        let err = scene
            .check("app.container", "[Container]\nImage=a:1\n")
            .expect_err("a crash is refused");
        assert!(matches!(err, QuadletError::Crashed { .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.contains("(exit 2)"), "{msg}");
        assert!(
            msg.contains("panic: runtime error: index out of range"),
            "{msg}"
        );
    }

    #[test]
    fn a_crashing_sibling_does_not_hide_the_units_own_error() {
        let scene = Scene::beside("crash.container");
        let err = scene
            .check("app.container", "[Container]\nBad=1\n")
            .expect_err("refused");
        let QuadletError::Rejected { detail, .. } = &err else {
            panic!("not the unit's own error: {err}");
        };
        // Named as in the real dir, not the temporary copy.
        let want = format!(
            "unsupported key 'Bad' in group 'Container' in {}/app.container",
            scene.q.path().display()
        );
        assert_eq!(detail, &want);
    }

    #[test]
    fn a_siblings_own_error_is_not_this_units() {
        let scene = Scene::beside("other.container");
        scene
            .check("app.container", "[Container]\nImage=a:1\n")
            .expect("accepted");
    }
}
