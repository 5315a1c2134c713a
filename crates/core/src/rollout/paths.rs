//! Where a thread's rollout lives, derived from its id.
//!
//! A thread id is a UUIDv7, which carries its creation time; the rollout sits
//! in the directory of that day (UTC), so finding it takes one directory
//! listing at most, never a scan of every session.

use std::path::{Path, PathBuf};

use time::OffsetDateTime;
use uuid::Uuid;

use super::RolloutError;
use super::head::{copied, read_meta};

/// Creates `dir` and its missing parents, each readable by its owner only (0700,
/// whatever the umask): sessions hold prompts, instructions and command output.
pub(crate) fn create_private_dirs(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// `$DEPUTY_HOME/sessions`.
pub fn sessions_dir(home: &Path) -> PathBuf {
    home.join("sessions")
}

/// The creation time a UUIDv7 thread id carries; `None` for anything else.
pub(crate) fn id_time(id: &str) -> Option<OffsetDateTime> {
    let uuid = Uuid::parse_str(id).ok()?;
    let (secs, nanos) = uuid.get_timestamp()?.to_unix();
    let secs = i64::try_from(secs).ok()?;
    OffsetDateTime::from_unix_timestamp(secs)
        .ok()
        .map(|t| t.replace_nanosecond(nanos).unwrap_or(t))
}

/// The canonical spelling of a thread id (lowercase, hyphenated); `None` when
/// it is not a UUID. Ids come from clients, so nothing else may reach a path.
fn canonical_id(id: &str) -> Option<String> {
    Uuid::parse_str(id).ok().map(|u| u.hyphenated().to_string())
}

fn day_dir(home: &Path, t: OffsetDateTime) -> PathBuf {
    sessions_dir(home)
        .join(format!("{:04}", t.year()))
        .join(format!("{:02}", u8::from(t.month())))
        .join(format!("{:02}", t.day()))
}

/// The path a new rollout for thread `id` gets:
/// `sessions/YYYY/MM/DD/rollout-YYYY-MM-DDThh-mm-ss-<id>.jsonl`.
/// `None` when `id` is not a UUIDv7.
pub fn rollout_path(home: &Path, id: &str) -> Option<PathBuf> {
    let id = canonical_id(id)?;
    let t = id_time(&id)?;
    let name = format!(
        "rollout-{:04}-{:02}-{:02}T{:02}-{:02}-{:02}-{id}.jsonl",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    );
    Some(day_dir(home, t).join(name))
}

/// The rollout of thread `id`, looked up in the day directory its id names. The file's
/// own `session_meta` must name the same thread: a file whose name and content disagree
/// (a copy of another session's file) is never taken for thread `id`.
pub fn find_rollout(home: &Path, id: &str) -> Result<PathBuf, RolloutError> {
    let not_found = || RolloutError::NotFound(id.to_string());
    let canonical = canonical_id(id).ok_or_else(not_found)?;
    let expected = rollout_path(home, &canonical).ok_or_else(not_found)?;
    let mut candidates = Vec::new();
    if expected.is_file() {
        candidates.push(expected.clone());
    }
    // Tolerate a file renamed by hand (another timestamp), as long as it stays in its day.
    if let Some(dir) = expected.parent() {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => Some(entries),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(RolloutError::io(dir, e)),
        };
        let suffix = format!("-{canonical}.jsonl");
        candidates.extend(
            entries
                .into_iter()
                .flatten()
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| *path != expected)
                .filter(|path| {
                    path.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("rollout-") && n.ends_with(&suffix))
                }),
        );
    }
    let mut mismatch = None;
    for path in candidates {
        match read_meta(&path) {
            Ok(meta) if meta.id == canonical => return Ok(path),
            Ok(meta) => mismatch = Some(copied(&path, &canonical, &meta.id)),
            // Unreadable: the caller reads it and says why it cannot be used.
            Err(_) => return Ok(path),
        }
    }
    Err(mismatch.unwrap_or_else(not_found))
}
