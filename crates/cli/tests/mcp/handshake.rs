//! The MCP handshake — in order or not — and every request that is not a tool call:
//! each gets an answer.

use std::time::Duration;

use deputy_test_support::{McpSession, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::harness::{EXIT_WAIT, Mcp, WAIT};

/// How long a request that needs no work may take to be answered.
const PROMPT_ANSWER: Duration = Duration::from_secs(2);

fn initialize(mcp: &Mcp, version: &str) -> Value {
    let id = mcp.client.request(
        "initialize",
        json!({
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "handshake-test", "version": "1.0"},
        }),
    );
    mcp.result(id)
}

#[test]
fn initialize_answers_the_clients_version_when_supported_else_the_newest() {
    for (asked, answered) in [
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2099-01-01", "2025-11-25"),
    ] {
        let mcp = Mcp::spawn();
        let result = initialize(&mcp, asked);
        assert_eq!(result["protocolVersion"], answered, "asked for {asked}");
        assert!(
            result["capabilities"]["tools"].is_object(),
            "tools capability missing: {result}"
        );
        assert_eq!(result["serverInfo"]["name"], "deputy");
        assert_eq!(result["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
    }
}

#[test]
fn every_request_is_answered_with_a_result_or_method_not_found() {
    let mcp = Mcp::start();
    let requests = [
        ("ping", json!({})),
        ("tools/list", json!({})),
        ("resources/list", json!({})),
        ("resources/templates/list", json!({})),
        ("prompts/list", json!({})),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": "b"}}),
        ),
        ("logging/setLevel", json!({"level": "info"})),
        ("deputy/no-such-method", json!({})),
    ];
    let ids: Vec<(&str, i64)> = requests
        .iter()
        .map(|(method, params)| (*method, mcp.client.request(method, params.clone())))
        .collect();
    let mut answers = serde_json::Map::new();
    for (method, id) in ids {
        let response = mcp
            .client
            .wait_response(id, PROMPT_ANSWER)
            .unwrap_or_else(|err| panic!("{method}: {err}"));
        let answer = match (response.get("result"), response.get("error")) {
            (Some(result), None) => result.clone(),
            (None, Some(error)) => json!({"error": error["code"]}),
            _ => panic!("{method}: neither result nor error: {response}"),
        };
        answers.insert(method.to_string(), answer);
    }
    let tools = answers["tools/list"]["tools"].as_array().map(Vec::len);
    assert_eq!(tools, Some(7), "{answers:?}");
    answers.remove("tools/list");
    assert_eq!(
        Value::Object(answers),
        json!({
            "ping": {},
            "resources/list": {"resources": []},
            "resources/templates/list": {"resourceTemplates": []},
            "prompts/list": {"prompts": []},
            "completion/complete": {"completion": {"values": []}},
            "logging/setLevel": {"error": -32601},
            "deputy/no-such-method": {"error": -32601},
        })
    );
}

#[test]
fn a_malformed_line_gets_a_parse_error_and_the_server_keeps_serving() {
    let mcp = Mcp::start();
    mcp.client
        .send_raw("{\"jsonrpc\": \"2.0\", \"id\": 7, \"method\": ");
    let error = mcp
        .client
        .wait_for(|message| message["error"]["code"] == -32700, WAIT)
        .unwrap_or_else(|err| panic!("{err}"));
    assert_eq!(error["id"], Value::Null);
    assert_eq!(error["jsonrpc"], "2.0");

    let ping = mcp.client.request("ping", Value::Null);
    assert_eq!(mcp.result(ping), json!({}));
    mcp.assert_stdout_is_protocol();
}

#[test]
fn an_unreadable_request_is_answered_under_its_own_id() {
    let mcp = Mcp::start();
    let bad_params = mcp.client.request("tools/list", json!(5));
    let no_params = mcp.client.request("tools/call", Value::Null);
    let code = |id: i64| {
        let response = mcp
            .client
            .wait_response(id, PROMPT_ANSWER)
            .unwrap_or_else(|err| panic!("{err}"));
        response["error"]["code"].clone()
    };
    assert_eq!(code(bad_params), -32600);
    assert_eq!(code(no_params), -32602);
    let ping = mcp.client.request("ping", Value::Null);
    assert_eq!(mcp.result(ping), json!({}));
}

#[test]
fn a_request_before_initialize_is_refused_and_the_session_then_starts_normally() {
    let mcp = Mcp::spawn();
    // A notification this early used to end the process ("MCP handshake failed").
    mcp.client.notify("notifications/initialized", Value::Null);
    let early = mcp.client.request("tools/list", json!({}));
    let refused = mcp
        .client
        .wait_response(early, PROMPT_ANSWER)
        .unwrap_or_else(|err| panic!("{err}"));
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("initialize"), "{message}");

    McpSession::initialize(&mcp.client, json!({}));
    mcp.model
        .push(MockResponse::text_turn("after a rocky start"));
    let call = mcp.call("codex", json!({"prompt": "hi"}));
    assert_eq!(
        mcp.result(call)["content"][0]["text"],
        "after a rocky start"
    );
}

/// MCP allows `ping` at any time, so it is answered before `initialize` too.
#[test]
fn ping_before_initialize_is_answered() {
    let mcp = Mcp::spawn();
    let ping = mcp.client.request("ping", Value::Null);
    assert_eq!(mcp.result(ping), json!({}));
    let result = initialize(&mcp, "2025-06-18");
    assert_eq!(result["serverInfo"]["name"], "deputy");
}

#[test]
fn a_second_initialize_is_refused_and_the_session_goes_on() {
    let mcp = Mcp::start();
    let again = mcp.client.request(
        "initialize",
        json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "handshake-test", "version": "2.0"},
        }),
    );
    let refused = mcp
        .client
        .wait_response(again, PROMPT_ANSWER)
        .unwrap_or_else(|err| panic!("{err}"));
    assert_eq!(
        refused["error"],
        json!({"code": -32600, "message": "initialize called more than once"})
    );
    let tools = mcp.result(mcp.client.request("tools/list", json!({})));
    assert_eq!(tools["tools"].as_array().map(Vec::len), Some(7));
}

#[test]
fn a_client_that_leaves_before_initializing_ends_the_server_quietly() {
    let mcp = Mcp::spawn();
    mcp.client.close_stdin();
    let status = mcp
        .client
        .wait_exit(EXIT_WAIT)
        .unwrap_or_else(|| panic!("the server did not exit"));
    assert!(status.success(), "{status}: {}", mcp.client.stderr_text());
}

/// `deputy mcp-server` alone is served without parsing a command line; every other form
/// goes through the parser, `-c` overrides included, wherever they stand.
#[test]
fn config_overrides_on_the_command_line_reach_the_server() {
    for args in [
        &["-c", "model=\"from-the-command-line\"", "mcp-server"][..],
        &["mcp-server", "-c", "model=\"from-the-command-line\""][..],
    ] {
        let mcp = Mcp::spawn_with_args(args);
        McpSession::initialize(&mcp.client, json!({}));
        let result = mcp.result(mcp.call("conversationCreate", json!({"prompt": ""})));
        assert_eq!(
            result["structuredContent"]["model"], "from-the-command-line",
            "{args:?}: {result}"
        );
    }
}
