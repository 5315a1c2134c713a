//! A thread: one conversation with the model, driven by ops, reporting events.
//!
//! The public [`Thread`] is a handle: it submits ops, mints turn ids and hands out
//! subscriptions to the thread's [`EventLog`]. The state lives in a `Session` owned
//! by the thread's submission loop (`crate::submission_loop`).

// Runs on the async runtime: no blocking std calls (see clippy.toml).
#![cfg_attr(not(test), warn(clippy::disallowed_methods))]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use deputy_protocol::{
    InputItem, Op, ResponseItem, ReviewRequest, Submission, ThreadEvent, TurnOverrides,
};
use futures::channel::mpsc;
use tokio_util::sync::CancellationToken;

use crate::client::ModelClient;
use crate::config::Config;
use crate::context::TurnSettings;
use crate::event_log::{EventLog, Subscription};
use crate::rollout::RolloutRecorder;
use crate::sync::lock;
use crate::tools::{ThreadTools, ToolHandler, ToolRegistryError};

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

/// The sending end of a thread's ops: futures' channel, not tokio's, whose cache-padded
/// state and block of 32 slots an idle thread would keep (800 B against about 100;
/// `deputy-bench`: idle-memory). Ops travel boxed, one small node each.
pub(crate) type OpSender = mpsc::UnboundedSender<Box<Submission>>;
/// The receiving end, its submission loop's.
pub(crate) type OpReceiver = mpsc::UnboundedReceiver<Box<Submission>>;

/// A handle on a running thread.
#[derive(Debug)]
pub struct Thread {
    id: String,
    settings: Arc<Mutex<TurnSettings>>,
    submit_tx: OpSender,
    /// Cancelled once the submission loop has stopped (its task ended or was dropped).
    stopped: CancellationToken,
    log: Arc<EventLog>,
    next_submission: AtomicU64,
    /// The handlers added to the thread at run time (shared with its submission loop).
    tools: Arc<ThreadTools>,
}

impl Thread {
    /// A handle sending ops to a submission loop on `submit_tx`, which cancels `stopped`
    /// when it stops.
    pub(crate) fn new(
        id: String,
        settings: Arc<Mutex<TurnSettings>>,
        submit_tx: OpSender,
        stopped: CancellationToken,
        log: Arc<EventLog>,
        tools: Arc<ThreadTools>,
    ) -> Self {
        Self {
            id,
            settings,
            submit_tx,
            stopped,
            log,
            next_submission: AtomicU64::new(1),
            tools,
        }
    }

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

    /// Every event of the thread so far, replayed from memory and the rollout (streaming
    /// deltas only where memory still holds them).
    pub async fn events_so_far(&self) -> Vec<Arc<ThreadEvent>> {
        let end = self.last_seq();
        let mut events = self.subscribe(0);
        let mut out = Vec::new();
        while let Some(event) = events.next_through(end).await {
            out.push(event);
        }
        out
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
            .unbounded_send(Box::new(Submission { id, op }))
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
        self.stopped.cancelled().await;
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
            let Some(event) = self.events.next().await else {
                self.done = true;
                return None;
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

/// Starts a thread's submission loop (`crate::submission_loop::spawn_thread`), handed to
/// what starts threads of its own (a review's reviewer) so that it need not depend on
/// the loop that runs it.
pub(crate) type SpawnThread = fn(ThreadStart) -> Arc<Thread>;

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
