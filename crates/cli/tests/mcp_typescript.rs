//! `deputy mcp-server` driven by the official MCP TypeScript SDK on Node (`Client` over
//! `StdioClientTransport`): approvals as a TypeScript client answers and withdraws them.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::path::Path;
use std::time::Duration;

use deputy_test_support::{MockModelServer, MockResponse, NodeMcpSdk, TestHome, run_with_deadline};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// The binary under test.
const DEPUTY: &str = env!("CARGO_BIN_EXE_deputy");

/// Longest the Node client may run; it finishes in about a second.
const SCRIPT_DEADLINE: Duration = Duration::from_secs(60);

/// Runs the client script through `scenario` against a server in `home`.
fn run_client(home: &TestHome, scenario: &str) -> Value {
    let sdk = NodeMcpSdk::install().unwrap_or_else(|err| panic!("no MCP TypeScript SDK: {err}"));
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/typescript/mcp_sdk_client.mjs");
    let script = sdk
        .place_script(&source)
        .unwrap_or_else(|err| panic!("{err}"));
    let mut command = home.command("node");
    command
        .arg(&script)
        .arg(DEPUTY)
        .arg(scenario)
        .env("HOME", home.path());
    let output = run_with_deadline(command, SCRIPT_DEADLINE).unwrap_or_else(|err| panic!("{err}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "node exited with {}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}",
        output.status
    );
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|err| panic!("script output is not JSON ({err}): {stdout}\n{stderr}"))
}

#[test]
fn a_typescript_call_with_a_3s_timeout_survives_a_20s_command_on_progress_alone() {
    // The command outlasts the client's request timeout almost seven times; only the
    // progress heartbeat (every 2 s by default) keeps the call alive.
    let model = MockModelServer::start();
    model.push_all([
        MockResponse::function_call_turn(
            "call-ts",
            "shell_command",
            json!({"command": "sleep 20 && echo slept", "timeout_ms": 60_000}),
        ),
        MockResponse::text_turn("Done after the long command."),
    ]);
    let home = TestHome::new(&model.base_url());
    let seen = run_client(&home, "heartbeat");

    assert_eq!(
        json!({"callOutcome": seen["callOutcome"], "text": seen["text"]}),
        json!({"callOutcome": "result", "text": ["Done after the long command."]}),
        "{seen}"
    );
    let elapsed = seen["elapsedMs"].as_u64().unwrap_or_default();
    assert!(elapsed >= 20_000, "the command ran its 20 s: {seen}");
    let mut at = vec![0];
    at.extend(
        seen["progress"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["atMs"].as_u64()),
    );
    at.push(elapsed);
    let longest_quiet = at.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(elapsed);
    assert!(
        longest_quiet < 3_000,
        "no gap of 3 s without progress (longest {longest_quiet} ms): {seen}"
    );
    assert_eq!(model.requests().len(), 2);
}

#[test]
fn a_typescript_client_approves_a_command_and_it_runs() {
    let (model, home) =
        TestHome::asked_to_run("call-ts", "touch approved.txt", "Approved and done.");
    let seen = run_client(&home, "approve");

    assert!(home.workspace().join("approved.txt").exists(), "{seen}");
    let thread_id = seen["structuredContent"]["threadId"].clone();
    assert!(thread_id.is_string(), "{seen}");
    assert_eq!(
        json!({
            "callOutcome": seen["callOutcome"],
            "isError": seen["isError"],
            "text": seen["text"],
            "structuredContent": seen["structuredContent"],
            "questionIds": seen["questions"].as_array().map(|q| q.iter().map(|q| q["id"].clone()).collect::<Vec<_>>()),
            "turnEnd": seen["turnEnd"],
            "cancellations": seen["cancellations"],
        }),
        json!({
            "callOutcome": "result",
            "isError": false,
            "text": ["Approved and done."],
            "structuredContent": {"threadId": thread_id, "content": "Approved and done."},
            "questionIds": [1],
            "turnEnd": "task_complete",
            "cancellations": [],
        })
    );
    let message = seen["questions"][0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("touch approved.txt"), "{message}");
    let events = seen["eventTypes"].as_array().cloned().unwrap_or_default();
    for kind in ["exec_approval_request", "exec_command_end", "task_complete"] {
        assert!(events.contains(&json!(kind)), "no {kind} in {events:?}");
    }
    assert_eq!(model.requests().len(), 2);
}

#[test]
fn a_typescript_client_that_cancels_the_call_sees_its_first_approval_withdrawn() {
    // The TypeScript SDK ignores a cancellation whose requestId is 0: the first
    // question of a connection must have another id to be withdrawable.
    let (model, home) = TestHome::asked_to_run("call-ts", "touch never.txt", "unreachable");
    let seen = run_client(&home, "cancel");

    let question = seen["questions"][0]["id"].clone();
    assert!(
        question.as_i64().is_some_and(|id| id >= 1),
        "the first question's id: {seen}"
    );
    assert_eq!(
        json!({
            "callOutcome": seen["callOutcome"],
            "withdrawnRequest": seen["withdrawal"]["requestId"],
            "cancellations": seen["cancellations"],
            "turnEnd": seen["turnEnd"],
        }),
        json!({
            "callOutcome": "cancelled",
            "withdrawnRequest": question,
            "cancellations": [{"requestId": question, "reason": "the approval is no longer needed"}],
            "turnEnd": "turn_aborted",
        })
    );
    assert!(!home.workspace().join("never.txt").exists(), "{seen}");
    assert_eq!(model.requests().len(), 1, "the turn must not go on");
}
