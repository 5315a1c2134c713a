//! deputy as an MCP client: the real binary, configured with `[mcp_servers]`, offering the
//! tools of real MCP servers to a scripted model and carrying their results back.
//!
//! - `approvals`: which calls ask first, through the MCP front door and the app-server;
//! - `reference_servers`: the reference servers (`server-everything` over stdio and
//!   Streamable HTTP, `server-filesystem`), installed by the test command;
//! - `mcp_command`: `deputy mcp list|get|add|remove`;
//! - `elicitation`: a server's form relayed to deputy's client (the Python MCP SDK, an
//!   app-server client, `deputy exec`'s terminal); sampling declined;
//! - `faults`: servers that never start, crash, hang or are required and fail.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

mod common;

#[path = "mcp_client/approvals.rs"]
mod approvals;
#[path = "mcp_client/elicitation.rs"]
mod elicitation;
#[path = "mcp_client/faults.rs"]
mod faults;
#[path = "mcp_client/mcp_command.rs"]
mod mcp_command;
#[path = "mcp_client/reference_servers.rs"]
mod reference_servers;

use std::time::Duration;

use deputy_test_support::{
    MockModelServer, MockResponse, NodeMcpServers, RecordedRequest, SseEvent, StdioClient,
    TestHome, responses,
};
use serde_json::{Value, json};

/// How long an app-server test waits for each answer or notification it expects.
const APP_SERVER_WAIT: Duration = Duration::from_secs(30);

/// `deputy app-server` in `home`, past the handshake, with one thread started: the
/// client and the thread's id.
fn app_server_thread(home: &TestHome) -> (StdioClient, String) {
    let mut command = home.command(common::DEPUTY);
    command.arg("app-server");
    let client = StdioClient::spawn(command);
    let id = client.request(
        "initialize",
        json!({"clientInfo": {"name": "deputy-tests", "version": "0"}}),
    );
    client
        .wait_response(id, APP_SERVER_WAIT)
        .unwrap_or_else(|e| panic!("{e}"));
    client.notify("initialized", Value::Null);
    let id = client.request("thread/start", json!({}));
    let started = client
        .wait_response(id, APP_SERVER_WAIT)
        .unwrap_or_else(|e| panic!("{e}"));
    let thread_id = started["result"]["thread"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no thread id in {started}"))
        .to_string();
    (client, thread_id)
}

/// How long a test waits for requests it expects to have been sent already.
const SETTLED: Duration = Duration::from_secs(10);

/// The reference servers, installed under `target/` on first use.
fn reference_servers() -> NodeMcpServers {
    NodeMcpServers::install().unwrap_or_else(|err| panic!("installing the MCP servers: {err}"))
}

/// A home using `server` whose config also holds `mcp_servers` (TOML tables).
fn home_with(server: &MockModelServer, mcp_servers: &str) -> TestHome {
    let home = TestHome::new(&server.base_url());
    home.append_config(mcp_servers);
    home
}

/// A TOML string literal.
fn toml_str(text: &str) -> String {
    Value::String(text.to_string()).to_string()
}

/// A Responses turn in which the model calls `name` of the namespace `namespace` (an MCP
/// server's tool, as Codex's models call them).
fn namespaced_call_turn(call_id: &str, namespace: &str, name: &str, args: Value) -> MockResponse {
    MockResponse::sse(vec![
        responses::created("resp-mcp"),
        SseEvent::new(
            "response.output_item.done",
            json!({"item": {
                "type": "function_call",
                "call_id": call_id,
                "namespace": namespace,
                "name": name,
                "arguments": args.to_string(),
            }}),
        ),
        responses::completed("resp-mcp"),
    ])
}

/// Exactly `n` requests the model server received.
fn all_requests(server: &MockModelServer, n: usize) -> Vec<RecordedRequest> {
    let requests = server
        .wait_for_requests(n, SETTLED)
        .unwrap_or_else(|err| panic!("{err}"));
    assert_eq!(requests.len(), n, "unexpected extra requests");
    requests
}

/// The output `request` carries for `call_id` (Responses `function_call_output`).
fn output_for(request: &RecordedRequest, call_id: &str) -> String {
    let outputs: Vec<&Value> = request.body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == "function_call_output" && item["call_id"] == call_id)
        .collect();
    assert_eq!(
        outputs.len(),
        1,
        "one output for {call_id} in {}",
        request.body
    );
    match &outputs[0]["output"] {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The tool named `name` in the tools of `request`.
fn offered_tool<'a>(request: &'a RecordedRequest, name: &str) -> &'a Value {
    request.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|tool| tool["name"] == name)
        .unwrap_or_else(|| panic!("no tool {name} in {}", request.body["tools"]))
}

/// Every stdout line of `deputy exec --json` as JSON.
fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|err| panic!("{err}: {line}")))
        .collect()
}

/// The completed `mcp_tool_call` items of a JSONL stream.
fn completed_mcp_calls(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|event| {
            event["type"] == "item.completed" && event["item"]["type"] == "mcp_tool_call"
        })
        .map(|event| &event["item"])
        .collect()
}
