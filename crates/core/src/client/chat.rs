//! The Chat Completions wire format: request body and streamed chunks.

use std::collections::BTreeMap;

use deputy_protocol::{ContentItem, ResponseItem, TokenUsage};
use eventsource_stream::Event;
use serde::Deserialize;
use serde_json::{Value, json};

use super::stream::{Decoded, parse_json};
use super::{
    ModelError, OUTPUT_SCHEMA_NAME, Prompt, ResponseEvent, ToolSpec, says_context_too_long,
};

/// The JSON body of a `POST /chat/completions` request.
pub(super) fn request_body(model: &str, prompt: &Prompt) -> Value {
    let mut body = json!({
        "model": model,
        "messages": messages(prompt),
        "stream": true,
        "stream_options": { "include_usage": true },
    });
    let tools: Vec<Value> = prompt.tools.iter().flat_map(ToolSpec::chat_json).collect();
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
        body["tool_choice"] = json!("auto");
    }
    if let Some(effort) = &prompt.reasoning_effort {
        body["reasoning_effort"] = json!(effort);
    }
    if let Some(schema) = &prompt.output_schema {
        body["response_format"] = json!({
            "type": "json_schema",
            "json_schema": {
                "name": OUTPUT_SCHEMA_NAME,
                "schema": schema,
                "strict": true,
            }
        });
    }
    body
}

/// The history as chat messages.
fn messages(prompt: &Prompt) -> Vec<Value> {
    let mut messages = Vec::new();
    if !prompt.instructions.is_empty() {
        messages.push(json!({ "role": "system", "content": prompt.instructions }));
    }
    // Images in tool outputs: a tool message holds text only, and nothing may come between
    // the tool messages answering one assistant message, so they follow those as a user message.
    let mut tool_images: Vec<Value> = Vec::new();
    for item in &prompt.input {
        let is_output = matches!(
            item,
            ResponseItem::FunctionCallOutput { .. } | ResponseItem::CustomToolCallOutput { .. }
        );
        if !is_output && !tool_images.is_empty() {
            messages.push(tool_images_message(std::mem::take(&mut tool_images)));
        }
        match item {
            ResponseItem::Message { role, content, .. } => {
                // Most OpenAI-compatible local servers reject the `developer` role.
                let role = if role == "developer" { "system" } else { role };
                messages.push(json!({ "role": role, "content": message_content(item, content) }));
            }
            ResponseItem::FunctionCall {
                name,
                namespace,
                arguments,
                call_id,
                ..
            } => {
                // A namespaced function is offered on Chat under its flat name.
                let name = match namespace {
                    Some(namespace) => format!("{namespace}{name}"),
                    None => name.clone(),
                };
                push_tool_call(&mut messages, call_id, &name, arguments);
            }
            ResponseItem::CustomToolCall {
                name,
                input,
                call_id,
                ..
            } => {
                // A freeform tool is offered on Chat as a function taking its text as `input`.
                let arguments = json!({ "input": input }).to_string();
                push_tool_call(&mut messages, call_id, name, &arguments);
            }
            ResponseItem::FunctionCallOutput { call_id, output }
            | ResponseItem::CustomToolCallOutput { call_id, output } => {
                messages.push(json!({
                    "role": "tool",
                    "tool_call_id": call_id,
                    "content": output.text(),
                }));
                tool_images.extend(
                    output
                        .image_urls()
                        .map(|url| json!({ "type": "image_url", "image_url": { "url": url } })),
                );
            }
            ResponseItem::Reasoning { .. } | ResponseItem::Other(_) => {}
        }
    }
    if !tool_images.is_empty() {
        messages.push(tool_images_message(tool_images));
    }
    messages
}

/// Adds a tool call to the assistant message that made it: Chat carries a turn's tool
/// calls inside that message, so consecutive calls share one message.
fn push_tool_call(messages: &mut Vec<Value>, call_id: &str, name: &str, arguments: &str) {
    let call = json!({
        "id": call_id,
        "type": "function",
        "function": { "name": name, "arguments": arguments },
    });
    match messages.last_mut() {
        Some(last) if last["role"] == "assistant" => {
            match last.get_mut("tool_calls").and_then(Value::as_array_mut) {
                Some(calls) => calls.push(call),
                None => last["tool_calls"] = json!([call]),
            }
        }
        _ => messages.push(json!({
            "role": "assistant",
            "content": null,
            "tool_calls": [call],
        })),
    }
}

/// The user message carrying the images the preceding tool outputs returned.
fn tool_images_message(images: Vec<Value>) -> Value {
    let mut content = vec![json!({ "type": "text", "text": TOOL_IMAGES_NOTE })];
    content.extend(images);
    json!({ "role": "user", "content": content })
}

/// What the message carrying tool outputs' images says they are.
const TOOL_IMAGES_NOTE: &str = "The images the tool calls above returned:";

/// A message's content: its text, or text and image parts when it holds an image.
fn message_content(item: &ResponseItem, content: &[ContentItem]) -> Value {
    let has_image = content
        .iter()
        .any(|part| matches!(part, ContentItem::InputImage { .. }));
    if !has_image {
        return Value::String(item.message_text().unwrap_or_default());
    }
    content
        .iter()
        .map(|part| match part {
            ContentItem::InputText { text } | ContentItem::OutputText { text } => {
                json!({ "type": "text", "text": text })
            }
            ContentItem::InputImage { image_url } => {
                json!({ "type": "image_url", "image_url": { "url": image_url } })
            }
        })
        .collect()
}

/// Assembles streamed chat chunks into [`ResponseEvent`]s.
#[derive(Debug, Default)]
pub(super) struct ChatDecoder {
    response_id: String,
    text: String,
    /// Tool calls by the `index` the server gave their fragments.
    tool_calls: BTreeMap<u64, PartialToolCall>,
    usage: Option<TokenUsage>,
    saw_finish_reason: bool,
}

#[derive(Debug, Default)]
struct PartialToolCall {
    id: String,
    name: String,
    arguments: String,
}

impl ChatDecoder {
    /// Handles one SSE event (one chunk, or `[DONE]`).
    pub(super) fn event(&mut self, event: &Event) -> Result<Decoded, ModelError> {
        if event.data.trim() == "[DONE]" {
            return Ok(Decoded::Done(self.finish()));
        }
        let chunk = parse_json(event)?;
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            let message = match error.get("message").and_then(Value::as_str) {
                Some(message) => message.to_owned(),
                None => error
                    .as_str()
                    .map_or_else(|| error.to_string(), str::to_owned),
            };
            let code = error.get("code").and_then(Value::as_str);
            if says_context_too_long(code, &message) {
                return Err(ModelError::ContextWindowExceeded(message));
            }
            return Err(ModelError::Failed(message));
        }
        if self.response_id.is_empty()
            && let Some(id) = chunk.get("id").and_then(Value::as_str)
        {
            self.response_id = id.to_owned();
        }
        if let Some(usage) = chunk
            .get("usage")
            .and_then(|u| WireUsage::deserialize(u).ok())
        {
            self.usage = Some(usage.into());
        }
        let mut events = Vec::new();
        let Some(choice) = chunk.get("choices").and_then(|c| c.get(0)) else {
            return Ok(Decoded::Events(events));
        };
        if choice.get("finish_reason").is_some_and(|r| !r.is_null()) {
            self.saw_finish_reason = true;
        }
        let delta = &choice["delta"];
        if let Some(text) = delta["content"].as_str().filter(|t| !t.is_empty()) {
            self.text.push_str(text);
            events.push(ResponseEvent::OutputTextDelta(text.to_owned()));
        }
        for field in ["reasoning_content", "reasoning"] {
            if let Some(text) = delta[field].as_str().filter(|t| !t.is_empty()) {
                events.push(ResponseEvent::ReasoningDelta(text.to_owned()));
            }
        }
        if let Some(calls) = delta["tool_calls"].as_array() {
            for (position, fragment) in calls.iter().enumerate() {
                self.add_tool_call_fragment(position as u64, fragment);
            }
        }
        Ok(Decoded::Events(events))
    }

    /// The body ended; without `[DONE]` that is only whole once a choice finished.
    pub(super) fn end_of_body(&mut self) -> Result<Vec<ResponseEvent>, ModelError> {
        if self.saw_finish_reason {
            Ok(self.finish())
        } else {
            Err(ModelError::Stream("stream closed before [DONE]".into()))
        }
    }

    fn add_tool_call_fragment(&mut self, position: u64, fragment: &Value) {
        // Servers that send each call whole sometimes leave out `index`.
        let index = fragment["index"].as_u64().unwrap_or(position);
        let call = self.tool_calls.entry(index).or_default();
        if let Some(id) = fragment["id"].as_str().filter(|id| !id.is_empty()) {
            call.id = id.to_owned();
        }
        let function = &fragment["function"];
        if let Some(name) = function["name"].as_str() {
            call.name.push_str(name);
        }
        if let Some(arguments) = function["arguments"].as_str() {
            call.arguments.push_str(arguments);
        }
    }

    fn finish(&mut self) -> Vec<ResponseEvent> {
        let mut events = Vec::new();
        if !self.text.is_empty() {
            events.push(ResponseEvent::OutputItemDone(ResponseItem::Message {
                id: None,
                role: "assistant".into(),
                content: vec![ContentItem::OutputText {
                    text: std::mem::take(&mut self.text),
                }],
            }));
        }
        for (n, call) in std::mem::take(&mut self.tool_calls)
            .into_values()
            .enumerate()
        {
            let call_id = if call.id.is_empty() {
                format!("call_{n}")
            } else {
                call.id
            };
            // A call without arguments still has to parse as a JSON object.
            let arguments = if call.arguments.trim().is_empty() {
                "{}".to_owned()
            } else {
                call.arguments
            };
            events.push(ResponseEvent::OutputItemDone(ResponseItem::FunctionCall {
                id: None,
                name: call.name,
                namespace: None,
                arguments,
                call_id,
            }));
        }
        events.push(ResponseEvent::Completed {
            response_id: std::mem::take(&mut self.response_id),
            token_usage: self.usage.take(),
        });
        events
    }
}

/// A chunk's `usage`; every count is optional because servers differ.
#[derive(Deserialize)]
struct WireUsage {
    prompt_tokens: Option<u64>,
    prompt_tokens_details: Option<PromptDetails>,
    /// DeepSeek's name for cached prompt tokens.
    prompt_cache_hit_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    completion_tokens_details: Option<CompletionDetails>,
    total_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct PromptDetails {
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct CompletionDetails {
    reasoning_tokens: Option<u64>,
}

impl From<WireUsage> for TokenUsage {
    fn from(usage: WireUsage) -> Self {
        let input = usage.prompt_tokens.unwrap_or(0);
        let output = usage.completion_tokens.unwrap_or(0);
        TokenUsage {
            input_tokens: input,
            cached_input_tokens: usage
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .or(usage.prompt_cache_hit_tokens)
                .unwrap_or(0),
            output_tokens: output,
            reasoning_output_tokens: usage
                .completion_tokens_details
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
            total_tokens: usage.total_tokens.unwrap_or(input + output),
        }
    }
}
