//! Writing planned changes all-or-nothing, and so that no kill can tear a file.
//!
//! Every file is replaced whole: its new content is written to a temporary file beside it
//! (same directory, reached beneath its root like the file itself, with the old file's
//! permissions — and owner, as root), synced, and renamed over it; at any instant the file
//! holds its old content or its new content, never a mix. The old file stays under a backup
//! name (a hard link, in the same directory) until every rename is done, and a journal
//! ([`crate::journal`]) records the plan before anything changes, so that an apply that
//! fails midway is rolled back at once and one interrupted by a kill is rolled back (or, if
//! it had committed, completed) by [`crate::recover`] later.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use crate::beneath::{Dir, FileId, Root};
use crate::error::ApplyError;
use crate::journal::{self, JournalFile, Record, Stage};
use crate::plan::PlannedChange;
use crate::staging::{Expect, Failure, FileChange, Final, Staged};
use crate::target::{WriteTarget, WriteTargets};

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

/// Writes `changes`, each path at its target in `targets`, all or nothing: if any step
/// fails, everything done so far is undone (old files put back, new files and directories
/// removed) before the error is returned. No journal is kept on disk, so a process killed
/// midway can leave some files patched and others not (each one whole); see
/// [`apply_journaled`].
///
/// Every file and directory is reached from its target's root without following symlinks
/// ([`crate::beneath`]): a symlink that appeared on the way since the targets were chosen
/// fails the patch ([`ApplyError::Redirected`]) instead of redirecting a write. Parent
/// directories of added and moved files are created as needed. Each file is checked to still
/// hold the content it was planned from before anything is written, and to still be that
/// same file when the new one is renamed over it, so edits made on disk between planning and
/// applying are not overwritten. A path without a target fails the patch before anything is
/// written.
pub fn apply_planned(
    changes: &[PlannedChange],
    targets: &WriteTargets,
) -> Result<ApplySummary, ApplyError> {
    apply_journaled(changes, targets, None)
}

/// [`apply_planned`], recording the plan in `journal` before the first file changes, so
/// that a kill at any instant leaves a journal from which [`crate::recover`] rolls the
/// apply back (or completes it, if every rename was done). The journal is removed when the
/// apply ends either way, unless a rollback failed.
pub fn apply_journaled(
    changes: &[PlannedChange],
    targets: &WriteTargets,
    journal: Option<&JournalFile>,
) -> Result<ApplySummary, ApplyError> {
    if let Some(path) = changes
        .iter()
        .flat_map(PlannedChange::paths)
        .find(|path| targets.get(path).is_none())
    {
        return Err(ApplyError::NoWriteTarget {
            path: path.to_path_buf(),
        });
    }
    // Targets are resolved, so removing a path that names a symlink would remove the file it
    // points to, where deleting or moving the link itself was meant: refuse instead.
    if let Some(path) = changes
        .iter()
        .filter_map(PlannedChange::removed_path)
        .find(|path| path.symlink_metadata().is_ok_and(|m| m.is_symlink()))
    {
        return Err(ApplyError::RemovesSymlink {
            path: path.to_path_buf(),
        });
    }
    let mut roots = Roots::default();
    let mut staged = Vec::new();
    let mut dirs = Vec::new();
    // Every file found and checked first: a plan that no longer applies changes nothing.
    for change in fold(changes, targets) {
        let path = change.path;
        let root = roots.get(change.target.root(), path).map_err(into_error)?;
        if let Some(file) = Staged::inspect(change, root, &mut dirs).map_err(into_error)? {
            staged.push(file);
        }
    }
    let files = staged.iter().map(|s| s.record.clone()).collect();
    let label = journal.map(|j| j.label.clone()).unwrap_or_default();
    let mut run = Run {
        staged,
        made_dirs: Vec::new(),
        record: Record::new(label, files, dirs),
        journal: journal.map(|j| j.path.as_path()),
        journal_written: false,
    };
    match run.apply(&mut roots) {
        Ok(()) => Ok(ApplySummary::of(changes)),
        #[cfg(test)]
        Err(Failure::Crashed) => Err(failure_into_error(Failure::Crashed, Vec::new())),
        Err(failure) => {
            let rollback_failures = run.roll_back();
            Err(failure_into_error(failure, rollback_failures))
        }
    }
}

/// What `changes` do to each file, in the order the files are first touched. Files are
/// told apart by where they are written, so two planned paths that lead to one file (a
/// move onto a symlink to the file itself) are one file.
fn fold<'a>(changes: &'a [PlannedChange], targets: &'a WriteTargets) -> Vec<FileChange<'a>> {
    let mut files: Vec<FileChange<'a>> = Vec::new();
    let mut index: HashMap<PathBuf, usize> = HashMap::new();
    let mut touch = |path: &'a Path, expect: Expect<'a>, last: Final<'a>| {
        // apply_journaled checked that every path has a target.
        let Some(target) = targets.get(path) else {
            return;
        };
        match index.get(&target.full_path()) {
            Some(&at) => files[at].last = last,
            None => {
                index.insert(target.full_path(), files.len());
                files.push(FileChange {
                    path,
                    target,
                    expect,
                    last,
                });
            }
        }
    };
    for change in changes {
        match change {
            PlannedChange::Add { path, content, .. } => {
                touch(path, Expect::Anything, Final::Write(content.as_bytes()));
            }
            PlannedChange::Delete { path, content, .. } => {
                touch(path, Expect::Text(content), Final::Remove);
            }
            PlannedChange::Update {
                path,
                move_path,
                old_content,
                new_content,
                ..
            } => {
                let old = Expect::Bytes(old_content.as_bytes());
                let new = Final::Write(new_content.as_bytes());
                let full_path = |path: &Path| targets.get(path).map(WriteTarget::full_path);
                match move_path {
                    // A move onto a name that leads to the file itself is an edit in place:
                    // writing the destination and removing the source would lose it.
                    Some(dest) if full_path(dest) != full_path(path) => {
                        touch(path, old, Final::Remove);
                        touch(dest, Expect::Anything, new);
                    }
                    _ => touch(path, old, new),
                }
            }
        }
    }
    files
}

/// An apply under way.
struct Run<'a, 'j> {
    staged: Vec<Staged<'a>>,
    /// Directories this apply created, with the directory each was made in; parents first.
    made_dirs: Vec<(Dir, PathBuf)>,
    record: Record,
    journal: Option<&'j Path>,
    journal_written: bool,
}

impl Run<'_, '_> {
    fn apply(&mut self, roots: &mut Roots) -> Result<(), Failure> {
        self.write_journal(Stage::Preparing)?;
        for (at, file) in self.staged.iter_mut().enumerate() {
            checkpoint()?;
            let root = roots.get(file.change.target.root(), file.change.path)?;
            let made_dirs = &mut self.made_dirs;
            let staged = file.stage(root, &mut |parent: &Dir, made: &Path| {
                made_dirs.push((parent.clone(), made.to_path_buf()));
            });
            // What was staged is recorded even when a later step failed: the rollback uses it.
            self.record.files[at] = file.record.clone();
            staged?;
        }
        self.write_journal(Stage::Writing)?;
        // New and moved files first, removals after: a move is never a removal alone.
        let (writes, removals): (Vec<&Staged<'_>>, Vec<&Staged<'_>>) = self
            .staged
            .iter()
            .partition(|file| matches!(file.change.last, Final::Write(_)));
        for file in writes.into_iter().chain(removals) {
            checkpoint()?;
            file.swap_in()?;
        }
        checkpoint()?;
        self.sync_dirs()?;
        self.write_journal(Stage::Committed)?;
        committed_checkpoint()?;
        // The patch is applied; a backup that cannot be removed now is removed by the next
        // recovery, which the committed journal left behind calls for.
        let mut leftovers = false;
        for file in &self.staged {
            if let Some(dir) = &file.dir {
                leftovers |= journal::finish_file(dir, &file.record).is_err();
            }
        }
        if !leftovers && let Some(path) = self.journal {
            let _ = journal::remove(path);
        }
        Ok(())
    }

    /// Syncs every directory whose entries the apply changed.
    fn sync_dirs(&self) -> Result<(), Failure> {
        let mut synced: Vec<FileId> = Vec::new();
        let dirs = self
            .staged
            .iter()
            .filter_map(|file| file.dir.as_ref().map(|dir| (dir, file.change.path)))
            .chain(
                self.made_dirs
                    .iter()
                    .map(|(dir, made)| (dir, made.as_path())),
            );
        for (dir, path) in dirs {
            let id = dir
                .id()
                .map_err(|e| Failure::io(path, "sync the directory of", e))?;
            if !synced.contains(&id) {
                dir.sync()
                    .map_err(|e| Failure::io(path, "sync the directory of", e))?;
                synced.push(id);
            }
        }
        Ok(())
    }

    fn write_journal(&mut self, stage: Stage) -> Result<(), Failure> {
        checkpoint()?;
        let Some(path) = self.journal else {
            return Ok(());
        };
        self.record.stage = stage;
        journal::write(path, &self.record)
            .map_err(|e| Failure::io(path, "write the patch journal", e))?;
        self.journal_written = true;
        Ok(())
    }

    /// Undoes everything done so far, newest first; returns what could not be undone.
    fn roll_back(self) -> Vec<String> {
        let mut failures = Vec::new();
        for file in self.staged.iter().rev() {
            let Some(dir) = &file.dir else { continue };
            if let Err(err) = journal::undo_file(dir, &file.name, &file.record) {
                failures.push(format!("{}: {err}", file.change.path.display()));
            }
        }
        for (dir, made) in self.made_dirs.iter().rev() {
            let name = made.file_name().unwrap_or_default();
            if let Err(err) = dir.remove_dir(name)
                && err.kind() != io::ErrorKind::NotFound
            {
                failures.push(format!("{}: {err}", made.display()));
            }
        }
        if let Some(path) = self.journal.filter(|_| self.journal_written) {
            if failures.is_empty() {
                let _ = journal::remove(path);
            } else {
                failures.push(format!(
                    "the journal {} is kept so that a later recovery can retry",
                    path.display()
                ));
            }
        }
        failures
    }
}

/// Each target's root, opened once.
#[derive(Default)]
struct Roots {
    open: HashMap<PathBuf, Root>,
}

impl Roots {
    fn get(&mut self, root: &Path, path: &Path) -> Result<&Root, Failure> {
        if !self.open.contains_key(root) {
            let opened = Root::open(root).map_err(|e| Failure::io(path, "open directory", e))?;
            self.open.insert(root.to_path_buf(), opened);
        }
        Ok(&self.open[root])
    }
}

fn into_error(failure: Failure) -> ApplyError {
    failure_into_error(failure, Vec::new())
}

fn failure_into_error(failure: Failure, rollback_failures: Vec<String>) -> ApplyError {
    match failure {
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
        Failure::Redirected(path) => ApplyError::Redirected {
            path,
            rollback_failures,
        },
        #[cfg(test)]
        Failure::Crashed => ApplyError::NoWriteTarget {
            path: PathBuf::from("crashed"),
        },
    }
}

/// Before each step that changes the disk: where tests inject a failure or a crash.
fn checkpoint() -> Result<(), Failure> {
    #[cfg(test)]
    return tests::fault_at_this_step(true);
    #[cfg(not(test))]
    Ok(())
}

/// Once committed, where tests inject a crash (nothing can fail the apply any more).
fn committed_checkpoint() -> Result<(), Failure> {
    #[cfg(test)]
    return tests::fault_at_this_step(false);
    #[cfg(not(test))]
    Ok(())
}

#[cfg(test)]
mod tests;
