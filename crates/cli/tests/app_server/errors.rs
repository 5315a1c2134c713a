//! Bad input is answered with an error and the server keeps serving.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::harness::{AppServer, WAIT, text_input};

/// A thread id that is a well-formed UUIDv7 nobody created.
const NO_SUCH_THREAD: &str = "01900000-0000-7000-8000-000000000000";

/// The error answering a line that carried no readable id.
fn anonymous_error(server: &AppServer, code: i64) -> Value {
    server
        .client
        .wait_for(|m| m["id"].is_null() && m["error"]["code"] == code, WAIT)
        .unwrap_or_else(|e| panic!("{e}"))["error"]
        .clone()
}

#[test]
fn a_line_that_is_not_json_gets_a_parse_error() {
    let server = AppServer::start();
    server.client.send_raw("{\"id\": 1, \"method\": ");
    let error = anonymous_error(&server, -32700);
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .starts_with("Parse error")
    );
    server.start_thread();
}

#[test]
fn an_unknown_method_is_method_not_found() {
    let server = AppServer::start();
    let id = server.request("thread/teleport", json!({}));
    assert_eq!(
        server.error(id),
        json!({"code": -32601, "message": "method not found: thread/teleport"})
    );
}

#[test]
fn params_of_the_wrong_type_are_invalid_params() {
    let server = AppServer::start();
    let cases = [
        ("thread/start", json!({"cwd": 5})),
        ("thread/start", json!({"approvalPolicy": "sometimes"})),
        (
            "turn/start",
            json!({"threadId": NO_SUCH_THREAD, "input": "hi"}),
        ),
        ("turn/start", json!({"input": [text_input("hi")]})),
        ("thread/list", json!({"limit": "ten"})),
        ("turn/interrupt", json!({"threadId": 7})),
        ("initialize", json!({"clientInfo": {"name": "again"}})),
    ];
    for (method, params) in cases {
        let id = server.request(method, params.clone());
        let error = server.error(id);
        assert_eq!(error["code"], -32602, "{method} {params}: {error}");
        assert!(
            error["message"].as_str().unwrap().contains(method),
            "{error}"
        );
    }
}

#[test]
fn an_unknown_thread_is_an_error_for_every_method_that_names_one() {
    let server = AppServer::start();
    let cases = [
        (
            "turn/start",
            json!({"threadId": NO_SUCH_THREAD, "input": [text_input("hi")]}),
        ),
        ("thread/resume", json!({"threadId": NO_SUCH_THREAD})),
        ("thread/read", json!({"threadId": NO_SUCH_THREAD})),
        ("thread/archive", json!({"threadId": NO_SUCH_THREAD})),
        (
            "turn/interrupt",
            json!({"threadId": NO_SUCH_THREAD, "turnId": "t"}),
        ),
        ("thread/read", json!({"threadId": "../../etc/passwd"})),
        ("thread/compact/start", json!({"threadId": NO_SUCH_THREAD})),
        (
            "review/start",
            json!({"threadId": NO_SUCH_THREAD, "target": {"type": "uncommittedChanges"}}),
        ),
    ];
    for (method, params) in cases {
        let id = server.request(method, params.clone());
        let error = server.error(id);
        assert_eq!(error["code"], -32600, "{method}: {error}");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .starts_with("thread not found: "),
            "{method}: {error}"
        );
    }
    assert!(server.model.requests().is_empty());
}

#[test]
fn input_the_engine_cannot_take_is_refused_before_a_turn_starts() {
    let server = AppServer::start();
    let thread = server.start_thread();
    let cases = [
        json!({"threadId": thread, "input": []}),
        json!({"threadId": thread, "input": [{"type": "video", "url": "https://x/y.mp4"}]}),
        json!({"threadId": thread, "input": [text_input("hi")], "cwd": "no/such/dir"}),
        json!({"threadId": thread, "input": [text_input("hi")], "sandboxPolicy": {"type": "externalSandbox"}}),
    ];
    for params in cases {
        let id = server.request("turn/start", params.clone());
        assert_eq!(server.error(id)["code"], -32602, "{params}");
    }
    assert!(server.notifications("turn/started").is_empty());
    assert!(server.model.requests().is_empty());
}

#[test]
fn an_over_long_line_is_refused_without_being_kept_and_serving_goes_on() {
    let server = AppServer::start();
    let huge = format!(
        "{{\"id\": 99, \"method\": \"turn/start\", \"params\": {{\"pad\": \"{}\"}}}}",
        "x".repeat(9 * 1024 * 1024)
    );
    server.client.send_raw(&huge);
    let error = anonymous_error(&server, -32600);
    assert!(
        error["message"].as_str().unwrap().contains("limit"),
        "{error}"
    );
    assert!(
        server
            .client
            .wait_response(99, std::time::Duration::ZERO)
            .is_err()
    );
    server.start_thread();
}

#[test]
fn a_detached_review_says_it_is_not_available_yet() {
    let server = AppServer::start();
    let thread = server.start_thread();
    let review = server.request(
        "review/start",
        json!({"threadId": thread, "target": {"type": "uncommittedChanges"}, "delivery": "detached"}),
    );
    let error = server.error(review);
    assert_eq!(error["code"], -32000, "{error}");
    assert_eq!(error["data"]["method"], "review/start");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("not available yet"),
        "{error}"
    );
    assert!(server.model.requests().is_empty());
}
