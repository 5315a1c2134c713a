//! Where each path of a plan is written: a root directory and a path beneath it.

use std::collections::HashMap;
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::error::ApplyError;
use crate::plan::PlannedChange;

/// Where one planned path is written: `relative` beneath the directory `root`.
///
/// When the patch is applied, `root` is opened and `relative` resolved beneath it without
/// following any symlink, so a symlink swapped onto the way after the target was chosen makes
/// the write fail instead of landing elsewhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteTarget {
    root: PathBuf,
    relative: PathBuf,
}

impl WriteTarget {
    /// A target beneath `root` (absolute, without `.` or `..`; give it canonical, as checked)
    /// at `relative` (one or more plain names).
    pub fn new(root: PathBuf, relative: PathBuf) -> io::Result<Self> {
        if !root.strip_prefix("/").is_ok_and(is_plain) {
            return Err(invalid(
                "the root of a write target must be an absolute path without `.` or `..`",
            ));
        }
        if relative.as_os_str().is_empty() || !is_plain(&relative) {
            return Err(invalid(
                "a write target's path beneath its root must be plain names",
            ));
        }
        Ok(WriteTarget { root, relative })
    }

    /// `path` (absolute) as it resolves now: symlinks in its existing part are followed once,
    /// here; the deepest existing directory becomes the root and the rest stays relative.
    ///
    /// An existing file is targeted beneath its directory; a symlink the path names is
    /// followed too, so its target is what gets written or deleted. A dangling symlink on the
    /// path, or `..` in its missing part, is refused.
    pub fn resolve_now(path: &Path) -> io::Result<Self> {
        if !path.is_absolute() {
            return Err(invalid(
                "only absolute paths can be resolved to a write target",
            ));
        }
        let mut existing = path;
        let mut missing = Vec::new();
        // symlink_metadata: a dangling symlink counts as existing, so canonicalize refuses it.
        while existing.symlink_metadata().is_err() {
            let (Some(name), Some(parent)) = (existing.file_name(), existing.parent()) else {
                return Err(invalid("the path has no existing ancestor"));
            };
            missing.push(name);
            existing = parent;
        }
        let resolved = existing.canonicalize()?;
        // The root must be a directory: an existing file (the path itself, or a file where
        // a directory is missing) stays beneath its own directory, where writing it fails
        // or succeeds exactly as it would have.
        if missing.is_empty() || !resolved.is_dir() {
            let (Some(parent), Some(name)) = (resolved.parent(), resolved.file_name()) else {
                return Err(invalid(
                    "the root directory itself cannot be written as a file",
                ));
            };
            missing.push(name);
            let relative = missing.into_iter().rev().collect();
            return WriteTarget::new(parent.to_path_buf(), relative);
        }
        WriteTarget::new(resolved, missing.into_iter().rev().collect())
    }

    /// The directory the write stays beneath.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The path beneath [`WriteTarget::root`].
    pub fn relative(&self) -> &Path {
        &self.relative
    }

    /// `root` joined with `relative`: the absolute path the target names.
    pub fn full_path(&self) -> PathBuf {
        self.root.join(&self.relative)
    }
}

/// The [`WriteTarget`] of every path a plan touches, keyed by the planned absolute path.
#[derive(Debug, Clone, Default)]
pub struct WriteTargets {
    by_path: HashMap<PathBuf, WriteTarget>,
}

impl WriteTargets {
    /// Sets where the planned path `path` is written.
    pub fn insert(&mut self, path: PathBuf, target: WriteTarget) {
        self.by_path.insert(path, target);
    }

    /// The target of the planned path `path`, if one was set.
    pub fn get(&self, path: &Path) -> Option<&WriteTarget> {
        self.by_path.get(path)
    }

    /// Every path `changes` touch, resolved now ([`WriteTarget::resolve_now`]): writes go where
    /// the paths lead at this moment, and fail if a symlink appears on the way afterwards.
    pub fn resolved_now(changes: &[PlannedChange]) -> Result<Self, ApplyError> {
        let mut targets = WriteTargets::default();
        for path in changes.iter().flat_map(PlannedChange::paths) {
            let target = WriteTarget::resolve_now(path).map_err(|source| ApplyError::Io {
                path: path.to_path_buf(),
                action: "resolve",
                source,
                rollback_failures: Vec::new(),
            })?;
            targets.insert(path.to_path_buf(), target);
        }
        Ok(targets)
    }
}

/// Whether `path` consists of plain names only (no root, `.` or `..`).
fn is_plain(path: &Path) -> bool {
    path.components().all(|c| matches!(c, Component::Normal(_)))
}

fn invalid(message: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}
