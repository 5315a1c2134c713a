//! Writing to a child's stdin without ever blocking the test.

use std::fs::File;
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

/// Shared between a [`BackgroundWrite`] and its thread.
#[derive(Default)]
struct Progress {
    written: AtomicU64,
    /// `Some` once the thread is done: `Ok` when everything was written.
    outcome: Mutex<Option<Result<(), String>>>,
    finished: Condvar,
}

/// A write to a child's stdin running on its own thread.
pub struct BackgroundWrite {
    progress: Arc<Progress>,
}

impl BackgroundWrite {
    /// Starts writing `chunks` to `pipe`.
    pub(super) fn start(
        mut pipe: File,
        chunks: impl Iterator<Item = Vec<u8>> + Send + 'static,
        pid: u32,
    ) -> io::Result<Self> {
        let progress = Arc::new(Progress::default());
        let shared = Arc::clone(&progress);
        thread::Builder::new()
            .name(format!("stdio-client-background-write-{pid}"))
            .spawn(move || {
                let mut outcome = Ok(());
                for chunk in chunks {
                    if let Err(err) = pipe.write_all(&chunk) {
                        outcome = Err(format!(
                            "writing failed after {} bytes: {err}",
                            shared.written.load(Ordering::Relaxed)
                        ));
                        break;
                    }
                    shared
                        .written
                        .fetch_add(chunk.len() as u64, Ordering::Relaxed);
                }
                *shared
                    .outcome
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some(outcome);
                shared.finished.notify_all();
            })?;
        Ok(Self { progress })
    }

    /// How many bytes the child has taken so far.
    pub fn bytes_written(&self) -> u64 {
        self.progress.written.load(Ordering::Relaxed)
    }

    /// Whether every chunk has been written (or writing failed).
    pub fn is_finished(&self) -> bool {
        self.outcome().is_some()
    }

    /// Waits up to `timeout` for the write to finish, returning its outcome.
    pub fn wait(&self, timeout: Duration) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        let mut outcome = self
            .progress
            .outcome
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        loop {
            if let Some(done) = outcome.as_ref() {
                return done.clone();
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(format!(
                    "the write did not finish within {timeout:?} ({} bytes written)",
                    self.bytes_written()
                ));
            }
            outcome = self
                .progress
                .finished
                .wait_timeout(outcome, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Waits up to `timeout` until the write is finished or has made no progress for
    /// `quiet`: the child stopped reading, as far as one can tell from outside.
    /// Returns whether it finished.
    pub fn wait_until_finished_or_stalled(&self, quiet: Duration, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut last = (self.bytes_written(), Instant::now());
        loop {
            if self.is_finished() {
                return true;
            }
            let now = Instant::now();
            let written = self.bytes_written();
            if written != last.0 {
                last = (written, now);
            } else if now - last.1 >= quiet || now >= deadline {
                return false;
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    fn outcome(&self) -> Option<Result<(), String>> {
        self.progress
            .outcome
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl std::fmt::Debug for BackgroundWrite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackgroundWrite")
            .field("bytes_written", &self.bytes_written())
            .field("finished", &self.is_finished())
            .finish()
    }
}
