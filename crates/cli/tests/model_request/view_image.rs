//! `view_image`: a picture the model asks for reaches it as an image part of the tool's
//! output (Responses) or of a user message after the tool output (Chat); what is not a
//! readable image within 10 MiB is a tool error text and the turn goes on.

use deputy_test_support::{MockModelServer, MockResponse, RecordedRequest, TestHome, chat};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::exec;
use super::requests;

/// A 1×1 PNG.
const PNG: &[u8] =
    b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";
const PNG_URL: &str = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ";

/// The output deputy sent back for call `call_id`.
fn output_of(request: &RecordedRequest, call_id: &str) -> Value {
    request.body["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "function_call_output" && item["call_id"] == call_id)
        .unwrap_or_else(|| panic!("no output for {call_id}"))["output"]
        .clone()
}

#[test]
fn a_png_reaches_the_model_and_what_cannot_be_shown_is_a_tool_error() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    let workspace = home.workspace();
    std::fs::write(workspace.join("dot.png"), PNG).unwrap();
    std::fs::write(workspace.join("notes.png"), "a text file").unwrap();
    // One byte over the limit, with a PNG's signature.
    let mut huge = PNG.to_vec();
    huge.resize(10 * 1024 * 1024 + 1, 0);
    std::fs::write(workspace.join("huge.png"), huge).unwrap();
    server.push_all([
        MockResponse::function_call_turn("c1", "view_image", json!({"path": "dot.png"})),
        MockResponse::function_call_turn("c2", "view_image", json!({"path": "notes.png"})),
        MockResponse::function_call_turn("c3", "view_image", json!({"path": "huge.png"})),
        MockResponse::function_call_turn("c4", "view_image", json!({"path": "missing.png"})),
        MockResponse::text_turn("A dot."),
    ]);
    let run = exec(&home, &["-m", "gpt-5-codex", "what is in dot.png?"]);
    run.assert_code(0);
    assert_eq!(run.stdout.trim(), "A dot.");

    let requests = requests(&server, 5);
    let offered: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    assert!(offered.contains(&"view_image"), "{offered:?}");
    let shown = output_of(&requests[1], "c1");
    let parts = shown.as_array().unwrap();
    assert_eq!(
        parts.last().unwrap(),
        &json!({"type": "input_image", "image_url": PNG_URL})
    );
    for (n, call, why) in [
        (2, "c2", "is not a PNG, JPEG, GIF or WebP image"),
        (3, "c3", "larger than the 10 MiB"),
        (4, "c4", "does not exist"),
    ] {
        let told = output_of(&requests[n], call);
        let told = told.as_str().unwrap_or_else(|| panic!("{told}"));
        assert!(
            told.starts_with("view_image failed: ") && told.contains(why),
            "{told}"
        );
    }
}

#[test]
fn on_chat_the_image_follows_the_tool_message_as_an_image_url() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    home.write_config(
        &TestHome::default_config(&server.base_url())
            .replace("wire_api = \"responses\"", "wire_api = \"chat\""),
    );
    std::fs::write(home.workspace().join("dot.png"), PNG).unwrap();
    server.push_all([
        MockResponse::chat(vec![
            chat::tool_call_start(0, "c1", "view_image"),
            chat::tool_call_args(0, r#"{"path":"dot.png"}"#),
            chat::finish("tool_calls"),
        ]),
        MockResponse::chat_text_turn("A dot."),
    ]);
    exec(&home, &["-m", "gpt-4o", "look at dot.png"]).assert_code(0);
    let second = &requests(&server, 2)[1].body;
    let images: Vec<&Value> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|message| message["content"].as_array())
        .flatten()
        .filter(|part| part["type"] == "image_url")
        .collect();
    assert_eq!(
        images,
        [&json!({"type": "image_url", "image_url": {"url": PNG_URL}})]
    );
}
