//! Project instructions and compaction as a `deputy exec` user sees them: the real
//! binary against the scripted model server.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

mod common;

use std::time::Duration;

use deputy_test_support::{MockModelServer, MockResponse, SseEvent, TestHome, responses};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use common::exec;

const SETTLED: Duration = Duration::from_secs(5);

/// The text of every message of a Responses request, as `role: text`.
fn messages(body: &Value) -> Vec<String> {
    body["input"]
        .as_array()
        .expect("input")
        .iter()
        .filter(|item| item["type"] == "message")
        .map(|item| {
            format!(
                "{}: {}",
                item["role"].as_str().unwrap_or_default(),
                item["content"][0]["text"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

#[test]
fn exec_sends_the_workspaces_agents_md_and_warns_about_a_file_it_skipped() {
    let server = MockModelServer::start();
    server.push(MockResponse::text_turn("Bonjour."));
    let home = TestHome::new(&server.base_url());
    std::fs::write(home.workspace().join("AGENTS.md"), "Answer in French.\n").unwrap();
    std::fs::write(home.path().join("AGENTS.md"), b"\xc3\x28 broken").unwrap();

    let run = exec(&home, &["Say hello."]);

    run.assert_code(0);
    assert_eq!(run.stdout, "Bonjour.\n");
    let global = home.path().join("AGENTS.md");
    assert!(
        run.stderr.contains(&format!(
            "warning: AGENTS.md instructions: skipped {}: not UTF-8",
            global.display()
        )),
        "{}",
        run.stderr
    );
    let requests = server.wait_for_requests(1, SETTLED).unwrap();
    let cwd = home.workspace().canonicalize().unwrap();
    assert_eq!(
        messages(&requests[0].body)[1..],
        [
            format!(
                "user: # AGENTS.md instructions for {}\n\n<INSTRUCTIONS>\nAnswer in French.\n\n</INSTRUCTIONS>",
                cwd.display()
            ),
            "user: Say hello.".to_string(),
        ]
    );
}

#[test]
fn exec_json_reports_a_compaction_as_context_compacted_and_finishes_the_task() {
    let server = MockModelServer::start();
    let completed_past_the_limit = SseEvent::new(
        "response.completed",
        json!({"response": {"id": "r1", "usage": {
            "input_tokens": 9_500, "output_tokens": 10, "total_tokens": 9_510,
        }}}),
    );
    server.push_all([
        MockResponse::sse(vec![
            responses::created("r1"),
            responses::function_call(
                "call-1",
                "shell",
                json!({"command": ["bash", "-c", "echo OLD-OUTPUT"]}).to_string(),
            ),
            completed_past_the_limit,
        ]),
        MockResponse::text_turn("the summary"),
        MockResponse::text_turn("All done."),
    ]);
    let home = TestHome::new(&server.base_url());
    home.write_config(&format!(
        "model_context_window = 10000\n{}",
        TestHome::default_config(&server.base_url())
    ));

    let run = exec(&home, &["--json-events", "do the long task"]);

    run.assert_code(0);
    let events: Vec<Value> = run
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let types: Vec<&str> = events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or_default())
        .collect();
    let compacted = types
        .iter()
        .position(|t| *t == "context_compacted")
        .unwrap_or_else(|| panic!("no context_compacted: {types:?}"));
    assert_eq!(events[compacted], json!({"type": "context_compacted"}));
    assert_eq!(types[compacted + 1], "warning", "{types:?}");
    assert_eq!(types.last(), Some(&"task_complete"));
    assert_eq!(events.last().unwrap()["last_agent_message"], "All done.");
    let started = &events[types.iter().position(|t| *t == "task_started").unwrap()];
    assert_eq!(started["model_context_window"], 10_000);
    let requests = server.wait_for_requests(3, SETTLED).unwrap();
    assert!(requests[1].raw_body.contains("OLD-OUTPUT"));
    assert!(!requests[2].raw_body.contains("OLD-OUTPUT"));
    assert!(requests[2].raw_body.contains("the summary"));
}
