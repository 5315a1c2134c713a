//! Protocol 2026-07-28 at `deputy mcp-server`, over Streamable HTTP and over stdio:
//! no handshake (`server/discover`), and approvals as Multi Round-Trip Requests —
//! `InputRequiredResult` with a sealed `requestState`, continued by the retry carrying
//! `inputResponses` — driven by the official MCP Python SDK's `Client` (HTTP and stdio) and
//! the MCP TypeScript client 2.x (HTTP).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use deputy_test_support::{
    ListeningServer, NodeNetwork, TestHome, python_with_mcp, run_with_deadline,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// The binary under test.
const DEPUTY: &str = env!("CARGO_BIN_EXE_deputy");

/// Longest a client script may run; each finishes in a few seconds.
const SCRIPT_DEADLINE: Duration = Duration::from_secs(90);

/// The transports the tests run over.
enum Over {
    Http,
    Stdio,
}

/// Runs `client` (a command given deputy's address: its URL over HTTP, the binary over
/// stdio) against deputy over `over` and parses the one JSON object it prints.
fn run_over(home: &TestHome, over: Over, client: impl FnOnce(&str) -> Command) -> Value {
    let server = match over {
        Over::Http => {
            let mut command = home.command(DEPUTY);
            command.args(["mcp-server", "--listen", "127.0.0.1:0"]);
            Some(ListeningServer::start(command).unwrap_or_else(|err| panic!("{err}")))
        }
        Over::Stdio => None,
    };
    let target = server.as_ref().map_or(DEPUTY, ListeningServer::url);
    let output =
        run_with_deadline(client(target), SCRIPT_DEADLINE).unwrap_or_else(|err| panic!("{err}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the client exited with {}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}\n--- server ---\n{}",
        output.status,
        server
            .as_ref()
            .map(ListeningServer::stderr)
            .unwrap_or_default()
    );
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|err| panic!("script output is not JSON ({err}): {stdout}\n{stderr}"))
}

/// Runs the Python client through `scenario` against deputy over `over`.
fn run_client(home: &TestHome, over: Over, scenario: &str) -> Value {
    let python = python_with_mcp().unwrap_or_else(|err| panic!("no Python MCP SDK: {err}"));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/mcp_mrtr_client.py");
    run_over(home, over, |target| {
        let mut command = home.command(&python);
        command
            .arg(&script)
            .arg(target)
            .arg(scenario)
            .env("HOME", home.path());
        command
    })
}

fn approves_through_round_trips(over: Over) {
    let (model, home) =
        TestHome::asked_to_run("call-mrtr", "touch approved.txt", "Approved and done.");
    let seen = run_client(&home, over, "approve");

    assert!(home.workspace().join("approved.txt").exists(), "{seen}");
    assert_eq!(
        json!({
            "protocolVersion": seen["protocolVersion"],
            "isError": seen["isError"],
            "text": seen["text"],
            "questions": seen["questions"].as_array().map(Vec::len),
            "elicitation": seen["questions"][0]["meta"]["codex_elicitation"],
        }),
        json!({
            "protocolVersion": "2026-07-28",
            "isError": false,
            "text": ["Approved and done."],
            "questions": 1,
            "elicitation": "exec-approval",
        })
    );
    let message = seen["questions"][0]["message"].as_str().unwrap_or_default();
    assert!(message.contains("touch approved.txt"), "{message}");
    assert_eq!(model.requests().len(), 2);
}

fn declines_and_refuses_forged_states(over: Over) {
    let (model, home) =
        TestHome::asked_to_run("call-mrtr", "touch never.txt", "I was not allowed to.");
    let seen = run_client(&home, over, "manual");

    let requests = seen["inputRequests"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    assert_eq!(requests.len(), 1, "{seen}");
    let (_, request) = requests.iter().next().unwrap();
    assert_eq!(request["method"], "elicitation/create", "{seen}");
    assert!(
        request["message"]
            .as_str()
            .is_some_and(|m| m.contains("touch never.txt")),
        "{seen}"
    );
    assert_eq!(request["meta"]["codex_elicitation"], "exec-approval");
    // Both forgeries are refused with an invalid-params error naming the state.
    let forged = seen["forged"].as_array().cloned().unwrap_or_default();
    assert_eq!(forged.len(), 2, "{seen}");
    for refusal in &forged {
        assert_eq!(refusal["code"], -32602, "{seen}");
        assert!(
            refusal["message"]
                .as_str()
                .is_some_and(|m| m.contains("requestState")),
            "{seen}"
        );
    }
    assert_eq!(
        json!({
            "firstResult": seen["firstResult"],
            "finalResult": seen["finalResult"],
            "isError": seen["isError"],
            "text": seen["text"],
        }),
        json!({
            "firstResult": "InputRequiredResult",
            "finalResult": "CallToolResult",
            "isError": false,
            "text": ["I was not allowed to."],
        })
    );
    assert!(!home.workspace().join("never.txt").exists(), "{seen}");
    // The declined command's refusal went back to the model, which answered.
    assert_eq!(model.requests().len(), 2);
    let last = model.requests()[1].body.to_string();
    assert!(last.contains("call-mrtr"), "{last}");
}

#[test]
fn a_retry_that_never_comes_is_a_declined_approval() {
    let (model, home) = TestHome::asked_to_run("call-mrtr", "touch never.txt", "Nobody answered.");
    home.write_config(&format!(
        "approval_timeout_sec = 1\n{}",
        TestHome::default_config(&model.base_url())
    ));
    let seen = run_client(&home, Over::Http, "abandon");

    assert_eq!(
        json!({
            "firstResult": seen["firstResult"],
            "finalResult": seen["finalResult"],
            "isError": seen["isError"],
            "text": seen["text"],
        }),
        json!({
            "firstResult": "InputRequiredResult",
            "finalResult": "CallToolResult",
            "isError": false,
            "text": ["Nobody answered."],
        }),
        "{seen}"
    );
    assert!(!home.workspace().join("never.txt").exists(), "{seen}");
    assert_eq!(model.requests().len(), 2);
}

#[test]
fn a_2026_client_over_http_approves_through_round_trips() {
    approves_through_round_trips(Over::Http);
}

#[test]
fn a_2026_client_over_stdio_approves_through_round_trips() {
    approves_through_round_trips(Over::Stdio);
}

#[test]
fn a_2026_client_over_http_declines_and_forged_states_are_refused() {
    declines_and_refuses_forged_states(Over::Http);
}

#[test]
fn a_2026_client_over_stdio_declines_and_forged_states_are_refused() {
    declines_and_refuses_forged_states(Over::Stdio);
}

/// The MCP TypeScript client 2.x (Node 22) through `scenario` against a listening server.
fn run_typescript_client(home: &TestHome, scenario: &str) -> Value {
    let mut command = home.command(DEPUTY);
    command.args(["mcp-server", "--listen", "127.0.0.1:0"]);
    let server = ListeningServer::start(command).unwrap_or_else(|err| panic!("{err}"));
    let node = NodeNetwork::install().unwrap_or_else(|err| panic!("no TypeScript client: {err}"));
    let source =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/typescript/mcp_client2_mrtr.mjs");
    let script = node
        .place_script(&source)
        .unwrap_or_else(|err| panic!("{err}"));
    let mut command = home.command(node.node());
    command.arg(&script).arg(server.url()).arg(scenario);
    let output = run_with_deadline(command, SCRIPT_DEADLINE).unwrap_or_else(|err| panic!("{err}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the client exited with {}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}\n--- server ---\n{}",
        output.status,
        server.stderr()
    );
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|err| panic!("script output is not JSON ({err}): {stdout}\n{stderr}"))
}

#[test]
fn the_typescript_client_2_approves_through_round_trips_over_http() {
    let (model, home) =
        TestHome::asked_to_run("call-mrtr", "touch approved.txt", "Approved and done.");
    let seen = run_typescript_client(&home, "approve");

    assert!(home.workspace().join("approved.txt").exists(), "{seen}");
    assert_eq!(
        json!({
            "protocolVersion": seen["protocolVersion"],
            "isError": seen["isError"],
            "text": seen["text"],
            "questions": seen["questions"].as_array().map(Vec::len),
        }),
        json!({
            "protocolVersion": "2026-07-28",
            "isError": false,
            "text": ["Approved and done."],
            "questions": 1,
        })
    );
    assert_eq!(model.requests().len(), 2);
}

#[test]
fn the_typescript_client_2_declines_through_round_trips_over_http() {
    let (model, home) =
        TestHome::asked_to_run("call-mrtr", "touch never.txt", "I was not allowed to.");
    let seen = run_typescript_client(&home, "decline");

    assert!(!home.workspace().join("never.txt").exists(), "{seen}");
    assert_eq!(seen["protocolVersion"], "2026-07-28", "{seen}");
    assert_eq!(seen["text"], json!(["I was not allowed to."]), "{seen}");
    assert_eq!(
        seen["questions"].as_array().map(Vec::len),
        Some(1),
        "{seen}"
    );
    assert_eq!(model.requests().len(), 2);
}

fn a_conversation_stream_asks_through_round_trips(over: Over) {
    let (model, home) =
        TestHome::asked_to_run("call-stream", "touch streamed.txt", "Streamed and done.");
    let seen = run_client(&home, over, "conversation");

    assert!(home.workspace().join("streamed.txt").exists(), "{seen}");
    let requests = seen["inputRequests"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        json!({
            "protocolVersion": seen["protocolVersion"],
            "firstResult": seen["firstResult"],
            "inputRequests": requests.len(),
            "method": requests.values().next().map(|r| r["method"].clone()),
            "finalResult": seen["finalResult"],
            "structured": seen["structured"],
        }),
        json!({
            "protocolVersion": "2026-07-28",
            "firstResult": "InputRequiredResult",
            "inputRequests": 1,
            "method": "elicitation/create",
            "finalResult": "CallToolResult",
            "structured": {},
        }),
        "{seen}"
    );
    let message = requests
        .values()
        .next()
        .and_then(|r| r["message"].as_str())
        .unwrap_or_default();
    assert!(message.contains("touch streamed.txt"), "{message}");
    assert_eq!(model.requests().len(), 2);
}

#[test]
fn the_python_sdk_over_http_streams_a_conversation_with_its_approval_as_round_trips() {
    a_conversation_stream_asks_through_round_trips(Over::Http);
}

#[test]
fn the_python_sdk_over_stdio_streams_a_conversation_with_its_approval_as_round_trips() {
    a_conversation_stream_asks_through_round_trips(Over::Stdio);
}

/// The notification methods of one call of the raw client's output.
fn methods(step: &Value) -> Vec<String> {
    step["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap().to_string())
        .collect()
}

/// The raw 2026-07-28 client (`tests/typescript/mcp_2026_conversation.mjs`), which sees
/// every notification, streams a conversation over `over`.
fn conversation_events_come_with_the_stream_calls(over: Over) {
    let (model, home) = TestHome::asked_to_run("call-raw", "touch raw.txt", "Raw and done.");
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/typescript/mcp_2026_conversation.mjs");
    let seen = run_over(&home, over, |target| {
        let mut command = home.command("node");
        command.arg(&script).arg(target);
        command
    });

    assert!(home.workspace().join("raw.txt").exists(), "{seen}");
    // The first call: the snapshot, the turn up to its question (in the snapshot or
    // live, as the turn was quick or not to get there), and the question as its result.
    // Nothing is asked as a server-to-client request.
    let first = methods(&seen["first"]);
    assert_eq!(
        first.first().map(String::as_str),
        Some("notifications/initial_state"),
        "{seen}"
    );
    let snapshot = seen["first"]["snapshot"].as_array().unwrap();
    let announced = snapshot
        .iter()
        .filter(|t| *t == "exec_approval_request")
        .count()
        + first
            .iter()
            .filter(|m| *m == "exec_approval_request")
            .count();
    assert_eq!(announced, 1, "{seen}");
    assert!(!first.iter().any(|m| m == "exec_command_end"), "{seen}");
    let requests = seen["first"]["result"]["inputRequests"]
        .as_object()
        .unwrap();
    assert_eq!(requests.len(), 1, "{seen}");
    let question = requests.values().next().unwrap();
    assert_eq!(question["method"], "elicitation/create", "{seen}");
    assert!(
        question["params"]["message"]
            .as_str()
            .unwrap()
            .contains("touch raw.txt"),
        "{seen}"
    );
    // The retry: the rest of the turn, each event once, then `{}`.
    let second = methods(&seen["second"]);
    for kind in [
        "exec_command_begin",
        "exec_command_end",
        "agent_message",
        "task_complete",
    ] {
        assert_eq!(
            second.iter().filter(|m| *m == kind).count(),
            1,
            "{kind}: {seen}"
        );
    }
    assert_eq!(
        second.last().map(String::as_str),
        Some("task_complete"),
        "{seen}"
    );
    assert!(
        !first
            .iter()
            .chain(&second)
            .any(|m| m == "elicitation/create" || m.starts_with("response:")),
        "{seen}"
    );
    assert_eq!(
        seen["second"]["result"]["structuredContent"],
        json!({}),
        "{seen}"
    );
    // Idle, the conversation's stream is its snapshot, the whole turn in it, and `{}`.
    assert_eq!(
        methods(&seen["third"]),
        ["notifications/initial_state"],
        "{seen}"
    );
    let snapshot = seen["third"]["snapshot"].as_array().unwrap();
    assert_eq!(snapshot.last(), Some(&json!("task_complete")), "{seen}");
    assert_eq!(
        seen["third"]["result"]["structuredContent"],
        json!({}),
        "{seen}"
    );
    assert_eq!(model.requests().len(), 2);
}

#[test]
fn a_raw_2026_client_over_http_gets_a_conversation_s_events_with_its_stream_calls() {
    conversation_events_come_with_the_stream_calls(Over::Http);
}

#[test]
fn a_raw_2026_client_over_stdio_gets_a_conversation_s_events_with_its_stream_calls() {
    conversation_events_come_with_the_stream_calls(Over::Stdio);
}

#[test]
fn two_2026_streams_of_one_conversation_are_both_asked_and_the_first_answer_wins() {
    let (model, home) = TestHome::asked_to_run("call-two", "touch two.txt", "Two and done.");
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/typescript/mcp_2026_conversation.mjs");
    let seen = run_over(&home, Over::Http, |target| {
        let mut command = home.command("node");
        command.arg(&script).arg(target).arg("two");
        command
    });

    // Approved through the first stream: the command ran, although the second denied.
    assert!(home.workspace().join("two.txt").exists(), "{seen}");
    for stream in ["a", "b"] {
        let asked = seen[stream]["result"]["inputRequests"].as_object();
        assert_eq!(asked.map(|a| a.len()), Some(1), "{stream}: {seen}");
    }
    for stream in ["aDone", "bDone"] {
        assert_eq!(
            seen[stream]["result"]["structuredContent"],
            json!({}),
            "{stream}: {seen}"
        );
    }
    // Each stream saw the whole turn: the retry of the second streamed on from its cursor.
    for (stream, done) in [("a", "aDone"), ("b", "bDone")] {
        let events: Vec<String> = methods(&seen[stream])
            .into_iter()
            .chain(methods(&seen[done]))
            .chain(
                seen[stream]["snapshot"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t.as_str().unwrap().to_string()),
            )
            .collect();
        for kind in ["exec_command_end", "task_complete"] {
            assert_eq!(
                events.iter().filter(|e| *e == kind).count(),
                1,
                "{stream} {kind}: {seen}"
            );
        }
    }
    assert_eq!(model.requests().len(), 2);
}
