//! What this kernel offers: Landlock, seccomp, and namespaces for the command.

use std::io;
use std::sync::OnceLock;

use super::namespaces;
use crate::support::{SandboxSupport, SandboxUnavailable};

/// [`probe`]'s answer, once computed.
static SUPPORT: OnceLock<Result<SandboxSupport, SandboxUnavailable>> = OnceLock::new();

/// [`probe`]'s answer if it has been computed, without waiting for it.
pub fn probed() -> Option<Result<SandboxSupport, SandboxUnavailable>> {
    SUPPORT.get().cloned()
}

/// Tells whether Landlock and seccomp are usable here, and whether namespaces are; computed
/// once per process (the namespace check forks a short-lived child).
pub fn probe() -> Result<SandboxSupport, SandboxUnavailable> {
    SUPPORT
        .get_or_init(|| {
            Ok(SandboxSupport {
                landlock_abi: kernel_confinement()?,
                namespaces: namespaces::available(),
            })
        })
        .clone()
}

/// The Landlock ABI when both Landlock and seccomp's errno action are available: the two
/// things a confined command cannot run without. Cheap (two syscalls), so the launcher asks
/// it for every command.
pub fn kernel_confinement() -> Result<u32, SandboxUnavailable> {
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
    Ok(u32::try_from(abi).unwrap_or(u32::MAX))
}
