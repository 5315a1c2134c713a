//! The OpenAI Responses wire format: request body and SSE events.

use deputy_protocol::{ContentItem, ReasoningSummary, ResponseItem, TokenUsage};
use eventsource_stream::Event;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Value, json};

use super::stream::{Decoded, parse_json};
use super::{
    ModelError, OUTPUT_SCHEMA_NAME, Prompt, ResponseEvent, ToolSpec, says_context_too_long,
};

/// The JSON body of a `POST /responses` request, as a value (for showing it).
pub(super) fn request_body(model: &str, prompt: &Prompt) -> Value {
    // Plain data with string keys: converting cannot fail.
    serde_json::to_value(Body::new(model, prompt)).unwrap_or_default()
}

/// The bytes of a `POST /responses` request's body: serialized straight from the prompt,
/// without copying its instructions, history or tool schemas into a JSON value first.
pub(super) fn request_bytes(model: &str, prompt: &Prompt) -> Vec<u8> {
    // Plain data with string keys: serializing cannot fail.
    serde_json::to_vec(&Body::new(model, prompt)).unwrap_or_default()
}

/// A request's body, borrowing everything from the prompt.
#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    instructions: &'a str,
    input: Input<'a>,
    tools: Tools<'a>,
    tool_choice: &'static str,
    parallel_tool_calls: bool,
    store: bool,
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<Reasoning<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    include: Option<[&'static str; 1]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt_cache_key: Option<&'a str>,
    #[serde(skip_serializing_if = "TextOptions::is_empty")]
    text: TextOptions<'a>,
}

#[derive(Serialize)]
struct Reasoning<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    effort: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary: Option<&'a str>,
}

#[derive(Serialize)]
struct TextOptions<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    format: Option<SchemaFormat<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    verbosity: Option<&'a str>,
}

impl TextOptions<'_> {
    fn is_empty(&self) -> bool {
        self.format.is_none() && self.verbosity.is_none()
    }
}

/// Strict structured output: the answer follows the turn's schema.
#[derive(Serialize)]
struct SchemaFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: &'static str,
    schema: &'a Value,
    strict: bool,
}

impl<'a> Body<'a> {
    fn new(model: &'a str, prompt: &'a Prompt) -> Self {
        let reasoning = (prompt.reasoning_effort.is_some() || prompt.reasoning_summary.is_some())
            .then_some(Reasoning {
                effort: prompt.reasoning_effort.as_deref(),
                summary: prompt.reasoning_summary.as_deref(),
            });
        Self {
            model,
            instructions: &prompt.instructions,
            input: Input(&prompt.input),
            tools: Tools(&prompt.tools),
            tool_choice: "auto",
            parallel_tool_calls: prompt.parallel_tool_calls,
            store: false,
            stream: true,
            reasoning,
            include: prompt
                .include_encrypted_reasoning
                .then_some(["reasoning.encrypted_content"]),
            prompt_cache_key: prompt.prompt_cache_key.as_deref(),
            text: TextOptions {
                format: prompt.output_schema.as_ref().map(|schema| SchemaFormat {
                    kind: "json_schema",
                    name: OUTPUT_SCHEMA_NAME,
                    schema,
                    strict: true,
                }),
                verbosity: prompt.verbosity.as_deref(),
            },
        }
    }
}

/// The tools, as the Responses API lists them.
struct Tools<'a>(&'a [ToolSpec]);

impl Serialize for Tools<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(ToolSpec::responses_wire))
    }
}

/// History items as the server accepts them back.
///
/// With `store: false` the server keeps nothing, so an item sent with its
/// provider id is rejected as "not found"; ids are left out. Reasoning without
/// its encrypted state is useless to the server and is dropped. Items deputy does
/// not interpret (a hosted tool's call) go back as the server sent them.
struct Input<'a>(&'a [ResponseItem]);

impl Serialize for Input<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().filter_map(input_item))
    }
}

/// A history item as a request sends it back: its own form without its provider id.
#[derive(Serialize)]
#[serde(untagged)]
enum InputItem<'a> {
    /// An item without an id, as it is.
    AsIs(&'a ResponseItem),
    Message {
        #[serde(rename = "type")]
        kind: &'static str,
        role: &'a str,
        content: &'a [ContentItem],
    },
    Reasoning {
        #[serde(rename = "type")]
        kind: &'static str,
        summary: &'a [ReasoningSummary],
        #[serde(skip_serializing_if = "Option::is_none")]
        content: Option<&'a Value>,
        encrypted_content: &'a str,
    },
    FunctionCall {
        #[serde(rename = "type")]
        kind: &'static str,
        name: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        namespace: Option<&'a str>,
        arguments: &'a str,
        call_id: &'a str,
    },
    CustomToolCall {
        #[serde(rename = "type")]
        kind: &'static str,
        name: &'a str,
        input: &'a str,
        call_id: &'a str,
    },
    Other(WithoutId<'a>),
}

/// `item` as [`Input`] sends it; `None` for reasoning without its encrypted state. Every
/// field is named, so that a field added to an item cannot be left out here unnoticed.
fn input_item(item: &ResponseItem) -> Option<InputItem<'_>> {
    Some(match item {
        ResponseItem::Message {
            id: _,
            role,
            content,
        } => InputItem::Message {
            kind: "message",
            role,
            content,
        },
        ResponseItem::Reasoning {
            id: _,
            summary,
            content,
            encrypted_content,
        } => InputItem::Reasoning {
            kind: "reasoning",
            summary,
            content: content.as_ref(),
            encrypted_content: encrypted_content.as_deref()?,
        },
        ResponseItem::FunctionCall {
            id: _,
            name,
            namespace,
            arguments,
            call_id,
        } => InputItem::FunctionCall {
            kind: "function_call",
            name,
            namespace: namespace.as_deref(),
            arguments,
            call_id,
        },
        ResponseItem::CustomToolCall {
            id: _,
            name,
            input,
            call_id,
        } => InputItem::CustomToolCall {
            kind: "custom_tool_call",
            name,
            input,
            call_id,
        },
        ResponseItem::FunctionCallOutput { .. } | ResponseItem::CustomToolCallOutput { .. } => {
            InputItem::AsIs(item)
        }
        ResponseItem::Other(value) => InputItem::Other(WithoutId(value)),
    })
}

/// An item kept as the provider sent it, without its `id`.
struct WithoutId<'a>(&'a Value);

impl Serialize for WithoutId<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Object(fields) => {
                serializer.collect_map(fields.iter().filter(|(key, _)| *key != "id"))
            }
            other => other.serialize(serializer),
        }
    }
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
