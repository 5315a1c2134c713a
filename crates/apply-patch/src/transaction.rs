//! Writing planned changes all-or-nothing, with a journal to roll back.

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::ApplyError;
use crate::plan::PlannedChange;

/// What a successful apply changed, by path as written in the patch.
///
/// Displays as Codex's success text:
/// `Success. Updated the following files:\nA added\nM modified\nD deleted\n`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApplySummary {
    /// Files created by `*** Add File:`.
    pub added: Vec<PathBuf>,
    /// Files updated (for a move, the destination).
    pub modified: Vec<PathBuf>,
    /// Files removed by `*** Delete File:`.
    pub deleted: Vec<PathBuf>,
}

impl ApplySummary {
    /// The summary of `changes`, listing each path once per kind, in patch order.
    pub fn of(changes: &[PlannedChange]) -> Self {
        let mut summary = ApplySummary::default();
        for change in changes {
            let list = match change {
                PlannedChange::Add { .. } => &mut summary.added,
                PlannedChange::Update { .. } => &mut summary.modified,
                PlannedChange::Delete { .. } => &mut summary.deleted,
            };
            let path = change.display_path();
            if !list.iter().any(|p| p == path) {
                list.push(path.to_path_buf());
            }
        }
        summary
    }
}

impl fmt::Display for ApplySummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Success. Updated the following files:")?;
        for (tag, paths) in [
            ("A", &self.added),
            ("M", &self.modified),
            ("D", &self.deleted),
        ] {
            for path in paths {
                writeln!(f, "{tag} {}", path.display())?;
            }
        }
        Ok(())
    }
}

/// Writes `changes` in order. If any step fails, every earlier step is undone
/// (old contents restored, new files and directories removed) before the
/// error is returned.
///
/// Parent directories of added and moved files are created as needed. Each
/// file is checked to still hold the content it was planned from, so edits
/// made on disk between planning and applying are never overwritten.
pub fn apply_planned(changes: &[PlannedChange]) -> Result<ApplySummary, ApplyError> {
    let mut journal = Journal::default();
    for change in changes {
        if let Err(failure) = apply_one(change, &mut journal) {
            let rollback_failures = journal.roll_back();
            return Err(failure.into_error(rollback_failures));
        }
    }
    Ok(ApplySummary::of(changes))
}

fn apply_one(change: &PlannedChange, journal: &mut Journal) -> Result<(), Failure> {
    match change {
        PlannedChange::Add { path, content, .. } => {
            journal.create_parents(path)?;
            journal.remember(path)?;
            fs::write(path, content).map_err(|e| Failure::io(path, "write", e))
        }
        PlannedChange::Delete { path, content, .. } => {
            let prior = journal.remember(path)?;
            let unchanged = prior
                .as_deref()
                .is_some_and(|bytes| String::from_utf8_lossy(bytes) == *content);
            if !unchanged {
                return Err(Failure::Changed(path.clone()));
            }
            fs::remove_file(path).map_err(|e| Failure::io(path, "remove", e))
        }
        PlannedChange::Update {
            path,
            move_path,
            old_content,
            new_content,
            ..
        } => {
            let prior = journal.remember(path)?;
            if prior.as_deref() != Some(old_content.as_bytes()) {
                return Err(Failure::Changed(path.clone()));
            }
            let Some(dest) = move_path else {
                return fs::write(path, new_content).map_err(|e| Failure::io(path, "write", e));
            };
            journal.create_parents(dest)?;
            journal.remember(dest)?;
            fs::write(dest, new_content).map_err(|e| Failure::io(dest, "write", e))?;
            fs::remove_file(path).map_err(|e| Failure::io(path, "remove", e))
        }
    }
}

/// A failed step, before the rollback outcome is known.
enum Failure {
    Io {
        path: PathBuf,
        action: &'static str,
        source: io::Error,
    },
    Changed(PathBuf),
}

impl Failure {
    fn io(path: &Path, action: &'static str, source: io::Error) -> Self {
        Failure::Io {
            path: path.to_path_buf(),
            action,
            source,
        }
    }

    fn into_error(self, rollback_failures: Vec<String>) -> ApplyError {
        match self {
            Failure::Io {
                path,
                action,
                source,
            } => ApplyError::Io {
                path,
                action,
                source,
                rollback_failures,
            },
            Failure::Changed(path) => ApplyError::ChangedSincePlanned {
                path,
                rollback_failures,
            },
        }
    }
}

/// How to undo one step.
enum Undo {
    /// Put back the file's bytes, or remove it if it did not exist.
    Restore {
        path: PathBuf,
        prior: Option<Vec<u8>>,
    },
    /// Remove a directory this apply created.
    RemoveDir(PathBuf),
}

/// Undo steps in the order their changes were made.
#[derive(Default)]
struct Journal {
    undo: Vec<Undo>,
}

impl Journal {
    /// Records how to restore `path` before it is changed, and returns the
    /// bytes it holds now (`None` if it does not exist).
    fn remember(&mut self, path: &Path) -> Result<Option<Vec<u8>>, Failure> {
        let prior = match fs::read(path) {
            Ok(bytes) => Some(bytes),
            Err(err) if err.kind() == io::ErrorKind::NotFound => None,
            Err(err) => return Err(Failure::io(path, "read", err)),
        };
        self.undo.push(Undo::Restore {
            path: path.to_path_buf(),
            prior: prior.clone(),
        });
        Ok(prior)
    }

    /// Creates the missing ancestors of `path`, journaling each one.
    fn create_parents(&mut self, path: &Path) -> Result<(), Failure> {
        let mut missing = Vec::new();
        for dir in path.ancestors().skip(1) {
            if dir.as_os_str().is_empty() || fs::symlink_metadata(dir).is_ok() {
                break;
            }
            missing.push(dir);
        }
        for dir in missing.into_iter().rev() {
            fs::create_dir(dir).map_err(|e| Failure::io(dir, "create directory", e))?;
            self.undo.push(Undo::RemoveDir(dir.to_path_buf()));
        }
        Ok(())
    }

    /// Undoes every recorded step, newest first; returns what could not be undone.
    fn roll_back(self) -> Vec<String> {
        let mut failures = Vec::new();
        for step in self.undo.into_iter().rev() {
            let (path, result) = match step {
                Undo::Restore {
                    path,
                    prior: Some(bytes),
                } => {
                    let result = fs::write(&path, bytes);
                    (path, result)
                }
                Undo::Restore { path, prior: None } => {
                    let result = match fs::remove_file(&path) {
                        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
                        other => other,
                    };
                    (path, result)
                }
                Undo::RemoveDir(path) => {
                    let result = fs::remove_dir(&path);
                    (path, result)
                }
            };
            if let Err(err) = result {
                failures.push(format!("{}: {err}", path.display()));
            }
        }
        failures
    }
}
