//! Where a thread's events go: the front door's receiver, and the rollout for
//! the kinds worth keeping.

use deputy_protocol::{Event, EventMsg};
use tokio::sync::mpsc;

use crate::rollout::RolloutRecorder;

/// Sends a thread's events to its owner. Unbounded because volume is capped at
/// the source (command output deltas stop after a fixed number of bytes), and
/// an engine that blocked on a slow reader could not be interrupted.
#[derive(Debug, Clone)]
pub(crate) struct EventSink {
    tx: mpsc::UnboundedSender<Event>,
    rollout: Option<RolloutRecorder>,
}

impl EventSink {
    pub(crate) fn new(tx: mpsc::UnboundedSender<Event>, rollout: Option<RolloutRecorder>) -> Self {
        Self { tx, rollout }
    }

    /// Sends one event; a closed receiver means nobody listens any more, which is fine.
    pub(crate) fn send(&self, id: &str, msg: EventMsg) {
        if let Some(rollout) = &self.rollout {
            rollout.record_event(&msg);
        }
        self.deliver(id, msg);
    }

    /// Sends a turn-ending event once the rollout, that event included, is on
    /// disk: whoever sees the turn end can rely on it surviving a crash.
    pub(crate) async fn send_turn_end(&self, id: &str, msg: EventMsg) {
        if let Some(rollout) = &self.rollout {
            rollout.record_event(&msg);
            // A failed sync is logged by the writer; the turn's result still goes out.
            let _ = rollout.sync().await;
        }
        self.deliver(id, msg);
    }

    fn deliver(&self, id: &str, msg: EventMsg) {
        let _ = self.tx.send(Event {
            id: id.to_string(),
            msg,
        });
    }
}
