//! Mounts inside the command's private mount namespace: a private `/tmp`, and read-only bind
//! mounts over protected paths.
//!
//! Landlock can only add rights, never take them back beneath a granted directory, so `.git`
//! inside a writable root is made read-only at the mount level instead. Nothing outside the
//! namespace sees these mounts. Every mount here goes through `O_PATH` descriptors opened
//! before anything is covered, and mount points are created without following symlinks, so a
//! link planted by an earlier command cannot redirect a mount.

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use nix::fcntl::{OFlag, open, openat};
use nix::mount::{MsFlags, mount};
use nix::sys::stat::{Mode, mkdirat};
use nix::unistd::Uid;

/// Remounts each path read-only over itself (in this process's mount namespace).
///
/// On error some paths may be remounted and others not; the caller then protects all of them
/// by other means.
pub fn make_read_only(paths: &[PathBuf]) -> io::Result<()> {
    for path in paths {
        bind(path, path)?;
        // A remount must repeat the flags the kernel locked on the original mount (nosuid,
        // nodev, ...), or it is refused inside a user namespace.
        let locked = locked_flags(path)?;
        mount(
            None::<&Path>,
            path,
            None::<&Path>,
            MsFlags::MS_REMOUNT | MsFlags::MS_BIND | MsFlags::MS_RDONLY | locked,
            None::<&Path>,
        )?;
    }
    Ok(())
}

/// Covers `/tmp` with `host_dir`, then mounts each of `kept` (canonical directories strictly
/// below the real `/tmp`) back at its own path, so that the workspace or a writable root that
/// lives in `/tmp` stays where it was.
pub fn private_tmp(host_dir: &Path, kept: &[PathBuf]) -> io::Result<()> {
    let tmp = Path::new("/tmp");
    let host = open_private_dir(host_dir)?;
    let sources = kept
        .iter()
        .map(|dir| {
            let below = dir.strip_prefix(tmp).map_err(|_| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{} is not below /tmp", dir.display()),
                )
            })?;
            Ok((open_dir(dir)?, below))
        })
        .collect::<io::Result<Vec<_>>>()?;
    bind(&fd_path(&host), tmp)?;
    for (source, below) in &sources {
        let target = make_mount_point(tmp, below)?;
        bind(&fd_path(source), &fd_path(&target))?;
    }
    Ok(())
}

/// Opens the host directory for `/tmp`, which must be a real directory (not a symlink), ours,
/// and closed to everyone else: anything else could put the command's writable `/tmp` over a
/// directory it must not write.
fn open_private_dir(dir: &Path) -> io::Result<OwnedFd> {
    let fd = open(
        dir,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?;
    let meta = std::fs::metadata(fd_path(&fd))?;
    if meta.uid() != Uid::effective().as_raw() || meta.mode() & 0o077 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} must be a directory owned by this user with mode 0700",
                dir.display()
            ),
        ));
    }
    Ok(fd)
}

fn open_dir(dir: &Path) -> io::Result<OwnedFd> {
    Ok(open(
        dir,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?)
}

/// Creates the directories `below` names inside `base`, one level at a time and never through
/// a symlink, and returns the last one opened `O_PATH`.
fn make_mount_point(base: &Path, below: &Path) -> io::Result<OwnedFd> {
    let mut dir = open_dir(base)?;
    for component in below.components() {
        let Component::Normal(name) = component else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("unexpected component in {}", below.display()),
            ));
        };
        match mkdirat(&dir, name, Mode::S_IRWXU) {
            Ok(()) | Err(nix::errno::Errno::EEXIST) => {}
            Err(errno) => return Err(errno.into()),
        }
        dir = open_child_dir(&dir, name)?;
    }
    Ok(dir)
}

fn open_child_dir(parent: &OwnedFd, name: &OsStr) -> io::Result<OwnedFd> {
    Ok(openat(
        parent,
        name,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::empty(),
    )?)
}

/// `/proc/self/fd/N`: mounting from or onto it reaches exactly the inode the descriptor holds.
fn fd_path(fd: &OwnedFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

fn bind(source: &Path, target: &Path) -> io::Result<()> {
    mount(
        Some(source),
        target,
        None::<&Path>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&Path>,
    )
    .map_err(io::Error::from)
}

/// The per-mount flags of the mount holding `path`, as `MS_*` flags for a remount.
fn locked_flags(path: &Path) -> io::Result<MsFlags> {
    let stats = nix::sys::statvfs::statvfs(path)?;
    use nix::sys::statvfs::FsFlags;
    let pairs = [
        (FsFlags::ST_NOSUID, MsFlags::MS_NOSUID),
        (FsFlags::ST_NODEV, MsFlags::MS_NODEV),
        (FsFlags::ST_NOEXEC, MsFlags::MS_NOEXEC),
        (FsFlags::ST_NOATIME, MsFlags::MS_NOATIME),
        (FsFlags::ST_NODIRATIME, MsFlags::MS_NODIRATIME),
        (FsFlags::ST_RELATIME, MsFlags::MS_RELATIME),
    ];
    Ok(pairs
        .iter()
        .filter(|(st, _)| stats.flags().contains(*st))
        .fold(MsFlags::empty(), |acc, (_, ms)| acc | *ms))
}
