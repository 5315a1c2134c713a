//! A thread's event log: every event numbered, kept in a bounded window in memory,
//! written to the rollout (all but streaming deltas), and delivered to any number of
//! subscribers, each of which first replays what it missed and then follows live.
//!
//! Publishing never waits for a subscriber: each has a bounded buffer, and one that
//! falls too far behind is cut off ([`Lagged`]); a [`Subscription`] then subscribes again
//! by itself after the last event it returned, so its reader still sees every event once,
//! in order. Events older than the window are read back from the
//! rollout, which is why deltas (not on disk) may be missing from a very old replay.

// Runs on the async runtime: no blocking std calls (see clippy.toml).
#![cfg_attr(not(test), warn(clippy::disallowed_methods))]

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use deputy_protocol::{ThreadEvent, ThreadEventMsg};
use tokio::sync::mpsc;

use crate::rollout::{EventReplay, RolloutRecorder};
use crate::sync::lock;

/// Events a subscriber may have pending before it counts as lagging.
pub const SUBSCRIBER_BUFFER: usize = 4096;
/// Most events the in-memory window holds.
pub const WINDOW_EVENTS: usize = 4096;
/// Most bytes (as serialized) the in-memory window holds; the newest event is always kept.
pub const WINDOW_BYTES: usize = 8 * 1024 * 1024;

/// A subscriber fell more than [`SUBSCRIBER_BUFFER`] events behind and was cut off.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the subscriber fell behind after event {last_seq}; subscribe again from there")]
pub struct Lagged {
    /// The last event it received; subscribe again after it.
    pub last_seq: u64,
}

/// The log of one thread.
#[derive(Debug)]
pub struct EventLog {
    thread_id: Arc<str>,
    rollout: Option<RolloutRecorder>,
    state: Mutex<LogState>,
}

#[derive(Debug)]
struct LogState {
    next_seq: u64,
    window: VecDeque<(Arc<ThreadEvent>, usize)>,
    window_bytes: usize,
    subscribers: Vec<Subscriber>,
    /// While a turn's end is being made durable: what was published meanwhile, delivered after it.
    held: Option<Vec<(Arc<ThreadEvent>, usize)>>,
    /// The turn and submission ids of the newest event, which the next ones share.
    last_ids: (Option<Arc<str>>, Arc<str>),
    active_turn: Option<String>,
    /// Turns submitted whose end has not been delivered yet (running or queued).
    open_turns: usize,
    closed: bool,
    last_activity: Instant,
}

#[derive(Debug)]
struct Subscriber {
    tx: mpsc::Sender<Arc<ThreadEvent>>,
    lagged: Arc<AtomicBool>,
}

impl EventLog {
    /// A log for `thread_id` whose next event is numbered `next_seq` (1 for a new thread).
    pub fn new(thread_id: String, next_seq: u64, rollout: Option<RolloutRecorder>) -> Self {
        Self {
            thread_id: thread_id.into(),
            rollout,
            state: Mutex::new(LogState {
                next_seq: next_seq.max(1),
                window: VecDeque::new(),
                window_bytes: 0,
                subscribers: Vec::new(),
                held: None,
                last_ids: Default::default(),
                active_turn: None,
                open_turns: 0,
                closed: false,
                last_activity: Instant::now(),
            }),
        }
    }

    /// Appends an event and delivers it (after whatever a pending durable publish holds).
    pub fn publish(&self, turn_id: Option<&str>, submission_id: &str, msg: ThreadEventMsg) -> u64 {
        let mut state = lock(&self.state);
        let (event, weight) = self.append(&mut state, turn_id, submission_id, msg);
        let seq = event.seq;
        match state.held.as_mut() {
            Some(held) => held.push((event, weight)),
            None => deliver(&mut state, event, weight),
        }
        seq
    }

    /// Appends an event, waits until the rollout holds it on disk, then delivers it:
    /// whoever sees it can rely on it surviving a crash. Events published meanwhile
    /// are delivered right after it, in order.
    pub async fn publish_durable(
        &self,
        turn_id: Option<&str>,
        submission_id: &str,
        msg: ThreadEventMsg,
    ) -> u64 {
        self.publish_after(turn_id, submission_id, msg, false).await
    }

    /// Publishes the thread's last event: it is written, the rollout is closed (its
    /// lock released, so whoever sees the event can resume the thread elsewhere), then
    /// it is delivered and the log closes.
    pub async fn publish_final(&self, submission_id: &str, msg: ThreadEventMsg) -> u64 {
        let seq = self.publish_after(None, submission_id, msg, true).await;
        self.close();
        seq
    }

    async fn publish_after(
        &self,
        turn_id: Option<&str>,
        submission_id: &str,
        msg: ThreadEventMsg,
        close_rollout: bool,
    ) -> u64 {
        let (seq, release) = {
            let mut state = lock(&self.state);
            let (event, weight) = self.append(&mut state, turn_id, submission_id, msg);
            let seq = event.seq;
            match state.held.as_mut() {
                // Someone else is already holding: queue behind them.
                Some(held) => {
                    held.push((event, weight));
                    (seq, None)
                }
                None => {
                    state.held = Some(vec![(event, weight)]);
                    (seq, Some(Release { log: self }))
                }
            }
        };
        if let Some(rollout) = &self.rollout {
            // A failed sync is logged by the writer; the event still goes out — but a turn
            // whose records did not reach the disk is not reported as complete.
            if close_rollout {
                let _ = rollout.close().await;
            } else if release.is_some()
                && let Err(err) = rollout.sync().await
            {
                self.fail_held_completion(seq, err.to_string());
            }
        }
        drop(release);
        seq
    }

    /// Turns the held event `seq`, if it reports a turn complete, into that turn's failure
    /// with `message`: what the client is told must match what the disk holds.
    fn fail_held_completion(&self, seq: u64, message: String) {
        let mut state = lock(&self.state);
        let Some(held) = state.held.as_mut() else {
            return;
        };
        for (event, _) in held.iter_mut() {
            if let ThreadEventMsg::TurnComplete(done) = &event.msg
                && event.seq == seq
            {
                let mut failed = ThreadEvent::clone(event);
                // The turn still ended when it did; only how is corrected.
                failed.msg = ThreadEventMsg::TurnFailed(deputy_protocol::ErrorEvent {
                    message,
                    codex_error_info: Some(deputy_protocol::CodexErrorInfo::Other),
                    completed_at: done.completed_at,
                    duration_ms: done.duration_ms,
                });
                *event = Arc::new(failed);
                return;
            }
        }
    }

    fn append(
        &self,
        state: &mut LogState,
        turn_id: Option<&str>,
        submission_id: &str,
        msg: ThreadEventMsg,
    ) -> (Arc<ThreadEvent>, usize) {
        let (last_turn, last_submission) = &mut state.last_ids;
        if last_turn.as_deref() != turn_id {
            *last_turn = turn_id.map(Arc::from);
        }
        if **last_submission != *submission_id {
            *last_submission = Arc::from(submission_id);
        }
        let event = ThreadEvent {
            seq: state.next_seq,
            thread_id: self.thread_id.clone(),
            turn_id: last_turn.clone(),
            submission_id: last_submission.clone(),
            msg,
        };
        state.next_seq += 1;
        state.last_activity = Instant::now();
        // Recorded under the lock, so the file's order is the log's order.
        let on_disk = self.rollout.as_ref().map_or(0, |r| r.record_event(&event));
        let weight = if on_disk > 0 {
            on_disk
        } else {
            weight_of(&event.msg)
        };
        (Arc::new(event), weight)
    }

    /// Follows the log from the event after `after_seq`: first what is already there
    /// (from the rollout when older than the window), then live events.
    pub fn subscribe(self: &Arc<Self>, after_seq: u64) -> Subscription {
        let mut state = lock(&self.state);
        state.last_activity = Instant::now();
        let window_start = state
            .window
            .front()
            .map_or(state.next_seq, |(event, _)| event.seq);
        let backlog: VecDeque<Arc<ThreadEvent>> = state
            .window
            .iter()
            .filter(|(event, _)| event.seq > after_seq)
            .map(|(event, _)| event.clone())
            .collect();
        let disk_range = (after_seq + 1 < window_start).then_some((after_seq, window_start));
        let (tx, rx) = mpsc::channel(SUBSCRIBER_BUFFER);
        let lagged = Arc::new(AtomicBool::new(false));
        if !state.closed {
            state.subscribers.push(Subscriber {
                tx,
                lagged: lagged.clone(),
            });
        }
        Subscription {
            lags: 0,
            log: self.clone(),
            disk_range,
            replay: None,
            backlog,
            rx,
            lagged,
            last_seq: after_seq,
            finished: false,
        }
    }

    /// The thread the log belongs to.
    pub fn thread_id(&self) -> &str {
        &self.thread_id
    }

    /// The seq of the newest event (0 before the first).
    pub fn last_seq(&self) -> u64 {
        lock(&self.state).next_seq - 1
    }

    /// The turn whose start has been delivered but not its end.
    pub fn active_turn(&self) -> Option<String> {
        lock(&self.state).active_turn.clone()
    }

    /// Counts a turn as submitted until its end is delivered ([`EventLog::open_turns`]).
    pub fn turn_submitted(&self) {
        let mut state = lock(&self.state);
        state.open_turns += 1;
        state.last_activity = Instant::now();
    }

    /// Forgets a submitted turn whose submission failed.
    pub fn turn_withdrawn(&self) {
        let mut state = lock(&self.state);
        state.open_turns = state.open_turns.saturating_sub(1);
    }

    /// Turns submitted whose end has not been delivered: running or queued.
    pub fn open_turns(&self) -> usize {
        lock(&self.state).open_turns
    }

    /// How many subscribers still follow the log.
    pub fn subscriber_count(&self) -> usize {
        let mut state = lock(&self.state);
        state.subscribers.retain(|s| !s.tx.is_closed());
        state.subscribers.len()
    }

    /// When something last happened on the log (an event, a subscription).
    pub fn last_activity(&self) -> Instant {
        lock(&self.state).last_activity
    }

    /// Ends every subscription once it has drained what it was sent; later subscribers
    /// get the backlog only.
    pub fn close(&self) {
        let mut state = lock(&self.state);
        state.closed = true;
        state.subscribers.clear();
    }

    /// Starts replaying the events `after < seq < before` as written to the rollout.
    async fn replay_persisted(&self, after: u64, before: u64) -> Option<EventReplay> {
        let rollout = self.rollout.as_ref()?;
        // Evicted events may still sit in the writer's buffer.
        let _ = rollout.flush().await;
        EventReplay::start(rollout.path(), rollout.event_index(), after, before)
            .inspect_err(|err| tracing::warn!("cannot replay past events: {err}"))
            .ok()
    }
}

/// Delivers the events held by a durable publish when dropped, so a cancelled
/// publisher can never leave the log holding them.
struct Release<'a> {
    log: &'a EventLog,
}

impl Drop for Release<'_> {
    fn drop(&mut self) {
        let mut state = lock(&self.log.state);
        for (event, weight) in state.held.take().unwrap_or_default() {
            deliver(&mut state, event, weight);
        }
    }
}

/// Puts `event` in the window and hands it to every subscriber that has room.
fn deliver(state: &mut LogState, event: Arc<ThreadEvent>, weight: usize) {
    match &event.msg {
        ThreadEventMsg::TurnStarted(started) => state.active_turn = Some(started.turn_id.clone()),
        msg if msg.ends_turn() => {
            state.open_turns = state.open_turns.saturating_sub(1);
            if state.active_turn.as_deref() == event.turn_id.as_deref() {
                state.active_turn = None;
            }
        }
        _ => {}
    }
    state.subscribers.retain(|subscriber| {
        match subscriber.tx.try_send(event.clone()) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                // Dropping the sender ends its stream once drained; the flag says why.
                subscriber.lagged.store(true, Ordering::Release);
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    });
    state.window_bytes += weight;
    state.window.push_back((event, weight));
    while state.window.len() > 1
        && (state.window.len() > WINDOW_EVENTS || state.window_bytes > WINDOW_BYTES)
    {
        if let Some((_, weight)) = state.window.pop_front() {
            state.window_bytes -= weight;
        }
    }
}

/// Roughly what an event not written to disk weighs: its payload plus some overhead.
fn weight_of(msg: &ThreadEventMsg) -> usize {
    const OVERHEAD: usize = 128;
    OVERHEAD
        + match msg {
            ThreadEventMsg::AgentMessageDelta(d) | ThreadEventMsg::ReasoningDelta(d) => {
                d.delta.len()
            }
            ThreadEventMsg::CommandOutputDelta(d) => d.chunk.len() * 4 / 3,
            other => serde_json::to_vec(other).map_or(0, |v| v.len()),
        }
}

/// One subscriber's view of a log: replay, then live.
#[derive(Debug)]
pub struct Subscription {
    /// How often the log cut this subscription off and it subscribed again.
    lags: u64,
    log: Arc<EventLog>,
    /// Events older than the window, still to be read from the rollout.
    disk_range: Option<(u64, u64)>,
    /// The rollout replay under way.
    replay: Option<EventReplay>,
    /// What the window held when subscribing.
    backlog: VecDeque<Arc<ThreadEvent>>,
    rx: mpsc::Receiver<Arc<ThreadEvent>>,
    lagged: Arc<AtomicBool>,
    last_seq: u64,
    finished: bool,
}

impl Drop for Subscription {
    /// Leaves the log's subscribers at once: an idle thread publishes nothing that would
    /// find the channel closed, and the channel would stay allocated until it did.
    fn drop(&mut self) {
        let mut state = lock(&self.log.state);
        state
            .subscribers
            .retain(|subscriber| !Arc::ptr_eq(&subscriber.lagged, &self.lagged));
    }
}

impl Subscription {
    /// The next event; `None` when the log is closed (the thread stopped) and everything
    /// was read. Cut off for falling behind, it subscribes again after the last event it
    /// returned (reading what it missed back from memory or the rollout) and goes on.
    /// Cancel-safe: a cancelled call loses no event.
    pub async fn next(&mut self) -> Option<Arc<ThreadEvent>> {
        loop {
            match self.next_or_lag().await? {
                Ok(event) => return Some(event),
                Err(Lagged { .. }) => {
                    let lags = self.lags + 1;
                    *self = self.resubscribe();
                    self.lags = lags;
                }
            }
        }
    }

    /// The next event up to seq `through`; `None` once the event `through` (or a later
    /// one) was returned, or when the log closed first. For replaying a thread's events
    /// up to a point, then stopping.
    pub async fn next_through(&mut self, through: u64) -> Option<Arc<ThreadEvent>> {
        if self.last_seq >= through {
            return None;
        }
        // Past `through` already: `through` itself was a delta, which the rollout does not keep.
        self.next().await.filter(|event| event.seq <= through)
    }

    /// How often this subscription fell behind, was cut off, and subscribed again.
    pub fn lags(&self) -> u64 {
        self.lags
    }

    /// The next event; `Err(Lagged)` once if this subscriber was cut off for falling
    /// behind, `None` when the log is closed and everything was read. Cancel-safe.
    pub(crate) async fn next_or_lag(&mut self) -> Option<Result<Arc<ThreadEvent>, Lagged>> {
        if let Some((after, before)) = self.disk_range {
            self.replay = self.log.replay_persisted(after, before).await;
            self.disk_range = None;
        }
        loop {
            if self.finished {
                return None;
            }
            let event = if let Some(replay) = &mut self.replay {
                match replay.next().await {
                    Some(Ok(event)) => event,
                    Some(Err(err)) => {
                        tracing::warn!("cannot replay past events: {err}");
                        self.replay = None;
                        continue;
                    }
                    None => {
                        self.replay = None;
                        continue;
                    }
                }
            } else if let Some(event) = self.backlog.pop_front() {
                event
            } else {
                match self.rx.recv().await {
                    Some(event) => event,
                    None => {
                        self.finished = true;
                        return self.lagged.load(Ordering::Acquire).then_some(Err(Lagged {
                            last_seq: self.last_seq,
                        }));
                    }
                }
            };
            // The window snapshot and the live channel can overlap by nothing, but a
            // replay from disk can include what the window also holds: skip repeats.
            if event.seq <= self.last_seq {
                continue;
            }
            self.last_seq = event.seq;
            return Some(Ok(event));
        }
    }

    /// The seq of the last event returned (or the starting point).
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// A new subscription continuing after the last event this one returned.
    pub(crate) fn resubscribe(&self) -> Subscription {
        self.log.subscribe(self.last_seq)
    }
}

#[cfg(test)]
mod tests;
