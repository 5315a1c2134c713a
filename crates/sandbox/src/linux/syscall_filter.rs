//! The seccomp filter for confined commands: no debugging of other processes, no io_uring,
//! no typing into terminals, and (per policy) no network or Unix sockets. A call through a
//! foreign ABI (32-bit x86 on x86_64) kills the process; x32 calls fail with `EPERM`.
//! Unconfined commands get [`super::terminal_guard`] instead.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch, sock_filter,
};

/// What the confined filter refuses beyond its fixed list.
#[derive(Debug, Clone, Copy)]
pub struct Refused {
    /// Sockets of every family but `AF_UNIX`.
    pub network: bool,
    /// `AF_UNIX` sockets, and socket pairs that could send to a named socket.
    pub unix_sockets: bool,
}

/// `ioctl` requests that push bytes into a terminal's input (`TIOCSTI`) or act on a virtual
/// console (`TIOCLINUX`, which can also paste into it): a command with any descriptor on the
/// user's terminal could otherwise type commands into the user's shell or into deputy's own
/// approval prompt.
#[allow(
    clippy::unnecessary_cast,
    reason = "the request constants are c_ulong on some targets and c_int on others"
)]
pub(super) const TERMINAL_INJECTION_IOCTLS: [u64; 2] =
    [libc::TIOCSTI as u64, libc::TIOCLINUX as u64];

/// The socket types a `socketpair(AF_UNIX, …)` may have: a connected stream or seqpacket
/// socket cannot be redirected to another address (`connect` and `sendto` with an address
/// fail with `EISCONN`), while a datagram one can `sendmsg` to any named socket.
const CONNECTED_ONLY_SOCKET_TYPES: [u64; 2] =
    [libc::SOCK_STREAM as u64, libc::SOCK_SEQPACKET as u64];

/// The kernel's mask for the type part of a socket type argument (the rest are flags such as
/// `SOCK_CLOEXEC`).
const SOCK_TYPE_MASK: u64 = 0xf;

fn arg(index: u8, op: SeccompCmpOp, value: u64) -> Result<SeccompCondition, seccompiler::Error> {
    // Dword: the kernel reads these arguments as 32-bit ints, so only the low half counts.
    Ok(SeccompCondition::new(
        index,
        SeccompCmpArgLen::Dword,
        op,
        value,
    )?)
}

fn terminal_injection_rules() -> Result<Vec<SeccompRule>, seccompiler::Error> {
    TERMINAL_INJECTION_IOCTLS
        .iter()
        .map(|request| Ok(SeccompRule::new(vec![arg(1, SeccompCmpOp::Eq, *request)?])?))
        .collect()
}

/// Builds the confined filter for this architecture; refused calls fail with `EPERM`.
pub fn build(refused: Refused) -> Result<BpfProgram, seccompiler::Error> {
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
    rules.insert(libc::SYS_ioctl, terminal_injection_rules()?);
    let unix = libc::AF_UNIX as u64;
    // An empty rule list refuses the call whatever its arguments.
    let socket_rules = match (refused.network, refused.unix_sockets) {
        (true, true) => Some(Vec::new()),
        (true, false) => Some(vec![SeccompRule::new(vec![arg(
            0,
            SeccompCmpOp::Ne,
            unix,
        )?])?]),
        (false, true) => Some(vec![SeccompRule::new(vec![arg(
            0,
            SeccompCmpOp::Eq,
            unix,
        )?])?]),
        (false, false) => None,
    };
    if let Some(socket_rules) = socket_rules {
        rules.insert(libc::SYS_socket, socket_rules);
    }
    let mut pair_rules = Vec::new();
    if refused.network {
        pair_rules.push(SeccompRule::new(vec![arg(0, SeccompCmpOp::Ne, unix)?])?);
    }
    if refused.unix_sockets {
        // Refuse every type but the connected-only ones (the kernel turns SOCK_RAW into
        // SOCK_DGRAM for Unix sockets, and may learn new types).
        for socket_type in (0..=SOCK_TYPE_MASK).filter(|t| !CONNECTED_ONLY_SOCKET_TYPES.contains(t))
        {
            pair_rules.push(SeccompRule::new(vec![
                arg(0, SeccompCmpOp::Eq, unix)?,
                arg(1, SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK), socket_type)?,
            ])?);
        }
    }
    if !pair_rules.is_empty() {
        rules.insert(libc::SYS_socketpair, pair_rules);
    }
    compile(rules)
}

fn compile(rules: BTreeMap<i64, Vec<SeccompRule>>) -> Result<BpfProgram, seccompiler::Error> {
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

/// Installs the confined filter on this process (sets `no_new_privs` first).
pub fn install(refused: Refused) -> Result<(), seccompiler::Error> {
    seccompiler::apply_filter(&build(refused)?)
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
    fn filter_grows_with_what_it_refuses() {
        let open = build(Refused {
            network: false,
            unix_sockets: false,
        })
        .expect("filter");
        let no_network = build(Refused {
            network: true,
            unix_sockets: false,
        })
        .expect("filter");
        let closed = build(Refused {
            network: true,
            unix_sockets: true,
        })
        .expect("filter");
        assert!(no_network.len() > open.len());
        assert!(closed.len() > no_network.len());
    }
}
