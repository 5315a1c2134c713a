//! Which actions may run without asking, by approval policy and sandbox mode.
//!
//! Security code: every function here is pure and decided by a table-driven
//! test. The engine asks these functions; it never re-derives the rules.

use std::path::{Component, Path, PathBuf};

use deputy_apply_patch::WriteTarget;
use deputy_protocol::{AskForApproval, SandboxMode};

use crate::command_safety::KnownSafe;

/// What to do with a command the model wants to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecAssessment {
    /// Run it now, under the session's sandbox or not.
    Run {
        /// Whether the sandbox confines it.
        sandboxed: bool,
    },
    /// Ask the user; if approved, run it without the sandbox.
    Ask {
        /// Shown to the user (the model's justification, or why the sandbox is in the way).
        reason: Option<String>,
    },
    /// Do not run it; the model is told why.
    Reject(String),
}

/// Facts about one command request.
#[derive(Debug, Clone, Copy)]
pub struct ExecRequestFacts<'a> {
    /// The session's approval policy.
    pub policy: AskForApproval,
    /// The session's sandbox mode.
    pub mode: SandboxMode,
    /// How far the command is known to only read.
    pub known_safe: KnownSafe,
    /// `Some(justification)` when the model asked to run outside the sandbox.
    pub escalation: Option<&'a str>,
    /// Whether the user approved this exact argv for the session.
    pub approved_for_session: bool,
    /// `Err(why)` when the kernel sandbox cannot be used here.
    pub sandbox_available: Result<(), &'a str>,
}

/// Decides whether a command runs, asks, or is refused.
pub fn assess_exec(f: ExecRequestFacts<'_>) -> ExecAssessment {
    use AskForApproval::*;
    if f.approved_for_session {
        return ExecAssessment::Run { sandboxed: false };
    }
    // A blank justification tells the user nothing; show none rather than an empty line.
    let justification = f
        .escalation
        .filter(|j| !j.trim().is_empty())
        .map(str::to_string);
    // A command runs unasked under `untrusted` only if it reads whatever happens, or if the
    // sandbox will keep it read-only (git, whose configuration can run programs).
    let known_safe = match f.known_safe {
        KnownSafe::Always => true,
        KnownSafe::WhenConfinedReadOnly => f.mode == SandboxMode::ReadOnly,
        KnownSafe::No => false,
    };
    if f.mode == SandboxMode::DangerFullAccess {
        return match f.policy {
            Untrusted if !known_safe => ExecAssessment::Ask {
                reason: justification,
            },
            _ => ExecAssessment::Run { sandboxed: false },
        };
    }
    if f.escalation.is_some() {
        return match f.policy {
            Never => ExecAssessment::Reject(
                "approval policy is `never`: a command cannot run outside the sandbox; \
                 run it within the sandbox or do without it"
                    .to_string(),
            ),
            Untrusted | OnFailure | OnRequest => ExecAssessment::Ask {
                reason: justification,
            },
        };
    }
    if f.policy == Untrusted && !known_safe {
        return ExecAssessment::Ask { reason: None };
    }
    match (f.sandbox_available, f.policy) {
        (Ok(()), _) => ExecAssessment::Run { sandboxed: true },
        (Err(why), OnRequest | OnFailure) => ExecAssessment::Ask {
            reason: Some(format!(
                "the sandbox is unavailable ({why}); run this command without it?"
            )),
        },
        (Err(why), Untrusted | Never) => ExecAssessment::Reject(format!(
            "the sandbox is unavailable ({why}), so the command was not run"
        )),
    }
}

/// Whether a sandboxed command that failed like this should be offered a re-run without the sandbox.
pub fn offer_unsandboxed_retry(policy: AskForApproval, looks_like_denial: bool) -> bool {
    policy == AskForApproval::OnFailure && looks_like_denial
}

/// What to do with a patch the model wants to apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchAssessment {
    /// Apply it without asking.
    Apply,
    /// Ask the user first.
    Ask,
    /// Do not apply it; the model is told why.
    Reject(String),
}

/// Decides whether a patch applies, asks, or is refused. `writable` says
/// whether every file it touches lies inside the sandbox's writable roots.
pub fn assess_patch(
    policy: AskForApproval,
    mode: SandboxMode,
    writable: bool,
    approved_for_session: bool,
) -> PatchAssessment {
    use AskForApproval::*;
    if approved_for_session {
        return PatchAssessment::Apply;
    }
    let writable = writable || mode == SandboxMode::DangerFullAccess;
    match policy {
        Untrusted => PatchAssessment::Ask,
        OnRequest | OnFailure if writable => PatchAssessment::Apply,
        OnRequest | OnFailure => PatchAssessment::Ask,
        Never if writable => PatchAssessment::Apply,
        Never => PatchAssessment::Reject(
            "the patch writes outside the writable roots and approval policy is `never`, \
             so it was not applied"
                .to_string(),
        ),
    }
}

/// Where patches may write without asking: the sandbox's writable roots
/// minus its protected subpaths (and any `.git` below a root).
#[derive(Debug, Clone, Default)]
pub struct WritableRoots {
    roots: Vec<PathBuf>,
    protected: Vec<PathBuf>,
}

impl WritableRoots {
    /// Roots and read-only carve-outs, both absolute.
    pub fn new(roots: Vec<PathBuf>, protected: Vec<PathBuf>) -> Self {
        let canonical = |paths: Vec<PathBuf>| paths.iter().map(|p| canonical_or_self(p)).collect();
        Self {
            roots: canonical(roots),
            protected: canonical(protected),
        }
    }

    /// Whether `path` (absolute) lies inside a root and outside any protected path or `.git`.
    /// Symlinks in the existing part of the path are resolved first, so a link
    /// planted inside a root cannot point a write outside it.
    pub fn allows(&self, path: &Path) -> bool {
        self.target(path).is_some()
    }

    /// Where to write `path` if [`WritableRoots::allows`] it: beneath the root that allows
    /// it, at the path as resolved now. Writing there never follows a symlink, so one swapped
    /// onto the path after this check fails the write instead of leading outside the root.
    pub fn target(&self, path: &Path) -> Option<WriteTarget> {
        let resolved = WriteTarget::resolve_now(path).ok()?.full_path();
        if self.protected.iter().any(|p| resolved.starts_with(p)) {
            return None;
        }
        self.roots.iter().find_map(|root| {
            let rest = resolved.strip_prefix(root).ok()?;
            if rest
                .components()
                .any(|c| matches!(c, Component::Normal(n) if n == ".git"))
            {
                return None;
            }
            WriteTarget::new(root.clone(), rest.to_path_buf()).ok()
        })
    }
}

fn canonical_or_self(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests;
