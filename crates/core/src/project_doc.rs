//! AGENTS.md: project instructions the model reads at the start of a thread.
//!
//! The files are, in order: the global `$DEPUTY_HOME/AGENTS.md`, then each
//! `AGENTS.md` from the repository root (the nearest directory above the cwd that
//! holds a `.git` file or directory) down to the cwd; outside a repository only the
//! cwd's own. Their texts are joined, capped at `project_doc_max_bytes`, and sent as
//! one user message framed the way Codex frames it, so models trained on Codex's
//! harness recognise it. A file that cannot be read or is not UTF-8 is left out with
//! a warning; it never fails the thread.
//!
//! The project's files are the model's to write (a command can `mkfifo AGENTS.md`, or link
//! it to `~/.ssh/id_rsa`), so they are read as [`crate::untrusted_file`] reads: beneath the
//! repository root (the cwd outside a repository), links followed only while they stay
//! there, anything but a regular file refused without waiting, and the whole read done off
//! the async runtime, given up after [`PROJECT_DOC_READ_TIMEOUT`]. The global file is the
//! user's own: a link there is followed wherever it leads, but it too must be a regular file.

// Runs on the async runtime: no blocking std calls (see clippy.toml).
#![cfg_attr(not(test), warn(clippy::disallowed_methods))]

use std::path::{Path, PathBuf};
use std::time::Duration;

use deputy_protocol::{ContentItem, ResponseItem};

use crate::config::Config;
use crate::untrusted_file::{self, Capped, UnreadableFile};

/// The file name looked for in each directory.
pub const PROJECT_DOC_FILENAME: &str = "AGENTS.md";

/// How the instructions message starts; the cwd follows.
pub const USER_INSTRUCTIONS_PREFIX: &str = "# AGENTS.md instructions for ";

/// Between the global instructions and the project's (Codex's separator).
const PROJECT_DOC_SEPARATOR: &str = "\n\n--- project-doc ---\n\n";

/// The instructions found for a thread, and what went wrong on the way.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ProjectDocs {
    /// The joined text of every file read (truncation noted at its end), if any.
    pub text: Option<String>,
    /// The files the text came from, in order.
    pub sources: Vec<PathBuf>,
    /// Files left out or cut short, for the user to see.
    pub warnings: Vec<String>,
}

impl ProjectDocs {
    /// The user message carrying the instructions, in Codex's framing, if there are any.
    pub fn message(&self, cwd: &Path) -> Option<ResponseItem> {
        let text = self.text.as_ref()?;
        Some(ResponseItem::Message {
            id: None,
            role: "user".into(),
            content: vec![ContentItem::InputText {
                text: format!(
                    "{USER_INSTRUCTIONS_PREFIX}{}\n\n<INSTRUCTIONS>\n{text}\n</INSTRUCTIONS>",
                    cwd.display()
                ),
            }],
        })
    }
}

/// Whether `item` is the AGENTS.md instructions message (part of a thread's initial context).
pub fn is_user_instructions(item: &ResponseItem) -> bool {
    matches!(item, ResponseItem::Message { role, .. } if role == "user")
        && item
            .message_text()
            .is_some_and(|text| text.starts_with(USER_INSTRUCTIONS_PREFIX))
}

/// How long reading the AGENTS.md files may take before the thread goes on without them.
pub const PROJECT_DOC_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Reads the AGENTS.md files for a thread configured by `config` on the blocking pool; a
/// read that takes longer than [`PROJECT_DOC_READ_TIMEOUT`] is given up with a warning.
pub async fn load_project_docs(config: &Config) -> ProjectDocs {
    let (home, cwd, max) = (
        config.deputy_home.clone(),
        config.cwd.clone(),
        config.project_doc_max_bytes,
    );
    let read = move || read_docs(&home, &cwd, max);
    match untrusted_file::off_runtime(PROJECT_DOC_READ_TIMEOUT, read).await {
        Some(docs) => docs,
        None => ProjectDocs {
            warnings: vec![format!(
                "AGENTS.md instructions: not read: the files could not be read within {} s",
                PROJECT_DOC_READ_TIMEOUT.as_secs()
            )],
            ..ProjectDocs::default()
        },
    }
}

fn read_docs(deputy_home: &Path, cwd: &Path, max: usize) -> ProjectDocs {
    let mut docs = ProjectDocs::default();
    if max == 0 {
        return docs;
    }
    let global = deputy_home.join(PROJECT_DOC_FILENAME);
    let (root, project) = project_doc_paths(cwd);
    let mut remaining = max;
    let mut global_text = None;
    let mut project_texts = Vec::new();
    let mut cut_short = None;
    for (is_global, path) in
        std::iter::once((true, global)).chain(project.into_iter().map(|p| (false, p)))
    {
        if remaining == 0 {
            // Everything after the cap is left out; the note names the first file cut.
            cut_short.get_or_insert(path);
            continue;
        }
        let opened = if is_global {
            untrusted_file::read_file(&path, true, remaining)
        } else {
            let relative = path.strip_prefix(&root).unwrap_or(&path);
            untrusted_file::read_beneath(&root, relative, remaining)
        };
        let read = match decode(opened) {
            Ok(Some(read)) => read,
            Ok(None) => continue,
            Err(why) => {
                docs.warnings.push(format!(
                    "AGENTS.md instructions: skipped {}: {why}",
                    path.display()
                ));
                continue;
            }
        };
        if read.truncated {
            cut_short.get_or_insert(path.clone());
        }
        if read.text.trim().is_empty() {
            continue;
        }
        remaining = remaining.saturating_sub(read.text.len());
        docs.sources.push(path);
        if is_global {
            global_text = Some(read.text);
        } else {
            project_texts.push(read.text);
        }
    }
    let mut text = global_text.unwrap_or_default();
    if !project_texts.is_empty() {
        if !text.is_empty() {
            text.push_str(PROJECT_DOC_SEPARATOR);
        }
        text.push_str(&project_texts.join("\n\n"));
    }
    if let Some(path) = cut_short {
        docs.warnings.push(format!(
            "AGENTS.md instructions exceed project_doc_max_bytes ({max} bytes): cut at {}",
            path.display()
        ));
        // The model is told too, so it does not take the cut text for the whole.
        if !text.is_empty() {
            text.push_str(&format!(
                "\n\n[AGENTS.md instructions truncated to {max} bytes]"
            ));
        }
    }
    if !text.is_empty() {
        docs.text = Some(text);
    }
    docs
}

/// The `AGENTS.md` paths to read for `cwd`, repository root first. Only existing
/// entries are listed (files, or links, which are followed when read while they stay
/// inside the repository).
pub fn discover_project_doc_paths(cwd: &Path) -> Vec<PathBuf> {
    project_doc_paths(cwd).1
}

/// The directory the project's files are read beneath — the repository root (the nearest
/// directory above the cwd holding `.git`), else the cwd — and the paths to read.
#[allow(
    clippy::disallowed_methods,
    reason = "blocking: called from `read_docs` on the blocking pool, and by sync callers"
)]
fn project_doc_paths(cwd: &Path) -> (PathBuf, Vec<PathBuf>) {
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let root = cwd
        .ancestors()
        .find(|dir| std::fs::symlink_metadata(dir.join(".git")).is_ok())
        .unwrap_or(&cwd);
    // From the root down to the cwd.
    let mut dirs: Vec<&Path> = cwd.ancestors().take_while(|dir| *dir != root).collect();
    dirs.push(root);
    dirs.reverse();
    let paths = dirs
        .into_iter()
        .map(|dir| dir.join(PROJECT_DOC_FILENAME))
        .filter(|path| std::fs::symlink_metadata(path).is_ok())
        .collect();
    (root.to_path_buf(), paths)
}

/// A file's text, at most `max` bytes of it.
struct CappedText {
    text: String,
    /// Whether the file goes on past `max`.
    truncated: bool,
}

/// A file's bytes as UTF-8 text. `Ok(None)`: the file is not there; `Err`: why it cannot
/// be used.
fn decode(opened: Result<Option<Capped>, UnreadableFile>) -> Result<Option<CappedText>, String> {
    let Capped { bytes, truncated } = match opened {
        Ok(Some(capped)) => capped,
        Ok(None) => return Ok(None),
        Err(err) => return Err(err.to_string()),
    };
    match String::from_utf8(bytes) {
        Ok(text) => Ok(Some(CappedText { text, truncated })),
        Err(err) => {
            let error = err.utf8_error();
            // The cap may split a character: keep what comes before it.
            if truncated && error.error_len().is_none() {
                let mut bytes = err.into_bytes();
                bytes.truncate(error.valid_up_to());
                let text = String::from_utf8(bytes).map_err(|e| e.to_string())?;
                return Ok(Some(CappedText { text, truncated }));
            }
            Err(format!(
                "not UTF-8 text (invalid byte at offset {})",
                error.valid_up_to()
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_project_docs(config: &Config) -> ProjectDocs {
        read_docs(
            &config.deputy_home,
            &config.cwd,
            config.project_doc_max_bytes,
        )
    }

    fn config(home: &Path, cwd: &Path, max: usize) -> Config {
        let mut layers = crate::config::ConfigLayers::new(home.to_path_buf());
        layers.overrides.cwd = Some(cwd.to_path_buf());
        let mut config = layers.load().expect("config");
        config.project_doc_max_bytes = max;
        config
    }

    #[test]
    fn a_repository_is_read_from_its_root_down_to_the_cwd() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().join("repo");
        let nested = root.join("a/b");
        std::fs::create_dir_all(&nested).expect("dirs");
        // A worktree's `.git` is a file.
        std::fs::write(root.join(".git"), "gitdir: elsewhere\n").expect("git");
        std::fs::write(tmp.path().join("AGENTS.md"), "above the root").expect("write");
        std::fs::write(root.join("AGENTS.md"), "root").expect("write");
        std::fs::write(root.join("a/b/AGENTS.md"), "nested").expect("write");
        let paths = discover_project_doc_paths(&nested);
        let root = root.canonicalize().expect("canonical");
        assert_eq!(
            paths,
            vec![root.join("AGENTS.md"), root.join("a/b/AGENTS.md")]
        );
    }

    #[test]
    fn outside_a_repository_only_the_cwd_counts() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let cwd = tmp.path().join("work");
        std::fs::create_dir_all(&cwd).expect("dirs");
        std::fs::write(tmp.path().join("AGENTS.md"), "parent").expect("write");
        assert!(discover_project_doc_paths(&cwd).is_empty());
        std::fs::write(cwd.join("AGENTS.md"), "mine").expect("write");
        assert_eq!(discover_project_doc_paths(&cwd).len(), 1);
    }

    #[test]
    fn global_then_project_joined_and_framed_like_codex() {
        let home = tempfile::tempdir().expect("tempdir");
        let work = tempfile::tempdir().expect("tempdir");
        std::fs::write(home.path().join("AGENTS.md"), "global rules").expect("write");
        std::fs::write(work.path().join("AGENTS.md"), "project rules").expect("write");
        let config = config(home.path(), work.path(), 1024);
        let docs = read_project_docs(&config);
        assert_eq!(
            docs.text.as_deref(),
            Some("global rules\n\n--- project-doc ---\n\nproject rules")
        );
        let message = docs.message(Path::new("/w")).expect("message");
        assert_eq!(
            message.message_text().as_deref(),
            Some(
                "# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nglobal rules\n\n--- project-doc ---\n\nproject rules\n</INSTRUCTIONS>"
            )
        );
        assert!(is_user_instructions(&message));
        assert!(!is_user_instructions(&ResponseItem::user_text("hello")));
    }

    #[test]
    fn the_cap_cuts_on_a_character_boundary_and_says_so() {
        let home = tempfile::tempdir().expect("tempdir");
        let work = tempfile::tempdir().expect("tempdir");
        // 'é' is two bytes: a cap of 5 falls inside the third one.
        std::fs::write(work.path().join("AGENTS.md"), "ééééé").expect("write");
        let docs = read_project_docs(&config(home.path(), work.path(), 5));
        assert_eq!(
            docs.text.as_deref(),
            Some("éé\n\n[AGENTS.md instructions truncated to 5 bytes]")
        );
        assert_eq!(docs.warnings.len(), 1, "{:?}", docs.warnings);
        assert!(docs.warnings[0].contains("project_doc_max_bytes"));
    }

    #[test]
    fn zero_bytes_reads_nothing() {
        let home = tempfile::tempdir().expect("tempdir");
        let work = tempfile::tempdir().expect("tempdir");
        std::fs::write(home.path().join("AGENTS.md"), "global").expect("write");
        std::fs::write(work.path().join("AGENTS.md"), "project").expect("write");
        assert_eq!(
            read_project_docs(&config(home.path(), work.path(), 0)),
            ProjectDocs::default()
        );
    }

    #[test]
    fn unusable_files_are_skipped_with_a_warning() {
        let home = tempfile::tempdir().expect("tempdir");
        let work = tempfile::tempdir().expect("tempdir");
        std::fs::write(home.path().join("AGENTS.md"), b"\xff\xfe binary").expect("write");
        std::fs::create_dir(work.path().join("AGENTS.md")).expect("a directory");
        let docs = read_project_docs(&config(home.path(), work.path(), 1024));
        assert_eq!(docs.text, None);
        assert_eq!(docs.warnings.len(), 2, "{:?}", docs.warnings);
        assert!(
            docs.warnings[0].contains("not UTF-8"),
            "{:?}",
            docs.warnings
        );
        assert!(
            docs.warnings[1].contains("not a regular file"),
            "{:?}",
            docs.warnings
        );
    }
}
