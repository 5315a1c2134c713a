//! Thread ids as users and clients type them: one parser, one message for a malformed
//! id, and unique prefixes for people at a terminal.

use std::path::Path;

use uuid::Uuid;

use super::list::{DAY_DIR_DEPTH, collect_rollouts};
use super::{RolloutError, paths::sessions_dir};

/// Why a typed thread id names no one session.
#[derive(Debug, thiserror::Error)]
pub enum ThreadIdError {
    /// Not a thread id (nor the start of one).
    #[error("Failed to parse thread_id `{0}`: not a UUID")]
    Malformed(String),
    /// No saved session has this id (or an id starting with it).
    #[error("Session not found for thread_id: {0}")]
    NotFound(String),
    /// Several saved sessions start with this prefix.
    #[error("thread_id `{prefix}` is ambiguous: {} sessions start with it ({}); give more of it", .matches.len(), .matches.join(", "))]
    Ambiguous {
        /// The prefix given.
        prefix: String,
        /// The ids it could mean.
        matches: Vec<String>,
    },
    /// The sessions directory could not be read.
    #[error(transparent)]
    Rollout(#[from] RolloutError),
}

/// The canonical spelling (lowercase, hyphenated) of thread id `id`, which must be a
/// whole UUID.
pub fn parse_thread_id(id: &str) -> Result<String, ThreadIdError> {
    Uuid::parse_str(id.trim())
        .map(|uuid| uuid.hyphenated().to_string())
        .map_err(|_| ThreadIdError::Malformed(id.to_string()))
}

/// The id of the one saved session under `home` whose id is `id` or starts with it
/// (hex digits and hyphens, case-insensitive).
pub fn resolve_thread_id(home: &Path, id: &str) -> Result<String, ThreadIdError> {
    if let Ok(full) = parse_thread_id(id) {
        return Ok(full);
    }
    let prefix = id.trim().to_ascii_lowercase();
    let looks_like_a_prefix = !prefix.is_empty()
        && prefix.len() < 36
        && prefix.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    if !looks_like_a_prefix {
        return Err(ThreadIdError::Malformed(id.to_string()));
    }
    let mut files = Vec::new();
    collect_rollouts(&sessions_dir(home), DAY_DIR_DEPTH, &mut files)?;
    let mut matches: Vec<String> = files
        .iter()
        .filter_map(|(path, _)| rollout_id(path))
        .filter(|candidate| candidate.starts_with(&prefix))
        .collect();
    matches.sort();
    matches.dedup();
    match matches.len() {
        0 => Err(ThreadIdError::NotFound(id.to_string())),
        1 => Ok(matches.remove(0)),
        _ => Err(ThreadIdError::Ambiguous {
            prefix: id.to_string(),
            matches,
        }),
    }
}

/// The thread id in a rollout's file name (`rollout-<time>-<id>.jsonl`).
fn rollout_id(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?.strip_suffix(".jsonl")?;
    let id = name.get(name.len().checked_sub(36)?..)?;
    parse_thread_id(id).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(home: &Path, id: &str) {
        let dir = sessions_dir(home).join("2025/01/02");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(format!("rollout-2025-01-02T03-04-05-{id}.jsonl")),
            "",
        )
        .unwrap();
    }

    #[test]
    fn a_unique_prefix_names_its_session_and_others_say_why_not() {
        let home = tempfile::tempdir().unwrap();
        touch(home.path(), "0194a1b2-0000-7000-8000-000000000001");
        touch(home.path(), "0194a1b2-0000-7000-8000-000000000002");
        touch(home.path(), "0194ffff-0000-7000-8000-000000000003");

        assert_eq!(
            resolve_thread_id(home.path(), "0194F").unwrap(),
            "0194ffff-0000-7000-8000-000000000003"
        );
        assert_eq!(
            resolve_thread_id(home.path(), "0194a1b2-0000-7000-8000-000000000002").unwrap(),
            "0194a1b2-0000-7000-8000-000000000002"
        );
        let ambiguous = resolve_thread_id(home.path(), "0194a1b2").unwrap_err();
        assert!(
            matches!(&ambiguous, ThreadIdError::Ambiguous { matches, .. } if matches.len() == 2)
        );
        assert_eq!(
            resolve_thread_id(home.path(), "abc")
                .unwrap_err()
                .to_string(),
            "Session not found for thread_id: abc"
        );
        assert_eq!(
            resolve_thread_id(home.path(), "do it")
                .unwrap_err()
                .to_string(),
            "Failed to parse thread_id `do it`: not a UUID"
        );
    }
}
