//! Threads on disk: resumed after a restart, read back with their turns, listed a page at
//! a time, archived, and shared with `deputy sessions` and the MCP server.

use std::process::Stdio;

use deputy_test_support::{McpSession, StdioClient};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::harness::{AppServer, DEPUTY, WAIT, id_of, say, shell};

/// The `(role, text)` of every message in a model request.
fn conversation(body: &Value) -> Vec<(String, String)> {
    body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == "message")
        .map(|item| {
            let text: String = item["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|part| part["text"].as_str())
                .collect();
            (item["role"].as_str().unwrap_or_default().to_string(), text)
        })
        .filter(|(role, _)| role != "developer")
        .collect()
}

#[test]
fn a_thread_resumes_after_a_restart_with_its_turns() {
    let mut server = AppServer::start();
    let thread = server.start_thread();
    server
        .model
        .push_all([shell("call-echo", "echo hi"), say("first answer")]);
    let first = server.start_turn(&thread, "first question");
    server.turn_completed(&first);

    server.restart();
    let id = server.request("thread/resume", json!({"threadId": thread}));
    let resumed = server.result(id);
    assert_eq!(resumed["thread"]["id"], thread.as_str());
    assert_eq!(resumed["thread"]["preview"], "first question");
    let turns = resumed["thread"]["turns"].as_array().unwrap();
    assert_eq!(turns.len(), 1);
    assert_eq!(turns[0]["id"], first.as_str());
    assert_eq!(turns[0]["status"], "completed");
    let kinds: Vec<&str> = turns[0]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["userMessage", "commandExecution", "agentMessage"]);
    assert_eq!(turns[0]["items"][1]["aggregatedOutput"], "hi\n");
    assert_eq!(turns[0]["items"][2]["text"], "first answer");

    let read = server.request("thread/read", json!({"threadId": thread}));
    assert_eq!(
        server.result(read)["thread"]["turns"],
        resumed["thread"]["turns"]
    );

    server.model.push(say("second answer"));
    let second = server.start_turn(&thread, "second question");
    assert_eq!(
        server.turn_completed(&second)["turn"]["status"],
        "completed"
    );
    let last = server.model.requests().last().unwrap().body.clone();
    assert_eq!(
        conversation(&last),
        [
            ("user".to_string(), "first question".to_string()),
            ("assistant".to_string(), "first answer".to_string()),
            ("user".to_string(), "second question".to_string()),
        ]
    );
}

#[test]
fn thread_read_of_a_thread_not_loaded_reads_its_rollout() {
    let mut server = AppServer::start();
    let thread = server.start_thread();
    server.model.push(say("saved"));
    let turn = server.start_turn(&thread, "keep this");
    server.turn_completed(&turn);
    server.restart();

    let read = server.request("thread/read", json!({"threadId": thread}));
    let result = server.result(read);
    assert_eq!(result["thread"]["status"], json!({"type": "notLoaded"}));
    assert_eq!(result["thread"]["turns"][0]["items"][1]["text"], "saved");
    let bare = server.request(
        "thread/read",
        json!({"threadId": thread, "includeTurns": false}),
    );
    assert_eq!(server.result(bare)["thread"]["turns"], json!([]));
}

#[test]
fn thread_list_pages_through_threads_newest_first() {
    let server = AppServer::start();
    let made: Vec<String> = (0..3).map(|_| server.start_thread()).collect();

    let first = server.request("thread/list", json!({"limit": 2}));
    let first = server.result(first);
    let ids = |page: &Value| -> Vec<String> {
        page["data"].as_array().unwrap().iter().map(id_of).collect()
    };
    assert_eq!(ids(&first), [made[2].clone(), made[1].clone()]);
    let cursor = first["nextCursor"].as_str().unwrap();
    let second = server.request("thread/list", json!({"limit": 2, "cursor": cursor}));
    let second = server.result(second);
    assert_eq!(ids(&second), [made[0].clone()]);
    assert_eq!(second["nextCursor"], Value::Null);
    assert_eq!(first["data"][0]["turns"], json!([]));
    assert_eq!(first["data"][0]["status"], json!({"type": "idle"}));
}

#[test]
fn thread_list_runs_oldest_first_when_sort_direction_is_asc() {
    let server = AppServer::start();
    let made: Vec<String> = (0..3).map(|_| server.start_thread()).collect();
    let ids = |page: &Value| -> Vec<String> {
        page["data"].as_array().unwrap().iter().map(id_of).collect()
    };

    let first = server.request("thread/list", json!({"limit": 2, "sortDirection": "asc"}));
    let first = server.result(first);
    assert_eq!(ids(&first), [made[0].clone(), made[1].clone()]);
    let cursor = first["nextCursor"].as_str().unwrap();
    let second = server.request(
        "thread/list",
        json!({"limit": 2, "cursor": cursor, "sortDirection": "asc", "sortKey": "created_at"}),
    );
    let second = server.result(second);
    assert_eq!(ids(&second), [made[2].clone()]);
    assert_eq!(second["nextCursor"], Value::Null);
}

#[test]
fn thread_list_by_update_time_pages_in_either_direction() {
    let server = AppServer::start();
    let made: Vec<String> = (0..3).map(|_| server.start_thread()).collect();
    // The first thread was written last, the second first.
    for (thread, secs) in [
        (&made[1], 1_700_000_100),
        (&made[2], 1_700_000_200),
        (&made[0], 1_700_000_300),
    ] {
        let id = server.request(
            "thread/read",
            json!({"threadId": thread, "includeTurns": false}),
        );
        let path = server.result(id)["thread"]["path"]
            .as_str()
            .unwrap()
            .to_string();
        let touched = std::process::Command::new("touch")
            .args(["-m", "-d", &format!("@{secs}"), &path])
            .status()
            .unwrap();
        assert!(touched.success());
    }
    let ids = |page: &Value| -> Vec<String> {
        page["data"].as_array().unwrap().iter().map(id_of).collect()
    };
    let list = |params: Value| {
        let id = server.request("thread/list", params);
        server.result(id)
    };

    let first = list(json!({"sortKey": "updated_at", "limit": 2}));
    assert_eq!(ids(&first), [made[0].clone(), made[2].clone()]);
    assert_eq!(first["data"][0]["updatedAt"], 1_700_000_300);
    let cursor = first["nextCursor"].clone();
    let second = list(json!({"sortKey": "updated_at", "limit": 2, "cursor": cursor}));
    assert_eq!(ids(&second), [made[1].clone()]);
    assert_eq!(second["nextCursor"], Value::Null);

    let oldest = list(json!({"sortKey": "updated_at", "sortDirection": "asc"}));
    assert_eq!(
        ids(&oldest),
        [made[1].clone(), made[2].clone(), made[0].clone()]
    );

    let lost = server.request(
        "thread/list",
        json!({"sortKey": "updated_at", "cursor": "not-a-thread"}),
    );
    assert_eq!(server.error(lost)["code"], -32602);
}

#[test]
fn an_archived_thread_leaves_the_list_and_cannot_be_resumed() {
    let server = AppServer::start();
    let kept = server.start_thread();
    let archived = server.start_thread();
    server.model.push(say("bye"));
    let turn = server.start_turn(&archived, "hello");
    server.turn_completed(&turn);

    let id = server.request("thread/archive", json!({"threadId": archived}));
    assert_eq!(server.result(id), json!({}));
    server.notification("thread/archived", |p| p["threadId"] == archived.as_str());

    let listed = server.request("thread/list", json!({}));
    let ids: Vec<String> = server.result(listed)["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(id_of)
        .collect();
    assert_eq!(ids, [kept]);
    let gone = server.request("thread/list", json!({"archived": true}));
    assert_eq!(server.result(gone)["data"][0]["id"], archived.as_str());
    let resume = server.request("thread/resume", json!({"threadId": archived}));
    assert_eq!(server.error(resume)["code"], -32600);
    assert!(
        std::fs::read_dir(server.home.path().join("archived_sessions"))
            .unwrap()
            .count()
            == 1
    );
}

/// An initialized `deputy mcp-server` on the same home.
fn mcp_server(server: &AppServer) -> StdioClient {
    let mut command = server.home.command(DEPUTY);
    command.arg("mcp-server");
    let client = StdioClient::spawn(command);
    McpSession::initialize(&client, json!({}));
    client
}

fn mcp_call(client: &StdioClient, tool: &str, arguments: Value) -> Value {
    let id = client.request("tools/call", json!({"name": tool, "arguments": arguments}));
    let response = client
        .wait_response(id, WAIT)
        .unwrap_or_else(|e| panic!("{e}"));
    response["result"].clone()
}

#[test]
fn a_thread_started_here_is_listed_by_sessions_and_continued_by_codex_reply() {
    let server = AppServer::start();
    let thread = server.start_thread();
    server.model.push(say("from the app-server"));
    let turn = server.start_turn(&thread, "started over app-server");
    server.turn_completed(&turn);
    server.stop();

    let listed = server
        .home
        .command(DEPUTY)
        .args(["sessions", "list"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed
            .lines()
            .any(|line| line.starts_with(&thread) && line.contains("started over app-server")),
        "{listed}"
    );

    let mcp = mcp_server(&server);
    server.model.push(say("from the MCP server"));
    let result = mcp_call(
        &mcp,
        "codex-reply",
        json!({"threadId": thread, "prompt": "continued over MCP"}),
    );
    assert_eq!(
        result["structuredContent"]["content"],
        "from the MCP server"
    );
    let last = server.model.requests().last().unwrap().body.clone();
    assert_eq!(
        conversation(&last),
        [
            ("user".to_string(), "started over app-server".to_string()),
            ("assistant".to_string(), "from the app-server".to_string()),
            ("user".to_string(), "continued over MCP".to_string()),
        ]
    );
}

#[test]
fn a_thread_started_over_mcp_is_read_and_continued_here() {
    let mut server = AppServer::start();
    server.stop();
    let mcp = mcp_server(&server);
    server.model.push(say("from the MCP server"));
    let result = mcp_call(&mcp, "codex", json!({"prompt": "started over MCP"}));
    let thread = result["structuredContent"]["threadId"]
        .as_str()
        .unwrap()
        .to_string();
    mcp.close_stdin();
    assert!(mcp.wait_exit(WAIT).is_some());

    server.restart();
    let id = server.request("thread/resume", json!({"threadId": thread}));
    let resumed = server.result(id);
    assert_eq!(resumed["thread"]["source"], json!({"custom": "mcp"}));
    let items = &resumed["thread"]["turns"][0]["items"];
    assert_eq!(items[0]["content"][0]["text"], "started over MCP");
    assert_eq!(items[1]["text"], "from the MCP server");

    server.model.push(say("from the app-server"));
    let turn = server.start_turn(&thread, "continued here");
    assert_eq!(server.turn_completed(&turn)["turn"]["status"], "completed");
    let last = server.model.requests().last().unwrap().body.clone();
    assert_eq!(
        conversation(&last),
        [
            ("user".to_string(), "started over MCP".to_string()),
            ("assistant".to_string(), "from the MCP server".to_string()),
            ("user".to_string(), "continued here".to_string()),
        ]
    );
}
