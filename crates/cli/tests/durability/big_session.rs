//! A session with a 200 MB line (a pasted prompt) takes a while to load. The app-server
//! loads it off the request path: `thread/list` and `thread/read` of another thread,
//! sent after `thread/resume` of the big one, are answered before it.

use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use deputy_test_support::{MockModelServer, MockResponse, StdioClient, TestHome};
use serde_json::{Value, json};

use crate::common::{DEPUTY, exec};

const WAIT: Duration = Duration::from_secs(120);

/// The size of the big line.
const BIG: usize = 200 << 20;

fn session(home: &TestHome, prompt: &str) -> (String, PathBuf) {
    let run = exec(home, &["--json-events", prompt]);
    run.assert_code(0);
    let configured: Value = run
        .stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|event| event["type"] == "session_configured")
        .unwrap();
    (
        configured["session_id"].as_str().unwrap().to_string(),
        PathBuf::from(configured["rollout_path"].as_str().unwrap()),
    )
}

#[test]
fn thread_list_is_answered_while_a_session_with_a_200_mb_line_loads() {
    let model = MockModelServer::start();
    model.respond_with(|_| MockResponse::text_turn("ok"));
    let home = TestHome::new(&model.base_url());
    let (big, big_path) = session(&home, "the big one");
    let (small, _) = session(&home, "the small one");
    {
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&big_path)
            .unwrap();
        let head = r#"{"timestamp":"2025-01-01T00:00:00.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":""#;
        file.write_all(head.as_bytes()).unwrap();
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..BIG >> 20 {
            file.write_all(&chunk).unwrap();
        }
        file.write_all(b"\"}]}}\n").unwrap();
    }

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

    let started = Instant::now();
    let resume = app.request("thread/resume", json!({"threadId": big}));
    let list = app.request("thread/list", json!({}));
    let read = app.request(
        "thread/read",
        json!({"threadId": small, "includeTurns": true}),
    );
    let listed = app.wait_response(list, WAIT).unwrap();
    let list_took = started.elapsed();
    let read_back = app.wait_response(read, WAIT).unwrap();
    let resumed = app.wait_response(resume, WAIT).unwrap();
    let resume_took = started.elapsed();
    eprintln!("thread/list answered after {list_took:?}; thread/resume after {resume_took:?}");

    assert_eq!(
        listed["result"]["data"].as_array().map(Vec::len),
        Some(2),
        "{listed}"
    );
    assert_eq!(read_back["result"]["thread"]["id"], small.as_str());
    assert_eq!(
        resumed["result"]["thread"]["id"],
        big.as_str(),
        "{:.300}",
        resumed.to_string()
    );
    // Answered in that order: the loading held nothing else up.
    let position = |id: i64| {
        app.messages()
            .iter()
            .position(|m| m["id"] == json!(id) && m.get("method").is_none())
            .unwrap()
    };
    assert!(
        position(list) < position(resume),
        "thread/list waited for the load"
    );
    assert!(
        position(read) < position(resume),
        "thread/read waited for the load"
    );
    app.close_stdin();
    app.wait_exit(WAIT);
}
