//! Whether this machine's kernel can confine commands at all, and how well.

use std::fmt;

/// The kernel features the sandbox will use on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SandboxSupport {
    /// The Landlock ABI version the kernel reports (1 or more).
    pub landlock_abi: u32,
    /// Whether commands can get their own mount and PID namespaces (with a user namespace
    /// unless deputy runs as root): a private `/tmp`, a read-only `.git` by mount, and an init
    /// process that takes every leftover process down with the command.
    pub namespaces: bool,
}

impl SandboxSupport {
    /// Whether Landlock can also restrict TCP bind/connect (ABI 4 and later).
    pub fn landlock_restricts_tcp(&self) -> bool {
        self.landlock_abi >= 4
    }

    /// Whether Landlock keeps commands from signalling processes outside the sandbox (ABI 6).
    pub fn landlock_scopes_signals(&self) -> bool {
        self.landlock_abi >= 6
    }

    /// What confined commands lose here for want of namespaces, for the user to read;
    /// `None` when namespaces are available.
    pub fn namespace_limitations(&self) -> Option<&'static str> {
        (!self.namespaces).then_some(
            "user namespaces are unavailable (and deputy is not root), so confined commands \
             get no private /tmp and no PID namespace, and creating or renaming entries \
             directly in a writable root that holds a .git fails",
        )
    }
}

impl fmt::Display for SandboxSupport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Landlock ABI {}, seccomp", self.landlock_abi)?;
        match self.namespace_limitations() {
            None => write!(f, ", mount and PID namespaces"),
            Some(limits) => write!(f, "; {limits}"),
        }
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
    fn support_reads_as_the_landlock_abi_seccomp_and_namespaces() {
        let support = SandboxSupport {
            landlock_abi: 7,
            namespaces: true,
        };
        assert_eq!(
            support.to_string(),
            "Landlock ABI 7, seccomp, mount and PID namespaces"
        );
        assert!(support.landlock_restricts_tcp());
        assert!(support.landlock_scopes_signals());
        assert_eq!(support.namespace_limitations(), None);
        let old = SandboxSupport {
            landlock_abi: 3,
            namespaces: false,
        };
        assert!(!old.landlock_restricts_tcp());
        assert!(!old.landlock_scopes_signals());
        assert!(
            old.to_string()
                .contains("no private /tmp and no PID namespace")
        );
    }
}
