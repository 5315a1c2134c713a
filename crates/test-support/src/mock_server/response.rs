//! What the mock server answers with: status, headers, body frames, pacing and faults.

use std::time::Duration;

use serde_json::{Map, Value};

use super::chat;
use super::responses;

/// Id used by the whole-turn builders for the Responses API `response` object.
const TURN_RESPONSE_ID: &str = "resp-mock";
/// Id used by the whole-turn builders for the assistant message item.
const TURN_MESSAGE_ID: &str = "msg-mock";

/// One Server-Sent Event of the Responses API: an `event:` line and a JSON `data:` line.
#[derive(Debug, Clone, PartialEq)]
pub struct SseEvent {
    /// The event type, e.g. `response.output_text.delta`.
    pub kind: String,
    /// The JSON payload; when it is an object it carries `"type": kind` like OpenAI's.
    pub data: Value,
}

impl SseEvent {
    /// An event of `kind` whose data is `fields` with `"type": kind` added when absent.
    pub fn new(kind: impl Into<String>, fields: Value) -> Self {
        let kind = kind.into();
        let data = match fields {
            Value::Object(mut map) => {
                map.entry("type")
                    .or_insert_with(|| Value::String(kind.clone()));
                Value::Object(map)
            }
            Value::Null => {
                let mut map = Map::new();
                map.insert("type".to_owned(), Value::String(kind.clone()));
                Value::Object(map)
            }
            other => other,
        };
        Self { kind, data }
    }

    /// The bytes on the wire: `event: <kind>\ndata: <json>\n\n`.
    pub fn to_frame(&self) -> String {
        format!("event: {}\ndata: {}\n\n", self.kind, self.data)
    }
}

/// How a scripted body ends early instead of finishing cleanly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fault {
    /// Send this many frames, then abort the connection mid-body.
    DisconnectAfter(usize),
    /// Send this many frames, then keep the connection open and silent.
    StallAfter(usize),
}

/// One scripted answer of the mock model server, served to exactly one request.
#[derive(Debug, Clone)]
pub struct MockResponse {
    pub(crate) status: u16,
    pub(crate) content_type: &'static str,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) frames: Vec<String>,
    /// Whether the body goes out chunked frame by frame rather than with a content-length.
    pub(crate) streamed: bool,
    pub(crate) fault: Option<Fault>,
    pub(crate) delay_before: Duration,
    pub(crate) delay_between: Duration,
}

impl MockResponse {
    fn new(status: u16, content_type: &'static str, frames: Vec<String>, streamed: bool) -> Self {
        Self {
            status,
            content_type,
            headers: Vec::new(),
            frames,
            streamed,
            fault: None,
            delay_before: Duration::ZERO,
            delay_between: Duration::ZERO,
        }
    }

    /// A Responses API stream (`text/event-stream`), one frame per event.
    pub fn sse(events: Vec<SseEvent>) -> Self {
        let frames = events.iter().map(SseEvent::to_frame).collect();
        Self::new(200, "text/event-stream", frames, true)
    }

    /// A Responses API turn answering `text`: created, one text delta, the message, completed.
    pub fn text_turn(text: impl Into<String>) -> Self {
        let text = text.into();
        Self::sse(vec![
            responses::created(TURN_RESPONSE_ID),
            responses::text_delta(text.clone()),
            responses::message(TURN_MESSAGE_ID, text),
            responses::completed(TURN_RESPONSE_ID),
        ])
    }

    /// A Responses API turn in which the model calls tool `name` with `args`.
    ///
    /// `args` is serialized to the JSON string OpenAI sends; a `Value::String` is sent
    /// verbatim so that tests can script malformed arguments.
    pub fn function_call_turn(
        call_id: impl Into<String>,
        name: impl Into<String>,
        args: Value,
    ) -> Self {
        Self::sse(vec![
            responses::created(TURN_RESPONSE_ID),
            responses::function_call(call_id, name, arguments_text(&args)),
            responses::completed(TURN_RESPONSE_ID),
        ])
    }

    /// A Chat Completions stream: each chunk as `data: <json>`, then `data: [DONE]`.
    pub fn chat(chunks: Vec<Value>) -> Self {
        let mut frames: Vec<String> = chunks
            .iter()
            .map(|chunk| format!("data: {chunk}\n\n"))
            .collect();
        frames.push("data: [DONE]\n\n".to_owned());
        Self::new(200, "text/event-stream", frames, true)
    }

    /// A Chat Completions turn answering `text` and finishing with `stop`.
    pub fn chat_text_turn(text: impl Into<String>) -> Self {
        Self::chat(vec![chat::content(text), chat::finish("stop")])
    }

    /// A Chat Completions turn calling tool `name`, its arguments split over several chunks.
    ///
    /// `args` is serialized like in [`MockResponse::function_call_turn`].
    pub fn chat_tool_call_turn(
        call_id: impl Into<String>,
        name: impl Into<String>,
        args: Value,
    ) -> Self {
        let mut chunks = vec![chat::tool_call_start(0, call_id, name)];
        chunks.extend(
            split_fragments(&arguments_text(&args))
                .into_iter()
                .map(|fragment| chat::tool_call_args(0, fragment)),
        );
        chunks.push(chat::finish("tool_calls"));
        Self::chat(chunks)
    }

    /// A plain JSON answer with HTTP status `code`, e.g. a 429 or 500 error body.
    pub fn status(code: u16, body: Value) -> Self {
        Self::new(code, "application/json", vec![body.to_string()], false)
    }

    /// A stream of arbitrary byte chunks with `content_type`, for malformed-stream tests.
    pub fn raw_stream(content_type: &'static str, chunks: Vec<String>) -> Self {
        Self::new(200, content_type, chunks, true)
    }

    /// Adds a response header; a scripted `content-type` replaces the default one.
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sends the first `n_events` frames, then aborts the connection mid-body.
    ///
    /// The client sees a truncated chunked body, never a clean end of stream.
    pub fn disconnect_after(mut self, n_events: usize) -> Self {
        self.fault = Some(Fault::DisconnectAfter(n_events));
        self.streamed = true;
        self
    }

    /// Sends the first `n_events` frames, then holds the connection open without sending more.
    ///
    /// The connection is released when the server is dropped.
    pub fn stall_after(mut self, n_events: usize) -> Self {
        self.fault = Some(Fault::StallAfter(n_events));
        self.streamed = true;
        self
    }

    /// Waits this long before sending the status line and headers.
    pub fn delay_before(mut self, delay: Duration) -> Self {
        self.delay_before = delay;
        self
    }

    /// Waits this long between consecutive body frames.
    pub fn delay_between(mut self, delay: Duration) -> Self {
        self.delay_between = delay;
        if !delay.is_zero() {
            self.streamed = true;
        }
        self
    }

    /// The HTTP status this response is served with.
    pub fn status_code(&self) -> u16 {
        self.status
    }

    /// The body frames exactly as they go on the wire, faults aside.
    pub fn frames(&self) -> &[String] {
        &self.frames
    }
}

/// The `arguments` string of a tool call: strings verbatim, anything else as compact JSON.
fn arguments_text(args: &Value) -> String {
    match args {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// Splits `text` into up to three pieces on char boundaries, at least two when it has two chars.
fn split_fragments(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() < 2 {
        return vec![text.to_owned()];
    }
    let pieces = chars.len().min(3);
    let size = chars.len().div_ceil(pieces);
    chars
        .chunks(size)
        .map(|piece| piece.iter().collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sse_event_frame_carries_type_in_data() {
        let event = SseEvent::new("response.created", json!({"response": {"id": "r1"}}));
        let frame = event.to_frame();
        let (head, data) = frame.split_once('\n').unwrap_or_default();
        assert_eq!(head, "event: response.created");
        let data: Value =
            serde_json::from_str(data.trim_start_matches("data: ").trim_end()).unwrap_or_default();
        assert_eq!(
            data,
            json!({"type": "response.created", "response": {"id": "r1"}})
        );
        assert!(frame.ends_with("}\n\n"));
    }

    #[test]
    fn split_fragments_reassembles_and_splits_short_objects() {
        for text in ["{}", "{\"a\":1}", "{\"path\":\"é/ü.txt\",\"n\":[1,2,3]}"] {
            let pieces = split_fragments(text);
            assert!(pieces.len() >= 2, "{text} split into {pieces:?}");
            assert_eq!(pieces.concat(), text);
        }
        assert_eq!(split_fragments(""), vec![String::new()]);
    }

    #[test]
    fn chat_stream_ends_with_done_marker() {
        let response = MockResponse::chat_text_turn("hi");
        assert_eq!(
            response.frames().last().map(String::as_str),
            Some("data: [DONE]\n\n")
        );
        assert_eq!(response.frames().len(), 3);
    }
}
