//! The MCP servers an editor hands to `session/new` and `session/load`: started for the
//! session, their tools offered to the model and called; an SSE server is refused with a
//! notice naming it.

use deputy_test_support::{
    MockModelServer, MockResponse, NodeMcpServers, SseEvent, TestHome, responses,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::harness::{Agent, ok_step, run_plan, say, updates_of};

/// A model turn calling server-everything's `echo` through the namespace `server`.
fn echo_call(call_id: &str, server: &str, message: &str) -> MockResponse {
    MockResponse::sse(vec![
        responses::created("resp-echo"),
        SseEvent::new(
            "response.output_item.done",
            json!({"item": {
                "type": "function_call",
                "call_id": call_id,
                "namespace": format!("mcp__{server}__"),
                "name": "echo",
                "arguments": json!({"message": message}).to_string(),
            }}),
        ),
        responses::completed("resp-echo"),
    ])
}

/// What the model was told call `call_id` returned, in the request after it.
fn output_of(model: &MockModelServer, call_id: &str) -> String {
    model
        .requests()
        .iter()
        .flat_map(|request| {
            request.body["input"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .find(|item| item["type"] == "function_call_output" && item["call_id"] == call_id)
        .and_then(|item| item["output"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no output for {call_id}"))
}

/// The client's stdio entry for server-everything under `name`.
fn everything_entry(name: &str) -> Value {
    let everything = NodeMcpServers::install()
        .unwrap_or_else(|err| panic!("installing the MCP servers: {err}"))
        .everything();
    json!({"name": name, "command": "node",
           "args": [everything.display().to_string(), "stdio"], "env": []})
}

#[test]
fn a_clients_stdio_server_is_started_for_its_session_and_the_model_calls_it() {
    let model = MockModelServer::start();
    model.push_all([
        echo_call("c-echo", "editor_everything", "from the editor"),
        say("Done."),
    ]);
    let home = TestHome::new(&model.base_url());

    let seen = run_plan(
        &home,
        Agent::Deputy,
        json!([]),
        json!([
            {"op": "initialize"},
            // Not a valid server name: it becomes `editor_everything`.
            {"op": "new", "mcpServers": [everything_entry("editor everything")]},
            {"op": "prompt", "text": "echo something"},
        ]),
    );

    assert_eq!(
        ok_step(&seen, 0)["result"]["agentCapabilities"]["mcpCapabilities"],
        json!({"http": true, "sse": false})
    );
    let prompt = ok_step(&seen, 2);
    assert_eq!(prompt["result"]["stopReason"], "end_turn", "{prompt}");
    let first = &model.requests()[0].body;
    let offered = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "mcp__editor_everything__")
        .unwrap_or_else(|| panic!("the client's server is not offered: {first}"));
    assert_eq!(offered["type"], "namespace");
    assert_eq!(output_of(&model, "c-echo"), "Echo: from the editor");
    // The call was shown to the client as a tool call of that server.
    let calls = updates_of(prompt, "tool_call");
    assert!(
        calls
            .iter()
            .any(|update| update["title"] == "editor_everything: echo"),
        "{prompt}"
    );
    // No notice: every server was used.
    assert_eq!(
        updates_of(prompt, "notice"),
        Vec::<&Value>::new(),
        "{prompt}"
    );
}

#[test]
fn a_loaded_session_starts_the_clients_servers_again_in_a_new_agent() {
    let model = MockModelServer::start();
    model.push_all([
        say("First."),
        echo_call("c-later", "ed", "after load"),
        say("Done."),
    ]);
    let home = TestHome::new(&model.base_url());
    let first = run_plan(
        &home,
        Agent::Deputy,
        json!([]),
        json!([
            {"op": "initialize"},
            {"op": "new"},
            {"op": "prompt", "text": "hello"},
        ]),
    );
    let session = ok_step(&first, 1)["result"]["sessionId"].clone();

    let second = run_plan(
        &home,
        Agent::Deputy,
        json!([]),
        json!([
            {"op": "initialize"},
            {"op": "load", "sessionId": session, "mcpServers": [everything_entry("ed")]},
            {"op": "prompt", "text": "echo something"},
        ]),
    );

    assert_eq!(ok_step(&second, 2)["result"]["stopReason"], "end_turn");
    assert_eq!(output_of(&model, "c-later"), "Echo: after load");
}
