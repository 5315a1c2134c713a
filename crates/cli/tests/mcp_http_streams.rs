//! The SSE streams of `deputy mcp-server --listen` when clients misbehave: a stream cut
//! mid-turn and resumed with `Last-Event-ID` (replayed from the thread's event log).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::path::Path;
use std::time::Duration;

use deputy_test_support::{
    ListeningServer, MockModelServer, MockResponse, TestHome, responses, run_with_deadline,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// The binary under test.
const DEPUTY: &str = env!("CARGO_BIN_EXE_deputy");

/// Longest a client script may run; each finishes in a few seconds.
const SCRIPT_DEADLINE: Duration = Duration::from_secs(90);

/// `deputy mcp-server --listen 127.0.0.1:0` in `home`.
fn listen(home: &TestHome) -> ListeningServer {
    let mut command = home.command(DEPUTY);
    command.args(["mcp-server", "--listen", "127.0.0.1:0"]);
    ListeningServer::start(command).unwrap_or_else(|err| panic!("{err}"))
}

/// The plain-`fetch` client (`tests/typescript/mcp_http_streams.mjs`) through `scenario`.
fn streams_client(home: &TestHome, server: &ListeningServer, scenario: &str) -> Value {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/typescript/mcp_http_streams.mjs");
    let mut command = home.command("node");
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

/// A model turn that streams `words` text deltas saying `text`, then (if given) calls
/// `shell_command` with `command`.
fn chatty_turn(words: usize, text: &str, command: Option<&str>) -> MockResponse {
    let mut events = vec![responses::created("resp-chatty")];
    events.extend((0..words).map(|i| responses::text_delta(format!("w{i} "))));
    events.push(responses::message("msg-chatty", text));
    if let Some(command) = command {
        let arguments = json!({"command": command}).to_string();
        events.push(responses::function_call(
            "call-chatty",
            "shell_command",
            arguments,
        ));
    }
    events.push(responses::completed("resp-chatty"));
    MockResponse::sse(events)
}

/// Kinds of `seen` (`[{id, kind}]`).
fn kinds(seen: &Value) -> Vec<String> {
    seen.as_array()
        .unwrap()
        .iter()
        .map(|event| event["kind"].as_str().unwrap().to_string())
        .collect()
}

/// How many of `kinds` are `kind`.
fn count(kinds: &[String], kind: &str) -> usize {
    kinds.iter().filter(|k| *k == kind).count()
}

#[test]
fn a_stream_cut_mid_turn_resumes_from_the_thread_log_with_every_later_event_once() {
    // More messages before the cut than rmcp's in-memory buffer (16 per stream) holds,
    // and more again after it: only the thread's log still has them all.
    const BEFORE: usize = 40;
    const AFTER: usize = 30;
    let model = MockModelServer::start();
    model.push_all([
        chatty_turn(BEFORE, "Let me run it.", Some("touch resumed.txt")),
        chatty_turn(AFTER, "Resumed and done.", None),
    ]);
    let home = TestHome::new(&model.base_url());
    let server = listen(&home);

    let seen = streams_client(&home, &server, "resume");

    assert!(home.workspace().join("resumed.txt").exists(), "{seen}");
    assert_eq!(
        (seen["text"].clone(), seen["isError"].clone()),
        (json!(["Resumed and done."]), json!(false)),
        "{seen}"
    );
    let on = |list: &str, stream: &str| -> Vec<Value> {
        seen[list]
            .as_array()
            .unwrap()
            .iter()
            .filter(|event| event["stream"] == stream)
            .cloned()
            .collect()
    };
    let mut whole = Vec::new();
    for stream in ["get", "post"] {
        let (before, after) = (on("before", stream), on("after", stream));
        let from = before
            .iter()
            .position(|event| event["id"] == seen["resumedFrom"][stream])
            .unwrap();
        // The replay starts with exactly what the cut stream carried after the
        // resumed-from event: same ids, same messages, in order.
        let replayed = before.len() - from - 1;
        assert!(after.len() >= replayed, "{stream}: {seen}");
        assert_eq!(&after[..replayed], &before[from + 1..], "{stream}: {seen}");
        let ids: Vec<Value> = before[..=from]
            .iter()
            .chain(&after)
            .map(|e| e["id"].clone())
            .collect();
        let mut unique: Vec<String> = ids.iter().map(Value::to_string).collect();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(
            unique.len(),
            ids.len(),
            "{stream}: an id came twice: {ids:?}"
        );
        whole.extend(before[..=from].iter().chain(&after).cloned());
    }
    // The whole of both streams, as the client now knows them: every delta of both
    // model turns and each turn event once, in order.
    let kinds = kinds(&Value::Array(whole));
    assert_eq!(
        count(&kinds, "codex/event:agent_message_delta"),
        BEFORE + AFTER,
        "{kinds:?}"
    );
    for kind in [
        "codex/event:session_configured",
        "codex/event:task_started",
        "codex/event:exec_approval_request",
        "codex/event:exec_command_begin",
        "codex/event:exec_command_end",
        "codex/event:task_complete",
        "elicitation/create",
        "result",
    ] {
        assert_eq!(count(&kinds, kind), 1, "{kind} in {kinds:?}");
    }
    assert_eq!(count(&kinds, "codex/event:agent_message"), 2, "{kinds:?}");
    let order: Vec<&str> = kinds
        .iter()
        .map(String::as_str)
        .filter(|k| k.starts_with("codex/event:") && !k.ends_with("_delta"))
        .collect();
    let position = |kind: &str| order.iter().position(|k| *k == kind).unwrap();
    assert!(
        position("codex/event:session_configured") < position("codex/event:exec_approval_request")
            && position("codex/event:exec_approval_request")
                < position("codex/event:exec_command_end")
            && position("codex/event:exec_command_end") < position("codex/event:task_complete"),
        "{order:?}"
    );
    assert_eq!(model.requests().len(), 2);
}
