//! What the two wire formats decode to, including errors the server reports in-stream.

use deputy_protocol::{ContentItem, TokenUsage};
use pretty_assertions::assert_eq;

use super::*;

#[tokio::test]
async fn responses_stream_yields_deltas_finished_items_and_usage() {
    let body = responses_sse(&[
        json!({"type": "response.created", "response": {"id": "resp_1"}}),
        json!({"type": "response.in_progress", "response": {"id": "resp_1"}}),
        json!({"type": "response.reasoning_summary_text.delta", "delta": "Plan"}),
        json!({"type": "response.reasoning_text.delta", "delta": "ning"}),
        json!({"type": "response.output_text.delta", "delta": "Hel"}),
        json!({"type": "response.output_text.delta", "delta": "lo"}),
        json!({"type": "response.output_item.done", "item": {"type": "message", "role": "assistant",
            "id": "msg_1", "status": "completed", "content": [{"type": "output_text", "text": "Hello"}]}}),
        json!({"type": "response.output_item.done", "item": {"type": "web_search_call", "id": "ws_1"}}),
        json!({"type": "response.output_item.done", "item": {"type": "function_call", "id": "fc_1",
            "call_id": "call_1", "name": "shell", "arguments": "{\"command\":[\"ls\"]}"}}),
        completed("resp_1"),
    ]);
    let server = TestServer::start(vec![Reply::Sse(body)]).await;
    let events = run(
        provider(&server.base_url, WireApi::Responses),
        &prompt(vec![]),
    )
    .await;

    assert_eq!(
        events.ok_events(),
        vec![
            ResponseEvent::Created,
            ResponseEvent::ReasoningDelta("Plan".into()),
            ResponseEvent::ReasoningDelta("ning".into()),
            ResponseEvent::OutputTextDelta("Hel".into()),
            ResponseEvent::OutputTextDelta("lo".into()),
            ResponseEvent::OutputItemDone(ResponseItem::Message {
                id: Some("msg_1".into()),
                role: "assistant".into(),
                content: vec![ContentItem::OutputText {
                    text: "Hello".into()
                }],
            }),
            ResponseEvent::OutputItemDone(ResponseItem::Other(
                json!({"type": "web_search_call", "id": "ws_1"})
            )),
            ResponseEvent::OutputItemDone(ResponseItem::FunctionCall {
                id: Some("fc_1".into()),
                name: "shell".into(),
                namespace: None,
                arguments: "{\"command\":[\"ls\"]}".into(),
                call_id: "call_1".into(),
            }),
            ResponseEvent::Completed {
                response_id: "resp_1".into(),
                token_usage: Some(TokenUsage {
                    input_tokens: 12,
                    cached_input_tokens: 4,
                    output_tokens: 7,
                    reasoning_output_tokens: 2,
                    total_tokens: 19,
                }),
            },
        ]
    );
}

#[tokio::test]
async fn chat_stream_assembles_text_reasoning_and_parallel_tool_calls_by_index() {
    let delta = |d: Value| json!({"id": "chatcmpl-1", "choices": [{"index": 0, "delta": d}]});
    let body = chat_sse(&[
        delta(json!({"role": "assistant", "content": ""})),
        delta(json!({"reasoning_content": "Think"})),
        delta(json!({"reasoning": "ing"})),
        delta(json!({"content": "Let me "})),
        delta(json!({"content": "look."})),
        delta(
            json!({"tool_calls": [{"index": 0, "id": "call_a", "type": "function",
            "function": {"name": "shell", "arguments": "{\"comm"}}]}),
        ),
        delta(
            json!({"tool_calls": [{"index": 1, "id": "call_b", "type": "function",
            "function": {"name": "update_plan", "arguments": ""}}]}),
        ),
        delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "and\":[\"ls\"]}"}}]})),
        delta(json!({"tool_calls": [{"index": 1, "function": {"arguments": "{\"plan\":[]}"}}]})),
        json!({"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        json!({"id": "chatcmpl-1", "choices": [], "usage": {"prompt_tokens": 30, "completion_tokens": 9,
            "total_tokens": 39, "prompt_tokens_details": {"cached_tokens": 10}}}),
    ]);
    let server = TestServer::start(vec![Reply::Sse(body)]).await;
    let events = run(provider(&server.base_url, WireApi::Chat), &prompt(vec![])).await;

    let call = |call_id: &str, name: &str, arguments: &str| {
        ResponseEvent::OutputItemDone(ResponseItem::FunctionCall {
            id: None,
            name: name.into(),
            namespace: None,
            arguments: arguments.into(),
            call_id: call_id.into(),
        })
    };
    assert_eq!(
        events.ok_events(),
        vec![
            ResponseEvent::ReasoningDelta("Think".into()),
            ResponseEvent::ReasoningDelta("ing".into()),
            ResponseEvent::OutputTextDelta("Let me ".into()),
            ResponseEvent::OutputTextDelta("look.".into()),
            ResponseEvent::OutputItemDone(ResponseItem::assistant_text("Let me look.")),
            call("call_a", "shell", "{\"command\":[\"ls\"]}"),
            call("call_b", "update_plan", "{\"plan\":[]}"),
            ResponseEvent::Completed {
                response_id: "chatcmpl-1".into(),
                token_usage: Some(TokenUsage {
                    input_tokens: 30,
                    cached_input_tokens: 10,
                    output_tokens: 9,
                    reasoning_output_tokens: 0,
                    total_tokens: 39,
                }),
            },
        ]
    );
}

#[tokio::test]
async fn chat_body_ending_after_finish_reason_completes_and_unnamed_calls_get_ids() {
    let body = "data: {\"id\":\"c\",\"choices\":[{\"delta\":{\"tool_calls\":[{\"function\":\
                {\"name\":\"shell\",\"arguments\":\"{}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n";
    let server = TestServer::start(vec![Reply::Sse(body.into())]).await;
    let events = run(provider(&server.base_url, WireApi::Chat), &prompt(vec![])).await;

    assert_eq!(
        events.ok_events(),
        vec![
            ResponseEvent::OutputItemDone(ResponseItem::FunctionCall {
                id: None,
                name: "shell".into(),
                namespace: None,
                arguments: "{}".into(),
                call_id: "call_0".into(),
            }),
            ResponseEvent::Completed {
                response_id: "c".into(),
                token_usage: None
            },
        ]
    );
}

#[tokio::test]
async fn response_failed_yields_failed_with_the_message_verbatim() {
    let text = responses_sse(&[
        json!({"type": "response.created", "response": {"id": "r"}}),
        json!({"type": "response.failed", "response": {"id": "r", "error": {"code": "server_error",
            "message": "The model produced invalid content."}}}),
    ]);
    let server = TestServer::start(vec![Reply::Sse(text)]).await;
    let events = run(
        provider(&server.base_url, WireApi::Responses),
        &prompt(vec![]),
    )
    .await
    .events();

    assert_eq!(events.len(), 2, "{events:?}");
    assert!(
        matches!(&events[1], Err(ModelError::Failed(m)) if m == "The model produced invalid content."),
        "{:?}",
        events[1]
    );
}

#[tokio::test]
async fn chat_error_object_in_the_stream_yields_failed() {
    let text = "data: {\"error\":{\"message\":\"model overloaded\"}}\n\n".to_owned();
    let server = TestServer::start(vec![Reply::Sse(text)]).await;
    let events = run(provider(&server.base_url, WireApi::Chat), &prompt(vec![]))
        .await
        .events();

    assert!(
        matches!(events.as_slice(), [Err(ModelError::Failed(m))] if m == "model overloaded"),
        "{events:?}"
    );
}

#[tokio::test]
async fn malformed_json_is_a_stream_error_naming_the_event() {
    let text = "event: response.output_text.delta\ndata: {\"delta\": \n\n".to_owned();
    let server = TestServer::start(vec![Reply::Sse(text)]).await;
    let events = run(
        provider(&server.base_url, WireApi::Responses),
        &prompt(vec![]),
    )
    .await
    .events();

    assert!(
        matches!(events.as_slice(), [Err(ModelError::Stream(m))] if m.contains("`response.output_text.delta`")),
        "{events:?}"
    );
}

#[tokio::test]
async fn chat_usage_takes_cached_tokens_under_either_name() {
    let body = chat_sse(&[
        json!({"id": "c", "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]}),
        json!({"id": "c", "choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 5,
            "total_tokens": 55, "prompt_cache_hit_tokens": 32, "prompt_cache_miss_tokens": 18,
            "completion_tokens_details": {"reasoning_tokens": 3}}}),
    ]);
    let server = TestServer::start(vec![Reply::Sse(body)]).await;
    let events = run(provider(&server.base_url, WireApi::Chat), &prompt(vec![])).await;

    assert_eq!(
        events.ok_events().last(),
        Some(&ResponseEvent::Completed {
            response_id: "c".into(),
            token_usage: Some(TokenUsage {
                input_tokens: 50,
                cached_input_tokens: 32,
                output_tokens: 5,
                reasoning_output_tokens: 3,
                total_tokens: 55,
            }),
        })
    );
}
