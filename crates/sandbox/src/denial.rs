//! Guessing, from a failed command's output, whether the sandbox is what stopped it.

/// Exit code of the launcher when it could not confine a command (the command did not run).
pub const SANDBOX_UNAVAILABLE_EXIT_CODE: i32 = 125;

/// Phrases that the C library, shells and common tools print when the kernel refused a path or
/// a socket with `EACCES`/`EPERM`/`EROFS`, or when name resolution failed for lack of sockets.
const DENIAL_MARKERS: &[&str] = &[
    "permission denied",
    "operation not permitted",
    "read-only file system",
    "network is unreachable",
    "temporary failure in name resolution",
    "could not resolve host",
    "could not resolve hostname",
    "failed to lookup address information",
    "name or service not known",
    "failed to connect",
    "couldn't connect to server",
    "deputy sandbox:",
];

/// Whether a command that exited with `exit_code` and printed `output` was likely stopped by
/// the sandbox rather than by a bug of its own. A successful command never was.
pub fn looks_like_sandbox_denial(exit_code: i32, output: &str) -> bool {
    if exit_code == 0 {
        return false;
    }
    if exit_code == SANDBOX_UNAVAILABLE_EXIT_CODE {
        return true;
    }
    let lowered = output.to_lowercase();
    DENIAL_MARKERS.iter().any(|marker| lowered.contains(marker))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_is_never_a_denial() {
        assert!(!looks_like_sandbox_denial(0, "touch: Permission denied"));
    }

    #[test]
    fn launcher_refusal_is_a_denial() {
        assert!(looks_like_sandbox_denial(
            SANDBOX_UNAVAILABLE_EXIT_CODE,
            "deputy sandbox: Landlock is not supported by this kernel"
        ));
    }

    #[test]
    fn filesystem_refusals_are_denials() {
        for output in [
            "touch: cannot touch '/etc/x': Permission denied",
            "mkdir: cannot create directory 'a': Operation not permitted",
            "error: could not lock config file .git/config: Read-only file system",
        ] {
            assert!(looks_like_sandbox_denial(1, output), "{output}");
        }
    }

    #[test]
    fn network_refusals_are_denials() {
        for output in [
            "curl: (6) Could not resolve host: example.com",
            "ping: connect: Network is unreachable",
            "socket.gaierror: [Errno -3] Temporary failure in name resolution",
            "curl: (7) Failed to connect to 127.0.0.1 port 80",
            "error sending request: failed to lookup address information",
        ] {
            assert!(looks_like_sandbox_denial(6, output), "{output}");
        }
    }

    #[test]
    fn ordinary_failures_are_not_denials() {
        for output in [
            "error[E0308]: mismatched types",
            "FAILED tests::adds_numbers",
            "grep: no match",
            "",
        ] {
            assert!(!looks_like_sandbox_denial(1, output), "{output}");
        }
    }
}
