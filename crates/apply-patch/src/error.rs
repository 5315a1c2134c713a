//! Errors from planning and applying a patch, worded for the model that wrote it.

use std::io;
use std::path::PathBuf;

use crate::parser::ParseError;

/// Why a parsed patch could not be planned or applied.
///
/// Planning errors name files as written in the patch; errors while writing
/// name the absolute path and say whether the rollback succeeded.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// An `@@ text` anchor does not occur in the file (after earlier chunks).
    #[error(
        "Failed to find context '@@ {context}' in {} (chunk {chunk} of {total})",
        .path.display()
    )]
    ContextNotFound {
        /// File being updated, as written in the patch.
        path: PathBuf,
        /// The anchor text that was sought.
        context: String,
        /// 1-based index of the failing chunk.
        chunk: usize,
        /// Number of chunks in the hunk.
        total: usize,
    },
    /// A chunk's old lines do not occur in the file (after earlier chunks).
    #[error(
        "Failed to find expected lines {}{} (chunk {chunk} of {total}):{}{}",
        if *.at_end { "at the end of " } else { "in " },
        .path.display(),
        indented(.lines),
        if *.out_of_order {
            "\n(these lines do occur earlier in the file, before the previous chunk or \
             '@@' context line; chunks must be in file order)"
        } else {
            ""
        }
    )]
    LinesNotFound {
        /// File being updated, as written in the patch.
        path: PathBuf,
        /// 1-based index of the failing chunk.
        chunk: usize,
        /// Number of chunks in the hunk.
        total: usize,
        /// The chunk's old lines (context and `-` lines).
        lines: Vec<String>,
        /// The chunk was marked `*** End of File`.
        at_end: bool,
        /// The lines do occur, but before the end of the previous chunk.
        out_of_order: bool,
    },
    /// `*** Update File:` names a file that does not exist.
    #[error("{}: file to update does not exist", .path.display())]
    UpdateOfMissingFile {
        /// The file, as written in the patch.
        path: PathBuf,
    },
    /// `*** Delete File:` names a file that does not exist.
    #[error("{}: file to delete does not exist", .path.display())]
    DeleteOfMissingFile {
        /// The file, as written in the patch.
        path: PathBuf,
    },
    /// The file to update is not UTF-8 text, so lines cannot be matched.
    #[error("{}: file to update is not valid UTF-8 text", .path.display())]
    NotText {
        /// The file, as written in the patch.
        path: PathBuf,
    },
    /// Reading a file while planning failed.
    #[error("{}: failed to read: {source}", .path.display())]
    Read {
        /// The file, as written in the patch.
        path: PathBuf,
        /// The underlying error.
        source: io::Error,
    },
    /// A file no longer holds what the plan was computed from.
    #[error(
        "{}: file changed on disk after the patch was planned{}",
        .path.display(),
        rollback_note(.rollback_failures)
    )]
    ChangedSincePlanned {
        /// Absolute path of the file.
        path: PathBuf,
        /// Undo steps that failed; empty when everything was restored.
        rollback_failures: Vec<String>,
    },
    /// A symlink appeared on the way to a file (or a directory on it was moved) after its
    /// write target was chosen; nothing is written through it.
    #[error(
        "{}: not written: a directory or file on its path was replaced by a symbolic link, \
         or moved, after the patch was checked{}",
        .path.display(),
        rollback_note(.rollback_failures)
    )]
    Redirected {
        /// Absolute path of the file, as planned.
        path: PathBuf,
        /// Undo steps that failed; empty when everything was restored.
        rollback_failures: Vec<String>,
    },
    /// The caller gave no write target for a path the plan touches; nothing was written.
    #[error("{}: no write target was given for this path; no files were changed", .path.display())]
    NoWriteTarget {
        /// Absolute path of the file, as planned.
        path: PathBuf,
    },
    /// The patch deletes or moves a path that is a symlink; nothing was written.
    #[error(
        "{}: is a symbolic link; apply_patch does not delete or move symbolic links (use a \
         shell command); no files were changed",
        .path.display()
    )]
    RemovesSymlink {
        /// Absolute path of the link, as planned.
        path: PathBuf,
    },
    /// Writing, removing or creating a directory failed while applying.
    #[error(
        "{}: failed to {action}: {source}{}",
        .path.display(),
        rollback_note(.rollback_failures)
    )]
    Io {
        /// Absolute path that could not be changed.
        path: PathBuf,
        /// What was being done, e.g. "write" or "create directory".
        action: &'static str,
        /// The underlying error.
        source: io::Error,
        /// Undo steps that failed; empty when everything was restored.
        rollback_failures: Vec<String>,
    },
}

/// Any failure of [`crate::apply_patch`]: bad syntax or a patch that does not apply.
#[derive(Debug, thiserror::Error)]
pub enum PatchError {
    /// The text is not a valid patch.
    #[error("invalid patch: {0}")]
    Parse(#[from] ParseError),
    /// The patch is valid but could not be applied; nothing was changed.
    #[error(transparent)]
    Apply(#[from] ApplyError),
}

fn indented(lines: &[String]) -> String {
    lines.iter().map(|line| format!("\n    {line}")).collect()
}

fn rollback_note(failures: &[String]) -> String {
    if failures.is_empty() {
        "; no files were changed".to_owned()
    } else {
        format!(
            "; rolling back earlier changes also failed: {}",
            failures.join("; ")
        )
    }
}
