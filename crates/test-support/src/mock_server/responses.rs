//! Events of OpenAI's Responses API stream (`POST /v1/responses`), one function per event.

use serde_json::json;

use super::response::SseEvent;

/// `response.created {response:{id}}`: the stream has started.
pub fn created(id: impl Into<String>) -> SseEvent {
    SseEvent::new("response.created", json!({"response": {"id": id.into()}}))
}

/// `response.output_text.delta {delta}`: a piece of the assistant's visible text.
pub fn text_delta(text: impl Into<String>) -> SseEvent {
    SseEvent::new("response.output_text.delta", json!({"delta": text.into()}))
}

/// `response.reasoning_summary_text.delta {delta}`: a piece of the reasoning summary.
pub fn reasoning_delta(text: impl Into<String>) -> SseEvent {
    SseEvent::new(
        "response.reasoning_summary_text.delta",
        json!({"delta": text.into()}),
    )
}

/// `response.output_item.done` carrying a finished assistant message.
pub fn message(id: impl Into<String>, text: impl Into<String>) -> SseEvent {
    SseEvent::new(
        "response.output_item.done",
        json!({"item": {
            "type": "message",
            "role": "assistant",
            "id": id.into(),
            "content": [{"type": "output_text", "text": text.into()}],
        }}),
    )
}

/// `response.output_item.done` carrying a function call; `arguments` is the raw JSON string.
pub fn function_call(
    call_id: impl Into<String>,
    name: impl Into<String>,
    arguments: impl Into<String>,
) -> SseEvent {
    SseEvent::new(
        "response.output_item.done",
        json!({"item": {
            "type": "function_call",
            "call_id": call_id.into(),
            "name": name.into(),
            "arguments": arguments.into(),
        }}),
    )
}

/// `response.completed` with all token counts zero.
pub fn completed(id: impl Into<String>) -> SseEvent {
    completed_with_usage(id, 0, 0, 0)
}

/// `response.completed` with the given token usage (cached and reasoning tokens zero).
pub fn completed_with_usage(
    id: impl Into<String>,
    input: u64,
    output: u64,
    total: u64,
) -> SseEvent {
    SseEvent::new(
        "response.completed",
        json!({"response": {
            "id": id.into(),
            "usage": {
                "input_tokens": input,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": output,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": total,
            },
        }}),
    )
}

/// `response.failed` with a `server_error` carrying `message`.
pub fn failed(id: impl Into<String>, message: impl Into<String>) -> SseEvent {
    SseEvent::new(
        "response.failed",
        json!({"response": {
            "id": id.into(),
            "error": {"code": "server_error", "message": message.into()},
        }}),
    )
}
