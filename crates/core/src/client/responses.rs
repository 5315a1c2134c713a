//! The OpenAI Responses wire format: request body and SSE events.

use deputy_protocol::{ResponseItem, TokenUsage};
use eventsource_stream::Event;
use serde::Deserialize;
use serde_json::{Value, json};

use super::stream::{Decoded, parse_json};
use super::{
    ModelError, OUTPUT_SCHEMA_NAME, Prompt, ResponseEvent, ToolSpec, says_context_too_long,
};

/// The JSON body of a `POST /responses` request.
pub(super) fn request_body(model: &str, prompt: &Prompt) -> Value {
    let tools: Vec<Value> = prompt.tools.iter().map(ToolSpec::responses_json).collect();
    let mut body = json!({
        "model": model,
        "instructions": prompt.instructions,
        "input": input_items(&prompt.input),
        "tools": tools,
        "tool_choice": "auto",
        "parallel_tool_calls": prompt.parallel_tool_calls,
        "store": false,
        "stream": true,
    });
    if prompt.reasoning_effort.is_some() || prompt.reasoning_summary.is_some() {
        let mut reasoning = json!({});
        if let Some(effort) = &prompt.reasoning_effort {
            reasoning["effort"] = json!(effort);
        }
        if let Some(summary) = &prompt.reasoning_summary {
            reasoning["summary"] = json!(summary);
        }
        body["reasoning"] = reasoning;
    }
    if prompt.include_encrypted_reasoning {
        body["include"] = json!(["reasoning.encrypted_content"]);
    }
    if let Some(key) = &prompt.prompt_cache_key {
        body["prompt_cache_key"] = json!(key);
    }
    let mut text = serde_json::Map::new();
    if let Some(schema) = &prompt.output_schema {
        text.insert(
            "format".into(),
            json!({
                "type": "json_schema",
                "name": OUTPUT_SCHEMA_NAME,
                "schema": schema,
                "strict": true,
            }),
        );
    }
    if let Some(verbosity) = &prompt.verbosity {
        text.insert("verbosity".into(), json!(verbosity));
    }
    if !text.is_empty() {
        body["text"] = Value::Object(text);
    }
    body
}

/// History items as the server accepts them back.
///
/// With `store: false` the server keeps nothing, so an item sent with its
/// provider id is rejected as "not found"; ids are left out. Reasoning without
/// its encrypted state is useless to the server and is dropped. Items deputy does
/// not interpret (a hosted tool's call) go back as the server sent them.
fn input_items(items: &[ResponseItem]) -> Vec<Value> {
    items
        .iter()
        .filter(|item| match item {
            ResponseItem::Reasoning {
                encrypted_content, ..
            } => encrypted_content.is_some(),
            _ => true,
        })
        // Serializing these plain-data items cannot fail.
        .filter_map(|item| serde_json::to_value(item).ok())
        .map(|mut value| {
            if let Some(fields) = value.as_object_mut() {
                fields.remove("id");
            }
            value
        })
        .collect()
}

/// Turns Responses SSE events into [`ResponseEvent`]s.
#[derive(Debug, Default)]
pub(super) struct ResponsesDecoder;

impl ResponsesDecoder {
    /// Handles one SSE event.
    pub(super) fn event(&mut self, event: &Event) -> Result<Decoded, ModelError> {
        let data = parse_json(event)?;
        // The JSON `type` is authoritative; the SSE `event:` line is optional.
        let kind = data
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or(&event.event);
        let text = |field: &str| {
            data.get(field)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let events = match kind {
            "response.created" => vec![ResponseEvent::Created],
            "response.output_text.delta" => text("delta")
                .map(ResponseEvent::OutputTextDelta)
                .into_iter()
                .collect(),
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                text("delta")
                    .map(ResponseEvent::ReasoningDelta)
                    .into_iter()
                    .collect()
            }
            "response.output_item.done" => output_item(&data)?.into_iter().collect(),
            "response.completed" => return Ok(Decoded::Done(vec![completed(&data)])),
            "response.failed" => {
                let error = &data["response"]["error"];
                return Err(failure(error));
            }
            "response.incomplete" => {
                let reason = data["response"]["incomplete_details"]["reason"]
                    .as_str()
                    .unwrap_or("unknown reason");
                return Err(ModelError::Failed(format!("incomplete response: {reason}")));
            }
            "error" => {
                let error = data.get("error").unwrap_or(&data);
                return Err(failure(error));
            }
            _ => Vec::new(),
        };
        Ok(Decoded::Events(events))
    }

    /// The body ended; a Responses stream is only whole after `response.completed`.
    pub(super) fn end_of_body(&mut self) -> Result<Vec<ResponseEvent>, ModelError> {
        Err(ModelError::Stream(
            "stream closed before response.completed".into(),
        ))
    }
}

/// The error a failed response stands for: too long for the context window, or other.
fn failure(error: &Value) -> ModelError {
    let message = error_message(error);
    let code = error.get("code").and_then(Value::as_str);
    if says_context_too_long(code, &message) {
        ModelError::ContextWindowExceeded(message)
    } else {
        ModelError::Failed(message)
    }
}

/// The provider's message from an error object, or the object itself.
fn error_message(error: &Value) -> String {
    match error.get("message").and_then(Value::as_str) {
        Some(message) => message.to_owned(),
        None if error.is_null() => "the model server gave no reason".to_owned(),
        None => error.to_string(),
    }
}

/// The finished item of a `response.output_item.done` event. Every item is kept: those
/// deputy does not interpret as [`ResponseItem::Other`], to go back with the history.
fn output_item(data: &Value) -> Result<Option<ResponseEvent>, ModelError> {
    let Some(item) = data.get("item") else {
        return Ok(None);
    };
    let mut item = item.clone();
    if item.get("type").and_then(Value::as_str) == Some("message") {
        keep_text_parts(&mut item);
    }
    serde_json::from_value(item)
        .map(|item| Some(ResponseEvent::OutputItemDone(item)))
        .map_err(|e| {
            ModelError::Stream(format!(
                "unreadable item in `response.output_item.done` event: {e}"
            ))
        })
}

/// Reduces a message's content to text parts: a refusal reads as text, and
/// part kinds deputy has no use for are dropped rather than failing the turn.
fn keep_text_parts(message: &mut Value) {
    let Some(parts) = message.get_mut("content").and_then(Value::as_array_mut) else {
        return;
    };
    parts.retain_mut(|part| match part.get("type").and_then(Value::as_str) {
        Some("output_text" | "input_text") => true,
        Some("refusal") => {
            let text = part.get("refusal").cloned().unwrap_or_default();
            *part = json!({ "type": "output_text", "text": text });
            true
        }
        _ => false,
    });
}

fn completed(data: &Value) -> ResponseEvent {
    let response = &data["response"];
    let token_usage = response
        .get("usage")
        .and_then(|usage| WireUsage::deserialize(usage).ok())
        .map(TokenUsage::from);
    ResponseEvent::Completed {
        response_id: response["id"].as_str().unwrap_or_default().to_owned(),
        token_usage,
    }
}

/// `response.usage` as the Responses API reports it; servers differ in which
/// counts they fill in and some send `null`, so every count is optional.
#[derive(Deserialize)]
struct WireUsage {
    input_tokens: Option<u64>,
    input_tokens_details: Option<InputDetails>,
    output_tokens: Option<u64>,
    output_tokens_details: Option<OutputDetails>,
    total_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct InputDetails {
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct OutputDetails {
    reasoning_tokens: Option<u64>,
}

impl From<WireUsage> for TokenUsage {
    fn from(usage: WireUsage) -> Self {
        TokenUsage {
            input_tokens: usage.input_tokens.unwrap_or(0),
            cached_input_tokens: usage
                .input_tokens_details
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0),
            output_tokens: usage.output_tokens.unwrap_or(0),
            reasoning_output_tokens: usage
                .output_tokens_details
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
            // Some servers leave the total out; it is input plus output by definition.
            total_tokens: usage
                .total_tokens
                .unwrap_or(usage.input_tokens.unwrap_or(0) + usage.output_tokens.unwrap_or(0)),
        }
    }
}
