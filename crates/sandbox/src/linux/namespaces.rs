//! New mount and PID namespaces for one command (and a user namespace unless root).
//!
//! In its own PID namespace the command cannot see or signal deputy, and when the namespace's
//! init exits the kernel kills everything left in it. In its own mount namespace `.git` can be
//! made read-only and `/tmp` replaced, without anyone outside seeing it.

use std::io;
use std::path::Path;

use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::unistd::{Gid, Uid};

/// Why this process could not get its namespaces.
#[derive(Debug)]
pub enum EnterError {
    /// The kernel refused the namespaces; nothing changed, the caller may do without them.
    Unavailable,
    /// The namespaces exist but could not be set up; the process must not go on.
    Setup(io::Error),
}

/// The namespace sets to try, best first. Root needs no user namespace (and keeps real root
/// file access without one); root without `CAP_SYS_ADMIN` (a container) may still get one.
fn flag_sets(euid: Uid) -> &'static [CloneFlags] {
    const MOUNT_PID: CloneFlags = CloneFlags::CLONE_NEWNS.union(CloneFlags::CLONE_NEWPID);
    const WITH_USER: CloneFlags = MOUNT_PID.union(CloneFlags::CLONE_NEWUSER);
    if euid.is_root() {
        &[MOUNT_PID, WITH_USER]
    } else {
        &[WITH_USER]
    }
}

/// Moves this (single-threaded) process into new mount and PID namespaces, mapping its own
/// ids into a new user namespace where one is needed, and stops mount propagation to and from
/// the outside. The PID namespace applies to children forked afterwards: the first becomes
/// its init.
pub fn enter() -> Result<(), EnterError> {
    let (uid, gid) = (Uid::effective(), Gid::effective());
    for &flags in flag_sets(uid) {
        match unshare(flags) {
            Ok(()) => {
                if flags.contains(CloneFlags::CLONE_NEWUSER) {
                    map_own_ids(uid, gid).map_err(EnterError::Setup)?;
                }
                // Without this, mounts made here would propagate back to the host's
                // namespace when `/` is a shared mount (systemd makes it one).
                mount(
                    None::<&Path>,
                    "/",
                    None::<&Path>,
                    MsFlags::MS_REC | MsFlags::MS_PRIVATE,
                    None::<&Path>,
                )
                .map_err(|e| EnterError::Setup(e.into()))?;
                return Ok(());
            }
            Err(_) => continue,
        }
    }
    Err(EnterError::Unavailable)
}

/// Maps our own uid and gid to themselves, so files keep their owners and `getuid()` is
/// unchanged inside.
fn map_own_ids(uid: Uid, gid: Gid) -> io::Result<()> {
    std::fs::write("/proc/self/setgroups", "deny")?;
    std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1"))?;
    std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1"))
}

/// Mounts a `/proc` of the new PID namespace over `/proc`, so the command sees only its own
/// processes. Must run in a process of that namespace (its init).
pub fn mount_fresh_proc() -> io::Result<()> {
    mount(
        Some("proc"),
        "/proc",
        Some("proc"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        None::<&Path>,
    )
    .map_err(io::Error::from)
}

/// Whether [`enter`] would get namespaces here: a forked child tries and reports.
pub fn available() -> bool {
    let flags = flag_sets(Uid::effective());
    // SAFETY: the child only calls unshare(2) and _exit(2), both async-signal-safe, so
    // forking a multi-threaded process is sound.
    let child = unsafe { libc::fork() };
    match child {
        -1 => false,
        0 => {
            let ok = flags.iter().any(|flags| unshare(*flags).is_ok());
            // SAFETY: _exit ends the child without running the parent's destructors.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) }
        }
        pid => {
            let mut status = 0;
            loop {
                // SAFETY: waits for our own child into a live local.
                let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
                if waited == pid {
                    return libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
                }
                if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                    return false;
                }
            }
        }
    }
}
