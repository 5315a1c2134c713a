//! Writing planned changes all-or-nothing, with a journal to roll back.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;

use crate::beneath::{Dir, FileOpen, Root, split_relative};
use crate::error::ApplyError;
use crate::plan::PlannedChange;
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

/// Writes `changes` in order, each path at its target in `targets`. If any step fails,
/// every earlier step is undone (old contents restored, new files and directories removed)
/// before the error is returned.
///
/// Every file and directory is reached from its target's root without following symlinks
/// ([`crate::beneath`]): a symlink that appeared on the way since the targets were chosen
/// fails the patch ([`ApplyError::Redirected`]) instead of redirecting a write. Parent
/// directories of added and moved files are created as needed. Each file is checked to still
/// hold the content it was planned from, read through the very descriptor that is then
/// written, so edits made on disk between planning and applying are never overwritten and
/// what is written always derives from the file actually opened. A path without a target
/// fails the patch before anything is written.
pub fn apply_planned(
    changes: &[PlannedChange],
    targets: &WriteTargets,
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
    let mut places = Places {
        targets,
        roots: HashMap::new(),
    };
    let mut journal = Journal::default();
    for change in changes {
        if let Err(failure) = apply_one(change, &mut places, &mut journal) {
            let rollback_failures = journal.roll_back();
            return Err(failure.into_error(rollback_failures));
        }
    }
    Ok(ApplySummary::of(changes))
}

fn apply_one(
    change: &PlannedChange,
    places: &mut Places<'_>,
    journal: &mut Journal,
) -> Result<(), Failure> {
    match change {
        PlannedChange::Add { path, content, .. } => {
            let place = places.create_parent(path, journal)?;
            place.rewrite(content.as_bytes(), journal)
        }
        PlannedChange::Delete { path, content, .. } => {
            let Some(place) = places.existing_parent(path)? else {
                return Err(Failure::Changed(path.clone()));
            };
            let Some(prior) = place.read(FileOpen::Read)?.map(|(_, bytes)| bytes) else {
                return Err(Failure::Changed(path.clone()));
            };
            if String::from_utf8_lossy(&prior) != *content {
                return Err(Failure::Changed(path.clone()));
            }
            place.remove(prior, journal)
        }
        PlannedChange::Update {
            path,
            move_path,
            old_content,
            new_content,
            ..
        } => {
            let Some(place) = places.existing_parent(path)? else {
                return Err(Failure::Changed(path.clone()));
            };
            // A move onto a name that resolved to the file itself (a symlink to it) is an
            // edit in place: writing the destination and removing the source would lose it.
            let dest = move_path
                .as_deref()
                .filter(|dest| !places.same_file(path, dest));
            let Some(dest) = dest else {
                return place.update(old_content.as_bytes(), new_content.as_bytes(), journal);
            };
            let Some((_, prior)) = place.read(FileOpen::Read)? else {
                return Err(Failure::Changed(path.clone()));
            };
            if prior != old_content.as_bytes() {
                return Err(Failure::Changed(path.clone()));
            }
            let dest = places.create_parent(dest, journal)?;
            dest.rewrite(new_content.as_bytes(), journal)?;
            place.remove(prior, journal)
        }
    }
}

/// Opens each target's root once and finds the directory a planned path lives in.
struct Places<'a> {
    targets: &'a WriteTargets,
    roots: HashMap<PathBuf, Root>,
}

impl Places<'_> {
    /// The place of `path`, whose parent directories are created (and journaled) as needed.
    fn create_parent(&mut self, path: &Path, journal: &mut Journal) -> Result<Place, Failure> {
        let (target, parent, name) = self.split(path)?;
        let root = self.root(path, &target)?;
        let mut made = Vec::new();
        let opened = root.create_dir_all(&parent, |dir, relative| {
            made.push((dir.clone(), relative.to_path_buf()));
        });
        // Journal what was made even when a later step failed, so the rollback removes it.
        for (dir, relative) in made {
            journal.undo.push(Undo::RemoveDir {
                dir,
                name: relative.file_name().unwrap_or_default().to_owned(),
                path: root.path().join(relative),
            });
        }
        let dir = opened.map_err(|e| Failure::io(path, "create directory", e))?;
        Ok(Place::new(path, dir, name))
    }

    /// Whether the planned paths `a` and `b` target the same file.
    fn same_file(&self, a: &Path, b: &Path) -> bool {
        let full_path = |path| self.targets.get(path).map(WriteTarget::full_path);
        full_path(a).is_some_and(|a| Some(a) == full_path(b))
    }

    /// The place of `path`, or `None` when its directory does not exist.
    fn existing_parent(&mut self, path: &Path) -> Result<Option<Place>, Failure> {
        let (target, parent, name) = self.split(path)?;
        let root = self.root(path, &target)?;
        match root.open_dir(&parent) {
            Ok(dir) => Ok(Some(Place::new(path, dir, name))),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(Failure::io(path, "open directory", err)),
        }
    }

    fn split(&self, path: &Path) -> Result<(WriteTarget, PathBuf, OsString), Failure> {
        // apply_planned checked up front that every path has a target.
        let target = self.targets.get(path).cloned().ok_or_else(|| {
            Failure::io(
                path,
                "find the write target",
                io::ErrorKind::NotFound.into(),
            )
        })?;
        let (parent, name) =
            split_relative(target.relative()).map_err(|e| Failure::io(path, "resolve", e))?;
        let name = name.to_owned();
        Ok((target, parent, name))
    }

    fn root(&mut self, path: &Path, target: &WriteTarget) -> Result<&Root, Failure> {
        if !self.roots.contains_key(target.root()) {
            let root =
                Root::open(target.root()).map_err(|e| Failure::io(path, "open directory", e))?;
            self.roots.insert(target.root().to_path_buf(), root);
        }
        Ok(&self.roots[target.root()])
    }
}

/// One file: the directory it lives in, opened beneath its root, and its name there.
struct Place {
    path: PathBuf,
    dir: Dir,
    name: OsString,
}

impl Place {
    fn new(path: &Path, dir: Dir, name: OsString) -> Self {
        Place {
            path: path.to_path_buf(),
            dir,
            name,
        }
    }

    /// The open file and its bytes, or `None` if it does not exist.
    fn read(&self, how: FileOpen) -> Result<Option<(File, Vec<u8>)>, Failure> {
        let action = if how == FileOpen::Read {
            "read"
        } else {
            "open for writing"
        };
        let mut file = match self.dir.open_file(&self.name, how) {
            Ok(file) => file,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(Failure::io(&self.path, action, err)),
        };
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| Failure::io(&self.path, "read", e))?;
        Ok(Some((file, bytes)))
    }

    /// Replaces `expected` with `content` in the existing file, through one descriptor.
    fn update(
        &self,
        expected: &[u8],
        content: &[u8],
        journal: &mut Journal,
    ) -> Result<(), Failure> {
        let Some((file, prior)) = self.read(FileOpen::ReadWrite)? else {
            return Err(Failure::Changed(self.path.clone()));
        };
        if prior != expected {
            return Err(Failure::Changed(self.path.clone()));
        }
        journal.undo.push(self.restore(Some(prior)));
        overwrite(&file, content).map_err(|e| Failure::io(&self.path, "write", e))
    }

    /// Writes `content` as the whole file, creating it if needed.
    fn rewrite(&self, content: &[u8], journal: &mut Journal) -> Result<(), Failure> {
        let (file, prior) = match self.read(FileOpen::ReadWrite)? {
            Some((file, prior)) => (file, Some(prior)),
            None => {
                let file = self
                    .dir
                    .open_file(&self.name, FileOpen::CreateNew)
                    .map_err(|e| Failure::io(&self.path, "write", e))?;
                (file, None)
            }
        };
        journal.undo.push(self.restore(prior));
        overwrite(&file, content).map_err(|e| Failure::io(&self.path, "write", e))
    }

    /// Removes the file, which held `prior`.
    fn remove(&self, prior: Vec<u8>, journal: &mut Journal) -> Result<(), Failure> {
        journal.undo.push(self.restore(Some(prior)));
        self.dir
            .remove_file(&self.name)
            .map_err(|e| Failure::io(&self.path, "remove", e))
    }

    fn restore(&self, prior: Option<Vec<u8>>) -> Undo {
        Undo::Restore {
            dir: self.dir.clone(),
            name: self.name.clone(),
            path: self.path.clone(),
            prior,
        }
    }
}

/// Makes `content` the whole of `file`.
fn overwrite(file: &File, content: &[u8]) -> io::Result<()> {
    file.set_len(0)?;
    file.write_all_at(content, 0)
}

/// A failed step, before the rollback outcome is known.
enum Failure {
    Io {
        path: PathBuf,
        action: &'static str,
        source: io::Error,
    },
    Changed(PathBuf),
    Redirected(PathBuf),
}

impl Failure {
    fn io(path: &Path, action: &'static str, source: io::Error) -> Self {
        let path = path.to_path_buf();
        // Resolution beneath a root reports a symlink on the way as ELOOP and a directory
        // moved out of the root as EXDEV: both mean the path no longer leads where it was
        // checked to lead.
        match source.raw_os_error().map(Errno::from_raw) {
            Some(Errno::ELOOP | Errno::EXDEV) => Failure::Redirected(path),
            _ => Failure::Io {
                path,
                action,
                source,
            },
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
            Failure::Redirected(path) => ApplyError::Redirected {
                path,
                rollback_failures,
            },
        }
    }
}

/// How to undo one step, in the directory where it was done (even if since renamed).
enum Undo {
    /// Put back the file's bytes, or remove it if it did not exist.
    Restore {
        dir: Dir,
        name: OsString,
        path: PathBuf,
        prior: Option<Vec<u8>>,
    },
    /// Remove a directory this apply created.
    RemoveDir {
        dir: Dir,
        name: OsString,
        path: PathBuf,
    },
}

/// Undo steps in the order their changes were made.
#[derive(Default)]
struct Journal {
    undo: Vec<Undo>,
}

impl Journal {
    /// Undoes every recorded step, newest first; returns what could not be undone.
    fn roll_back(self) -> Vec<String> {
        let mut failures = Vec::new();
        for step in self.undo.into_iter().rev() {
            let (path, result) = match step {
                Undo::Restore {
                    dir,
                    name,
                    path,
                    prior: Some(bytes),
                } => (path, put_back(&dir, &name, &bytes)),
                Undo::Restore {
                    dir,
                    name,
                    path,
                    prior: None,
                } => {
                    let result = match dir.remove_file(&name) {
                        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
                        other => other,
                    };
                    (path, result)
                }
                Undo::RemoveDir { dir, name, path } => (path, dir.remove_dir(&name)),
            };
            if let Err(err) = result {
                failures.push(format!("{}: {err}", path.display()));
            }
        }
        failures
    }
}

fn put_back(dir: &Dir, name: &OsStr, bytes: &[u8]) -> io::Result<()> {
    let file = dir.open_file(name, FileOpen::ReadWriteOrCreate)?;
    overwrite(&file, bytes)
}
