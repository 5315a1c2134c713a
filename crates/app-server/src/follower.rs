//! One task per thread the client uses: it follows the thread through the driver
//! ([`follow_thread`]), turning each event into notifications ([`crate::translate`]) and
//! asking the client the thread's questions through its approver
//! ([`crate::approver`]), and starts turns (input, reviews, compactions) and interrupts
//! them, so that a response always goes out before the events its request causes.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use deputy_core::driver::{Follow, TurnObserver, follow_thread};
use deputy_core::{Thread, ThreadError, TurnInput};
use deputy_protocol::{
    InputItem, ReviewRequest, TaskStartedEvent, ThreadEvent, ThreadEventMsg, TurnOverrides,
};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::approver::ClientApprover;
use crate::outgoing::Outgoing;
use crate::protocol::{
    ClientMethod, JsonRpcError, RequestId, ReviewStartResponse, ThreadCompactStartResponse, Turn,
    TurnInterruptResponse, TurnStartResponse, TurnStatus, methods,
};
use crate::translate;

/// How many commands may wait for a follower.
const COMMAND_QUEUE: usize = 16;

/// What the server asks of a thread's follower.
#[derive(Debug)]
pub(crate) enum Command {
    /// Queue a turn and answer `turn/start` request `id`.
    StartTurn {
        /// The `turn/start` request.
        id: RequestId,
        /// The user's input.
        items: Vec<InputItem>,
        /// Settings the turn changes for itself and later turns.
        overrides: Option<TurnOverrides>,
        /// The JSON Schema the turn's final message must follow.
        output_schema: Option<serde_json::Value>,
    },
    /// Queue a review turn and answer `review/start` request `id`.
    StartReview {
        /// The `review/start` request.
        id: RequestId,
        /// What to review.
        request: ReviewRequest,
    },
    /// Queue a compaction turn and answer `thread/compact/start` request `id`.
    StartCompaction {
        /// The `thread/compact/start` request.
        id: RequestId,
    },
    /// Stop a turn and answer `turn/interrupt` request `id`.
    Interrupt {
        /// The `turn/interrupt` request.
        id: RequestId,
        /// The turn.
        turn_id: String,
    },
}

impl Command {
    /// The request the command answers.
    pub(crate) fn request_id(self) -> RequestId {
        match self {
            Self::StartTurn { id, .. }
            | Self::StartReview { id, .. }
            | Self::StartCompaction { id }
            | Self::Interrupt { id, .. } => id,
        }
    }
}

/// The submission id a request's turn carries: the request id as text.
fn submission_id(id: &RequestId) -> String {
    match id {
        RequestId::Integer(n) => n.to_string(),
        RequestId::String(s) => s.clone(),
    }
}

/// The handle on a thread's follower.
pub(crate) struct Follower {
    commands: mpsc::Sender<Command>,
    task: JoinHandle<()>,
}

impl Follower {
    /// Follows `thread` from the event after `after_seq`.
    pub(crate) fn spawn(thread: Arc<Thread>, after_seq: u64, outgoing: Outgoing) -> Self {
        let (commands, inbox) = mpsc::channel(COMMAND_QUEUE);
        let follow = Follow {
            events: thread.subscribe(after_seq),
            open_questions: Vec::new(),
        };
        let approver = Arc::new(ClientApprover::new(outgoing.clone()));
        let mut following = Following {
            thread: thread.clone(),
            outgoing,
            inbox,
            command: None,
            open_turns: HashSet::new(),
            started_at: HashMap::new(),
            client_gone: false,
            done: CancellationToken::new(),
        };
        let task = tokio::spawn(async move {
            // It ends when the thread stops, or once its client left and the turns it
            // started have ended (the listener, not the client, owns the thread).
            let done = following.done.clone();
            follow_thread(&thread, follow, approver, &mut following, &done).await;
            following.refuse_waiting().await;
        });
        Self { commands, task }
    }

    /// Whether it still follows its thread (false once the thread stopped).
    pub(crate) fn is_alive(&self) -> bool {
        !self.task.is_finished() && !self.commands.is_closed()
    }

    /// Hands `command` over; gives it back when the follower has stopped.
    pub(crate) async fn send(&self, command: Command) -> Result<(), Command> {
        self.commands.send(command).await.map_err(|e| e.0)
    }

    /// Waits up to `grace` for the follower to report its thread's end, then stops it.
    pub(crate) async fn finish(self, grace: std::time::Duration) {
        let Follower { commands, task } = self;
        drop(commands);
        let abort = task.abort_handle();
        if tokio::time::timeout(grace, task).await.is_err() {
            abort.abort();
        }
    }
}

struct Following {
    thread: Arc<Thread>,
    outgoing: Outgoing,
    inbox: mpsc::Receiver<Command>,
    /// The command taken from the inbox, to run before the next event.
    command: Option<Command>,
    /// Turns started here whose end has not been seen (running or queued).
    open_turns: HashSet<String>,
    /// When each turn seen starting started (Unix seconds), until its end is reported.
    started_at: HashMap<String, i64>,
    /// Whether the client left (its command queue closed).
    client_gone: bool,
    /// Ends the following: the client left and nothing of its own is left to report.
    done: CancellationToken,
}

impl TurnObserver for Following {
    async fn deliver(&mut self, event: &ThreadEvent) {
        let turn_id = event.turn_id.as_deref().unwrap_or_default();
        if let ThreadEventMsg::TurnStarted(TaskStartedEvent {
            started_at: Some(at),
            ..
        }) = &event.msg
        {
            self.started_at.insert(turn_id.to_string(), *at);
        }
        let started_at = self.started_at.get(turn_id).copied();
        if event.msg.ends_turn() {
            self.open_turns.remove(turn_id);
            self.started_at.remove(turn_id);
            if self.client_gone && self.open_turns.is_empty() {
                self.done.cancel();
            }
        }
        for notification in translate::thread_event(event, started_at) {
            self.outgoing.notify(notification).await;
        }
    }

    /// Commands come before further events: a response must precede the events its
    /// request causes.
    async fn wake(&mut self) {
        match self.inbox.recv().await {
            Some(command) => self.command = Some(command),
            // The client left: the turns it started stop, as they would with its
            // process; their ends are still reported while it may read. Nothing more
            // will come; the thread's events still do.
            None => {
                if !self.client_gone {
                    self.client_gone = true;
                    for turn_id in &self.open_turns {
                        let _ = self.thread.interrupt(turn_id);
                    }
                    if self.open_turns.is_empty() {
                        self.done.cancel();
                    }
                }
                std::future::pending().await
            }
        }
    }

    async fn tick(&mut self) {
        if let Some(command) = self.command.take() {
            self.command(command).await;
        }
    }
}

impl Following {
    /// The thread stopped: every command still waiting is answered with an error.
    async fn refuse_waiting(&mut self) {
        self.inbox.close();
        let waiting = self.command.take().into_iter();
        let mut queued = Vec::new();
        while let Ok(command) = self.inbox.try_recv() {
            queued.push(command);
        }
        for command in waiting.chain(queued) {
            let id = command.request_id();
            self.outgoing
                .error(
                    Some(id),
                    JsonRpcError::invalid_request("the thread has shut down"),
                )
                .await;
        }
    }

    async fn command(&mut self, command: Command) {
        match command {
            Command::StartTurn {
                id,
                items,
                overrides,
                output_schema,
            } => {
                let submitted = self.thread.submit_input(
                    submission_id(&id),
                    TurnInput {
                        items,
                        overrides,
                        output_schema,
                    },
                );
                self.started::<methods::TurnStart>(id, submitted, |turn, _| TurnStartResponse {
                    turn,
                })
                .await;
            }
            Command::StartReview { id, request } => {
                let submitted = self.thread.submit_review(submission_id(&id), request);
                self.started::<methods::ReviewStart>(id, submitted, |turn, thread_id| {
                    // Inline: the review is a turn of the thread itself.
                    ReviewStartResponse {
                        turn,
                        review_thread_id: thread_id.to_string(),
                    }
                })
                .await;
            }
            Command::StartCompaction { id } => {
                let submitted = self.thread.submit_compact(submission_id(&id));
                self.started::<methods::ThreadCompactStart>(id, submitted, |_, _| {
                    ThreadCompactStartResponse {}
                })
                .await;
            }
            Command::Interrupt { id, turn_id } => {
                let running = self.open_turns.contains(&turn_id)
                    || self.thread.active_turn().as_deref() == Some(turn_id.as_str());
                if !running {
                    let message = format!(
                        "turn {turn_id} is not running on thread {}",
                        self.thread.id()
                    );
                    self.outgoing
                        .error(Some(id), JsonRpcError::invalid_request(message))
                        .await;
                    return;
                }
                match self.thread.interrupt(&turn_id) {
                    Ok(()) => {
                        self.outgoing
                            .respond::<methods::TurnInterrupt>(id, &TurnInterruptResponse {})
                            .await;
                    }
                    Err(err) => {
                        self.outgoing
                            .error(Some(id), JsonRpcError::invalid_request(err.to_string()))
                            .await;
                    }
                }
            }
        }
    }

    /// Answers request `id` of `M` about a turn just submitted: with `response` (given the
    /// turn, `inProgress`, and the thread id), or with why it could not be queued.
    async fn started<M: ClientMethod>(
        &mut self,
        id: RequestId,
        submitted: Result<String, ThreadError>,
        response: impl FnOnce(Turn, &str) -> M::Response,
    ) {
        match submitted {
            Ok(turn_id) => {
                self.open_turns.insert(turn_id.clone());
                let turn = Turn::new(turn_id, TurnStatus::InProgress);
                let response = response(turn, self.thread.id());
                self.outgoing.respond::<M>(id, &response).await;
            }
            Err(err) => {
                self.outgoing
                    .error(Some(id), JsonRpcError::invalid_request(err.to_string()))
                    .await;
            }
        }
    }
}
