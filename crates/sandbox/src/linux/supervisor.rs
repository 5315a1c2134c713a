//! The launcher as a per-command supervisor: it dies with deputy, picks the strongest
//! containment the kernel offers, and runs the command in its own session.
//!
//! - Confined modes with namespaces: [`namespaced`] — the command runs under an init process
//!   of its own PID namespace; when the command exits, or the launcher dies, that init exits
//!   and the kernel kills everything left in the namespace.
//! - Otherwise (no namespaces, and always for `danger-full-access`, so that setuid programs
//!   such as sudo keep working): [`subreaper`] — the launcher adopts every orphan the
//!   command leaves and kills them all when the command ends, is interrupted or deputy dies.

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::Command;

use nix::sys::prctl;
use nix::sys::signal::{SigSet, SigmaskHow, Signal, sigprocmask};
use nix::sys::wait::WaitStatus;
use nix::unistd::{Pid, getppid, setsid};

use super::confine::Plan;
use super::namespaces::{self, EnterError};
use super::probe::kernel_confinement;
use super::{namespaced, subreaper};
use crate::NETWORK_DISABLED_ENV;
use crate::denial::SANDBOX_UNAVAILABLE_EXIT_CODE;
use crate::launch_args::LaunchRequest;

/// Supervises (and, for confined modes, confines) `request`'s command; exits with its status.
pub fn run(request: LaunchRequest) -> ! {
    // First thing: die with deputy. Deputy spawns commands only from threads that live as long
    // as it does (the main thread, or a tokio worker, never a blocking-pool thread), so the
    // parent-death signal, which follows the spawning thread, fires when deputy itself dies.
    die_with_parent(Signal::SIGKILL, request.parent_pid);
    if !request.policy.is_confined() {
        subreaper::supervise(&request, None);
    }
    if let Err(err) = kernel_confinement() {
        refuse(&err);
    }
    let plan = match Plan::new(&request.policy, &request.cwd) {
        Ok(plan) => plan,
        Err(err) => refuse(&err),
    };
    if !request.use_namespaces {
        subreaper::supervise(&request, Some(&plan));
    }
    match namespaces::enter() {
        Ok(()) => namespaced::supervise(&request, &plan),
        Err(EnterError::Unavailable) => subreaper::supervise(&request, Some(&plan)),
        Err(EnterError::Setup(err)) => refuse(&super::confine::ConfineError::Namespaces(err)),
    }
}

/// Asks for `signal` when the parent dies, then checks the parent is still `expected`: had it
/// died before the request, we would have been re-parented and never get the signal.
pub fn die_with_parent(signal: Signal, expected: u32) {
    if let Err(err) = prctl::set_pdeathsig(signal) {
        refuse(&format!("cannot follow the parent's death: {err}"));
    }
    if getppid() != Pid::from_raw(expected as i32) {
        refuse(&"the process that started the command has exited");
    }
}

/// Prints why and exits with [`SANDBOX_UNAVAILABLE_EXIT_CODE`]: the command did not run.
pub fn refuse(reason: &dyn std::fmt::Display) -> ! {
    let _ = writeln!(std::io::stderr(), "deputy sandbox: {reason}");
    std::process::exit(SANDBOX_UNAVAILABLE_EXIT_CODE);
}

/// Like [`refuse`], for a forked child: exits without running the parent's exit handlers.
pub fn refuse_in_child(reason: &dyn std::fmt::Display) -> ! {
    let _ = writeln!(std::io::stderr(), "deputy sandbox: {reason}");
    // SAFETY: _exit ends this process at once.
    unsafe { libc::_exit(SANDBOX_UNAVAILABLE_EXIT_CODE) }
}

/// In a freshly forked child: leaves the session, restores the signal mask and execs the
/// command. Never returns.
pub fn exec_command(request: &LaunchRequest) -> ! {
    // A session of its own has no controlling terminal: the command cannot reach the user's
    // terminal through /dev/tty, push input into it or get its job-control signals, and
    // signals sent to the launcher's process group do not reach it.
    if let Err(err) = setsid() {
        refuse_in_child(&format!("cannot start a new session: {err}"));
    }
    // The supervisor blocks signals to wait for them; the command starts with none blocked.
    let _ = sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None);
    let argv: &[OsString] = &request.argv;
    let mut command = Command::new(&argv[0]);
    command.args(&argv[1..]);
    if request.policy.network_disabled() {
        command.env(NETWORK_DISABLED_ENV, "1");
    }
    let err = command.exec();
    let _ = writeln!(
        std::io::stderr(),
        "deputy sandbox: cannot run {}: {err}",
        argv[0].to_string_lossy()
    );
    // Same codes a shell uses, so callers read them the usual way.
    let code = if err.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    };
    // SAFETY: _exit ends this process at once.
    unsafe { libc::_exit(code) }
}

/// The exit code that reports `status` the way a shell would (128 + N for signal N).
pub fn exit_code(status: WaitStatus) -> i32 {
    match status {
        WaitStatus::Exited(_, code) => code,
        WaitStatus::Signaled(_, signal, _) => 128 + signal as i32,
        _ => SANDBOX_UNAVAILABLE_EXIT_CODE,
    }
}
