//! Chunks of OpenAI's Chat Completions stream (`POST /v1/chat/completions`).
//!
//! Tool calls are assembled by `index` the way OpenAI streams them: the first chunk of a
//! call carries its id, type and function name with empty arguments, later chunks carry
//! argument fragments only.

use serde_json::{Value, json};

/// The `id` every scripted chunk carries.
const CHUNK_ID: &str = "chatcmpl-1";

/// A `chat.completion.chunk` with one choice holding `delta` and `finish_reason`.
fn chunk(delta: Value, finish_reason: Value) -> Value {
    json!({
        "id": CHUNK_ID,
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    })
}

/// A chunk whose delta adds `text` to the assistant's content.
pub fn content(text: impl Into<String>) -> Value {
    chunk(json!({"content": text.into()}), Value::Null)
}

/// The first chunk of tool call number `index`: its id, type, name and empty arguments.
pub fn tool_call_start(index: u32, id: impl Into<String>, name: impl Into<String>) -> Value {
    chunk(
        json!({"tool_calls": [{
            "index": index,
            "id": id.into(),
            "type": "function",
            "function": {"name": name.into(), "arguments": ""},
        }]}),
        Value::Null,
    )
}

/// A later chunk of tool call number `index` carrying one fragment of its arguments.
pub fn tool_call_args(index: u32, fragment: impl Into<String>) -> Value {
    chunk(
        json!({"tool_calls": [{"index": index, "function": {"arguments": fragment.into()}}]}),
        Value::Null,
    )
}

/// The chunk ending the choice with `reason` (`"stop"`, `"tool_calls"`, `"length"`).
pub fn finish(reason: impl Into<String>) -> Value {
    chunk(json!({}), Value::String(reason.into()))
}

/// The trailing usage chunk: no choices, only token counts.
pub fn usage(prompt: u64, completion: u64, total: u64) -> Value {
    json!({
        "id": CHUNK_ID,
        "object": "chat.completion.chunk",
        "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total},
    })
}
