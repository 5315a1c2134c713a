//! `deputy mcp-server --listen`: MCP over Streamable HTTP, driven by the official
//! TypeScript SDK (`StreamableHTTPClientTransport`) and Python SDK
//! (`streamablehttp_client`) through the approval scenarios of the stdio tests, and held
//! to the rules of a listening server (token, Origin, body size).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use deputy_test_support::{
    ListeningServer, MockModelServer, NodeMcpSdk, TestHome, python_with_mcp, run_with_deadline,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// The binary under test.
const DEPUTY: &str = env!("CARGO_BIN_EXE_deputy");

/// Longest a client script may run; each finishes in a few seconds.
const SCRIPT_DEADLINE: Duration = Duration::from_secs(90);

/// `deputy mcp-server --listen 127.0.0.1:0 <extra>` in `home`.
fn listen(home: &TestHome, extra: &[&str]) -> ListeningServer {
    let mut command = home.command(DEPUTY);
    command
        .args(["mcp-server", "--listen", "127.0.0.1:0"])
        .args(extra);
    ListeningServer::start(command).unwrap_or_else(|err| panic!("{err}"))
}

/// Runs `command` (a client script) and parses the one JSON object it prints.
fn run_script(command: std::process::Command, server: &ListeningServer) -> Value {
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

/// The TypeScript SDK's client through `scenario` against `server`.
fn typescript_client(home: &TestHome, server: &ListeningServer, scenario: &str) -> Value {
    let sdk = NodeMcpSdk::install().unwrap_or_else(|err| panic!("no MCP TypeScript SDK: {err}"));
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/typescript/mcp_sdk_client.mjs");
    let script = sdk
        .place_script(&source)
        .unwrap_or_else(|err| panic!("{err}"));
    let mut command = home.command("node");
    command.arg(&script).arg(server.url()).arg(scenario);
    run_script(command, server)
}

/// The Python SDK's client through `scenario` against `server`.
fn python_client(home: &TestHome, server: &ListeningServer, scenario: &str) -> Value {
    let python = python_with_mcp().unwrap_or_else(|err| panic!("no Python MCP SDK: {err}"));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/mcp_http_client.py");
    let mut command = home.command(&python);
    command.arg(&script).arg(server.url()).arg(scenario);
    run_script(command, server)
}

/// One raw HTTP/1.1 request to `server`; returns the status code and the body.
fn raw_post(server: &ListeningServer, headers: &[(&str, &str)], body: &[u8]) -> (u16, String) {
    let (status, _, body) = raw_exchange(server, headers, body);
    (status, body)
}

/// A new 2025-11-25 session on `server` (initialized); returns its id.
fn session_of(server: &ListeningServer) -> String {
    let (status, head, body) = raw_exchange(server, &[], &initialize());
    assert_eq!(status, 200, "{body}");
    let session = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_string())
        })
        .unwrap_or_else(|| panic!("no session id in {head}"));
    let initialized =
        serde_json::to_vec(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .unwrap();
    let with_session = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let (status, body) = raw_post(server, &with_session, &initialized);
    assert_eq!(status, 202, "{body}");
    session
}

/// One raw HTTP/1.1 request to `server`; returns the status code, the head and the body.
fn raw_exchange(
    server: &ListeningServer,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String, String) {
    let mut stream = TcpStream::connect(server.authority()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        server.authority(),
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    // The server may answer before reading a body it refuses; a reset then is fine.
    let _ = stream.write_all(body);
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let response = String::from_utf8_lossy(&response).into_owned();
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status in {response:?}"));
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    (status, head.to_string(), body.to_string())
}

/// An `initialize` request body of the 2025-11-25 era.
fn initialize() -> Vec<u8> {
    serde_json::to_vec(&json!({
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}
        }
    }))
    .unwrap()
}

/// Asserts what both SDK clients see when they approve the command.
fn assert_approved(seen: &Value, home: &TestHome, model: &MockModelServer) {
    assert!(home.workspace().join("approved.txt").exists(), "{seen}");
    let thread_id = seen["structuredContent"]["threadId"].clone();
    assert!(thread_id.is_string(), "{seen}");
    assert_eq!(
        json!({
            "callOutcome": seen["callOutcome"],
            "isError": seen["isError"],
            "text": seen["text"],
            "questions": seen["questions"].as_array().map(Vec::len),
        }),
        json!({
            "callOutcome": "result",
            "isError": false,
            "text": ["Approved and done."],
            "questions": 1,
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
fn a_typescript_http_client_approves_a_command_and_it_runs() {
    let (model, home) =
        TestHome::asked_to_run("call-http", "touch approved.txt", "Approved and done.");
    let server = listen(&home, &[]);
    let seen = typescript_client(&home, &server, "approve");
    assert_approved(&seen, &home, &model);
    assert_eq!(seen["turnEnd"], "task_complete");
}

#[test]
fn a_typescript_http_client_that_cancels_the_call_sees_its_approval_withdrawn() {
    let (model, home) = TestHome::asked_to_run("call-http", "touch never.txt", "unreachable");
    let server = listen(&home, &[]);
    let seen = typescript_client(&home, &server, "cancel");

    let question = seen["questions"][0]["id"].clone();
    assert_eq!(
        json!({
            "callOutcome": seen["callOutcome"],
            "withdrawnRequest": seen["withdrawal"]["requestId"],
        }),
        json!({"callOutcome": "cancelled", "withdrawnRequest": question}),
        "{seen}"
    );
    assert!(!home.workspace().join("never.txt").exists(), "{seen}");
    assert_eq!(model.requests().len(), 1, "the turn must not go on");
}

#[test]
fn a_python_http_client_approves_a_command_and_it_runs() {
    let (model, home) =
        TestHome::asked_to_run("call-http", "touch approved.txt", "Approved and done.");
    let server = listen(&home, &[]);
    let seen = python_client(&home, &server, "approve");
    assert_eq!(seen["protocolVersion"], "2025-11-25", "{seen}");
    assert_approved(&seen, &home, &model);
}

#[test]
fn a_python_http_client_that_cancels_the_call_stops_the_turn() {
    let (model, home) = TestHome::asked_to_run("call-http", "touch never.txt", "After the cancel.");
    let server = listen(&home, &[]);
    let seen = python_client(&home, &server, "cancel");

    assert_eq!(
        json!({
            "callOutcome": seen["callOutcome"],
            "questions": seen["questions"].as_array().map(Vec::len),
            "reply": seen["reply"],
        }),
        json!({
            "callOutcome": "cancelled",
            "questions": 1,
            "reply": {"isError": false, "text": ["After the cancel."]},
        }),
        "{seen}"
    );
    assert!(!home.workspace().join("never.txt").exists(), "{seen}");
    // The interrupted turn asked the model once; the reply's turn once more.
    assert_eq!(model.requests().len(), 2);
}

#[test]
fn a_listening_server_refuses_a_foreign_origin_and_a_missing_token() {
    let model = MockModelServer::start();
    let home = TestHome::new(&model.base_url());
    let mut server = {
        let mut command = home.command(DEPUTY);
        command
            .args(["mcp-server", "--listen", "127.0.0.1:0"])
            .args(["--auth-token-env", "DEPUTY_TEST_TOKEN"])
            .env("DEPUTY_TEST_TOKEN", "s3cret-token");
        ListeningServer::start(command).unwrap_or_else(|err| panic!("{err}"))
    };
    let token = ("Authorization", "Bearer s3cret-token");

    let (status, body) = raw_post(&server, &[], &initialize());
    assert_eq!(status, 401, "no token: {body}");
    let (status, body) = raw_post(
        &server,
        &[("Authorization", "Bearer s3cret-tokeN")],
        &initialize(),
    );
    assert_eq!(status, 401, "a wrong token: {body}");
    let (status, body) = raw_post(
        &server,
        &[token, ("Origin", "http://attacker.example")],
        &initialize(),
    );
    assert_eq!(
        status, 403,
        "a page on another origin (DNS rebinding): {body}"
    );
    // The token, from no browser or from a loopback page: served.
    for origin in [None, Some("http://localhost:5173")] {
        let mut headers = vec![token];
        headers.extend(origin.map(|origin| ("Origin", origin)));
        let (status, body) = raw_post(&server, &headers, &initialize());
        assert_eq!(status, 200, "{origin:?}: {body}");
        assert!(
            body.contains("\"protocolVersion\":\"2025-11-25\""),
            "{body}"
        );
    }
    assert!(server.is_running());
}

#[test]
fn a_non_loopback_address_without_a_token_is_refused_at_start() {
    let model = MockModelServer::start();
    let home = TestHome::new(&model.base_url());
    let mut command = home.command(DEPUTY);
    command.args(["mcp-server", "--listen", "0.0.0.0:0"]);
    let output = run_with_deadline(command, SCRIPT_DEADLINE).unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("--auth-token-env"), "{stderr}");
    assert!(!stderr.contains("listening on http"), "{stderr}");
}

#[test]
fn a_20_mb_body_is_answered_with_an_error_under_its_id() {
    let model = MockModelServer::start();
    let home = TestHome::new(&model.base_url());
    let server = listen(&home, &[]);
    let mut huge = initialize();
    huge.pop();
    huge.extend_from_slice(b",\"padding\":\"");
    huge.resize(huge.len() + 20 * 1024 * 1024, b'x');
    huge.extend_from_slice(b"\"}");
    let (status, body) = raw_post(&server, &[], &huge);
    assert_eq!(status, 413, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap_or_else(|err| panic!("{err}: {body}"));
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    // The server is unharmed: the next request is served.
    let (status, body) = raw_post(&server, &[], &initialize());
    assert_eq!(status, 200, "{body}");
}

#[test]
fn an_idle_session_expires() {
    let model = MockModelServer::start();
    let home = TestHome::new(&model.base_url());
    let server = listen(&home, &["--session-idle-timeout", "1"]);
    let session = session_of(&server);
    let ping = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 2, "method": "ping"})).unwrap();
    let with_session = [
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let (status, body) = raw_post(&server, &with_session, &ping);
    assert_eq!(status, 200, "a fresh session is served: {body}");
    // Left alone past its idle timeout (1 s), the session is gone: 404, the client must
    // start over. Each look is itself a message, so the gaps grow until one is long
    // enough on a loaded machine.
    for gap_ms in [1_500, 3_000, 6_000, 12_000] {
        std::thread::sleep(Duration::from_millis(gap_ms));
        let (status, _) = raw_post(&server, &with_session, &ping);
        if status == 404 {
            return;
        }
        assert_eq!(status, 200);
    }
    panic!("the session outlived every idle gap");
}

#[test]
fn two_http_clients_streaming_one_conversation_both_see_the_turn_and_the_first_answer_wins() {
    let (model, home) =
        TestHome::asked_to_run("call-http", "touch streamed.txt", "Streamed and done.");
    let server = {
        let mut command = home.command(DEPUTY);
        command
            .args(["mcp-server", "--listen", "127.0.0.1:0"])
            .args(["--auth-token-env", "DEPUTY_TEST_TOKEN"])
            .env("DEPUTY_TEST_TOKEN", "two-streams");
        ListeningServer::start(command).unwrap_or_else(|err| panic!("{err}"))
    };
    let sdk = NodeMcpSdk::install().unwrap_or_else(|err| panic!("no MCP TypeScript SDK: {err}"));
    let source =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/typescript/mcp_http_two_streams.mjs");
    let script = sdk
        .place_script(&source)
        .unwrap_or_else(|err| panic!("{err}"));
    let mut command = home.command("node");
    command
        .arg(&script)
        .arg(server.url())
        .env("DEPUTY_TEST_TOKEN", "two-streams");
    let seen = run_script(command, &server);

    assert!(home.workspace().join("streamed.txt").exists(), "{seen}");
    assert_eq!(
        json!({
            "ends": seen["ends"],
            "firstQuestions": seen["first"]["questions"],
            "secondQuestions": seen["second"]["questions"],
            "secondWithdrawn": seen["second"]["withdrawn"],
            "withoutToken": seen["withoutToken"],
        }),
        json!({
            "ends": ["task_complete", "task_complete"],
            "firstQuestions": 1,
            "secondQuestions": 1,
            "secondWithdrawn": true,
            "withoutToken": 401,
        }),
        "{seen}"
    );
    for client in ["first", "second"] {
        let events = seen[client]["eventTypes"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for kind in ["exec_approval_request", "exec_command_end", "agent_message"] {
            assert!(
                events.contains(&json!(kind)),
                "{client}: no {kind} in {events:?}"
            );
        }
    }
    assert_eq!(model.requests().len(), 2);
}
