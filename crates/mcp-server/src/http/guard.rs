//! What every HTTP request passes before rmcp sees it: [`Access`] (401 without the
//! bearer token, 403 from a foreign browser origin), then the body, read within the
//! stdio limit. A body over it is discarded as it streams, its edges kept, and answered
//! 413 with the JSON-RPC error stdio would give, under the request's id.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use deputy_jsonrpc::access::Access;
use deputy_jsonrpc::{Collector, Frame};
use futures::StreamExt;
use http::{HeaderValue, StatusCode, header};

use crate::compat::frames::{Inbound, answer_oversize};

/// The guard's settings.
#[derive(Debug)]
pub(crate) struct Guard {
    access: Access,
    limit: usize,
}

impl Guard {
    /// Lets in whom `access` allows, with bodies of up to `limit` bytes.
    pub(crate) fn new(access: Access, limit: usize) -> Self {
        Self { access, limit }
    }
}

/// The middleware: refuses, answers an oversize body, or passes the request on with
/// its body already read.
pub(crate) async fn check(
    State(guard): State<Arc<Guard>>,
    request: Request,
    next: Next,
) -> Response {
    if let Err(refusal) = guard.access.check(request.headers()) {
        tracing::debug!("refused an HTTP request: {}", refusal.message());
        let mut response = (refusal.status(), refusal.message()).into_response();
        if refusal.status() == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        return response;
    }
    let (parts, body) = request.into_parts();
    let mut collector = Collector::new(guard.limit);
    let mut chunks = body.into_data_stream();
    while let Some(chunk) = chunks.next().await {
        match chunk {
            Ok(bytes) => collector.push(&bytes),
            Err(err) => {
                return (
                    StatusCode::BAD_REQUEST,
                    format!("Bad Request: reading the body failed: {err}"),
                )
                    .into_response();
            }
        }
    }
    match collector.finish() {
        Frame::Whole(bytes) => {
            next.run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        Frame::Oversize(oversize) => match answer_oversize(&oversize, guard.limit) {
            Inbound::Answer(answer) => (
                StatusCode::PAYLOAD_TOO_LARGE,
                [(header::CONTENT_TYPE, "application/json")],
                answer,
            )
                .into_response(),
            // A response too large to read: nobody waits for an answer to it.
            Inbound::Message(_) | Inbound::Ignore => StatusCode::PAYLOAD_TOO_LARGE.into_response(),
        },
    }
}
