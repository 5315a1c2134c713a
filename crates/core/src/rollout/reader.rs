//! Reading a rollout back: every record in order, or a thread's history.
//!
//! A process killed mid-write leaves at most a torn last line; it is skipped
//! with a warning. An unreadable line elsewhere is skipped the same way, so a
//! damaged file still yields everything that can be read.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use deputy_protocol::{ResponseItem, ThreadEvent};

use super::{RolloutError, RolloutItem, SessionMeta, TurnContextRecord};

/// Warnings kept per file before the rest are only counted.
const MAX_WARNINGS: usize = 20;

/// What the model reads for a call whose output the file never got.
pub(crate) const UNFINISHED_CALL_OUTPUT: &str =
    "aborted: the session stopped before this call finished";

/// Every readable record of a rollout, in file order.
#[derive(Debug, Clone)]
pub struct RolloutContents {
    /// The records.
    pub items: Vec<RolloutItem>,
    /// Lines that were skipped, and why.
    pub warnings: Vec<String>,
}

/// A thread rebuilt from its rollout.
#[derive(Debug, Clone)]
pub struct ResumedSession {
    /// The rollout file.
    pub path: PathBuf,
    /// The session's metadata.
    pub meta: SessionMeta,
    /// The model history, exactly as the thread last had it, plus
    /// [`ResumedSession::closed_calls`] at the end.
    pub history: Vec<ResponseItem>,
    /// How many turns were started.
    pub turns: usize,
    /// The settings the last turn ran with (a turn's overrides persist for later turns).
    pub last_turn_context: Option<TurnContextRecord>,
    /// The highest event `seq` in the file (0 when it holds no events): the log continues after it.
    pub last_seq: u64,
    /// Outputs added for function calls the file leaves unanswered (a turn cut
    /// short by a crash); the model API rejects a call without an output.
    pub closed_calls: Vec<ResponseItem>,
    /// Lines that were skipped, and why.
    pub warnings: Vec<String>,
    pub(crate) tail: Tail,
}

/// The state of the file's end, so that appending continues on a clean line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tail {
    /// Ends with a newline (or is empty).
    Clean,
    /// The last line is whole but lacks its newline.
    MissingNewline,
    /// The last line is torn from this byte offset on.
    Torn(u64),
}

/// Reads every record of the rollout at `path`.
pub fn read_rollout(path: &Path) -> Result<RolloutContents, RolloutError> {
    let bytes = std::fs::read(path).map_err(|e| RolloutError::io(path, e))?;
    let mut items = Vec::new();
    let scan = scan(&bytes, path, |item| items.push(item));
    Ok(RolloutContents {
        items,
        warnings: scan.warnings,
    })
}

/// Loads the rollout at `path` as a thread to resume.
pub fn load_rollout(path: &Path) -> Result<ResumedSession, RolloutError> {
    let bytes = std::fs::read(path).map_err(|e| RolloutError::io(path, e))?;
    resumed_from_bytes(&bytes, path)
}

/// The events of the rollout at `path` with `after < seq < before`, in file order.
/// Lines of other kinds are skipped without being decoded. A large file is decoded
/// in a few slices at once (one per core, at most [`MAX_DECODERS`]), since decoding,
/// not reading, is what a long replay costs.
pub fn read_events(path: &Path, after: u64, before: u64) -> Result<Vec<ThreadEvent>, RolloutError> {
    let bytes = std::fs::read(path).map_err(|e| RolloutError::io(path, e))?;
    let decoders = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(MAX_DECODERS)
        .min(bytes.len() / PARALLEL_SLICE_BYTES)
        .max(1);
    let slices = line_slices(&bytes, decoders);
    if slices.len() == 1 {
        return Ok(decode_events(&bytes, after, before));
    }
    let decoded: Vec<Vec<ThreadEvent>> = std::thread::scope(|scope| {
        let workers: Vec<_> = slices[1..]
            .iter()
            .map(|slice| scope.spawn(move || decode_events(slice, after, before)))
            .collect();
        let first = decode_events(slices[0], after, before);
        std::iter::once(first)
            .chain(workers.into_iter().map(|worker| {
                worker.join().unwrap_or_else(|_| {
                    tracing::warn!("decoding part of {} failed", path.display());
                    Vec::new()
                })
            }))
            .collect()
    });
    Ok(decoded.into_iter().flatten().collect())
}

/// Most threads one [`read_events`] decodes with.
const MAX_DECODERS: usize = 4;
/// The least a slice decoded on a thread of its own holds.
const PARALLEL_SLICE_BYTES: usize = 4 << 20;

/// `bytes` cut into at most `n` slices of about equal size, each ending after a newline
/// (or at the end): whole lines, in order.
pub(crate) fn line_slices(bytes: &[u8], n: usize) -> Vec<&[u8]> {
    let mut slices = Vec::with_capacity(n);
    let mut rest = bytes;
    for remaining in (2..=n).rev() {
        let target = rest.len() / remaining;
        let Some(at) = rest[target..].iter().position(|&b| b == b'\n') else {
            break;
        };
        let (head, tail) = rest.split_at(target + at + 1);
        slices.push(head);
        rest = tail;
    }
    slices.push(rest);
    slices
}

/// The events with `after < seq < before` among the whole lines of `bytes`.
pub(crate) fn decode_events(bytes: &[u8], after: u64, before: u64) -> Vec<ThreadEvent> {
    #[derive(serde::Deserialize)]
    struct EventLine {
        payload: ThreadEvent,
    }
    let mut events = Vec::new();
    for line in bytes.split(|&b| b == b'\n') {
        let Some(seq) = event_line_seq(line) else {
            continue;
        };
        if seq <= after || seq >= before {
            continue;
        }
        // A torn or unreadable line is skipped, as everywhere else.
        if let Ok(EventLine { payload }) = serde_json::from_slice::<EventLine>(line) {
            events.push(payload);
        }
    }
    events
}

/// The `seq` of an `event` line, read from its first bytes; `None` for other lines.
fn event_line_seq(line: &[u8]) -> Option<u64> {
    const MARKER: &[u8] = br#""type":"event","payload":{"seq":"#;
    // `{"timestamp":"YYYY-MM-DDThh:mm:ss.mmmZ",` comes first; look a little past it.
    let head = &line[..line.len().min(96)];
    let at = head.windows(MARKER.len()).position(|w| w == MARKER)? + MARKER.len();
    let digits = line[at..].iter().take_while(|b| b.is_ascii_digit()).count();
    std::str::from_utf8(&line[at..at + digits])
        .ok()?
        .parse()
        .ok()
}

/// Rebuilds a thread from a rollout's bytes.
pub(crate) fn resumed_from_bytes(
    bytes: &[u8],
    path: &Path,
) -> Result<ResumedSession, RolloutError> {
    let mut meta = None;
    let mut history = Vec::new();
    let mut turns = 0;
    let mut last_turn_context = None;
    let mut last_seq = 0;
    let scan = scan(bytes, path, |item| match item {
        RolloutItem::SessionMeta(m) => {
            meta.get_or_insert(m);
        }
        RolloutItem::ResponseItem(item) => history.push(item),
        // Everything before a compaction is replaced by what it left.
        RolloutItem::Compacted(compacted) => history = compacted.replacement_history,
        RolloutItem::TurnContext(context) => {
            turns += 1;
            last_turn_context = Some(context);
        }
        RolloutItem::Event(event) => last_seq = last_seq.max(event.seq),
        RolloutItem::EventMsg(_) => {}
    });
    let meta = meta.ok_or_else(|| RolloutError::Corrupt {
        path: path.to_path_buf(),
        reason: "it has no readable session_meta line".into(),
    })?;
    let closed_calls = close_unanswered_calls(&history);
    history.extend(closed_calls.iter().cloned());
    Ok(ResumedSession {
        path: path.to_path_buf(),
        meta,
        history,
        turns,
        last_turn_context,
        last_seq,
        closed_calls,
        warnings: scan.warnings,
        tail: scan.tail,
    })
}

/// Outputs for every function call in `history` that has none, in call order.
fn close_unanswered_calls(history: &[ResponseItem]) -> Vec<ResponseItem> {
    let answered: HashSet<&str> = history
        .iter()
        .filter_map(|item| match item {
            ResponseItem::FunctionCallOutput { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    history
        .iter()
        .filter_map(|item| match item {
            ResponseItem::FunctionCall { call_id, .. } if !answered.contains(call_id.as_str()) => {
                Some(ResponseItem::FunctionCallOutput {
                    call_id: call_id.clone(),
                    output: UNFINISHED_CALL_OUTPUT.to_string(),
                })
            }
            _ => None,
        })
        .collect()
}

struct Scan {
    warnings: Vec<String>,
    tail: Tail,
}

/// Parses each line of `bytes`, handing readable records to `visit`.
fn scan(bytes: &[u8], path: &Path, mut visit: impl FnMut(RolloutItem)) -> Scan {
    let mut warnings = Vec::new();
    let mut skipped = 0usize;
    let mut tail = Tail::Clean;
    let mut offset = 0usize;
    let mut number = 0usize;
    while offset < bytes.len() {
        number += 1;
        let (line, terminated) = match bytes[offset..].iter().position(|&b| b == b'\n') {
            Some(end) => (&bytes[offset..offset + end], true),
            None => (&bytes[offset..], false),
        };
        let start = offset;
        offset += line.len() + usize::from(terminated);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<RolloutItem>(line) {
            Ok(item) => {
                visit(item);
                if !terminated {
                    tail = Tail::MissingNewline;
                }
            }
            Err(err) => {
                skipped += 1;
                let message = if terminated {
                    format!(
                        "{}: skipped unreadable line {number}: {err}",
                        path.display()
                    )
                } else {
                    tail = Tail::Torn(start as u64);
                    format!(
                        "{}: skipped a torn last line ({number}, {} bytes): the process writing it was stopped mid-write",
                        path.display(),
                        line.len()
                    )
                };
                if warnings.len() < MAX_WARNINGS {
                    warnings.push(message);
                }
            }
        }
    }
    if skipped > warnings.len() {
        warnings.push(format!(
            "{}: {} more unreadable lines skipped",
            path.display(),
            skipped - warnings.len()
        ));
    }
    Scan { warnings, tail }
}
