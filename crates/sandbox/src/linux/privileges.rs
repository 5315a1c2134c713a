//! Giving up privileges before confinement: capabilities and the right to gain new ones.

use std::io;

/// Clears every capability this process holds, and the bounding set where permitted.
///
/// Landlock confines paths but not what a capability allows (loading kernel modules, raw
/// devices, ...), so a sandboxed command run by root must not keep root's capabilities. With
/// `no_new_privs` set afterwards, an exec can then never regain them.
pub fn drop_all_capabilities() -> io::Result<()> {
    let last_cap: u32 = std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(63);
    for cap in 0..=last_cap {
        // SAFETY: prctl with integer arguments touches no memory. EPERM means we never held
        // CAP_SETPCAP, and so hold nothing the empty permitted set below would not remove.
        unsafe { libc::prctl(libc::PR_CAPBSET_DROP, libc::c_ulong::from(cap), 0, 0, 0) };
    }
    // SAFETY: as above. EINVAL on kernels before ambient capabilities, which then have none.
    unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0,
            0,
            0,
        )
    };
    clear_capability_sets()
}

/// `struct __user_cap_header_struct` from `<linux/capability.h>`.
#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

/// `struct __user_cap_data_struct` from `<linux/capability.h>`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;

fn clear_capability_sets() -> io::Result<()> {
    let header = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let data = [CapData::default(); 2];
    // SAFETY: version 3 takes a header and an array of two data structs, both live locals.
    let rc = unsafe { libc::syscall(libc::SYS_capset, &header, data.as_ptr()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sets `no_new_privs`: no exec from here on (setuid binaries, file capabilities) gains
/// privileges, which also lets an unprivileged process install Landlock and seccomp.
pub fn set_no_new_privs() -> io::Result<()> {
    // SAFETY: prctl with integer arguments touches no memory.
    let rc = unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
