//! The turn's cumulative diff: every file a turn's patches touched, from its
//! content before the turn's first change to its content now.

// Runs on the async runtime: no blocking std calls (see clippy.toml).
#![cfg_attr(not(test), warn(clippy::disallowed_methods))]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use deputy_apply_patch::{PlannedChange, unified_diff};

/// The text of the file at `path` now, if it is a regular file holding UTF-8. A command may
/// have put a FIFO or a link under a patched name since: neither is waited on or followed.
fn current_text(path: &Path) -> Option<String> {
    let read = crate::untrusted_file::read_file(path, false, usize::MAX / 2).ok()??;
    String::from_utf8(read.bytes).ok()
}

/// Content of each touched file before the turn changed it (`None` = did not exist).
#[derive(Debug, Default)]
pub(crate) struct TurnDiffTracker {
    baseline: BTreeMap<PathBuf, Option<String>>,
    /// A diff already computed by the patch planner, valid while the file still
    /// holds `content`: diffing a large file twice per patch is the costliest step.
    known: BTreeMap<PathBuf, KnownDiff>,
}

#[derive(Debug)]
struct KnownDiff {
    content: String,
    diff: String,
}

impl TurnDiffTracker {
    /// Records the pre-change content of every path a plan touches, once per turn.
    pub(crate) fn remember_baseline(&mut self, planned: &[PlannedChange]) {
        for change in planned {
            let mut paths = vec![change.path().to_path_buf()];
            if let PlannedChange::Update {
                move_path: Some(dest),
                ..
            } = change
            {
                paths.push(dest.clone());
            }
            for path in paths {
                self.baseline
                    .entry(path.clone())
                    .or_insert_with(|| current_text(&path));
            }
            // An in-place update whose old content is the turn's baseline has
            // exactly the planner's diff as its turn diff.
            if let PlannedChange::Update {
                path,
                move_path: None,
                old_content,
                new_content,
                unified_diff,
                ..
            } = change
                && self
                    .baseline
                    .get(path)
                    .is_some_and(|before| before.as_deref() == Some(old_content.as_str()))
            {
                self.known.insert(
                    path.clone(),
                    KnownDiff {
                        content: new_content.clone(),
                        diff: unified_diff.clone(),
                    },
                );
            }
        }
    }

    /// A git-style unified diff of every touched file, paths relative to `cwd` where possible.
    pub(crate) fn diff(&self, cwd: &Path) -> String {
        let mut out = String::new();
        for (path, before) in &self.baseline {
            let now = current_text(path);
            if *before == now {
                continue;
            }
            let shown = path.strip_prefix(cwd).unwrap_or(path).display().to_string();
            let old_name = if before.is_some() {
                format!("a/{shown}")
            } else {
                "/dev/null".into()
            };
            let new_name = if now.is_some() {
                format!("b/{shown}")
            } else {
                "/dev/null".into()
            };
            out.push_str(&format!("diff --git a/{shown} b/{shown}\n"));
            if before.is_none() {
                out.push_str("new file mode 100644\n");
            } else if now.is_none() {
                out.push_str("deleted file mode 100644\n");
            }
            out.push_str(&format!("--- {old_name}\n+++ {new_name}\n"));
            match (self.known.get(path), &now) {
                (Some(known), Some(now)) if known.content == *now => out.push_str(&known.diff),
                _ => out.push_str(&unified_diff(
                    before.as_deref().unwrap_or(""),
                    now.as_deref().unwrap_or(""),
                )),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use deputy_apply_patch::{WriteTargets, apply_planned, parse_patch, plan_patch};

    fn apply(tracker: &mut TurnDiffTracker, cwd: &Path, patch: &str) {
        let planned = plan_patch(&parse_patch(patch).unwrap(), cwd).unwrap();
        tracker.remember_baseline(&planned);
        let targets = WriteTargets::resolved_now(&planned).unwrap();
        apply_planned(&planned, &targets).unwrap();
    }

    #[test]
    fn turn_diff_runs_from_the_turns_first_content_across_patches() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
        let mut tracker = TurnDiffTracker::default();
        apply(
            &mut tracker,
            dir.path(),
            "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-two\n+TWO\n*** End Patch",
        );
        assert_eq!(
            tracker.diff(dir.path()),
            "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n"
        );
        apply(
            &mut tracker,
            dir.path(),
            "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+ONE\n TWO\n*** Add File: b.txt\n+new\n*** End Patch",
        );
        assert_eq!(
            tracker.diff(dir.path()),
            "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n-one\n-two\n+ONE\n+TWO\n\
             diff --git a/b.txt b/b.txt\nnew file mode 100644\n--- /dev/null\n+++ b/b.txt\n@@ -0,0 +1 @@\n+new\n"
        );
    }

    #[test]
    fn a_fifo_put_under_a_patched_name_is_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\n").unwrap();
        let mut tracker = TurnDiffTracker::default();
        apply(
            &mut tracker,
            dir.path(),
            "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+ONE\n*** End Patch",
        );
        // What a command run between two patches could do.
        std::fs::remove_file(dir.path().join("a.txt")).unwrap();
        nix::unistd::mkfifo(
            &dir.path().join("a.txt"),
            nix::sys::stat::Mode::from_bits_truncate(0o600),
        )
        .unwrap();
        let cwd = dir.path().to_path_buf();
        let diff = deputy_test_support::random_input::within(
            std::time::Duration::from_secs(60),
            move || tracker.diff(&cwd),
        );
        assert!(diff.contains("deleted file mode"), "{diff}");
    }
}
