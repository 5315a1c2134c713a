//! The caller's side of containment: processes that escaped their launcher.
//!
//! A launcher kills whatever its command leaves behind — unless the command kills the
//! launcher first, which an unconfined command (`danger-full-access`, or approved to run
//! outside the sandbox) can do: `kill -9 $PPID`. Its leftovers are then re-parented to the
//! nearest child subreaper among their ancestors. With [`adopt_orphans`] that is the caller
//! (deputy), and [`kill_escaped`] finds them among its own children: those in a session other
//! than the caller's (every command starts a session of its own) that the caller did not
//! start itself ([`OwnChildren`]).

use std::collections::{BTreeMap, HashSet};
use std::io;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use nix::sys::prctl;
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::{Pid, getpid, getsid};

use super::descendants::{ProcessTable, kill, session_of};

/// How long [`kill_escaped`] keeps at it against a tree that goes on forking.
const GIVE_UP_AFTER: Duration = Duration::from_secs(5);

/// Makes the calling process the child subreaper of everything it starts.
pub fn adopt_orphans() -> io::Result<()> {
    prctl::set_child_subreaper(true).map_err(io::Error::from)
}

/// The children a process started itself in sessions of their own (its commands' launchers),
/// which [`kill_escaped`] must spare; counted by pid.
#[derive(Debug, Default)]
pub struct OwnChildren(Mutex<BTreeMap<i32, usize>>);

impl OwnChildren {
    /// An empty set, usable as a `static`.
    pub const fn new() -> Self {
        Self(Mutex::new(BTreeMap::new()))
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<i32, usize>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts a child with `spawn` and counts it as one's own (its pid from `pid_of`) until
    /// the returned [`OwnChild`] is dropped. No sweep looks at the children in between.
    pub fn start<T>(
        &self,
        spawn: impl FnOnce() -> io::Result<T>,
        pid_of: impl FnOnce(&T) -> Option<u32>,
    ) -> io::Result<(T, OwnChild<'_>)> {
        let mut own = self.lock();
        let child = spawn()?;
        let pid = pid_of(&child).and_then(|pid| i32::try_from(pid).ok());
        if let Some(pid) = pid {
            *own.entry(pid).or_default() += 1;
        }
        Ok((child, OwnChild { set: self, pid }))
    }
}

/// A child counted in [`OwnChildren`] until this is dropped (once it has been waited for).
#[derive(Debug)]
pub struct OwnChild<'a> {
    set: &'a OwnChildren,
    pid: Option<i32>,
}

impl Drop for OwnChild<'_> {
    fn drop(&mut self) {
        let Some(pid) = self.pid else { return };
        let mut own = self.set.lock();
        if let Some(count) = own.get_mut(&pid) {
            *count -= 1;
            if *count == 0 {
                own.remove(&pid);
            }
        }
    }
}

/// Whether any child of this process outside `my_session` is not in `own`, from the kernel's
/// per-thread child lists: a few small reads, where scanning `/proc` reads every process.
/// `true` when the lists are missing (kernels built without them), so that the scan decides.
fn may_have_escaped(my_session: i32, own: &OwnChildren) -> bool {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return true;
    };
    let own = own.lock();
    for task in tasks.flatten() {
        let Ok(children) = std::fs::read_to_string(task.path().join("children")) else {
            return true;
        };
        for pid in children
            .split_whitespace()
            .filter_map(|p| p.parse::<i32>().ok())
        {
            if !own.contains_key(&pid) && session_of(pid).is_none_or(|s| s != my_session) {
                return true;
            }
        }
    }
    false
}

/// SIGKILLs every child of this process that lives in another session and is not in `own`,
/// with everything below it, and reaps those children; returns how many processes it killed.
///
/// The caller must have called [`adopt_orphans`]. Blocks while the kills take effect (a few
/// milliseconds; at most 5 s against a tree that keeps forking): call it off an async runtime.
pub fn kill_escaped(own: &OwnChildren) -> usize {
    let me = getpid().as_raw();
    let Ok(my_session) = getsid(None) else {
        return 0;
    };
    if !may_have_escaped(my_session.as_raw(), own) {
        return 0;
    }
    let deadline = Instant::now() + GIVE_UP_AFTER;
    let mut killed = HashSet::new();
    loop {
        let adopted = {
            // Held while the table is read and the kills sent, so that a child being started
            // now is either counted as our own or not yet there.
            let own = own.lock();
            let table = ProcessTable::scan();
            let adopted: Vec<_> = table
                .children_of(me)
                .iter()
                .filter(|child| {
                    child.session != my_session.as_raw() && !own.contains_key(&child.process.pid)
                })
                .map(|child| child.process)
                .collect();
            if adopted.is_empty() || Instant::now() > deadline {
                return killed.len();
            }
            // The whole trees at once, so that nothing forks away between two kills; what is
            // forked after the scan is re-parented here when its parent dies, and found by the
            // next round.
            let roots: Vec<i32> = adopted.iter().map(|process| process.pid).collect();
            for process in adopted.iter().copied().chain(table.below(&roots)) {
                kill(process);
                killed.insert(process.pid);
            }
            roots
        };
        std::thread::sleep(Duration::from_millis(5));
        for pid in adopted {
            // Only these children: the caller waits for its own.
            let _ = waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt;
    use std::process::{Child, Command};

    use super::*;

    fn sleeper(new_session: bool) -> Command {
        let mut command = Command::new("sleep");
        command.arg("1000");
        if new_session {
            // SAFETY: setsid(2) is async-signal-safe.
            unsafe {
                command.pre_exec(|| {
                    nix::unistd::setsid()?;
                    Ok(())
                });
            }
        }
        command
    }

    fn is_running(child: &mut Child) -> bool {
        matches!(child.try_wait(), Ok(None))
    }

    #[test]
    fn only_children_in_other_sessions_not_started_as_own_are_killed() {
        static OWN: OwnChildren = OwnChildren::new();
        let mut same_session = sleeper(false).spawn().expect("spawn");
        let (mut own, guard) = OWN
            .start(|| sleeper(true).spawn(), |child| Some(child.id()))
            .expect("spawn");
        let escaped = sleeper(true).spawn().expect("spawn");
        let escaped_pid = escaped.id() as i32;
        // Not waited for by anyone here, as an adopted orphan is not.
        std::mem::forget(escaped);

        let killed = kill_escaped(&OWN);

        let gone = matches!(
            waitpid(Pid::from_raw(escaped_pid), Some(WaitPidFlag::WNOHANG)),
            Err(nix::errno::Errno::ECHILD)
        );
        let (same_alive, own_alive) = (is_running(&mut same_session), is_running(&mut own));
        for child in [&mut same_session, &mut own] {
            let _ = child.kill();
            let _ = child.wait();
        }
        drop(guard);
        assert!(gone, "the escaped child was not killed and reaped");
        assert!(killed >= 1);
        assert!(same_alive, "a child in our own session was killed");
        assert!(own_alive, "a child started as our own was killed");
    }
}
