//! Resumable SSE streams over the thread's own event log: rmcp's [`EventStore`] seam,
//! implemented so that a client reconnecting with `Last-Event-ID` gets every later
//! message of its stream, however long the turn, without a second copy of the events.
//!
//! Each stream is an index of what it carried, in order: a `codex/event` is recorded as
//! the place of its log event (seq, and which of the Codex events made from it), told by
//! the call that sent it ([`LogTags`]), a conversation's `initial_state` as the seq it
//! runs through; anything else (the priming event, progress, elicitations, live
//! conversation events, the call's result) is kept as sent — rmcp already holds it
//! behind an `Arc`. An event id is `<stream>/<position>/<seq>`: the stream (an
//! unguessable id rmcp made), the message's position in it, and the thread seq it stands
//! at. A resumed stream replays the index after that position, rebuilding each
//! `codex/event` and snapshot from the log (its window, or the rollout for older
//! events), then follows the index live until the call's result. A reader that stops
//! reading holds up only itself.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use deputy_core::{Subscription, ThreadManager};
use deputy_protocol::{Event, codex_events};
use rmcp::model::{JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::{
    EventId, EventStore, EventStoreError, EventStream, ServerSseMessage,
};
use serde_json::Value;
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

use crate::log_tags::{LogTags, SNAPSHOT};
use crate::server::read_snapshot;
use crate::wire::{self, CodexEvent, CodexEventParams, EventMeta};

/// Most messages a stream's index holds; the oldest go first (a stream that long-lived
/// is a conversation's, whose client resumes with recent ids).
const MAX_ENTRIES: usize = 65_536;
/// Messages a resumed stream may have on its way to the client.
const REPLAY_BUFFER: usize = 64;

/// Why a stream cannot be resumed.
#[derive(Debug, thiserror::Error)]
enum ResumeError {
    #[error("`{0}` is not an event id of this server")]
    Malformed(String),
    #[error("the stream of event `{0}` is unknown or has expired")]
    UnknownStream(String),
    #[error("event `{0}` is not one its stream still holds")]
    NotHeld(String),
}

/// One message of a stream.
#[derive(Debug, Clone)]
enum Entry {
    /// A `codex/event` of the call `origin` (an index into the stream's origins): the
    /// `part`-th Codex event of the log event `seq`.
    Log {
        origin: usize,
        seq: u64,
        part: usize,
    },
    /// A conversation's `initial_state`: its thread (the stream's `origin`) through `seq`.
    Snapshot { origin: usize, seq: u64 },
    /// Anything else, as sent (its id set).
    Kept(ServerSseMessage),
}

/// What a stream carried so far.
#[derive(Debug)]
struct StreamState {
    /// Position of `entries[0]`.
    base: usize,
    entries: VecDeque<Entry>,
    /// The calls (thread, request id) whose `codex/event`s it carried: one on a call's
    /// own stream, every call of the session on its standalone stream.
    origins: Vec<(String, Value)>,
    /// The seq of its newest entry from the log.
    last_seq: u64,
    /// Whether the call's result was stored: nothing follows it.
    ended: bool,
    touched: Instant,
}

impl StreamState {
    /// The index of `origin` among the stream's origins, added if new.
    fn origin(&mut self, origin: (String, Value)) -> usize {
        match self.origins.iter().position(|known| *known == origin) {
            Some(index) => index,
            None => {
                self.origins.push(origin);
                self.origins.len() - 1
            }
        }
    }
}

/// One stream's index, and a signal that it grew.
#[derive(Debug)]
struct StreamIndex {
    id: String,
    state: Mutex<StreamState>,
    grew: watch::Sender<usize>,
}

impl StreamIndex {
    fn state(&self) -> MutexGuard<'_, StreamState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn event_id(&self, position: usize, seq: u64) -> String {
        format!("{}/{position}/{seq}", self.id)
    }
}

/// The event store of a listening server.
#[derive(Debug)]
pub(crate) struct LogEvents {
    manager: Arc<ThreadManager>,
    tags: Arc<LogTags>,
    /// How long a stream's index outlives its last message (a session's idle timeout).
    keep: Duration,
    streams: Mutex<HashMap<String, Arc<StreamIndex>>>,
}

impl LogEvents {
    /// A store reading the threads of `manager`, told by `tags` where events came from,
    /// forgetting a stream `keep` after its last message.
    pub(crate) fn new(manager: Arc<ThreadManager>, tags: Arc<LogTags>, keep: Duration) -> Self {
        Self {
            manager,
            tags,
            keep,
            streams: Mutex::default(),
        }
    }

    fn streams(&self) -> MutexGuard<'_, HashMap<String, Arc<StreamIndex>>> {
        self.streams.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The index of `stream_id`, made (and old ones swept) on its first message.
    fn stream(&self, stream_id: &str) -> Arc<StreamIndex> {
        let mut streams = self.streams();
        if let Some(stream) = streams.get(stream_id) {
            return stream.clone();
        }
        let now = Instant::now();
        let keep = self.keep;
        streams.retain(|_, stream| now.duration_since(stream.state().touched) < keep);
        let stream = Arc::new(StreamIndex {
            id: stream_id.to_string(),
            state: Mutex::new(StreamState {
                base: 0,
                entries: VecDeque::new(),
                origins: Vec::new(),
                last_seq: 0,
                ended: false,
                touched: now,
            }),
            grew: watch::channel(0).0,
        });
        streams.insert(stream_id.to_string(), stream.clone());
        stream
    }

    /// What `event` is in `state`'s stream: a place in the log when it is a tagged
    /// `codex/event` or conversation snapshot.
    fn entry_for(&self, state: &mut StreamState, event: &ServerSseMessage) -> Option<Entry> {
        let Some(JsonRpcMessage::Notification(notification)) = event.message.as_deref() else {
            return None;
        };
        let notification = &notification.notification;
        if let Some(thread) = wire::initial_state_conversation(notification) {
            let tag = self.tags.take(&thread, SNAPSHOT, SNAPSHOT)?;
            let origin = state.origin((thread, Value::Null));
            return Some(Entry::Snapshot {
                origin,
                seq: tag.seq,
            });
        }
        let (thread, request, kind) = wire::codex_event_origin(notification)?;
        let tag = self.tags.take(&thread, &request.to_string(), &kind)?;
        Some(Entry::Log {
            origin: state.origin((thread, request)),
            seq: tag.seq,
            part: tag.part,
        })
    }
}

#[async_trait::async_trait]
impl EventStore for LogEvents {
    async fn store_event(
        &self,
        stream_id: &str,
        event: &ServerSseMessage,
    ) -> Result<EventId, EventStoreError> {
        let stream = self.stream(stream_id);
        let mut state = stream.state();
        let position = state.base + state.entries.len();
        let (entry, id) = match self.entry_for(&mut state, event) {
            Some(entry @ (Entry::Log { seq, .. } | Entry::Snapshot { seq, .. })) => {
                state.last_seq = seq;
                (entry, stream.event_id(position, seq))
            }
            _ => {
                let id = stream.event_id(position, state.last_seq);
                let mut kept = event.clone();
                kept.event_id = Some(id.clone());
                (Entry::Kept(kept), id)
            }
        };
        if matches!(
            event.message.as_deref(),
            Some(JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_))
        ) {
            state.ended = true;
        }
        state.touched = Instant::now();
        state.entries.push_back(entry);
        if state.entries.len() > MAX_ENTRIES {
            state.entries.pop_front();
            state.base += 1;
        }
        let length = state.base + state.entries.len();
        drop(state);
        stream.grew.send_replace(length);
        Ok(id)
    }

    async fn replay_events_after(
        &self,
        last_event_id: &str,
    ) -> Result<EventStream, EventStoreError> {
        let malformed = || ResumeError::Malformed(last_event_id.to_string());
        let mut fields = last_event_id.rsplitn(3, '/');
        let (Some(seq), Some(position), Some(stream_id)) =
            (fields.next(), fields.next(), fields.next())
        else {
            return Err(malformed().into());
        };
        let (Ok(_seq), Ok(position)) = (seq.parse::<u64>(), position.parse::<usize>()) else {
            return Err(malformed().into());
        };
        let stream = self
            .streams()
            .get(stream_id)
            .cloned()
            .ok_or_else(|| ResumeError::UnknownStream(last_event_id.to_string()))?;
        let next = position.saturating_add(1);
        {
            let state = stream.state();
            if next < state.base || next > state.base + state.entries.len() {
                return Err(ResumeError::NotHeld(last_event_id.to_string()).into());
            }
        }
        let (tx, rx) = mpsc::channel(REPLAY_BUFFER);
        tokio::spawn(follow(self.manager.clone(), stream, next, tx));
        Ok(Box::pin(futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|message| (message, rx))
        })))
    }
}

/// Sends `stream`'s messages from position `next` on to `tx`: what is there, then what
/// comes, until the call's result or until the client is gone.
async fn follow(
    manager: Arc<ThreadManager>,
    stream: Arc<StreamIndex>,
    mut next: usize,
    tx: mpsc::Sender<ServerSseMessage>,
) {
    let mut logs: HashMap<String, LogCursor> = HashMap::new();
    let mut grew = stream.grew.subscribe();
    loop {
        grew.borrow_and_update();
        let (batch, origins, ended) = {
            let state = stream.state();
            if next < state.base {
                tracing::warn!(stream = %stream.id, "a resumed stream fell behind its index");
                return;
            }
            let batch: Vec<Entry> = state
                .entries
                .iter()
                .skip(next - state.base)
                .cloned()
                .collect();
            (batch, state.origins.clone(), state.ended)
        };
        for entry in batch {
            let position = next;
            next += 1;
            let message = match entry {
                Entry::Kept(message) => Some(message),
                Entry::Log { origin, seq, part } => {
                    let Some((thread_id, request_id)) = origins.get(origin) else {
                        continue;
                    };
                    let log = logs.entry(thread_id.clone()).or_default();
                    log.part(&manager, thread_id, seq, part).await.map(|event| {
                        codex_event(stream.event_id(position, seq), thread_id, request_id, event)
                    })
                }
                Entry::Snapshot { origin, seq } => {
                    let Some((thread_id, _)) = origins.get(origin) else {
                        continue;
                    };
                    snapshot(&manager, thread_id, seq).await.map(|message| {
                        ServerSseMessage::new(stream.event_id(position, seq), message)
                    })
                }
            };
            if let Some(message) = message
                && tx.send(message).await.is_err()
            {
                return;
            }
        }
        if ended {
            return;
        }
        tokio::select! {
            changed = grew.changed() => if changed.is_err() { return },
            () = tx.closed() => return,
        }
    }
}

/// The `initial_state` of `thread_id` through `seq`, as the stream sent it; `None` when
/// the thread is no longer loaded.
async fn snapshot(
    manager: &ThreadManager,
    thread_id: &str,
    seq: u64,
) -> Option<ServerJsonRpcMessage> {
    let thread = manager.get(thread_id)?;
    let mut events = thread.subscribe(0);
    let opened = read_snapshot(&thread, &mut events, seq, &CancellationToken::new()).await?;
    Some(JsonRpcMessage::notification(opened.initial_state))
}

/// The `codex/event` message for `event`, as the call sent it.
fn codex_event(id: String, thread_id: &str, request_id: &Value, event: Event) -> ServerSseMessage {
    let params = CodexEventParams {
        meta: EventMeta {
            request_id: request_id.clone(),
            thread_id: thread_id.to_string(),
        },
        id: event.id,
        msg: event.msg,
    };
    let message: ServerJsonRpcMessage =
        JsonRpcMessage::notification(wire::notification::<CodexEvent>(&params));
    ServerSseMessage::new(id, message)
}

/// A walk through one thread's log, in seq order.
#[derive(Debug, Default)]
struct LogCursor {
    subscription: Option<Subscription>,
    /// The Codex events of the log event read last, and its seq.
    current: Option<(u64, Vec<Event>)>,
}

impl LogCursor {
    /// The `part`-th Codex event of the log event `seq` of `thread_id`; `None` when the
    /// thread is no longer loaded or the event is gone (a streaming delta older than the
    /// in-memory window is not on disk).
    async fn part(
        &mut self,
        manager: &ThreadManager,
        thread_id: &str,
        seq: u64,
        part: usize,
    ) -> Option<Event> {
        let mut subscribed = false;
        loop {
            match &self.current {
                Some((at, events)) if *at == seq => return events.get(part).cloned(),
                // Gone from the log, or the walk is past it.
                Some((at, _)) if *at > seq && subscribed => return None,
                Some((at, _)) if *at < seq && self.subscription.is_some() => {}
                _ => {
                    let thread = manager.get(thread_id)?;
                    self.subscription = Some(thread.subscribe(seq.saturating_sub(1)));
                    subscribed = true;
                }
            }
            let event = self.subscription.as_mut()?.next().await?;
            self.current = Some((event.seq, codex_events(&event)));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use deputy_core::rollout::SessionSource;
    use futures::StreamExt;
    use rmcp::model::{JsonRpcMessage, ServerJsonRpcMessage, ServerNotification};

    use super::*;

    fn store() -> LogEvents {
        let manager = Arc::new(ThreadManager::new(None, SessionSource::Mcp));
        LogEvents::new(
            manager,
            Arc::new(LogTags::default()),
            Duration::from_secs(60),
        )
    }

    fn ping(n: u32) -> ServerSseMessage {
        let notification = ServerNotification::CustomNotification(
            rmcp::model::CustomNotification::new("test/ping", Some(serde_json::json!({"n": n}))),
        );
        let message: ServerJsonRpcMessage = JsonRpcMessage::notification(notification);
        ServerSseMessage::from_message(message)
    }

    #[tokio::test]
    async fn hostile_event_ids_are_refused_without_a_panic() {
        let store = store();
        store.store_event("stream-a", &ping(0)).await.unwrap();
        for id in [
            "",
            "garbage",
            "stream-a/",
            "stream-a/x/0",
            "stream-a/99999999999999999999999/0",
            "stream-a/5/0",
            "stream-b/0/0",
            "/0/0",
            "stream-a/18446744073709551615/0",
        ] {
            assert!(
                store.replay_events_after(id).await.is_err(),
                "{id:?} was accepted"
            );
        }
    }

    #[tokio::test]
    async fn a_resumed_stream_gets_what_came_after_its_id_then_follows_live() {
        let store = store();
        let first = store.store_event("stream-a", &ping(0)).await.unwrap();
        let second = store.store_event("stream-a", &ping(1)).await.unwrap();
        // Another stream's messages are not this one's.
        store.store_event("stream-b", &ping(9)).await.unwrap();
        let mut resumed = store.replay_events_after(&first).await.unwrap();
        let next = resumed.next().await.unwrap();
        assert_eq!(next.event_id.as_deref(), Some(second.as_str()));
        let third = store.store_event("stream-a", &ping(2)).await.unwrap();
        let live = tokio::time::timeout(Duration::from_secs(10), resumed.next())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(live.event_id.as_deref(), Some(third.as_str()));
        let Some(JsonRpcMessage::Notification(notification)) = live.message.as_deref() else {
            panic!("not a notification: {live:?}");
        };
        let ServerNotification::CustomNotification(custom) = &notification.notification else {
            panic!("not the ping: {live:?}");
        };
        assert_eq!(custom.params, Some(serde_json::json!({"n": 2})));
    }
}
