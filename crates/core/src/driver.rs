//! The one place a front door runs a turn: follow the thread's events, hand each to the
//! front door, route approval requests to the front door's [`Approver`] under the
//! approval timeout, interrupt on cancellation, and map the turn's end to a
//! [`TurnOutcome`]. Front doors only translate: events to their wire, questions to
//! their way of asking.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use deputy_protocol::{
    ApplyPatchApprovalRequestEvent, ApprovalDecision, ExecApprovalRequestEvent, ItemEvent, Op,
    ReviewOutputEvent, ReviewRequest, ThreadEvent, ThreadEventMsg, ThreadItem, TurnAbortReason,
};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::approval::Answer;
use crate::thread::{Thread, ThreadError, TurnInput};

/// A question for the user, as the front door's [`Approver`] gets it.
#[derive(Debug, Clone)]
pub struct ApprovalRequest {
    /// The thread asking.
    pub thread_id: String,
    /// The turn asking.
    pub turn_id: String,
    /// The submission id the request event carries (Codex's event id).
    pub event_id: String,
    /// The command or file change item the question is about.
    pub item_id: String,
    /// What is asked.
    pub kind: ApprovalKind,
}

/// What an approval request is about.
#[derive(Debug, Clone)]
pub enum ApprovalKind {
    /// Running a command.
    Exec(ExecApprovalRequestEvent),
    /// Applying a patch.
    Patch(ApplyPatchApprovalRequestEvent),
}

impl ApprovalRequest {
    /// The request carried by `event`, if it is an approval request.
    pub fn from_event(event: &ThreadEvent) -> Option<Self> {
        let (item_id, kind) = match &event.msg {
            ThreadEventMsg::ExecApprovalRequest(r) => {
                (r.item_id.clone(), ApprovalKind::Exec(r.request.clone()))
            }
            ThreadEventMsg::PatchApprovalRequest(r) => {
                (r.item_id.clone(), ApprovalKind::Patch(r.request.clone()))
            }
            _ => return None,
        };
        Some(Self {
            thread_id: event.thread_id.clone(),
            turn_id: event.turn_id.clone().unwrap_or_default(),
            event_id: event.submission_id.clone(),
            item_id,
            kind,
        })
    }

    /// The model's tool call id the engine waits on.
    pub fn call_id(&self) -> &str {
        match &self.kind {
            ApprovalKind::Exec(r) => &r.call_id,
            ApprovalKind::Patch(r) => &r.call_id,
        }
    }

    /// The op that answers this request.
    fn answer_op(&self, answer: Answer) -> Op {
        let id = self.call_id().to_string();
        let Answer { decision, reason } = answer;
        match self.kind {
            ApprovalKind::Exec(_) => Op::ExecApproval {
                id,
                decision,
                reason,
            },
            ApprovalKind::Patch(_) => Op::PatchApproval {
                id,
                decision,
                reason,
            },
        }
    }
}

/// How a front door asks its user.
pub trait Approver: Send + Sync + 'static {
    /// Asks about `request`. The driver drops the future when the answer is no longer
    /// wanted (answered elsewhere, the turn ended, the timeout passed): withdraw the
    /// question then. A front door that cannot ask answers at once with a reason.
    fn ask(&self, request: ApprovalRequest) -> impl Future<Output = Answer> + Send + 'static;
}

/// Asks the front door about every approval request it is shown, under the thread's
/// approval timeout, and stops asking once the answer is no longer wanted.
pub struct ApprovalRouter<A: Approver> {
    thread: Arc<Thread>,
    approver: Arc<A>,
    timeout: Duration,
    asking: HashMap<String, Asking>,
}

struct Asking {
    turn_id: String,
    task: JoinHandle<()>,
}

impl<A: Approver> ApprovalRouter<A> {
    /// A router answering `thread`'s requests through `approver`.
    pub fn new(thread: Arc<Thread>, approver: Arc<A>) -> Self {
        let timeout = thread.config().approval_timeout;
        Self {
            thread,
            approver,
            timeout,
            asking: HashMap::new(),
        }
    }

    /// Looks at one event of the thread: starts asking about an approval request,
    /// stops asking once it was answered or its turn ended.
    pub fn observe(&mut self, event: &ThreadEvent) {
        if let Some(request) = ApprovalRequest::from_event(event) {
            self.ask(request);
            return;
        }
        match &event.msg {
            ThreadEventMsg::ApprovalResolved(resolved) => {
                if let Some(asking) = self.asking.remove(&resolved.call_id) {
                    asking.task.abort();
                }
            }
            msg if msg.ends_turn() => {
                let ended = event.turn_id.as_deref().unwrap_or_default();
                self.asking.retain(|_, asking| {
                    let keep = asking.turn_id != ended;
                    if !keep {
                        asking.task.abort();
                    }
                    keep
                });
            }
            _ => {}
        }
    }

    fn ask(&mut self, request: ApprovalRequest) {
        let question = self.approver.ask(request.clone());
        let (thread, timeout) = (self.thread.clone(), self.timeout);
        let call_id = request.call_id().to_string();
        let turn_id = request.turn_id.clone();
        let task = tokio::spawn(async move {
            let answer = tokio::time::timeout(timeout, question)
                .await
                .unwrap_or_else(|_| Answer {
                    decision: ApprovalDecision::TimedOut,
                    reason: Some(format!(
                        "no answer to the approval request within {} s",
                        timeout.as_secs()
                    )),
                });
            let _ = thread.submit(request.answer_op(answer));
        });
        if let Some(stale) = self.asking.insert(call_id, Asking { turn_id, task }) {
            stale.task.abort();
        }
    }
}

impl<A: Approver> Drop for ApprovalRouter<A> {
    fn drop(&mut self) {
        for (_, asking) in self.asking.drain() {
            asking.task.abort();
        }
    }
}

/// How a turn ended, for the front door's reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnOutcome {
    /// The turn finished; the model's last message, if any.
    Completed {
        /// The model's last message of the turn.
        last_agent_message: Option<String>,
    },
    /// The turn was stopped (interrupted, or the user answered `abort`).
    Aborted(TurnAbortReason),
    /// The turn failed; the message says why.
    Failed(String),
    /// The thread stopped before the turn ended.
    ThreadStopped,
}

impl TurnOutcome {
    /// The outcome a turn-ending event stands for; `None` for other events.
    pub fn from_end(msg: &ThreadEventMsg) -> Option<Self> {
        match msg {
            ThreadEventMsg::TurnComplete(done) => Some(Self::Completed {
                last_agent_message: done.last_agent_message.clone(),
            }),
            ThreadEventMsg::TurnAborted(aborted) => Some(Self::Aborted(aborted.reason)),
            ThreadEventMsg::TurnFailed(failed) => Some(Self::Failed(failed.message.clone())),
            _ => None,
        }
    }
}

/// What a front door does with a turn's events while the driver runs it.
pub trait TurnObserver: Send {
    /// Takes one event (the turn's own, and thread-level ones such as `session_configured`).
    fn deliver(&mut self, event: &ThreadEvent) -> impl Future<Output = ()> + Send;

    /// Resolves whenever the front door wants to report liveness (progress, a spinner);
    /// the driver polls it between events. Never, by default.
    fn tick(&mut self) -> impl Future<Output = ()> + Send {
        std::future::pending()
    }
}

/// A turn to run.
#[derive(Debug, Clone)]
pub struct TurnRequest {
    /// Echoed as the events' `submission_id` (Codex's event id).
    pub submission_id: String,
    /// The user's input, and what else the turn asks for.
    pub input: TurnInput,
    /// Also deliver the thread's events after this seq that came before the turn
    /// (`Some(0)`: the whole thread so far, e.g. `session_configured` of a new thread);
    /// `None`: only what happens from now on.
    pub replay_after: Option<u64>,
}

/// A turn the driver ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DrivenTurn {
    /// The turn's id.
    pub turn_id: String,
    /// How it ended.
    pub outcome: TurnOutcome,
}

/// A review to run as a turn (see `crate::review`).
#[derive(Debug, Clone)]
pub struct ReviewTurnRequest {
    /// Echoed as the events' `submission_id` (Codex's event id).
    pub submission_id: String,
    /// What to review, and how.
    pub request: ReviewRequest,
    /// As [`TurnRequest::replay_after`].
    pub replay_after: Option<u64>,
}

/// A review turn the driver ran.
#[derive(Debug, Clone, PartialEq)]
pub struct DrivenReview {
    /// The turn and how it ended.
    pub turn: DrivenTurn,
    /// The findings the review exited with; `None` when it was interrupted or failed.
    pub output: Option<ReviewOutputEvent>,
}

/// Runs one turn on `thread` for a front door: delivers its events to `observer` in
/// order (ending with the turn-ending event), asks `approver` about its approval
/// requests, and interrupts it once `cancel` fires.
pub async fn drive_turn<A: Approver, O: TurnObserver>(
    thread: &Arc<Thread>,
    request: TurnRequest,
    approver: Arc<A>,
    observer: &mut O,
    cancel: &CancellationToken,
) -> Result<DrivenTurn, ThreadError> {
    let TurnRequest {
        submission_id,
        input,
        replay_after,
    } = request;
    drive(
        thread,
        replay_after,
        |thread| thread.submit_input(submission_id, input),
        approver,
        observer,
        cancel,
    )
    .await
}

/// [`drive_turn`] for a review: submits `request` as a review turn and also returns the
/// findings its `exited_review_mode` item carried. A review asks no questions (the
/// reviewer runs read-only without approvals), so there is no approver.
pub async fn drive_review<O: TurnObserver>(
    thread: &Arc<Thread>,
    request: ReviewTurnRequest,
    observer: &mut O,
    cancel: &CancellationToken,
) -> Result<DrivenReview, ThreadError> {
    let ReviewTurnRequest {
        submission_id,
        request,
        replay_after,
    } = request;
    let mut observer = ReviewObserver {
        inner: observer,
        output: None,
    };
    let turn = drive(
        thread,
        replay_after,
        |thread| thread.submit_review(submission_id, request),
        Arc::new(Unasked),
        &mut observer,
        cancel,
    )
    .await?;
    Ok(DrivenReview {
        turn,
        output: observer.output,
    })
}

/// [`drive_turn`] for a compaction of the history (`/compact`): a turn of its own whose
/// one item is a `context_compaction`. It asks no questions.
pub async fn drive_compact<O: TurnObserver>(
    thread: &Arc<Thread>,
    submission_id: String,
    replay_after: Option<u64>,
    observer: &mut O,
    cancel: &CancellationToken,
) -> Result<DrivenTurn, ThreadError> {
    drive(
        thread,
        replay_after,
        |thread| thread.submit_compact(submission_id),
        Arc::new(Unasked),
        observer,
        cancel,
    )
    .await
}

/// The approver of a turn that asks nothing (a review, a compaction): should a question
/// come anyway, it is refused rather than left waiting.
struct Unasked;

impl Approver for Unasked {
    fn ask(&self, _request: ApprovalRequest) -> impl Future<Output = Answer> + Send + 'static {
        std::future::ready(Answer {
            decision: ApprovalDecision::Denied,
            reason: Some("this turn runs without approvals".to_string()),
        })
    }
}

/// Passes events on to the front door's observer, keeping the review's findings.
struct ReviewObserver<'o, O> {
    inner: &'o mut O,
    output: Option<ReviewOutputEvent>,
}

impl<O: TurnObserver> TurnObserver for ReviewObserver<'_, O> {
    async fn deliver(&mut self, event: &ThreadEvent) {
        if let ThreadEventMsg::ItemCompleted(ItemEvent {
            item: ThreadItem::ExitedReviewMode(exited),
        }) = &event.msg
        {
            self.output = exited.output.clone();
        }
        self.inner.deliver(event).await;
    }

    async fn tick(&mut self) {
        self.inner.tick().await;
    }
}

/// The one driver loop: subscribes, submits the turn with `submit`, then follows it to
/// its end.
async fn drive<A: Approver, O: TurnObserver>(
    thread: &Arc<Thread>,
    replay_after: Option<u64>,
    submit: impl FnOnce(&Thread) -> Result<String, ThreadError>,
    approver: Arc<A>,
    observer: &mut O,
    cancel: &CancellationToken,
) -> Result<DrivenTurn, ThreadError> {
    let mut events = thread.subscribe(replay_after.unwrap_or_else(|| thread.last_seq()));
    let turn_id = submit(thread)?;
    let mut router = ApprovalRouter::new(thread.clone(), approver);
    let mut interrupted = false;
    loop {
        tokio::select! {
            next = events.next() => {
                let event = match next {
                    Some(Ok(event)) => event,
                    Some(Err(_lagged)) => {
                        events = events.resubscribe();
                        continue;
                    }
                    None => {
                        return Ok(DrivenTurn { turn_id, outcome: TurnOutcome::ThreadStopped });
                    }
                };
                let outcome = match event.turn_id.as_deref() {
                    Some(other) if other != turn_id => continue,
                    Some(_) => TurnOutcome::from_end(&event.msg),
                    None => None,
                };
                router.observe(&event);
                observer.deliver(&event).await;
                if let Some(outcome) = outcome {
                    return Ok(DrivenTurn { turn_id, outcome });
                }
            }
            () = cancel.cancelled(), if !interrupted => {
                interrupted = true;
                let _ = thread.interrupt(&turn_id);
            }
            () = observer.tick() => {}
        }
    }
}
