//! A session file copied under another thread's name (its file name says B, its
//! `session_meta` says A, and B sorts before A): the inner id is the identity. Resuming
//! B is refused and writes nothing; A resumes into its own file; every listing shows A
//! once, and `thread/list` and `conversationsList` page through to the end.

use std::path::{Path, PathBuf};
use std::time::Duration;

use deputy_test_support::{McpSession, MockModelServer, MockResponse, StdioClient, TestHome};
use serde_json::{Value, json};

use crate::common::{DEPUTY, exec};

const WAIT: Duration = Duration::from_secs(20);

/// Runs one `deputy exec` turn and returns the thread id and its rollout.
fn session(home: &TestHome, prompt: &str) -> (String, PathBuf) {
    let run = exec(home, &["--json-events", prompt]);
    run.assert_code(0);
    let configured: Value = run
        .stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|event| event["type"] == "session_configured")
        .expect("session_configured");
    (
        configured["session_id"].as_str().unwrap().to_string(),
        PathBuf::from(configured["rollout_path"].as_str().unwrap()),
    )
}

/// An id that sorts just before `id`: its last non-zero hex digit made 0.
fn sorting_before(id: &str) -> String {
    let mut chars: Vec<char> = id.chars().collect();
    let at = chars.iter().rposition(|c| *c != '0' && *c != '-').unwrap();
    chars[at] = '0';
    chars.into_iter().collect()
}

/// Copies `original` (thread `id`) under a name for an id that sorts before it.
fn copy_under_another_name(original: &Path, id: &str) -> (String, PathBuf) {
    let copy_id = sorting_before(id);
    let name = original
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .replace(id, &copy_id);
    let copy = original.with_file_name(name);
    std::fs::copy(original, &copy).unwrap();
    (copy_id, copy)
}

/// Pages through `list` (one item a page) to its end; fails after more pages than sessions.
fn page_through(
    mut list: impl FnMut(Option<String>) -> (Vec<String>, Option<String>),
) -> Vec<String> {
    let mut seen = Vec::new();
    let mut cursor = None;
    for _ in 0..10 {
        let (ids, next) = list(cursor.take());
        seen.extend(ids);
        match next {
            Some(next) => cursor = Some(next),
            None => return seen,
        }
    }
    panic!("paging did not end: {seen:?}");
}

#[test]
fn a_copied_session_file_is_never_taken_for_another_thread() {
    let model = MockModelServer::start();
    model.respond_with(|_| MockResponse::text_turn("ok"));
    let home = TestHome::new(&model.base_url());
    let (other, _) = session(&home, "an older session");
    let (id, original) = session(&home, "the original");
    let (copy_id, copy) = copy_under_another_name(&original, &id);
    let copy_bytes = std::fs::read(&copy).unwrap();

    // Resuming the copy's name is refused, and writes nothing anywhere.
    let refused = exec(&home, &["resume", &copy_id, "as the copy"]);
    assert_ne!(refused.status.code(), Some(0));
    assert!(
        refused.stderr.contains(&format!("holds thread {id}")),
        "{}",
        refused.stderr
    );
    assert_eq!(std::fs::read(&copy).unwrap(), copy_bytes);

    // The original resumes into its own file.
    let original_len = std::fs::metadata(&original).unwrap().len();
    exec(&home, &["resume", &id, "as the original"]).assert_code(0);
    assert!(std::fs::metadata(&original).unwrap().len() > original_len);
    assert_eq!(std::fs::read(&copy).unwrap(), copy_bytes);

    // `deputy sessions list` shows each thread once and warns about the copy.
    let out = home
        .command(DEPUTY)
        .args(["sessions", "list"])
        .output()
        .unwrap();
    let listed: Vec<&str> = std::str::from_utf8(&out.stdout)
        .unwrap()
        .lines()
        .map(|line| line.split('\t').next().unwrap())
        .collect();
    assert_eq!(listed, [id.as_str(), other.as_str()]);
    assert!(String::from_utf8_lossy(&out.stderr).contains(&copy_id));

    // MCP `conversationsList`, one conversation a page, ends and lists each thread once.
    let mcp = StdioClient::spawn({
        let mut command = home.command(DEPUTY);
        command.arg("mcp-server");
        command
    });
    McpSession::initialize(&mcp, json!({}));
    let conversations = page_through(|cursor| {
        let mut arguments = json!({"limit": 1});
        if let Some(cursor) = cursor {
            arguments["cursor"] = json!(cursor);
        }
        let request = mcp.request(
            "tools/call",
            json!({"name": "conversationsList", "arguments": arguments}),
        );
        let result =
            mcp.wait_response(request, WAIT).unwrap()["result"]["structuredContent"].clone();
        let ids = result["conversations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["conversation_id"].as_str().unwrap().to_string())
            .collect();
        (ids, result["next_cursor"].as_str().map(str::to_string))
    });
    assert_eq!(conversations, [id.clone(), other.clone()]);
    mcp.close_stdin();
    mcp.wait_exit(WAIT);

    // App-server `thread/list`, one thread a page, likewise.
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
    let threads = page_through(|cursor| {
        let request = app.request("thread/list", json!({"limit": 1, "cursor": cursor}));
        let result = app.wait_response(request, WAIT).unwrap()["result"].clone();
        let ids = result["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_string())
            .collect();
        (ids, result["nextCursor"].as_str().map(str::to_string))
    });
    assert_eq!(threads, [id, other]);
    app.close_stdin();
    app.wait_exit(WAIT);
}
