//! [`ModelClient`]: builds the request, sends it with retries, and hands the
//! body to [`ResponseStream`].

use std::sync::{Once, OnceLock};
use std::time::{Duration, SystemTime};

use deputy_protocol::WireApi;
use futures::StreamExt;
use reqwest::Url;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use tokio_util::bytes::Bytes;

use super::retry::{backoff, is_retryable_status, requested_delay};
use super::stream::ResponseStream;
use super::{ModelError, Prompt, RetryNotice, chat, responses, says_context_too_long};
use crate::config::ModelProviderInfo;

/// How long establishing a connection may take; the response itself has no
/// overall limit because streams run for minutes.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How much of an error body is kept as the message.
const ERROR_MESSAGE_CAP: usize = 2 * 1024;
/// How much of an error body is read looking for a JSON error object.
const ERROR_BODY_READ_CAP: usize = 64 * 1024;

/// A connection to one model on one provider.
#[derive(Debug, Clone)]
pub struct ModelClient {
    provider: ModelProviderInfo,
    model: String,
    http: reqwest::Client,
    /// The wire API's endpoint with the provider's query parameters.
    endpoint: Url,
    /// The provider's own headers, checked; [`ModelClient::headers`] adds the fixed ones.
    /// (Kept as a list: a `HeaderMap` costs every idle thread most of a kilobyte.)
    provider_headers: Vec<(HeaderName, HeaderValue)>,
}

impl ModelClient {
    /// Builds a client for one provider and model. No network I/O here.
    pub fn new(provider: ModelProviderInfo, model: String) -> Result<Self, ModelError> {
        let endpoint = endpoint(&provider)?;
        let provider_headers = provider_headers(&provider)?;
        let http = http_client(&endpoint)?;
        Ok(Self {
            provider,
            model,
            http,
            endpoint,
            provider_headers,
        })
    }

    /// The headers every request carries: the fixed SSE/JSON ones, then the provider's.
    fn headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::with_capacity(2 + self.provider_headers.len());
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        for (name, value) in &self.provider_headers {
            headers.insert(name.clone(), value.clone());
        }
        headers
    }

    /// The provider this client talks to.
    pub fn provider(&self) -> &ModelProviderInfo {
        &self.provider
    }

    /// The model every request names.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The JSON body a request for `prompt` carries.
    pub fn request_body(&self, prompt: &Prompt) -> Value {
        match self.provider.wire_api {
            WireApi::Responses => responses::request_body(&self.model, prompt),
            WireApi::Chat => chat::request_body(&self.model, prompt),
        }
    }

    /// The bytes a request for `prompt` sends: [`ModelClient::request_body`], serialized.
    pub fn request_bytes(&self, prompt: &Prompt) -> Bytes {
        match self.provider.wire_api {
            WireApi::Responses => Bytes::from(responses::request_bytes(&self.model, prompt)),
            WireApi::Chat => Bytes::from(chat::request_body(&self.model, prompt).to_string()),
        }
    }

    /// Where requests go and the headers they carry, for showing them (nothing is sent):
    /// every header value but `accept` and `content-type`, every query value and any
    /// password in the URL are replaced, since any of them may hold a secret.
    pub fn shown_request_head(&self) -> (String, Vec<(String, String)>) {
        const HIDDEN: &str = "[redacted]";
        let mut headers: Vec<(String, String)> = self
            .headers()
            .iter()
            .map(|(name, value)| {
                let shown = if *name == ACCEPT || *name == CONTENT_TYPE {
                    String::from_utf8_lossy(value.as_bytes()).into_owned()
                } else {
                    HIDDEN.to_string()
                };
                (name.as_str().to_string(), shown)
            })
            .collect();
        if let Ok(Some(_)) = self.provider.api_key() {
            headers.push((
                AUTHORIZATION.as_str().to_string(),
                format!("Bearer {HIDDEN}"),
            ));
        }
        let mut url = self.endpoint.clone();
        let names: Vec<String> = url
            .query_pairs()
            .map(|(name, _)| name.into_owned())
            .collect();
        if !names.is_empty() {
            url.query_pairs_mut()
                .clear()
                .extend_pairs(names.iter().map(|name| (name, HIDDEN)));
        }
        if url.password().is_some() {
            // Only fails for URLs that cannot have a password, which this one has.
            let _ = url.set_password(Some(HIDDEN));
        }
        (url.to_string(), headers)
    }

    /// Sends one request and returns the event stream.
    ///
    /// Connect errors, 429 and 5xx are retried up to the provider's
    /// `request_max_retries`, with exponential backoff or the delay the server
    /// asked for; `on_retry` hears about each retry before its wait.
    pub async fn stream(
        &self,
        prompt: &Prompt,
        on_retry: &(dyn Fn(RetryNotice) + Send + Sync),
    ) -> Result<ResponseStream, ModelError> {
        let mut headers = self.headers();
        if let Some(key) = self
            .provider
            .api_key()
            .map_err(|e| ModelError::Config(e.to_string()))?
        {
            let value = HeaderValue::try_from(format!("Bearer {}", key.trim())).map_err(|_| {
                ModelError::Config("the API key is not a valid header value".into())
            })?;
            headers.insert(AUTHORIZATION, value);
        }
        // One buffer for every attempt, which reqwest holds by reference count: while many
        // sessions wait for a connection, each keeps its request once rather than twice.
        let body = self.request_bytes(prompt);
        let max_retries = self.provider.request_max_retries();
        let idle = self.provider.stream_idle_timeout();

        let mut attempt = 0;
        loop {
            let (error, requested_delay) = match self.attempt(&headers, &body, idle).await {
                Ok(response) => {
                    return Ok(ResponseStream::new(response, self.provider.wire_api, idle));
                }
                Err(Failure::Final(error)) => return Err(error),
                Err(Failure::Retryable(error, delay)) => (error, delay),
            };
            if attempt >= max_retries {
                return Err(error);
            }
            attempt += 1;
            let delay = requested_delay.unwrap_or_else(|| backoff(attempt));
            // The engine reports retries as `stream_error` events; this is for logs only.
            tracing::debug!(attempt, max_retries, ?delay, %error, "retrying model request");
            on_retry(RetryNotice {
                attempt,
                max_retries,
                delay,
                reason: error.to_string(),
                http_status: error.http_status(),
            });
            tokio::time::sleep(delay).await;
        }
    }

    /// Sends the request once; a success status hands back the response unread.
    async fn attempt(
        &self,
        headers: &HeaderMap,
        body: &Bytes,
        idle: Duration,
    ) -> Result<reqwest::Response, Failure> {
        let request = self
            .http
            .post(self.endpoint.clone())
            .headers(headers.clone())
            .body(body.clone());
        let response = match tokio::time::timeout(idle, request.send()).await {
            Ok(Ok(response)) => response,
            Ok(Err(error)) => {
                return Err(Failure::Retryable(
                    ModelError::Connect(format!("{}: {}", self.endpoint, root_cause(&error))),
                    None,
                ));
            }
            // Silence before the headers is the same stall as silence
            // mid-body, and the caller retries it the same way.
            Err(_) => {
                return Err(Failure::Final(ModelError::Stream(format!(
                    "idle timeout: no response for {} ms",
                    idle.as_millis()
                ))));
            }
        };
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let delay = requested_delay(response.headers(), SystemTime::now());
        let body = error_body(response, idle).await;
        // Too long for the model: the engine compacts the history and tries again.
        if matches!(status.as_u16(), 400 | 413)
            && says_context_too_long(body.code.as_deref(), &body.message)
        {
            return Err(Failure::Final(ModelError::ContextWindowExceeded(
                body.message,
            )));
        }
        let error = ModelError::Http {
            status: status.as_u16(),
            message: body.message,
        };
        if is_retryable_status(status) {
            Err(Failure::Retryable(error, delay))
        } else {
            Err(Failure::Final(error))
        }
    }
}

/// Why one attempt failed.
enum Failure {
    /// Another attempt may succeed; carries the delay the server asked for.
    Retryable(ModelError, Option<Duration>),
    /// Not retried here: another attempt would fail the same way, or the
    /// caller owns the retry (a stall).
    Final(ModelError),
}

/// `{base_url}/responses` or `{base_url}/chat/completions`, with query parameters.
fn endpoint(provider: &ModelProviderInfo) -> Result<Url, ModelError> {
    let path = match provider.wire_api {
        WireApi::Responses => "responses",
        WireApi::Chat => "chat/completions",
    };
    let base = provider.base_url.trim().trim_end_matches('/');
    let mut url = Url::parse(&format!("{base}/{path}")).map_err(|e| {
        ModelError::Config(format!(
            "provider `{}` has an invalid base_url `{}`: {e}",
            provider.name, provider.base_url
        ))
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ModelError::Config(format!(
            "provider `{}` has base_url `{}`; only http and https are supported",
            provider.name, provider.base_url
        )));
    }
    if !provider.query_params.is_empty() {
        url.query_pairs_mut().extend_pairs(&provider.query_params);
    }
    Ok(url)
}

fn provider_headers(
    provider: &ModelProviderInfo,
) -> Result<Vec<(HeaderName, HeaderValue)>, ModelError> {
    let mut headers = Vec::with_capacity(provider.http_headers.len());
    for (name, value) in &provider.http_headers {
        let invalid = || {
            ModelError::Config(format!(
                "provider `{}` has an invalid HTTP header `{name}`",
                provider.name
            ))
        };
        let name = HeaderName::try_from(name.as_str()).map_err(|_| invalid())?;
        let value = HeaderValue::try_from(value.as_str()).map_err(|_| invalid())?;
        headers.push((name, value));
    }
    Ok(headers)
}

/// One HTTP client for the whole process: every thread's requests share its
/// connection pool, and the system's CA certificates are read once, not per
/// session (reading them was most of a new session's CPU cost).
fn http_client(endpoint: &Url) -> Result<reqwest::Client, ModelError> {
    static WITH_TLS: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    static PLAIN_HTTP: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    install_crypto_provider();
    let builder = || reqwest::Client::builder().connect_timeout(CONNECT_TIMEOUT);
    let with_tls = WITH_TLS.get_or_init(|| builder().build().map_err(|e| describe(&e)));
    match with_tls {
        Ok(client) => Ok(client.clone()),
        // The TLS setup needs the system's CA certificates. A plain-http
        // provider (a local server in a minimal container) has no use for them,
        // so it gets a client that trusts no certificate instead of an error.
        Err(error) if endpoint.scheme() == "http" => {
            tracing::debug!(%error, "TLS setup failed; plain http only");
            PLAIN_HTTP
                .get_or_init(|| {
                    builder()
                        .tls_certs_only(Vec::new())
                        .build()
                        .map_err(|e| describe(&e))
                })
                .clone()
                .map_err(|e| ModelError::Config(format!("cannot set up HTTP: {e}")))
        }
        Err(error) => Err(ModelError::Config(format!("cannot set up HTTPS: {error}"))),
    }
}

/// reqwest is built without a default crypto backend; deputy uses ring.
pub(crate) fn install_crypto_provider() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // Err means another part of the process already installed one, which serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}

/// What an error response says.
struct ErrorBody {
    /// `error.message` of a JSON body, else the body text, trimmed and capped.
    message: String,
    /// `error.code` (or `error.type`) of a JSON body.
    code: Option<String>,
}

/// The provider's message and code from an error response.
async fn error_body(response: reqwest::Response, idle: Duration) -> ErrorBody {
    let status = response.status();
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Ok(Some(Ok(chunk))) = tokio::time::timeout(idle, chunks.next()).await {
        body.extend_from_slice(&chunk);
        if body.len() >= ERROR_BODY_READ_CAP {
            break;
        }
    }
    let json = serde_json::from_slice::<Value>(&body).ok();
    let error = json.as_ref().and_then(|json| json.get("error"));
    let from_json = error.and_then(|error| {
        let message = error.get("message").or(Some(error))?;
        message.as_str().map(str::to_owned)
    });
    let code = error.and_then(|error| {
        ["code", "type"]
            .iter()
            .find_map(|field| error.get(field).and_then(Value::as_str))
            .map(str::to_owned)
    });
    let message = from_json.unwrap_or_else(|| {
        let text = String::from_utf8_lossy(&body);
        truncate(text.trim(), ERROR_MESSAGE_CAP).to_owned()
    });
    let message = if message.is_empty() {
        status.canonical_reason().unwrap_or("no message").to_owned()
    } else {
        message
    };
    ErrorBody { message, code }
}

/// The longest prefix of `text` within `max` bytes that ends on a character boundary.
fn truncate(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// An error with its chain of causes, which is where reqwest keeps the useful part.
/// The innermost cause of `error`, as the user can act on it ("Connection refused"),
/// without the layers of request and connector context above it.
fn root_cause(error: &dyn std::error::Error) -> String {
    let mut root = error;
    while let Some(cause) = root.source() {
        root = cause;
    }
    let text = root.to_string();
    // `(os error 111)` says nothing the words before it do not.
    match text.rsplit_once(" (os error ") {
        Some((words, code)) if code.ends_with(')') => words.to_string(),
        _ => text,
    }
}

pub(super) fn describe(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncate_keeps_whole_characters() {
        assert_eq!(truncate("héllo", 2), "h");
        assert_eq!(truncate("héllo", 3), "hé");
        assert_eq!(truncate("abc", 10), "abc");
    }
}
