//! A server's form (`elicitation/create`) relayed to deputy's own client, answered there
//! by the official MCP Python SDK, and the answer carried back to the server.

use std::path::Path;
use std::time::Duration;

use deputy_test_support::{
    MockModelServer, MockResponse, StdioClient, python_with_mcp, run_with_deadline,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::DEPUTY;
use crate::{
    all_requests, home_with, namespaced_call_turn, output_for, reference_servers, toml_str,
};

#[test]
fn a_form_from_server_everything_is_answered_by_the_python_sdk_client() {
    let python = python_with_mcp().unwrap_or_else(|err| panic!("no Python MCP SDK: {err}"));
    let everything = reference_servers().everything();
    let model = MockModelServer::start();
    let home = home_with(
        &model,
        &format!(
            "[mcp_servers.everything]\ncommand = \"node\"\nargs = [{}, \"stdio\"]\n",
            toml_str(&everything.display().to_string())
        ),
    );
    model.push_all([
        namespaced_call_turn(
            "c-form",
            "mcp__everything__",
            "trigger-elicitation-request",
            json!({}),
        ),
        MockResponse::text_turn("Thanks, Ada."),
    ]);
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/mcp_elicitation_client.py");
    let mut command = home.command(&python);
    command.arg(&script).arg(DEPUTY).env("HOME", home.path());

    let output =
        run_with_deadline(command, Duration::from_secs(90)).unwrap_or_else(|e| panic!("{e}"));

    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "python exited with {}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}",
        output.status
    );
    let seen: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|err| panic!("script output is not JSON ({err}): {stdout}"));
    let asked = seen["asked"].as_array().expect("asked");
    assert_eq!(asked.len(), 1, "{seen}");
    let message = asked[0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("everything") && message.contains("Please provide inputs"),
        "{message}"
    );
    let fields = &asked[0]["fields"];
    assert!(
        fields
            .as_array()
            .is_some_and(|f| f.contains(&json!("name"))),
        "{fields}"
    );
    assert_eq!(
        seen["structuredContent"]["content"], "Thanks, Ada.",
        "{seen}"
    );
    let requests = all_requests(&model, 2);
    let answered = output_for(&requests[1], "c-form");
    assert!(answered.contains("- Name: Ada Lovelace"), "{answered}");
}

#[test]
fn a_form_from_server_everything_reaches_an_app_server_client_and_its_answer_goes_back() {
    let everything = reference_servers().everything();
    let model = MockModelServer::start();
    let home = home_with(
        &model,
        &format!(
            "[mcp_servers.everything]\ncommand = \"node\"\nargs = [{}, \"stdio\"]\n",
            toml_str(&everything.display().to_string())
        ),
    );
    model.push_all([
        namespaced_call_turn(
            "c-form",
            "mcp__everything__",
            "trigger-elicitation-request",
            json!({}),
        ),
        MockResponse::text_turn("Thanks, Grace."),
    ]);
    let mut command = home.command(DEPUTY);
    command.arg("app-server");
    let client = StdioClient::spawn(command);
    let wait = Duration::from_secs(30);
    let id = client.request(
        "initialize",
        json!({"clientInfo": {"name": "deputy-tests", "version": "0"}}),
    );
    client
        .wait_response(id, wait)
        .unwrap_or_else(|e| panic!("{e}"));
    client.notify("initialized", Value::Null);
    let id = client.request("thread/start", json!({}));
    let started = client
        .wait_response(id, wait)
        .unwrap_or_else(|e| panic!("{e}"));
    let thread_id = started["result"]["thread"]["id"].clone();
    let id = client.request(
        "turn/start",
        json!({"threadId": thread_id, "input": [{"type": "text", "text": "ask for my name"}]}),
    );
    client
        .wait_response(id, wait)
        .unwrap_or_else(|e| panic!("{e}"));

    let question = client
        .wait_for(
            |m| m.get("id").is_some() && m["method"] == "mcpServer/elicitation/request",
            wait,
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let params = &question["params"];
    assert_eq!(params["serverName"], "everything", "{params}");
    assert_eq!(
        params["message"],
        "Please provide inputs for the following fields:"
    );
    assert_eq!(
        params["requestedSchema"]["properties"]["name"]["type"],
        "string"
    );
    client.respond(
        question["id"].clone(),
        json!({"action": "accept", "content": {"name": "Grace Hopper"}}),
    );
    client
        .wait_for(|m| m["method"] == "turn/completed", wait)
        .unwrap_or_else(|e| panic!("{e}"));

    let requests = all_requests(&model, 2);
    let answered = output_for(&requests[1], "c-form");
    assert!(answered.contains("- Name: Grace Hopper"), "{answered}");
}
