//! A thread: one conversation with the model, driven by ops, reporting events.
//!
//! The public [`Thread`] is a handle: it submits ops, mints turn ids and hands out
//! subscriptions to the thread's [`EventLog`]. The state lives in a [`Session`] owned
//! by a submission loop task, which runs one turn at a time (later ones wait in a
//! queue) and stops on shutdown or when every handle is gone.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use deputy_protocol::{
    FunctionOutput, InputItem, Op, ResponseItem, ReviewRequest, Submission, ThreadEvent,
    ThreadEventMsg, TokenUsage, ToolCallKind, TurnAbortReason, TurnOverrides, WarningEvent,
};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::approval::{Answer, ApprovalGate};
use crate::client::ModelClient;
use crate::config::Config;
use crate::context_window::UsageMark;
use crate::event_log::{EventLog, Subscription};
use crate::rollout::{CompactedRecord, RolloutRecorder, TurnContextRecord};
use crate::tools::{ThreadTools, ToolHandler, ToolRegistryError, ToolState};
use crate::turn::{TurnKind, TurnStart};
use crate::turn_clock::TurnClock;

/// Why an op could not be delivered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ThreadError {
    /// A turn is already running on this thread (for front doors that refuse to queue).
    #[error("thread is busy: a turn is already running")]
    Busy,
    /// The thread has shut down.
    #[error("thread has shut down")]
    Closed,
}

/// A turn's input: the user's items, settings it changes for itself and later turns,
/// and the JSON Schema its final answer must follow (this turn only).
#[derive(Debug, Clone, Default)]
pub struct TurnInput {
    /// The user's input parts (text, images).
    pub items: Vec<InputItem>,
    /// Settings this turn changes, for itself and every later turn.
    pub overrides: Option<TurnOverrides>,
    /// The final answer's JSON Schema, sent to the model as a strict structured-output format.
    pub output_schema: Option<serde_json::Value>,
}

/// A handle on a running thread.
#[derive(Debug)]
pub struct Thread {
    id: String,
    settings: Arc<Mutex<TurnSettings>>,
    submit_tx: mpsc::UnboundedSender<Submission>,
    log: Arc<EventLog>,
    next_submission: AtomicU64,
    /// The handlers added to the thread at run time (shared with its session).
    tools: Arc<ThreadTools>,
}

impl Thread {
    /// The thread id (a UUIDv7 string).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The configuration the thread's next turn starts with.
    pub fn config(&self) -> Arc<Config> {
        lock(&self.settings).config.clone()
    }

    /// Follows the thread's events after `after_seq` (0: from the start): replay, then live.
    pub fn subscribe(&self, after_seq: u64) -> Subscription {
        self.log.subscribe(after_seq)
    }

    /// The seq of the thread's newest event.
    pub fn last_seq(&self) -> u64 {
        self.log.last_seq()
    }

    /// The turn running now, if any (cleared exactly when its end event is delivered).
    pub fn active_turn(&self) -> Option<String> {
        self.log.active_turn()
    }

    /// Whether a turn is running or queued (until its end event is delivered).
    pub fn is_busy(&self) -> bool {
        self.log.open_turns() > 0
    }

    /// Sends an op under a fresh submission id, returned.
    pub fn submit(&self, op: Op) -> Result<String, ThreadError> {
        let id = format!(
            "sub-{}",
            self.next_submission.fetch_add(1, Ordering::Relaxed)
        );
        self.submit_with_id(id.clone(), op)?;
        Ok(id)
    }

    /// Sends an op under the caller's submission id.
    pub fn submit_with_id(&self, id: String, op: Op) -> Result<(), ThreadError> {
        self.submit_tx
            .send(Submission { id, op })
            .map_err(|_| ThreadError::Closed)
    }

    /// Queues a turn with `items` under `submission_id` and returns its new turn id.
    /// It starts once the turns before it have ended.
    pub fn submit_turn(
        &self,
        submission_id: String,
        items: Vec<InputItem>,
    ) -> Result<String, ThreadError> {
        self.submit_input(
            submission_id,
            TurnInput {
                items,
                ..TurnInput::default()
            },
        )
    }

    /// Queues a turn with everything [`TurnInput`] can say and returns its new turn id.
    pub fn submit_input(
        &self,
        submission_id: String,
        input: TurnInput,
    ) -> Result<String, ThreadError> {
        let TurnInput {
            items,
            overrides,
            output_schema,
        } = input;
        self.submit_new_turn(submission_id, |turn_id| Op::UserInput {
            turn_id,
            items,
            overrides,
            output_schema,
        })
    }

    /// Queues a compaction of the history as a turn of its own (`/compact`) under
    /// `submission_id` and returns its new turn id. It starts once the turns before it
    /// have ended; its events are those of a turn with one `context_compaction` item.
    pub fn submit_compact(&self, submission_id: String) -> Result<String, ThreadError> {
        self.submit_new_turn(submission_id, |turn_id| Op::Compact { turn_id })
    }

    /// Mints a turn id and submits the op `op` builds with it.
    fn submit_new_turn(
        &self,
        submission_id: String,
        op: impl FnOnce(String) -> Op,
    ) -> Result<String, ThreadError> {
        let turn_id = uuid::Uuid::now_v7().to_string();
        // Counted before it is sent, so it cannot end before it was counted.
        self.log.turn_submitted();
        let sent = self.submit_with_id(submission_id, op(turn_id.clone()));
        if sent.is_err() {
            self.log.turn_withdrawn();
        }
        sent.map(|()| turn_id)
    }

    /// Queues a review (see `crate::review`) under `submission_id` and returns its turn id.
    pub fn submit_review(
        &self,
        submission_id: String,
        request: ReviewRequest,
    ) -> Result<String, ThreadError> {
        let turn_id = uuid::Uuid::now_v7().to_string();
        self.log.turn_submitted();
        let sent = self.submit_with_id(
            submission_id,
            Op::Review {
                turn_id: turn_id.clone(),
                request,
            },
        );
        if sent.is_err() {
            self.log.turn_withdrawn();
        }
        sent.map(|()| turn_id)
    }

    /// Stops turn `turn_id` if it is running or queued; a no-op once it has ended.
    pub fn interrupt(&self, turn_id: &str) -> Result<(), ThreadError> {
        self.submit(Op::Interrupt {
            turn_id: turn_id.to_string(),
        })
        .map(|_| ())
    }

    /// Resolves once the thread's loop has stopped (after shutdown).
    pub async fn closed(&self) {
        self.submit_tx.closed().await;
    }

    /// Starts a turn with `text` and follows its events until it ends: a subscription
    /// from the current end of the log, then the submission.
    pub fn start_turn(
        &self,
        submission_id: String,
        text: String,
    ) -> Result<TurnEvents, ThreadError> {
        let events = self.subscribe(self.last_seq());
        let turn_id = self.submit_turn(submission_id, vec![InputItem::Text { text }])?;
        Ok(TurnEvents {
            turn_id,
            events,
            done: false,
        })
    }

    /// Offers the model another tool from the thread's next turn on; a name another
    /// added tool has is refused.
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "a seam: no run-time tool exists yet")
    )]
    pub(crate) fn add_tool(&self, handler: Arc<dyn ToolHandler>) -> Result<(), ToolRegistryError> {
        self.tools.add(handler)
    }

    /// Whether nothing is going on: no turn running or queued, nobody subscribed.
    pub(crate) fn is_idle(&self) -> bool {
        !self.is_busy() && self.log.subscriber_count() == 0
    }

    pub(crate) fn log(&self) -> &EventLog {
        &self.log
    }
}

/// The events of one turn, ending after its `turn_complete`, `turn_aborted` or `turn_failed`.
#[derive(Debug)]
pub struct TurnEvents {
    turn_id: String,
    events: Subscription,
    done: bool,
}

impl TurnEvents {
    /// The turn's id.
    pub fn turn_id(&self) -> &str {
        &self.turn_id
    }

    /// The next event of the turn (thread-level events included); `None` after the
    /// turn-ending event or if the thread stopped.
    pub async fn next(&mut self) -> Option<Arc<ThreadEvent>> {
        while !self.done {
            let event = match self.events.next().await {
                Some(Ok(event)) => event,
                // Fell behind: continue from where it stopped.
                Some(Err(_)) => {
                    self.events = self.events.resubscribe();
                    continue;
                }
                None => {
                    self.done = true;
                    return None;
                }
            };
            match event.turn_id.as_deref() {
                Some(turn) if turn != self.turn_id => continue,
                Some(_) => self.done = event.msg.ends_turn(),
                None => {}
            }
            return Some(event);
        }
        None
    }
}

/// What a turn starts from: the configuration and its model client. A turn's
/// overrides replace them for itself and every later turn.
#[derive(Debug, Clone)]
pub(crate) struct TurnSettings {
    pub(crate) config: Arc<Config>,
    pub(crate) client: ModelClient,
}

/// The state a thread's turns share.
pub(crate) struct Session {
    pub(crate) settings: Arc<Mutex<TurnSettings>>,
    pub(crate) log: Arc<EventLog>,
    pub(crate) history: Mutex<Vec<ResponseItem>>,
    pub(crate) approvals: ApprovalGate,
    pub(crate) total_usage: Mutex<TokenUsage>,
    /// The provider's last usage report and the history length it covers: the base
    /// from which the next request's size is estimated (`None`: estimate it whole).
    pub(crate) usage_mark: Mutex<Option<UsageMark>>,
    /// Where the thread is persisted, when it is.
    pub(crate) rollout: Option<RolloutRecorder>,
    /// The handlers added to the thread at run time, beside the built-in tools.
    pub(crate) tools: Arc<ThreadTools>,
    /// What the thread's tools keep between calls; dropped with the session.
    #[cfg_attr(
        not(test),
        expect(dead_code, reason = "a seam: no built-in tool keeps state yet")
    )]
    pub(crate) tool_state: ToolState,
    /// The thread's MCP servers.
    pub(crate) mcp: crate::mcp::ThreadServers,
}

impl Session {
    /// A snapshot of the history, for the next model request.
    pub(crate) fn history_snapshot(&self) -> Vec<ResponseItem> {
        lock(&self.history).clone()
    }

    /// Appends items to the history and queues them for the rollout.
    pub(crate) fn record(&self, items: impl IntoIterator<Item = ResponseItem>) {
        let mut history = lock(&self.history);
        let start = history.len();
        history.extend(items);
        if let Some(rollout) = &self.rollout {
            rollout.record_items(&history[start..]);
        }
    }

    /// Records `output` as the answer to call `call_id`, in the form its call needs (a
    /// function call's output, or a freeform tool call's).
    pub(crate) fn record_call_output(&self, call_id: String, output: FunctionOutput) {
        let kind = lock(&self.history)
            .iter()
            .rev()
            .find_map(|item| item.tool_call().filter(|(id, _)| *id == call_id))
            .map_or(ToolCallKind::Function, |(_, kind)| kind);
        self.record([kind.output(call_id, output)]);
    }

    /// Replaces the whole history with a compacted one ending in `summary`, and
    /// records that in the rollout so a resumed thread loads the compacted history.
    pub(crate) fn replace_history(&self, items: Vec<ResponseItem>, summary: String) {
        let mut history = lock(&self.history);
        if let Some(rollout) = &self.rollout {
            rollout.record_compacted(CompactedRecord {
                message: summary,
                replacement_history: items.clone(),
            });
        }
        *history = items;
        drop(history);
        // The last report was about the old history; the next estimate starts afresh.
        *lock(&self.usage_mark) = None;
    }

    /// Notes the last response's usage report (`None`: it had none) for the history as
    /// it now stands.
    pub(crate) fn mark_usage(&self, usage: Option<&TokenUsage>) {
        let len = lock(&self.history).len();
        *lock(&self.usage_mark) = usage.and_then(|usage| UsageMark::from_usage(usage, len));
    }

    /// Queues the settings turn `turn_id` starts with for the rollout.
    pub(crate) fn record_turn_context(&self, turn_id: &str, config: &Config) {
        if let Some(rollout) = &self.rollout {
            rollout.record_turn_context(TurnContextRecord::new(turn_id, config));
        }
    }

    /// The settings a new turn starts with, after applying its overrides (kept for
    /// later turns); `Err` says why the overrides cannot apply.
    pub(crate) fn settings_for_turn(
        &self,
        overrides: Option<&TurnOverrides>,
    ) -> Result<TurnSettings, String> {
        let mut settings = lock(&self.settings);
        if let Some(overrides) = overrides {
            let config = settings
                .config
                .with_overrides(overrides)
                .map_err(|e| e.to_string())?;
            let client = if config.model == settings.config.model {
                settings.client.clone()
            } else {
                ModelClient::new(config.model_provider.clone(), config.model.clone())
                    .map_err(|e| e.to_string())?
            };
            *settings = TurnSettings {
                config: Arc::new(config),
                client,
            };
        }
        Ok(settings.clone())
    }

    /// Waits until the rollout's queued records reach the kernel, so a killed
    /// process keeps them. `Err` says why they could not be written (path and cause): the
    /// turn must fail rather than go on as if they were saved.
    pub(crate) async fn flush_rollout(&self) -> Result<(), String> {
        match &self.rollout {
            Some(rollout) => rollout.flush().await.map_err(|e| e.to_string()),
            None => Ok(()),
        }
    }

    /// When an earlier write of the rollout failed: brings the thread back to what the
    /// file holds (the history as saved, with calls left unanswered closed) so that the
    /// rollout is written again, and says what was lost. `Ok(None)` when nothing failed;
    /// `Err` when the file cannot be read back.
    pub(crate) async fn recover_rollout(&self) -> Result<Option<String>, String> {
        let Some(rollout) = &self.rollout else {
            return Ok(None);
        };
        let Some(failure) = rollout.failure() else {
            return Ok(None);
        };
        let saved = rollout
            .recover()
            .await
            .map_err(|e| format!("{failure}; reading it back failed too: {e}"))?;
        let mut history = lock(&self.history);
        let kept = history
            .iter()
            .zip(&saved.history)
            .take_while(|(a, b)| a == b)
            .count();
        let lost: Vec<String> = history[kept..]
            .iter()
            .filter(|item| matches!(item, ResponseItem::Message { role, .. } if role == "user"))
            .filter_map(ResponseItem::message_text)
            .map(|text| format!("\"{}\"", crate::rollout::one_line_preview(&text)))
            .collect();
        let dropped = history.len() - kept;
        *history = saved.history;
        drop(history);
        *lock(&self.usage_mark) = None;
        rollout.record_items(&saved.closed_calls);
        let prompts = if lost.is_empty() {
            String::new()
        } else {
            format!(" (the turns of {})", lost.join(", "))
        };
        Ok(Some(format!(
            "{failure}. The conversation continues from what was saved: {dropped} history \
             items after it were lost{prompts} and the model no longer sees them."
        )))
    }

    /// Syncs and closes the rollout, so the thread can be resumed elsewhere at once.
    async fn close_rollout(&self) {
        if let Some(rollout) = &self.rollout {
            let _ = rollout.close().await;
        }
    }

    /// Adds a model response's usage and returns the new total.
    pub(crate) fn add_usage(&self, usage: &TokenUsage) -> TokenUsage {
        let mut total = lock(&self.total_usage);
        total.add(usage);
        *total
    }
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What a new thread's loop starts from.
pub(crate) struct ThreadStart {
    pub(crate) id: String,
    pub(crate) config: Arc<Config>,
    pub(crate) client: ModelClient,
    pub(crate) history: Vec<ResponseItem>,
    pub(crate) rollout: Option<RolloutRecorder>,
    /// The seq the log continues from (1 for a new thread).
    pub(crate) next_seq: u64,
}

/// Starts the submission loop for a session and returns the handle.
pub(crate) fn spawn_thread(start: ThreadStart) -> Arc<Thread> {
    spawn(start, |_| {}, false)
}

/// Like [`spawn_thread`], for a new thread of the user's: `announce` publishes its first
/// events, then its loop adds the project's AGENTS.md instructions to the history (read off
/// the async runtime, skipped files reported as warnings) before it takes any op.
pub(crate) fn spawn_new_thread(start: ThreadStart, announce: impl FnOnce(&Thread)) -> Arc<Thread> {
    spawn(start, announce, true)
}

fn spawn(
    start: ThreadStart,
    announce: impl FnOnce(&Thread),
    read_project_docs: bool,
) -> Arc<Thread> {
    let (submit_tx, submit_rx) = mpsc::unbounded_channel();
    let log = Arc::new(EventLog::new(
        start.id.clone(),
        start.next_seq,
        start.rollout.clone(),
    ));
    let settings = Arc::new(Mutex::new(TurnSettings {
        config: start.config,
        client: start.client,
    }));
    let tools = Arc::new(ThreadTools::default());
    let session = Arc::new(Session {
        tools: tools.clone(),
        tool_state: ToolState::default(),
        mcp: crate::mcp::ThreadServers::default(),
        approvals: ApprovalGate::new(),
        settings: settings.clone(),
        log: log.clone(),
        history: Mutex::new(start.history),
        total_usage: Mutex::default(),
        usage_mark: Mutex::default(),
        rollout: start.rollout,
    });
    let thread = Arc::new(Thread {
        id: start.id,
        settings,
        submit_tx,
        log,
        next_submission: AtomicU64::new(1),
        tools,
    });
    announce(&thread);
    tokio::spawn(async move {
        if read_project_docs {
            add_project_instructions(&session).await;
        }
        // The first turn waits for the servers: their tools are in its first request.
        let config = lock(&session.settings).config.clone();
        session
            .mcp
            .start(&config, &session.log, &session.tools)
            .await;
        submission_loop(session, submit_rx).await;
    });
    thread
}

struct RunningTurn {
    turn_id: String,
    cancel: CancellationToken,
    handle: JoinHandle<()>,
}

struct QueuedTurn {
    turn_id: String,
    submission_id: String,
    kind: QueuedKind,
}

/// What a queued turn does: a model turn (input, compaction) or a review.
enum QueuedKind {
    /// A turn of the model's (see `crate::turn`).
    Model(TurnKind),
    /// A review (see `crate::review`).
    Review(ReviewRequest),
}

/// Appends a new thread's AGENTS.md instructions to its history (right after the developer
/// messages, before any turn) and reports the files that were skipped or cut.
async fn add_project_instructions(session: &Session) {
    let config = lock(&session.settings).config.clone();
    let (message, warnings) = crate::instructions::project_instructions(&config).await;
    session.record(message);
    for message in warnings {
        session
            .log
            .publish(None, "", ThreadEventMsg::Warning(WarningEvent { message }));
    }
}

/// Routes ops until shutdown or until every handle is gone (the channel closes),
/// running one turn at a time, then stops any running turn.
async fn submission_loop(session: Arc<Session>, mut ops: mpsc::UnboundedReceiver<Submission>) {
    let mut running: Option<RunningTurn> = None;
    let mut queue: VecDeque<QueuedTurn> = VecDeque::new();
    loop {
        let finished = async {
            match running.as_mut() {
                Some(turn) => {
                    let _ = (&mut turn.handle).await;
                }
                None => std::future::pending().await,
            }
        };
        let submission = tokio::select! {
            () = finished => {
                running = queue.pop_front().map(|next| start_turn(&session, next));
                continue;
            }
            submission = ops.recv() => submission,
        };
        let Some(Submission { id, op }) = submission else {
            break;
        };
        match op {
            Op::UserInput {
                turn_id,
                items,
                overrides,
                output_schema,
            } => {
                let turn = QueuedTurn {
                    turn_id,
                    submission_id: id,
                    kind: QueuedKind::Model(TurnKind::Input {
                        items,
                        overrides,
                        output_schema,
                    }),
                };
                enqueue(&session, &mut running, &mut queue, turn);
            }
            Op::Review { turn_id, request } => {
                let turn = QueuedTurn {
                    turn_id,
                    submission_id: id,
                    kind: QueuedKind::Review(request),
                };
                enqueue(&session, &mut running, &mut queue, turn);
            }
            Op::Compact { turn_id } => {
                let turn = QueuedTurn {
                    turn_id,
                    submission_id: id,
                    kind: QueuedKind::Model(TurnKind::Compact),
                };
                enqueue(&session, &mut running, &mut queue, turn);
            }
            Op::Interrupt { turn_id } => {
                if let Some(turn) = running.as_ref().filter(|t| t.turn_id == turn_id) {
                    turn.cancel.cancel();
                } else if let Some(at) = queue.iter().position(|t| t.turn_id == turn_id)
                    && let Some(dropped) = queue.remove(at)
                {
                    abort_queued(&session, dropped);
                }
            }
            Op::ExecApproval {
                id: call_id,
                decision,
                reason,
            }
            | Op::PatchApproval {
                id: call_id,
                decision,
                reason,
            } => {
                if !session
                    .approvals
                    .resolve(&call_id, Answer { decision, reason })
                {
                    tracing::warn!(call_id, "approval for a request nobody is waiting on");
                }
            }
            Op::Shutdown => {
                stop(&session, running.take(), &mut queue).await;
                session.mcp.release().await;
                session
                    .log
                    .publish_final(&id, ThreadEventMsg::ShutdownComplete)
                    .await;
                return;
            }
        }
    }
    stop(&session, running, &mut queue).await;
    session.mcp.release().await;
    session.close_rollout().await;
    session.log.close();
}

/// Starts `turn` now if nothing runs, else queues it behind the others.
fn enqueue(
    session: &Arc<Session>,
    running: &mut Option<RunningTurn>,
    queue: &mut VecDeque<QueuedTurn>,
    turn: QueuedTurn,
) {
    if running.is_some() {
        queue.push_back(turn);
    } else {
        *running = Some(start_turn(session, turn));
    }
}

fn start_turn(session: &Arc<Session>, turn: QueuedTurn) -> RunningTurn {
    let cancel = CancellationToken::new();
    let handle = tokio::spawn(supervise_turn(
        session.clone(),
        turn.submission_id,
        turn.turn_id.clone(),
        turn.kind,
        cancel.clone(),
    ));
    RunningTurn {
        turn_id: turn.turn_id,
        cancel,
        handle,
    }
}

/// Ends a turn that never started, so whoever waits for it hears that it is over.
fn abort_queued(session: &Session, turn: QueuedTurn) {
    session.log.publish(
        Some(&turn.turn_id),
        &turn.submission_id,
        TurnClock::never_started().aborted(&turn.turn_id, TurnAbortReason::Interrupted),
    );
}

/// Runs a turn; if it panics, still ends it with a `turn_failed` event so no front
/// door waits forever for a turn that is gone.
async fn supervise_turn(
    session: Arc<Session>,
    submission_id: String,
    turn_id: String,
    kind: QueuedKind,
    cancel: CancellationToken,
) {
    let turn = match kind {
        QueuedKind::Model(kind) => tokio::spawn(crate::turn::run_turn(
            session.clone(),
            TurnStart {
                submission_id: submission_id.clone(),
                turn_id: turn_id.clone(),
                kind,
            },
            cancel,
        )),
        QueuedKind::Review(request) => tokio::spawn(crate::review::run_review(
            session.clone(),
            submission_id.clone(),
            turn_id.clone(),
            request,
            cancel,
        )),
    };
    if let Err(err) = turn.await {
        tracing::error!("turn {turn_id} ended abnormally: {err}");
        session
            .log
            .publish_durable(
                Some(&turn_id),
                &submission_id,
                // How long it ran is not known here.
                TurnClock::never_started().failed(
                    format!("internal error: the turn ended abnormally ({err})"),
                    deputy_protocol::CodexErrorInfo::Other,
                ),
            )
            .await;
    }
}

async fn stop(session: &Session, turn: Option<RunningTurn>, queue: &mut VecDeque<QueuedTurn>) {
    for queued in queue.drain(..) {
        abort_queued(session, queued);
    }
    if let Some(turn) = turn {
        turn.cancel.cancel();
        let _ = turn.handle.await;
    }
}
