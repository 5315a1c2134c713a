//! The hosted web search: offered when enabled on a Responses provider, and the model's
//! `web_search_call` items reported as `web_search_begin` / `web_search_end` events and
//! `codex exec --json` `web_search` items, then sent back with the history.

use deputy_test_support::{MockModelServer, MockResponse, SseEvent, TestHome, responses};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::exec;
use super::{json_lines, requests};

/// A turn in which the provider searched the web, then answered.
fn searched_then_answered() -> MockResponse {
    MockResponse::sse(vec![
        responses::created("r1"),
        SseEvent::new(
            "response.output_item.done",
            json!({"item": {"type": "web_search_call", "id": "ws_42", "status": "completed",
                "action": {"type": "search", "query": "landlock abi 6"}}}),
        ),
        responses::message("m1", "ABI 6 added signal scoping."),
        responses::completed("r1"),
    ])
}

#[test]
fn a_web_search_call_becomes_begin_and_end_events_and_a_jsonl_item() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    server.push_all([searched_then_answered(), searched_then_answered()]);
    let args = [
        "-m",
        "gpt-5-codex",
        "-c",
        "web_search=\"live\"",
        "what is new?",
    ];

    let events = exec(&home, &[&["--json-events"], &args[..]].concat());
    events.assert_code(0);
    let searches: Vec<Value> = json_lines(&events.stdout)
        .into_iter()
        .filter(|event| {
            event["type"]
                .as_str()
                .is_some_and(|t| t.starts_with("web_search"))
        })
        .collect();
    assert_eq!(
        searches,
        [
            json!({"type": "web_search_begin", "call_id": "ws_42"}),
            json!({"type": "web_search_end", "call_id": "ws_42", "query": "landlock abi 6"}),
        ]
    );

    let jsonl = exec(&home, &[&["--json"], &args[..]].concat());
    jsonl.assert_code(0);
    let items: Vec<(String, Value)> = json_lines(&jsonl.stdout)
        .into_iter()
        .filter(|event| event["item"]["type"] == "web_search")
        .map(|event| {
            (
                event["type"].as_str().unwrap().to_string(),
                event["item"].clone(),
            )
        })
        .collect();
    assert_eq!(items.len(), 2, "{}", jsonl.stdout);
    assert_eq!(items[0].0, "item.started");
    assert_eq!(items[1].0, "item.completed");
    assert_eq!(items[1].1["query"], "landlock abi 6");
    assert_eq!(items[0].1["id"], items[1].1["id"]);

    let first = &requests(&server, 2)[0].body;
    assert!(
        first["tools"]
            .as_array()
            .unwrap()
            .contains(&json!({"type": "web_search", "external_web_access": true})),
        "{}",
        first["tools"]
    );
}
