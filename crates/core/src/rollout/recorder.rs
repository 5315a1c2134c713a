//! Writing a thread's rollout: one writer task per thread, owning the file.
//!
//! Records are serialized by the caller and queued; the task collects them
//! and appends them to the file in batches. The batch's buffer goes with each
//! write, so an idle thread holds no buffer at all. `flush` hands what waits to
//! the kernel (survives a killed process), `sync` also fsyncs (survives a power
//! cut). The file is locked with `flock` for as long as the thread lives, so two
//! processes can never interleave writes to one session.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use deputy_protocol::{ResponseItem, ThreadEvent};
use tokio::sync::{mpsc, oneshot};

use super::reader::{Tail, UNFINISHED_CALL_OUTPUT, resumed_from_bytes};
use super::{
    CompactedRecord, ResumedSession, RolloutError, RolloutItem, SessionMeta, TurnContextRecord,
    encode_event_line, encode_line, is_persisted_event, paths,
};
use crate::tools::patch_journal::RecoveredPatch;

/// How many bytes of records wait for a flush before they are written anyway.
const WRITE_BUFFER: usize = 64 * 1024;

#[derive(Debug)]
enum Command {
    Record(String),
    Flush(oneshot::Sender<io::Result<()>>),
    Sync(oneshot::Sender<io::Result<()>>),
    Close(oneshot::Sender<io::Result<()>>),
}

/// Appends a thread's records to its rollout file. Cheap to clone; the file
/// is closed (and unlocked) once every clone is gone and the queue is written.
#[derive(Debug, Clone)]
pub struct RolloutRecorder {
    path: Arc<PathBuf>,
    tx: mpsc::UnboundedSender<Command>,
}

impl RolloutRecorder {
    /// Creates the rollout of a new thread under `home`, holding its lock, and
    /// writes the metadata and the thread's first history items. Needs a tokio runtime.
    pub fn create(
        home: &Path,
        meta: &SessionMeta,
        initial: &[ResponseItem],
    ) -> Result<Self, RolloutError> {
        let path = paths::rollout_path(home, &meta.id).ok_or_else(|| RolloutError::Corrupt {
            path: paths::sessions_dir(home),
            reason: format!("thread id `{}` is not a UUIDv7", meta.id),
        })?;
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| RolloutError::io(dir, e))?;
        }
        let mut file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| RolloutError::io(&path, e))?;
        lock_exclusive(&file, &path)?;
        // The head goes out before the thread exists, so even a process killed
        // right away leaves a resumable session.
        let mut head = encode_line(&RolloutItem::SessionMeta(meta.clone()));
        for item in initial {
            head.push_str(&encode_line(&RolloutItem::ResponseItem(item.clone())));
        }
        file.write_all(head.as_bytes())
            .map_err(|e| RolloutError::io(&path, e))?;
        Ok(Self::spawn(path, file))
    }

    /// Opens the rollout at `path` to continue its thread: takes the lock
    /// (failing with [`RolloutError::Locked`] when another process has it),
    /// recovers the thread's interrupted patches (`recover_patches`, called under the
    /// lock), loads the session, cuts off a torn last line and records the outputs that
    /// close unanswered calls. Needs a tokio runtime.
    pub fn resume(
        path: &Path,
        recover_patches: impl FnOnce() -> Vec<RecoveredPatch>,
    ) -> Result<(Self, ResumedSession), RolloutError> {
        let (file, session) = open_to_continue(path, recover_patches)?;
        Ok((Self::spawn(path.to_path_buf(), file), session))
    }

    fn spawn(path: PathBuf, file: File) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(write_loop(path.clone(), file, rx));
        Self {
            path: Arc::new(path),
            tx,
        }
    }

    /// The rollout file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Queues history items.
    pub fn record_items<'a>(&self, items: impl IntoIterator<Item = &'a ResponseItem>) {
        let lines: String = items
            .into_iter()
            .map(|item| encode_line(&RolloutItem::ResponseItem(item.clone())))
            .collect();
        if !lines.is_empty() {
            self.send(Command::Record(lines));
        }
    }

    /// Queues an event, if it is one of the kinds kept (see [`super::is_persisted_event`]),
    /// and returns the bytes it takes on disk (0 when it is not kept).
    pub fn record_event(&self, event: &ThreadEvent) -> usize {
        if !is_persisted_event(&event.msg) {
            return 0;
        }
        let line = encode_event_line(event);
        let len = line.len();
        self.send(Command::Record(line));
        len
    }

    /// Queues a compaction: the history from here on is `compacted.replacement_history`.
    pub fn record_compacted(&self, compacted: CompactedRecord) {
        self.send(Command::Record(encode_line(&RolloutItem::Compacted(
            compacted,
        ))));
    }

    /// Queues the settings a turn starts with.
    pub fn record_turn_context(&self, context: TurnContextRecord) {
        self.send(Command::Record(encode_line(&RolloutItem::TurnContext(
            context,
        ))));
    }

    /// Waits until everything queued so far is written to the kernel.
    pub async fn flush(&self) -> io::Result<()> {
        let (ack, done) = oneshot::channel();
        self.send(Command::Flush(ack));
        done.await.unwrap_or_else(|_| Err(writer_gone()))
    }

    /// Waits until everything queued so far is written and on disk.
    pub async fn sync(&self) -> io::Result<()> {
        let (ack, done) = oneshot::channel();
        self.send(Command::Sync(ack));
        done.await.unwrap_or_else(|_| Err(writer_gone()))
    }

    /// Writes and syncs everything queued so far, then closes the file,
    /// releasing its lock; records queued afterwards are dropped.
    pub async fn close(&self) -> io::Result<()> {
        let (ack, done) = oneshot::channel();
        self.send(Command::Close(ack));
        done.await.unwrap_or_else(|_| Err(writer_gone()))
    }

    fn send(&self, command: Command) {
        if self.tx.send(command).is_err() {
            tracing::warn!(path = %self.path.display(), "rollout writer has stopped; record dropped");
        }
    }
}

/// Opens the rollout at `path` for appending under its lock and brings it back to a state
/// a thread can continue from: interrupted patches recovered (`recover_patches`), a torn
/// last line cut off, and the calls a stop left unanswered closed with outputs that say
/// what became of them. The file stays locked while the returned handle is open.
pub(crate) fn open_to_continue(
    path: &Path,
    recover_patches: impl FnOnce() -> Vec<RecoveredPatch>,
) -> Result<(File, ResumedSession), RolloutError> {
    let io_err = |e| RolloutError::io(path, e);
    let mut file = OpenOptions::new()
        .read(true)
        .append(true)
        .open(path)
        .map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => RolloutError::NotFound(path.display().to_string()),
            _ => RolloutError::io(path, e),
        })?;
    lock_exclusive(&file, path)?;
    // Under the lock: nobody else can be writing this thread's patches now.
    let recovered = recover_patches();
    let mut bytes = Vec::new();
    file.seek(SeekFrom::Start(0)).map_err(io_err)?;
    file.read_to_end(&mut bytes).map_err(io_err)?;
    let mut session = resumed_from_bytes(&bytes, path)?;
    drop(bytes);
    let mut repair = String::new();
    match session.tail {
        Tail::Clean => {}
        Tail::MissingNewline => repair.push('\n'),
        Tail::Torn(offset) => file.set_len(offset).map_err(io_err)?,
    }
    let notes = explain_recovered_patches(&mut session, &recovered);
    for item in session.closed_calls.iter().chain(&notes) {
        repair.push_str(&encode_line(&RolloutItem::ResponseItem(item.clone())));
    }
    session.history.extend(notes);
    file.write_all(repair.as_bytes()).map_err(io_err)?;
    Ok((file, session))
}

/// Tells the model and the user what became of each recovered patch: the output of the
/// call that made it says so when the call was left unanswered, otherwise a developer
/// message (returned, for the history) does; each is also a warning of the session.
fn explain_recovered_patches(
    session: &mut ResumedSession,
    recovered: &[RecoveredPatch],
) -> Vec<ResponseItem> {
    let mut notes = Vec::new();
    for patch in recovered {
        let call = patch.call_id.as_deref().unwrap_or("unknown");
        session
            .warnings
            .push(format!("interrupted patch (call {call}): {}", patch.report));
        let told = format!(
            "aborted: the session stopped while this patch was being applied; {}",
            patch.report
        );
        let closed = session
            .closed_calls
            .iter_mut()
            .chain(session.history.iter_mut());
        let mut answered = false;
        for item in closed {
            if let ResponseItem::FunctionCallOutput { call_id, output } = item
                && patch.call_id.as_deref() == Some(call_id.as_str())
                && output == UNFINISHED_CALL_OUTPUT
            {
                output.clone_from(&told);
                answered = true;
            }
        }
        if !answered {
            notes.push(ResponseItem::developer_text(format!(
                "A patch (call {call}) was interrupted when the session last stopped: {}",
                patch.report
            )));
        }
    }
    notes
}

fn writer_gone() -> io::Error {
    io::Error::other("the rollout writer has stopped")
}

async fn write_loop(path: PathBuf, file: File, mut commands: mpsc::UnboundedReceiver<Command>) {
    let mut out = Batch {
        file: Arc::new(file),
        pending: Vec::new(),
    };
    let warn = |what: &str, err: &io::Error| {
        tracing::warn!(path = %path.display(), "rollout {what} failed: {err}");
    };
    while let Some(command) = commands.recv().await {
        match command {
            Command::Record(lines) => {
                if let Err(err) = out.record(&lines).await {
                    warn("write", &err);
                }
            }
            Command::Flush(ack) => {
                let result = out.flush().await;
                if let Err(err) = &result {
                    warn("flush", err);
                }
                let _ = ack.send(result);
            }
            Command::Sync(ack) => {
                let result = out.sync().await;
                if let Err(err) = &result {
                    warn("sync", err);
                }
                let _ = ack.send(result);
            }
            Command::Close(ack) => {
                let result = out.sync().await;
                if let Err(err) = &result {
                    warn("sync", err);
                }
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
    if let Err(err) = out.flush().await {
        warn("final flush", &err);
    }
}

/// The writer task's side of the file: records wait in `pending` until a flush, a
/// sync or [`WRITE_BUFFER`] bytes send them to the kernel, on the blocking pool.
struct Batch {
    file: Arc<File>,
    pending: Vec<u8>,
}

impl Batch {
    async fn record(&mut self, lines: &str) -> io::Result<()> {
        self.pending.extend_from_slice(lines.as_bytes());
        if self.pending.len() >= WRITE_BUFFER {
            self.flush().await
        } else {
            Ok(())
        }
    }

    /// Writes what is pending; its buffer is freed with the write.
    async fn flush(&mut self) -> io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let pending = std::mem::take(&mut self.pending);
        self.blocking(move |mut file| file.write_all(&pending))
            .await
    }

    async fn sync(&mut self) -> io::Result<()> {
        self.flush().await?;
        self.blocking(File::sync_data).await
    }

    async fn blocking(
        &self,
        op: impl FnOnce(&File) -> io::Result<()> + Send + 'static,
    ) -> io::Result<()> {
        let file = Arc::clone(&self.file);
        tokio::task::spawn_blocking(move || op(&file))
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
