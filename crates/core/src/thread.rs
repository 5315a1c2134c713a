//! A thread: one conversation with the model, driven by ops, reporting events.
//!
//! The public [`Thread`] is a handle: it submits ops and lends out its event
//! stream one turn at a time. The state lives in a [`Session`] owned by a
//! submission loop task that stops when the handle is dropped.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use deputy_protocol::{Event, EventMsg, InputItem, Op, ResponseItem, Submission, TokenUsage};
use tokio::sync::{OwnedMutexGuard, mpsc};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::approval::{Answer, ApprovalGate};
use crate::client::ModelClient;
use crate::config::Config;
use crate::event_sink::EventSink;
use crate::rollout::{RolloutRecorder, TurnContextRecord};

/// Why an op could not be delivered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ThreadError {
    /// A turn is already running on this thread.
    #[error("thread is busy: a turn is already running")]
    Busy,
    /// The thread has shut down.
    #[error("thread has shut down")]
    Closed,
}

/// A handle on a running thread.
#[derive(Debug)]
pub struct Thread {
    id: String,
    config: Arc<Config>,
    submit_tx: mpsc::UnboundedSender<Submission>,
    events: Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<Event>>>,
    next_submission: AtomicU64,
}

impl Thread {
    /// The thread id (a UUIDv7 string).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The configuration the thread runs with.
    pub fn config(&self) -> &Config {
        &self.config
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

    /// Resolves once the thread's loop has stopped (after shutdown).
    pub async fn closed(&self) {
        self.submit_tx.closed().await;
    }

    /// Starts a turn and takes the thread's event stream until it ends.
    /// Fails with [`ThreadError::Busy`] while another turn's events are being read.
    pub fn start_turn(
        self: &Arc<Self>,
        submission_id: String,
        text: String,
    ) -> Result<TurnEvents, ThreadError> {
        let guard = self
            .events
            .clone()
            .try_lock_owned()
            .map_err(|_| ThreadError::Busy)?;
        self.submit_with_id(
            submission_id,
            Op::UserInput {
                items: vec![InputItem::Text { text }],
            },
        )?;
        Ok(TurnEvents {
            events: guard,
            done: false,
        })
    }
}

/// The events of one turn, ending after `task_complete`, `turn_aborted` or `error`.
#[derive(Debug)]
pub struct TurnEvents {
    events: OwnedMutexGuard<mpsc::UnboundedReceiver<Event>>,
    done: bool,
}

impl TurnEvents {
    /// The next event of the turn; `None` after the turn-ending event or if the thread died.
    pub async fn next(&mut self) -> Option<Event> {
        if self.done {
            return None;
        }
        let event = self.events.recv().await;
        self.done = event.as_ref().is_none_or(|e| e.msg.ends_turn());
        event
    }
}

/// The state a thread's turns share.
pub(crate) struct Session {
    pub(crate) config: Arc<Config>,
    pub(crate) events: EventSink,
    pub(crate) history: Mutex<Vec<ResponseItem>>,
    pub(crate) approvals: ApprovalGate,
    pub(crate) client: ModelClient,
    pub(crate) total_usage: Mutex<TokenUsage>,
    /// Where the thread is persisted, when it is.
    pub(crate) rollout: Option<RolloutRecorder>,
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

    /// Queues the settings turn `turn_id` starts with for the rollout.
    pub(crate) fn record_turn_context(&self, turn_id: &str) {
        if let Some(rollout) = &self.rollout {
            rollout.record_turn_context(TurnContextRecord::new(turn_id, &self.config));
        }
    }

    /// Waits until the rollout's queued records reach the kernel, so a killed
    /// process keeps them. Failures are logged by the writer and not fatal.
    pub(crate) async fn flush_rollout(&self) {
        if let Some(rollout) = &self.rollout {
            let _ = rollout.flush().await;
        }
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

/// Starts the submission loop for a session and returns the handle.
pub(crate) fn spawn_thread(
    id: String,
    config: Arc<Config>,
    client: ModelClient,
    initial_history: Vec<ResponseItem>,
    rollout: Option<RolloutRecorder>,
) -> Arc<Thread> {
    let (submit_tx, submit_rx) = mpsc::unbounded_channel();
    let (event_tx, event_rx) = mpsc::unbounded_channel();
    let session = Arc::new(Session {
        approvals: ApprovalGate::new(config.approval_timeout),
        config: config.clone(),
        events: EventSink::new(event_tx, rollout.clone()),
        history: Mutex::new(initial_history),
        client,
        total_usage: Mutex::default(),
        rollout,
    });
    tokio::spawn(submission_loop(session, submit_rx));
    Arc::new(Thread {
        id,
        config,
        submit_tx,
        events: Arc::new(tokio::sync::Mutex::new(event_rx)),
        next_submission: AtomicU64::new(1),
    })
}

/// How long a new turn waits for the previous one to finish before the thread counts as busy.
const TURN_FINISH_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

struct RunningTurn {
    cancel: CancellationToken,
    handle: JoinHandle<()>,
}

/// Routes ops until shutdown or until every handle is gone (the channel
/// closes), then stops any running turn.
async fn submission_loop(session: Arc<Session>, mut ops: mpsc::UnboundedReceiver<Submission>) {
    let mut running: Option<RunningTurn> = None;
    while let Some(Submission { id, op }) = ops.recv().await {
        if running.as_ref().is_some_and(|r| r.handle.is_finished()) {
            running = None;
        }
        match op {
            Op::UserInput { items } => {
                // Front doors start turns only after reading the previous turn's
                // end event, which is the last thing a turn does: a turn still
                // registered here is finishing, so let it finish.
                if let Some(turn) = running.take_if(|turn| !turn.handle.is_finished()) {
                    let mut handle = turn.handle;
                    if tokio::time::timeout(TURN_FINISH_GRACE, &mut handle)
                        .await
                        .is_err()
                    {
                        running = Some(RunningTurn {
                            cancel: turn.cancel,
                            handle,
                        });
                    }
                }
                if running.as_ref().is_some_and(|r| !r.handle.is_finished()) {
                    session.events.send(
                        &id,
                        EventMsg::Error(deputy_protocol::ErrorEvent {
                            message: ThreadError::Busy.to_string(),
                        }),
                    );
                    continue;
                }
                let cancel = CancellationToken::new();
                let handle =
                    tokio::spawn(supervise_turn(session.clone(), id, items, cancel.clone()));
                running = Some(RunningTurn { cancel, handle });
            }
            Op::Interrupt => {
                if let Some(turn) = &running {
                    turn.cancel.cancel();
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
                stop(running.take()).await;
                session.close_rollout().await;
                session.events.send(&id, EventMsg::ShutdownComplete);
                return;
            }
        }
    }
    stop(running).await;
    session.close_rollout().await;
}

/// Runs a turn; if it panics, still ends it with an `error` event so no front
/// door waits forever for a turn that is gone.
async fn supervise_turn(
    session: Arc<Session>,
    id: String,
    items: Vec<deputy_protocol::InputItem>,
    cancel: CancellationToken,
) {
    let turn = tokio::spawn(crate::turn::run_turn(
        session.clone(),
        id.clone(),
        items,
        cancel,
    ));
    if let Err(err) = turn.await {
        tracing::error!("turn {id} ended abnormally: {err}");
        session.events.send(
            &id,
            EventMsg::Error(deputy_protocol::ErrorEvent {
                message: format!("internal error: the turn ended abnormally ({err})"),
            }),
        );
    }
}

async fn stop(turn: Option<RunningTurn>) {
    if let Some(turn) = turn {
        turn.cancel.cancel();
        let _ = turn.handle.await;
    }
}
