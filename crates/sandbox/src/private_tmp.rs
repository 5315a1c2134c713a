//! The host directory that confined commands see as `/tmp`.
//!
//! It lives at `/tmp/deputy-<uid>/<name>`: in the real `/tmp`, which the command's own `/tmp`
//! covers, so no command reaches it under another name (the launcher refuses a policy whose
//! writable roots would contain it). Under `$DEPUTY_HOME` it would be writable through the
//! workspace whenever deputy runs in the home directory, and a command could swap it for a
//! link to any directory that the next command would then get as its writable `/tmp`.

use std::fs::{self, DirBuilder};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

/// Why a private `/tmp` could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum PrivateTmpError {
    /// The name is empty or not a plain file name.
    #[error("invalid private /tmp name {0:?}")]
    InvalidName(String),
    /// A directory could not be created or inspected.
    #[error("cannot prepare {}: {source}", .path.display())]
    Io {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A directory exists but is a symlink, not ours, or open to others.
    #[error("{} is not a directory owned by this user with mode 0700", .0.display())]
    Untrusted(PathBuf),
}

/// A private `/tmp` on the host; removed with its contents when dropped.
#[derive(Debug)]
pub struct PrivateTmp {
    path: PathBuf,
}

impl PrivateTmp {
    /// Creates `/tmp/deputy-<uid>/<name>` (mode 0700), or reuses it if it is already ours.
    /// `name` is a plain file name (a thread id).
    pub fn create(name: &str) -> Result<Self, PrivateTmpError> {
        let plain = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
            && name != "."
            && name != "..";
        if !plain {
            return Err(PrivateTmpError::InvalidName(name.to_string()));
        }
        // SAFETY: geteuid cannot fail and touches no memory.
        let uid = unsafe { libc::geteuid() };
        let base = Path::new("/tmp").join(format!("deputy-{uid}"));
        private_dir(&base, uid)?;
        let path = base.join(name);
        private_dir(&path, uid)?;
        Ok(PrivateTmp { path })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PrivateTmp {
    fn drop(&mut self) {
        // remove_dir_all does not follow symlinks, whatever the commands left in it.
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// Creates `path` with mode 0700, or accepts it if it already is a real directory owned by
/// `uid` that nobody else can use (another user may have created it first in `/tmp`).
fn private_dir(path: &Path, uid: u32) -> Result<(), PrivateTmpError> {
    let io_error = |source| PrivateTmpError::Io {
        path: path.to_path_buf(),
        source,
    };
    match DirBuilder::new().mode(0o700).create(path) {
        Ok(()) => {}
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
        Err(err) => return Err(io_error(err)),
    }
    let meta = fs::symlink_metadata(path).map_err(io_error)?;
    if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o077 != 0 {
        return Err(PrivateTmpError::Untrusted(path.to_path_buf()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn created_private_and_removed_on_drop() {
        let name = format!("test-{}-{}", std::process::id(), fastish_suffix());
        let tmp = PrivateTmp::create(&name).expect("create");
        let meta = fs::symlink_metadata(tmp.path()).expect("stat");
        assert!(meta.is_dir());
        assert_eq!(meta.mode() & 0o777, 0o700);
        fs::write(tmp.path().join("f"), "x").expect("write");
        let path = tmp.path().to_path_buf();
        let again = PrivateTmp::create(&name).expect("reuse");
        assert_eq!(again.path(), path);
        std::mem::forget(again);
        drop(tmp);
        assert!(!path.exists());
    }

    #[test]
    fn names_that_are_not_plain_are_refused() {
        for name in ["", ".", "..", "a/b", "../x", "a b"] {
            assert!(
                matches!(
                    PrivateTmp::create(name),
                    Err(PrivateTmpError::InvalidName(_))
                ),
                "{name:?}"
            );
        }
    }

    #[test]
    fn a_directory_open_to_others_is_refused() {
        let name = format!("test-open-{}-{}", std::process::id(), fastish_suffix());
        let tmp = PrivateTmp::create(&name).expect("create");
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o777)).expect("chmod");
        assert!(matches!(
            PrivateTmp::create(&name),
            Err(PrivateTmpError::Untrusted(_))
        ));
    }

    fn fastish_suffix() -> u128 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    }
}
