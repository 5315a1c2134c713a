//! Bad input: each gets a JSON-RPC error and the agent keeps serving.

use std::time::Duration;

use deputy_test_support::{MockModelServer, MockResponse, TestHome};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::harness::{Agent, agent_text, ok_step, run_plan};

fn prompt_request(blocks: serde_json::Value) -> serde_json::Value {
    json!({"op": "request", "method": "session/prompt", "params": {"sessionId": "$session", "prompt": blocks}})
}

#[test]
fn bad_requests_get_json_rpc_errors_and_the_agent_keeps_serving() {
    let model = MockModelServer::start();
    model.push_all([
        // Slow enough that the second prompt arrives while the first runs.
        MockResponse::text_turn("first").delay_before(Duration::from_millis(500)),
        MockResponse::text_turn("still serving"),
    ]);
    let home = TestHome::new(&model.base_url());
    let seen = run_plan(
        &home,
        Agent::Deputy,
        json!([]),
        json!([
            {"op": "initialize"},
            {"op": "new"},
            {"op": "request", "method": "bogus/method", "params": {}},
            {"op": "request", "method": "session/prompt", "params": {"sessionId": "no-such-session", "prompt": [{"type": "text", "text": "hi"}]}},
            prompt_request(json!([{"type": "bogus"}])),
            prompt_request(json!([{"type": "text"}])),
            prompt_request(json!([{"type": "image", "data": "", "mimeType": "image/png"}])),
            prompt_request(json!([{"type": "text", "text": "   "}])),
            {"op": "promptTwice", "text": "go"},
            {"op": "prompt", "text": "again"},
        ]),
    );

    let code = |step: usize| seen["steps"][step]["error"]["code"].clone();
    assert_eq!(code(2), -32601, "unknown method: {seen:#}");
    assert_eq!(code(3), -32002, "unknown session");
    assert_eq!(code(4), -32602, "unknown content block type");
    assert_eq!(code(5), -32602, "text block without text");
    // Refused by the agent's reading of the params, not by the client.
    for step in [4, 5] {
        assert_eq!(
            seen["steps"][step]["error"]["data"]["phase"], "deserialization",
            "{seen:#}"
        );
    }
    assert_eq!(code(6), -32602, "an image with neither data nor a uri");
    let image = seen["steps"][6]["error"]["message"].as_str().unwrap();
    assert!(image.contains("image"), "{image}");
    assert_eq!(code(7), -32602, "an empty prompt");
    let twice = &ok_step(&seen, 8)["result"];
    assert_eq!(
        twice["first"]["result"]["stopReason"], "end_turn",
        "{twice:#}"
    );
    assert_eq!(twice["second"]["error"]["code"], -32600, "{twice:#}");
    assert!(
        twice["second"]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("already running a prompt"),
        "{twice:#}"
    );
    let again = ok_step(&seen, 9);
    assert_eq!(agent_text(again), "still serving");
    assert_eq!(
        model.request_count(),
        2,
        "only the two good prompts reached the model"
    );
}
