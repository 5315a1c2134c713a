//! The server's own requests (approvals): how they are numbered and withdrawn.

use deputy_test_support::McpSession;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::harness::{Mcp, WAIT, shell};

/// Arguments of a `codex` call whose command needs approval.
fn call_needing_approval() -> Value {
    json!({"prompt": "touch it", "approval-policy": "untrusted", "sandbox": "danger-full-access"})
}

#[test]
fn the_first_approval_is_request_1_and_is_withdrawn_under_that_id_when_its_call_is_cancelled() {
    // The TypeScript SDK ignores a cancellation of request 0, so ids start at 1.
    let mcp = Mcp::spawn();
    McpSession::initialize(&mcp.client, json!({"elicitation": {}}));
    mcp.model.push(shell("call-touch", "touch never.txt"));
    let call = mcp.call("codex", call_needing_approval());
    let question = mcp
        .client
        .wait_for(|m| m["method"] == "elicitation/create", WAIT)
        .unwrap_or_else(|err| panic!("{err}"));
    assert_eq!(question["id"], 1, "{question}");

    mcp.client
        .notify("notifications/cancelled", json!({"requestId": call}));
    let withdrawn = mcp
        .client
        .wait_for(
            |m| m["method"] == "notifications/cancelled" && m["params"]["requestId"] == 1,
            WAIT,
        )
        .unwrap_or_else(|err| panic!("{err}"));
    assert!(withdrawn.get("id").is_none(), "{withdrawn}");
    mcp.wait_event(call, "turn_aborted");
    assert!(!mcp.home.workspace().join("never.txt").exists());
}

#[test]
fn an_answer_under_the_wire_id_reaches_the_waiting_approval() {
    let mcp = Mcp::spawn();
    McpSession::initialize(&mcp.client, json!({"elicitation": {}}));
    mcp.model.push(shell("call-touch", "touch approved.txt"));
    mcp.model
        .push(deputy_test_support::MockResponse::text_turn("touched"));
    let call = mcp.call("codex", call_needing_approval());
    let question = mcp
        .client
        .wait_for(|m| m["method"] == "elicitation/create", WAIT)
        .unwrap_or_else(|err| panic!("{err}"));
    mcp.client
        .respond(question["id"].clone(), json!({"decision": "approved"}));
    assert_eq!(mcp.result(call)["content"][0]["text"], "touched");
    assert!(mcp.home.workspace().join("approved.txt").exists());
    // A reply to id 0, which the server never used, changes nothing.
    mcp.client
        .respond(json!(0), json!({"decision": "approved"}));
    let ping = mcp.client.request("ping", Value::Null);
    assert_eq!(mcp.result(ping), json!({}));
}
