//! New mount and PID namespaces for one command (and a user namespace unless root).
//!
//! In its own PID namespace the command cannot see or signal deputy, and when the namespace's
//! init exits the kernel kills everything left in it. In its own mount namespace `.git` can be
//! made read-only and `/tmp` replaced, without anyone outside seeing it.

use std::io;
use std::path::Path;

use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use nix::sys::signal::{SigSet, SigmaskHow, pthread_sigmask};
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

/// Whether [`enter`] would get namespaces here: a child process tries and reports.
///
/// The child shares this process's memory and the calling thread waits while it runs
/// (`CLONE_VM | CLONE_VFORK`), rather than being forked: a fork would copy the page tables
/// and leave every page this process writes afterwards to be copied on write, a cost a
/// server pays at start-up, when the probe runs.
pub fn available() -> bool {
    extern "C" fn child(flags: *mut libc::c_void) -> libc::c_int {
        // SAFETY: `flags` points to the `&'static [CloneFlags]` below, alive while the
        // parent thread waits for this child.
        let flags = unsafe { *flags.cast::<&'static [CloneFlags]>() };
        // Only unshare(2) runs here, on this child's own stack: no allocation, no lock
        // that another thread of the shared memory could hold.
        if flags.iter().any(|flags| unshare(*flags).is_ok()) {
            0
        } else {
            1
        }
    }
    let mut flags = flag_sets(Uid::effective());
    let Some(stack) = ChildStack::new() else {
        return false;
    };
    // The child inherits this thread's signal mask: with every signal blocked, no handler
    // of this process runs in the child, on its small stack, against the memory it shares.
    // Signals sent to the process meanwhile go to its other threads.
    let mut previous = SigSet::empty();
    let blocked = pthread_sigmask(
        SigmaskHow::SIG_SETMASK,
        Some(&SigSet::all()),
        Some(&mut previous),
    )
    .is_ok();
    // SAFETY: the child runs `child` on `stack`, which outlives it: with CLONE_VFORK this
    // thread is suspended until the child has exited. The child touches only its stack
    // and `flags`, both alive until then.
    let pid = unsafe {
        libc::clone(
            child,
            stack.top(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            (&raw mut flags).cast(),
        )
    };
    if blocked {
        let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&previous), None);
    }
    drop(stack);
    if pid == -1 {
        return false;
    }
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

/// A small stack for [`available`]'s child, with an inaccessible page below it: an
/// overflow kills the child (the probe then says no) instead of writing over memory the
/// child shares with this process.
struct ChildStack {
    base: *mut libc::c_void,
}

impl ChildStack {
    const GUARD: usize = 4096;
    const USABLE: usize = 64 * 1024;

    fn new() -> Option<Self> {
        // SAFETY: a fresh anonymous mapping, owned by the returned value.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                Self::GUARD + Self::USABLE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return None;
        }
        let stack = Self { base };
        // SAFETY: the first page of the mapping just made.
        let guarded = unsafe { libc::mprotect(base, Self::GUARD, libc::PROT_NONE) } == 0;
        guarded.then_some(stack)
    }

    /// The stack's first address past its end (it grows down from there), page-aligned.
    fn top(&self) -> *mut libc::c_void {
        self.base.wrapping_byte_add(Self::GUARD + Self::USABLE)
    }
}

impl Drop for ChildStack {
    fn drop(&mut self) {
        // SAFETY: unmaps the mapping made in `new`, which nothing uses any more.
        unsafe { libc::munmap(self.base, Self::GUARD + Self::USABLE) };
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    use super::*;

    /// The probe's child shares this process's memory; what it finds must be what a
    /// separate process gets, as the launcher is one.
    #[test]
    fn the_probe_says_what_a_separate_process_gets() {
        let separate = flag_sets(Uid::effective()).iter().any(|&flags| {
            let mut command = Command::new("/bin/true");
            // SAFETY: unshare(2) is async-signal-safe, as the code between fork and exec must be.
            unsafe { command.pre_exec(move || unshare(flags).map_err(io::Error::from)) };
            command.status().is_ok_and(|status| status.success())
        });
        assert_eq!(available(), separate);
    }

    /// The probe blocks every signal while its child runs (the child inherits the mask);
    /// the thread that probed must get its own mask back, or it would never see a signal again.
    #[test]
    fn the_probing_thread_gets_its_signal_mask_back() {
        use nix::sys::signal::Signal;
        let mask = std::thread::spawn(|| {
            let mut only_usr1 = SigSet::empty();
            only_usr1.add(Signal::SIGUSR1);
            only_usr1.thread_set_mask()?;
            available();
            SigSet::thread_get_mask()
        })
        .join()
        .unwrap_or_else(|_| panic!("the probing thread panicked"))
        .unwrap_or_else(|err| panic!("pthread_sigmask: {err}"));
        assert!(mask.contains(Signal::SIGUSR1));
        assert!(!mask.contains(Signal::SIGTERM));
    }
}
