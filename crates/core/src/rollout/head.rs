//! The first line of a rollout — its `session_meta` — read alone: enough to tell which
//! thread a file belongs to, its working directory and its parent, without reading the
//! rest of a file that may be gigabytes long.

use std::borrow::Cow;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{RolloutError, RolloutItem, SessionMeta};

/// The longest first line read (a `session_meta` with very long instructions).
const MAX_HEAD_BYTES: u64 = 16 << 20;

/// The `session_meta` on the first line of the rollout at `path`.
pub(crate) fn read_meta(path: &Path) -> Result<SessionMeta, RolloutError> {
    let line = first_line(path)?;
    match serde_json::from_slice::<RolloutItem>(&line) {
        Ok(RolloutItem::SessionMeta(meta)) => Ok(meta),
        Ok(_) => Err(unusable(
            path,
            "its first line is not a session_meta line".into(),
        )),
        Err(err) => Err(unusable(
            path,
            format!("its first line is unreadable: {err}"),
        )),
    }
}

/// What a listing filters sessions by, from the first line of a rollout.
#[derive(Debug, Deserialize)]
pub(crate) struct HeadFields {
    /// The thread id inside the file.
    pub(crate) id: String,
    /// The working directory it started in.
    pub(crate) cwd: PathBuf,
    /// The thread it works for (a review's reviewer).
    #[serde(default)]
    pub(crate) parent_thread_id: Option<String>,
}

/// [`read_meta`]'s id, cwd and parent alone: every other field is skipped unread.
pub(crate) fn read_head_fields(path: &Path) -> Result<HeadFields, RolloutError> {
    #[derive(Deserialize)]
    struct Line<'a> {
        #[serde(rename = "type", borrow)]
        kind: Cow<'a, str>,
        payload: HeadFields,
    }
    let line = first_line(path)?;
    match serde_json::from_slice::<Line<'_>>(&line) {
        Ok(Line { kind, payload }) if kind == "session_meta" => Ok(payload),
        Ok(_) => Err(unusable(
            path,
            "its first line is not a session_meta line".into(),
        )),
        Err(err) => Err(unusable(
            path,
            format!("its first line is unreadable: {err}"),
        )),
    }
}

fn first_line(path: &Path) -> Result<Vec<u8>, RolloutError> {
    let file = std::fs::File::open(path).map_err(|e| RolloutError::io(path, e))?;
    let mut line = Vec::new();
    BufReader::new(file.take(MAX_HEAD_BYTES))
        .read_until(b'\n', &mut line)
        .map_err(|e| RolloutError::io(path, e))?;
    if line.is_empty() {
        return Err(unusable(path, "it is empty".into()));
    }
    Ok(line)
}

fn unusable(path: &Path, reason: String) -> RolloutError {
    RolloutError::Corrupt {
        path: path.to_path_buf(),
        reason,
    }
}

/// The thread id in a rollout's file name (`rollout-<time>-<id>.jsonl`), canonical.
pub(crate) fn id_of_file(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?.strip_suffix(".jsonl")?;
    let id = name.get(name.len().checked_sub(36)?..)?;
    uuid::Uuid::parse_str(id)
        .ok()
        .map(|u| u.hyphenated().to_string())
}

/// Why the rollout at `path`, named for thread `named`, is not that thread's: it holds
/// thread `holds` (a copy, or a file renamed by hand).
pub(crate) fn copied(path: &Path, named: &str, holds: &str) -> RolloutError {
    RolloutError::Corrupt {
        path: path.to_path_buf(),
        reason: format!(
            "its name says thread {named} but it holds thread {holds} (a copy of another \
             session's file?); it is never used as {named}"
        ),
    }
}
