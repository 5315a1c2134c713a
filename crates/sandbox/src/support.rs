//! Whether this machine's kernel can confine commands at all.

use std::fmt;

/// The kernel features the sandbox will use on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SandboxSupport {
    /// The Landlock ABI version the kernel reports (1 or more).
    pub landlock_abi: u32,
}

impl SandboxSupport {
    /// Whether Landlock can also restrict TCP bind/connect (ABI 4 and later).
    pub fn landlock_restricts_tcp(&self) -> bool {
        self.landlock_abi >= 4
    }
}

impl fmt::Display for SandboxSupport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Landlock ABI {}, seccomp", self.landlock_abi)
    }
}

/// Why commands cannot be confined here; a sandboxed command is then refused, never run bare.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SandboxUnavailable {
    /// The kernel was built without Landlock or booted with it disabled.
    #[error("Landlock is unavailable: {0}")]
    Landlock(String),
    /// The kernel cannot install seccomp filters that return an errno.
    #[error("seccomp filtering is unavailable: {0}")]
    Seccomp(String),
    /// This operating system has neither Landlock nor seccomp.
    #[error("sandboxing is only supported on Linux")]
    UnsupportedPlatform,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn support_reads_as_the_landlock_abi_and_seccomp() {
        let support = SandboxSupport { landlock_abi: 7 };
        assert_eq!(support.to_string(), "Landlock ABI 7, seccomp");
        assert!(support.landlock_restricts_tcp());
        assert!(!SandboxSupport { landlock_abi: 3 }.landlock_restricts_tcp());
    }
}
