//! Linux enforcement: the launcher that confines itself and then becomes the command.

mod filesystem;
mod mount_guard;
mod privileges;
mod syscall_filter;

use std::ffi::OsString;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::NETWORK_DISABLED_ENV;
use crate::denial::SANDBOX_UNAVAILABLE_EXIT_CODE;
use crate::launch_args::parse_launch_args;
use crate::policy::SandboxPolicy;
use crate::support::{SandboxSupport, SandboxUnavailable};

/// Everything that can stop the launcher from confining itself.
#[derive(Debug, thiserror::Error)]
enum ConfineError {
    #[error("{0}")]
    Unavailable(#[from] SandboxUnavailable),
    #[error("cannot enter {}: {source}", .dir.display())]
    Cwd { dir: PathBuf, source: io::Error },
    #[error("cannot drop capabilities: {0}")]
    Capabilities(io::Error),
    #[error("cannot set no_new_privs: {0}")]
    NoNewPrivs(io::Error),
    #[error("Landlock ruleset failed: {0}")]
    Landlock(#[from] landlock::RulesetError),
    #[error("cannot open / for the Landlock ruleset: {0}")]
    LandlockRoot(#[from] landlock::PathFdError),
    #[error("Landlock ruleset was not enforced by the kernel")]
    LandlockNotEnforced,
    #[error("seccomp filter failed: {0}")]
    Seccomp(#[from] seccompiler::Error),
}

/// Tells whether Landlock and seccomp are usable here; computed once per process.
pub fn probe() -> Result<SandboxSupport, SandboxUnavailable> {
    static SUPPORT: OnceLock<Result<SandboxSupport, SandboxUnavailable>> = OnceLock::new();
    SUPPORT.get_or_init(probe_kernel).clone()
}

fn probe_kernel() -> Result<SandboxSupport, SandboxUnavailable> {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute pointer, size 0 and the VERSION flag the kernel only
    // returns the ABI number; no memory is read or written.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if abi < 1 {
        let err = io::Error::last_os_error();
        let reason = match err.raw_os_error() {
            Some(libc::ENOSYS) => "not built into this kernel".to_string(),
            Some(libc::EOPNOTSUPP) => "disabled at boot (add landlock to lsm=)".to_string(),
            _ => err.to_string(),
        };
        return Err(SandboxUnavailable::Landlock(reason));
    }
    const SECCOMP_GET_ACTION_AVAIL: libc::c_uint = 2;
    let action: u32 = libc::SECCOMP_RET_ERRNO;
    // SAFETY: the kernel reads one u32 from a pointer to a live local.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            SECCOMP_GET_ACTION_AVAIL,
            0 as libc::c_uint,
            &action as *const u32,
        )
    };
    if rc != 0 {
        return Err(SandboxUnavailable::Seccomp(
            io::Error::last_os_error().to_string(),
        ));
    }
    Ok(SandboxSupport {
        landlock_abi: u32::try_from(abi).unwrap_or(u32::MAX),
    })
}

/// Entry point of the hidden launcher subcommand; see [`crate::launcher_main`].
pub fn launcher_main(args: impl Iterator<Item = OsString>) -> ! {
    let request = match parse_launch_args(args) {
        Ok(request) => request,
        Err(err) => refuse(&err),
    };
    if let Err(err) = enter_dir(&request.cwd) {
        refuse(&err);
    }
    if request.policy.is_confined()
        && let Err(err) = confine(&request.policy, &request.cwd)
    {
        refuse(&err);
    }
    let mut command = Command::new(&request.argv[0]);
    command.args(&request.argv[1..]);
    if request.policy.network_disabled() {
        command.env(NETWORK_DISABLED_ENV, "1");
    }
    let err = command.exec();
    eprintln!(
        "deputy sandbox: cannot run {}: {err}",
        request.argv[0].to_string_lossy()
    );
    // Same codes a shell uses, so callers read them the usual way.
    std::process::exit(if err.kind() == io::ErrorKind::NotFound {
        127
    } else {
        126
    });
}

fn refuse(reason: &dyn std::fmt::Display) -> ! {
    eprintln!("deputy sandbox: {reason}");
    std::process::exit(SANDBOX_UNAVAILABLE_EXIT_CODE);
}

fn enter_dir(dir: &Path) -> Result<(), ConfineError> {
    std::env::set_current_dir(dir).map_err(|source| ConfineError::Cwd {
        dir: dir.to_path_buf(),
        source,
    })
}

/// Confines this (single-threaded) process; everything it execs afterwards inherits it.
fn confine(policy: &SandboxPolicy, cwd: &Path) -> Result<(), ConfineError> {
    probe()?;
    let writable = policy.effective_writable_roots();
    let protected = policy.protected_subpaths();
    // Read-only bind mounts keep `.git` whole while its root stays fully writable; without
    // them, Landlock alone must leave the roots' own entries unwritable to spare `.git`.
    let mounted = !protected.is_empty() && mount_guard::make_read_only(&protected).is_ok();
    // The old working directory may sit beneath a path that is now a read-only mount.
    enter_dir(cwd)?;
    let still_protect: &[PathBuf] = if mounted { &[] } else { &protected };
    let terminals = filesystem::stdio_terminals();
    privileges::drop_all_capabilities().map_err(ConfineError::Capabilities)?;
    privileges::set_no_new_privs().map_err(ConfineError::NoNewPrivs)?;
    filesystem::restrict(
        &writable,
        still_protect,
        &terminals,
        policy.network_disabled(),
    )?;
    syscall_filter::install(policy.network_disabled())?;
    Ok(())
}
