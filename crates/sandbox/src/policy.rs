//! What a sandboxed command may touch, independent of how the kernel enforces it.

use std::fs;
use std::path::{Path, PathBuf};

/// How much of the machine a sandboxed command may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SandboxMode {
    /// Read everywhere, write nowhere but `/dev/null` and the terminal it was given.
    ReadOnly,
    /// Read everywhere, write only beneath the writable roots (minus their `.git`).
    WorkspaceWrite,
    /// No confinement at all.
    FullAccess,
}

impl SandboxMode {
    /// The spelling used on the command line and in configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::FullAccess => "danger-full-access",
        }
    }

    /// Parses the spelling produced by [`SandboxMode::as_str`].
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "read-only" => Some(SandboxMode::ReadOnly),
            "workspace-write" => Some(SandboxMode::WorkspaceWrite),
            "danger-full-access" => Some(SandboxMode::FullAccess),
            _ => None,
        }
    }
}

impl std::fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The confinement applied to one command: a mode, where it may write, whether it may use the network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// How much the command may change.
    pub mode: SandboxMode,
    /// Directories the command may write beneath (only meaningful for `WorkspaceWrite`).
    pub writable_roots: Vec<PathBuf>,
    /// Whether the command may open network sockets (ignored for `FullAccess`, which always may).
    pub network_access: bool,
}

impl SandboxPolicy {
    /// Read everywhere, write nowhere, no network.
    pub fn read_only() -> Self {
        SandboxPolicy {
            mode: SandboxMode::ReadOnly,
            writable_roots: Vec::new(),
            network_access: false,
        }
    }

    /// Write beneath `cwd`, `extra_roots` and (when `include_tmp`) `/tmp` and `$TMPDIR`.
    ///
    /// Relative extra roots are taken relative to `cwd`; duplicates are dropped.
    pub fn workspace_write(
        cwd: &Path,
        extra_roots: impl IntoIterator<Item = PathBuf>,
        network_access: bool,
        include_tmp: bool,
    ) -> Self {
        let mut roots = vec![cwd.to_path_buf()];
        roots.extend(extra_roots.into_iter().map(|root| cwd.join(root)));
        if include_tmp {
            roots.push(PathBuf::from("/tmp"));
            if let Some(tmpdir) = std::env::var_os("TMPDIR").filter(|dir| !dir.is_empty()) {
                roots.push(cwd.join(tmpdir));
            }
        }
        let mut unique: Vec<PathBuf> = Vec::with_capacity(roots.len());
        for root in roots {
            if !unique.contains(&root) {
                unique.push(root);
            }
        }
        SandboxPolicy {
            mode: SandboxMode::WorkspaceWrite,
            writable_roots: unique,
            network_access,
        }
    }

    /// No confinement: the command runs as deputy itself would.
    pub fn full_access() -> Self {
        SandboxPolicy {
            mode: SandboxMode::FullAccess,
            writable_roots: Vec::new(),
            network_access: true,
        }
    }

    /// The same policy with network access switched on or off.
    pub fn with_network_access(mut self, network_access: bool) -> Self {
        self.network_access = network_access;
        self
    }

    /// Whether the kernel is asked to confine the command at all.
    pub fn is_confined(&self) -> bool {
        self.mode != SandboxMode::FullAccess
    }

    /// Whether network sockets are refused to the command.
    pub fn network_disabled(&self) -> bool {
        self.is_confined() && !self.network_access
    }

    /// The writable roots the command may really write beneath: none unless `WorkspaceWrite`,
    /// and only those that exist, canonicalized.
    pub fn effective_writable_roots(&self) -> Vec<PathBuf> {
        if self.mode != SandboxMode::WorkspaceWrite {
            return Vec::new();
        }
        let mut roots: Vec<PathBuf> = Vec::new();
        for root in &self.writable_roots {
            if let Ok(real) = fs::canonicalize(root)
                && real.is_dir()
                && !roots.contains(&real)
            {
                roots.push(real);
            }
        }
        roots
    }

    /// Paths inside the writable roots that stay read-only: each root's `.git` (directory or
    /// file) and, for a worktree, the gitdir its `.git` file points to and that gitdir's common
    /// directory, when those lie inside a writable root. Read from the filesystem at call time.
    pub fn protected_subpaths(&self) -> Vec<PathBuf> {
        let roots = self.effective_writable_roots();
        let mut protected: Vec<PathBuf> = Vec::new();
        let mut protect = |path: PathBuf| {
            let inside = roots.iter().any(|root| path.starts_with(root));
            if inside && !protected.iter().any(|known| path.starts_with(known)) {
                protected.retain(|known| !known.starts_with(&path));
                protected.push(path);
            }
        };
        for root in &roots {
            let dot_git = root.join(".git");
            let Ok(meta) = fs::symlink_metadata(&dot_git) else {
                continue;
            };
            // A symlinked `.git` is protected where it leads, since that is what git writes to.
            let Ok(real_dot_git) = fs::canonicalize(&dot_git) else {
                continue;
            };
            if meta.is_symlink() {
                protect(dot_git.clone());
            }
            protect(real_dot_git.clone());
            if real_dot_git.is_file() {
                for gitdir in worktree_gitdirs(&real_dot_git, root) {
                    protect(gitdir);
                }
            }
        }
        protected
    }
}

/// The gitdir named by a worktree's `.git` file and that gitdir's `commondir`, canonicalized.
fn worktree_gitdirs(dot_git_file: &Path, worktree: &Path) -> Vec<PathBuf> {
    let Ok(text) = fs::read_to_string(dot_git_file) else {
        return Vec::new();
    };
    let Some(target) = text
        .lines()
        .find_map(|line| line.strip_prefix("gitdir:"))
        .map(str::trim)
        .filter(|target| !target.is_empty())
    else {
        return Vec::new();
    };
    let Ok(gitdir) = fs::canonicalize(worktree.join(target)) else {
        return Vec::new();
    };
    let mut dirs = Vec::new();
    if let Ok(common) = fs::read_to_string(gitdir.join("commondir"))
        && let Ok(common) = fs::canonicalize(gitdir.join(common.trim()))
    {
        dirs.push(common);
    }
    dirs.push(gitdir);
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn real(path: &Path) -> PathBuf {
        fs::canonicalize(path).expect("canonicalize")
    }

    #[test]
    fn workspace_write_includes_cwd_extra_roots_and_tmp() {
        let cwd = Path::new("/work/project");
        let policy = SandboxPolicy::workspace_write(
            cwd,
            [PathBuf::from("/opt/cache"), PathBuf::from("rel")],
            false,
            true,
        );
        assert_eq!(policy.mode, SandboxMode::WorkspaceWrite);
        assert_eq!(policy.writable_roots[0], cwd);
        assert!(policy.writable_roots.contains(&PathBuf::from("/opt/cache")));
        assert!(
            policy
                .writable_roots
                .contains(&PathBuf::from("/work/project/rel"))
        );
        assert!(policy.writable_roots.contains(&PathBuf::from("/tmp")));
        if let Some(tmpdir) = std::env::var_os("TMPDIR").filter(|d| !d.is_empty()) {
            assert!(policy.writable_roots.contains(&cwd.join(tmpdir)));
        }
        assert!(policy.network_disabled());
    }

    #[test]
    fn workspace_write_without_tmp_has_only_cwd_and_extras() {
        let policy =
            SandboxPolicy::workspace_write(Path::new("/w"), [PathBuf::from("/w")], true, false);
        assert_eq!(policy.writable_roots, vec![PathBuf::from("/w")]);
        assert!(!policy.network_disabled());
    }

    #[test]
    fn read_only_and_full_access_have_no_writable_roots() {
        let read_only = SandboxPolicy::read_only();
        assert!(read_only.is_confined());
        assert!(read_only.network_disabled());
        assert!(read_only.effective_writable_roots().is_empty());
        let full = SandboxPolicy::full_access();
        assert!(!full.is_confined());
        assert!(!full.network_disabled());
    }

    #[test]
    fn missing_roots_are_dropped_and_existing_ones_canonicalized() {
        let dir = tempfile::tempdir().expect("tempdir");
        let policy =
            SandboxPolicy::workspace_write(dir.path(), [dir.path().join("missing")], false, false);
        assert_eq!(policy.effective_writable_roots(), vec![real(dir.path())]);
    }

    #[test]
    fn git_directory_of_each_root_is_protected() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::create_dir(dir.path().join(".git")).expect("mkdir .git");
        let policy = SandboxPolicy::workspace_write(dir.path(), [], false, false);
        assert_eq!(
            policy.protected_subpaths(),
            vec![real(dir.path()).join(".git")]
        );
    }

    #[test]
    fn root_without_git_has_nothing_protected() {
        let dir = tempfile::tempdir().expect("tempdir");
        let policy = SandboxPolicy::workspace_write(dir.path(), [], false, false);
        assert!(policy.protected_subpaths().is_empty());
    }

    #[test]
    fn worktree_git_file_protects_itself_its_gitdir_and_commondir() {
        let dir = tempfile::tempdir().expect("tempdir");
        let main_git = dir.path().join("main/.git");
        let gitdir = main_git.join("worktrees/wt");
        fs::create_dir_all(&gitdir).expect("mkdir gitdir");
        fs::write(gitdir.join("commondir"), "../..\n").expect("write commondir");
        let worktree = dir.path().join("wt");
        fs::create_dir(&worktree).expect("mkdir worktree");
        fs::write(worktree.join(".git"), "gitdir: ../main/.git/worktrees/wt\n").expect("write");

        let policy = SandboxPolicy::workspace_write(&worktree, [dir.path().into()], false, false);
        let protected = policy.protected_subpaths();
        assert!(protected.contains(&real(&worktree).join(".git")));
        // The common dir contains the worktree's gitdir, so it alone covers both.
        assert!(protected.contains(&real(&main_git)));
        assert!(!protected.contains(&real(&gitdir)));
    }

    #[test]
    fn worktree_gitdir_outside_every_root_is_not_listed() {
        let outside = tempfile::tempdir().expect("tempdir");
        let gitdir = outside.path().join("repo/.git/worktrees/wt");
        fs::create_dir_all(&gitdir).expect("mkdir gitdir");
        let worktree = tempfile::tempdir().expect("tempdir");
        fs::write(
            worktree.path().join(".git"),
            format!("gitdir: {}\n", gitdir.display()),
        )
        .expect("write .git");
        let policy = SandboxPolicy::workspace_write(worktree.path(), [], false, false);
        assert_eq!(
            policy.protected_subpaths(),
            vec![real(worktree.path()).join(".git")]
        );
    }

    #[test]
    fn mode_spelling_round_trips() {
        for mode in [
            SandboxMode::ReadOnly,
            SandboxMode::WorkspaceWrite,
            SandboxMode::FullAccess,
        ] {
            assert_eq!(SandboxMode::parse(mode.as_str()), Some(mode));
        }
        assert_eq!(SandboxMode::parse("bogus"), None);
    }
}
