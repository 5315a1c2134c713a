//! An MCP server's form (server-everything's `trigger-elicitation-request`) reaching an ACP
//! client: as `elicitation/create` when the client said it fills in forms, its answer
//! carried back to the server; declined unasked when it did not.

use deputy_test_support::{
    MockModelServer, MockResponse, NodeMcpServers, SseEvent, TestHome, responses,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::harness::{Agent, ok_step, run_plan, say, updates_of};

/// A home whose model calls server-everything's form tool, then says `Done.`.
fn home_asking_for_a_form(model: &MockModelServer) -> TestHome {
    let everything = NodeMcpServers::install()
        .unwrap_or_else(|err| panic!("installing the MCP servers: {err}"))
        .everything();
    let home = TestHome::new(&model.base_url());
    home.append_config(&format!(
        "[mcp_servers.everything]\ncommand = \"node\"\nargs = [{}, \"stdio\"]\n",
        Value::String(everything.display().to_string())
    ));
    model.push_all([
        MockResponse::sse(vec![
            responses::created("resp-form"),
            SseEvent::new(
                "response.output_item.done",
                json!({"item": {
                    "type": "function_call",
                    "call_id": "c-form",
                    "namespace": "mcp__everything__",
                    "name": "trigger-elicitation-request",
                    "arguments": "{}",
                }}),
            ),
            responses::completed("resp-form"),
        ]),
        say("Done."),
    ]);
    home
}

/// What the model was told the form tool returned.
fn form_output(model: &MockModelServer) -> String {
    let requests = model.requests();
    assert_eq!(requests.len(), 2, "one call, one answer");
    requests[1].body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|item| item["type"] == "function_call_output" && item["call_id"] == "c-form")
        .and_then(|item| item["output"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no output for the form tool in {}", requests[1].body))
}

#[test]
fn a_client_that_fills_in_forms_gets_the_form_and_its_answer_reaches_the_server() {
    let model = MockModelServer::start();
    let home = home_asking_for_a_form(&model);

    let seen = run_plan(
        &home,
        Agent::Deputy,
        json!([]),
        json!([
            {"op": "initialize", "elicitations": [
                {"action": "accept", "content": {"name": "Grace Hopper", "check": true}},
            ]},
            {"op": "new"},
            {"op": "prompt", "text": "ask me for my name"},
        ]),
    );

    let session = ok_step(&seen, 1)["result"]["sessionId"].clone();
    let prompt = ok_step(&seen, 2);
    assert_eq!(prompt["result"]["stopReason"], "end_turn");
    let asked = prompt["elicitations"].as_array().expect("elicitations");
    assert_eq!(asked.len(), 1, "{prompt}");
    let request = &asked[0]["request"];
    assert_eq!(request["mode"], "form", "{request}");
    assert_eq!(request["sessionId"], session);
    assert_eq!(
        request["message"],
        "Please provide inputs for the following fields:"
    );
    assert_eq!(request["requestedSchema"]["required"], json!(["name"]));
    assert_eq!(
        request["requestedSchema"]["properties"]["name"]["type"],
        "string"
    );
    // Tied to the MCP call the client was shown.
    let calls = updates_of(prompt, "tool_call");
    let call = calls
        .iter()
        .find(|update| update["title"] == "everything: trigger-elicitation-request")
        .unwrap_or_else(|| panic!("no tool call for the MCP call in {prompt}"));
    assert_eq!(request["toolCallId"], call["toolCallId"]);
    let output = form_output(&model);
    assert!(output.contains("- Name: Grace Hopper"), "{output}");
    assert!(output.contains("- Agreed to terms: true"), "{output}");
}

#[test]
fn a_client_that_does_not_fill_in_forms_is_not_asked_and_the_form_is_declined() {
    let model = MockModelServer::start();
    let home = home_asking_for_a_form(&model);

    let seen = run_plan(
        &home,
        Agent::Deputy,
        json!([]),
        json!([
            {"op": "initialize"},
            {"op": "new"},
            {"op": "prompt", "text": "ask me for my name"},
        ]),
    );

    let prompt = ok_step(&seen, 2);
    assert_eq!(prompt["result"]["stopReason"], "end_turn");
    assert_eq!(prompt["elicitations"], json!([]), "{prompt}");
    let output = form_output(&model);
    assert!(output.contains("declined"), "{output}");
}
