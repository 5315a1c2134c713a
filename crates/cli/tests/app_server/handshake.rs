//! The handshake: nothing before `initialize`, `initialize` once, either JSON-RPC spelling in.

use pretty_assertions::assert_eq;
use serde_json::json;

use crate::harness::{AppServer, Setup};

#[test]
fn requests_before_initialize_are_refused_and_the_server_stays_up() {
    let server = Setup::default().spawn();

    let early = server.request("thread/start", json!({}));
    let unknown = server.request("no/such/method", json!({}));
    assert_eq!(
        server.error(early),
        json!({"code": -32600, "message": "Not initialized"})
    );
    assert_eq!(server.error(unknown)["code"], -32600);

    let result = server.initialize();
    let home = server.home.path().display().to_string();
    assert_eq!(result["codexHome"], home.as_str());
    assert_eq!(result["platformFamily"], "unix");
    assert_eq!(result["platformOs"], "linux");
    let agent = result["userAgent"].as_str().unwrap();
    assert!(
        agent.starts_with("deputy/") && agent.ends_with("(deputy-tests; 0)"),
        "{agent}"
    );
    // The same request now goes through.
    server.start_thread();
}

#[test]
fn a_second_initialize_is_an_error() {
    let server = AppServer::start();
    let again = server.request(
        "initialize",
        json!({"clientInfo": {"name": "deputy-tests", "version": "0"}}),
    );
    assert_eq!(
        server.error(again),
        json!({"code": -32600, "message": "Already initialized"})
    );
    server.start_thread();
}

#[test]
fn messages_are_read_with_or_without_the_jsonrpc_field_and_written_without() {
    let server = Setup::default().spawn();
    // Codex's own spelling: no "jsonrpc".
    server.client.send(&json!({
        "id": "init",
        "method": "initialize",
        "params": {"clientInfo": {"name": "bare", "version": "1"}},
    }));
    let response = server
        .client
        .wait_response("init", crate::harness::WAIT)
        .unwrap();
    assert!(response["result"]["userAgent"].is_string(), "{response}");
    server.client.send(&json!({"method": "initialized"}));
    // The test client's spelling: with "jsonrpc": "2.0".
    let id = server.request("model/list", json!({}));
    assert_eq!(server.result(id)["data"][0]["model"], "mock-model");
    server.assert_stdout_is_protocol();
}

#[test]
fn notifications_the_client_opted_out_of_are_not_sent() {
    let server = Setup::default().spawn();
    let id = server.request(
        "initialize",
        json!({
            "clientInfo": {"name": "deputy-tests", "version": "0"},
            "capabilities": {"optOutNotificationMethods": ["thread/started"]},
        }),
    );
    server.result(id);
    let thread = server.start_thread();
    let listed = server.request("thread/list", json!({}));
    assert_eq!(server.result(listed)["data"][0]["id"], thread.as_str());
    assert!(server.notifications("thread/started").is_empty());
}

#[test]
fn model_list_names_the_configured_model_and_each_profile_model() {
    let server = Setup {
        top_level: "[profiles.fast]\nmodel = \"mini-model\"\n[profiles.same]\nmodel = \"mock-model\"",
        ..Setup::default()
    }
    .start();
    let id = server.request("model/list", json!({}));
    let result = server.result(id);
    let summary: Vec<(String, bool)> = result["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["model"].as_str().unwrap().to_string(),
                m["isDefault"] == true,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("mock-model".to_string(), true),
            ("mini-model".to_string(), false)
        ]
    );
    assert_eq!(result["nextCursor"], serde_json::Value::Null);
    let paged = server.request("model/list", json!({"limit": 1}));
    let paged = server.result(paged);
    assert_eq!(paged["data"].as_array().unwrap().len(), 1);
    let rest = server.request("model/list", json!({"cursor": paged["nextCursor"]}));
    assert_eq!(server.result(rest)["data"][0]["model"], "mini-model");
}
