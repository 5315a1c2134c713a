//! The task that owns a rollout file: it appends what the recorder queues, in batches,
//! on the blocking pool.
//!
//! A write that fails (a full disk, an I/O error) must not be lost silently nor leave a
//! torn record for the next write to be glued onto: the file is cut back to its last
//! complete line at once, the failure is kept, every later flush or sync reports it, and
//! nothing more is written — a gap in the middle would make the history on disk differ
//! from what happened — until the thread is brought back to what the file holds
//! ([`Command::Recover`]).

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::channel::mpsc;
use tokio::sync::{Semaphore, oneshot};

use super::event_index::EventIndex;
use super::reader::resumed_from_bytes;
use super::{ResumedSession, RolloutError};
use crate::sync::lock;

/// How many bytes of records wait for a flush before they are written anyway.
const WRITE_BUFFER: usize = 64 * 1024;

/// How many rollout writes and syncs run on the blocking pool at once, over all threads:
/// past a few, more syncs at once finish no sooner, since the journal commits them together.
static BLOCKING_IO: Semaphore = Semaphore::const_new(16);

#[derive(Debug)]
pub(super) enum Command {
    Record(String),
    /// One `event` line.
    Event(String),
    Flush(oneshot::Sender<io::Result<()>>),
    Sync(oneshot::Sender<io::Result<()>>),
    Close(oneshot::Sender<io::Result<()>>),
    /// Forget a failure: read back what the file durably holds (the thread continues from
    /// it) and write again.
    Recover(oneshot::Sender<Result<ResumedSession, RolloutError>>),
}

/// The writer's state that the recorder reads without asking the task.
#[derive(Debug)]
pub(super) struct Shared {
    failure: Mutex<Option<Failure>>,
    /// Where the event lines written so far are.
    index: Mutex<EventIndex>,
}

impl Shared {
    /// A writer's shared state, for a file indexed by `index`.
    pub(super) fn new(index: EventIndex) -> Self {
        Self {
            failure: Mutex::default(),
            index: Mutex::new(index),
        }
    }

    /// Where the event lines written so far are.
    pub(super) fn index(&self) -> EventIndex {
        lock(&self.index).clone()
    }

    /// Why writing stopped, when it did.
    pub(super) fn failure(&self) -> Option<String> {
        lock(&self.failure).as_ref().map(|f| f.message.clone())
    }
}

/// A failed write, as the thread and its clients are told about it.
#[derive(Debug, Clone)]
struct Failure {
    kind: io::ErrorKind,
    message: String,
}

impl Failure {
    fn new(path: &Path, err: &io::Error) -> Self {
        Failure {
            kind: err.kind(),
            message: format!(
                "cannot write the session file {}: {err}; nothing after its last complete \
                 record was saved",
                path.display()
            ),
        }
    }

    fn error(&self) -> io::Error {
        io::Error::new(self.kind, self.message.clone())
    }
}

/// Runs the writer of the rollout at `path`, whose first `len` bytes are written, until
/// the recorder closes it or is gone.
pub(super) async fn write_loop(
    path: PathBuf,
    file: File,
    len: u64,
    shared: Arc<Shared>,
    mut commands: mpsc::UnboundedReceiver<Box<Command>>,
) {
    let mut out = Batch {
        path,
        file: Arc::new(file),
        pending: Vec::new(),
        pending_events: Vec::new(),
        len,
        dir_synced: false,
        shared,
    };
    // The directory entry first, while the thread's first turn runs: that turn's end then
    // waits for the file's own data alone. Failing here only leaves it to the first sync,
    // which reports it.
    let _ = Box::pin(out.sync_dir()).await;
    // Every step that waits for the disk runs boxed: the task is as large as its largest
    // await for as long as the thread lives, and an idle thread only waits for a command.
    while let Some(command) = commands.next().await {
        match *command {
            Command::Record(lines) => {
                if out.queue(&lines, false) {
                    let _ = Box::pin(out.flush()).await;
                }
            }
            Command::Event(line) => {
                if out.queue(&line, true) {
                    let _ = Box::pin(out.flush()).await;
                }
            }
            Command::Flush(ack) => {
                let _ = ack.send(Box::pin(out.flush()).await);
            }
            Command::Sync(ack) => {
                let _ = ack.send(Box::pin(out.sync()).await);
            }
            Command::Recover(ack) => {
                let _ = ack.send(Box::pin(out.recover()).await);
            }
            Command::Close(ack) => {
                let result = Box::pin(out.sync()).await;
                // Unlocked explicitly, before the caller hears back: a process forked
                // meanwhile (any command being spawned) holds a copy of the descriptor
                // until it execs, and the lock would otherwise live on with that copy.
                unlock(&out.file);
                drop(out);
                let _ = ack.send(result);
                return;
            }
        }
    }
    let _ = Box::pin(out.flush()).await;
}

/// The writer task's side of the file: records wait in `pending` until a flush, a
/// sync or [`WRITE_BUFFER`] bytes send them to the kernel, on the blocking pool.
struct Batch {
    path: PathBuf,
    file: Arc<File>,
    pending: Vec<u8>,
    /// Where the event lines in `pending` will be in the file, once written.
    pending_events: Vec<std::ops::Range<u64>>,
    /// The bytes of the file that hold complete records.
    len: u64,
    /// Whether the directory entry of the file has been synced.
    dir_synced: bool,
    shared: Arc<Shared>,
}

impl Batch {
    fn failed(&self) -> Option<Failure> {
        lock(&self.shared.failure).clone()
    }

    fn fail(&self, err: &io::Error) -> io::Error {
        let failure = Failure::new(&self.path, err);
        tracing::warn!("{}", failure.message);
        let error = failure.error();
        lock(&self.shared.failure).get_or_insert(failure);
        error
    }

    /// Queues `lines` (one event line when `event`); `true` when [`WRITE_BUFFER`] bytes
    /// wait and should be written.
    fn queue(&mut self, lines: &str, event: bool) -> bool {
        if self.failed().is_some() {
            // Dropped: the history on disk stops at the failure.
            return false;
        }
        if event {
            let at = self.len + self.pending.len() as u64;
            self.pending_events.push(at..at + lines.len() as u64);
        }
        self.pending.extend_from_slice(lines.as_bytes());
        self.pending.len() >= WRITE_BUFFER
    }

    /// Writes what is pending; its buffer is freed with the write. A write that fails is
    /// cut off again, so the file ends with its last complete record.
    async fn flush(&mut self) -> io::Result<()> {
        self.write_out(false).await
    }

    /// [`Batch::flush`], then waits until the file's data is on disk.
    async fn sync(&mut self) -> io::Result<()> {
        self.write_out(true).await?;
        if !self.dir_synced {
            self.sync_dir().await.map_err(|err| self.fail(&err))?;
        }
        Ok(())
    }

    /// Writes what is pending and, with `sync`, syncs the file's data in the same trip to
    /// the blocking pool: a turn's end waits for one hand-over, not two.
    async fn write_out(&mut self, sync: bool) -> io::Result<()> {
        if let Some(failure) = self.failed() {
            self.pending.clear();
            self.pending_events.clear();
            return Err(failure.error());
        }
        if self.pending.is_empty() && !sync {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        let events = std::mem::take(&mut self.pending_events);
        let written = pending.len() as u64;
        let len = self.len;
        // The outer result is the write's, the inner one the sync's.
        let result = self
            .blocking(move |mut file| {
                if let Err(err) = file.write_all(&pending) {
                    // Whatever part went out is a torn record: nothing may follow it.
                    if let Err(err) = file.set_len(len) {
                        tracing::warn!("cutting a torn record off the rollout failed: {err}");
                    }
                    return Err(err);
                }
                drop(pending);
                Ok(if sync { file.sync_data() } else { Ok(()) })
            })
            .await;
        match result {
            Ok(synced) => {
                self.len += written;
                let mut index = lock(&self.shared.index);
                events.into_iter().for_each(|line| index.event_line(line));
                index.cover(self.len);
                drop(index);
                synced.map_err(|err| self.fail(&err))
            }
            Err(err) => Err(self.fail(&err)),
        }
    }

    /// Makes the file's entry in its directory survive a power cut (needed once; a sync
    /// another writer of the same directory started after this file existed serves too).
    async fn sync_dir(&mut self) -> io::Result<()> {
        let Some(dir) = self.path.parent().map(Path::to_path_buf) else {
            return Ok(());
        };
        let sync = || {
            let dir = dir.clone();
            self.blocking(move |_| File::open(dir)?.sync_all())
        };
        super::dir_sync::sync_directory(&dir, sync).await?;
        self.dir_synced = true;
        Ok(())
    }

    /// Reads back what the file holds up to its last complete record and clears the
    /// failure: the thread continues from what was saved.
    async fn recover(&mut self) -> Result<ResumedSession, RolloutError> {
        self.pending.clear();
        self.pending_events.clear();
        let (len, path) = (self.len, self.path.clone());
        let file = Arc::clone(&self.file);
        let mut read = tokio::task::spawn_blocking(move || {
            file.set_len(len).map_err(|e| RolloutError::io(&path, e))?;
            let mut bytes = std::fs::read(&path).map_err(|e| RolloutError::io(&path, e))?;
            bytes.truncate(usize::try_from(len).unwrap_or(usize::MAX));
            resumed_from_bytes(&bytes, &path)
        })
        .await
        .unwrap_or_else(|join| Err(RolloutError::io(&self.path, io::Error::other(join))))?;
        *lock(&self.shared.index) = std::mem::take(&mut read.event_index);
        *lock(&self.shared.failure) = None;
        Ok(read)
    }

    async fn blocking<T: Send + 'static>(
        &self,
        op: impl FnOnce(&File) -> io::Result<T> + Send + 'static,
    ) -> io::Result<T> {
        let file = Arc::clone(&self.file);
        crate::sync::spawn_blocking_in(&BLOCKING_IO, move || op(&file))
            .await
            .unwrap_or_else(|join| Err(io::Error::other(join)))
    }
}

/// Releases the `flock` taken by [`lock_exclusive`], for every copy of the descriptor.
fn unlock(file: &File) {
    // SAFETY: flock only reads the descriptor, which `file` keeps open.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_UN) };
    if rc != 0 {
        tracing::warn!(
            "releasing the rollout lock failed: {}",
            io::Error::last_os_error()
        );
    }
}

/// Takes an exclusive, non-blocking `flock` on `file`; it lasts until the file is closed.
pub(super) fn lock_exclusive(file: &File, path: &Path) -> Result<(), RolloutError> {
    // SAFETY: flock only reads the descriptor, which `file` keeps open.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(());
    }
    let err = io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Err(RolloutError::Locked)
    } else {
        Err(RolloutError::io(path, err))
    }
}
