//! The slash commands the agent announces: `/init`, `/compact`, `/review`.

use std::path::Path;
use std::process::Command;

use deputy_test_support::{MockModelServer, TestHome};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::harness::{Agent, agent_text, ok_step, patch, run_plan, say, update_kinds, updates_of};

const FINDINGS: &str = r#"{"findings":[{"title":"Handle the empty list","body":"`first()` is unwrapped.","confidence_score":0.9,"priority":1,"code_location":{"absolute_file_path":"/w/lib.rs","line_range":{"start":2,"end":2}}}],"overall_correctness":"patch is incorrect","overall_explanation":"It panics on empty input.","overall_confidence_score":0.8}"#;

#[test]
fn init_asks_the_model_to_write_an_agents_md() {
    let model = MockModelServer::start();
    model.push_all([
        patch(
            "call-1",
            "*** Begin Patch\n*** Add File: AGENTS.md\n+# Agents\n+Run `make test`.\n*** End Patch",
        ),
        say("Wrote AGENTS.md."),
    ]);
    let home = TestHome::new(&model.base_url());
    let seen = run_plan(
        &home,
        Agent::Deputy,
        json!([]),
        json!([{"op": "initialize"}, {"op": "new"}, {"op": "prompt", "text": "/init"}]),
    );
    assert_eq!(ok_step(&seen, 2)["result"]["stopReason"], "end_turn");
    let first = model.requests()[0].body["input"].to_string();
    assert!(
        first.contains("Create an AGENTS.md file") && !first.contains("\"/init\""),
        "{first}"
    );
    assert_eq!(
        std::fs::read_to_string(home.workspace().join("AGENTS.md")).unwrap(),
        "# Agents\nRun `make test`.\n"
    );
}

#[test]
fn compact_summarizes_the_history_and_the_next_prompt_starts_from_the_summary() {
    let model = MockModelServer::start();
    model.push_all([
        say("first answer"),
        say("SUMMARY: the user said one"),
        say("after"),
    ]);
    let home = TestHome::new(&model.base_url());
    let seen = run_plan(
        &home,
        Agent::Deputy,
        json!([]),
        json!([
            {"op": "initialize"},
            {"op": "new"},
            {"op": "prompt", "text": "one"},
            {"op": "prompt", "text": "/compact"},
            {"op": "prompt", "text": "two"},
        ]),
    );
    let compact = ok_step(&seen, 3);
    assert_eq!(compact["result"]["stopReason"], "end_turn");
    let statuses: Vec<String> = updates_of(compact, "compaction_update")
        .iter()
        .map(|u| u["status"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(statuses, ["in_progress", "completed"], "{compact:#}");
    ok_step(&seen, 4);
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let last = requests[2].body["input"].to_string();
    assert!(last.contains("SUMMARY: the user said one"), "{last}");
    assert!(
        !last.contains("first answer"),
        "the history was replaced: {last}"
    );
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

#[test]
fn review_reports_the_findings_as_the_agents_message() {
    let model = MockModelServer::start();
    model.push(say(FINDINGS));
    let home = TestHome::new(&model.base_url());
    let ws = home.workspace();
    git(ws, &["init", "-q", "-b", "main"]);
    std::fs::write(ws.join("lib.rs"), "fn a() {}\n").unwrap();
    git(ws, &["add", "."]);
    git(ws, &["commit", "-q", "-m", "first"]);
    std::fs::write(ws.join("lib.rs"), "fn a() { todo!() }\n").unwrap();

    let seen = run_plan(
        &home,
        Agent::Deputy,
        json!([]),
        json!([{"op": "initialize"}, {"op": "new"}, {"op": "prompt", "text": "/review"}]),
    );
    let review = ok_step(&seen, 2);
    assert_eq!(review["result"]["stopReason"], "end_turn");
    let call = updates_of(review, "tool_call")[0];
    assert_eq!(call["title"], "Review the uncommitted changes");
    assert_eq!(call["kind"], "read");
    let kinds = update_kinds(review);
    assert!(
        kinds.contains(&("tool_call_update".to_string(), "completed".to_string())),
        "{kinds:?}"
    );
    let text = agent_text(review);
    assert!(text.contains("Handle the empty list"), "{text}");
    assert!(text.contains("It panics on empty input."), "{text}");
    // The reviewer saw the change.
    let asked = model.requests()[0].body.to_string();
    assert!(asked.contains("todo!()"), "{asked}");
}
