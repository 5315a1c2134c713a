//! The seccomp filter of unconfined commands: no typing into terminals, through any of the
//! kernel's system call ABIs.
//!
//! A seccomp filter sees every system call together with the ABI it came through: a 64-bit
//! process on x86_64 can still make 32-bit calls (`int 0x80`), where `ioctl` is number 54
//! rather than 16, and the x32 ABI numbers calls with bit 30 set. A filter that only knows
//! the native numbers lets `ioctl(TIOCSTI)` through the other doors. The confined filter
//! (seccompiler's) kills a process that uses a foreign ABI at all; unconfined commands must
//! keep running 32-bit programs, so this filter is written out by hand: for the native ABI
//! and each compat ABI the architecture has, `ioctl` with `TIOCSTI` or `TIOCLINUX` fails with
//! `EPERM`; x32 calls fail with `EPERM` whatever they are (as in the confined filter);
//! everything else is allowed.

use std::io;

use seccompiler::sock_filter;

use super::syscall_filter::TERMINAL_INJECTION_IOCTLS;

/// Offsets in the kernel's `struct seccomp_data`: `nr`, `arch`, and the low half of `args[1]`
/// (little-endian), which is all the kernel compares of an ioctl request.
const NR_OFFSET: u32 = 0;
const ARCH_OFFSET: u32 = 4;
const ARG1_LOW_OFFSET: u32 = 16 + 8;

/// Opcodes from `<linux/bpf_common.h>`.
const BPF_LD_W_ABS: u16 = 0x20;
const BPF_JMP_JEQ_K: u16 = 0x15;
const BPF_JMP_JGE_K: u16 = 0x35;
const BPF_RET_K: u16 = 0x06;

/// `AUDIT_ARCH_*` values from `<linux/audit.h>`.
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH_I386: u32 = 0x4000_0003;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH_AARCH64: u32 = 0xC000_00B7;
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH_ARM: u32 = 0x4000_0028;

/// One system call ABI the kernel accepts from a process of this architecture.
#[derive(Debug, Clone, Copy)]
struct Abi {
    audit_arch: u32,
    ioctl: u32,
    /// Numbers at or above this belong to the x32 ABI, refused whole.
    x32_from: Option<u32>,
}

/// The native ABI first, then the compat ones.
fn abis() -> &'static [Abi] {
    #[cfg(target_arch = "x86_64")]
    {
        &[
            Abi {
                audit_arch: AUDIT_ARCH_X86_64,
                ioctl: 16,
                x32_from: Some(0x4000_0000),
            },
            Abi {
                audit_arch: AUDIT_ARCH_I386,
                ioctl: 54,
                x32_from: None,
            },
        ]
    }
    #[cfg(target_arch = "aarch64")]
    {
        &[
            Abi {
                audit_arch: AUDIT_ARCH_AARCH64,
                ioctl: 29,
                x32_from: None,
            },
            Abi {
                audit_arch: AUDIT_ARCH_ARM,
                ioctl: 54,
                x32_from: None,
            },
        ]
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        &[]
    }
}

/// Where a jump goes, resolved once the program is laid out.
#[derive(Debug, Clone, Copy)]
enum To {
    Next,
    Allow,
    Deny,
    /// The first instruction of the ABI block with this index (or Allow past the last).
    Block(usize),
}

/// Builds the guard for this architecture's ABIs.
pub fn build() -> Vec<sock_filter> {
    let abis = abis();
    let mut code: Vec<(u16, u32, To, To)> = vec![(BPF_LD_W_ABS, ARCH_OFFSET, To::Next, To::Next)];
    let mut block_starts = Vec::new();
    for (index, abi) in abis.iter().enumerate() {
        block_starts.push(code.len());
        // The accumulator still holds the arch here: every block starts with this check.
        code.push((
            BPF_JMP_JEQ_K,
            abi.audit_arch,
            To::Next,
            To::Block(index + 1),
        ));
        code.push((BPF_LD_W_ABS, NR_OFFSET, To::Next, To::Next));
        if let Some(x32) = abi.x32_from {
            code.push((BPF_JMP_JGE_K, x32, To::Deny, To::Next));
        }
        code.push((BPF_JMP_JEQ_K, abi.ioctl, To::Next, To::Allow));
        code.push((BPF_LD_W_ABS, ARG1_LOW_OFFSET, To::Next, To::Next));
        let (last, others) = TERMINAL_INJECTION_IOCTLS.split_last().unzip();
        for request in others.unwrap_or_default() {
            code.push((BPF_JMP_JEQ_K, *request as u32, To::Deny, To::Next));
        }
        if let Some(last) = last {
            code.push((BPF_JMP_JEQ_K, *last as u32, To::Deny, To::Allow));
        }
    }
    let allow = code.len();
    let deny = allow + 1;
    let resolve = |at: usize, to: To| -> u8 {
        let target = match to {
            To::Next => at + 1,
            To::Allow => allow,
            To::Deny => deny,
            To::Block(index) => block_starts.get(index).copied().unwrap_or(allow),
        };
        // Every jump is forward and the program is a few dozen instructions long.
        u8::try_from(target - at - 1).unwrap_or(u8::MAX)
    };
    let mut program: Vec<sock_filter> = code
        .iter()
        .enumerate()
        .map(|(at, &(op, k, jt, jf))| sock_filter {
            code: op,
            jt: if op == BPF_LD_W_ABS {
                0
            } else {
                resolve(at, jt)
            },
            jf: if op == BPF_LD_W_ABS {
                0
            } else {
                resolve(at, jf)
            },
            k,
        })
        .collect();
    program.push(sock_filter {
        code: BPF_RET_K,
        jt: 0,
        jf: 0,
        k: libc::SECCOMP_RET_ALLOW,
    });
    program.push(sock_filter {
        code: BPF_RET_K,
        jt: 0,
        jf: 0,
        k: libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
    });
    program
}

/// Installs the guard *without* `no_new_privs`, so setuid programs (sudo) keep working. The
/// kernel allows that only with `CAP_SYS_ADMIN`, which is also the only way to push input
/// into a terminal that is not one's controlling terminal; without it this returns
/// `Ok(false)` and the command, having no controlling terminal, needs no filter.
pub fn install() -> io::Result<bool> {
    let program = build();
    let fprog = libc::sock_fprog {
        len: u16::try_from(program.len()).map_err(io::Error::other)?,
        filter: program.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: the kernel copies the program from a live local before returning.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0 as libc::c_ulong,
            &fprog as *const libc::sock_fprog,
        )
    };
    if rc == 0 {
        return Ok(true);
    }
    let err = io::Error::last_os_error();
    match err.raw_os_error() {
        Some(libc::EACCES) => Ok(false),
        _ => Err(err),
    }
}

#[cfg(test)]
mod tests;
