//! Supervision inside new namespaces: the launcher forks an init for the new PID namespace,
//! which confines itself and runs the command; when the command exits the init exits, and
//! the kernel kills everything left in the namespace.

use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;

use nix::fcntl::OFlag;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::prctl;
use nix::sys::signal::Signal;
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid, fork, pipe2};

use super::confine::{ConfineError, Plan, confine_self, enter_dir};
use super::mount_guard;
use super::namespaces::mount_fresh_proc;
use super::supervisor::{exec_command, exit_code, refuse, refuse_in_child};
use crate::launch_args::LaunchRequest;

/// Runs in the launcher, already inside the new namespaces: mounts, then the init. Exits
/// with the command's status.
pub fn supervise(request: &LaunchRequest, plan: &Plan) -> ! {
    if let Some(dir) = &plan.private_tmp
        && let Err(err) = mount_guard::private_tmp(dir, &plan.kept_under_tmp)
    {
        refuse(&ConfineError::PrivateTmp(err));
    }
    // Read-only bind mounts keep `.git` whole while its root stays fully writable; without
    // them, Landlock alone must leave the roots' own entries unwritable to spare `.git`.
    let mounted = plan.protected.is_empty() || mount_guard::make_read_only(&plan.protected).is_ok();
    let still_protect: Vec<PathBuf> = if mounted {
        Vec::new()
    } else {
        plan.protected.clone()
    };
    // The init learns that the launcher died before it could ask to die with it when the
    // launcher's end of this pipe is closed.
    let (alive_read, alive_write) = match pipe2(OFlag::O_CLOEXEC) {
        Ok(pair) => pair,
        Err(err) => refuse(&format!("cannot create a pipe: {err}")),
    };
    // SAFETY: the launcher is single-threaded, so the child may run any code.
    match unsafe { fork() } {
        Ok(ForkResult::Child) => {
            drop(alive_write);
            run_init(request, plan, &still_protect, alive_read)
        }
        Ok(ForkResult::Parent { child }) => {
            drop(alive_read);
            let code = wait_for(child);
            drop(alive_write);
            std::process::exit(code)
        }
        Err(err) => refuse(&format!("cannot start the namespace's init: {err}")),
    }
}

/// Waits for `child` and returns its exit code.
fn wait_for(child: Pid) -> i32 {
    loop {
        match waitpid(child, None) {
            Ok(status @ (WaitStatus::Exited(..) | WaitStatus::Signaled(..))) => {
                return exit_code(status);
            }
            Ok(_) | Err(nix::errno::Errno::EINTR) => continue,
            Err(err) => refuse(&format!("cannot wait for the command: {err}")),
        }
    }
}

/// PID 1 of the new namespace: dies with the launcher, mounts its `/proc`, confines itself,
/// runs the command and reaps orphans until the command exits, then exits with its status.
/// Signals from inside the namespace cannot kill it (the kernel ignores those an init has no
/// handler for).
fn run_init(request: &LaunchRequest, plan: &Plan, still_protect: &[PathBuf], alive: OwnedFd) -> ! {
    if let Err(err) = prctl::set_pdeathsig(Signal::SIGKILL) {
        refuse_in_child(&format!("cannot follow the launcher's death: {err}"));
    }
    if launcher_gone(&alive) {
        refuse_in_child(&"the launcher exited before the command started");
    }
    drop(alive);
    // Best effort: where the kernel refuses a fresh /proc (a user namespace under a
    // partially masked /proc), the command sees the host's /proc — readable as any file is,
    // and it still cannot signal or trace what it sees there.
    let _ = mount_fresh_proc();
    if let Err(err) = enter_dir(&request.cwd) {
        refuse_in_child(&err);
    }
    if let Err(err) = confine_self(plan, still_protect) {
        refuse_in_child(&err);
    }
    // SAFETY: the init is single-threaded, so the child may run any code.
    let command = match unsafe { fork() } {
        Ok(ForkResult::Child) => exec_command(request),
        Ok(ForkResult::Parent { child }) => child,
        Err(err) => refuse_in_child(&format!("cannot start the command: {err}")),
    };
    loop {
        match waitpid(None::<Pid>, None) {
            Ok(status @ (WaitStatus::Exited(pid, _) | WaitStatus::Signaled(pid, _, _)))
                if pid == command =>
            {
                // SAFETY: _exit ends the init; the kernel then kills the rest of the namespace.
                unsafe { libc::_exit(exit_code(status)) }
            }
            Ok(_) | Err(nix::errno::Errno::EINTR) => continue,
            Err(err) => refuse_in_child(&format!("cannot wait for the command: {err}")),
        }
    }
}

/// Whether the launcher's end of the pipe is closed (it exited), without waiting.
fn launcher_gone(alive: &OwnedFd) -> bool {
    let mut fds = [PollFd::new(alive.as_fd(), PollFlags::POLLIN)];
    match poll(&mut fds, PollTimeout::ZERO) {
        Ok(0) => false,
        Ok(_) => fds[0]
            .revents()
            .is_some_and(|r| r.intersects(PollFlags::POLLHUP | PollFlags::POLLIN)),
        Err(_) => true,
    }
}
