//! Archiving a thread: its rollout moves, unchanged, from `sessions/YYYY/MM/DD/` to
//! `archived_sessions/`, where listings of live sessions and resuming by id do not look.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::recorder::lock_exclusive;
use super::{RolloutError, find_rollout};

/// `$DEPUTY_HOME/archived_sessions`: archived rollouts, one flat directory.
pub fn archived_sessions_dir(home: &Path) -> PathBuf {
    home.join("archived_sessions")
}

/// Moves thread `id`'s rollout into [`archived_sessions_dir`] and returns its new path.
/// Fails with [`RolloutError::Locked`] while a process has the thread open (close it
/// first) and [`RolloutError::NotFound`] when there is no such live session.
pub fn archive_rollout(home: &Path, id: &str) -> Result<PathBuf, RolloutError> {
    let path = find_rollout(home, id)?;
    let file = File::open(&path).map_err(|e| RolloutError::io(&path, e))?;
    // Held while the file moves, so no process can open the thread meanwhile.
    lock_exclusive(&file, &path)?;
    let dir = archived_sessions_dir(home);
    super::paths::create_private_dirs(&dir).map_err(|e| RolloutError::io(&dir, e))?;
    let name = path.file_name().ok_or_else(|| RolloutError::Corrupt {
        path: path.clone(),
        reason: "the rollout path has no file name".into(),
    })?;
    let target = dir.join(name);
    if target.exists() {
        return Err(RolloutError::Corrupt {
            path: target,
            reason: "an archived rollout of this thread already exists".into(),
        });
    }
    std::fs::rename(&path, &target).map_err(|e| RolloutError::io(&path, e))?;
    drop(file);
    Ok(target)
}
