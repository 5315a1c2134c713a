//! When each model request arrived and when its answer was fully sent, for benchmarks that
//! subtract the model's own time from what a client observed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

/// The timeline of one routed model request (`/v1/responses` or `/v1/chat/completions`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseTiming {
    /// The request's 1-based number, as an index into [`super::MockModelServer::requests`]
    /// plus one.
    pub request: usize,
    /// When the request's body had been read completely.
    pub received_at: Instant,
    /// When the last byte of the answer was handed to the connection; `None` while it is
    /// still streaming, and for answers that stalled or disconnected on purpose.
    pub finished_at: Option<Instant>,
}

/// When one body frame of an answer was handed to the connection (see
/// [`super::MockModelServer::record_frame_times`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameTiming {
    /// The request's 1-based number, as in [`ResponseTiming::request`].
    pub request: usize,
    /// The frame's 0-based index in the answer's body (for SSE, one event per frame).
    pub frame: usize,
    /// When the frame was handed to the connection, which writes it right away.
    pub sent_at: Instant,
}

/// Every routed request's timeline.
#[derive(Debug, Default)]
pub(crate) struct Timings {
    entries: Mutex<Vec<ResponseTiming>>,
    record_frames: AtomicBool,
    frames: Mutex<Vec<FrameTiming>>,
}

impl Timings {
    /// Notes that request `request` was read at `received_at`.
    pub(crate) fn received(&self, request: usize, received_at: Instant) {
        self.lock().push(ResponseTiming {
            request,
            received_at,
            finished_at: None,
        });
    }

    /// Notes that the answer to request `request` has been sent completely, now.
    pub(crate) fn finished(&self, request: usize) {
        let now = Instant::now();
        let mut entries = self.lock();
        // Answers finish in roughly arrival order, so the match is near the end.
        if let Some(entry) = entries.iter_mut().rev().find(|e| e.request == request) {
            entry.finished_at = Some(now);
        }
    }

    /// Whether [`Timings::frame_sent`] keeps what it is told from now on.
    pub(crate) fn record_frames(&self, record: bool) {
        self.record_frames.store(record, Ordering::Relaxed);
    }

    /// Notes that frame `frame` of the answer to request `request` is handed over now.
    pub(crate) fn frame_sent(&self, request: usize, frame: usize) {
        if self.record_frames.load(Ordering::Relaxed) {
            let sent_at = Instant::now();
            lock(&self.frames).push(FrameTiming {
                request,
                frame,
                sent_at,
            });
        }
    }

    /// A copy of every recorded frame time, in the order they were sent.
    pub(crate) fn frames(&self) -> Vec<FrameTiming> {
        lock(&self.frames).clone()
    }

    /// A copy of every timeline so far, ordered by request number.
    pub(crate) fn snapshot(&self) -> Vec<ResponseTiming> {
        let mut entries = self.lock().clone();
        entries.sort_by_key(|entry| entry.request);
        entries
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<ResponseTiming>> {
        lock(&self.entries)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
