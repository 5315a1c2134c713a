//! Request bodies, headers and URLs as they reach the server.

use deputy_protocol::ContentItem;
use pretty_assertions::assert_eq;

use super::*;

#[tokio::test]
async fn responses_request_carries_model_instructions_history_and_tools() {
    let server = TestServer::start(vec![Reply::Sse(responses_sse(&[completed("r")]))]).await;
    let history = vec![
        ResponseItem::user_text("list files"),
        ResponseItem::Reasoning {
            id: "rs_1".into(),
            summary: vec![],
            content: None,
            encrypted_content: None,
        },
        ResponseItem::Reasoning {
            id: "rs_2".into(),
            summary: vec![],
            content: None,
            encrypted_content: Some("opaque".into()),
        },
        ResponseItem::FunctionCall {
            id: Some("fc_1".into()),
            name: "shell".into(),
            namespace: None,
            arguments: "{}".into(),
            call_id: "call_1".into(),
        },
        ResponseItem::FunctionCallOutput {
            call_id: "call_1".into(),
            output: "a.txt".into(),
        },
        ResponseItem::FunctionCall {
            id: Some("fc_2".into()),
            name: "search".into(),
            namespace: Some("mcp__docs__".into()),
            arguments: r#"{"q":"x"}"#.into(),
            call_id: "call_2".into(),
        },
        ResponseItem::CustomToolCall {
            id: Some("ctc_1".into()),
            name: "apply_patch".into(),
            input: "*** Begin Patch".into(),
            call_id: "call_3".into(),
        },
        ResponseItem::CustomToolCallOutput {
            call_id: "call_3".into(),
            output: "Done.".into(),
        },
        ResponseItem::Other(
            json!({"type": "web_search_call", "id": "ws_1", "status": "completed",
            "action": {"type": "search", "query": "rust"}}),
        ),
        ResponseItem::Message {
            id: Some("msg_1".into()),
            role: "assistant".into(),
            content: vec![ContentItem::OutputText {
                text: "One file.".into(),
            }],
        },
    ];
    run(
        provider(&server.base_url, WireApi::Responses),
        &prompt(history),
    )
    .await
    .ok_events();

    let received = server.received();
    assert_eq!(received[0].target, "/v1/responses");
    assert_eq!(received[0].headers["accept"], "text/event-stream");
    assert_eq!(received[0].headers["content-type"], "application/json");
    assert_eq!(
        received[0].body,
        json!({
            "model": "test-model",
            "instructions": "Be brief.",
            "input": [
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "list files"}]},
                {"type": "reasoning", "summary": [], "encrypted_content": "opaque"},
                {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "call_1"},
                {"type": "function_call_output", "call_id": "call_1", "output": "a.txt"},
                {"type": "function_call", "name": "search", "namespace": "mcp__docs__",
                    "arguments": "{\"q\":\"x\"}", "call_id": "call_2"},
                {"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch", "call_id": "call_3"},
                {"type": "custom_tool_call_output", "call_id": "call_3", "output": "Done."},
                {"type": "web_search_call", "status": "completed", "action": {"type": "search", "query": "rust"}},
                {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "One file."}]},
            ],
            "tools": [{"type": "function", "name": "shell", "description": "Runs a command.", "strict": false,
                "parameters": {"type": "object", "properties": {"command": {"type": "array"}}}}],
            "tool_choice": "auto",
            "parallel_tool_calls": false,
            "store": false,
            "stream": true,
        })
    );
}

#[tokio::test]
async fn chat_request_turns_history_into_messages_with_merged_tool_calls() {
    let server = TestServer::start(vec![Reply::Sse(chat_sse(&[]))]).await;
    let call = |id: &str| ResponseItem::FunctionCall {
        id: Some(format!("fc_{id}")),
        name: "shell".into(),
        namespace: None,
        arguments: format!("{{\"n\":\"{id}\"}}"),
        call_id: id.into(),
    };
    let output = |id: &str| ResponseItem::FunctionCallOutput {
        call_id: id.into(),
        output: format!("out {id}").into(),
    };
    let history = vec![
        ResponseItem::developer_text("sandbox: read-only"),
        ResponseItem::user_text("look around"),
        ResponseItem::Reasoning {
            id: "rs".into(),
            summary: vec![],
            content: None,
            encrypted_content: Some("x".into()),
        },
        ResponseItem::assistant_text("Checking."),
        call("a"),
        call("b"),
        output("a"),
        output("b"),
        call("c"),
        output("c"),
        ResponseItem::assistant_text("Done."),
    ];
    run(provider(&server.base_url, WireApi::Chat), &prompt(history))
        .await
        .ok_events();

    let tool_call = |id: &str| json!({"id": id, "type": "function", "function": {"name": "shell", "arguments": format!("{{\"n\":\"{id}\"}}")}});
    let received = server.received();
    assert_eq!(received[0].target, "/v1/chat/completions");
    assert_eq!(
        received[0].body,
        json!({
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "system", "content": "sandbox: read-only"},
                {"role": "user", "content": "look around"},
                {"role": "assistant", "content": "Checking.", "tool_calls": [tool_call("a"), tool_call("b")]},
                {"role": "tool", "tool_call_id": "a", "content": "out a"},
                {"role": "tool", "tool_call_id": "b", "content": "out b"},
                {"role": "assistant", "content": null, "tool_calls": [tool_call("c")]},
                {"role": "tool", "tool_call_id": "c", "content": "out c"},
                {"role": "assistant", "content": "Done."},
            ],
            "tools": [{"type": "function", "function": {"name": "shell", "description": "Runs a command.",
                "parameters": {"type": "object", "properties": {"command": {"type": "array"}}}}}],
            "tool_choice": "auto",
            "stream": true,
            "stream_options": {"include_usage": true},
        })
    );
}

#[tokio::test]
async fn chat_request_without_tools_leaves_out_tools_and_tool_choice() {
    let server = TestServer::start(vec![Reply::Sse(chat_sse(&[]))]).await;
    let bare = Prompt {
        instructions: Arc::default(),
        input: vec![ResponseItem::user_text("hi")],
        ..Prompt::default()
    };
    run(provider(&server.base_url, WireApi::Chat), &bare)
        .await
        .ok_events();

    assert_eq!(
        server.received()[0].body,
        json!({"model": "test-model", "messages": [{"role": "user", "content": "hi"}],
            "stream": true, "stream_options": {"include_usage": true}})
    );
}

#[tokio::test]
async fn an_output_schema_is_a_strict_json_schema_format_on_both_wires() {
    let schema = json!({"type": "object", "properties": {"ok": {"type": "boolean"}}});
    let with_schema = Prompt {
        output_schema: Some(schema.clone()),
        ..prompt(vec![ResponseItem::user_text("decide")])
    };
    let responses = TestServer::start(vec![Reply::Sse(responses_sse(&[completed("r")]))]).await;
    run(
        provider(&responses.base_url, WireApi::Responses),
        &with_schema,
    )
    .await
    .ok_events();
    assert_eq!(
        responses.received()[0].body["text"],
        json!({"format": {"type": "json_schema", "name": "codex_output_schema",
            "schema": schema, "strict": true}})
    );

    let chat = TestServer::start(vec![Reply::Sse(chat_sse(&[]))]).await;
    run(provider(&chat.base_url, WireApi::Chat), &with_schema)
        .await
        .ok_events();
    assert_eq!(
        chat.received()[0].body["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "codex_output_schema",
            "schema": schema, "strict": true}})
    );
}

#[tokio::test]
async fn bearer_key_headers_and_query_params_are_on_the_wire() {
    let server = TestServer::start(vec![Reply::Sse(responses_sse(&[completed("r")]))]).await;
    let mut provider = provider(&format!("{}/", server.base_url), WireApi::Responses);
    // PATH is always set, so the test needs no process-wide environment change.
    provider.env_key = Some("PATH".into());
    provider.http_headers.insert("X-Extra".into(), "1".into());
    provider
        .query_params
        .insert("api-version".into(), "2025-01-01".into());
    run(provider, &prompt(vec![])).await.ok_events();

    let received = server.received();
    assert_eq!(received[0].target, "/v1/responses?api-version=2025-01-01");
    assert_eq!(received[0].headers["x-extra"], "1");
    let path = std::env::var("PATH").unwrap();
    assert_eq!(
        received[0].headers["authorization"],
        format!("Bearer {}", path.trim())
    );
}

#[tokio::test]
async fn missing_api_key_is_a_config_error_before_any_request() {
    let server = TestServer::start(vec![]).await;
    let mut provider = provider(&server.base_url, WireApi::Responses);
    provider.env_key = Some("DEPUTY_CLIENT_TEST_KEY_THAT_IS_NEVER_SET".into());
    let error = run(provider, &prompt(vec![])).await.error();

    assert!(
        matches!(&error, ModelError::Config(m) if m.contains("DEPUTY_CLIENT_TEST_KEY_THAT_IS_NEVER_SET")),
        "{error:?}"
    );
    assert_eq!(server.received().len(), 0);
}

#[test]
fn unusable_base_url_is_a_config_error() {
    for base_url in ["not a url", "ftp://example.com/v1"] {
        let result = ModelClient::new(provider(base_url, WireApi::Responses), "m".into());
        assert!(matches!(result, Err(ModelError::Config(_))), "{base_url}");
    }
}

#[test]
fn requests_and_streams_can_move_between_tasks() {
    fn send<T: Send>(_: &T) {}
    fn send_unpin_static<T: Send + Unpin + 'static>() {}
    let client =
        ModelClient::new(provider("http://127.0.0.1:9/v1", WireApi::Chat), "m".into()).unwrap();
    let prompt = Prompt::default();
    send(&client.stream(&prompt, &|_| {}));
    send_unpin_static::<ResponseStream>();
}

/// A user message with text and an image, as a turn with `--image` records it.
fn text_and_image() -> ResponseItem {
    ResponseItem::Message {
        id: None,
        role: "user".into(),
        content: vec![
            ContentItem::InputImage {
                image_url: "data:image/png;base64,iVBORw0KGgo=".into(),
            },
            ContentItem::InputText {
                text: "what is this?".into(),
            },
        ],
    }
}

/// The schema a structured-output turn sends.
fn answer_schema() -> serde_json::Value {
    json!({"type": "object", "properties": {"answer": {"type": "string"}},
        "required": ["answer"], "additionalProperties": false})
}

#[tokio::test]
async fn responses_request_carries_images_the_answer_schema_reasoning_caching_and_verbosity() {
    let server = TestServer::start(vec![Reply::Sse(responses_sse(&[completed("r")]))]).await;
    let structured = Prompt {
        input: vec![text_and_image()],
        output_schema: Some(answer_schema()),
        reasoning_effort: Some("high".into()),
        reasoning_summary: Some("auto".into()),
        include_encrypted_reasoning: true,
        prompt_cache_key: Some("thread-1".into()),
        verbosity: Some("low".into()),
        ..Prompt::default()
    };
    run(provider(&server.base_url, WireApi::Responses), &structured)
        .await
        .ok_events();

    let body = &server.received()[0].body;
    assert_eq!(
        body["input"],
        json!([{"type": "message", "role": "user", "content": [
            {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
            {"type": "input_text", "text": "what is this?"},
        ]}])
    );
    assert_eq!(
        body["text"],
        json!({"format": {"type": "json_schema", "name": "codex_output_schema",
            "schema": answer_schema(), "strict": true}, "verbosity": "low"})
    );
    assert_eq!(
        body["reasoning"],
        json!({"effort": "high", "summary": "auto"})
    );
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(body["prompt_cache_key"], "thread-1");
    assert_eq!(body["store"], false);
}

#[tokio::test]
async fn chat_request_carries_image_parts_the_response_format_and_the_reasoning_effort() {
    let server = TestServer::start(vec![Reply::Sse(chat_sse(&[]))]).await;
    let structured = Prompt {
        input: vec![text_and_image()],
        output_schema: Some(answer_schema()),
        reasoning_effort: Some("low".into()),
        ..Prompt::default()
    };
    run(provider(&server.base_url, WireApi::Chat), &structured)
        .await
        .ok_events();

    let body = &server.received()[0].body;
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            {"type": "text", "text": "what is this?"},
        ]}])
    );
    assert_eq!(
        body["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "codex_output_schema",
            "schema": answer_schema(), "strict": true}})
    );
    assert_eq!(body["reasoning_effort"], "low");
}

#[tokio::test]
async fn images_a_tool_returned_go_as_output_parts_on_responses_and_after_the_tool_messages_on_chat()
 {
    use deputy_protocol::{FunctionOutput, OutputContentItem};
    let call = |id: &str| ResponseItem::FunctionCall {
        id: None,
        name: "view".into(),
        namespace: None,
        arguments: "{}".into(),
        call_id: id.into(),
    };
    let history = vec![
        ResponseItem::user_text("look"),
        call("a"),
        call("b"),
        ResponseItem::FunctionCallOutput {
            call_id: "a".into(),
            output: FunctionOutput::Content(vec![
                OutputContentItem::InputText {
                    text: "a chart".into(),
                },
                OutputContentItem::InputImage {
                    image_url: "data:image/png;base64,iVBORw0KGgo=".into(),
                },
            ]),
        },
        ResponseItem::FunctionCallOutput {
            call_id: "b".into(),
            output: "no image".into(),
        },
        ResponseItem::assistant_text("Seen."),
    ];

    let responses = TestServer::start(vec![Reply::Sse(responses_sse(&[completed("r")]))]).await;
    run(
        provider(&responses.base_url, WireApi::Responses),
        &prompt(history.clone()),
    )
    .await
    .ok_events();
    assert_eq!(
        responses.received()[0].body["input"][3],
        json!({"type": "function_call_output", "call_id": "a", "output": [
            {"type": "input_text", "text": "a chart"},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
        ]})
    );

    let chat = TestServer::start(vec![Reply::Sse(chat_sse(&[]))]).await;
    run(provider(&chat.base_url, WireApi::Chat), &prompt(history))
        .await
        .ok_events();
    let messages = chat.received()[0].body["messages"].clone();
    assert_eq!(
        messages.as_array().unwrap()[3..],
        [
            json!({"role": "tool", "tool_call_id": "a", "content": "a chart"}),
            json!({"role": "tool", "tool_call_id": "b", "content": "no image"}),
            json!({"role": "user", "content": [
                {"type": "text", "text": "The images the tool calls above returned:"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            ]}),
            json!({"role": "assistant", "content": "Seen."}),
        ]
    );
}
