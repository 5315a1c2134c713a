//! Killing every process a command left behind, wherever it was re-parented, for the
//! supervisor that has no PID namespace to do it (it is their child subreaper).

use std::collections::HashMap;
use std::fs;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use nix::errno::Errno;
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

/// A process seen in `/proc`: its id and start time, which together name it even after its
/// id is reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Process {
    pub(super) pid: i32,
    start_time: u64,
}

/// SIGKILLs every descendant of this process and reaps them, until it has no child left.
///
/// This process must be their child subreaper with `SIGCHLD` blocked: orphans are then
/// re-parented here, so "no child left" means no descendant left, and `SIGCHLD` wakes the
/// wait between rounds.
pub fn kill_all_and_reap() {
    let me = std::process::id() as i32;
    loop {
        // Reap first: a command that left nothing behind costs no scan of /proc.
        loop {
            match waitpid(None::<Pid>, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) => break,
                Ok(_) | Err(Errno::EINTR) => continue,
                // ECHILD: nothing left. Anything else cannot be waited for either.
                Err(_) => return,
            }
        }
        // Killed processes may have forked between the scan and the kill: rescan each round.
        for process in descendants(me) {
            kill(process);
        }
        wait_for_sigchld(std::time::Duration::from_millis(10));
    }
}

/// Every process below `root`, from a scan of `/proc` (the per-task `children` files are not
/// built into every kernel).
fn descendants(root: i32) -> Vec<Process> {
    ProcessTable::scan().below(&[root])
}

/// Who is whose child, from one scan of `/proc`.
pub(super) struct ProcessTable {
    children: HashMap<i32, Vec<Seen>>,
}

/// A process as the scan saw it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Seen {
    pub(super) process: Process,
    /// Its session id.
    pub(super) session: i32,
}

impl ProcessTable {
    /// Reads every process's parent, session and start time.
    pub(super) fn scan() -> Self {
        let mut children: HashMap<i32, Vec<Seen>> = HashMap::new();
        if let Ok(entries) = fs::read_dir("/proc") {
            for entry in entries.flatten() {
                let Some(pid) = entry
                    .file_name()
                    .to_str()
                    .and_then(|n| n.parse::<i32>().ok())
                else {
                    continue;
                };
                if let Some(stat) = read_stat(pid) {
                    children.entry(stat.ppid).or_default().push(Seen {
                        process: Process {
                            pid,
                            start_time: stat.start_time,
                        },
                        session: stat.session,
                    });
                }
            }
        }
        Self { children }
    }

    /// The children of `parent`.
    pub(super) fn children_of(&self, parent: i32) -> &[Seen] {
        self.children.get(&parent).map_or(&[], Vec::as_slice)
    }

    /// Every process below those in `roots` (not the roots themselves).
    pub(super) fn below(&self, roots: &[i32]) -> Vec<Process> {
        let mut found = Vec::new();
        let mut queue = roots.to_vec();
        while let Some(parent) = queue.pop() {
            for child in self.children_of(parent) {
                queue.push(child.process.pid);
                found.push(child.process);
            }
        }
        found
    }
}

/// The fields of `/proc/<pid>/stat` used here.
struct Stat {
    ppid: i32,
    session: i32,
    start_time: u64,
}

fn read_stat(pid: i32) -> Option<Stat> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is parenthesised and may hold anything, so count from its end.
    let (_, after_name) = stat.rsplit_once(')')?;
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // Fields 4 (ppid), 6 (session) and 22 (starttime) of proc(5); field 3 (state) is
    // fields[0].
    Some(Stat {
        ppid: fields.get(1)?.parse().ok()?,
        session: fields.get(3)?.parse().ok()?,
        start_time: fields.get(19)?.parse().ok()?,
    })
}

/// The session of process `pid`, if it is still there.
pub(super) fn session_of(pid: i32) -> Option<i32> {
    read_stat(pid).map(|stat| stat.session)
}

/// The parent pid and start time from `/proc/<pid>/stat`.
fn parent_and_start(pid: i32) -> Option<(i32, u64)> {
    read_stat(pid).map(|stat| (stat.ppid, stat.start_time))
}

/// SIGKILLs `process` if it is still the one the scan saw: a pidfd pins the process, and the
/// start time read after opening it proves the pid was not reused in between.
pub(super) fn kill(process: Process) {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, process.pid, 0) };
    let still_same =
        || parent_and_start(process.pid).map(|(_, start)| start) == Some(process.start_time);
    if fd < 0 {
        // Kernels before 5.3 have no pidfds: the check narrows the window, no more.
        if still_same() {
            // SAFETY: kill(2) only sends a signal.
            unsafe { libc::kill(process.pid, libc::SIGKILL) };
        }
        return;
    }
    // SAFETY: fd is a fresh descriptor that nothing else owns.
    let pidfd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    if still_same() {
        // SAFETY: pidfd_send_signal with a null siginfo sends a plain signal.
        unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                pidfd.as_raw_fd(),
                libc::SIGKILL,
                std::ptr::null::<libc::siginfo_t>(),
                0,
            )
        };
    }
}

/// Waits up to `timeout` for a `SIGCHLD` (blocked, so it stays pending until taken here).
fn wait_for_sigchld(timeout: std::time::Duration) {
    let mut set = nix::sys::signal::SigSet::empty();
    set.add(nix::sys::signal::Signal::SIGCHLD);
    let spec = libc::timespec {
        tv_sec: 0,
        tv_nsec: libc::c_long::try_from(timeout.as_nanos()).unwrap_or(10_000_000),
    };
    // SAFETY: both pointers are to live locals; the siginfo output is not wanted.
    unsafe { libc::sigtimedwait(set.as_ref(), std::ptr::null_mut(), &spec) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_own_stat_names_our_parent() {
        let me = std::process::id() as i32;
        let (ppid, _) = parent_and_start(me).expect("own stat");
        assert_eq!(ppid, nix::unistd::getppid().as_raw());
    }

    #[test]
    fn a_spawned_child_is_a_descendant() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("spawn sleep");
        let me = std::process::id() as i32;
        let found = descendants(me);
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            found.iter().any(|p| p.pid == child.id() as i32),
            "{found:?}"
        );
    }
}
