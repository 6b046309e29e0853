//! Snapshots of what `status` and `plan` print, from the events of real runs on the testbed
//! (tests/fixtures): the status after a z-stream image of content was published, and the
//! check-mode update that followed. IDs and revisions are redacted.

use crate::events::Run;
use crate::report;

fn fixture(name: &str) -> Run {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    Run::parse(&std::fs::read_to_string(&path).expect("fixture"))
}

fn redacted() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    // As wide as the IDs, so the columns stay as refitctl aligned them.
    s.add_filter(r"\b[0-9a-f]{12}\b", "[short-id..]");
    s
}

#[test]
fn status_table() {
    let rows = report::status_rows(&fixture("status.jsonl"));
    let content = rows
        .iter()
        .find(|r| r.service == "content.service")
        .expect("content");
    assert_eq!(content.pending, "newer image");
    let table = report::status_table(&rows);
    redacted().bind(|| insta::assert_snapshot!(table));
}

#[test]
fn plan_of_a_z_stream_update() {
    let plans = report::plan(&fixture("plan-update.jsonl"));
    assert_eq!(plans.len(), 1);
    assert_eq!(plans[0].restart, ["content.service (image_changed)"]);
    assert_eq!(plans[0].migrate, ["content"]);
    let text = report::plan_text(&plans);
    redacted().bind(|| insta::assert_snapshot!(text));
}

#[test]
fn plan_as_json() {
    let run = fixture("plan-update.jsonl");
    let plans = report::plan(&run);
    let doc = serde_json::to_value(crate::json::plan(&plans, &[])).expect("serializes");
    assert_eq!(doc["hosts"][0]["units"].as_array().map(Vec::len), Some(5));
    // The units are the module's own results, tested in refit-core; here, what refitctl adds.
    insta::assert_json_snapshot!(doc, {".hosts[].units" => "[5 unit results]"});
}

#[test]
fn status_as_json() {
    let run = fixture("status.jsonl");
    let doc = serde_json::to_value(crate::json::status(&run)).expect("serializes");
    insta::assert_json_snapshot!(doc, {
        "[].units" => "[unit results]",
        "[].services[].revision" => "[revision]",
        "[].services[].image" => "[image id]",
    });
}
