//! The conversation tools (seed 003): a conversation is created and sent messages by
//! calls that return at once, and followed by `conversationStream` calls that each
//! subscribe to the thread's event log from its start.
//!
//! Nothing is buffered here: a stream is a subscription from seq 0 (the snapshot, then
//! live events), pausing it drops the subscription, and the next stream replays the log
//! again. Approval questions are asked by each connected stream through the engine's
//! router; one raised while nobody streams simply waits in the engine for the next
//! stream, whose snapshot shows it unanswered.
//!
//! What a request keeps doing after its result (a queued turn, a running stream) is
//! held in one registry per connection, keyed by request id, so that
//! `notifications/cancelled` for that id interrupts the turn or pauses the stream.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use deputy_core::config::ConfigLayers;
use deputy_core::driver::{Follow, TurnObserver, follow_thread};
use deputy_core::rollout::{list_sessions_by_creation, one_line_preview};
use deputy_core::{ResumeError, Subscription, Thread, ThreadError, ThreadManager};
use deputy_protocol::{
    InputItem, ItemEvent, ThreadEvent, ThreadEventMsg, ThreadItem, codex_events,
};
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, RequestId, ServerNotification};
use rmcp::{Peer, RoleServer};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use super::snapshot::{read_snapshot, tag_snapshot};
use crate::log_tags::LogTags;
use crate::tool_catalogue::{
    CONVERSATION_CREATE_TOOL, CONVERSATION_SEND_MESSAGE_TOOL, CONVERSATION_STREAM_TOOL,
    CONVERSATIONS_LIST_TOOL, ContentItemParam, ConversationCreateParam, ConversationCreateResult,
    ConversationSendMessageParam, ConversationSendMessageResult, ConversationStreamParam,
    ConversationStreamResult, ConversationSummary, ConversationsListParam, ConversationsListResult,
    SendStatus,
};
use crate::turn_runner::{CallContext, ElicitationApprover, tool_result, unless_client_gone};
use crate::wire;
use deputy_core::rollout::parse_thread_id;

/// Conversations listed when the client names no `limit`.
const DEFAULT_LIST_LIMIT: u32 = 20;
/// Most conversations one `conversationsList` page holds.
const MAX_LIST_LIMIT: u32 = 200;

/// The conversation tools of one connection, and what their requests keep doing.
#[derive(Debug)]
pub(crate) struct Conversations {
    manager: Arc<ThreadManager>,
    layers: Arc<ConfigLayers>,
    /// Cancelled once the client has disconnected: every stream stops.
    client_gone: CancellationToken,
    requests: Mutex<HashMap<RequestId, Ongoing>>,
}

/// What a request goes on doing after its result was sent.
#[derive(Debug)]
enum Ongoing {
    /// The turn a `conversationCreate` or `conversationSendMessage` queued:
    /// cancelling the request interrupts it.
    Turn {
        thread: Arc<Thread>,
        turn_id: String,
    },
    /// A `conversationStream` delivering events: cancelling the request pauses it.
    Stream(StreamHandle),
}

/// Stops its stream when dropped.
#[derive(Debug)]
struct StreamHandle(CancellationToken);

impl Drop for StreamHandle {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

impl Ongoing {
    /// Whether there is still something to cancel.
    fn is_live(&self) -> bool {
        match self {
            // Every turn of the thread has ended, this one included.
            Self::Turn { thread, .. } => thread.is_busy(),
            Self::Stream(StreamHandle(stop)) => !stop.is_cancelled(),
        }
    }
}

impl Conversations {
    /// The conversation tools over `manager`'s threads, configured by `layers`.
    pub(crate) fn new(
        manager: Arc<ThreadManager>,
        layers: Arc<ConfigLayers>,
        client_gone: CancellationToken,
    ) -> Self {
        Self {
            manager,
            layers,
            client_gone,
            requests: Mutex::default(),
        }
    }

    /// `conversationCreate`: a new thread, its first turn queued when there is a prompt.
    pub(crate) async fn create(
        &self,
        call: &CallContext,
        args: serde_json::Value,
    ) -> CallToolResult {
        let params: ConversationCreateParam = match parse(args, CONVERSATION_CREATE_TOOL) {
            Ok(params) => params,
            Err(failed) => return failed,
        };
        let mut layers = (*self.layers).clone();
        params.apply_to(&mut layers);
        let config = match layers.load() {
            Ok(config) => config,
            Err(err) => return failure(format!("Failed to load configuration: {err}")),
        };
        if let Err(err) = config.check_api_key() {
            return failure(err.to_string());
        }
        let thread = match self.manager.start_thread(config) {
            Ok(thread) => thread,
            Err(err) => return failure(format!("Failed to start conversation: {err}")),
        };
        if !params.prompt.trim().is_empty() {
            let items = vec![InputItem::Text {
                text: params.prompt,
            }];
            if let Err(err) = self.queue_turn(call, &thread, items) {
                return failure(format!("Failed to start the first turn: {err}"));
            }
        }
        success(&ConversationCreateResult {
            conversation_id: thread.id().to_string(),
            model: thread.config().model.clone(),
        })
    }

    /// `conversationSendMessage`: queues a turn and returns; the turn stays
    /// cancellable through this request's id until it ends.
    pub(crate) async fn send_message(
        &self,
        call: &CallContext,
        args: serde_json::Value,
    ) -> CallToolResult {
        let params: ConversationSendMessageParam = match parse(args, CONVERSATION_SEND_MESSAGE_TOOL)
        {
            Ok(params) => params,
            Err(failed) => return failed,
        };
        let items: Vec<InputItem> = match params
            .content
            .into_iter()
            .map(ContentItemParam::into_input)
            .collect()
        {
            Ok(items) => items,
            Err(why) => return failure(format!("`content`: {why}")),
        };
        if items.is_empty() {
            return failure(
                "`content` holds no message: give at least one text or image item".into(),
            );
        }
        let thread = match self.conversation(&params.conversation_id).await {
            Ok(thread) => thread,
            Err(failed) => return failed,
        };
        match self.queue_turn(call, &thread, items) {
            Ok(()) => success(&ConversationSendMessageResult {
                status: SendStatus::Ok,
            }),
            Err(err) => failure(format!("Failed to send the message: {err}")),
        }
    }

    /// `conversationStream`: answers `{}` and leaves a task behind that sends the
    /// snapshot, then live events, until the request is cancelled or the client leaves.
    /// From 2026-07-28 on, the call itself is the stream (`crate::mrtr`'s streams).
    pub(crate) async fn stream(
        &self,
        call: &CallContext,
        args: serde_json::Value,
    ) -> CallToolResponse {
        let params: ConversationStreamParam = match parse(args, CONVERSATION_STREAM_TOOL) {
            Ok(params) => params,
            Err(failed) => return failed.into(),
        };
        let thread = match self.conversation(&params.conversation_id).await {
            Ok(thread) => thread,
            Err(failed) => return failed.into(),
        };
        let mut events = thread.subscribe(0);
        let snapshot_end = thread.last_seq();
        if let Some(mrtr) = &call.mrtr {
            let Some(opened) =
                read_snapshot(&thread, &mut events, snapshot_end, &call.cancelled).await
            else {
                return failure("the request was cancelled".to_string()).into();
            };
            let idle = success(&ConversationStreamResult {});
            let streamed = mrtr
                .stream(call, &thread, (events, snapshot_end), opened, idle)
                .await;
            return streamed.unwrap_or_else(|err| failure(err.message.into_owned()).into());
        }
        let stop = self.client_gone.child_token();
        self.register(
            call.request_id.clone(),
            Ongoing::Stream(StreamHandle(stop.clone())),
        );
        // Cancelled before its result: rmcp drops the result, and nothing may follow it.
        if call.cancelled.is_cancelled() {
            stop.cancel();
        }
        let approver = Arc::new(ElicitationApprover::new(
            call.peer.clone(),
            call.request_id_string(),
            thread.config().cwd.clone(),
        ));
        let stream = Stream {
            approver,
            thread,
            peer: call.peer.clone(),
            events,
            snapshot_end,
            stop,
            client_gone: self.client_gone.clone(),
            log_tags: call.log_tags.clone(),
        };
        tokio::spawn(stream.run(call.cancelled.clone()));
        success(&ConversationStreamResult {}).into()
    }

    /// `conversationsList`: conversations by creation, newest first, live and saved.
    pub(crate) async fn list(&self, args: serde_json::Value) -> CallToolResult {
        let params: ConversationsListParam = match parse(args, CONVERSATIONS_LIST_TOOL) {
            Ok(params) => params,
            Err(failed) => return failed,
        };
        if let Some(cursor) = &params.cursor
            && parse_thread_id(cursor).is_err()
        {
            return failure(format!(
                "Invalid cursor `{cursor}`: pass the `next_cursor` of the previous page"
            ));
        }
        let limit = params
            .limit
            .unwrap_or(DEFAULT_LIST_LIMIT)
            .clamp(1, MAX_LIST_LIMIT) as usize;
        let home = self.layers.deputy_home.clone();
        let cursor = params.cursor.clone();
        let listed = tokio::task::spawn_blocking(move || {
            list_sessions_by_creation(&home, cursor.as_deref(), limit)
        })
        .await;
        let page = match listed {
            Ok(Ok(page)) => page,
            Ok(Err(err)) => return failure(format!("Failed to list conversations: {err}")),
            Err(err) => return failure(format!("Failed to list conversations: {err}")),
        };
        let mut conversations = Vec::with_capacity(page.sessions.len());
        for session in page.sessions {
            let mut title = session.first_prompt_preview;
            // A live conversation's first message may not have reached its file yet.
            if title.is_empty()
                && let Some(thread) = self.manager.get(&session.id)
            {
                title = first_user_message(&thread).await.unwrap_or_default();
            }
            conversations.push(ConversationSummary {
                conversation_id: session.id,
                title,
            });
        }
        let next_cursor = page.next_cursor;
        success(&ConversationsListResult {
            conversations,
            next_cursor,
        })
    }

    /// `notifications/cancelled` for `request_id`: interrupts the turn a send queued,
    /// pauses a stream. Requests still running are cancelled by rmcp itself.
    pub(crate) fn cancelled(&self, request_id: &RequestId) {
        let ongoing = self.lock().remove(request_id);
        match ongoing {
            Some(Ongoing::Turn { thread, turn_id }) => {
                tracing::debug!(thread = thread.id(), turn = turn_id, "interrupting");
                let _ = thread.interrupt(&turn_id);
            }
            // Dropping the handle stops the stream.
            Some(Ongoing::Stream(_)) | None => {}
        }
    }

    /// Queues a turn under the call's id and keeps it cancellable through that id.
    fn queue_turn(
        &self,
        call: &CallContext,
        thread: &Arc<Thread>,
        items: Vec<InputItem>,
    ) -> Result<(), ThreadError> {
        // Cancelled while the conversation was being found: start nothing (rmcp drops
        // the result of a cancelled request).
        if call.cancelled.is_cancelled() {
            return Ok(());
        }
        let turn_id = thread.submit_turn(call.request_id_string(), items)?;
        self.register(
            call.request_id.clone(),
            Ongoing::Turn {
                thread: thread.clone(),
                turn_id: turn_id.clone(),
            },
        );
        // A cancellation that came before the entry existed found nothing to stop.
        if call.cancelled.is_cancelled() {
            let _ = thread.interrupt(&turn_id);
        }
        Ok(())
    }

    fn register(&self, request_id: RequestId, ongoing: Ongoing) {
        let mut requests = self.lock();
        requests.retain(|_, ongoing| ongoing.is_live());
        // A client reusing an id ends what the id stood for before.
        requests.insert(request_id, ongoing);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<RequestId, Ongoing>> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The live thread `id`, or that thread resumed from disk.
    async fn conversation(&self, id: &str) -> Result<Arc<Thread>, CallToolResult> {
        // The same message as everywhere else a thread id is malformed.
        if let Err(err) = parse_thread_id(id) {
            return Err(failure(err.to_string()));
        }
        let (manager, layers, lookup) = (self.manager.clone(), self.layers.clone(), id.to_string());
        let found =
            tokio::task::spawn_blocking(move || manager.get_or_resume(&lookup, &layers)).await;
        match found {
            Ok(Ok((thread, _))) => Ok(thread),
            Ok(Err(ResumeError::NotFound(_))) => {
                Err(failure(format!("Conversation not found: {id}")))
            }
            Ok(Err(ResumeError::Locked)) => Err(failure(format!(
                "Conversation {id} is open in another process; it can only be used there until that process lets it go"
            ))),
            Ok(Err(err)) => Err(failure(format!("Conversation {id}: {err}"))),
            Err(err) => Err(failure(format!(
                "Conversation {id}: resuming failed: {err}"
            ))),
        }
    }
}

/// One connected `conversationStream`.
struct Stream {
    thread: Arc<Thread>,
    peer: Peer<RoleServer>,
    /// From the start of the thread: the snapshot, then live.
    events: Subscription,
    /// The last event that belongs to the snapshot.
    snapshot_end: u64,
    approver: Arc<ElicitationApprover>,
    /// Cancelled when the request is cancelled (pause) or the client has gone.
    stop: CancellationToken,
    client_gone: CancellationToken,
    log_tags: Option<Arc<LogTags>>,
}

impl Stream {
    /// Waits for the stream's `{}` result to go out (`answered`: rmcp cancels the
    /// request's token as it hands the result to the transport, and notifications sent
    /// after that follow it on the wire), then sends the snapshot, asks what waits for
    /// an answer, and follows the thread live.
    async fn run(mut self, answered: CancellationToken) {
        tokio::select! {
            biased;
            () = self.stop.cancelled() => return,
            () = answered.cancelled() => {}
        }
        // However it ends, the registry may forget it.
        let _ended = self.stop.clone().drop_guard();
        let Some(opened) = read_snapshot(
            &self.thread,
            &mut self.events,
            self.snapshot_end,
            &self.stop,
        )
        .await
        else {
            return;
        };
        let mut live = LiveEvents {
            peer: self.peer,
            stop: self.stop.clone(),
            client_gone: self.client_gone,
        };
        let tagged = tag_snapshot(self.log_tags.as_deref(), &self.thread, self.snapshot_end);
        if !live.send(opened.initial_state).await {
            tagged.withdraw();
            return;
        }
        // Questions raised while nobody streamed are asked now; their timeout starts here.
        let follow = Follow {
            events: self.events,
            open_questions: opened.open_questions,
        };
        follow_thread(&self.thread, follow, self.approver, &mut live, &self.stop).await;
    }
}

/// A stream's live part: each event as its conversation notifications.
struct LiveEvents {
    peer: Peer<RoleServer>,
    stop: CancellationToken,
    client_gone: CancellationToken,
}

impl TurnObserver for LiveEvents {
    async fn deliver(&mut self, event: &ThreadEvent) {
        // As in the snapshot: the announcement is not a stream event.
        if matches!(event.msg, ThreadEventMsg::SessionConfigured(_)) {
            return;
        }
        for codex in codex_events(event) {
            let Some(notification) = wire::conversation_event(&codex.msg) else {
                continue;
            };
            if !self.send(notification).await {
                // Paused, or the client has gone: the stream ends.
                self.stop.cancel();
                return;
            }
        }
    }
}

impl LiveEvents {
    /// Sends one notification; `false` once the stream should end (paused, client gone).
    async fn send(&self, notification: ServerNotification) -> bool {
        let sent = tokio::select! {
            biased;
            () = self.stop.cancelled() => return false,
            sent = unless_client_gone(&self.client_gone, self.peer.send_notification(notification)) => sent,
        };
        match sent {
            Some(Ok(())) => true,
            Some(Err(err)) => {
                tracing::debug!("conversation stream ended: {err}");
                false
            }
            None => false,
        }
    }
}

/// The first user message of a live thread, as listings show it.
async fn first_user_message(thread: &Thread) -> Option<String> {
    let end = thread.last_seq();
    let mut events = thread.subscribe(0);
    while let Some(event) = events.next_through(end).await {
        if let ThreadEventMsg::ItemCompleted(ItemEvent {
            item: ThreadItem::UserMessage(message),
        }) = &event.msg
        {
            return Some(one_line_preview(&message.text));
        }
    }
    None
}

/// Reads a tool's arguments; a failure is the call's `isError` result.
#[allow(
    clippy::result_large_err,
    reason = "serde_json's `preserve_order` (required by the ACP crates) makes JSON values larger; this error is built once per bad input, not on a hot path"
)]
fn parse<T: DeserializeOwned>(args: serde_json::Value, tool: &str) -> Result<T, CallToolResult> {
    serde_json::from_value(args)
        .map_err(|err| failure(format!("Invalid arguments for `{tool}`: {err}")))
}

/// A successful result: the object as `structuredContent` and as JSON text.
fn success<T: Serialize>(result: &T) -> CallToolResult {
    let value = serde_json::to_value(result).unwrap_or_default();
    let mut result = CallToolResult::success(vec![ContentBlock::text(value.to_string())]);
    result.structured_content = Some(value);
    // As for the other tools: `isError` is omitted on success.
    result.is_error = None;
    result
}

fn failure(message: String) -> CallToolResult {
    tool_result(None, message, true)
}
