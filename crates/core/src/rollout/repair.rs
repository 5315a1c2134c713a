//! `deputy sessions repair`: bringing a stopped session back to a consistent state without
//! resuming it — its interrupted patches rolled back (or completed), a torn last line cut
//! off, calls a kill left unanswered closed with what became of them — exactly as its next
//! resume would.

use std::path::Path;

use super::RolloutError;
use super::paths::find_rollout;
use super::recorder::open_to_continue;
use crate::patch_journal::{RecoveredPatch, recover_thread_patches, threads_with_patch_journals};

/// What repairing one thread did.
#[derive(Debug, Clone)]
pub struct Repaired {
    /// The thread.
    pub thread_id: String,
    /// The interrupted patches recovered, and what became of their files.
    pub patches: Vec<RecoveredPatch>,
    /// Everything else worth knowing (lines skipped or cut off).
    pub warnings: Vec<String>,
}

/// Repairs thread `thread_id` under `home`, holding its rollout lock meanwhile (a thread
/// open in another process is [`RolloutError::Locked`]: it is left to that process). A
/// thread whose rollout is gone still has its patches recovered.
pub fn repair_thread(home: &Path, thread_id: &str) -> Result<Repaired, RolloutError> {
    let path = match find_rollout(home, thread_id) {
        Ok(path) => path,
        Err(RolloutError::NotFound(_)) => {
            let patches = recover_thread_patches(home, thread_id);
            if patches.is_empty() {
                return Err(RolloutError::NotFound(thread_id.to_string()));
            }
            return Ok(Repaired {
                thread_id: thread_id.to_string(),
                patches,
                warnings: vec!["its session file is gone; only its patches were recovered".into()],
            });
        }
        Err(err) => return Err(err),
    };
    let mut patches = Vec::new();
    let (_locked, session) = open_to_continue(&path, || {
        patches = recover_thread_patches(home, thread_id);
        patches.clone()
    })?;
    let warnings = session
        .warnings
        .into_iter()
        .filter(|w| !w.starts_with("interrupted patch"))
        .collect();
    Ok(Repaired {
        thread_id: thread_id.to_string(),
        patches,
        warnings,
    })
}

/// The threads under `home` that have interrupted patches to recover.
pub fn threads_needing_repair(home: &Path) -> Vec<String> {
    threads_with_patch_journals(home)
}
