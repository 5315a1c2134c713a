//! The journal of an apply: what it is about to change, kept on disk until it is done, so
//! that an apply interrupted by a crash or a kill can be undone later ([`recover`]).
//!
//! The journal is one JSON file, always replaced whole (written beside itself, synced,
//! renamed over), in one of three states:
//!
//! - `preparing`: written before anything on disk changes. It names every file, the
//!   temporary name its new content is written under and the backup name its old content
//!   is kept under (a hard link, else a copy, in the same directory), and the directories
//!   the apply may create. Nothing visible has changed yet.
//! - `writing`: every new content is written and synced under its temporary name, every
//!   old content is kept under its backup name; now the renames over the files begin.
//! - `committed`: every rename is done and synced; only the backups are left to remove.
//!
//! The rule for an interrupted apply is: **committed → completed, anything else → rolled
//! back**. Completing removes the backups (the files already hold the new content). Rolling
//! back renames each backup over its file (the old file, with its own permissions, comes
//! back as it was), removes each new file the apply created (recognised by its inode, so a
//! file someone else made meanwhile is left alone), then the temporary files and the
//! directories the apply created, if empty. Both are idempotent: a recovery interrupted in
//! turn can run again.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io::{self, Write};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::beneath::{Dir, FileId, Root, split_relative};

/// Where an apply keeps its journal, and what the caller wants to find in it afterwards.
#[derive(Debug, Clone)]
pub struct JournalFile {
    /// The journal's path; its directory is created if needed. It is removed once the apply
    /// is complete or rolled back.
    pub path: PathBuf,
    /// The caller's note (for instance which tool call the patch was), returned by [`recover`].
    pub label: String,
}

/// How far an apply had come, as its journal says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Stage {
    Preparing,
    Writing,
    Committed,
}

/// The journal's content.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Record {
    pub(crate) version: u32,
    pub(crate) label: String,
    pub(crate) stage: Stage,
    pub(crate) files: Vec<FileRecord>,
    /// Directories the apply creates, parents first.
    pub(crate) dirs: Vec<DirRecord>,
}

/// One file of an apply.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct FileRecord {
    /// The path as planned, for reports.
    #[serde(with = "bytes_path")]
    pub(crate) path: PathBuf,
    /// Where it is written: `relative` beneath `root`, never through a symlink.
    #[serde(with = "bytes_path")]
    pub(crate) root: PathBuf,
    #[serde(with = "bytes_path")]
    pub(crate) relative: PathBuf,
    /// The name its new content is written under, in the same directory (writes only).
    #[serde(with = "bytes_name", default)]
    pub(crate) temp: Option<OsString>,
    /// The name its old content is kept under, in the same directory (when it existed).
    #[serde(with = "bytes_name", default)]
    pub(crate) backup: Option<OsString>,
    /// The file found there and checked (when it existed).
    #[serde(with = "file_id", default)]
    pub(crate) old: Option<FileId>,
    /// The new file, once written under its temporary name.
    #[serde(with = "file_id", default)]
    pub(crate) new: Option<FileId>,
}

/// A directory the apply creates: `relative` beneath `root`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct DirRecord {
    #[serde(with = "bytes_path")]
    pub(crate) root: PathBuf,
    #[serde(with = "bytes_path")]
    pub(crate) relative: PathBuf,
}

const VERSION: u32 = 1;

impl Record {
    pub(crate) fn new(label: String, files: Vec<FileRecord>, dirs: Vec<DirRecord>) -> Self {
        Record {
            version: VERSION,
            label,
            stage: Stage::Preparing,
            files,
            dirs,
        }
    }
}

/// Writes `record` as the whole journal at `path`, durably: written beside it, synced,
/// renamed over it, and the directory synced.
pub(crate) fn write(path: &Path, record: &Record) -> io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = path.parent().unwrap_or(Path::new("."));
    // It names the files a patch touches: its owner's eyes only, whatever the umask.
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let text = serde_json::to_vec_pretty(record).map_err(io::Error::other)?;
    let mut temp_name = path.as_os_str().to_owned();
    temp_name.push(".tmp");
    let temp = PathBuf::from(temp_name);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temp)?;
    let written = file.write_all(&text).and_then(|()| file.sync_all());
    if let Err(err) = written.and_then(|()| std::fs::rename(&temp, path)) {
        let _ = std::fs::remove_file(&temp);
        return Err(err);
    }
    sync_dir(dir)
}

/// Removes the journal at `path` (the apply is over).
pub(crate) fn remove(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(err) if err.kind() != io::ErrorKind::NotFound => Err(err),
        _ => sync_dir(path.parent().unwrap_or(Path::new("."))),
    }
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

/// What became of one file of an interrupted apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileOutcome {
    /// Its content from before the patch was put back.
    Restored,
    /// The patch had created it; it was removed.
    Removed,
    /// The patch had not changed it yet; it holds its content from before the patch.
    Untouched,
    /// The patch was complete: it holds its patched content (or stays deleted).
    Patched,
    /// It could not be put back; see [`Recovery::failures`].
    Failed,
}

/// The state an interrupted apply was left in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecoveryAction {
    /// It had not been committed: every file was put back as it was before the patch.
    RolledBack,
    /// It had been committed: every file holds its patched content; leftovers were removed.
    Completed,
}

/// What [`recover`] found and did.
#[derive(Debug, Clone)]
pub struct Recovery {
    /// The caller's note from [`JournalFile::label`].
    pub label: String,
    /// Rolled back or completed.
    pub action: RecoveryAction,
    /// Each file, as planned, and what became of it.
    pub files: Vec<(PathBuf, FileOutcome)>,
    /// What could not be done (the journal is then kept, so that a later recovery retries).
    pub failures: Vec<String>,
}

impl fmt::Display for Recovery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let named = |outcome: FileOutcome| -> Vec<String> {
            self.files
                .iter()
                .filter(|(_, o)| *o == outcome)
                .map(|(path, _)| path.display().to_string())
                .collect()
        };
        match self.action {
            RecoveryAction::Completed => write!(
                f,
                "the patch had been fully applied before the interruption; every file it \
                 touched holds its patched content"
            )?,
            RecoveryAction::RolledBack => write!(
                f,
                "the patch was interrupted before it was complete and has been rolled back; \
                 no file holds any of its changes"
            )?,
        }
        for (outcome, words) in [
            (
                FileOutcome::Restored,
                "restored to its content before the patch",
            ),
            (
                FileOutcome::Removed,
                "removed again (the patch had created it)",
            ),
            (FileOutcome::Untouched, "never changed"),
            (FileOutcome::Patched, "patched"),
            (FileOutcome::Failed, "NOT restored"),
        ] {
            let paths = named(outcome);
            if !paths.is_empty() {
                write!(f, "; {words}: {}", paths.join(", "))?;
            }
        }
        if !self.failures.is_empty() {
            write!(f, "; problems: {}", self.failures.join("; "))?;
        }
        Ok(())
    }
}

/// Why a journal could not be recovered at all.
#[derive(Debug, thiserror::Error)]
#[error("patch journal {}: {reason}", .path.display())]
pub struct JournalError {
    /// The journal.
    pub path: PathBuf,
    /// What is wrong.
    pub reason: String,
}

/// Finishes the interrupted apply whose journal is at `path`: completes it if it was
/// committed, else rolls it back (see the module documentation), then removes the journal —
/// unless something could not be done, in which case the journal stays for another try.
///
/// Nobody may be applying that patch meanwhile: call it only for a journal whose writer
/// is gone (the caller's own lock on the session it belongs to says so).
pub fn recover(path: &Path) -> Result<Recovery, JournalError> {
    let fail = |reason: String| JournalError {
        path: path.to_path_buf(),
        reason,
    };
    let bytes = std::fs::read(path).map_err(|e| fail(format!("cannot read it: {e}")))?;
    let record: Record = serde_json::from_slice(&bytes)
        .map_err(|e| fail(format!("it is not a readable journal: {e}")))?;
    if record.version != VERSION {
        return Err(fail(format!(
            "it has version {}, which this deputy does not know",
            record.version
        )));
    }
    let mut roots = Roots::default();
    let mut failures = Vec::new();
    let mut files = Vec::with_capacity(record.files.len());
    for file in record.files.iter().rev() {
        let outcome = match roots.dir_of(&file.root, &file.relative) {
            Ok(Some((dir, name))) => match record.stage {
                Stage::Committed => finish_file(&dir, file).map(|()| FileOutcome::Patched),
                Stage::Preparing | Stage::Writing => undo_file(&dir, &name, file),
            },
            // Its directory is gone, so nothing of the apply is left there.
            Ok(None) => Ok(match record.stage {
                Stage::Committed => FileOutcome::Patched,
                Stage::Preparing | Stage::Writing => FileOutcome::Untouched,
            }),
            Err(err) => Err(err),
        };
        files.push((
            file.path.clone(),
            outcome.unwrap_or_else(|err| {
                failures.push(format!("{}: {err}", file.path.display()));
                FileOutcome::Failed
            }),
        ));
    }
    files.reverse();
    if record.stage != Stage::Committed {
        for dir in record.dirs.iter().rev() {
            if let Err(err) = roots.remove_empty_dir(dir) {
                failures.push(format!("{}: {err}", dir.root.join(&dir.relative).display()));
            }
        }
    }
    if failures.is_empty() {
        remove(path).map_err(|e| fail(format!("recovered, but cannot remove it: {e}")))?;
    }
    Ok(Recovery {
        label: record.label,
        action: if record.stage == Stage::Committed {
            RecoveryAction::Completed
        } else {
            RecoveryAction::RolledBack
        },
        files,
        failures,
    })
}

/// Puts `file` (named `name` in `dir`) back as it was before the apply.
pub(crate) fn undo_file(dir: &Dir, name: &OsStr, file: &FileRecord) -> io::Result<FileOutcome> {
    let now = dir.entry_id(name)?;
    let mut outcome = FileOutcome::Untouched;
    if let Some(backup) = &file.backup
        && dir.entry_id(backup)?.is_some()
    {
        if now != file.old {
            dir.rename(backup, name)?;
            outcome = FileOutcome::Restored;
        }
        remove_entry(dir, backup)?;
    } else if file.backup.is_none()
        && let Some(new) = file.new
        && now == Some(new)
    {
        dir.remove_file(name)?;
        outcome = FileOutcome::Removed;
    }
    if let Some(temp) = &file.temp {
        remove_entry(dir, temp)?;
    }
    Ok(outcome)
}

/// Removes what a complete apply left of `file`: its backup (and a temporary file).
pub(crate) fn finish_file(dir: &Dir, file: &FileRecord) -> io::Result<()> {
    for name in [&file.backup, &file.temp].into_iter().flatten() {
        remove_entry(dir, name)?;
    }
    Ok(())
}

/// Removes the entry `name` of `dir`, if there is one.
pub(crate) fn remove_entry(dir: &Dir, name: &OsStr) -> io::Result<()> {
    match dir.remove_file(name) {
        Err(err) if err.kind() != io::ErrorKind::NotFound => Err(err),
        _ => Ok(()),
    }
}

/// Roots opened so far, by path.
#[derive(Default)]
struct Roots {
    open: Vec<(PathBuf, Root)>,
}

impl Roots {
    fn root(&mut self, path: &Path) -> io::Result<&Root> {
        let at = match self.open.iter().position(|(p, _)| p == path) {
            Some(at) => at,
            None => {
                self.open.push((path.to_path_buf(), Root::open(path)?));
                self.open.len() - 1
            }
        };
        Ok(&self.open[at].1)
    }

    /// The directory `relative` lives in beneath `root` and its final name, or `None` when
    /// that directory (or the root) no longer exists.
    fn dir_of(&mut self, root: &Path, relative: &Path) -> io::Result<Option<(Dir, OsString)>> {
        let (parent, name) = split_relative(relative)?;
        let name = name.to_owned();
        let opened = self.root(root).and_then(|root| root.open_dir(&parent));
        match opened {
            Ok(dir) => Ok(Some((dir, name))),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(err),
        }
    }

    fn remove_empty_dir(&mut self, dir: &DirRecord) -> io::Result<()> {
        let Some((parent, name)) = self.dir_of(&dir.root, &dir.relative)? else {
            return Ok(());
        };
        match parent.remove_dir(&name) {
            Ok(()) => Ok(()),
            // Gone already, or someone else's files are in it now: leave it.
            Err(err)
                if err.kind() == io::ErrorKind::NotFound
                    || err.raw_os_error() == Some(nix::errno::Errno::ENOTEMPTY as i32) =>
            {
                Ok(())
            }
            Err(err) => Err(err),
        }
    }
}

/// Paths and names as JSON strings, or as `{"bytes": [...]}` when not UTF-8.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Bytes {
    Text(String),
    Raw { bytes: Vec<u8> },
}

impl Bytes {
    fn of(name: &OsStr) -> Self {
        match name.to_str() {
            Some(text) => Bytes::Text(text.to_owned()),
            None => Bytes::Raw {
                bytes: name.as_bytes().to_vec(),
            },
        }
    }

    fn into_os_string(self) -> OsString {
        match self {
            Bytes::Text(text) => OsString::from(text),
            Bytes::Raw { bytes } => OsString::from_vec(bytes),
        }
    }
}

mod bytes_path {
    use super::*;

    pub(super) fn serialize<S: serde::Serializer>(path: &Path, s: S) -> Result<S::Ok, S::Error> {
        Bytes::of(path.as_os_str()).serialize(s)
    }

    pub(super) fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
        Ok(PathBuf::from(Bytes::deserialize(d)?.into_os_string()))
    }
}

mod bytes_name {
    use super::*;

    pub(super) fn serialize<S: serde::Serializer>(
        name: &Option<OsString>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        name.as_deref().map(Bytes::of).serialize(s)
    }

    pub(super) fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Option<OsString>, D::Error> {
        Ok(Option::<Bytes>::deserialize(d)?.map(Bytes::into_os_string))
    }
}

mod file_id {
    use super::*;

    pub(super) fn serialize<S: serde::Serializer>(
        id: &Option<FileId>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        id.map(|id| [id.dev, id.ino]).serialize(s)
    }

    pub(super) fn deserialize<'de, D: serde::Deserializer<'de>>(
        d: D,
    ) -> Result<Option<FileId>, D::Error> {
        Ok(Option::<[u64; 2]>::deserialize(d)?.map(|[dev, ino]| FileId { dev, ino }))
    }
}
