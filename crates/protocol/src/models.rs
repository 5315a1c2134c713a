//! Conversation history items, in the shape of the OpenAI Responses API.
//!
//! The engine keeps its history as these items whatever the wire API; the
//! chat client converts them to messages on the way out.

use serde::{Deserialize, Serialize};

use crate::FunctionOutput;

/// One item of a conversation's history.
///
/// Read by hand (`response_item_de.rs`): the tag first, then the variant's fields, and an
/// item of any other type kept whole as [`ResponseItem::Other`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ResponseItem {
    /// A message from the user, the developer, the system or the assistant.
    Message {
        /// Provider-assigned id, when the provider gave one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// `user`, `developer`, `system` or `assistant`.
        role: String,
        /// The message's parts.
        content: Vec<ContentItem>,
    },
    /// Reasoning the model streamed before answering.
    Reasoning {
        /// Provider-assigned id.
        #[serde(default)]
        id: String,
        /// Summary parts.
        #[serde(default)]
        summary: Vec<ReasoningSummary>,
        /// The raw reasoning parts, when the provider sent them, kept as they came.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<serde_json::Value>,
        /// Opaque reasoning state some providers want sent back.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        encrypted_content: Option<String>,
    },
    /// The model asked for a tool to be run.
    FunctionCall {
        /// Provider-assigned item id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// Tool name.
        name: String,
        /// The namespace tool the called function belongs to, when it belongs to one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
        /// JSON-encoded arguments, as the model wrote them.
        arguments: String,
        /// Id tying the call to its output.
        call_id: String,
    },
    /// The result of a function call, sent back to the model.
    FunctionCallOutput {
        /// The call this answers.
        call_id: String,
        /// What the model reads: text, or text and images.
        output: FunctionOutput,
    },
    /// The model called a freeform (custom) tool with raw text.
    CustomToolCall {
        /// Provider-assigned item id.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        /// Tool name.
        name: String,
        /// The text the model wrote for the tool, as it wrote it.
        input: String,
        /// Id tying the call to its output.
        call_id: String,
    },
    /// The result of a freeform tool call, sent back to the model.
    CustomToolCallOutput {
        /// The call this answers.
        call_id: String,
        /// What the model reads: text, or text and images.
        output: FunctionOutput,
    },
    /// An item of a type deputy does not interpret (a hosted tool's call such as
    /// `web_search_call`), kept whole as the provider sent it and sent back with the history.
    #[serde(untagged)]
    Other(serde_json::Value),
}

impl ResponseItem {
    /// A user message holding one text part.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self::message("user", ContentItem::InputText { text: text.into() })
    }

    /// A developer message holding one text part.
    pub fn developer_text(text: impl Into<String>) -> Self {
        Self::message("developer", ContentItem::InputText { text: text.into() })
    }

    /// An assistant message holding one text part.
    pub fn assistant_text(text: impl Into<String>) -> Self {
        Self::message("assistant", ContentItem::OutputText { text: text.into() })
    }

    fn message(role: &str, part: ContentItem) -> Self {
        Self::Message {
            id: None,
            role: role.to_string(),
            content: vec![part],
        }
    }

    /// The call id and kind of a tool call item; `None` for other items.
    pub fn tool_call(&self) -> Option<(&str, ToolCallKind)> {
        match self {
            Self::FunctionCall { call_id, .. } => Some((call_id, ToolCallKind::Function)),
            Self::CustomToolCall { call_id, .. } => Some((call_id, ToolCallKind::Custom)),
            _ => None,
        }
    }

    /// The call id a tool output item answers; `None` for other items.
    pub fn answered_call_id(&self) -> Option<&str> {
        match self {
            Self::FunctionCallOutput { call_id, .. }
            | Self::CustomToolCallOutput { call_id, .. } => Some(call_id),
            _ => None,
        }
    }

    /// The concatenated text of a message item; `None` for other items.
    pub fn message_text(&self) -> Option<String> {
        match self {
            Self::Message { content, .. } => Some(
                content
                    .iter()
                    .map(|c| match c {
                        ContentItem::InputText { text } | ContentItem::OutputText { text } => {
                            text.as_str()
                        }
                        ContentItem::InputImage { .. } => "",
                    })
                    .collect(),
            ),
            _ => None,
        }
    }
}

/// Which kind of call a tool output answers: the API takes an output only of its call's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolCallKind {
    /// A `function_call`, answered by a `function_call_output`.
    Function,
    /// A `custom_tool_call`, answered by a `custom_tool_call_output`.
    Custom,
}

impl ToolCallKind {
    /// The output item answering call `call_id` of this kind.
    pub fn output(self, call_id: String, output: FunctionOutput) -> ResponseItem {
        match self {
            Self::Function => ResponseItem::FunctionCallOutput { call_id, output },
            Self::Custom => ResponseItem::CustomToolCallOutput { call_id, output },
        }
    }
}

/// One part of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentItem {
    /// Text written by the user, developer or system.
    InputText {
        /// The text.
        text: String,
    },
    /// Text written by the model.
    OutputText {
        /// The text.
        text: String,
    },
    /// An image the user gave, as a URL (a `data:` URL for a local file).
    InputImage {
        /// The image's URL.
        image_url: String,
    },
}

/// One part of a reasoning summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ReasoningSummary {
    /// Summary text.
    SummaryText {
        /// The text.
        text: String,
    },
}

/// Token usage reported by the model server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Tokens in the request.
    pub input_tokens: u64,
    /// Request tokens served from the provider's cache.
    pub cached_input_tokens: u64,
    /// Tokens the model produced.
    pub output_tokens: u64,
    /// Output tokens spent on reasoning.
    pub reasoning_output_tokens: u64,
    /// Input plus output.
    pub total_tokens: u64,
}

impl TokenUsage {
    /// Adds another usage report to this running total.
    pub fn add(&mut self, other: &TokenUsage) {
        self.input_tokens += other.input_tokens;
        self.cached_input_tokens += other.cached_input_tokens;
        self.output_tokens += other.output_tokens;
        self.reasoning_output_tokens += other.reasoning_output_tokens;
        self.total_tokens += other.total_tokens;
    }
}
