//! Listing sessions for `deputy sessions list`, `exec resume --last`, the conversation
//! tools and the app-server's `thread/list`.
//!
//! Unlike resuming one thread, a listing has to look at every rollout; it
//! sorts them by modification time first and reads only as many as it shows.

use std::borrow::Cow;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use deputy_protocol::{EventMsg, ItemEvent, ThreadEvent, ThreadEventMsg, ThreadItem};
use serde::Deserialize;

use super::archive::archived_sessions_dir;
use super::event_line::{LINE_HEAD, line_type};
use super::head::{copied, id_of_file, read_head_fields, read_meta};
use super::{RolloutError, RolloutItem, SessionMeta, SessionSource, paths::sessions_dir};

/// Characters of the first prompt shown in a listing.
const PREVIEW_CHARS: usize = 60;

/// One session as `deputy sessions list` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionSummary {
    /// The thread id.
    pub id: String,
    /// The rollout file.
    pub path: PathBuf,
    /// When the rollout was last written.
    pub updated: SystemTime,
    /// The session's working directory.
    pub cwd: PathBuf,
    /// The start of the first user prompt, on one line.
    pub first_prompt_preview: String,
    /// How many turns were started.
    pub turns: usize,
    /// The thread this one works for (a review's reviewer), if any.
    pub parent_thread_id: Option<String>,
    /// When the thread was created (the time its UUIDv7 id carries; else `updated`).
    pub created: SystemTime,
    /// Which front door started it.
    pub source: SessionSource,
    /// The provider id it started with.
    pub model_provider: String,
    /// The deputy version that created it.
    pub cli_version: String,
}

impl SessionSummary {
    /// [`SessionSummary::updated`] as `YYYY-MM-DDThh:mm:ssZ`.
    pub fn updated_utc(&self) -> String {
        let t = time::OffsetDateTime::from(self.updated);
        let format =
            time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]Z");
        t.format(&format).unwrap_or_default()
    }
}

/// Sessions under `home`, newest first, at most `limit`, only those whose
/// working directory is `cwd` when given. Unreadable rollouts are left out, and so are
/// copies (a file whose name and `session_meta` name different threads), with a warning.
pub fn list_sessions(
    home: &Path,
    cwd: Option<&Path>,
    limit: usize,
) -> Result<Vec<SessionSummary>, RolloutError> {
    let cwd = cwd.map(|dir| dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()));
    let mut files = Vec::new();
    collect_rollouts(&sessions_dir(home), DAY_DIR_DEPTH, &mut files)?;
    files.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
    let mut sessions = Vec::new();
    for (path, updated) in files {
        if sessions.len() >= limit {
            break;
        }
        if let Some(summary) = listed(&path, updated, cwd.as_deref()) {
            sessions.push(summary);
        }
    }
    Ok(sessions)
}

/// The summary of the rollout at `path` if a listing shows it: a session of its own (not
/// a review's reviewer), not a copy, in `cwd` when given. The first line alone decides;
/// only a session that is shown is read whole.
fn listed(path: &Path, updated: SystemTime, cwd: Option<&Path>) -> Option<SessionSummary> {
    let head = match read_head_fields(path) {
        Ok(head) => head,
        Err(err) => {
            tracing::debug!("not listing {}: {err}", path.display());
            return None;
        }
    };
    if let Some(named) = id_of_file(path)
        && named != head.id
    {
        tracing::warn!("not listing {}", copied(path, &named, &head.id));
        return None;
    }
    // A review's reviewer belongs to its parent; it is not a session of its own.
    if head.parent_thread_id.is_some() || cwd.is_some_and(|dir| dir != head.cwd) {
        return None;
    }
    read_meta(path)
        .and_then(|meta| summarize(path, updated, meta))
        .inspect_err(|err| tracing::debug!("not listing {}: {err}", path.display()))
        .ok()
}

/// One page of a listing by creation (see [`list_sessions_by_creation`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionPage {
    /// The sessions, newest first.
    pub sessions: Vec<SessionSummary>,
    /// Whether older sessions remain; the next page starts before the last one here.
    pub more: bool,
    /// When `more`: the cursor of the next page — the key the listing is sorted by, of the
    /// last session here, so that the next page always starts after it.
    pub next_cursor: Option<String>,
}

/// Sessions under `home` by creation, newest first: those created before session
/// `before` when given (the previous page's cursor), at most `limit`. Thread ids are
/// UUIDv7, so their order is their creation order and is read from the file names; unlike
/// [`list_sessions`]'s order by modification time it does not change while a client
/// pages through it. Unreadable rollouts and copies are left out.
pub fn list_sessions_by_creation(
    home: &Path,
    before: Option<&str>,
    limit: usize,
) -> Result<SessionPage, RolloutError> {
    list_by_creation(
        home,
        CreationQuery {
            before,
            limit,
            ..CreationQuery::default()
        },
    )
}

/// Which sessions [`list_by_creation`] returns.
#[derive(Debug, Clone, Copy, Default)]
pub struct CreationQuery<'a> {
    /// Archived sessions (`archived_sessions/`) instead of live ones (`sessions/`).
    pub archived: bool,
    /// Only sessions whose working directory is this one.
    pub cwd: Option<&'a Path>,
    /// Only sessions past this one in the listing's order (the previous page's last id):
    /// created before it, or after it when `oldest_first`.
    pub before: Option<&'a str>,
    /// At most this many.
    pub limit: usize,
    /// Oldest first instead of newest first.
    pub oldest_first: bool,
}

/// [`list_sessions_by_creation`] with more choice: archived sessions, or only those of
/// one working directory. `more` says whether a further session matches. Sessions are
/// sorted by the thread id in their file names; copies are left out (see
/// [`list_sessions`]), so every listed session's id is that key.
pub fn list_by_creation(
    home: &Path,
    query: CreationQuery<'_>,
) -> Result<SessionPage, RolloutError> {
    let before = query.before.map(|id| {
        uuid::Uuid::parse_str(id).map_or_else(|_| id.to_string(), |u| u.hyphenated().to_string())
    });
    let cwd = query
        .cwd
        .map(|dir| dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf()));
    let mut files = Vec::new();
    if query.archived {
        collect_rollouts(&archived_sessions_dir(home), 0, &mut files)?;
    } else {
        collect_rollouts(&sessions_dir(home), DAY_DIR_DEPTH, &mut files)?;
    }
    let mut files: Vec<(String, PathBuf, SystemTime)> = files
        .into_iter()
        .filter_map(|(path, updated)| Some((id_of_file(&path)?, path, updated)))
        .filter(|(id, _, _)| {
            before
                .as_ref()
                .is_none_or(|before| match query.oldest_first {
                    false => id < before,
                    true => id > before,
                })
        })
        .collect();
    files.sort_by(|a, b| match query.oldest_first {
        false => b.0.cmp(&a.0).then_with(|| b.1.cmp(&a.1)),
        true => a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)),
    });
    let mut sessions = Vec::new();
    let mut more = false;
    let mut last_key = None;
    for (key, path, updated) in files {
        let Some(summary) = listed(&path, updated, cwd.as_deref()) else {
            continue;
        };
        if sessions.len() == query.limit {
            more = true;
            break;
        }
        sessions.push(summary);
        last_key = Some(key);
    }
    Ok(SessionPage {
        sessions,
        more,
        next_cursor: last_key.filter(|_| more),
    })
}

/// What the first line of the rollout at `path` says of it, as a summary with no turns
/// and no first prompt: for a caller that has (or does not need) the rest, without
/// reading a file that may be large.
pub fn session_head(path: &Path) -> Result<SessionSummary, RolloutError> {
    let updated = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .map_err(|e| RolloutError::io(path, e))?;
    Ok(summary_of(path, updated, read_meta(path)?, 0, None))
}

/// The summary of the rollout at `path`, as a listing shows it.
pub fn session_summary(path: &Path) -> Result<SessionSummary, RolloutError> {
    let updated = std::fs::metadata(path)
        .and_then(|m| m.modified())
        .map_err(|e| RolloutError::io(path, e))?;
    summarize(path, updated, read_meta(path)?)
}

/// How deep rollouts sit below `sessions/`: `YYYY/MM/DD/`.
pub(super) const DAY_DIR_DEPTH: usize = 3;

/// Gathers `rollout-*.jsonl` files `file_depth` directories below `dir` with their mtimes.
pub(super) fn collect_rollouts(
    dir: &Path,
    file_depth: usize,
    out: &mut Vec<(PathBuf, SystemTime)>,
) -> Result<(), RolloutError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(RolloutError::io(dir, e)),
    };
    for entry in entries.filter_map(Result::ok) {
        let path = entry.path();
        let Ok(meta) = entry.metadata() else { continue };
        if file_depth > 0 {
            if meta.is_dir() {
                collect_rollouts(&path, file_depth - 1, out)?;
            }
        } else if meta.is_file()
            && path
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("rollout-") && n.ends_with(".jsonl"))
        {
            out.push((path, meta.modified().unwrap_or(SystemTime::UNIX_EPOCH)));
        }
    }
    Ok(())
}

/// Just the record type, for a line whose type is not where rollouts put it.
#[derive(Deserialize)]
struct Kind<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
}

/// The summary of the rollout at `path`, whose `session_meta` is `meta`: its turns are
/// counted and its first prompt found from the first bytes of each line. Lines are read
/// as a stream and only the one holding the first prompt is decoded, so a session with a
/// huge line costs one pass over it and no copy of it.
fn summarize(
    path: &Path,
    updated: SystemTime,
    meta: SessionMeta,
) -> Result<SessionSummary, RolloutError> {
    let file = std::fs::File::open(path).map_err(|e| RolloutError::io(path, e))?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut line = Vec::new();
    let mut preview = None;
    let mut turns = 0;
    loop {
        line.clear();
        let ended = match read_head(&mut reader, &mut line) {
            Ok(Some(ended)) => ended,
            Ok(None) => break,
            Err(err) => return Err(RolloutError::io(path, err)),
        };
        let known = line_type(&line).map(str::to_string);
        let whole = match known.as_deref() {
            Some("event" | "event_msg") => preview.is_none(),
            Some(_) => false,
            // Not written the way deputy writes: only the whole line tells.
            None => true,
        };
        if !ended {
            let rest = if whole {
                reader.read_until(b'\n', &mut line)
            } else {
                reader.skip_until(b'\n')
            };
            rest.map_err(|e| RolloutError::io(path, e))?;
        }
        let kind = match known {
            Some(kind) => Cow::Owned(kind),
            None => match serde_json::from_slice::<Kind<'_>>(&line) {
                Ok(Kind { kind }) => kind,
                Err(_) => continue,
            },
        };
        match kind.as_ref() {
            "turn_context" => turns += 1,
            "event" if preview.is_none() => {
                if let Ok(RolloutItem::Event(ThreadEvent {
                    msg:
                        ThreadEventMsg::ItemCompleted(ItemEvent {
                            item: ThreadItem::UserMessage(m),
                        }),
                    ..
                })) = serde_json::from_slice(&line)
                {
                    preview = Some(one_line_preview(&m.text));
                }
            }
            "event_msg" if preview.is_none() => {
                if let Ok(RolloutItem::EventMsg(EventMsg::UserMessage(m))) =
                    serde_json::from_slice(&line)
                {
                    preview = Some(one_line_preview(&m.message));
                }
            }
            _ => {}
        }
    }
    Ok(summary_of(path, updated, meta, turns, preview))
}

/// Reads the first [`LINE_HEAD`] bytes of the next line into `buf` (its newline left
/// out): `Some(true)` when that is the whole line, `Some(false)` when more follows, `None`
/// at the end of the file.
fn read_head(reader: &mut impl BufRead, buf: &mut Vec<u8>) -> std::io::Result<Option<bool>> {
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Ok((!buf.is_empty()).then_some(true));
        }
        let take = &available[..available.len().min(LINE_HEAD - buf.len())];
        if let Some(newline) = memchr::memchr(b'\n', take) {
            buf.extend_from_slice(&take[..newline]);
            reader.consume(newline + 1);
            return Ok(Some(true));
        }
        let taken = take.len();
        buf.extend_from_slice(take);
        reader.consume(taken);
        if buf.len() >= LINE_HEAD {
            return Ok(Some(false));
        }
    }
}

fn summary_of(
    path: &Path,
    updated: SystemTime,
    meta: SessionMeta,
    turns: usize,
    preview: Option<String>,
) -> SessionSummary {
    let created = super::paths::id_time(&meta.id).map_or(updated, SystemTime::from);
    SessionSummary {
        id: meta.id,
        path: path.to_path_buf(),
        updated,
        cwd: meta.cwd,
        first_prompt_preview: preview.unwrap_or_default(),
        turns,
        parent_thread_id: meta.parent_thread_id,
        created,
        source: meta.source,
        model_provider: meta.model_provider,
        cli_version: meta.cli_version,
    }
}

/// The first [`PREVIEW_CHARS`] characters of `text` with whitespace runs as single
/// spaces, as listings show a first prompt.
pub fn one_line_preview(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let joined = words.join(" ");
    match joined.char_indices().nth(PREVIEW_CHARS) {
        Some((cut, _)) => format!("{}…", &joined[..cut]),
        None => joined,
    }
}
