//! `session/load`'s replay: a stored thread's history told again as the `session/update`s
//! a client would have seen, from the thread's event log (which the rollout keeps whole,
//! all but streaming deltas).

use deputy_core::Thread;

use crate::prompt::UpdateSender;
use crate::translate::UpdateMapper;

/// Sends the updates of `thread`'s events up to seq `through` (inclusive).
pub(crate) async fn replay(thread: &Thread, through: u64, updates: &UpdateSender) {
    let mut mapper = UpdateMapper::replay();
    let mut events = thread.subscribe(0);
    while let Some(event) = events.next_through(through).await {
        for update in mapper.map(&event) {
            updates.send(update);
        }
    }
}
