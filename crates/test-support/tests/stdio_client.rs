//! `StdioClient` against small shell programs standing in for a JSON-RPC server.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::process::Command;
use std::time::{Duration, Instant};

use deputy_test_support::{McpSession, StdioClient};
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(10);

fn bash(script: &str) -> StdioClient {
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(script);
    StdioClient::spawn(cmd)
}

/// Answers every request line with `{"id": <its id>, "result": {"ok": true}}`.
const RESPONDER: &str = r#"while IFS= read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
  printf '{"jsonrpc":"2.0","id":%s,"result":{"ok":true}}\n' "$id"
done"#;

#[test]
fn requests_get_increasing_ids_and_their_responses() {
    let client = bash(RESPONDER);

    let first = client.request("ping", json!({}));
    let second = client.request("tools/list", Value::Null);

    assert_eq!((first, second), (1, 2));
    let response = client.wait_response(second, WAIT);
    assert_eq!(
        response,
        Ok(json!({"jsonrpc": "2.0", "id": 2, "result": {"ok": true}}))
    );
    assert!(client.wait_response(first, WAIT).is_ok());
}

#[test]
fn sent_messages_reach_the_child_verbatim() {
    let client = StdioClient::spawn(Command::new("cat"));

    client.request("tools/call", json!({"name": "codex"}));
    client.notify("notifications/cancelled", json!({"requestId": 1}));
    client.respond(json!("srv-1"), json!({"decision": "approved"}));
    client.send_raw("not json at all");

    let raw = client.wait_for(|message| message.get("__unparsed").is_some(), WAIT);
    assert_eq!(raw, Ok(json!({"__unparsed": "not json at all"})));
    assert_eq!(
        client.messages(),
        [
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "codex"}}),
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
            json!({"jsonrpc": "2.0", "id": "srv-1", "result": {"decision": "approved"}}),
            json!({"__unparsed": "not json at all"}),
        ]
    );
}

#[test]
fn a_stdout_line_that_is_not_json_is_recorded_as_unparsed() {
    let client =
        bash(r#"echo "starting up..."; echo '{"jsonrpc":"2.0","method":"ready"}'; exec cat"#);

    client
        .wait_for(|message| message["method"] == "ready", WAIT)
        .unwrap_or_default();

    assert_eq!(
        client.messages()[0],
        json!({"__unparsed": "starting up..."})
    );
}

#[test]
fn wait_for_searches_messages_that_arrived_earlier() {
    let client = StdioClient::spawn(Command::new("cat"));
    client.send(&json!({"a": 1}));
    client.send(&json!({"b": 2}));
    assert!(
        client
            .wait_for(|message| message.get("b").is_some(), WAIT)
            .is_ok()
    );

    let earlier = client.wait_for(|message| message.get("a").is_some(), Duration::ZERO);

    assert_eq!(earlier, Ok(json!({"a": 1})));
}

#[test]
fn notifications_are_filtered_by_method_and_exclude_requests() {
    let client = StdioClient::spawn(Command::new("cat"));
    client.notify("codex/event", json!({"n": 1}));
    client.request("codex/event", json!({"n": 2}));
    client.notify("other", Value::Null);
    client.notify("codex/event", json!({"n": 3}));
    assert!(
        client
            .wait_for(|message| message["params"]["n"] == 3, WAIT)
            .is_ok()
    );

    let events: Vec<Value> = client
        .notifications("codex/event")
        .into_iter()
        .map(|message| message["params"]["n"].clone())
        .collect();

    assert_eq!(events, [json!(1), json!(3)]);
}

#[test]
fn wait_for_timeout_reports_recent_messages_and_stderr() {
    let client = bash(r#"echo "boom on stderr" >&2; echo '{"seen":true}'; exec cat"#);
    assert!(
        client
            .wait_for(|message| message.get("seen").is_some(), WAIT)
            .is_ok()
    );
    assert!(client.wait_for_stderr("boom on stderr", WAIT).is_ok());

    let err = client.wait_for(
        |message| message.get("never").is_some(),
        Duration::from_millis(100),
    );

    let err = err.err().unwrap_or_default();
    assert!(err.contains("no matching message within"), "{err}");
    assert!(err.contains(r#"{"seen":true}"#), "{err}");
    assert!(err.contains("boom on stderr"), "{err}");
}

#[test]
fn wait_fails_fast_when_the_child_closes_stdout() {
    let client = bash(r#"echo '{"only":1}'"#);
    let started = Instant::now();

    let err = client
        .wait_response(1, Duration::from_secs(60))
        .err()
        .unwrap_or_default();

    assert!(started.elapsed() < WAIT, "should not wait for the timeout");
    assert!(err.contains("closed its stdout"), "{err}");
    assert!(err.contains(r#"{"only":1}"#), "{err}");
}

#[test]
fn closing_stdin_lets_the_child_exit() {
    let client = StdioClient::spawn(Command::new("cat"));
    assert_eq!(client.wait_exit(Duration::ZERO), None);

    client.close_stdin();

    let status = client.wait_exit(WAIT);
    assert_eq!(status.map(|status| status.success()), Some(true));
}

#[test]
fn writes_after_the_child_is_gone_show_up_in_diagnostics() {
    let client = StdioClient::spawn(Command::new("cat"));
    client.kill();

    client.notify("late", Value::Null);

    let err = client.wait_for(|_| false, WAIT).err().unwrap_or_default();
    assert!(err.contains("late"), "{err}");
    assert!(err.contains("child exited"), "{err}");
}

/// Whether `pid` is gone or a zombie nobody has reaped yet.
fn is_dead(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('Z')),
    }
}

#[test]
fn dropping_the_client_kills_the_child_and_what_it_started() {
    let client = bash(r#"sleep 1000 & echo "{\"sleeper\":$!}"; wait"#);
    let message = client.wait_for(|message| message.get("sleeper").is_some(), WAIT);
    let sleeper = message
        .map(|message| message["sleeper"].to_string())
        .unwrap_or_default();
    assert!(!is_dead(&sleeper));

    drop(client);

    let deadline = Instant::now() + WAIT;
    while !is_dead(&sleeper) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        is_dead(&sleeper),
        "grandchild {sleeper} survived the client"
    );
}

#[test]
fn mcp_initialize_sends_the_handshake_and_returns_the_result() {
    let server = r#"read -r init
printf '{"jsonrpc":"2.0","id":1,"result":{"received":%s}}\n' "$init"
read -r initialized
printf '{"echo":%s}\n' "$initialized"
exec cat >/dev/null"#;
    let client = bash(server);

    let result = McpSession::initialize(&client, json!({"elicitation": {}}));

    assert_eq!(
        result["received"]["params"],
        json!({
            "protocolVersion": "2025-06-18",
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "deputy-tests", "version": "0"},
        })
    );
    assert_eq!(result["received"]["method"], "initialize");
    let echoed = client.wait_for(|message| message.get("echo").is_some(), WAIT);
    assert_eq!(
        echoed,
        Ok(json!({"echo": {"jsonrpc": "2.0", "method": "notifications/initialized"}}))
    );
}

#[test]
fn mcp_initialize_error_reply_is_reported() {
    let client = bash(
        r#"read -r init; echo '{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad version"}}'; exec cat"#,
    );

    let err = McpSession::try_initialize(&client, json!({}))
        .err()
        .unwrap_or_default();

    assert!(err.contains("bad version"), "{err}");
}

#[test]
fn a_paused_client_backs_the_child_up_and_gets_every_line_once_it_reads_again() {
    // `cat` echoes each line: with nothing reading its stdout it stops reading stdin.
    let client = bash("exec cat");
    client.pause_reading();
    const LINES: usize = 20_000;
    let chunks = (0..LINES / 100).map(|chunk| {
        (0..100)
            .map(|n| {
                format!(
                    "{{\"n\":{},\"pad\":\"{}\"}}\n",
                    chunk * 100 + n,
                    "x".repeat(40)
                )
            })
            .collect::<String>()
            .into_bytes()
    });
    let write = client.write_in_background(chunks).expect("start writing");
    let finished = write.wait_until_finished_or_stalled(Duration::from_millis(300), WAIT);
    assert!(!finished, "1 MiB went through pipes nobody read: {write:?}");

    client.resume_reading();
    write
        .wait(WAIT)
        .expect("the write finishes once the client reads");
    client
        .wait_for(|m| m["n"] == LINES - 1, WAIT)
        .expect("the last line");
    let lines = client.lines();
    assert_eq!(lines.len(), LINES);
    assert!(lines[7].starts_with("{\"n\":7,"), "{}", lines[7]);
}
