//! Writing a thread's rollout: one writer task per thread, owning the file.
//!
//! Records are serialized by the caller and queued; the task (`writer.rs`) collects them
//! and appends them to the file in batches. `flush` hands what waits to the kernel
//! (survives a killed process), `sync` also fsyncs (survives a power cut). The file is
//! locked with `flock` for as long as the thread lives, so two processes can never
//! interleave writes to one session. A failed write stops the writing (see `writer.rs`)
//! until [`RolloutRecorder::recover`].

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use deputy_protocol::{ResponseItem, ThreadEvent};
use futures::channel::mpsc;
use tokio::sync::oneshot;

use super::event_index::EventIndex;
use super::reader::{Tail, UNFINISHED_CALL_OUTPUT, resumed_from_bytes};
use super::writer::{Command, Shared, write_loop};
use super::{
    CompactedRecord, ResumedSession, RolloutError, RolloutItem, SessionMeta, TurnContextRecord,
    encode_event_line, encode_line, is_persisted_event, paths,
};
use crate::patch_journal::RecoveredPatch;

pub(super) use super::writer::lock_exclusive;

/// Appends a thread's records to its rollout file. Cheap to clone; the file
/// is closed (and unlocked) once every clone is gone and the queue is written.
#[derive(Debug, Clone)]
pub struct RolloutRecorder {
    path: Arc<PathBuf>,
    /// futures' channel, commands boxed: an idle thread keeps it, as it keeps its op
    /// channel (`thread::OpSender` says why not tokio's).
    tx: mpsc::UnboundedSender<Box<Command>>,
    shared: Arc<Shared>,
}

impl RolloutRecorder {
    /// Creates the rollout of a new thread under `home`, holding its lock, and
    /// writes the metadata and the thread's first history items. Needs a tokio runtime.
    /// The file is readable by its owner only, in directories only its owner can enter
    /// (created so whatever the umask); a rollout that cannot be written whole is removed.
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
            paths::create_private_dirs(dir).map_err(|e| RolloutError::io(dir, e))?;
        }
        let mut file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| RolloutError::io(&path, e))?;
        // The head goes out before the thread exists, so even a process killed
        // right away leaves a resumable session.
        let mut head = encode_line(&RolloutItem::SessionMeta(meta.clone()));
        for item in initial {
            head.push_str(&encode_line(&RolloutItem::ResponseItem(item.clone())));
        }
        let written = lock_exclusive(&file, &path).and_then(|()| {
            file.write_all(head.as_bytes())
                .map_err(|e| RolloutError::io(&path, e))
        });
        if let Err(err) = written {
            // No session without its head: an empty or torn file would list as unusable.
            let _ = std::fs::remove_file(&path);
            return Err(err);
        }
        let len = head.len() as u64;
        Ok(Self::spawn(
            path,
            file,
            len,
            EventIndex::without_events(len),
        ))
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
        let (file, mut session) = open_to_continue(path, recover_patches)?;
        let len = file
            .metadata()
            .map_err(|e| RolloutError::io(path, e))?
            .len();
        let index = std::mem::take(&mut session.event_index);
        Ok((Self::spawn(path.to_path_buf(), file, len, index), session))
    }

    /// Starts the writer of the file at `path`, whose first `len` bytes are written and
    /// whose event lines `index` gives.
    fn spawn(path: PathBuf, file: File, len: u64, index: EventIndex) -> Self {
        let (tx, rx) = mpsc::unbounded();
        let shared = Arc::new(Shared::new(index));
        tokio::spawn(write_loop(path.clone(), file, len, shared.clone(), rx));
        Self {
            path: Arc::new(path),
            tx,
            shared,
        }
    }

    /// The rollout file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where the event lines written to the file so far are: a replay reads only them.
    pub(crate) fn event_index(&self) -> EventIndex {
        self.shared.index()
    }

    /// Why records are no longer written, when a write failed: the path and the cause.
    pub fn failure(&self) -> Option<String> {
        self.shared.failure()
    }

    /// After a failed write: cuts the file back to its last complete record, reads the
    /// session back from it and writes again. The thread continues from what it returns.
    pub async fn recover(&self) -> Result<ResumedSession, RolloutError> {
        let (ack, done) = oneshot::channel();
        self.send(Command::Recover(ack));
        done.await
            .unwrap_or_else(|_| Err(RolloutError::io(self.path(), writer_gone())))
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
        self.send(Command::Event(line));
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
        if self.tx.unbounded_send(Box::new(command)).is_err() {
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
    let mut kept = bytes.len() as u64;
    drop(bytes);
    let mut repair = String::new();
    match session.tail {
        Tail::Clean => {}
        Tail::MissingNewline => repair.push('\n'),
        Tail::Torn(offset) => {
            file.set_len(offset).map_err(io_err)?;
            kept = offset;
        }
    }
    let notes = explain_recovered_patches(&mut session, &recovered);
    for item in session.closed_calls.iter().chain(&notes) {
        repair.push_str(&encode_line(&RolloutItem::ResponseItem(item.clone())));
    }
    session.history.extend(notes);
    if let Err(err) = file.write_all(repair.as_bytes()) {
        // Nothing may follow a torn record: cut it off again before failing.
        let _ = file.set_len(kept);
        return Err(io_err(err));
    }
    // What was added holds history items (and the newline a last line lacked).
    session.event_index.cover(kept + repair.len() as u64);
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
            if let ResponseItem::FunctionCallOutput { call_id, output }
            | ResponseItem::CustomToolCallOutput { call_id, output } = item
                && patch.call_id.as_deref() == Some(call_id.as_str())
                && *output == *UNFINISHED_CALL_OUTPUT
            {
                *output = told.as_str().into();
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
