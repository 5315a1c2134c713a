//! The turn's cumulative diff: every file a turn's patches touched, from its
//! content before the turn's first change to its content now.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use deputy_apply_patch::{PlannedChange, unified_diff};

/// Content of each touched file before the turn changed it (`None` = did not exist).
#[derive(Debug, Default)]
pub(crate) struct TurnDiffTracker {
    baseline: BTreeMap<PathBuf, Option<String>>,
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
                    .or_insert_with(|| std::fs::read_to_string(&path).ok());
            }
        }
    }

    /// A git-style unified diff of every touched file, paths relative to `cwd` where possible.
    pub(crate) fn diff(&self, cwd: &Path) -> String {
        let mut out = String::new();
        for (path, before) in &self.baseline {
            let now = std::fs::read_to_string(path).ok();
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
            out.push_str(&unified_diff(
                before.as_deref().unwrap_or(""),
                now.as_deref().unwrap_or(""),
            ));
        }
        out
    }
}
