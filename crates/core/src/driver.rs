//! The one place a front door runs or watches a thread: follow its events, hand each to
//! the front door, route its questions to the front door's [`Approver`] under the
//! approval timeout, interrupt on cancellation, and map a turn's end to a
//! [`TurnOutcome`]. Front doors only translate: events to their wire, questions to
//! their way of asking.

// Runs on the async runtime: no blocking std calls (see clippy.toml).
#![cfg_attr(not(test), warn(clippy::disallowed_methods))]

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use deputy_protocol::{
    ApprovalDecision, ItemEvent, Op, Question, Reply, ReviewOutputEvent, ReviewRequest,
    ThreadEvent, ThreadEventMsg, ThreadItem, TurnAbortReason,
};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::event_log::Subscription;
use crate::thread::{Thread, ThreadError, TurnInput};

/// A question for the user, as the front door's [`Approver`] gets it.
#[derive(Debug, Clone)]
pub struct Asked {
    /// The thread asking.
    pub thread_id: String,
    /// The turn asking.
    pub turn_id: String,
    /// The submission id the question's event carries (Codex's event id).
    pub event_id: String,
    /// The item the question is about (a command, a file change, a tool call).
    pub item_id: String,
    /// What is asked.
    pub question: Question,
}

impl Asked {
    /// The question `event` asks, if it asks one.
    pub fn from_event(event: &ThreadEvent) -> Option<Self> {
        let ThreadEventMsg::QuestionAsked(asked) = &event.msg else {
            return None;
        };
        Some(Self {
            thread_id: event.thread_id.to_string(),
            turn_id: event.turn_id.as_deref().unwrap_or_default().to_string(),
            event_id: event.submission_id.to_string(),
            item_id: asked.item_id.clone(),
            question: asked.question.clone(),
        })
    }

    /// The model's tool call id the engine waits on.
    pub fn call_id(&self) -> &str {
        self.question.call_id()
    }
}

/// How a front door asks its user. Every front door matches [`Question`] exhaustively,
/// so a new kind of question does not compile until each says how it asks it.
pub trait Approver: Send + Sync + 'static {
    /// What the front door keeps about a question while it is open: `()` for a door
    /// whose [`Approver::ask`] does everything; the request it sent for a door that puts
    /// its questions in order with its other output ([`Approver::put`]).
    type Kept: Send + 'static;

    /// Puts the question in order with the door's other output: awaited right after
    /// the question's event was delivered, before the next event is. Returns what the
    /// door keeps while the question is open.
    fn put(&self, asked: &Asked) -> impl Future<Output = Self::Kept> + Send;

    /// Waits for the user's reply to `asked` (taking from `kept` what it needs). The
    /// router drops the future when the answer is no longer wanted (answered elsewhere,
    /// the turn ended, the timeout passed): withdraw the question then. A front door
    /// that cannot ask replies at once with a reason.
    fn ask(
        &self,
        asked: Asked,
        kept: &mut Self::Kept,
    ) -> impl Future<Output = Reply> + Send + 'static;

    /// The question `kept` stands for is settled — answered (by this door or another),
    /// or its turn or thread ended: tell the client if it needs telling. Awaited in
    /// order, before the event that settled it is delivered.
    fn settled(&self, kept: Self::Kept) -> impl Future<Output = ()> + Send;
}

/// Asks the front door about every question of a thread it is shown, under the
/// thread's approval timeout, and owns the bookkeeping: which questions are open, for
/// which turn, and what the door keeps about each until it is settled.
pub struct ApprovalRouter<A: Approver> {
    thread: Arc<Thread>,
    approver: Arc<A>,
    timeout: Duration,
    /// In the order asked.
    open: Vec<Open<A::Kept>>,
}

struct Open<K> {
    call_id: String,
    turn_id: String,
    task: JoinHandle<()>,
    kept: K,
}

impl<A: Approver> ApprovalRouter<A> {
    /// A router answering `thread`'s questions through `approver`.
    pub fn new(thread: Arc<Thread>, approver: Arc<A>) -> Self {
        let timeout = thread.config().approval_timeout;
        Self {
            thread,
            approver,
            timeout,
            open: Vec::new(),
        }
    }

    /// Handles one event of the thread, delivered by `deliver`: the questions it
    /// settles (answered, or their turn ended) are settled first — the door told —,
    /// then the event is delivered, then a question it asks is put and asked.
    pub async fn pass(&mut self, event: &ThreadEvent, deliver: impl Future<Output = ()>) {
        for kept in self.settle(event) {
            self.approver.settled(kept).await;
        }
        deliver.await;
        if let Some(asked) = Asked::from_event(event) {
            self.put(asked).await;
        }
    }

    /// Puts `asked` to the user and waits for the reply in a task of its own, answering
    /// the engine with it (or, after the approval timeout, with `timed_out`).
    pub async fn put(&mut self, asked: Asked) {
        let mut kept = self.approver.put(&asked).await;
        let call_id = asked.call_id().to_string();
        let turn_id = asked.turn_id.clone();
        let reply = self.approver.ask(asked, &mut kept);
        let (thread, timeout) = (self.thread.clone(), self.timeout);
        let answer_id = call_id.clone();
        let task = tokio::spawn(async move {
            let reply = tokio::time::timeout(timeout, reply)
                .await
                .unwrap_or_else(|_| Reply::Decision {
                    decision: ApprovalDecision::TimedOut,
                    reason: Some(format!(
                        "no answer to the approval request within {} s",
                        timeout.as_secs()
                    )),
                });
            let _ = thread.submit(Op::Answer {
                id: answer_id,
                reply,
            });
        });
        // The same call asked again (a resumed thread) replaces the stale question.
        if let Some(at) = self.open.iter().position(|open| open.call_id == call_id) {
            self.open.remove(at).task.abort();
        }
        self.open.push(Open {
            call_id,
            turn_id,
            task,
            kept,
        });
    }

    /// Settles the questions `event` ends and returns what the door kept for each.
    fn settle(&mut self, event: &ThreadEvent) -> Vec<A::Kept> {
        match &event.msg {
            ThreadEventMsg::ApprovalResolved(resolved) => {
                self.settle_where(|open| open.call_id == resolved.call_id)
            }
            msg if msg.ends_turn() => {
                let ended = event.turn_id.as_deref().unwrap_or_default();
                self.settle_where(|open| open.turn_id == ended)
            }
            _ => Vec::new(),
        }
    }

    /// Settles every open question (the thread stopped) and tells the door.
    pub async fn settle_all(&mut self) {
        for kept in self.settle_where(|_| true) {
            self.approver.settled(kept).await;
        }
    }

    fn settle_where(&mut self, settled: impl Fn(&Open<A::Kept>) -> bool) -> Vec<A::Kept> {
        let (done, open) = std::mem::take(&mut self.open)
            .into_iter()
            .partition::<Vec<_>, _>(|open| settled(open));
        self.open = open;
        done.into_iter()
            .map(|open| {
                open.task.abort();
                open.kept
            })
            .collect()
    }
}

impl<A: Approver> Drop for ApprovalRouter<A> {
    fn drop(&mut self) {
        for open in self.open.drain(..) {
            open.task.abort();
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

/// What a front door does with a thread's events while the driver runs a turn or
/// follows the thread.
pub trait TurnObserver: Send {
    /// Takes one event (the turn's own, and thread-level ones such as `session_configured`).
    fn deliver(&mut self, event: &ThreadEvent) -> impl Future<Output = ()> + Send;

    /// Resolves whenever the front door has something to do between events: report
    /// liveness (progress, a spinner), or take a command of its own. The driver polls it
    /// between events and drops it when an event comes first, so it must be cancel-safe;
    /// the work itself is [`TurnObserver::tick`]. Never, by default.
    fn wake(&mut self) -> impl Future<Output = ()> + Send {
        std::future::pending()
    }

    /// Does what [`TurnObserver::wake`] woke up for; runs to its end before the next
    /// event is delivered. Nothing, by default.
    fn tick(&mut self) -> impl Future<Output = ()> + Send {
        std::future::ready(())
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
/// order (ending with the turn-ending event), asks `approver` its questions, and
/// interrupts it once `cancel` fires.
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

/// The approver of a turn that asks nothing (a review, a compaction, the reviewer's
/// own turn): should a question come anyway, it is refused rather than left waiting.
pub struct Unasked;

impl Approver for Unasked {
    type Kept = ();

    async fn put(&self, _asked: &Asked) {}

    fn ask(&self, _asked: Asked, _kept: &mut ()) -> impl Future<Output = Reply> + Send + 'static {
        std::future::ready(Reply::denied("this turn runs without approvals"))
    }

    async fn settled(&self, _kept: ()) {}
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

    async fn wake(&mut self) {
        self.inner.wake().await;
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
                let Some(event) = next else {
                    return Ok(DrivenTurn { turn_id, outcome: TurnOutcome::ThreadStopped });
                };
                let outcome = match event.turn_id.as_deref() {
                    Some(other) if other != turn_id => continue,
                    Some(_) => TurnOutcome::from_end(&event.msg),
                    None => None,
                };
                // Boxed, here and below: what delivering and ticking hold lives only while
                // they run, instead of enlarging the future every waiting turn is kept in.
                Box::pin(router.pass(&event, observer.deliver(&event))).await;
                if let Some(outcome) = outcome {
                    return Ok(DrivenTurn { turn_id, outcome });
                }
            }
            () = cancel.cancelled(), if !interrupted => {
                interrupted = true;
                let _ = thread.interrupt(&turn_id);
            }
            () = observer.wake() => Box::pin(observer.tick()).await,
        }
    }
}

/// Where [`follow_thread`] starts.
#[derive(Debug)]
pub struct Follow {
    /// The thread's events to deliver: a subscription from where the door starts.
    pub events: Subscription,
    /// Questions still open at that point (read from the events before it), asked first.
    pub open_questions: Vec<Asked>,
}

/// How [`follow_thread`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FollowEnd {
    /// The thread stopped; every question still open was settled.
    ThreadStopped,
    /// `stop` fired; open questions were withdrawn.
    Stopped,
}

/// Follows `thread` for a front door that watches it rather than runs one turn (the
/// app-server's follower, a conversation stream): every event `follow.events` yields
/// goes to `observer` in order, every question is asked through `approver`, until the
/// thread stops or `stop` fires. `stop` is checked first, then the observer's
/// [`TurnObserver::wake`] (a front door's own commands come before further events).
pub async fn follow_thread<A: Approver, O: TurnObserver>(
    thread: &Arc<Thread>,
    follow: Follow,
    approver: Arc<A>,
    observer: &mut O,
    stop: &CancellationToken,
) -> FollowEnd {
    let mut events = follow.events;
    let mut router = ApprovalRouter::new(thread.clone(), approver);
    for asked in follow.open_questions {
        router.put(asked).await;
    }
    loop {
        tokio::select! {
            biased;
            () = stop.cancelled() => return FollowEnd::Stopped,
            // Boxed as in `drive`.
            () = observer.wake() => Box::pin(observer.tick()).await,
            next = events.next() => {
                let Some(event) = next else {
                    router.settle_all().await;
                    return FollowEnd::ThreadStopped;
                };
                Box::pin(router.pass(&event, observer.deliver(&event))).await;
            }
        }
    }
}
