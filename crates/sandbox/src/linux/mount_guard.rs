//! Read-only bind mounts over protected paths, in a private user and mount namespace.
//!
//! Landlock can only add rights, never take them back beneath a granted directory, so `.git`
//! inside a writable root is made read-only at the mount level instead. The namespace is
//! private to the launched command: nothing outside sees these mounts.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Enters a new user and mount namespace and remounts each path read-only over itself.
///
/// Must run while the process is single-threaded (a multi-threaded process cannot enter a
/// new user namespace). On error the process may be left inside the new namespaces with only
/// some paths remounted; the caller then protects all of them by other means.
pub fn make_read_only(paths: &[PathBuf]) -> io::Result<()> {
    // SAFETY: getuid/getgid cannot fail and touch no memory.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    // SAFETY: unshare only changes this process's namespaces.
    check(unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNS) })?;
    // Map our own ids to themselves so files keep their owners and getuid() is unchanged.
    std::fs::write("/proc/self/setgroups", "deny")?;
    std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1"))?;
    mount(None, Path::new("/"), libc::MS_REC | libc::MS_PRIVATE)?;
    for path in paths {
        mount(Some(path), path, libc::MS_BIND | libc::MS_REC)?;
        // A remount must repeat the flags the kernel locked on the original mount (nosuid,
        // nodev, ...), or it is refused inside a user namespace.
        let locked = locked_flags(path)?;
        mount(
            None,
            path,
            libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | locked,
        )?;
    }
    Ok(())
}

fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))
}

fn mount(source: Option<&Path>, target: &Path, flags: libc::c_ulong) -> io::Result<()> {
    let source = source.map(c_path).transpose()?;
    let target = c_path(target)?;
    let source_ptr = source.as_ref().map_or(std::ptr::null(), |s| s.as_ptr());
    // SAFETY: the pointers are null or NUL-terminated strings that outlive the call; bind and
    // propagation changes take no filesystem type or data.
    check(unsafe {
        libc::mount(
            source_ptr,
            target.as_ptr(),
            std::ptr::null(),
            flags,
            std::ptr::null(),
        )
    })
}

/// The per-mount flags of the mount holding `path`, as `MS_*` flags for a remount.
fn locked_flags(path: &Path) -> io::Result<libc::c_ulong> {
    let target = c_path(path)?;
    // SAFETY: statvfs writes into a zeroed struct we own.
    let mut stats: libc::statvfs = unsafe { std::mem::zeroed() };
    check(unsafe { libc::statvfs(target.as_ptr(), &mut stats) })?;
    let pairs = [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ];
    Ok(pairs
        .iter()
        .filter(|(st, _)| stats.f_flag & st != 0)
        .fold(0, |acc, (_, ms)| acc | ms))
}
