//! Supervision without a PID namespace: the launcher becomes the child subreaper of the
//! command's process tree and kills the whole tree when the command exits, when it is told to
//! stop (SIGTERM, SIGINT, SIGHUP) or when deputy dies (its parent-death signal is SIGTERM).

use nix::sys::prctl;
use nix::sys::signal::{SigSet, Signal};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid, fork};

use super::confine::{Plan, confine_self, enter_dir};
use super::descendants::kill_all_and_reap;
use super::supervisor::{die_with_parent, exec_command, exit_code, refuse, refuse_in_child};
use super::terminal_guard;
use crate::launch_args::LaunchRequest;

/// Runs the command as our child in its own session, confined by `plan` when given (else
/// unconfined, as `danger-full-access`), and exits with its status once its whole tree is gone.
pub fn supervise(request: &LaunchRequest, plan: Option<&Plan>) -> ! {
    let mut watched = SigSet::empty();
    for signal in [
        Signal::SIGCHLD,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
    ] {
        watched.add(signal);
    }
    // Blocked before anything can send them, so none is lost: they wait for `sigwait`.
    if let Err(err) = watched.thread_block() {
        refuse(&format!("cannot block signals: {err}"));
    }
    // SIGTERM rather than SIGKILL on deputy's death, so that this process gets to clean up.
    die_with_parent(Signal::SIGTERM, request.parent_pid);
    if let Err(err) = prctl::set_child_subreaper(true) {
        refuse(&format!("cannot adopt the command's orphans: {err}"));
    }
    // SAFETY: the launcher is single-threaded, so the child may run any code.
    let command = match unsafe { fork() } {
        Ok(ForkResult::Child) => start_command(request, plan),
        Ok(ForkResult::Parent { child }) => child,
        Err(err) => refuse(&format!("cannot start the command: {err}")),
    };
    loop {
        let signal = match watched.wait() {
            Ok(signal) => signal,
            Err(_) => continue,
        };
        if signal != Signal::SIGCHLD {
            kill_all_and_reap();
            std::process::exit(128 + signal as i32);
        }
        if let Some(status) = reap_until(command) {
            kill_all_and_reap();
            std::process::exit(exit_code(status));
        }
    }
}

/// Reaps every child that has exited; returns the command's status once it is among them.
fn reap_until(command: Pid) -> Option<WaitStatus> {
    loop {
        match waitpid(None::<Pid>, Some(WaitPidFlag::WNOHANG)) {
            Ok(status @ (WaitStatus::Exited(pid, _) | WaitStatus::Signaled(pid, _, _)))
                if pid == command =>
            {
                return Some(status);
            }
            Ok(WaitStatus::StillAlive) => return None,
            Ok(_) | Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return None,
        }
    }
}

/// In the forked child: confine (or only guard the terminal), enter the cwd, exec.
fn start_command(request: &LaunchRequest, plan: Option<&Plan>) -> ! {
    if let Err(err) = enter_dir(&request.cwd) {
        refuse_in_child(&err);
    }
    match plan {
        // Confined here, in the child, so the supervisor stays outside the command's
        // Landlock domain, where the command's signals cannot reach it. No mounts protect
        // `.git` here, so Landlock must.
        Some(plan) => {
            if let Err(err) = confine_self(plan, &plan.protected) {
                refuse_in_child(&err);
            }
        }
        None => {
            if let Err(err) = terminal_guard::install() {
                refuse_in_child(&format!("cannot guard the terminal: {err}"));
            }
        }
    }
    exec_command(request)
}
