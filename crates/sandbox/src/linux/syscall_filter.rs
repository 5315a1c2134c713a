//! The seccomp filter: no debugging of other processes, no io_uring, and (when the network is
//! off) no sockets but Unix ones.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch, sock_filter,
};

/// Builds the filter for this architecture; refused calls fail with `EPERM`.
pub fn build(network_disabled: bool) -> Result<BpfProgram, seccompiler::Error> {
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    // ptrace and its memory-access cousins would let the command drive an unconfined
    // process; io_uring performs file and socket operations that seccomp never sees.
    for syscall in [
        libc::SYS_ptrace,
        libc::SYS_process_vm_readv,
        libc::SYS_process_vm_writev,
        libc::SYS_io_uring_setup,
        libc::SYS_io_uring_enter,
        libc::SYS_io_uring_register,
    ] {
        rules.insert(syscall, Vec::new());
    }
    if network_disabled {
        let not_unix = || -> Result<Vec<SeccompRule>, seccompiler::Error> {
            Ok(vec![SeccompRule::new(vec![SeccompCondition::new(
                0,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Ne,
                libc::AF_UNIX as u64,
            )?])?])
        };
        rules.insert(libc::SYS_socket, not_unix()?);
        rules.insert(libc::SYS_socketpair, not_unix()?);
    }
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )?;
    let program: BpfProgram = filter.try_into()?;
    Ok(with_x32_refused(arch, program))
}

/// Installs the filter on this process (`no_new_privs` must already be set).
pub fn install(network_disabled: bool) -> Result<(), seccompiler::Error> {
    seccompiler::apply_filter(&build(network_disabled)?)
}

/// On x86_64 the x32 ABI reaches the same syscalls under numbers with bit 30 set, which the
/// per-number rules would not match; refuse that whole range up front.
fn with_x32_refused(arch: TargetArch, program: BpfProgram) -> BpfProgram {
    if arch != TargetArch::x86_64 {
        return program;
    }
    const X32_SYSCALL_BIT: u32 = 0x4000_0000;
    const SECCOMP_DATA_NR_OFFSET: u32 = 0;
    // Opcodes from <linux/bpf_common.h>: BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JGE|BPF_K, BPF_RET|BPF_K.
    const BPF_LD_W_ABS: u16 = 0x20;
    const BPF_JMP_JGE_K: u16 = 0x35;
    const BPF_RET_K: u16 = 0x06;
    let prefix = [
        sock_filter {
            code: BPF_LD_W_ABS,
            jt: 0,
            jf: 0,
            k: SECCOMP_DATA_NR_OFFSET,
        },
        sock_filter {
            code: BPF_JMP_JGE_K,
            jt: 0,
            jf: 1,
            k: X32_SYSCALL_BIT,
        },
        sock_filter {
            code: BPF_RET_K,
            jt: 0,
            jf: 0,
            k: libc::SECCOMP_RET_ERRNO | libc::EPERM as u32,
        },
    ];
    // Jumps in a BPF program are relative, so prepending leaves the rest intact.
    prefix.into_iter().chain(program).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_compiles_with_and_without_network() {
        let open = build(false).expect("filter");
        let closed = build(true).expect("filter");
        assert!(closed.len() > open.len());
    }
}
