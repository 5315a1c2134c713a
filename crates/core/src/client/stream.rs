//! The response body as a stream of [`ResponseEvent`]s: SSE framing, the
//! idle watchdog, and the hand-off to the wire API's decoder.

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use deputy_protocol::WireApi;
use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::stream::{BoxStream, Stream, StreamExt};
use serde_json::Value;

use super::chat::ChatDecoder;
use super::model_client::describe;
use super::responses::ResponsesDecoder;
use super::{ModelError, ResponseEvent};

/// The events of one model response, read from the body as it arrives.
///
/// Ends after `Completed`, or after the first error.
pub struct ResponseStream {
    inner: BoxStream<'static, Result<ResponseEvent, ModelError>>,
}

impl fmt::Debug for ResponseStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseStream").finish_non_exhaustive()
    }
}

impl Stream for ResponseStream {
    type Item = Result<ResponseEvent, ModelError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

impl ResponseStream {
    /// Reads `response`'s body as the given wire API's event stream.
    pub(super) fn new(response: reqwest::Response, wire_api: WireApi, idle: Duration) -> Self {
        let decoder = match wire_api {
            WireApi::Responses => Decoder::Responses(ResponsesDecoder),
            WireApi::Chat => Decoder::Chat(ChatDecoder::default()),
        };
        let state = State {
            events: watch_idle(response.bytes_stream(), idle)
                .eventsource()
                .boxed(),
            decoder,
            pending: VecDeque::new(),
            finished: false,
        };
        let inner = futures::stream::unfold(state, |mut state| async move {
            let item = state.next().await?;
            Some((item, state))
        })
        .boxed();
        Self { inner }
    }
}

/// The body failed or went silent; the text says which.
#[derive(Debug)]
struct BodyBroke(String);

impl fmt::Display for BodyBroke {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

type SseEvents = BoxStream<'static, Result<Event, EventStreamError<BodyBroke>>>;

struct State {
    events: SseEvents,
    decoder: Decoder,
    pending: VecDeque<Result<ResponseEvent, ModelError>>,
    finished: bool,
}

impl State {
    async fn next(&mut self) -> Option<Result<ResponseEvent, ModelError>> {
        loop {
            if let Some(item) = self.pending.pop_front() {
                return Some(item);
            }
            if self.finished {
                return None;
            }
            let step = match self.events.next().await {
                Some(Ok(event)) => self.decoder.event(&event),
                Some(Err(error)) => Err(ModelError::Stream(match error {
                    EventStreamError::Transport(BodyBroke(reason)) => reason,
                    EventStreamError::Utf8(e) => format!("event stream is not UTF-8: {e}"),
                    EventStreamError::Parser(e) => format!("unparseable event stream: {e}"),
                })),
                None => self.decoder.end_of_body().map(Decoded::Done),
            };
            match step {
                Ok(Decoded::Events(events)) => self.pending.extend(events.into_iter().map(Ok)),
                Ok(Decoded::Done(events)) => {
                    self.pending.extend(events.into_iter().map(Ok));
                    // Stop reading: anything after completion is not ours to interpret.
                    self.finished = true;
                }
                Err(error) => {
                    self.pending.push_back(Err(error));
                    self.finished = true;
                }
            }
        }
    }
}

/// Passes the body's chunks through, failing once no chunk arrived for `idle`.
fn watch_idle<B, S>(
    body: S,
    idle: Duration,
) -> impl Stream<Item = Result<B, BodyBroke>> + Send + 'static
where
    S: Stream<Item = reqwest::Result<B>> + Send + 'static,
    B: Send + 'static,
{
    futures::stream::unfold(Some(body.boxed()), move |body| async move {
        let mut body = body?;
        match tokio::time::timeout(idle, body.next()).await {
            Ok(Some(Ok(chunk))) => Some((Ok(chunk), Some(body))),
            Ok(Some(Err(error))) => Some((Err(BodyBroke(describe(&error))), None)),
            Ok(None) => None,
            Err(_) => {
                let reason = format!("idle timeout: no data for {} ms", idle.as_millis());
                Some((Err(BodyBroke(reason)), None))
            }
        }
    })
}

/// What a decoder made of one SSE event.
#[derive(Debug)]
pub(super) enum Decoded {
    /// Events to pass on; the response continues.
    Events(Vec<ResponseEvent>),
    /// The final events; the response is complete.
    Done(Vec<ResponseEvent>),
}

/// The wire API's event interpreter.
#[derive(Debug)]
enum Decoder {
    Responses(ResponsesDecoder),
    Chat(ChatDecoder),
}

impl Decoder {
    fn event(&mut self, event: &Event) -> Result<Decoded, ModelError> {
        match self {
            Self::Responses(decoder) => decoder.event(event),
            Self::Chat(decoder) => decoder.event(event),
        }
    }

    fn end_of_body(&mut self) -> Result<Vec<ResponseEvent>, ModelError> {
        match self {
            Self::Responses(decoder) => decoder.end_of_body(),
            Self::Chat(decoder) => decoder.end_of_body(),
        }
    }
}

/// An event's data as JSON; malformed data names the event it came in.
pub(super) fn parse_json(event: &Event) -> Result<Value, ModelError> {
    serde_json::from_str(&event.data)
        .map_err(|e| ModelError::Stream(format!("malformed JSON in `{}` event: {e}", event.event)))
}
