//! A thread's live unified-exec sessions: at most [`MAX_SESSIONS`], the oldest idle one
//! closed to make room, all stopped on interrupt and when the thread goes.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::process::Process;
use crate::sync::lock;

/// Live sessions a thread may hold.
pub(super) const MAX_SESSIONS: usize = 16;
/// The first session id; ids are never reused within a thread.
const FIRST_ID: u64 = 1000;

/// The thread's sessions (kept in its `ToolState`, so dropped — and stopped — with it).
#[derive(Default)]
pub(crate) struct Sessions(Mutex<Inner>);

#[derive(Default)]
struct Inner {
    issued: u64,
    live: BTreeMap<u64, Entry>,
}

struct Entry {
    process: Arc<Process>,
    last_used: Instant,
}

impl Sessions {
    /// Keeps `process` as a new session; returns its id and the id of the session closed to
    /// make room, if one was.
    pub(super) fn insert(&self, process: Arc<Process>) -> (u64, Option<u64>) {
        let mut inner = lock(&self.0);
        let closed = (inner.live.len() >= MAX_SESSIONS)
            .then(|| inner.oldest_idle())
            .flatten();
        if let Some(id) = closed {
            // Dropping the last handle stops the process (see `Process`'s `Drop`).
            inner.live.remove(&id);
        }
        let id = FIRST_ID + inner.issued;
        inner.issued += 1;
        inner.live.insert(
            id,
            Entry {
                process,
                last_used: Instant::now(),
            },
        );
        (id, closed)
    }

    /// The session `id`, marked as used now.
    pub(super) fn get(&self, id: u64) -> Option<Arc<Process>> {
        let mut inner = lock(&self.0);
        let entry = inner.live.get_mut(&id)?;
        entry.last_used = Instant::now();
        Some(entry.process.clone())
    }

    /// Forgets session `id` (its process has ended and the model was told).
    pub(super) fn remove(&self, id: u64) {
        lock(&self.0).live.remove(&id);
    }

    /// Stops every session now (the turn was interrupted, or the thread is closing).
    pub(crate) fn stop_all(&self) {
        let live = std::mem::take(&mut lock(&self.0).live);
        drop(live);
    }
}

impl Inner {
    /// The session to close for room: an ended one first, else the least recently used one
    /// that no call is using; `None` when every session is busy.
    fn oldest_idle(&self) -> Option<u64> {
        let idle = self
            .live
            .iter()
            .filter(|(_, entry)| Arc::strong_count(&entry.process) == 1);
        let mut idle: Vec<_> = idle.collect();
        idle.sort_by_key(|(_, entry)| (!entry.process.exited(), entry.last_used));
        idle.first().map(|(id, _)| **id)
    }
}
