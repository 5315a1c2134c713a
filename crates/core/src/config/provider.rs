//! Model provider definitions (`[model_providers.*]`).

use std::collections::BTreeMap;
use std::time::Duration;

use deputy_protocol::WireApi;
use serde::{Deserialize, Serialize};

/// Retries of a request that failed before streaming (connect error, 429, 5xx).
pub const DEFAULT_REQUEST_MAX_RETRIES: u64 = 4;
/// Retries of a stream that broke before `response.completed` / `[DONE]`.
pub const DEFAULT_STREAM_MAX_RETRIES: u64 = 5;
/// A stream silent this long counts as broken.
pub const DEFAULT_STREAM_IDLE_TIMEOUT_MS: u64 = 300_000;
/// Upper bound on either retry count, whatever the config says.
const MAX_RETRIES_CAP: u64 = 100;

/// How to reach one model server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelProviderInfo {
    /// Display name.
    #[serde(default)]
    pub name: String,
    /// Base URL; `/responses` or `/chat/completions` is appended.
    pub base_url: String,
    /// Environment variable holding the bearer token, if any.
    #[serde(default)]
    pub env_key: Option<String>,
    /// Which wire API this server speaks.
    #[serde(default)]
    pub wire_api: WireApi,
    /// Extra query parameters on every request.
    #[serde(default)]
    pub query_params: BTreeMap<String, String>,
    /// Extra headers on every request.
    #[serde(default)]
    pub http_headers: BTreeMap<String, String>,
    /// See [`DEFAULT_REQUEST_MAX_RETRIES`].
    #[serde(default)]
    pub request_max_retries: Option<u64>,
    /// See [`DEFAULT_STREAM_MAX_RETRIES`].
    #[serde(default)]
    pub stream_max_retries: Option<u64>,
    /// See [`DEFAULT_STREAM_IDLE_TIMEOUT_MS`].
    #[serde(default)]
    pub stream_idle_timeout_ms: Option<u64>,
}

impl ModelProviderInfo {
    /// Retries allowed for a request that fails before streaming.
    pub fn request_max_retries(&self) -> u64 {
        self.request_max_retries
            .unwrap_or(DEFAULT_REQUEST_MAX_RETRIES)
            .min(MAX_RETRIES_CAP)
    }

    /// Retries allowed for a stream that breaks before completion.
    pub fn stream_max_retries(&self) -> u64 {
        self.stream_max_retries
            .unwrap_or(DEFAULT_STREAM_MAX_RETRIES)
            .min(MAX_RETRIES_CAP)
    }

    /// How long a stream may stay silent before it counts as broken.
    pub fn stream_idle_timeout(&self) -> Duration {
        Duration::from_millis(
            self.stream_idle_timeout_ms
                .unwrap_or(DEFAULT_STREAM_IDLE_TIMEOUT_MS),
        )
    }

    /// The bearer token from `env_key`, if set and present in the environment.
    pub fn api_key(&self) -> Result<Option<String>, String> {
        match &self.env_key {
            None => Ok(None),
            Some(var) => match std::env::var(var) {
                Ok(value) if !value.trim().is_empty() => Ok(Some(value)),
                _ => Err(format!(
                    "environment variable `{var}` is not set; provider `{}` reads its API key from it",
                    self.name
                )),
            },
        }
    }
}

/// The providers every config has without declaring them.
pub fn built_in_providers() -> BTreeMap<String, ModelProviderInfo> {
    let openai = ModelProviderInfo {
        name: "OpenAI".into(),
        base_url: std::env::var("OPENAI_BASE_URL")
            .unwrap_or_else(|_| "https://api.openai.com/v1".into()),
        env_key: Some("OPENAI_API_KEY".into()),
        wire_api: WireApi::Responses,
        query_params: BTreeMap::new(),
        http_headers: BTreeMap::new(),
        request_max_retries: None,
        stream_max_retries: None,
        stream_idle_timeout_ms: None,
    };
    let ollama = ModelProviderInfo {
        name: "Ollama".into(),
        base_url: "http://localhost:11434/v1".into(),
        env_key: None,
        wire_api: WireApi::Chat,
        ..openai.clone()
    };
    BTreeMap::from([("openai".into(), openai), ("ollama".into(), ollama)])
}
