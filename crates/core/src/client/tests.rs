//! The model client against a real local HTTP server speaking both wire APIs.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use deputy_protocol::{ResponseItem, WireApi};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::*;
use crate::config::ModelProviderInfo;

mod events;
mod failures;
mod requests;

/// How the test server answers one request.
enum Reply {
    /// 200 with this SSE text as the whole body.
    Sse(String),
    /// 200 with this SSE text, then the connection drops mid-body.
    SseThenDrop(String),
    /// 200 with this SSE text, then silence on an open connection.
    SseThenStall(String),
    /// No answer at all on an open connection.
    Silence,
    /// An error status with extra headers and a body.
    Status(u16, Vec<(&'static str, &'static str)>, &'static str),
}

/// One request as the server received it.
struct Received {
    /// Path and query.
    target: String,
    /// Lower-cased names.
    headers: BTreeMap<String, String>,
    body: Value,
}

struct TestServer {
    base_url: String,
    received: Arc<Mutex<Vec<Received>>>,
}

impl TestServer {
    /// Serves `replies` in order, one request per connection.
    async fn start(replies: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let received = Arc::new(Mutex::new(Vec::new()));
        let replies = Arc::new(Mutex::new(VecDeque::from(replies)));
        let log = received.clone();
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let (log, replies) = (log.clone(), replies.clone());
                tokio::spawn(async move { answer(socket, &log, &replies).await });
            }
        });
        Self { base_url, received }
    }

    fn received(&self) -> std::sync::MutexGuard<'_, Vec<Received>> {
        self.received.lock().unwrap()
    }
}

async fn answer(
    mut socket: TcpStream,
    log: &Mutex<Vec<Received>>,
    replies: &Mutex<VecDeque<Reply>>,
) {
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        match socket.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
        }
    };
    let head = String::from_utf8_lossy(&raw[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let target = lines.next().unwrap().split(' ').nth(1).unwrap().to_owned();
    let headers: BTreeMap<String, String> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .map_or(0, |v| v.parse().unwrap());
    while raw.len() < head_end + length {
        let n = socket.read(&mut buf).await.unwrap();
        raw.extend_from_slice(&buf[..n]);
    }
    let body = serde_json::from_slice(&raw[head_end..head_end + length]).unwrap();
    log.lock().unwrap().push(Received {
        target,
        headers,
        body,
    });

    let reply = replies
        .lock()
        .unwrap()
        .pop_front()
        .expect("more requests than replies");
    let sse_head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                    transfer-encoding: chunked\r\nconnection: close\r\n\r\n";
    let chunk = |text: &str| format!("{:x}\r\n{text}\r\n", text.len());
    let out = match &reply {
        Reply::Sse(text) => format!("{sse_head}{}0\r\n\r\n", chunk(text)),
        Reply::SseThenDrop(text) | Reply::SseThenStall(text) => {
            format!("{sse_head}{}", chunk(text))
        }
        Reply::Silence => String::new(),
        Reply::Status(status, extra, body) => {
            let extra: String = extra.iter().map(|(n, v)| format!("{n}: {v}\r\n")).collect();
            format!(
                "HTTP/1.1 {status} Whatever\r\ncontent-length: {}\r\nconnection: close\r\n{extra}\r\n{body}",
                body.len()
            )
        }
    };
    socket.write_all(out.as_bytes()).await.unwrap();
    socket.flush().await.unwrap();
    if let Reply::SseThenStall(_) | Reply::Silence = reply {
        // Hold the connection open without a byte more.
        std::future::pending::<()>().await;
    }
}

/// Responses-style SSE: `event:` line plus JSON data carrying the same `type`.
fn responses_sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|event| {
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap()
            )
        })
        .collect()
}

/// Chat-style SSE: data lines only, closed by `[DONE]`.
fn chat_sse(chunks: &[Value]) -> String {
    let mut text: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    text.push_str("data: [DONE]\n\n");
    text
}

fn completed(id: &str) -> Value {
    json!({"type": "response.completed", "response": {"id": id, "usage": {
        "input_tokens": 12, "input_tokens_details": {"cached_tokens": 4},
        "output_tokens": 7, "output_tokens_details": {"reasoning_tokens": 2}, "total_tokens": 19}}})
}

fn provider(base_url: &str, wire_api: WireApi) -> ModelProviderInfo {
    ModelProviderInfo {
        name: "test".into(),
        base_url: base_url.into(),
        env_key: None,
        preferred_env_key: None,
        wire_api,
        query_params: BTreeMap::new(),
        http_headers: BTreeMap::new(),
        request_max_retries: Some(0),
        stream_max_retries: Some(0),
        stream_idle_timeout_ms: Some(10_000),
    }
}

fn prompt(input: Vec<ResponseItem>) -> Prompt {
    Prompt {
        instructions: "Be brief.".into(),
        input,
        tools: vec![ToolSpec::function(
            "shell",
            "Runs a command.",
            json!({"type": "object", "properties": {"command": {"type": "array"}}}),
        )]
        .into(),
        parallel_tool_calls: false,
        ..Prompt::default()
    }
}

/// What one `stream` call produced: the request error, or every stream item.
struct Outcome {
    result: Result<Vec<Result<ResponseEvent, ModelError>>, ModelError>,
    retries: Vec<RetryNotice>,
}

impl Outcome {
    fn events(self) -> Vec<Result<ResponseEvent, ModelError>> {
        self.result.expect("the request should succeed")
    }

    fn ok_events(self) -> Vec<ResponseEvent> {
        self.events()
            .into_iter()
            .map(|e| e.expect("no stream error"))
            .collect()
    }

    fn error(self) -> ModelError {
        self.result.expect_err("the request should fail")
    }
}

async fn run(provider: ModelProviderInfo, prompt: &Prompt) -> Outcome {
    let client = ModelClient::new(provider, "test-model".into()).unwrap();
    let retries = Mutex::new(Vec::new());
    let record = |notice: RetryNotice| retries.lock().unwrap().push(notice);
    let result = match client.stream(prompt, &record).await {
        Ok(stream) => Ok(stream.collect().await),
        Err(error) => Err(error),
    };
    Outcome {
        result,
        retries: retries.into_inner().unwrap(),
    }
}

#[test]
fn errors_are_classified_as_codex_classifies_them() {
    let http = |status| ModelError::Http {
        status,
        message: "no".into(),
    };
    let none = None;
    for (error, expected) in [
        (http(500), CodexErrorInfo::InternalServerError),
        (
            http(429),
            CodexErrorInfo::ResponseTooManyFailedAttempts {
                http_status_code: Some(429),
            },
        ),
        (http(401), CodexErrorInfo::Other),
        (http(503), CodexErrorInfo::Other),
        (
            ModelError::Connect("refused".into()),
            CodexErrorInfo::HttpConnectionFailed {
                http_status_code: none,
            },
        ),
        (
            ModelError::Stream("cut".into()),
            CodexErrorInfo::ResponseStreamDisconnected {
                http_status_code: none,
            },
        ),
        (
            ModelError::ContextWindowExceeded("long".into()),
            CodexErrorInfo::ContextWindowExceeded,
        ),
        (ModelError::Failed("x".into()), CodexErrorInfo::Other),
    ] {
        assert_eq!(error.codex_error_info(), expected, "{error}");
    }
    assert_eq!(http(503).http_status(), Some(503));
    assert_eq!(ModelError::Connect("x".into()).http_status(), None);
}
