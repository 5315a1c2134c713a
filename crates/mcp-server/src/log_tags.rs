//! Where each `codex/event` (and each conversation snapshot, `initial_state`) came from
//! in its thread's event log, told by the call that sends it to the resumable HTTP
//! streams that store it ([`crate::http`]'s event store): the notification on the wire
//! carries no seq (Codex's shape), so the sender leaves one [`LogTag`] per notification
//! here and the store takes it when the notification reaches it. Per call, notifications
//! reach the store in the order they were sent, so a queue per (thread, request id)
//! pairs them up; snapshots queue per thread under [`SNAPSHOT`].

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// Queues untouched this long belong to calls whose stream is gone: dropped when seen.
const STALE_AFTER: Duration = Duration::from_secs(120);
/// Below this many queues none is swept (keeps the common case free of scans).
const SWEEP_ABOVE: usize = 64;

/// What stands for the request id of a snapshot's tag, and its kind.
pub(crate) const SNAPSHOT: &str = "initial_state";

/// One `codex/event`'s place in its thread's log (for a snapshot: the last event in it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LogTag {
    /// The seq of the log event it was made from.
    pub(crate) seq: u64,
    /// Which of the Codex events made from that log event it is.
    pub(crate) part: usize,
    /// Its `msg.type`: a tag left by a notification that never reached the store is
    /// told apart from the next one's.
    pub(crate) kind: String,
}

/// The tags of one call's notifications sent but not yet stored, and when one was last
/// left.
type Queue = (Instant, VecDeque<LogTag>);

/// The tags of notifications sent but not yet stored, per (thread, request id).
#[derive(Debug, Default)]
pub(crate) struct LogTags {
    queues: Mutex<HashMap<(String, String), Queue>>,
}

impl LogTags {
    fn queues(&self) -> MutexGuard<'_, HashMap<(String, String), Queue>> {
        self.queues.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Leaves the tag of a notification about to be sent for `request` on `thread`.
    pub(crate) fn put(&self, thread: &str, request: &str, tag: LogTag) {
        let mut queues = self.queues();
        let now = Instant::now();
        if queues.len() > SWEEP_ABOVE {
            queues.retain(|_, (touched, _)| now.duration_since(*touched) < STALE_AFTER);
        }
        let (touched, queue) = queues
            .entry((thread.to_string(), request.to_string()))
            .or_insert_with(|| (now, VecDeque::new()));
        *touched = now;
        queue.push_back(tag);
    }

    /// Takes back the newest tag for `request` on `thread`: its notification was not sent.
    pub(crate) fn withdraw(&self, thread: &str, request: &str) {
        let mut queues = self.queues();
        let key = (thread.to_string(), request.to_string());
        if let Some((_, queue)) = queues.get_mut(&key) {
            queue.pop_back();
            if queue.is_empty() {
                queues.remove(&key);
            }
        }
    }

    /// The tag of the next notification of `kind` for `request` on `thread`; tags of
    /// another kind before it were left by notifications that never arrived.
    pub(crate) fn take(&self, thread: &str, request: &str, kind: &str) -> Option<LogTag> {
        let mut queues = self.queues();
        let key = (thread.to_string(), request.to_string());
        let (_, queue) = queues.get_mut(&key)?;
        let found = loop {
            match queue.pop_front() {
                Some(tag) if tag.kind == kind => break Some(tag),
                Some(_) => {}
                None => break None,
            }
        };
        if queue.is_empty() {
            queues.remove(&key);
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tag(seq: u64, kind: &str) -> LogTag {
        LogTag {
            seq,
            part: 0,
            kind: kind.to_string(),
        }
    }

    #[test]
    fn tags_are_taken_in_order_per_call_and_a_lost_one_is_skipped() {
        let tags = LogTags::default();
        tags.put("t", "1", tag(3, "task_started"));
        tags.put("t", "2", tag(4, "task_started"));
        tags.put("t", "1", tag(5, "agent_message"));
        assert_eq!(
            tags.take("t", "1", "task_started"),
            Some(tag(3, "task_started"))
        );
        assert_eq!(
            tags.take("t", "2", "task_started"),
            Some(tag(4, "task_started"))
        );
        tags.put("t", "1", tag(6, "task_complete"));
        // The agent_message never arrived: its tag must not be given to task_complete.
        assert_eq!(
            tags.take("t", "1", "task_complete"),
            Some(tag(6, "task_complete"))
        );
        assert_eq!(tags.take("t", "1", "task_complete"), None);
        tags.put("t", "1", tag(7, "error"));
        tags.withdraw("t", "1");
        assert_eq!(tags.take("t", "1", "error"), None);
        assert!(tags.queues().is_empty());
    }
}
