//! Reading a file the model may have planted, for the engine's own use (AGENTS.md, a patched
//! file's content for the turn's diff).
//!
//! A command the model ran can leave anything under a name the engine reads later: a FIFO,
//! on which a plain `open` blocks until a writer comes (forever), or a symlink to a secret
//! outside the repository (`~/.ssh/id_rsa`), whose content would then be sent to the model
//! provider. So these files are opened with `O_NONBLOCK` (a FIFO opens at once, without a
//! writer) and `O_NOCTTY`, checked to be regular files with `fstat` before a byte is read,
//! and, beneath a root, reached by `openat2(RESOLVE_BENEATH)`: links are followed only while
//! they stay beneath the root. Where `openat2` is missing (Linux < 5.6, or refused by a
//! seccomp filter) the last component is not followed at all (`O_NOFOLLOW`) and the opened
//! file's real path (`/proc/self/fd`) must lie beneath the root. Reading a regular file
//! still waits on its filesystem (a hung network mount), so callers on the async runtime
//! read through [`off_runtime`], which gives up after a timeout.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::Duration;

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::{Mode, SFlag};

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum UnreadableFile {
    /// A FIFO, a socket, a device or a directory: never opened for reading or never read.
    #[error("not a regular file ({0})")]
    NotRegular(&'static str),
    /// A symbolic link whose target lies outside the root it was read beneath.
    #[error("a symbolic link leading outside {}", .0.display())]
    LeavesRoot(PathBuf),
    /// A symbolic link, where links cannot be followed safely (no `openat2`).
    #[error("a symbolic link, not followed on this kernel")]
    Link,
    /// Anything else the system said.
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// At most the first `max` bytes of a file, and whether it went on.
#[derive(Debug, PartialEq, Eq)]
pub struct Capped {
    /// The bytes read.
    pub bytes: Vec<u8>,
    /// Whether the file holds more than `bytes`.
    pub truncated: bool,
}

/// How every file is opened: nothing here waits for a FIFO's writer, takes a terminal as the
/// controlling one, or leaks into a command deputy starts.
fn open_flags() -> OFlag {
    OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY | OFlag::O_CLOEXEC
}

/// Reads at most `max` bytes of `relative` beneath the directory `root` (absolute, without
/// symlinks), following links only while they stay beneath it. `Ok(None)`: nothing there.
pub fn read_beneath(
    root: &Path,
    relative: &Path,
    max: usize,
) -> Result<Option<Capped>, UnreadableFile> {
    let dir = nix::fcntl::open(
        root,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(io::Error::from)?;
    let how = || {
        OpenHow::new()
            .flags(open_flags())
            .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_MAGICLINKS)
    };
    // EAGAIN: a rename raced the lookup; the kernel asks to try again.
    let mut attempt = nix::fcntl::openat2(&dir, relative, how());
    for _ in 0..3 {
        if !matches!(attempt, Err(Errno::EAGAIN)) {
            break;
        }
        attempt = nix::fcntl::openat2(&dir, relative, how());
    }
    match attempt {
        Ok(fd) => read_opened(fd, max).map(Some),
        Err(Errno::EXDEV) => Err(UnreadableFile::LeavesRoot(root.to_path_buf())),
        Err(Errno::ENOSYS | Errno::EPERM | Errno::EAGAIN) => {
            read_beneath_without_openat2(root, relative, max)
        }
        Err(err) => opened_error(err),
    }
}

/// [`read_beneath`] where `openat2` is missing: the last component is not followed, and the
/// file opened must really lie beneath `root`.
fn read_beneath_without_openat2(
    root: &Path,
    relative: &Path,
    max: usize,
) -> Result<Option<Capped>, UnreadableFile> {
    let fd = match nix::fcntl::open(
        &root.join(relative),
        open_flags() | OFlag::O_NOFOLLOW,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::ELOOP) => return Err(UnreadableFile::Link),
        Err(err) => return opened_error(err),
    };
    // A directory on the way may have been a link; where the file really is decides.
    let real = std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd()))?;
    if !real.starts_with(root) {
        return Err(UnreadableFile::LeavesRoot(root.to_path_buf()));
    }
    read_opened(fd, max).map(Some)
}

/// Reads at most `max` bytes of the file at `path`, following a link in its last component
/// only when `follow_link`. `Ok(None)`: nothing there.
pub fn read_file(
    path: &Path,
    follow_link: bool,
    max: usize,
) -> Result<Option<Capped>, UnreadableFile> {
    let flags = if follow_link {
        open_flags()
    } else {
        open_flags() | OFlag::O_NOFOLLOW
    };
    match nix::fcntl::open(path, flags, Mode::empty()) {
        Ok(fd) => read_opened(fd, max).map(Some),
        Err(Errno::ELOOP) if !follow_link => Err(UnreadableFile::Link),
        Err(err) => opened_error(err),
    }
}

/// What a failed open means here: nothing there, something that is not a file, or an error.
fn opened_error(err: Errno) -> Result<Option<Capped>, UnreadableFile> {
    match err {
        Errno::ENOENT => Ok(None),
        // Opening a socket, or a device without a driver, for reading.
        Errno::ENXIO => Err(UnreadableFile::NotRegular("a socket or a device")),
        err => Err(UnreadableFile::Io(err.into())),
    }
}

/// Checks the opened file is a regular one, then reads at most `max` bytes of it (one more
/// to tell whether it goes on).
fn read_opened(fd: OwnedFd, max: usize) -> Result<Capped, UnreadableFile> {
    let stat = nix::sys::stat::fstat(&fd).map_err(io::Error::from)?;
    let kind = match SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT {
        SFlag::S_IFREG => None,
        SFlag::S_IFIFO => Some("a FIFO"),
        SFlag::S_IFSOCK => Some("a socket"),
        SFlag::S_IFCHR => Some("a character device"),
        SFlag::S_IFBLK => Some("a block device"),
        SFlag::S_IFDIR => Some("a directory"),
        _ => Some("an unknown kind of file"),
    };
    if let Some(kind) = kind {
        return Err(UnreadableFile::NotRegular(kind));
    }
    let mut bytes = Vec::new();
    File::from(fd)
        .take(max as u64 + 1)
        .read_to_end(&mut bytes)?;
    let truncated = bytes.len() > max;
    bytes.truncate(max);
    Ok(Capped { bytes, truncated })
}

/// Runs `read` on the blocking pool; `None` when it has not finished within `timeout` (it
/// then finishes, or hangs, on its own thread) or panicked.
///
/// At most 16 reads at once (every session reads its AGENTS.md). A read that hangs keeps
/// its place; once 16 hang, later reads wait out their timeout instead of adding threads.
pub async fn off_runtime<T: Send + 'static>(
    timeout: Duration,
    read: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    static READING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(16);
    match tokio::time::timeout(timeout, crate::sync::spawn_blocking_in(&READING, read)).await {
        Ok(Ok(value)) => Some(value),
        Ok(Err(_)) | Err(_) => None,
    }
}

#[cfg(test)]
mod tests;
