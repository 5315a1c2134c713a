//! The change a review looks at, computed with the git command line.
//!
//! The git CLI rather than a git library: it reads the repository exactly as the user's own
//! `git diff` does (config, attributes, worktrees, every object format), and it is already
//! on every machine a review makes sense on. Repository configuration must not run programs
//! outside the sandbox, so external diff drivers, textconv filters and fsmonitor hooks are
//! switched off for every call.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use deputy_protocol::ReviewTarget;

/// Most bytes of diff given to the reviewer; the file list is always whole.
pub const MAX_DIFF_BYTES: usize = 256 * 1024;

/// The hash of git's empty tree: the base of a repository without commits.
const EMPTY_TREE: &str = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";

/// Why the change could not be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReviewGitError {
    /// The directory is not inside a git repository.
    #[error("`{}` is not inside a git repository; a review needs one", .0.display())]
    NotARepository(PathBuf),
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

/// Computes what `target` means in the repository around `cwd`.
pub fn collect(cwd: &Path, target: &ReviewTarget) -> Result<ReviewMaterial, ReviewGitError> {
    let root = match git(cwd, &["rev-parse", "--show-toplevel"]) {
        Ok(out) => PathBuf::from(out.trim_end_matches('\n')),
        Err(ReviewGitError::Git { .. }) => {
            return Err(ReviewGitError::NotARepository(cwd.to_path_buf()));
        }
        Err(err) => return Err(err),
    };
    let (description, files, diff) = match target {
        ReviewTarget::UncommittedChanges => {
            let base = if git(&root, &["rev-parse", "--verify", "--quiet", "HEAD"]).is_ok() {
                "HEAD"
            } else {
                EMPTY_TREE
            };
            let mut files = git(&root, &["diff", "--name-status", base])?;
            let mut diff = git(&root, &["diff", base])?;
            for path in untracked(&root)? {
                files.push_str(&format!("A\t{path}\t(untracked)\n"));
                diff.push_str(&untracked_diff(&root, &path)?);
            }
            (
                "the uncommitted changes (staged, unstaged and untracked files)".to_string(),
                files,
                diff,
            )
        }
        ReviewTarget::BaseBranch { branch } => {
            let merge_base = git(&root, &["merge-base", "HEAD", branch])?;
            let merge_base = merge_base.trim();
            (
                format!(
                    "the changes against the base branch `{branch}` (from the merge base {merge_base})"
                ),
                git(&root, &["diff", "--name-status", merge_base])?,
                git(&root, &["diff", merge_base])?,
            )
        }
        ReviewTarget::Commit { sha, title } => {
            let title = match title {
                Some(title) => title.clone(),
                None => git(&root, &["log", "-1", "--format=%s", sha, "--"])?
                    .trim()
                    .to_string(),
            };
            (
                format!("the commit {sha} (\"{title}\")"),
                git(&root, &["show", "--format=", "--name-status", sha, "--"])?,
                git(&root, &["show", "--format=", "--patch", sha, "--"])?,
            )
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

/// The diff, or its first [`MAX_DIFF_BYTES`] (at a line end) with a note of what was left out.
fn cut(diff: String) -> String {
    if diff.len() <= MAX_DIFF_BYTES {
        return diff;
    }
    let mut end = MAX_DIFF_BYTES;
    while !diff.is_char_boundary(end) {
        end -= 1;
    }
    let end = diff[..end].rfind('\n').map_or(end, |at| at + 1);
    format!(
        "{}\n[the diff was cut here: {} of {} bytes shown; read the files or run git yourself for the rest]\n",
        &diff[..end],
        end,
        diff.len()
    )
}

/// Untracked files git does not ignore, relative to the root.
fn untracked(root: &Path) -> Result<Vec<String>, ReviewGitError> {
    let out = git(root, &["ls-files", "--others", "--exclude-standard", "-z"])?;
    Ok(out
        .split('\0')
        .filter(|path| !path.is_empty())
        .map(str::to_string)
        .collect())
}

/// An untracked file's content as a diff from nothing.
fn untracked_diff(root: &Path, path: &str) -> Result<String, ReviewGitError> {
    // `--no-index` exits 1 when the files differ, which they always do here.
    let out = run(root, &["diff", "--no-index", "--", "/dev/null", path])?;
    match out.status.code() {
        Some(0 | 1) => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
        _ => Err(failure(&["diff", "--no-index", path], &out)),
    }
}

/// Runs git and returns its stdout, or an error with its stderr.
fn git(dir: &Path, args: &[&str]) -> Result<String, ReviewGitError> {
    let out = run(dir, args)?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(failure(args, &out))
    }
}

fn run(dir: &Path, args: &[&str]) -> Result<Output, ReviewGitError> {
    let (subcommand, rest) = args.split_first().unwrap_or((&"", &[]));
    Command::new("git")
        .current_dir(dir)
        // Nothing the repository configures may run a program of its own.
        .args(["-c", "core.fsmonitor=false", "-c", "core.quotepath=off"])
        .arg(subcommand)
        .args(extra_diff_flags(subcommand))
        .args(rest)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env_remove("GIT_EXTERNAL_DIFF")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| ReviewGitError::Git {
            args: args.join(" "),
            message: e.to_string(),
        })
}

/// Flags that keep diff-producing commands plain: no colour, no external drivers or filters.
fn extra_diff_flags(subcommand: &str) -> &'static [&'static str] {
    match subcommand {
        "diff" | "show" => &["--no-color", "--no-ext-diff", "--no-textconv"],
        _ => &[],
    }
}

fn failure(args: &[&str], out: &Output) -> ReviewGitError {
    ReviewGitError::Git {
        args: args.join(" "),
        message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
    }
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn a_directory_outside_any_repository_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let err = collect(dir.path(), &ReviewTarget::UncommittedChanges).unwrap_err();
        assert_eq!(
            err,
            ReviewGitError::NotARepository(dir.path().to_path_buf())
        );
        assert!(err.to_string().contains("not inside a git repository"));
    }
}
