//! `conversationStream` for clients of 2026-07-28, whose requests may not be followed
//! by anything once answered and who may not be sent requests: the stream is the call
//! itself. Its response carries `notifications/initial_state` and then the live events;
//! it ends with `{}` once the conversation is idle (no turn running or queued, every
//! event sent), or with an `InputRequiredResult` when a turn asks for approval. The
//! retry with `inputResponses` answers and streams on from where the call stopped (no
//! second snapshot); a later `conversationStream` starts over with a snapshot.
//!
//! As for `codex` calls, the questions come from the engine's approval router through a
//! task that follows the thread (here [`follow_thread`], as the 2025-era stream does)
//! and outlives the requests: a question it raises waits, under the approval timeout,
//! for the call's retry. Several streams of one conversation are each asked; the first
//! answer wins.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, MutexGuard, PoisonError};
use std::time::Duration;

use deputy_core::driver::{Follow, follow_thread};
use deputy_core::{Subscription, Thread};
use deputy_protocol::{ThreadEvent, ThreadEventMsg, codex_events};
use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResponse, CallToolResult, InputResponses, ServerNotification};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::approver::{Asked, MrtrApprover, answer_from_reply};
use super::state::State;
use super::{LINGER, MrtrCall, Unobserved, uuid_like};
use crate::server::{Opened, tag_snapshot};
use crate::turn_runner::{CallContext, unless_client_gone};
use crate::wire;

/// A conversation stream between round trips.
pub(super) struct PausedStream {
    id: String,
    thread: Arc<Thread>,
    /// Ends the task that routes the conversation's questions to this stream.
    stop: CancellationToken,
    attached: tokio::sync::Mutex<Attached>,
    /// How long the stream waits for a retry.
    ttl: Duration,
    /// Counts the requests attached so far: a retry's wait is over once another came.
    rounds: AtomicU64,
    /// The call's result once the conversation is idle.
    idle: CallToolResult,
}

/// What the attached request of a stream works on.
struct Attached {
    events: Subscription,
    questions: mpsc::Receiver<Asked>,
    /// The last event sent.
    cursor: u64,
    /// Questions handed out and not answered yet, by input-request key.
    waiting: BTreeMap<String, Asked>,
    /// Tool calls whose approval request event was already sent (or was in the snapshot).
    announced: HashSet<String>,
    next_key: u32,
}

/// How a stream's turn of following ended.
enum Stop {
    /// Questions wait: the call returns them.
    Asking,
    /// The conversation is idle, or its thread stopped: the stream is over.
    Idle,
    /// The client cancelled the request, or went away.
    Cancelled,
}

impl MrtrCall {
    /// A `conversationStream` call on `thread`: `events` follows the thread after
    /// `snapshot_end`, the moment `opened` (the snapshot) was read up to; `idle` is the
    /// call's result once the conversation is idle.
    pub(crate) async fn stream(
        &self,
        call: &CallContext,
        thread: &Arc<Thread>,
        (events, snapshot_end): (Subscription, u64),
        opened: Opened,
        idle: CallToolResult,
    ) -> Result<CallToolResponse, McpError> {
        // The key is needed before anything is asked; a broken one fails the call now.
        self.mrtr.codec().await?;
        let (questions_tx, questions) = mpsc::channel(8);
        let stop = call.client_gone.child_token();
        let ttl = thread.config().approval_timeout + LINGER;
        let announced = opened
            .open_questions
            .iter()
            .map(|asked| asked.call_id().to_string())
            .collect();
        let paused = Arc::new(PausedStream {
            id: uuid_like(),
            thread: thread.clone(),
            stop: stop.clone(),
            attached: tokio::sync::Mutex::new(Attached {
                events: thread.subscribe(snapshot_end),
                questions,
                cursor: snapshot_end,
                waiting: BTreeMap::new(),
                announced,
                next_key: 1,
            }),
            ttl,
            rounds: AtomicU64::new(0),
            idle,
        });
        let approver = Arc::new(MrtrApprover {
            questions: questions_tx,
            tool_call_id: call.request_id_string(),
            cwd: thread.config().cwd.clone(),
            can_elicit: self.can_elicit,
        });
        // Held before the router starts, so that no retry can attach first.
        let mut attached = paused.attached.lock().await;
        let follow = Follow {
            events,
            open_questions: opened.open_questions,
        };
        let (routed, router_stop) = (thread.clone(), stop.clone());
        tokio::spawn(async move {
            follow_thread(&routed, follow, approver, &mut Unobserved, &router_stop).await;
        });
        let tagged = tag_snapshot(call.log_tags.as_deref(), thread, snapshot_end);
        if !send(call, opened.initial_state).await {
            tagged.withdraw();
            stop.cancel();
            return Err(McpError::invalid_request("the request was cancelled", None));
        }
        self.streams().insert(paused.id.clone(), paused.clone());
        self.follow_stream(call, &paused, &mut attached).await
    }

    /// A retry of a paused stream: answers what it answers and streams on.
    pub(super) async fn resume_stream(
        &self,
        call: &CallContext,
        state: &State,
        responses: Option<InputResponses>,
    ) -> Result<CallToolResponse, McpError> {
        let paused = self.streams().get(&state.call).cloned();
        let Some(paused) = paused else {
            return Err(McpError::invalid_params(
                format!(
                    "the stream paused for this requestState is gone (it ended a while ago, or the server restarted); call conversationStream for conversation {} again",
                    state.thread
                ),
                None,
            ));
        };
        let Ok(mut attached) = paused.attached.try_lock() else {
            return Err(McpError::invalid_request(
                "another request is already continuing this stream; wait for its result",
                None,
            ));
        };
        let mut responses = responses.unwrap_or_default();
        for key in &state.questions {
            let Some(reply) = responses.remove(key) else {
                continue;
            };
            if let Some(asked) = attached.waiting.remove(key) {
                // Settled meanwhile (timed out, or another stream answered): ignored.
                let _ = asked
                    .answer
                    .send(answer_from_reply(&reply, &asked.expected));
            }
        }
        self.follow_stream(call, &paused, &mut attached).await
    }

    fn streams(&self) -> MutexGuard<'_, std::collections::HashMap<String, Arc<PausedStream>>> {
        self.mrtr
            .streams
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Streams for `call`, attached, until the conversation is idle (`{}`), questions
    /// wait (`InputRequiredResult`), or the request is cancelled.
    async fn follow_stream(
        &self,
        call: &CallContext,
        paused: &Arc<PausedStream>,
        attached: &mut Attached,
    ) -> Result<CallToolResponse, McpError> {
        let round = paused.rounds.fetch_add(1, Ordering::AcqRel) + 1;
        let stopped = follow_attached(call, &paused.thread, attached).await;
        match stopped {
            Stop::Asking => {
                // Forgotten (its questions withdrawn) if no retry comes in time.
                let (mrtr, waited) = (self.mrtr.clone(), paused.clone());
                tokio::spawn(async move {
                    tokio::time::sleep(waited.ttl).await;
                    if waited.rounds.load(Ordering::Acquire) == round {
                        waited.stop.cancel();
                        let mut streams =
                            mrtr.streams.lock().unwrap_or_else(PoisonError::into_inner);
                        streams.remove(&waited.id);
                    }
                });
                self.input_required(
                    &paused.id,
                    paused.thread.id(),
                    &attached.waiting,
                    paused.ttl,
                )
                .await
            }
            Stop::Idle => {
                self.end_stream(paused);
                Ok(paused.idle.clone().into())
            }
            Stop::Cancelled => {
                self.end_stream(paused);
                Err(McpError::invalid_request("the request was cancelled", None))
            }
        }
    }

    fn end_stream(&self, paused: &PausedStream) {
        paused.stop.cancel();
        self.streams().remove(&paused.id);
    }
}

/// Sends the thread's events from the cursor as conversation notifications until the
/// stream should return.
async fn follow_attached(call: &CallContext, thread: &Thread, attached: &mut Attached) -> Stop {
    loop {
        attached
            .waiting
            .retain(|_, asked| !asked.answer.is_closed());
        if !attached.waiting.is_empty() {
            return Stop::Asking;
        }
        if !thread.is_busy() && attached.cursor >= thread.last_seq() {
            return Stop::Idle;
        }
        tokio::select! {
            biased;
            () = call.cancelled.cancelled() => return Stop::Cancelled,
            next = attached.events.next() => match next {
                Some(event) => {
                    if !deliver(call, attached, &event).await {
                        return Stop::Cancelled;
                    }
                }
                None => return Stop::Idle,
            },
            Some(asked) = attached.questions.recv() => {
                // Its approval request event is in the log already: sent first.
                while !attached.announced.contains(&asked.params.codex_call_id) {
                    let Some(event) = attached.events.next().await else {
                        return Stop::Idle;
                    };
                    if !deliver(call, attached, &event).await {
                        return Stop::Cancelled;
                    }
                }
                attached.hold(asked);
                // Questions asked together go out together.
                while let Ok(more) = attached.questions.try_recv() {
                    attached.hold(more);
                }
            }
        }
    }
}

impl Attached {
    fn hold(&mut self, asked: Asked) {
        let key = format!("approval-{}", self.next_key);
        self.next_key += 1;
        self.waiting.insert(key, asked);
    }
}

/// Sends one event of the log as the stream's notifications; `false` once the client
/// is gone.
async fn deliver(call: &CallContext, attached: &mut Attached, event: &ThreadEvent) -> bool {
    attached.cursor = event.seq;
    if let ThreadEventMsg::QuestionAsked(asked) = &event.msg {
        attached
            .announced
            .insert(asked.question.call_id().to_string());
    }
    // As in the snapshot: the announcement is not a stream event.
    if matches!(event.msg, ThreadEventMsg::SessionConfigured(_)) {
        return true;
    }
    for codex in codex_events(event) {
        if let Some(notification) = wire::conversation_event(&codex.msg)
            && !send(call, notification).await
        {
            return false;
        }
    }
    true
}

/// Sends one notification in the call's response; `false` once the client is gone.
async fn send(call: &CallContext, notification: ServerNotification) -> bool {
    let sent = unless_client_gone(&call.client_gone, call.peer.send_notification(notification));
    match sent.await {
        Some(Ok(())) => true,
        Some(Err(err)) => {
            tracing::debug!("conversation stream ended: {err}");
            false
        }
        None => false,
    }
}
