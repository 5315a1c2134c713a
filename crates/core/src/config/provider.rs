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

/// A provider's API key is not in the environment (unset, or empty).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{variables} is not set; provider `{provider}` reads its API key from it")]
pub struct MissingApiKey {
    /// The variables the key is read from, as a user reads them (`A or B`).
    pub variables: String,
    /// The provider's display name.
    pub provider: String,
}

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
    /// A variable read before `env_key` when set (`CODEX_API_KEY` for the built-in OpenAI
    /// provider, as Codex and its SDK set it); not a config key.
    #[serde(skip)]
    pub preferred_env_key: Option<String>,
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

    /// The bearer token from `preferred_env_key` or else `env_key`: `None` for a provider
    /// that needs no key, an error when its key is not in the environment.
    pub fn api_key(&self) -> Result<Option<String>, MissingApiKey> {
        let Some(var) = &self.env_key else {
            return Ok(None);
        };
        let set = |var: &str| std::env::var(var).ok().filter(|v| !v.trim().is_empty());
        if let Some(key) = self.preferred_env_key.as_deref().and_then(set) {
            return Ok(Some(key));
        }
        set(var).map(Some).ok_or_else(|| MissingApiKey {
            variables: self.key_variables(),
            provider: self.name.clone(),
        })
    }

    /// The variables the API key is read from, as a user reads them:
    /// `CODEX_API_KEY or OPENAI_API_KEY`.
    pub fn key_variables(&self) -> String {
        self.preferred_env_key
            .iter()
            .chain(&self.env_key)
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(" or ")
    }
}

/// The built-in OpenAI provider's endpoint unless `openai_base_url` or `OPENAI_BASE_URL` says otherwise.
pub const OPENAI_BASE_URL: &str = "https://api.openai.com/v1";

/// The providers every config has without declaring them. `openai_base_url` (the
/// config key), else `$OPENAI_BASE_URL`, points the built-in OpenAI provider elsewhere.
pub fn built_in_providers(openai_base_url: Option<&str>) -> BTreeMap<String, ModelProviderInfo> {
    let base_url = openai_base_url
        .map(str::to_string)
        .or_else(|| std::env::var("OPENAI_BASE_URL").ok())
        .filter(|url| !url.trim().is_empty())
        .unwrap_or_else(|| OPENAI_BASE_URL.into());
    let openai = ModelProviderInfo {
        name: "OpenAI".into(),
        base_url,
        env_key: Some("OPENAI_API_KEY".into()),
        preferred_env_key: Some("CODEX_API_KEY".into()),
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
        preferred_env_key: None,
        wire_api: WireApi::Chat,
        ..openai.clone()
    };
    BTreeMap::from([("openai".into(), openai), ("ollama".into(), ollama)])
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn a_key_missing_from_the_environment_is_an_error_naming_every_variable() {
        let mut provider = built_in_providers(None).remove("openai").unwrap();
        provider.preferred_env_key = Some("DEPUTY_PROVIDER_TEST_PREFERRED_NEVER_SET".into());
        provider.env_key = Some("DEPUTY_PROVIDER_TEST_KEY_NEVER_SET".into());
        let err = provider.api_key().unwrap_err();
        let variables =
            "DEPUTY_PROVIDER_TEST_PREFERRED_NEVER_SET or DEPUTY_PROVIDER_TEST_KEY_NEVER_SET";
        assert_eq!(
            err,
            MissingApiKey {
                variables: variables.into(),
                provider: provider.name.clone(),
            }
        );
        assert_eq!(
            err.to_string(),
            format!(
                "{variables} is not set; provider `{}` reads its API key from it",
                provider.name
            )
        );
        provider.env_key = None;
        assert_eq!(provider.api_key(), Ok(None), "a provider that needs no key");
    }
}
