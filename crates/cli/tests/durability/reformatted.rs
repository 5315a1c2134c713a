//! A rollout whose every line was rewritten by another JSON writer (spaced, keys sorted)
//! still shows its turns in `thread/read`: the reader's fast path only recognises lines
//! as deputy writes them, and everything else is parsed.

use std::time::Duration;

use deputy_test_support::{MockModelServer, MockResponse, StdioClient, TestHome};
use serde_json::{Value, json};

use crate::common::{DEPUTY, exec};

const WAIT: Duration = Duration::from_secs(20);

/// `line` as `json.dumps` with sorted keys would write it.
fn respaced(line: &str) -> String {
    let value: Value = serde_json::from_str(line).unwrap();
    let pretty = serde_json::to_string_pretty(&value).unwrap();
    pretty.lines().map(str::trim).collect::<Vec<_>>().join(" ")
}

#[test]
fn thread_read_shows_the_turns_of_a_rollout_rewritten_with_ordinary_spacing() {
    let model = MockModelServer::start();
    model.push_all([
        MockResponse::function_call_turn("call-1", "shell", json!({"command": ["echo", "hi"]})),
        MockResponse::text_turn("It printed hi."),
    ]);
    let home = TestHome::new(&model.base_url());
    let run = exec(&home, &["--json-events", "run echo"]);
    run.assert_code(0);
    let configured: Value = run
        .stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|event| event["type"] == "session_configured")
        .unwrap();
    let id = configured["session_id"].as_str().unwrap().to_string();
    let path = configured["rollout_path"].as_str().unwrap().to_string();
    let original = std::fs::read_to_string(&path).unwrap();
    let rewritten: String = original.lines().map(|l| respaced(l) + "\n").collect();
    assert!(!rewritten.contains(r#""type":"event","payload":{"seq":"#));
    std::fs::write(&path, rewritten).unwrap();

    let app = StdioClient::spawn({
        let mut command = home.command(DEPUTY);
        command.arg("app-server");
        command
    });
    let init = app.request(
        "initialize",
        json!({"clientInfo": {"name": "test", "version": "1"}}),
    );
    app.wait_response(init, WAIT).unwrap();
    app.notify("initialized", json!({}));
    let read = app.request("thread/read", json!({"threadId": id, "includeTurns": true}));
    let thread = app.wait_response(read, WAIT).unwrap()["result"]["thread"].clone();
    let turns = thread["turns"].as_array().cloned().unwrap_or_default();
    assert_eq!(turns.len(), 1, "{thread}");
    let kinds: Vec<&str> = turns[0]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["type"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        kinds,
        ["userMessage", "commandExecution", "agentMessage"],
        "{thread}"
    );
    app.close_stdin();
    app.wait_exit(WAIT);
}
