//! The Landlock ruleset: read everywhere, write only where the policy says.

use std::fs;
use std::path::{Path, PathBuf};

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreated, RulesetCreatedAttr, RulesetStatus, Scope,
};

use super::confine::ConfineError;

/// The newest ABI whose rights this ruleset was written and tested against; newer kernels
/// still get exactly these rights, older ones the subset they know (best effort).
const TARGET_ABI: ABI = ABI::V7;

/// Every filesystem right we restrict. Device ioctls stay unrestricted: terminals opened by
/// the command (`/dev/tty`) need them for ordinary termios calls.
fn handled_fs() -> BitFlags<AccessFs> {
    let mut handled = AccessFs::from_all(TARGET_ABI);
    handled.remove(AccessFs::IoctlDev);
    handled
}

/// Rights for a device file the command may write: open for read/write, truncate on open.
fn device_write() -> BitFlags<AccessFs> {
    (AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate) & handled_fs()
}

/// The terminals this process was handed as stdin/stdout/stderr (not `/dev/tty`).
///
/// Reopening them (`/dev/stdout`, `tee /dev/stderr`) is an open of the tty path, so it needs a
/// rule; pipes and sockets need none, being outside every filesystem hierarchy.
pub fn stdio_terminals() -> Vec<PathBuf> {
    let mut terminals: Vec<PathBuf> = Vec::new();
    for fd in 0..=2 {
        let Ok(target) = fs::read_link(format!("/proc/self/fd/{fd}")) else {
            continue;
        };
        let is_tty = target.starts_with("/dev/pts/")
            || (target.starts_with("/dev/tty") && target != Path::new("/dev/tty"));
        if is_tty && !terminals.contains(&target) {
            terminals.push(target);
        }
    }
    terminals
}

/// What the Landlock ruleset allows and scopes.
pub struct Rules<'a> {
    /// Directories writable beneath (canonical).
    pub writable_roots: &'a [PathBuf],
    /// Paths beneath them that stay read-only.
    pub protected: &'a [PathBuf],
    /// Terminals from stdio, which may be reopened for writing.
    pub terminals: &'a [PathBuf],
    /// Whether abstract Unix sockets outside the sandbox are out of reach.
    pub sockets_scoped: bool,
    /// Whether TCP bind/connect are refused.
    pub network_disabled: bool,
}

/// Applies the ruleset to this process; fails unless the kernel enforces at least part of it.
pub fn restrict(rules: &Rules<'_>) -> Result<(), ConfineError> {
    let mut ruleset = Ruleset::default().handle_access(handled_fs())?;
    // Best effort (ABI 6): no signals to processes outside this sandbox, so a command cannot
    // kill its supervisor or deputy even where it shares their PID namespace.
    ruleset = ruleset.scope(Scope::Signal)?;
    if rules.network_disabled {
        // Best effort: ABI 4 adds TCP bind/connect; seccomp remains the primary network
        // barrier on older kernels.
        ruleset = ruleset.handle_access(AccessNet::from_all(TARGET_ABI))?;
    }
    if rules.sockets_scoped {
        // Best effort (ABI 6): no connecting to abstract Unix sockets bound outside.
        ruleset = ruleset.scope(Scope::AbstractUnixSocket)?;
    }
    let mut created = ruleset.create()?.add_rule(PathBeneath::new(
        PathFd::new("/")?,
        AccessFs::from_read(TARGET_ABI),
    ))?;
    // `/dev/tty` is deliberately absent: the command runs without a controlling terminal, and
    // only the stdio terminals it was handed are its to write.
    let devices = [PathBuf::from("/dev/null")];
    for device in devices.iter().chain(rules.terminals) {
        created = add_if_present(created, device, device_write())?;
    }
    let mut grants: Vec<PathBuf> = Vec::new();
    for root in rules.writable_roots {
        grant_except(root, rules.protected, &mut grants);
    }
    for path in &grants {
        created = add_if_present(created, path, handled_fs())?;
    }
    let status = created.restrict_self()?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err(ConfineError::LandlockNotEnforced);
    }
    Ok(())
}

/// Adds a rule for `path` if it exists; a file gets only the rights that make sense for files.
fn add_if_present(
    created: RulesetCreated,
    path: &Path,
    access: BitFlags<AccessFs>,
) -> Result<RulesetCreated, ConfineError> {
    let Ok(meta) = fs::metadata(path) else {
        return Ok(created);
    };
    let access = if meta.is_dir() {
        access
    } else {
        access & AccessFs::from_file(TARGET_ABI)
    };
    let Ok(fd) = PathFd::new(path) else {
        return Ok(created);
    };
    Ok(created.add_rule(PathBeneath::new(fd, access))?)
}

/// The paths to grant so that everything beneath `path` is writable except `protected`.
///
/// Landlock rules only add rights, so a protected path inside `path` is carved out by granting
/// each sibling on the way down instead of `path` itself. Symlinks are never followed: a link
/// inside a root must not extend the grant to where it points.
fn grant_except(path: &Path, protected: &[PathBuf], grants: &mut Vec<PathBuf>) {
    if protected.iter().any(|p| p == path) {
        return;
    }
    if !protected.iter().any(|p| p.starts_with(path)) {
        grants.push(path.to_path_buf());
        return;
    }
    let Ok(entries) = fs::read_dir(path) else {
        return;
    };
    for entry in entries.flatten() {
        let is_symlink = entry.file_type().map(|t| t.is_symlink()).unwrap_or(true);
        if !is_symlink {
            grant_except(&entry.path(), protected, grants);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unprotected_root_is_granted_whole() {
        let mut grants = Vec::new();
        grant_except(
            Path::new("/w"),
            &[PathBuf::from("/elsewhere/.git")],
            &mut grants,
        );
        assert_eq!(grants, vec![PathBuf::from("/w")]);
    }

    #[test]
    fn protected_child_is_carved_out_by_granting_its_siblings() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        fs::create_dir(root.join(".git")).expect("mkdir");
        fs::create_dir(root.join("src")).expect("mkdir");
        fs::write(root.join("README"), "x").expect("write");
        std::os::unix::fs::symlink("/etc", root.join("etc-link")).expect("symlink");

        let mut grants = Vec::new();
        grant_except(root, &[root.join(".git")], &mut grants);
        grants.sort();
        assert_eq!(grants, vec![root.join("README"), root.join("src")]);
    }
}
