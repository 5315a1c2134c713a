//! The HTTP side of the mock model server: routing, recording and writing scripted bodies.

use std::collections::VecDeque;
use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes, to_bytes};
use axum::extract::{Request, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use axum::response::Response;
use futures::Stream;
use serde_json::json;

use super::Shared;
use super::recorded::RecordedRequest;
use super::response::{Fault, MockResponse};

/// Path of OpenAI's Responses API endpoint.
pub(crate) const RESPONSES_PATH: &str = "/v1/responses";
/// Path of OpenAI's Chat Completions endpoint.
pub(crate) const CHAT_PATH: &str = "/v1/chat/completions";
/// Largest request body the mock reads; far above any real model request.
const MAX_BODY_BYTES: usize = 256 * 1024 * 1024;

/// The router: every request goes through [`handle`], which does its own routing so that
/// unknown paths are recorded too.
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    Router::new().fallback(handle).with_state(shared)
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let body = match to_bytes(body, MAX_BODY_BYTES).await {
        Ok(bytes) => bytes,
        Err(err) => {
            return error_response(
                StatusCode::BAD_REQUEST,
                &format!("mock model server: could not read the request body: {err}"),
            );
        }
    };
    let received_at = Instant::now();
    let recorded = RecordedRequest::new(&parts, &body);
    let routed = parts.method == Method::POST
        && (recorded.path == RESPONSES_PATH || recorded.path == CHAT_PATH);
    let summary = recorded.summary();
    let (number, scripted) = shared.record(recorded, routed);
    if !routed {
        return error_response(
            StatusCode::NOT_FOUND,
            &format!(
                "mock model server: no route for {summary} (request #{number}); \
                 it serves POST {RESPONSES_PATH} and POST {CHAT_PATH}"
            ),
        );
    }
    match scripted {
        Some(scripted) => {
            shared.timings.received(number, received_at);
            render(scripted, Sent { shared, number }).await
        }
        None => error_response(
            StatusCode::BAD_REQUEST,
            &format!("mock model server: no scripted response left for request #{number}"),
        ),
    }
}

/// An OpenAI-shaped JSON error: `{"error":{"message":...}}`.
fn error_response(status: StatusCode, message: &str) -> Response {
    let body = json!({"error": {"message": message}}).to_string();
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// Notes in the server's timings when an answer's frames are handed to the connection.
struct Sent {
    shared: Arc<Shared>,
    number: usize,
}

impl Sent {
    /// Frame `index` (0-based) of the body is being handed over, now.
    fn frame(&self, index: usize) {
        self.shared.timings.frame_sent(self.number, index);
    }

    /// The whole answer has been handed over.
    fn finished(&self) {
        self.shared.timings.finished(self.number);
    }
}

async fn render(scripted: MockResponse, sent: Sent) -> Response {
    if !scripted.delay_before.is_zero() {
        tokio::time::sleep(scripted.delay_before).await;
    }
    let Ok(status) = StatusCode::from_u16(scripted.status) else {
        return error_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            &format!(
                "mock model server: scripted status {} is not a valid HTTP status",
                scripted.status
            ),
        );
    };
    let headers = match response_headers(&scripted) {
        Ok(headers) => headers,
        Err(message) => return error_response(StatusCode::INTERNAL_SERVER_ERROR, &message),
    };
    let body = if scripted.streamed {
        Body::from_stream(frame_stream(
            scripted.frames,
            scripted.fault,
            scripted.delay_between,
            sent,
        ))
    } else {
        // The whole body is in memory and goes out as soon as the response is returned.
        sent.finished();
        Body::from(scripted.frames.concat())
    };
    let mut response = Response::new(body);
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    response
}

/// Default headers for the body kind, overridden by the scripted ones of the same name.
fn response_headers(scripted: &MockResponse) -> Result<HeaderMap, String> {
    let mut scripted_headers = Vec::with_capacity(scripted.headers.len());
    for (name, value) in &scripted.headers {
        let header_name = HeaderName::try_from(name.as_str()).map_err(|err| {
            format!("mock model server: scripted header name {name:?} is invalid: {err}")
        })?;
        let header_value = HeaderValue::try_from(value.as_str()).map_err(|err| {
            format!("mock model server: scripted header value {value:?} is invalid: {err}")
        })?;
        scripted_headers.push((header_name, header_value));
    }
    let mut headers = HeaderMap::new();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static(scripted.content_type),
    );
    if scripted.content_type == "text/event-stream" {
        headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    }
    for (name, _) in &scripted_headers {
        headers.remove(name);
    }
    for (name, value) in scripted_headers {
        headers.append(name, value);
    }
    Ok(headers)
}

/// How a body stream behaves once its frames are sent.
enum Ending {
    Clean,
    Disconnect,
    Stall,
}

struct FrameState {
    frames: VecDeque<String>,
    count: usize,
    gap: Duration,
    ending: Option<Ending>,
    sent: Sent,
}

/// The body as a stream of frames, paced by `gap` and ended as `fault` says.
fn frame_stream(
    frames: Vec<String>,
    fault: Option<Fault>,
    gap: Duration,
    sent: Sent,
) -> impl Stream<Item = Result<Bytes, io::Error>> + Send + 'static {
    let (limit, ending) = match fault {
        None => (frames.len(), Ending::Clean),
        Some(Fault::DisconnectAfter(n)) => (n, Ending::Disconnect),
        Some(Fault::StallAfter(n)) => (n, Ending::Stall),
    };
    let state = FrameState {
        frames: frames.into_iter().take(limit).collect(),
        count: 0,
        gap,
        ending: Some(ending),
        sent,
    };
    futures::stream::unfold(state, |mut state| async move {
        if let Some(frame) = state.frames.pop_front() {
            if state.count > 0 && !state.gap.is_zero() {
                tokio::time::sleep(state.gap).await;
            }
            state.sent.frame(state.count);
            state.count += 1;
            return Some((Ok(Bytes::from(frame)), state));
        }
        match state.ending.take()? {
            Ending::Clean => {
                // Polled again only once the last frame was taken by the connection.
                state.sent.finished();
                None
            }
            Ending::Disconnect => {
                // hyper drops the connection on a body error without flushing what it has
                // buffered; returning Pending once makes it flush the frames sent so far.
                tokio::task::yield_now().await;
                let err = io::Error::new(
                    io::ErrorKind::ConnectionAborted,
                    "mock model server: scripted disconnect",
                );
                Some((Err(err), state))
            }
            Ending::Stall => {
                // Never resumes: the connection task is dropped with the server's runtime.
                std::future::pending::<()>().await;
                None
            }
        }
    })
}
