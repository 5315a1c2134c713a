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

/// The confinement applied to one command: a mode, where it may write, which sockets it may open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// How much the command may change.
    pub mode: SandboxMode,
    /// Absolute directories the command may write beneath (only meaningful for `WorkspaceWrite`).
    pub writable_roots: Vec<PathBuf>,
    /// Whether the command may open network sockets (ignored for `FullAccess`, which always may).
    pub network_access: bool,
    /// Whether the command may create Unix sockets, through which it could drive any local
    /// daemon whose pathname socket it can reach (ignored for `FullAccess`).
    pub allow_unix_sockets: bool,
    /// A host directory to mount over `/tmp` for the command, where namespaces allow it, so
    /// that it neither sees nor reaches what others keep in the real `/tmp` (sockets above all).
    pub private_tmp: Option<PathBuf>,
}

/// Which temporary directories `workspace-write` adds to the writable roots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TmpRoots {
    /// `/tmp`.
    pub slash_tmp: bool,
    /// `$TMPDIR`, when set.
    pub tmpdir_env_var: bool,
}

impl TmpRoots {
    /// Both `/tmp` and `$TMPDIR`.
    pub const BOTH: TmpRoots = TmpRoots {
        slash_tmp: true,
        tmpdir_env_var: true,
    };
    /// Neither.
    pub const NONE: TmpRoots = TmpRoots {
        slash_tmp: false,
        tmpdir_env_var: false,
    };
}

impl SandboxPolicy {
    /// Read everywhere, write nowhere, no network, no Unix sockets.
    pub fn read_only() -> Self {
        SandboxPolicy {
            mode: SandboxMode::ReadOnly,
            writable_roots: Vec::new(),
            network_access: false,
            allow_unix_sockets: false,
            private_tmp: None,
        }
    }

    /// Write beneath `cwd`, `extra_roots` and the temporary directories `tmp` names.
    ///
    /// `cwd` is the session's working directory and must be absolute: relative extra roots
    /// and a relative `$TMPDIR` are taken relative to it, so every root is absolute from here
    /// on, whatever directory a command later runs in. Duplicates are dropped.
    pub fn workspace_write(
        cwd: &Path,
        extra_roots: impl IntoIterator<Item = PathBuf>,
        network_access: bool,
        tmp: TmpRoots,
    ) -> Self {
        let mut roots = vec![cwd.to_path_buf()];
        roots.extend(extra_roots.into_iter().map(|root| cwd.join(root)));
        if tmp.slash_tmp {
            roots.push(PathBuf::from("/tmp"));
        }
        if tmp.tmpdir_env_var
            && let Some(tmpdir) = std::env::var_os("TMPDIR").filter(|dir| !dir.is_empty())
        {
            roots.push(cwd.join(tmpdir));
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
            allow_unix_sockets: false,
            private_tmp: None,
        }
    }

    /// No confinement: the command runs as deputy itself would (still supervised).
    pub fn full_access() -> Self {
        SandboxPolicy {
            mode: SandboxMode::FullAccess,
            writable_roots: Vec::new(),
            network_access: true,
            allow_unix_sockets: true,
            private_tmp: None,
        }
    }

    /// The same policy with network access switched on or off.
    pub fn with_network_access(mut self, network_access: bool) -> Self {
        self.network_access = network_access;
        self
    }

    /// The same policy with Unix sockets allowed or refused.
    pub fn with_unix_sockets(mut self, allow_unix_sockets: bool) -> Self {
        self.allow_unix_sockets = allow_unix_sockets;
        self
    }

    /// The same policy with `dir` (absolute) mounted over `/tmp` where namespaces allow it.
    pub fn with_private_tmp(mut self, dir: Option<PathBuf>) -> Self {
        self.private_tmp = dir;
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

    /// Whether Unix sockets are refused to the command.
    pub fn unix_sockets_disabled(&self) -> bool {
        self.is_confined() && !self.allow_unix_sockets
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
            TmpRoots::BOTH,
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
        let policy = SandboxPolicy::workspace_write(
            Path::new("/w"),
            [PathBuf::from("/w")],
            true,
            TmpRoots::NONE,
        );
        assert_eq!(policy.writable_roots, vec![PathBuf::from("/w")]);
        assert!(!policy.network_disabled());
    }

    #[test]
    fn slash_tmp_and_tmpdir_are_chosen_independently() {
        let only_slash_tmp = TmpRoots {
            slash_tmp: true,
            tmpdir_env_var: false,
        };
        let policy = SandboxPolicy::workspace_write(Path::new("/w"), [], false, only_slash_tmp);
        assert_eq!(
            policy.writable_roots,
            vec![PathBuf::from("/w"), PathBuf::from("/tmp")]
        );
        let only_tmpdir = TmpRoots {
            slash_tmp: false,
            tmpdir_env_var: true,
        };
        let policy = SandboxPolicy::workspace_write(Path::new("/w"), [], false, only_tmpdir);
        let tmpdir = std::env::var_os("TMPDIR").filter(|d| !d.is_empty());
        let expected: Vec<PathBuf> = std::iter::once(PathBuf::from("/w"))
            .chain(tmpdir.map(|d| Path::new("/w").join(d)))
            .collect();
        assert_eq!(policy.writable_roots, expected);
    }

    #[test]
    fn read_only_and_full_access_have_no_writable_roots() {
        let read_only = SandboxPolicy::read_only();
        assert!(read_only.is_confined());
        assert!(read_only.network_disabled());
        assert!(read_only.effective_writable_roots().is_empty());
        assert!(read_only.unix_sockets_disabled());
        assert!(
            !read_only
                .clone()
                .with_unix_sockets(true)
                .unix_sockets_disabled()
        );
        let full = SandboxPolicy::full_access();
        assert!(!full.is_confined());
        assert!(!full.network_disabled());
        assert!(!full.unix_sockets_disabled());
    }

    #[test]
    fn missing_roots_are_dropped_and_existing_ones_canonicalized() {
        let dir = tempfile::tempdir().expect("tempdir");
        let policy = SandboxPolicy::workspace_write(
            dir.path(),
            [dir.path().join("missing")],
            false,
            TmpRoots::NONE,
        );
        assert_eq!(policy.effective_writable_roots(), vec![real(dir.path())]);
    }

    #[test]
    fn git_directory_of_each_root_is_protected() {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::create_dir(dir.path().join(".git")).expect("mkdir .git");
        let policy = SandboxPolicy::workspace_write(dir.path(), [], false, TmpRoots::NONE);
        assert_eq!(
            policy.protected_subpaths(),
            vec![real(dir.path()).join(".git")]
        );
    }

    #[test]
    fn root_without_git_has_nothing_protected() {
        let dir = tempfile::tempdir().expect("tempdir");
        let policy = SandboxPolicy::workspace_write(dir.path(), [], false, TmpRoots::NONE);
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

        let policy =
            SandboxPolicy::workspace_write(&worktree, [dir.path().into()], false, TmpRoots::NONE);
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
        let policy = SandboxPolicy::workspace_write(worktree.path(), [], false, TmpRoots::NONE);
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
