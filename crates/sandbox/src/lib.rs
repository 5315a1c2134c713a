//! Run a command supervised, and in the confined modes confined, by the Linux kernel:
//! Landlock for files, seccomp for sockets and terminals, namespaces for processes and mounts.
//!
//! The crate knows nothing of who asks: given a [`SandboxPolicy`], a working directory and an
//! argv, [`wrap_command`] returns the argv that runs the command through the launcher: deputy's
//! stand-alone launcher beside it ([`LAUNCHER_BINARY`], see [`launcher_for`]), else the calling
//! binary re-executed through the hidden [`LAUNCHER_SUBCOMMAND`]. Either `main` hands control
//! to [`launcher_main`] before starting any thread. The launcher, a fresh single-threaded
//! process, dies with its parent, runs the command in a session of its own, and makes sure
//! nothing the command started outlives it. In the confined modes it also gives the command
//! its own mount and PID namespaces where the kernel allows (a private `/tmp`, a read-only
//! `.git`), drops capabilities, sets `no_new_privs` and applies the Landlock ruleset and the
//! seccomp filter, none of which the command can undo. When any step fails the command is not
//! run ([`SANDBOX_UNAVAILABLE_EXIT_CODE`]).

mod denial;
mod launch_args;
#[cfg(target_os = "linux")]
mod linux;
mod policy;
mod private_tmp;
pub mod process_start;
mod support;
#[cfg(target_os = "linux")]
pub mod zygote;

use std::ffi::OsString;

pub use denial::{SANDBOX_UNAVAILABLE_EXIT_CODE, looks_like_sandbox_denial};
pub use launch_args::{
    LAUNCHER_BINARY, LAUNCHER_BUILD, LAUNCHER_SUBCOMMAND, LaunchArgsError, LaunchRequest,
    launcher_for, own_launcher, parse_launch_args, wrap_command,
};
pub use policy::{SandboxMode, SandboxPolicy, TmpRoots};
pub use private_tmp::{PrivateTmp, PrivateTmpError};
pub use support::{SandboxSupport, SandboxUnavailable};

/// Set to `1` in the environment of a confined command that has no network.
pub const NETWORK_DISABLED_ENV: &str = "DEPUTY_SANDBOX_NETWORK_DISABLED";

/// Whether this kernel can confine commands, with which Landlock ABI and whether with
/// namespaces (checked once per process).
pub fn probe() -> Result<SandboxSupport, SandboxUnavailable> {
    #[cfg(target_os = "linux")]
    {
        linux::probe()
    }
    #[cfg(not(target_os = "linux"))]
    {
        Err(SandboxUnavailable::UnsupportedPlatform)
    }
}

/// [`probe`]'s answer if it has been computed, without waiting for a probe in progress.
pub fn probed() -> Option<Result<SandboxSupport, SandboxUnavailable>> {
    #[cfg(target_os = "linux")]
    {
        linux::probed()
    }
    #[cfg(not(target_os = "linux"))]
    {
        Some(Err(SandboxUnavailable::UnsupportedPlatform))
    }
}

/// Makes this process the child subreaper of everything it starts, so that what escapes a
/// launcher (an unconfined command can kill its own) is re-parented here and can be found by
/// [`kill_escaped`]. Call it before starting the first command.
#[cfg(target_os = "linux")]
pub use linux::adopt_orphans;

/// Kills, with everything below them, the processes that escaped their launcher and were
/// adopted by this process (see [`adopt_orphans`]): its children in other sessions than its
/// own, except those it started itself and counted in [`OwnChildren`]. Blocks while the kills
/// take effect (a few milliseconds; at most 5 s against a tree that keeps forking); returns
/// how many processes it killed.
#[cfg(target_os = "linux")]
pub use linux::kill_escaped;

#[cfg(target_os = "linux")]
pub use linux::{OwnChild, OwnChildren};

/// Runs the launcher: `args` are the arguments after [`LAUNCHER_SUBCOMMAND`].
///
/// Call it first thing in `main`, before any thread exists. It supervises (and confines)
/// the command and exits with its status, or prints `deputy sandbox: <reason>` and exits with
/// [`SANDBOX_UNAVAILABLE_EXIT_CODE`] without running it.
pub fn launcher_main(args: impl Iterator<Item = OsString>) -> ! {
    #[cfg(target_os = "linux")]
    {
        linux::launcher_main(args)
    }
    #[cfg(not(target_os = "linux"))]
    {
        drop(args);
        refuse(&SandboxUnavailable::UnsupportedPlatform)
    }
}

/// The stand-alone launcher's `main` ([`LAUNCHER_BINARY`]): [`launcher_main`] for the
/// arguments after [`LAUNCHER_SUBCOMMAND`], which [`wrap_command`] puts first. Run any other
/// way it refuses, running nothing.
pub fn standalone_launcher_main() -> ! {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(std::ffi::OsStr::new(LAUNCHER_SUBCOMMAND)) {
        refuse(&format_args!(
            "{LAUNCHER_BINARY} runs commands for deputy, which starts it with \
             {LAUNCHER_SUBCOMMAND} and the command's policy; it is not run by hand"
        ));
    }
    launcher_main(args)
}

/// Prints `deputy sandbox: <reason>` and exits with [`SANDBOX_UNAVAILABLE_EXIT_CODE`].
fn refuse(reason: &dyn std::fmt::Display) -> ! {
    #[cfg(target_os = "linux")]
    {
        linux::refuse(reason)
    }
    #[cfg(not(target_os = "linux"))]
    {
        eprintln!("deputy sandbox: {reason}");
        std::process::exit(SANDBOX_UNAVAILABLE_EXIT_CODE)
    }
}
