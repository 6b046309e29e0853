//! The quadlet conformance suite: every unit of podman's own quadlet e2e files (the peer suite
//! beside the checkout, `../shared/quadlet-corpus/podman-e2e`, or `REFIT_QUADLET_CORPUS`; it is
//! test data the project reads in place and does not ship) goes through refit's parse and render, then quadlet's dry run on
//! the original and on refit's text, and through refit's quadlet gate. A file quadlet accepts
//! must pass the gate and generate the same services from refit's text; a file quadlet
//! rejects must be refused by the gate with quadlet's own message; a crash of quadlet must be
//! refused quoting it.
//!
//! It needs a real quadlet: `REFIT_QUADLET` names the program (tests/conformance/run.sh sets
//! it to the test hosts' podman 5.4). Run it with `cargo test -p refit-core --test
//! conformance -- --ignored`; `make test` does.
// The suite's report is its counts on stdout, for the README and the reviewer.
#![allow(clippy::print_stdout)]

use refit_core::quadlet::{Quadlet, QuadletAt, QuadletError};
use refit_core::unit::graph;
use refit_core::unit::{Kind, UnitFile, UnitName};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const KINDS: &[&str] = &[
    "container",
    "network",
    "volume",
    "pod",
    "kube",
    "image",
    "build",
    "artifact",
];

fn corpus() -> PathBuf {
    match std::env::var_os("REFIT_QUADLET_CORPUS") {
        Some(dir) => PathBuf::from(dir),
        None => {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/quadlet-corpus/podman-e2e")
        }
    }
}

/// What quadlet made of one unit.
#[derive(Debug, Clone, PartialEq)]
enum Verdict {
    Accepted,
    Rejected(String),
    Crashed(String),
}

struct DryRun {
    verdict: Verdict,
    /// The generated services, comments, blank lines and the dir's own path left out.
    services: String,
}

fn dry_run(quadlet: &Path, dir: &Path, file_name: &str) -> DryRun {
    let out = Command::new(quadlet)
        .args(["-dryrun", "-no-kmsg-log"])
        .env("QUADLET_UNIT_DIRS", dir)
        .output()
        .expect("quadlet runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let marker = format!("converting \"{file_name}\":");
    let own: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.split_once(&marker).map(|(_, why)| why.trim()))
        .collect();
    let verdict = if !own.is_empty() {
        Verdict::Rejected(own.join("; "))
    } else if out.status.success()
        || (out.status.code() == Some(1) && stderr.contains("converting \""))
    {
        Verdict::Accepted
    } else {
        let first = stderr
            .lines()
            .find(|l| !l.contains("Loading source") && !l.trim().is_empty())
            .unwrap_or_default();
        Verdict::Crashed(first.to_string())
    };
    let dir_name = dir.display().to_string();
    let services = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with(';'))
        .map(|l| l.replace(&dir_name, "QUADLET_DIR"))
        .collect::<Vec<_>>()
        .join("\n");
    DryRun { verdict, services }
}

/// The files each case needs beside it, from the Go test's "with dependencies" table:
/// `Entry("…", "FILE", []string{"DEP", …})`.
fn dependencies(go_test: &str) -> BTreeMap<String, Vec<String>> {
    let quoted = |s: &str| -> Vec<String> {
        s.split('"')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    go_test
        .lines()
        .filter_map(|l| {
            let (head, deps) = l.split_once("[]string{")?;
            let file = quoted(head.split_once("Entry(")?.1).into_iter().nth(1)?;
            Some((file, quoted(deps)))
        })
        .collect()
}

/// Every unit file in the corpus, subdirectories included, by path.
fn units(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("corpus").flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if p.is_dir() && !name.ends_with(".d") {
            out.extend(units(&p));
        } else if p.is_file()
            && name
                .rsplit_once('.')
                .is_some_and(|(_, k)| KINDS.contains(&k))
        {
            out.push(p);
        }
    }
    out.sort();
    out
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read").flatten() {
        std::fs::copy(e.path(), to.join(e.file_name())).expect("copy");
    }
}

/// A dir holding the case's unit, the files it depends on and every drop-in dir of the corpus
/// (quadlet applies only those that match).
fn case_dir(root: &Path, corpus: &Path, unit: &Path, deps: &[String], text: &str) -> PathBuf {
    let name = unit.file_name().expect("name");
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).expect("mkdir");
    for d in deps {
        std::fs::copy(corpus.join(d), dir.join(d)).expect("dependency");
    }
    for e in std::fs::read_dir(corpus).expect("corpus").flatten() {
        if e.file_name().to_string_lossy().ends_with(".d") {
            copy_dir(&e.path(), &dir.join(e.file_name()));
        }
    }
    std::fs::write(dir.join(name), text).expect("unit");
    dir
}

#[derive(Default)]
struct Tally {
    /// By kind: accepted with the same services, rejected with quadlet's message, crashes.
    kinds: BTreeMap<String, [usize; 3]>,
    /// Keys newer than quadlet 5.4, by file.
    newer_keys: Vec<String>,
    /// quadlet-accepted files that container_unit's `content` path refuses, with why.
    content_refused: Vec<String>,
    /// Units whose references (`Image=X.image`, `Volume=X.volume:…`) were found in the corpus
    /// and put beside them, beyond the Go test's dependency table.
    refs_supplied: usize,
    /// Rejected because a unit they refer to is not beside them (the Go test supplies some of
    /// those outside its dependency table).
    missing_refs: Vec<String>,
    /// Units whose services quadlet itself writes with arguments in varying order.
    varying_order: Vec<String>,
    mismatches: Vec<String>,
}

/// quadlet 5.4 writes some arguments (`--dns` against `--tag` of a `.build`, `--group-add`
/// against `--tag`, `--ip` of a `.pod`) in an order that varies from run to run, and one order
/// may come up far more often than another (`--group-add` first in 257 of 300 runs). So quadlet
/// runs over both texts, up to `ORDER_RUNS` times more each, until the two give one same text:
/// refit's text then generates what the original can. A refit text that orders arguments
/// otherwise on every run never meets the original's and fails.
fn same_but_for_quadlets_own_order(
    quadlet: &QuadletAt,
    original: Generated<'_>,
    refit: Generated<'_>,
    tally: &mut Tally,
) -> bool {
    const ORDER_RUNS: usize = 200;
    let name = original.name;
    let mut originals = std::collections::BTreeSet::from([original.services.to_string()]);
    let mut refits = std::collections::BTreeSet::from([refit.services.to_string()]);
    for _ in 0..ORDER_RUNS {
        originals.insert(dry_run(&quadlet.0, original.dir, name).services);
        refits.insert(dry_run(&quadlet.0, refit.dir, name).services);
        if !originals.is_disjoint(&refits) {
            tally.varying_order.push(name.to_string());
            return true;
        }
    }
    false
}

/// The services quadlet generated from one text of a unit, and the directory it read it from.
#[derive(Clone, Copy)]
struct Generated<'a> {
    name: &'a str,
    dir: &'a Path,
    services: &'a str,
}

/// One case: `unit`, with `deps` and the drop-in dirs of `corpus` beside it.
struct Case<'a> {
    corpus: &'a Path,
    unit: &'a Path,
    deps: &'a [String],
}

/// The units `text` refers to, and what those refer to, that the corpus holds beside it: what
/// quadlet needs to convert it, as refit follows references.
fn referenced(corpus: &Path, kind: Kind, text: &str, deps: &[String]) -> Vec<String> {
    let mut out: Vec<String> = deps.to_vec();
    let mut pending: Vec<(Kind, String)> = vec![(kind, text.to_string())];
    while let Some((kind, text)) = pending.pop() {
        let Ok(unit) = UnitFile::parse(&text) else {
            continue;
        };
        for r in graph::references(kind, &unit) {
            let path = corpus.join(&r.to);
            if out.contains(&r.to) || !path.is_file() {
                continue;
            }
            let Some(k) = r.to.rsplit_once('.').and_then(|(_, e)| Kind::from_ext(e)) else {
                continue;
            };
            pending.push((k, std::fs::read_to_string(&path).expect("read reference")));
            out.push(r.to);
        }
    }
    out
}

/// What container_unit's `content` path makes of a unit: the text it would write, or why it
/// refuses the unit.
fn module_path(name: &str, text: &str) -> Result<String, String> {
    let unit = UnitName::parse(name).map_err(|e| e.to_string())?;
    let opts = refit_core::unit::ContainerOptions {
        content: Some(text.to_string()),
        ..Default::default()
    };
    refit_core::unit::render_kind(unit.kind(), &opts, &|k, _| k.to_string())
        .map(|r| r.unit.render())
        .map_err(|e| e.to_string())
}

fn check_unit(quadlet: &QuadletAt, tmp: &Path, case: &Case, tally: &mut Tally) {
    let Case { corpus, unit, deps } = *case;
    let name = unit
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    let kind = name.rsplit_once('.').map(|(_, k)| k).unwrap_or_default();
    let text = std::fs::read_to_string(unit).expect("read unit");
    let supplied = match Kind::from_ext(kind) {
        Some(k) => referenced(corpus, k, &text, deps),
        None => deps.to_vec(),
    };
    if supplied.len() > deps.len() {
        tally.refs_supplied += 1;
    }
    let deps = &supplied[..];
    let dir = case_dir(&tmp.join("original"), corpus, unit, deps, &text);
    let original = dry_run(&quadlet.0, &dir, &name);
    let parsed = match UnitFile::parse(&text) {
        Ok(u) => u,
        Err(e) => {
            if original.verdict == Verdict::Accepted {
                tally.mismatches.push(format!(
                    "{name}: quadlet accepts it, refit cannot parse it: {e}"
                ));
            }
            return;
        }
    };
    // The text container_unit would write; where its `content` path refuses the unit, the
    // parse alone is still held to quadlet's reading.
    let module = module_path(&name, &text);
    let rendered = module.clone().unwrap_or_else(|_| parsed.render());
    let gate = quadlet.check(&name, &rendered, &dir);
    let mut wrong = Vec::new();
    let slot = match (&original.verdict, gate) {
        (Verdict::Accepted, Ok(())) => {
            let again = case_dir(&tmp.join("refit"), corpus, unit, deps, &rendered);
            let refit = dry_run(&quadlet.0, &again, &name);
            if refit.services != original.services
                && !same_but_for_quadlets_own_order(
                    quadlet,
                    Generated {
                        name: &name,
                        dir: &dir,
                        services: &original.services,
                    },
                    Generated {
                        name: &name,
                        dir: &again,
                        services: &refit.services,
                    },
                    tally,
                )
            {
                wrong.push(format!(
                    "refit's text generates other services:\n--- original\n{}\n--- refit\n{}",
                    original.services, refit.services
                ));
            }
            if let Err(e) = &module {
                tally.content_refused.push(format!("{name}: {e}"));
            }
            Some(0)
        }
        (Verdict::Rejected(msg), Err(QuadletError::Rejected { detail, .. })) => {
            if &detail != msg {
                wrong.push(format!("quadlet says {msg:?}, the gate {detail:?}"));
            }
            if msg.contains("was not found") || msg.contains("does not exist") {
                tally.missing_refs.push(name.clone());
            }
            if msg.starts_with("unsupported key") {
                let key = msg.split(" in /").next().unwrap_or(msg);
                tally.newer_keys.push(format!("{name}: {key}"));
            }
            Some(1)
        }
        (Verdict::Crashed(first), Err(e @ QuadletError::Crashed { .. })) => {
            if !e.to_string().contains(first.as_str()) {
                wrong.push(format!(
                    "the gate's refusal does not quote quadlet's {first:?}: {e}"
                ));
            }
            Some(2)
        }
        (verdict, gate) => {
            wrong.push(format!("quadlet: {verdict:?}, the gate: {gate:?}"));
            None
        }
    };
    tally
        .mismatches
        .extend(wrong.into_iter().map(|w| format!("{name}: {w}")));
    if let Some(slot) = slot {
        tally.kinds.entry(kind.to_string()).or_default()[slot] += 1;
    }
}

#[test]
#[ignore = "needs quadlet: tests/conformance/run.sh (make test) runs it"]
fn every_corpus_unit_reads_as_quadlet_reads_it() {
    let quadlet = quadlet();
    let corpus = corpus();
    let go_test = std::fs::read_to_string(corpus.join("_quadlet_test.go")).expect("Go test");
    let deps = dependencies(&go_test);
    assert!(deps.len() >= 20, "the dependency table was not found");
    let tmp = tempfile::tempdir().expect("tmp");
    let mut tally = Tally::default();
    let all = units(&corpus);
    let none = Vec::new();
    for unit in &all {
        let name = unit
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let case = Case {
            corpus: &corpus,
            unit,
            deps: deps.get(&name).unwrap_or(&none),
        };
        check_unit(&quadlet, tmp.path(), &case, &mut tally);
    }
    let sum = |i: usize| tally.kinds.values().map(|k| k[i]).sum::<usize>();
    println!(
        "conformance: {} units; quadlet 5.4 accepts {} (refit's text generates the same services), \
         rejects {} (the gate refuses with quadlet's message), crashes on {} (the gate refuses quoting it)",
        all.len(),
        sum(0),
        sum(1),
        sum(2)
    );
    for (kind, [a, r, c]) in &tally.kinds {
        println!("  .{kind}: {a} accepted, {r} rejected, {c} crashes");
    }
    println!(
        "rejected for keys newer than quadlet 5.4: {}",
        tally.newer_keys.len()
    );
    for k in &tally.newer_keys {
        println!("  {k}");
    }
    println!(
        "rejected for a unit they refer to that is not beside them: {} ({})",
        tally.missing_refs.len(),
        tally.missing_refs.join(", ")
    );
    println!(
        "quadlet's own argument order varies between runs (met by running both again): {}",
        tally.varying_order.join(", ")
    );
    println!(
        "units given the units they refer to from the corpus (beyond the Go test's table): {}",
        tally.refs_supplied
    );
    println!(
        "accepted files container_unit's `content` path refuses, each with its reason: {}",
        tally.content_refused.len()
    );
    let mut refused_by_kind: BTreeMap<&str, usize> = BTreeMap::new();
    for c in &tally.content_refused {
        let kind = c
            .split(':')
            .next()
            .and_then(|n| n.rsplit_once('.'))
            .map_or("", |(_, k)| k);
        *refused_by_kind.entry(kind).or_default() += 1;
    }
    for (kind, n) in &refused_by_kind {
        println!("  .{kind}: {n} refused");
    }
    for c in &tally.content_refused {
        println!("  {c}");
    }
    assert!(
        tally.mismatches.is_empty(),
        "{} of {} units differ:\n{}",
        tally.mismatches.len(),
        all.len(),
        tally.mismatches.join("\n")
    );
    assert_eq!(sum(0) + sum(1) + sum(2), all.len());
}

fn quadlet() -> QuadletAt {
    QuadletAt(PathBuf::from(std::env::var("REFIT_QUADLET").expect(
        "REFIT_QUADLET names the quadlet program; run tests/conformance/run.sh",
    )))
}

/// Runs one case made of `files` (the first is the unit; a path with a `/` is a drop-in) and
/// returns the tally: quadlet and refit must agree on it.
fn one_case(files: &[(&str, &str)]) -> Tally {
    let src = tempfile::tempdir().expect("tmp");
    for (rel, text) in files {
        let p = src.path().join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }
    let unit = src.path().join(files[0].0);
    let tmp = tempfile::tempdir().expect("tmp");
    let mut tally = Tally::default();
    let case = Case {
        corpus: src.path(),
        unit: &unit,
        deps: &[],
    };
    check_unit(&quadlet(), tmp.path(), &case, &mut tally);
    assert!(
        tally.mismatches.is_empty(),
        "{}",
        tally.mismatches.join("\n")
    );
    tally
}

/// The case was accepted (0), rejected (1) or a crash (2), and refit agreed.
fn verdict(files: &[(&str, &str)]) -> usize {
    let tally = one_case(files);
    let counts = tally.kinds.values().next().copied().unwrap_or_default();
    counts.iter().position(|&n| n == 1).expect("one verdict")
}

#[test]
#[ignore = "needs quadlet: tests/conformance/run.sh (make test) runs it"]
fn repeated_section() {
    let unit = "[Unit]\nDescription=x\n[Container]\nImage=localhost/app\n[Install]\n\
                WantedBy=default.target\n[Unit]\nAfter=db.service\nRequires=db.service\n";
    assert_eq!(verdict(&[("app.container", unit)]), 0);
}

#[test]
#[ignore = "needs quadlet: tests/conformance/run.sh (make test) runs it"]
fn continuation() {
    let unit = "[Container]\nImage=localhost/app\nExec=/bin/echo hello\\\nworld\n";
    assert_eq!(verdict(&[("app.container", unit)]), 0);
}

#[test]
#[ignore = "needs quadlet: tests/conformance/run.sh (make test) runs it"]
fn comment_in_continuation() {
    let unit = "[Container]\nImage=localhost/app\nExec=/bin/echo a \\\n# why\n\n  b\\\n; more\nc\n";
    assert_eq!(verdict(&[("app.container", unit)]), 0);
}

#[test]
#[ignore = "needs quadlet: tests/conformance/run.sh (make test) runs it"]
fn quoted_image() {
    let unit = "[Container]\nImage=\"localhost/app\"\n";
    assert_eq!(verdict(&[("app.container", unit)]), 0);
}

#[test]
#[ignore = "needs quadlet: tests/conformance/run.sh (make test) runs it"]
fn instance_file() {
    let unit = "[Container]\nImage=localhost/app\nExec=/bin/run daily\n";
    assert_eq!(verdict(&[("report@daily.container", unit)]), 0);
}

#[test]
#[ignore = "needs quadlet: tests/conformance/run.sh (make test) runs it"]
fn crash() {
    // podman 5.4's quadlet panics on an image mount without a source.
    let unit = "[Container]\nImage=localhost/app\nMount=type=image,destination=/x,ro\n";
    assert_eq!(verdict(&[("app.container", unit)]), 2);
}

#[test]
#[ignore = "needs quadlet: tests/conformance/run.sh (make test) runs it"]
fn drop_in() {
    let unit = "[Container]\nImage=localhost/app\n";
    let own = "[Container]\nEnvironment=OWN=1\n";
    let top = "[Container]\nEnvironment=TOP=1\n";
    let files = [
        ("app-web.container", unit),
        ("app-web.container.d/10-own.conf", own),
        (
            "app-.container.d/20-dash.conf",
            "[Service]\nRestart=always\n",
        ),
        ("container.d/30-top.conf", top),
    ];
    assert_eq!(verdict(&files), 0);
    // A drop-in quadlet rejects makes the unit rejected, and the gate refuses it.
    let bad = "[Container]\nNotAKey=1\n";
    let files = [("app.container", unit), ("container.d/40-bad.conf", bad)];
    assert_eq!(verdict(&files), 1);
}
