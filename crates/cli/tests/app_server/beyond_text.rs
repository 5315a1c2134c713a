//! Input and output beyond text: `localImage {path}` and `image {url}` reach the model as
//! image parts of the user's message; a hosted web search is a `webSearch` item.

use deputy_test_support::MockResponse;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::harness::{AppServer, id_of, text_input};

/// A 1×1 PNG.
const PNG: &[u8] =
    b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";
const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ";
const GIF_URL: &str = "data:image/gif;base64,R0lGODlhAQABAAAAACw=";

#[test]
fn a_local_image_and_an_image_url_reach_the_model_with_the_text() {
    let server = AppServer::start();
    std::fs::write(server.home.workspace().join("shot.png"), PNG).unwrap();
    let thread = server.start_thread();
    server.model.push(MockResponse::text_turn("Two pictures."));
    let request = server.request(
        "turn/start",
        json!({"threadId": thread, "input": [
            text_input("compare these"),
            {"type": "localImage", "path": "shot.png"},
            {"type": "image", "url": GIF_URL},
        ]}),
    );
    let turn = id_of(&server.result(request)["turn"]);
    assert_eq!(server.turn_completed(&turn)["turn"]["status"], "completed");
    let input = server.model.requests()[0].body["input"].clone();
    assert_eq!(
        input.as_array().unwrap().last().unwrap(),
        &json!({"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "compare these"},
            {"type": "input_image", "image_url": format!("data:image/png;base64,{PNG_BASE64}")},
            {"type": "input_image", "image_url": GIF_URL},
        ]})
    );
}

#[test]
fn an_image_that_cannot_be_read_fails_the_turn_with_its_reason() {
    let server = AppServer::start();
    std::fs::write(server.home.workspace().join("notes.png"), "not a picture").unwrap();
    let thread = server.start_thread();
    let request = server.request(
        "turn/start",
        json!({"threadId": thread, "input": [{"type": "localImage", "path": "notes.png"}]}),
    );
    let turn = id_of(&server.result(request)["turn"]);
    let completed = server.turn_completed(&turn);
    assert_eq!(completed["turn"]["status"], "failed");
    let said = completed["turn"]["error"]["message"].as_str().unwrap();
    assert!(said.contains("notes.png") && said.contains("not"), "{said}");
    assert!(server.model.requests().is_empty());
}

#[test]
fn a_hosted_web_search_is_a_web_search_item() {
    let server = crate::harness::Setup {
        top_level: "web_search = \"live\"\n",
        ..crate::harness::Setup::default()
    }
    .start();
    let thread = server.start_thread();
    server.model.push(MockResponse::sse(vec![
        deputy_test_support::responses::created("r1"),
        deputy_test_support::SseEvent::new(
            "response.output_item.done",
            json!({"item": {"type": "web_search_call", "id": "ws_7", "status": "completed",
                "action": {"type": "search", "query": "tokio 2 release"}}}),
        ),
        deputy_test_support::responses::message("m1", "Not yet."),
        deputy_test_support::responses::completed("r1"),
    ]));
    let request = server.request(
        "turn/start",
        json!({"threadId": thread, "input": [text_input("is tokio 2 out?")]}),
    );
    let turn = id_of(&server.result(request)["turn"]);
    assert_eq!(server.turn_completed(&turn)["turn"]["status"], "completed");
    let search = json!({"type": "webSearch", "id": "ws_7", "query": "tokio 2 release",
        "action": {"type": "search", "query": "tokio 2 release"}});
    for method in ["item/started", "item/completed"] {
        let items: Vec<Value> = server
            .notifications(method)
            .into_iter()
            .map(|params| params["item"].clone())
            .filter(|item| item["type"] == "webSearch")
            .collect();
        assert_eq!(items, std::slice::from_ref(&search), "{method}");
    }
}
