//! The model client: one streaming request per model call, over either wire API.
//!
//! The engine hands over a [`Prompt`] (instructions, history, tool specs) and
//! reads [`ResponseEvent`]s. Request-level retries (connect errors, 429, 5xx)
//! happen in here; a stream that breaks after it started is reported as
//! [`ModelError::Stream`] and retried by the caller, which has already shown
//! the partial output.

// Runs on the async runtime: no blocking std calls (see clippy.toml).
#![cfg_attr(not(test), warn(clippy::disallowed_methods))]

mod chat;
mod model_client;
mod responses;
mod retry;
mod stream;
#[cfg(test)]
mod tests;
mod tool_spec;

use std::sync::Arc;
use std::time::Duration;

use deputy_protocol::{CodexErrorInfo, ResponseItem, TokenUsage};

pub use model_client::ModelClient;
pub(crate) use model_client::install_crypto_provider;
pub use stream::ResponseStream;
pub use tool_spec::{FreeformTool, FunctionTool, Grammar, HostedTool, NamespaceTool, ToolSpec};

/// Everything one model call sends.
#[derive(Debug, Clone, Default)]
pub struct Prompt {
    /// System instructions (Responses `instructions`; the first chat `system` message).
    /// Shared, like `tools`: every request of a turn starts from the same prompt.
    pub instructions: Arc<str>,
    /// The conversation so far.
    pub input: Vec<ResponseItem>,
    /// Tools offered to the model, in the order they are listed.
    pub tools: Arc<[ToolSpec]>,
    /// Whether the model may call several tools in one response (Responses only).
    pub parallel_tool_calls: bool,
    /// A JSON Schema the answer must follow (strict structured output), when the turn has one.
    pub output_schema: Option<serde_json::Value>,
    /// How hard a reasoning model should think (`model_reasoning_effort`), when set.
    pub reasoning_effort: Option<String>,
    /// The reasoning summary asked of a reasoning model (Responses `reasoning.summary`).
    pub reasoning_summary: Option<String>,
    /// Whether to ask for the model's encrypted reasoning (Responses `include`), to send
    /// it back in later requests since `store` is false.
    pub include_encrypted_reasoning: bool,
    /// The provider's prompt-cache key (Responses `prompt_cache_key`): the thread id, so
    /// that the requests of a thread share their cached prefix.
    pub prompt_cache_key: Option<String>,
    /// How long the answers should be (Responses `text.verbosity`), when set.
    pub verbosity: Option<String>,
}

/// The name structured-output requests give the answer's schema, as Codex names it.
pub const OUTPUT_SCHEMA_NAME: &str = "codex_output_schema";

/// One thing the model stream produced.
#[derive(Debug, Clone, PartialEq)]
pub enum ResponseEvent {
    /// The server accepted the request.
    Created,
    /// A piece of assistant text.
    OutputTextDelta(String),
    /// A piece of reasoning text.
    ReasoningDelta(String),
    /// A finished output item (assistant message, reasoning, function call).
    OutputItemDone(ResponseItem),
    /// The response is complete.
    Completed {
        /// Provider's response id (may be empty for chat).
        response_id: String,
        /// Usage, when reported.
        token_usage: Option<TokenUsage>,
    },
}

/// A request is being retried.
#[derive(Debug, Clone)]
pub struct RetryNotice {
    /// Which retry this is (1-based).
    pub attempt: u64,
    /// The allowed maximum.
    pub max_retries: u64,
    /// How long until it is sent.
    pub delay: Duration,
    /// What failed.
    pub reason: String,
    /// The HTTP status that failed, when the server answered with one.
    pub http_status: Option<u16>,
}

/// Why a model call failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ModelError {
    /// The server answered with an error status (after any retries).
    #[error("model server returned {status}: {message}")]
    Http {
        /// HTTP status code.
        status: u16,
        /// The provider's own error message, verbatim.
        message: String,
    },
    /// The server could not be reached (after any retries): its URL and the innermost cause.
    #[error("could not reach the model server at {0}")]
    Connect(String),
    /// The stream broke, stalled or ended before completion.
    #[error("model stream broke: {0}")]
    Stream(String),
    /// The server reported the response as failed (`response.failed`).
    #[error("model response failed: {0}")]
    Failed(String),
    /// The provider is misconfigured (missing API key, bad URL…).
    #[error("{0}")]
    Config(String),
    /// The request does not fit the model's context window (the provider's
    /// `context_length_exceeded`, as an error status or a failed response).
    #[error("the conversation is too long for the model's context window: {0}")]
    ContextWindowExceeded(String),
}

impl ModelError {
    /// Whether the request was refused for being longer than the model's context window.
    pub fn is_context_window_exceeded(&self) -> bool {
        matches!(self, Self::ContextWindowExceeded(_))
    }

    /// Whether the server could not be reached at all.
    pub fn is_connect(&self) -> bool {
        matches!(self, Self::Connect(_))
    }

    /// The HTTP status of an error status.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            Self::Http { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// How Codex classifies this error when it ends a turn. A status still failing once
    /// the retries ran out is `internal_server_error` (500) or too many failed attempts
    /// (429); other statuses are `other`, as Codex reports them.
    pub fn codex_error_info(&self) -> CodexErrorInfo {
        match self {
            Self::Http { status: 500, .. } => CodexErrorInfo::InternalServerError,
            Self::Http { status: 429, .. } => CodexErrorInfo::ResponseTooManyFailedAttempts {
                http_status_code: Some(429),
            },
            Self::Connect(_) => CodexErrorInfo::HttpConnectionFailed {
                http_status_code: None,
            },
            Self::Stream(_) => CodexErrorInfo::ResponseStreamDisconnected {
                http_status_code: None,
            },
            Self::ContextWindowExceeded(_) => CodexErrorInfo::ContextWindowExceeded,
            Self::Http { .. } | Self::Failed(_) | Self::Config(_) => CodexErrorInfo::Other,
        }
    }
}

/// Whether a provider error (its `code` and message) says the request is longer than
/// the model's context window. OpenAI sends the code `context_length_exceeded`;
/// other servers only say so in words, which vary.
pub(crate) fn says_context_too_long(code: Option<&str>, message: &str) -> bool {
    const PHRASES: &[&str] = &[
        "context_length_exceeded",
        "context length",
        "context window",
        "context_window",
        "maximum context",
        "prompt is too long",
        "too many tokens",
        "exceeds the available context",
        "input is too long",
    ];
    if code
        .is_some_and(|code| code == "context_length_exceeded" || code == "context_window_exceeded")
    {
        return true;
    }
    let message = message.to_ascii_lowercase();
    PHRASES.iter().any(|phrase| message.contains(phrase))
}
