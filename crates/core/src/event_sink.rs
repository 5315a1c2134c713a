//! Where a thread's events go: the front door's receiver.

use deputy_protocol::{Event, EventMsg};
use tokio::sync::mpsc;

/// Sends a thread's events to its owner. Unbounded because volume is capped at
/// the source (command output deltas stop after a fixed number of bytes), and
/// an engine that blocked on a slow reader could not be interrupted.
#[derive(Debug, Clone)]
pub(crate) struct EventSink {
    tx: mpsc::UnboundedSender<Event>,
}

impl EventSink {
    pub(crate) fn new(tx: mpsc::UnboundedSender<Event>) -> Self {
        Self { tx }
    }

    /// Sends one event; a closed receiver means nobody listens any more, which is fine.
    pub(crate) fn send(&self, id: &str, msg: EventMsg) {
        let _ = self.tx.send(Event {
            id: id.to_string(),
            msg,
        });
    }
}
