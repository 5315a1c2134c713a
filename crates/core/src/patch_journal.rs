//! Where a thread's patches keep their journals, and recovering the ones a kill left.
//!
//! Each patch is applied with a journal at
//! `$DEPUTY_HOME/patch-journal/<thread>.<n>.<call>.json` (see
//! [`deputy_apply_patch::apply_journaled`]); it is gone once the patch is applied or
//! rolled back. One that is still there belongs to a patch whose process was killed
//! mid-write. It is recovered — rolled back, or completed if it had committed — the next
//! time its thread is resumed, or by `deputy sessions repair`, always under the thread's
//! rollout lock, so never while a process may still be writing it.

use std::path::{Path, PathBuf};

use deputy_apply_patch::{JournalFile, recover};
use serde::{Deserialize, Serialize};

/// The directory of every thread's patch journals.
pub fn journal_dir(home: &Path) -> PathBuf {
    home.join("patch-journal")
}

/// Which tool call a journal belongs to, kept in it as its label.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Label {
    thread_id: String,
    turn_id: String,
    call_id: String,
}

/// The journal for a patch of `thread_id` made by tool call `call_id` in turn `turn_id`.
pub(crate) fn journal_for(
    home: &Path,
    thread_id: &str,
    turn_id: &str,
    call_id: &str,
) -> JournalFile {
    let label = Label {
        thread_id: thread_id.to_string(),
        turn_id: turn_id.to_string(),
        call_id: call_id.to_string(),
    };
    // The name says which call the patch was, so that a journal torn by a kill before its
    // first write (empty, its label unreadable) still does: the call id is the model's, so
    // it is there only in hex, and only when short enough for a file name.
    let fresh = uuid::Uuid::now_v7();
    let name = if call_id.len() <= MAX_NAMED_CALL_ID {
        format!("{thread_id}.{fresh}.{}.json", hex(call_id.as_bytes()))
    } else {
        format!("{thread_id}.{fresh}.json")
    };
    JournalFile {
        path: journal_dir(home).join(name),
        label: serde_json::to_string(&label).unwrap_or_default(),
    }
}

/// The longest call id a journal's name carries (in hex, twice as long): with the thread id
/// and the fresh id, the name stays well under the 255 bytes a file name may have.
const MAX_NAMED_CALL_ID: usize = 80;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The call id a journal's name carries, if it carries one.
fn call_id_in_name(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_suffix(".tmp").unwrap_or(name);
    let stem = stem.strip_suffix(".json")?;
    // `<thread>.<fresh>.<hex call id>`
    let mut parts = stem.splitn(3, '.');
    let (_thread, _fresh, call) = (parts.next()?, parts.next()?, parts.next()?);
    if call.len() % 2 != 0 {
        return None;
    }
    let bytes = (0..call.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(call.get(at..at + 2)?, 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    String::from_utf8(bytes).ok()
}

/// What recovering one interrupted patch did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveredPatch {
    /// The tool call that made the patch, when the journal says.
    pub call_id: Option<String>,
    /// Which state every file was left in, in words for the model and the user.
    pub report: String,
}

/// Recovers every patch journal of thread `thread_id` under `home`. The caller holds the
/// thread's rollout lock.
pub fn recover_thread_patches(home: &Path, thread_id: &str) -> Vec<RecoveredPatch> {
    let prefix = format!("{thread_id}.");
    let of_thread = |path: &PathBuf| {
        path.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(&prefix))
    };
    let mut recovered = Vec::new();
    // A journal being written when the process was killed: nothing acts on a journal before
    // it is in place, so the version it was to replace is the one that counts — and without
    // one, the patch had not changed anything yet.
    for unfinished in entries(home).into_iter().filter(of_thread) {
        if unfinished.extension().is_none_or(|ext| ext != "tmp") {
            continue;
        }
        if unfinished.with_extension("").exists() {
            let _ = std::fs::remove_file(&unfinished);
            continue;
        }
        let patch = recover_one(&unfinished);
        let _ = std::fs::remove_file(&unfinished);
        recovered.push(RecoveredPatch {
            report: NOT_STARTED.to_string(),
            ..patch
        });
    }
    recovered.extend(
        journals(home)
            .into_iter()
            .filter(of_thread)
            .map(|path| recover_one(&path)),
    );
    recovered
}

/// What a patch killed before its journal was in place did: nothing.
const NOT_STARTED: &str = "the patch was interrupted before it changed any file; every file \
     is as it was before the patch";

/// The thread ids that have patch journals (or pieces of one) under `home`.
pub fn threads_with_patch_journals(home: &Path) -> Vec<String> {
    let mut ids: Vec<String> = entries(home)
        .iter()
        .filter_map(|path| {
            let name = path.file_name()?.to_str()?;
            Some(name.split_once('.')?.0.to_string())
        })
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

/// Every journal file under `home`, in name order (a thread's in the order they began).
fn journals(home: &Path) -> Vec<PathBuf> {
    entries(home)
        .into_iter()
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect()
}

/// Every file in the journal directory, in name order.
fn entries(home: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(journal_dir(home)) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .collect();
    paths.sort();
    paths
}

fn recover_one(path: &Path) -> RecoveredPatch {
    match recover(path) {
        Ok(recovery) => {
            let label: Option<Label> = serde_json::from_str(&recovery.label).ok();
            RecoveredPatch {
                call_id: label.map(|l| l.call_id).or_else(|| call_id_in_name(path)),
                report: recovery.to_string(),
            }
        }
        Err(err) => RecoveredPatch {
            call_id: call_id_in_name(path),
            report: format!(
                "an interrupted patch could not be recovered ({err}); its files may be half \
                 patched — check them"
            ),
        },
    }
}

#[cfg(test)]
mod tests;
