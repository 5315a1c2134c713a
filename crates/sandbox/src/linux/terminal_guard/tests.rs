use super::*;

/// What the kernel would decide for a call: the BPF program run over a `seccomp_data`.
fn decide(program: &[sock_filter], arch: u32, nr: u32, arg1: u64) -> u32 {
    let word = |offset: u32| match offset {
        NR_OFFSET => nr,
        ARCH_OFFSET => arch,
        ARG1_LOW_OFFSET => arg1 as u32,
        other => panic!("the guard reads offset {other}"),
    };
    let (mut pc, mut acc) = (0usize, 0u32);
    loop {
        let insn = &program[pc];
        let jump = |taken: bool| pc + 1 + usize::from(if taken { insn.jt } else { insn.jf });
        pc = match insn.code {
            BPF_LD_W_ABS => {
                acc = word(insn.k);
                pc + 1
            }
            BPF_JMP_JEQ_K => jump(acc == insn.k),
            BPF_JMP_JGE_K => jump(acc >= insn.k),
            BPF_RET_K => return insn.k,
            other => panic!("unexpected opcode {other:#x}"),
        };
    }
}

const DENY: u32 = libc::SECCOMP_RET_ERRNO | libc::EPERM as u32;
const ALLOW: u32 = libc::SECCOMP_RET_ALLOW;
#[allow(
    clippy::unnecessary_cast,
    reason = "the request constants are c_ulong on some targets and c_int on others"
)]
const TIOCSTI: u64 = libc::TIOCSTI as u64;
#[allow(clippy::unnecessary_cast, reason = "as above")]
const TIOCLINUX: u64 = libc::TIOCLINUX as u64;
#[allow(clippy::unnecessary_cast, reason = "as above")]
const TCGETS: u64 = libc::TCGETS as u64;

#[cfg(target_arch = "x86_64")]
#[test]
fn terminal_injection_is_refused_through_every_x86_abi_and_nothing_else() {
    let guard = build();
    let cases = [
        // 64-bit: ioctl is 16, write 1.
        (AUDIT_ARCH_X86_64, 16, TIOCSTI, DENY),
        (AUDIT_ARCH_X86_64, 16, TIOCLINUX, DENY),
        // Only the low half is the request, as the kernel reads it.
        (AUDIT_ARCH_X86_64, 16, 0xffff_ffff_0000_0000 | TIOCSTI, DENY),
        (AUDIT_ARCH_X86_64, 16, TCGETS, ALLOW),
        (AUDIT_ARCH_X86_64, 1, TIOCSTI, ALLOW),
        // x32: every call refused, its ioctl (514) included.
        (AUDIT_ARCH_X86_64, 0x4000_0000 | 514, TIOCSTI, DENY),
        (AUDIT_ARCH_X86_64, 0x4000_0000 | 1, 0, DENY),
        // i386 (`int 0x80`): ioctl is 54, write 4.
        (AUDIT_ARCH_I386, 54, TIOCSTI, DENY),
        (AUDIT_ARCH_I386, 54, TIOCLINUX, DENY),
        (AUDIT_ARCH_I386, 54, TCGETS, ALLOW),
        (AUDIT_ARCH_I386, 4, TIOCSTI, ALLOW),
        (AUDIT_ARCH_I386, 16, TIOCSTI, ALLOW),
        // Anything else the kernel might one day report.
        (0x1234_5678, 54, TIOCSTI, ALLOW),
    ];
    for (arch, nr, arg1, expected) in cases {
        assert_eq!(
            decide(&guard, arch, nr, arg1),
            expected,
            "arch {arch:#x}, nr {nr:#x}, request {arg1:#x}"
        );
    }
}

#[cfg(target_arch = "aarch64")]
#[test]
fn terminal_injection_is_refused_through_both_arm_abis_and_nothing_else() {
    let guard = build();
    let cases = [
        (AUDIT_ARCH_AARCH64, 29, TIOCSTI, DENY),
        (AUDIT_ARCH_AARCH64, 29, TCGETS, ALLOW),
        (AUDIT_ARCH_AARCH64, 64, TIOCSTI, ALLOW),
        (AUDIT_ARCH_ARM, 54, TIOCSTI, DENY),
        (AUDIT_ARCH_ARM, 54, TIOCLINUX, DENY),
        (AUDIT_ARCH_ARM, 4, TIOCSTI, ALLOW),
    ];
    for (arch, nr, arg1, expected) in cases {
        assert_eq!(decide(&guard, arch, nr, arg1), expected);
    }
}
