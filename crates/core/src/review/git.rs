//! The change a review looks at, computed with the git command line.
//!
//! The git CLI rather than a git library: it reads the repository exactly as the user's own
//! `git diff` does (config, attributes, worktrees, every object format), and it is already
//! on every machine a review makes sense on. Every call goes through [`Git`], which confines
//! it and keeps the repository's configured programs from running. Commits and branches
//! named by the user or the model are resolved to an object id first and always follow
//! `--end-of-options`, so that no name becomes an option (`--output=FILE`).

use std::path::{Path, PathBuf};

use deputy_protocol::ReviewTarget;

use super::git_command::{Git, failure, git_argv};

/// Most bytes of diff given to the reviewer; the file list is always whole.
pub const MAX_DIFF_BYTES: usize = 256 * 1024;

/// The empty tree of a SHA-1 repository: the base of a repository without commits.
const EMPTY_TREE_SHA1: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
/// The empty tree of a SHA-256 repository.
const EMPTY_TREE_SHA256: &str = "6ef19b41225c5369f1c104d45d8d85efa9b057b53b14b4b9b939dd74decc5321";

/// Untracked files diffed by one confined shell: one sandbox launch per batch, not per file.
const UNTRACKED_BATCH: usize = 64;

/// Why the change could not be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReviewGitError {
    /// The directory is not inside a git repository.
    #[error("`{}` is not inside a git repository; a review needs one", .0.display())]
    NotARepository(PathBuf),
    /// A commit or branch the review was asked about does not name a commit.
    #[error("`{0}` does not name a commit in this repository")]
    NotACommit(String),
    /// git cannot be confined here, so it was not run.
    #[error("a review runs git only inside the read-only sandbox, which is unavailable: {0}")]
    Sandbox(String),
    /// git could not be run or failed.
    #[error("git {args} failed: {message}")]
    Git {
        /// The git arguments.
        args: String,
        /// What git said.
        message: String,
    },
}

/// What the reviewer is given about the change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReviewMaterial {
    /// The repository's top directory.
    pub root: PathBuf,
    /// What to review, in words.
    pub description: String,
    /// `git diff --name-status` style list of changed files (whole, never cut).
    pub files: String,
    /// The unified diff, cut to [`MAX_DIFF_BYTES`] with a note when longer.
    pub diff: String,
}

/// Computes what `target` means in the repository around `cwd`, running git confined by
/// `sandbox_launcher` (deputy's own executable); without one, nothing runs and the review fails.
pub async fn collect(
    cwd: &Path,
    target: &ReviewTarget,
    sandbox_launcher: Option<&Path>,
) -> Result<ReviewMaterial, ReviewGitError> {
    let git = Git::confined(sandbox_launcher.map(Path::to_path_buf));
    collect_with(git, cwd, target).await
}

async fn collect_with(
    mut git: Git,
    cwd: &Path,
    target: &ReviewTarget,
) -> Result<ReviewMaterial, ReviewGitError> {
    let found = match git
        .run(
            cwd,
            &["rev-parse", "--show-toplevel", "--show-object-format"],
        )
        .await
    {
        Ok(out) => out,
        Err(ReviewGitError::Git { .. }) => {
            return Err(ReviewGitError::NotARepository(cwd.to_path_buf()));
        }
        Err(err) => return Err(err),
    };
    let found = found.trim_end_matches('\n');
    let (root, format) = found.rsplit_once('\n').unwrap_or((found, "sha1"));
    let root = PathBuf::from(root);
    let empty_tree = if format == "sha256" {
        EMPTY_TREE_SHA256
    } else {
        EMPTY_TREE_SHA1
    };
    git.blank_filter_drivers(&root).await?;
    let (description, files, diff) = match target {
        ReviewTarget::UncommittedChanges => uncommitted(&git, &root, empty_tree).await?,
        ReviewTarget::BaseBranch { branch } => against_base(&git, &root, branch).await?,
        ReviewTarget::Commit { sha, title } => {
            one_commit(&git, &root, sha, title.as_deref()).await?
        }
        ReviewTarget::Custom { instructions } => {
            (instructions.clone(), String::new(), String::new())
        }
    };
    Ok(ReviewMaterial {
        root,
        description,
        files,
        diff: cut(diff),
    })
}

/// A target's description, file list and diff.
type Change = (String, String, String);

/// Staged, unstaged and untracked changes against `HEAD` (the empty tree before any commit).
async fn uncommitted(git: &Git, root: &Path, empty_tree: &str) -> Result<Change, ReviewGitError> {
    let head = git
        .run(root, &["rev-parse", "--verify", "--quiet", "HEAD"])
        .await;
    let base = if head.is_ok() { "HEAD" } else { empty_tree };
    let mut files = git
        .run(root, &["diff", "--name-status", "--end-of-options", base])
        .await?;
    let mut diff = git.run(root, &["diff", "--end-of-options", base]).await?;
    let untracked = untracked(git, root).await?;
    for path in &untracked {
        files.push_str(&format!("A\t{path}\t(untracked)\n"));
    }
    for batch in untracked.chunks(UNTRACKED_BATCH) {
        // Past the limit the rest would be cut anyway.
        if diff.len() > MAX_DIFF_BYTES {
            break;
        }
        diff.push_str(&untracked_diffs(git, root, batch).await?);
    }
    let description = "the uncommitted changes (staged, unstaged and untracked files)";
    Ok((description.to_string(), files, diff))
}

/// The changes since the merge base of `HEAD` and `branch`.
async fn against_base(git: &Git, root: &Path, branch: &str) -> Result<Change, ReviewGitError> {
    let tip = resolve_commit(git, root, branch).await?;
    let merge_base = git
        .run(root, &["merge-base", "--end-of-options", "HEAD", &tip])
        .await?;
    let merge_base = merge_base.trim();
    Ok((
        format!(
            "the changes against the base branch `{branch}` (from the merge base {merge_base})"
        ),
        git.run(
            root,
            &["diff", "--name-status", "--end-of-options", merge_base],
        )
        .await?,
        git.run(root, &["diff", "--end-of-options", merge_base])
            .await?,
    ))
}

/// The change commit `sha` made, titled `title` or else by its subject.
async fn one_commit(
    git: &Git,
    root: &Path,
    sha: &str,
    title: Option<&str>,
) -> Result<Change, ReviewGitError> {
    let commit = resolve_commit(git, root, sha).await?;
    let title = match title {
        Some(title) => title.to_string(),
        None => {
            let subject = [
                "log",
                "-1",
                "--format=%s",
                "--end-of-options",
                &commit,
                "--",
            ];
            git.run(root, &subject).await?.trim().to_string()
        }
    };
    let show = |format: &'static str| {
        [
            "show",
            "--format=",
            format,
            "--end-of-options",
            commit.as_str(),
            "--",
        ]
    };
    Ok((
        format!("the commit {sha} (\"{title}\")"),
        git.run(root, &show("--name-status")).await?,
        git.run(root, &show("--patch")).await?,
    ))
}

/// The object id of the commit `name` (a sha, branch or any revision) names.
async fn resolve_commit(git: &Git, root: &Path, name: &str) -> Result<String, ReviewGitError> {
    // No sha or ref name starts with `-`: such a name is an option, whatever git version runs.
    if name.starts_with('-') {
        return Err(ReviewGitError::NotACommit(name.to_string()));
    }
    let revision = format!("{name}^{{commit}}");
    let args = [
        "rev-parse",
        "--verify",
        "--quiet",
        "--end-of-options",
        &revision,
    ];
    match git.run(root, &args).await {
        Ok(id) => Ok(id.trim().to_string()),
        Err(ReviewGitError::Git { .. }) => Err(ReviewGitError::NotACommit(name.to_string())),
        Err(err) => Err(err),
    }
}

/// The diff, or its first [`MAX_DIFF_BYTES`] (at a line end) with a note that it was cut.
fn cut(diff: String) -> String {
    if diff.len() <= MAX_DIFF_BYTES {
        return diff;
    }
    let mut end = MAX_DIFF_BYTES;
    while !diff.is_char_boundary(end) {
        end -= 1;
    }
    let end = diff[..end].rfind('\n').map_or(end, |at| at + 1);
    // No total: past the limit, untracked files are no longer diffed at all.
    format!(
        "{}\n[the diff was cut here, after {end} bytes; read the files or run git yourself for the rest]\n",
        &diff[..end],
    )
}

/// Untracked files git does not ignore, relative to the root.
async fn untracked(git: &Git, root: &Path) -> Result<Vec<String>, ReviewGitError> {
    let out = git
        .run(root, &["ls-files", "--others", "--exclude-standard", "-z"])
        .await?;
    Ok(out
        .split('\0')
        .filter(|path| !path.is_empty())
        .map(str::to_string)
        .collect())
}

/// Untracked files' contents as diffs from nothing, one confined shell running
/// `git diff --no-index` for each (the paths are its arguments, never its script).
async fn untracked_diffs(
    git: &Git,
    root: &Path,
    paths: &[String],
) -> Result<String, ReviewGitError> {
    let diff = git_argv(&["diff", "--no-index", "--", "/dev/null"]);
    // `--no-index` exits 1 when the files differ, which they always do here.
    let diff =
        shlex::try_join(diff.iter().map(String::as_str)).map_err(|e| ReviewGitError::Git {
            args: "diff --no-index".to_string(),
            message: e.to_string(),
        })?;
    let script = format!("for path in \"$@\"; do {diff} \"$path\"; [ $? -le 1 ] || exit 2; done");
    let mut argv = vec!["sh".to_string(), "-c".to_string(), script, "sh".to_string()];
    argv.extend(paths.iter().cloned());
    let out = git.output(root, &argv).await?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(failure(&["diff", "--no-index"], &out))
    }
}

#[cfg(test)]
mod tests {
    use deputy_test_support::HostileRepository;

    use super::*;

    #[test]
    fn a_long_diff_is_cut_at_a_line_with_a_note() {
        let line = "+".repeat(99) + "\n";
        let diff = line.repeat(MAX_DIFF_BYTES / 100 + 50);
        let cut = cut(diff.clone());
        assert!(cut.len() < diff.len());
        assert!(cut.contains("[the diff was cut here"));
        let kept = cut.split("\n[the diff").next().unwrap_or_default();
        assert!(kept.lines().all(|l| l.len() == 99));
    }

    #[tokio::test]
    async fn a_directory_outside_any_repository_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let err = collect_with(
            Git::unconfined(),
            dir.path(),
            &ReviewTarget::UncommittedChanges,
        )
        .await
        .unwrap_err();
        assert_eq!(
            err,
            ReviewGitError::NotARepository(dir.path().to_path_buf())
        );
        assert!(err.to_string().contains("not inside a git repository"));
    }

    /// A hostile repository in a fresh directory, its programs' marks in another.
    fn hostile() -> (tempfile::TempDir, HostileRepository) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("repo")).unwrap();
        let repo = HostileRepository::create(&dir.path().join("repo"), &dir.path().join("out"));
        (dir, repo)
    }

    #[tokio::test]
    async fn without_a_sandbox_launcher_no_git_runs_and_the_review_says_why() {
        let (_dir, repo) = hostile();
        let err = collect(&repo.root, &ReviewTarget::UncommittedChanges, None)
            .await
            .unwrap_err();
        assert!(matches!(err, ReviewGitError::Sandbox(_)), "{err:?}");
        assert!(err.to_string().contains("read-only sandbox"), "{err}");
        assert_eq!(repo.programs_that_ran(), Vec::<String>::new());
    }

    /// The second layer alone: unconfined, git still runs none of the configured programs.
    #[tokio::test]
    async fn configured_programs_do_not_run_even_unconfined() {
        let (_dir, repo) = hostile();
        repo.assert_git_runs_its_programs();
        let uncommitted = collect_with(
            Git::unconfined(),
            &repo.root,
            &ReviewTarget::UncommittedChanges,
        )
        .await
        .unwrap();
        assert!(uncommitted.diff.contains("+two"), "{}", uncommitted.diff);
        assert!(
            uncommitted.diff.contains("+new file"),
            "{}",
            uncommitted.diff
        );
        let commit = ReviewTarget::Commit {
            sha: repo.signed_commit.clone(),
            title: None,
        };
        let signed = collect_with(Git::unconfined(), &repo.root, &commit)
            .await
            .unwrap();
        assert!(
            signed.description.contains("signed work"),
            "{}",
            signed.description
        );
        assert!(signed.diff.contains("+signed"), "{}", signed.diff);
        assert_eq!(repo.programs_that_ran(), Vec::<String>::new());
    }

    #[tokio::test]
    async fn an_option_shaped_commit_or_branch_is_no_commit_and_writes_nothing() {
        let (dir, repo) = hostile();
        let victim = dir.path().join("victim.txt");
        std::fs::write(&victim, "keep me\n").unwrap();
        let option = format!("--output={}", victim.display());
        let targets = [
            ReviewTarget::Commit {
                sha: option.clone(),
                title: None,
            },
            ReviewTarget::BaseBranch {
                branch: option.clone(),
            },
        ];
        for target in &targets {
            let err = collect_with(Git::unconfined(), &repo.root, target)
                .await
                .unwrap_err();
            assert_eq!(err, ReviewGitError::NotACommit(option.clone()));
            assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me\n");
        }
    }
}
