//! A request as the mock model server received it.

use std::collections::BTreeMap;

use axum::http::request::Parts;
use serde_json::Value;

/// One HTTP request received by the mock model server, kept for assertions.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// The HTTP method, e.g. `POST`.
    pub method: String,
    /// The path without the query string, e.g. `/v1/responses`.
    pub path: String,
    /// The raw query string without `?`, when there was one.
    pub query: Option<String>,
    /// Headers by lowercase name; repeated headers are joined with `", "`.
    pub headers: BTreeMap<String, String>,
    /// The body parsed as JSON; `Value::Null` when empty or not JSON (see `raw_body`).
    pub body: Value,
    /// The body as text (invalid UTF-8 replaced), whatever it contained.
    pub raw_body: String,
}

impl RecordedRequest {
    /// Records the request head `parts` and its complete `body`.
    pub(crate) fn new(parts: &Parts, body: &[u8]) -> Self {
        let mut headers: BTreeMap<String, String> = BTreeMap::new();
        for (name, value) in &parts.headers {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            headers
                .entry(name.as_str().to_ascii_lowercase())
                .and_modify(|joined| {
                    joined.push_str(", ");
                    joined.push_str(&value);
                })
                .or_insert(value);
        }
        Self {
            method: parts.method.as_str().to_owned(),
            path: parts.uri.path().to_owned(),
            query: parts.uri.query().map(str::to_owned),
            headers,
            body: serde_json::from_slice(body).unwrap_or(Value::Null),
            raw_body: String::from_utf8_lossy(body).into_owned(),
        }
    }

    /// The value of header `name`, looked up case-insensitively.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }

    /// A one-line summary (`POST /v1/responses`) for diagnostics.
    pub fn summary(&self) -> String {
        match &self.query {
            Some(query) => format!("{} {}?{}", self.method, self.path, query),
            None => format!("{} {}", self.method, self.path),
        }
    }
}
