//! Taking over units refit did not write, on the simulated host: a running unit whose text
//! means the desired one is recorded with no restart, its file left as its tool wrote it; one
//! whose container cannot be recognised is restarted once, its label written first, and never
//! again (the loop of a file without refit's label, restarted until the run gave up).

use crate::systemd::{Job, Systemd};
use crate::testing::sim::Bed;
use serde_json::{Value, json};
use std::time::{Duration, SystemTime};

const IMAGE: &str = "127.0.0.1:5000/svc:1";

fn args() -> Value {
    json!({"name": "db", "image": IMAGE, "env": {"A": "1", "B": "2"}, "volumes": ["/srv:/srv"]})
}

/// The text refit writes for `args()`, without its label line, as another tool would write it.
fn foreign_text() -> String {
    let scratch = Bed::new(IMAGE, "img-a");
    let mut present = args();
    present["state"] = json!("present");
    assert_eq!(scratch.run_unit(present).out["failed"], json!(false));
    let text = std::fs::read_to_string(scratch.dir.path().join("quadlet/db.container"))
        .expect("read unit");
    text.lines()
        .filter(|l| !l.contains(crate::unit::REVISION_LABEL))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// The same text, written by hand: comments, spacing, and each section's keys in reverse
/// order of their names (a key's own values keep their order: that one means something).
fn hand_written(text: &str) -> String {
    let mut out = String::from("# db, written by hand\n");
    for block in text.split('[').filter(|b| !b.trim().is_empty()) {
        let mut lines = block.lines();
        let head = lines.next().unwrap_or_default();
        out.push_str(&format!("\n[{head}\n"));
        let mut entries: Vec<&str> = lines.filter(|l| !l.trim().is_empty()).collect();
        let key = |e: &&str| e.split('=').next().unwrap_or_default().to_string();
        entries.sort_by_key(|e| std::cmp::Reverse(key(e)));
        for e in entries {
            out.push_str(&format!("# why this line\n{}\n", e.replacen('=', " = ", 1)));
        }
    }
    out
}

/// A bed where `db` runs from `text`, a file refit did not write, started after it was.
fn running_foreign(text: &str) -> Bed {
    let bed = Bed::new(IMAGE, "img-a");
    crate::testing::put_file(bed.dir.path(), "quadlet/db.container", text);
    bed.sim
        .enqueue(Job::Start, &["db.service".into()])
        .expect("start");
    bed.jobs();
    bed
}

fn unit_text(bed: &Bed) -> String {
    std::fs::read_to_string(bed.dir.path().join("quadlet/db.container")).expect("read unit")
}

#[test]
fn a_running_unit_with_the_desired_meaning_is_taken_over_with_no_restart() {
    let text = hand_written(&foreign_text());
    let bed = running_foreign(&text);

    let mut check = args();
    check["_ansible_check_mode"] = json!(true);
    check["_ansible_diff"] = json!(true);
    let out = bed.run_unit(check).out;
    assert_eq!(out["adopted"], json!(true), "{out}");
    assert_eq!(out["actions"], json!(["adopt"]), "{out}");
    assert_eq!(out["restart_needed"], json!(false), "{out}");
    assert!(out.get("diff").is_none(), "nothing to show: {out}");

    let out = bed.run_unit(args()).out;
    assert_eq!(out["failed"], json!(false), "{out}");
    assert_eq!(out["adopted"], json!(true), "{out}");
    assert_eq!(out["changed"], json!(true), "{out}");
    assert!(bed.jobs().is_empty(), "a unit taken over was restarted");
    assert_eq!(
        unit_text(&bed),
        text,
        "the file its tool wrote was rewritten"
    );

    let mut again = args();
    again["history"] = json!(true);
    let out = bed.run_unit(again).out;
    assert_eq!(out["changed"], json!(false), "{out}");
    assert!(out.get("adopted").is_none(), "adopted twice: {out}");
    let kept = out["history"].as_array().expect("history");
    assert_eq!(kept.len(), 1, "{out}");
    assert_eq!(kept[0]["image_id"], json!("img-a"), "{out}");
    assert_eq!(kept[0]["revision"], out["revision"]["after"], "{out}");
    assert!(bed.jobs().is_empty());

    // Its next real change (a new image under the tag) writes refit's text, label included.
    bed.sim.add_image(IMAGE, "img-b");
    let out = bed.run_unit(args()).out;
    assert_eq!(out["failed"], json!(false), "{out}");
    assert_eq!(bed.jobs(), vec!["restart db.service".to_string()]);
    let label = format!("{}=", crate::unit::REVISION_LABEL);
    assert!(unit_text(&bed).contains(&label), "{}", unit_text(&bed));
    assert_eq!(json!(bed.revision("db.service")), out["revision"]["after"]);
    assert_eq!(bed.run_unit(args()).out["changed"], json!(false));
}

/// The loop the issue found: refit's text without its label, on a container that does not
/// say what it runs. Restarting it without writing the label made another such container.
#[test]
fn a_container_it_cannot_recognise_is_restarted_once_with_its_label_written() {
    let text = foreign_text();
    let bed = running_foreign(&text);
    // The file changed after the container started: what runs may be an older text.
    let later = SystemTime::now() + Duration::from_secs(3600);
    std::fs::File::options()
        .write(true)
        .open(bed.dir.path().join("quadlet/db.container"))
        .and_then(|f| f.set_modified(later))
        .expect("set mtime");

    let mut check = args();
    check["_ansible_check_mode"] = json!(true);
    let out = bed.run_unit(check).out;
    assert_eq!(
        out["actions"],
        json!(["write_unit", "daemon_reload", "restart"]),
        "{out}"
    );
    assert!(out.get("adopted").is_none(), "{out}");

    let out = bed.run_unit(args()).out;
    assert_eq!(out["failed"], json!(false), "{out}");
    assert_eq!(bed.jobs(), vec!["restart db.service".to_string()]);
    assert_eq!(json!(bed.revision("db.service")), out["revision"]["after"]);
    let out = bed.run_unit(args()).out;
    assert_eq!(out["changed"], json!(false), "{out}");
    assert!(bed.jobs().is_empty(), "restarted again");
}

#[test]
fn a_foreign_unit_whose_text_differs_is_updated_with_its_diff() {
    let text = foreign_text().replace("A=1", "A=0");
    let bed = running_foreign(&text);
    let mut check = args();
    check["_ansible_check_mode"] = json!(true);
    check["_ansible_diff"] = json!(true);
    let out = bed.run_unit(check).out;
    assert_eq!(out["reasons"], json!(["unit_changed"]), "{out}");
    assert!(out.get("adopted").is_none(), "{out}");
    let diff = &out["diff"];
    assert!(
        diff["before"].as_str().unwrap_or_default().contains("A=0"),
        "{out}"
    );
    assert!(
        diff["after"].as_str().unwrap_or_default().contains("A=1"),
        "{out}"
    );

    let out = bed.run_unit(args()).out;
    assert_eq!(out["failed"], json!(false), "{out}");
    assert_eq!(bed.jobs(), vec!["restart db.service".to_string()]);
    assert_eq!(json!(bed.revision("db.service")), out["revision"]["after"]);
}
