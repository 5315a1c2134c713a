//! Confining the calling process: what to protect, decided up front, then capabilities,
//! `no_new_privs`, Landlock and seccomp, none of which can be undone afterwards.

use std::io;
use std::path::{Path, PathBuf};

use super::{filesystem, privileges, syscall_filter};
use crate::policy::SandboxPolicy;
use crate::support::SandboxUnavailable;

/// Everything that can stop the launcher from confining a command.
#[derive(Debug, thiserror::Error)]
pub enum ConfineError {
    #[error("{0}")]
    Unavailable(#[from] SandboxUnavailable),
    #[error("cannot enter {}: {source}", .dir.display())]
    Cwd { dir: PathBuf, source: io::Error },
    #[error("cannot set up the command's namespaces: {0}")]
    Namespaces(io::Error),
    #[error("cannot give the command a private /tmp: {0}")]
    PrivateTmp(io::Error),
    #[error(
        "the private /tmp {} would be reachable from the command (a writable root or its \
         working directory holds it)",
        .0.display()
    )]
    PrivateTmpExposed(PathBuf),
    #[error("cannot drop capabilities: {0}")]
    Capabilities(io::Error),
    #[error("cannot set no_new_privs: {0}")]
    NoNewPrivs(io::Error),
    #[error("Landlock ruleset failed: {0}")]
    Landlock(#[from] landlock::RulesetError),
    #[error("cannot open / for the Landlock ruleset: {0}")]
    LandlockRoot(#[from] landlock::PathFdError),
    #[error("Landlock ruleset was not enforced by the kernel")]
    LandlockNotEnforced,
    #[error("seccomp filter failed: {0}")]
    Seccomp(#[from] seccompiler::Error),
}

/// What the launcher decides about the filesystem before it changes namespaces, read from
/// the real filesystem: after `/tmp` is covered, some of it is no longer visible.
#[derive(Debug)]
pub struct Plan {
    /// The writable roots that exist, canonical.
    pub writable: Vec<PathBuf>,
    /// Paths inside them that stay read-only (`.git`).
    pub protected: Vec<PathBuf>,
    /// The terminals handed to the launcher as stdio.
    pub terminals: Vec<PathBuf>,
    /// The host directory to mount over `/tmp`, if any.
    pub private_tmp: Option<PathBuf>,
    /// Directories strictly below the real `/tmp` to mount back over the private one: the
    /// writable roots and the command's cwd that live there.
    pub kept_under_tmp: Vec<PathBuf>,
    /// Whether network sockets are refused.
    pub network_disabled: bool,
    /// Whether Unix sockets are refused.
    pub unix_sockets_disabled: bool,
}

impl Plan {
    /// Reads what `policy` means on this filesystem for a command started in `cwd`.
    pub fn new(policy: &SandboxPolicy, cwd: &Path) -> Result<Plan, ConfineError> {
        let writable = policy.effective_writable_roots();
        let private_tmp = policy.private_tmp.clone();
        let kept_under_tmp = match private_tmp {
            Some(_) => dirs_under_tmp(
                writable
                    .iter()
                    .cloned()
                    .chain(std::fs::canonicalize(cwd).ok()),
            ),
            None => Vec::new(),
        };
        if let Some(dir) = &private_tmp {
            let real = std::fs::canonicalize(dir).map_err(ConfineError::PrivateTmp)?;
            // The private /tmp is granted write through its mount. Were the directory holding
            // it reachable under another name — inside a writable root, or below a directory
            // mounted back into /tmp (writable there when /tmp is a root) — a command could
            // swap it for a link to any directory, which the next command would then get as
            // its writable /tmp, or write into other sessions' private /tmp.
            let base = real.parent().unwrap_or(&real).to_path_buf();
            let exposes = |dir: &PathBuf| {
                dir != Path::new("/tmp") && (base.starts_with(dir) || dir.starts_with(&base))
            };
            if writable.iter().chain(&kept_under_tmp).any(exposes) {
                return Err(ConfineError::PrivateTmpExposed(real));
            }
        }
        Ok(Plan {
            protected: policy.protected_subpaths(),
            writable,
            terminals: filesystem::stdio_terminals(),
            private_tmp,
            kept_under_tmp,
            network_disabled: policy.network_disabled(),
            unix_sockets_disabled: policy.unix_sockets_disabled(),
        })
    }
}

/// The directories strictly below `/tmp`, minus those inside another one of them.
fn dirs_under_tmp(dirs: impl Iterator<Item = PathBuf>) -> Vec<PathBuf> {
    let tmp = Path::new("/tmp");
    let mut below: Vec<PathBuf> = dirs.filter(|d| d.starts_with(tmp) && d != tmp).collect();
    below.sort();
    below.dedup();
    let outer: Vec<PathBuf> = below.clone();
    below.retain(|dir| !outer.iter().any(|o| o != dir && dir.starts_with(o)));
    below
}

/// Confines this (single-threaded) process; everything it forks or execs afterwards inherits
/// it. `still_protect` are the protected paths no read-only mount covers, which Landlock must
/// then leave unwritable by itself.
pub fn confine_self(plan: &Plan, still_protect: &[PathBuf]) -> Result<(), ConfineError> {
    privileges::drop_all_capabilities().map_err(ConfineError::Capabilities)?;
    privileges::set_no_new_privs().map_err(ConfineError::NoNewPrivs)?;
    filesystem::restrict(&filesystem::Rules {
        writable_roots: &plan.writable,
        protected: still_protect,
        terminals: &plan.terminals,
        sockets_scoped: plan.network_disabled || plan.unix_sockets_disabled,
        network_disabled: plan.network_disabled,
    })?;
    syscall_filter::install(syscall_filter::Refused {
        network: plan.network_disabled,
        unix_sockets: plan.unix_sockets_disabled,
    })?;
    Ok(())
}

/// Changes into the command's working directory.
pub fn enter_dir(dir: &Path) -> Result<(), ConfineError> {
    std::env::set_current_dir(dir).map_err(|source| ConfineError::Cwd {
        dir: dir.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_outermost_dirs_strictly_below_tmp_are_kept() {
        let kept = dirs_under_tmp(
            [
                "/tmp",
                "/tmp/ws",
                "/tmp/ws/sub",
                "/tmpfoo/x",
                "/home/u/p",
                "/tmp/other",
                "/tmp/ws",
            ]
            .into_iter()
            .map(PathBuf::from),
        );
        assert_eq!(
            kept,
            vec![PathBuf::from("/tmp/other"), PathBuf::from("/tmp/ws")]
        );
    }
}
