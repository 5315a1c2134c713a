//! One file of an apply, step by step: found and checked, its new content staged under a
//! temporary name and its old content kept under a backup name, then renamed into place.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read, Seek, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::sys::stat::{FileStat, Mode};

use crate::beneath::{Dir, FileId, FileOpen, Root, split_relative};
use crate::journal::{DirRecord, FileRecord};
use crate::target::WriteTarget;

/// What a plan does to one file, all its changes taken together.
#[derive(Debug)]
pub(crate) struct FileChange<'a> {
    /// The first planned path that names the file.
    pub(crate) path: &'a Path,
    pub(crate) target: &'a WriteTarget,
    /// What the file must hold before the apply.
    pub(crate) expect: Expect<'a>,
    /// What it holds after.
    pub(crate) last: Final<'a>,
}

/// What a file must hold for a plan computed from it to apply.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Expect<'a> {
    /// Anything, or nothing (an added file overwrites what is there).
    Anything,
    /// Exactly these bytes.
    Bytes(&'a [u8]),
    /// Bytes that read as this text (a deleted file, decoded lossily when planned).
    Text(&'a str),
}

/// A file's content after the apply.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Final<'a> {
    Write(&'a [u8]),
    Remove,
}

/// Why a step failed, before the rollback outcome is known.
pub(crate) enum Failure {
    Io {
        path: PathBuf,
        action: &'static str,
        source: io::Error,
    },
    Changed(PathBuf),
    Redirected(PathBuf),
    /// A test stopped the apply here as if the process had been killed.
    #[cfg(test)]
    Crashed,
}

impl Failure {
    pub(crate) fn io(path: &Path, action: &'static str, source: io::Error) -> Self {
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
}

/// The file found where a change goes, before anything was written.
pub(crate) struct Existing {
    pub(crate) id: FileId,
    stat: FileStat,
    /// Open for reading, to copy it when a hard link cannot be made.
    file: File,
}

/// One file of an apply and what was done to it so far.
pub(crate) struct Staged<'a> {
    pub(crate) change: FileChange<'a>,
    /// The directory the file is in; `None` until a missing one is created.
    pub(crate) dir: Option<Dir>,
    pub(crate) parent: PathBuf,
    pub(crate) name: OsString,
    pub(crate) existing: Option<Existing>,
    /// What the journal says about it.
    pub(crate) record: FileRecord,
}

impl<'a> Staged<'a> {
    /// Finds the file of `change` beneath its root and checks it holds what the plan
    /// expects; `missing_dirs` gets the directories that must be created for it. Changes
    /// nothing. `None` when there is nothing to do (a file to remove that is not there and
    /// was not expected to be).
    pub(crate) fn inspect(
        change: FileChange<'a>,
        root: &Root,
        missing_dirs: &mut Vec<DirRecord>,
    ) -> Result<Option<Self>, Failure> {
        let path = change.path;
        let (parent, name) = split_relative(change.target.relative())
            .map_err(|e| Failure::io(path, "resolve", e))?;
        let name = name.to_owned();
        let dir = match root.open_dir(&parent) {
            Ok(dir) => Some(dir),
            Err(err) if err.kind() == io::ErrorKind::NotFound => None,
            Err(err) => return Err(Failure::io(path, "open directory", err)),
        };
        let existing = match &dir {
            Some(dir) => read_existing(dir, &name, path, change.expect)?,
            None => None,
        };
        let must_exist = !matches!(change.expect, Expect::Anything);
        if must_exist && existing.is_none() {
            return Err(Failure::Changed(path.to_path_buf()));
        }
        if dir.is_none() {
            if matches!(change.last, Final::Remove) {
                return Ok(None);
            }
            note_missing_dirs(root, &parent, missing_dirs, path)?;
        }
        if existing.is_none() && matches!(change.last, Final::Remove) {
            return Ok(None);
        }
        let record = FileRecord {
            path: path.to_path_buf(),
            root: change.target.root().to_path_buf(),
            relative: change.target.relative().to_path_buf(),
            temp: matches!(change.last, Final::Write(_)).then(|| side_name(&name, "new")),
            backup: existing.as_ref().map(|_| side_name(&name, "old")),
            old: existing.as_ref().map(|e| e.id),
            new: None,
        };
        Ok(Some(Staged {
            change,
            dir,
            parent,
            name,
            existing,
            record,
        }))
    }

    /// Creates the file's directory if needed (`on_created` hears of each directory made,
    /// and the directory it was made in), keeps the old file under its backup name and
    /// writes the new content, synced, under its temporary name.
    pub(crate) fn stage(
        &mut self,
        root: &Root,
        on_created: &mut impl FnMut(&Dir, &Path),
    ) -> Result<(), Failure> {
        let path = self.change.path;
        let dir = match &self.dir {
            Some(dir) => dir.clone(),
            None => {
                let dir = root
                    .create_dir_all(&self.parent, |parent, made| on_created(parent, made))
                    .map_err(|e| Failure::io(path, "create directory", e))?;
                self.dir = Some(dir.clone());
                dir
            }
        };
        if let (Some(existing), Some(backup)) = (&mut self.existing, &self.record.backup) {
            keep_backup(&dir, &self.name, backup, existing, path)?;
        }
        if let (Final::Write(content), Some(temp)) = (self.change.last, &self.record.temp) {
            let id = write_new(&dir, temp, content, self.existing.as_ref())
                .map_err(|e| Failure::io(path, "write", e))?;
            self.record.new = Some(id);
        }
        Ok(())
    }

    /// Puts the new file in place (or removes the old one), provided the file there is
    /// still the one checked.
    pub(crate) fn swap_in(&self) -> Result<(), Failure> {
        let path = self.change.path;
        let Some(dir) = &self.dir else {
            return Err(Failure::Changed(path.to_path_buf()));
        };
        let now = dir
            .entry_id(&self.name)
            .map_err(|e| Failure::io(path, "check", e))?;
        if now != self.record.old {
            return Err(Failure::Changed(path.to_path_buf()));
        }
        match (&self.change.last, &self.record.temp) {
            (Final::Write(_), Some(temp)) => dir
                .rename(temp, &self.name)
                .map_err(|e| Failure::io(path, "write", e)),
            _ => dir
                .remove_file(&self.name)
                .map_err(|e| Failure::io(path, "remove", e)),
        }
    }
}

/// The file `name` in `dir`, read through the descriptor that identifies it and checked
/// against `expect`; `None` when there is none.
fn read_existing(
    dir: &Dir,
    name: &OsStr,
    path: &Path,
    expect: Expect<'_>,
) -> Result<Option<Existing>, Failure> {
    let mut file = match dir.open_file(name, FileOpen::Read) {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(Failure::io(path, "read", err)),
    };
    let stat = nix::sys::stat::fstat(&file).map_err(|e| Failure::io(path, "read", e.into()))?;
    let holds_expected = match expect {
        Expect::Anything => true,
        Expect::Bytes(expected) => read_all(&mut file, path)? == expected,
        Expect::Text(expected) => String::from_utf8_lossy(&read_all(&mut file, path)?) == expected,
    };
    if !holds_expected {
        return Err(Failure::Changed(path.to_path_buf()));
    }
    Ok(Some(Existing {
        id: FileId::of(&stat),
        stat,
        file,
    }))
}

fn read_all(file: &mut File, path: &Path) -> Result<Vec<u8>, Failure> {
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| Failure::io(path, "read", e))?;
    Ok(bytes)
}

/// Adds to `missing` each directory on `parent` (beneath `root`) that does not exist yet,
/// parents first, once.
fn note_missing_dirs(
    root: &Root,
    parent: &Path,
    missing: &mut Vec<DirRecord>,
    path: &Path,
) -> Result<(), Failure> {
    let mut prefix = PathBuf::new();
    for name in parent.iter() {
        prefix.push(name);
        match root.open_dir(&prefix) {
            Ok(_) => continue,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => return Err(Failure::io(path, "open directory", err)),
        }
        if !missing
            .iter()
            .any(|d| d.root == root.path() && d.relative == prefix)
        {
            missing.push(DirRecord {
                root: root.path().to_path_buf(),
                relative: prefix.clone(),
            });
        }
    }
    Ok(())
}

/// A fresh name beside `name` for its `kind` ("new" or "old") content: hidden, random,
/// within the usual 255-byte limit on names.
fn side_name(name: &OsStr, kind: &str) -> OsString {
    const KEEP: usize = 200;
    let bytes = name.as_bytes();
    let stem = OsStr::from_bytes(&bytes[..bytes.len().min(KEEP)]);
    let mut side = OsString::from(".");
    side.push(stem);
    side.push(format!(".{:016x}.deputy-{kind}", fastrand::u64(..)));
    side
}

/// Keeps the checked file `name` under `backup` as well: a hard link where the file system
/// allows it, else a copy. Fails if the name no longer leads to the checked file.
fn keep_backup(
    dir: &Dir,
    name: &OsStr,
    backup: &OsStr,
    existing: &mut Existing,
    path: &Path,
) -> Result<(), Failure> {
    match dir.hard_link(name, backup) {
        Ok(()) => {
            let linked = dir
                .entry_id(backup)
                .map_err(|e| Failure::io(path, "keep a backup of", e))?;
            if linked != Some(existing.id) {
                // Someone replaced the file since it was checked: not ours to back up.
                let _ = dir.remove_file(backup);
                return Err(Failure::Changed(path.to_path_buf()));
            }
            Ok(())
        }
        Err(err) if cannot_link(&err) => {
            copy_backup(dir, backup, existing).map_err(|e| Failure::io(path, "keep a backup of", e))
        }
        Err(err) => Err(Failure::io(path, "keep a backup of", err)),
    }
}

/// Whether a failed hard link means the file system (or its limits) does not allow one.
fn cannot_link(err: &io::Error) -> bool {
    matches!(
        err.raw_os_error().map(Errno::from_raw),
        Some(Errno::EPERM | Errno::EOPNOTSUPP | Errno::EMLINK | Errno::EXDEV)
    )
}

fn copy_backup(dir: &Dir, backup: &OsStr, existing: &mut Existing) -> io::Result<()> {
    let mut copy = dir.open_file(backup, FileOpen::CreateNew)?;
    same_owner_and_mode(&copy, &existing.stat);
    existing.file.rewind()?;
    io::copy(&mut existing.file, &mut copy)?;
    copy.sync_all()
}

/// Writes `content` as the new file `temp` in `dir`, with the old file's permissions (and
/// owner, as root), synced; returns its identity.
fn write_new(
    dir: &Dir,
    temp: &OsStr,
    content: &[u8],
    existing: Option<&Existing>,
) -> io::Result<FileId> {
    let mut file = dir.open_file(temp, FileOpen::CreateNew)?;
    if let Some(existing) = existing {
        same_owner_and_mode(&file, &existing.stat);
    }
    file.write_all(content)?;
    file.sync_all()?;
    FileId::of_file(&file)
}

/// Gives `file` the permission bits of `like` and, where allowed, its owner and group.
/// Best effort: a file that keeps the creator's defaults is still correct content.
fn same_owner_and_mode(file: &File, like: &FileStat) {
    use nix::unistd::{Gid, Uid};
    let (uid, gid) = (Uid::from_raw(like.st_uid), Gid::from_raw(like.st_gid));
    if Uid::effective().is_root() {
        let _ = nix::unistd::fchown(file, Some(uid), Some(gid));
    } else if gid != Gid::effective() {
        let _ = nix::unistd::fchown(file, None, Some(gid));
    }
    // After chown, which may clear the set-id bits.
    let _ = nix::sys::stat::fchmod(file, Mode::from_bits_truncate(like.st_mode & 0o777));
}
