//! The SSE streams of `deputy mcp-server --listen` when clients misbehave: a stream cut
//! mid-turn and resumed with `Last-Event-ID` (replayed from the thread's event log); a
//! client that stops reading, then vanishes, while another is served.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use deputy_test_support::{
    ListeningServer, MockModelServer, MockResponse, RecordedRequest, TestHome, responses,
    run_with_deadline,
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

#[test]
fn a_stateless_2026_call_cut_mid_turn_resumes_with_every_later_event_once_and_its_result() {
    const WORDS: usize = 60;
    let model = MockModelServer::start();
    // Slow enough that the cut lands mid-turn.
    model.push(chatty_turn(WORDS, "Talked.", None).delay_between(Duration::from_millis(20)));
    let home = TestHome::new(&model.base_url());
    let server = listen(&home);

    let seen = streams_client(&home, &server, "resume2026");

    assert_eq!(
        (seen["text"].clone(), seen["isError"].clone()),
        (json!(["Talked."]), json!(false)),
        "{seen}"
    );
    let before = seen["before"].as_array().unwrap();
    let after = seen["after"].as_array().unwrap();
    let from = before
        .iter()
        .position(|event| event["id"] == seen["resumedFrom"]["post"])
        .unwrap();
    let replayed = before.len() - from - 1;
    assert_eq!(&after[..replayed], &before[from + 1..], "{seen}");
    let whole = Value::Array(before[..=from].iter().chain(after).cloned().collect());
    let kinds = kinds(&whole);
    assert_eq!(
        count(&kinds, "codex/event:agent_message_delta"),
        WORDS,
        "{kinds:?}"
    );
    for kind in [
        "codex/event:task_started",
        "codex/event:agent_message",
        "codex/event:task_complete",
        "result",
    ] {
        assert_eq!(count(&kinds, kind), 1, "{kind} in {kinds:?}");
    }
    assert_eq!(kinds.last().map(String::as_str), Some("result"));
}

#[test]
fn a_resumed_stream_replays_a_conversation_snapshot_rebuilt_from_the_log_as_it_was_sent() {
    let model = MockModelServer::start();
    model.push(MockResponse::text_turn("Hello there."));
    let home = TestHome::new(&model.base_url());
    let server = listen(&home);

    let seen = streams_client(&home, &server, "snapshot");

    let before = seen["before"].as_array().unwrap();
    let after = seen["after"].as_array().unwrap();
    let snapshots = |list: &[Value]| {
        list.iter()
            .filter(|event| event["message"]["method"] == "notifications/initial_state")
            .count()
    };
    assert_eq!(snapshots(before), 2, "{seen}");
    assert_eq!(snapshots(after), 1, "{seen}");
    // The same messages under the same ids, the snapshot included (it is rebuilt from
    // the thread's log, not kept).
    assert_eq!(after, &before[1..], "{seen}");
}

/// Writes one HTTP/1.1 request to `server` and returns the connection, unread.
fn send(
    server: &ListeningServer,
    method: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> TcpStream {
    let mut stream = TcpStream::connect(server.authority()).unwrap();
    stream.set_read_timeout(Some(SCRIPT_DEADLINE)).unwrap();
    let mut head = format!(
        "{method} /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        server.authority(),
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    stream
}

/// Reads `stream` to its end (the server closes it after its last message).
fn read_all(mut stream: TcpStream) -> String {
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    String::from_utf8_lossy(&response).into_owned()
}

/// A JSON-RPC message as bytes.
fn message(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).unwrap()
}

/// A new 2025-11-25 session (initialized); returns its headers.
fn session(server: &ListeningServer) -> Vec<(&'static str, String)> {
    let initialize = message(&json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "0"}}
    }));
    let response = read_all(send(server, "POST", &[], &initialize));
    let id = response
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_string())
        })
        .unwrap_or_else(|| panic!("no session id in {response}"));
    let headers = vec![
        ("Mcp-Session-Id", id),
        ("MCP-Protocol-Version", "2025-11-25".to_string()),
    ];
    let initialized = message(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let response = read_all(send(server, "POST", &borrowed(&headers), &initialized));
    assert!(response.starts_with("HTTP/1.1 202"), "{response}");
    headers
}

fn borrowed<'a>(headers: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    headers
        .iter()
        .map(|(name, value)| (*name, value.as_str()))
        .collect()
}

/// A `tools/call` of `tool` with `arguments`, as request `id`.
fn call(id: u64, tool: &str, arguments: Value) -> Vec<u8> {
    message(&json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}
    }))
}

/// Reads from `stream` until `text` has come; returns what was read.
fn read_until(stream: &mut TcpStream, text: &str) -> String {
    let mut seen = Vec::new();
    let mut buffer = [0_u8; 16 * 1024];
    while !String::from_utf8_lossy(&seen).contains(text) {
        let read = stream.read(&mut buffer).unwrap();
        assert!(
            read > 0,
            "the stream ended before {text}: {}",
            String::from_utf8_lossy(&seen)
        );
        seen.extend_from_slice(&buffer[..read]);
    }
    String::from_utf8_lossy(&seen).into_owned()
}

/// How many bytes wait unread on `stream`.
fn unread(stream: &mut TcpStream) -> usize {
    stream.set_nonblocking(true).unwrap();
    let mut buffer = vec![0_u8; 1 << 20];
    let mut total = 0;
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return total,
            Ok(read) => total += read,
            Err(err) if err.kind() == ErrorKind::WouldBlock => return total,
            Err(err) => panic!("reading the stalled stream: {err}"),
        }
    }
}

/// The model's answer to the requests of this test: the `flood` prompt runs a command
/// printing 20 MB, then says it is done; a turn after that one remembers it; anything
/// else is answered at once.
fn flood_model(request: &RecordedRequest) -> MockResponse {
    let body = &request.raw_body;
    if body.contains("Flooded and done.") {
        MockResponse::text_turn("I remember the flood.")
    } else if body.contains("function_call_output") {
        MockResponse::text_turn("Flooded and done.")
    } else if body.contains("please flood") {
        MockResponse::function_call_turn(
            "call-flood",
            "shell_command",
            json!({"command": "yes 0123456789abcdefghijklmnopqrstuvwxyz | head -c 20000000; sleep 1"}),
        )
    } else {
        MockResponse::text_turn("Quiet and done.")
    }
}

#[test]
fn a_client_that_stops_reading_then_vanishes_blocks_no_other_client_and_no_turn() {
    let model = MockModelServer::start();
    model.respond_with(flood_model);
    let home = TestHome::new(&model.base_url());
    let server = listen(&home);

    // The stalled client: its session's standalone stream (where its `codex/event`s go)
    // is read only until the thread is announced, then no more; its call's own stream
    // is never read.
    let stalled = session(&server);
    let mut events = send(&server, "GET", &borrowed(&stalled), b"");
    let flood = call(
        2,
        "codex",
        json!({"prompt": "please flood", "approval-policy": "never"}),
    );
    let stalled_call = send(&server, "POST", &borrowed(&stalled), &flood);
    let announced = read_until(&mut events, "\"threadId\":\"");
    let thread_id = announced
        .split("\"threadId\":\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap()
        .to_string();

    // Another client is served in full meanwhile.
    let other = session(&server);
    let quiet = call(
        2,
        "codex",
        json!({"prompt": "be quiet", "approval-policy": "never"}),
    );
    let answer = read_all(send(&server, "POST", &borrowed(&other), &quiet));
    assert!(answer.contains("Quiet and done."), "{answer}");

    // The stalled client's turn ran to its end (the model was asked again after the
    // command) although nothing of it was read.
    model
        .wait_for_requests(3, SCRIPT_DEADLINE)
        .unwrap_or_else(|err| panic!("{err}\n{}", server.stderr()));
    // The server did have much more to say than the connection could take.
    let waiting = unread(&mut events);
    assert!(waiting > 1 << 20, "only {waiting} bytes waited unread");

    // The stalled client vanishes; its turn is on the thread's log: a later
    // `codex-reply` from the other client continues the conversation after it (once
    // the turn has ended: until then the thread is busy).
    drop(events);
    drop(stalled_call);
    let reply = call(
        3,
        "codex-reply",
        json!({"threadId": thread_id, "prompt": "what happened?"}),
    );
    let deadline = Instant::now() + SCRIPT_DEADLINE;
    let answer = loop {
        let answer = read_all(send(&server, "POST", &borrowed(&other), &reply));
        if !answer.contains("busy") || Instant::now() > deadline {
            break answer;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        answer.contains("I remember the flood."),
        "{answer}\n{}",
        server.stderr()
    );
    let last = model.requests().last().cloned().unwrap();
    assert!(
        last.raw_body.contains("Flooded and done."),
        "{}",
        last.raw_body
    );
}
