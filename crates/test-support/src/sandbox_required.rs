//! Skipping a sandboxed test where the kernel cannot sandbox — unless CI says it must.
//!
//! A test that needs Landlock and seccomp returns early on a kernel without them, so the
//! suite stays usable there. CI sets `DEPUTY_REQUIRE_SANDBOX=1`: on its machines a missing
//! sandbox is a broken environment, and a silently skipped escape test would pass for the
//! wrong reason.

use std::fmt::Display;

/// The variable that turns "skip without a sandbox" into a failure.
pub const REQUIRE_SANDBOX_VAR: &str = "DEPUTY_REQUIRE_SANDBOX";

/// Whether this run requires the kernel sandbox (`DEPUTY_REQUIRE_SANDBOX=1`).
pub fn sandbox_required() -> bool {
    std::env::var_os(REQUIRE_SANDBOX_VAR).is_some_and(|value| value == "1")
}

/// Reports that the sandbox is unavailable for `reason`: prints that the test is skipped,
/// or panics when [`sandbox_required`].
pub fn skip_without_sandbox(reason: impl Display) {
    assert!(
        !sandbox_required(),
        "{REQUIRE_SANDBOX_VAR}=1 but the kernel sandbox is unavailable: {reason}"
    );
    eprintln!("skipping: the kernel sandbox is unavailable: {reason}");
}
