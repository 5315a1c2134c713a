//! Computing every file's new content from a patch without touching the disk.

use std::collections::HashMap;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Component, Path, PathBuf};

use nix::fcntl::OFlag;

use crate::diff::unified_diff;
use crate::error::ApplyError;
use crate::parser::{Hunk, Patch};
use crate::update::apply_chunks;

/// One file change, fully computed and ready to write.
///
/// `path`/`move_path` are absolute; `display_path` is the patch's own spelling,
/// used in the success summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlannedChange {
    /// Create `path` with `content`, overwriting any existing file.
    Add {
        /// Absolute path of the new file.
        path: PathBuf,
        /// Path as written in the patch.
        display_path: PathBuf,
        /// Content to write.
        content: String,
    },
    /// Remove `path`, which currently holds `content`.
    Delete {
        /// Absolute path of the file to remove.
        path: PathBuf,
        /// Path as written in the patch.
        display_path: PathBuf,
        /// Content the file holds now (lossily decoded if not UTF-8).
        content: String,
    },
    /// Replace `old_content` of `path` with `new_content`, at `move_path` if set.
    Update {
        /// Absolute path of the file to edit.
        path: PathBuf,
        /// Absolute destination when the file is also renamed.
        move_path: Option<PathBuf>,
        /// Path as written in the patch (the destination's, for a move).
        display_path: PathBuf,
        /// Content the file holds now.
        old_content: String,
        /// Content to write.
        new_content: String,
        /// Hunks-only unified diff from old to new content (see [`unified_diff`]).
        unified_diff: String,
    },
}

impl PlannedChange {
    /// The absolute path this change reads or writes first (the source of a move).
    pub fn path(&self) -> &Path {
        match self {
            PlannedChange::Add { path, .. }
            | PlannedChange::Delete { path, .. }
            | PlannedChange::Update { path, .. } => path,
        }
    }

    /// Every absolute path this change reads or writes: its file, then a move's destination.
    pub fn paths(&self) -> impl Iterator<Item = &Path> {
        let destination = match self {
            PlannedChange::Update {
                move_path: Some(dest),
                ..
            } => Some(dest.as_path()),
            _ => None,
        };
        std::iter::once(self.path()).chain(destination)
    }

    /// The path this change removes: a deleted file, or the source of a move.
    pub fn removed_path(&self) -> Option<&Path> {
        match self {
            PlannedChange::Delete { path, .. }
            | PlannedChange::Update {
                path,
                move_path: Some(_),
                ..
            } => Some(path),
            _ => None,
        }
    }

    /// The path as written in the patch (the destination's, for a move).
    pub fn display_path(&self) -> &Path {
        match self {
            PlannedChange::Add { display_path, .. }
            | PlannedChange::Delete { display_path, .. }
            | PlannedChange::Update { display_path, .. } => display_path,
        }
    }
}

/// Computes every change `patch` would make, resolving relative paths against
/// `cwd`, reading files but writing nothing.
///
/// Hunks see the effect of earlier hunks in the same patch, so a file may be
/// added and then updated, or updated twice. `*** Add File:` over an existing
/// file overwrites it, as Codex does. Paths are made absolute lexically
/// (`.` and `..` are resolved without following symlinks).
pub fn plan_patch(patch: &Patch, cwd: &Path) -> Result<Vec<PlannedChange>, ApplyError> {
    let cwd = std::path::absolute(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let cwd = cwd.as_path();
    let mut files = PlannedFiles::default();
    let mut changes = Vec::with_capacity(patch.hunks.len());
    for hunk in &patch.hunks {
        let change = match hunk {
            Hunk::Add { path, contents } => {
                let absolute = resolve(cwd, path);
                files.set(&absolute, Some(contents.clone()));
                PlannedChange::Add {
                    path: absolute,
                    display_path: path.clone(),
                    content: contents.clone(),
                }
            }
            Hunk::Delete { path } => {
                let absolute = resolve(cwd, path);
                let content = match files.current(&absolute, path)? {
                    Some(Ok(text)) => text,
                    Some(Err(bytes)) => String::from_utf8_lossy(&bytes).into_owned(),
                    None => return Err(ApplyError::DeleteOfMissingFile { path: path.clone() }),
                };
                files.set(&absolute, None);
                PlannedChange::Delete {
                    path: absolute,
                    display_path: path.clone(),
                    content,
                }
            }
            Hunk::Update {
                path,
                move_path,
                chunks,
            } => {
                let absolute = resolve(cwd, path);
                let old_content = match files.current(&absolute, path)? {
                    Some(Ok(text)) => text,
                    Some(Err(_)) => return Err(ApplyError::NotText { path: path.clone() }),
                    None => return Err(ApplyError::UpdateOfMissingFile { path: path.clone() }),
                };
                let new_content = apply_chunks(&old_content, chunks, path)?;
                let destination = move_path
                    .as_ref()
                    .map(|dest| resolve(cwd, dest))
                    .filter(|dest| *dest != absolute);
                if let Some(dest) = &destination {
                    files.set(&absolute, None);
                    files.set(dest, Some(new_content.clone()));
                } else {
                    files.set(&absolute, Some(new_content.clone()));
                }
                PlannedChange::Update {
                    display_path: move_path.clone().unwrap_or_else(|| path.clone()),
                    path: absolute,
                    move_path: destination,
                    unified_diff: unified_diff(&old_content, &new_content),
                    old_content,
                    new_content,
                }
            }
        };
        changes.push(change);
    }
    Ok(changes)
}

/// File contents as earlier hunks of the patch left them; files the patch has
/// not touched yet are read from disk.
#[derive(Default)]
struct PlannedFiles {
    touched: HashMap<PathBuf, Option<String>>,
}

type Contents = Result<String, Vec<u8>>;

impl PlannedFiles {
    /// The file's contents (`Err` holds non-UTF-8 bytes), or `None` if absent.
    fn current(&self, absolute: &Path, display: &Path) -> Result<Option<Contents>, ApplyError> {
        if let Some(planned) = self.touched.get(absolute) {
            return Ok(planned.clone().map(Ok));
        }
        match read_regular_file(absolute) {
            Ok(bytes) => Ok(Some(String::from_utf8(bytes).map_err(|e| e.into_bytes()))),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(ApplyError::Read {
                path: display.to_path_buf(),
                source,
            }),
        }
    }

    fn set(&mut self, absolute: &Path, contents: Option<String>) {
        self.touched.insert(absolute.to_path_buf(), contents);
    }
}

/// The bytes of the regular file at `path`. Anything else is refused without blocking:
/// a FIFO planted under a patched name would otherwise hang planning until a writer appears.
fn read_regular_file(path: &Path) -> io::Result<Vec<u8>> {
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlag::O_NONBLOCK | OFlag::O_NOCTTY).bits())
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// `path` made absolute against `cwd`, with `.` and `..` resolved lexically.
fn resolve(cwd: &Path, path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in cwd.join(path).components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                // `pop` refuses to remove the root, matching how `/..` resolves.
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_resolve_against_cwd_lexically() {
        let cwd = Path::new("/work/repo");
        assert_eq!(
            resolve(cwd, Path::new("src/a.rs")),
            Path::new("/work/repo/src/a.rs")
        );
        assert_eq!(
            resolve(cwd, Path::new("./x/../b.rs")),
            Path::new("/work/repo/b.rs")
        );
        assert_eq!(resolve(cwd, Path::new("../../../../c")), Path::new("/c"));
    }

    #[test]
    fn absolute_paths_ignore_cwd() {
        let cwd = Path::new("/work/repo");
        assert_eq!(resolve(cwd, Path::new("/tmp/a")), Path::new("/tmp/a"));
    }
}
