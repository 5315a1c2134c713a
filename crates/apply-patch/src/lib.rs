//! Parse and apply patches in the `*** Begin Patch` format used by coding
//! agents such as OpenAI Codex.
//!
//! A patch adds, deletes, updates and renames files:
//!
//! ```text
//! *** Begin Patch
//! *** Add File: hello.txt
//! +Hello, world!
//! *** Update File: src/main.rs
//! @@ fn main() {
//! -    println!("old");
//! +    println!("new");
//! *** Delete File: obsolete.txt
//! *** End Patch
//! ```
//!
//! Work happens in three steps, which callers may run separately — for
//! instance to show a user the diffs and ask for approval before writing:
//!
//! 1. [`parse_patch`] checks the syntax and returns a [`Patch`]; errors name
//!    the line and what was expected there.
//! 2. [`plan_patch`] reads the files and computes every new content and a
//!    [`unified_diff`], without writing anything. Chunks are located by their
//!    context lines (exactly, then ignoring trailing whitespace, then ignoring
//!    surrounding whitespace), each after the previous one; errors say which
//!    chunk of which file did not match and show the lines sought.
//! 3. [`apply_planned`] writes all changes or none: if a write fails midway,
//!    the files already changed are restored before the error is returned.
//!    Each path is written at a [`WriteTarget`] the caller chose — a root
//!    directory and a path beneath it — and reached from that root without
//!    following symlinks ([`beneath`]), so a path checked when the targets were
//!    chosen cannot be redirected elsewhere by a symlink swapped in afterwards.
//!    Each file is replaced by renaming a synced temporary file over it, so a
//!    kill at any instant leaves it whole, old or new. [`apply_journaled`] also
//!    keeps a journal on disk until the apply is over, from which [`recover`]
//!    rolls back (or, once committed, completes) an apply that a kill cut short.
//!
//! [`apply_patch`] runs all three. [`extract_patch_from_argv`] recognises a
//! shell command that is really a patch (`apply_patch <<'EOF' … EOF`).
//!
//! # Writing beneath roots
//!
//! A caller that confines writes (say, to a workspace) checks each planned
//! path, then gives [`apply_planned`] the root that allowed it and the path
//! resolved beneath that root, as it was when checked; a caller without such a
//! rule uses [`WriteTargets::resolved_now`]. Either way a directory swapped for
//! a symlink between the choice and the write fails the patch
//! ([`ApplyError::Redirected`]) and nothing is changed.
//!
//! Planning reads files through their paths as given, symlinks and all. That
//! read only decides what to write: applying re-reads each file beneath its
//! root and writes only if it holds exactly what was planned from, through the
//! same descriptor, so what is written always derives from the file actually
//! opened. (A plan computed from a file elsewhere fails as
//! [`ApplyError::ChangedSincePlanned`]; what planning can read, the commands a
//! caller runs can usually read as well.)
//!
//! # Example
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! std::fs::write(dir.path().join("greeting.txt"), "hello\nworld\n")?;
//!
//! let patch = "*** Begin Patch
//! *** Update File: greeting.txt
//! @@
//!  hello
//! -world
//! +there
//! *** End Patch";
//!
//! let changes = deputy_apply_patch::plan_patch(
//!     &deputy_apply_patch::parse_patch(patch)?,
//!     dir.path(),
//! )?;
//! let targets = deputy_apply_patch::WriteTargets::resolved_now(&changes)?;
//! let summary = deputy_apply_patch::apply_planned(&changes, &targets)?;
//!
//! assert_eq!(summary.to_string(), "Success. Updated the following files:\nM greeting.txt\n");
//! assert_eq!(std::fs::read_to_string(dir.path().join("greeting.txt"))?, "hello\nthere\n");
//! # Ok(())
//! # }
//! ```
//!
//! # Compatibility notes
//!
//! * `*** Add File:` over an existing file overwrites it, as Codex does.
//! * A chunk with only `+` lines is inserted after its `@@ text` anchor, or at
//!   the end of the file when it has none.
//! * Files keep their line endings: CRLF files stay CRLF, and a file without
//!   a final newline does not gain one.

pub mod beneath;
mod diff;
mod error;
mod heredoc;
mod invocation;
mod journal;
mod parser;
mod plan;
mod staging;
mod target;
mod transaction;
mod update;

use std::path::Path;

pub use diff::unified_diff;
pub use error::{ApplyError, PatchError};
pub use invocation::{ExtractedPatch, extract_patch_from_argv};
pub use journal::{FileOutcome, JournalError, JournalFile, Recovery, RecoveryAction, recover};
pub use parser::{Hunk, ParseError, Patch, UpdateChunk, parse_patch};
pub use plan::{PlannedChange, plan_patch};
pub use target::{WriteTarget, WriteTargets};
pub use transaction::{ApplySummary, apply_journaled, apply_planned};

/// Parses `text`, plans it against `cwd` and applies it all-or-nothing, each path
/// written where it resolves once planned ([`WriteTargets::resolved_now`]).
pub fn apply_patch(text: &str, cwd: &Path) -> Result<ApplySummary, PatchError> {
    let patch = parse_patch(text)?;
    let changes = plan_patch(&patch, cwd)?;
    let targets = WriteTargets::resolved_now(&changes)?;
    Ok(apply_planned(&changes, &targets)?)
}
