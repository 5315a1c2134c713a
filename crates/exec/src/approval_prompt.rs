//! Answering approval requests on the terminal, or refusing them without one.
//!
//! The terminal is stdin when it is one; when the task was piped in (`echo task | deputy
//! exec`) and stderr is a terminal, the process's own terminal (`/dev/tty`). With neither,
//! nobody can answer.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use deputy_core::command_safety::escape_command_for_display;
use deputy_core::display::{escape_line, escape_text};
use deputy_protocol::{
    ApplyPatchApprovalRequestEvent, ApprovalDecision, ExecApprovalRequestEvent, FileChange,
    FormAction, McpElicitationRequest, McpToolCallApprovalRequest, Reply, UserInputRequest,
};
use tokio::sync::mpsc;

use crate::form;

const NO_TTY_REASON: &str = "deputy exec has no terminal to ask for approval on; \
pass `-a never` so that nothing asks, or run it in a terminal";

/// Lines of a patch shown before asking whether to apply it.
const PREVIEW_LINES: usize = 40;

/// Whether approval questions can be asked: there is a terminal to answer them on.
pub(crate) fn can_ask() -> bool {
    terminal().is_some()
}

/// Asks whether to run a command, shown as the exact argv that will run (shell-quoted, its
/// control and bidirectional characters escaped, like everything else the model wrote).
pub(crate) async fn ask_exec(req: &ExecApprovalRequestEvent) -> Reply {
    let command = escape_command_for_display(&req.command);
    let cwd = escape_line(&req.cwd.to_string_lossy()).into_owned();
    let mut question = format!("Run `{command}` in {cwd}?");
    if let Some(reason) = &req.reason {
        question.push_str(&format!("\n  reason: {}", escape_line(reason)));
    }
    ask(question).await
}

/// Asks whether to apply a patch, showing what it changes first.
pub(crate) async fn ask_patch(req: &ApplyPatchApprovalRequestEvent, cwd: Option<&Path>) -> Reply {
    let mut question = patch_preview(&req.changes, cwd);
    let files: Vec<String> = req
        .changes
        .keys()
        .map(|path| escape_line(&shown(path, cwd).to_string_lossy()).into_owned())
        .collect();
    question.push_str(&format!("Apply this patch to {}?", files.join(", ")));
    if let Some(reason) = &req.reason {
        question.push_str(&format!("\n  reason: {}", escape_line(reason)));
    }
    ask(question).await
}

/// Most characters of an MCP tool call's arguments the question shows.
const SHOWN_ARGUMENTS: usize = 400;

/// Asks whether to call a tool of an MCP server, showing its arguments.
pub(crate) async fn ask_mcp_tool_call(req: &McpToolCallApprovalRequest) -> Reply {
    let mut question = format!(
        "Call the tool `{}` of the MCP server `{}`?",
        escape_line(&req.tool),
        escape_line(&req.server)
    );
    if let Some(arguments) = &req.arguments {
        let text = arguments.to_string();
        let shown: String = text.chars().take(SHOWN_ARGUMENTS).collect();
        let more = if shown.len() < text.len() { " …" } else { "" };
        question.push_str(&format!("\n  arguments: {}{more}", escape_line(&shown)));
    }
    if let Some(reason) = &req.reason {
        question.push_str(&format!("\n  reason: {}", escape_line(reason)));
    }
    ask(question).await
}

/// Fills in an MCP server's form on the terminal: first whether to fill it in, decline it
/// or cancel it, then each field in turn, asked again until the answer fits its schema. An
/// empty answer takes the field's default or leaves an optional field out; the terminal
/// closing cancels. Without a terminal the form is shown and declined, as nobody can
/// answer it.
pub(crate) async fn ask_form(req: &McpElicitationRequest) -> Reply {
    let heading = format!(
        "The MCP server `{}` asks you to fill in a form:\n  {}",
        escape_line(&req.server),
        escape_line(&req.message)
    );
    let declined = |why: &str| {
        let _ = writeln!(std::io::stderr(), "{heading}\n  (declined: {why})");
        form_reply(FormAction::Decline, None)
    };
    let Some(terminal) = terminal() else {
        return declined("deputy exec has no terminal to fill it in on");
    };
    let fields = match form::fields(&req.requested_schema) {
        Ok(fields) => fields,
        Err(why) => return declined(&why),
    };
    if let Some(field) = fields
        .iter()
        .find(|field| field.required && field.kind == form::Kind::Unsupported)
    {
        return declined(&format!(
            "its required field `{}` is of a kind deputy exec cannot answer",
            escape_line(&field.name)
        ));
    }
    let mut lines = terminal.lines.lock().await;
    let required = fields.iter().filter(|field| field.required).count();
    let gate = format!(
        "{heading}\n  {} fields, {required} of them required\n[f]ill it in / [d]ecline / [c]ancel: ",
        fields.len()
    );
    loop {
        let Some(line) = ask_line(terminal.fd, &mut lines, &gate).await else {
            return form_reply(FormAction::Cancel, None);
        };
        match line.trim().to_ascii_lowercase().as_str() {
            "f" | "fill" => break,
            "d" | "decline" => return form_reply(FormAction::Decline, None),
            "c" | "cancel" => return form_reply(FormAction::Cancel, None),
            _ => {}
        }
    }
    let mut answers = Vec::new();
    for (n, field) in fields.iter().enumerate() {
        let mut question = format!("[{}/{}] {}", n + 1, fields.len(), field_label(field));
        if field.kind == form::Kind::Unsupported {
            let _ = writeln!(
                std::io::stderr(),
                "{question}: left out (deputy exec cannot answer this kind of field)"
            );
            continue;
        }
        for (n, option) in field.options().iter().enumerate() {
            let value = escape_line(&form::shown(&option.value)).into_owned();
            question.push_str(&match &option.label {
                Some(label) => format!("\n  {}. {} ({value})", n + 1, escape_line(label)),
                None => format!("\n  {}. {value}", n + 1),
            });
        }
        question.push_str(&format!("\n  {}: ", escape_line(&field.hint())));
        loop {
            let Some(line) = ask_line(terminal.fd, &mut lines, &question).await else {
                return form_reply(FormAction::Cancel, None);
            };
            match field.answer(&line) {
                Ok(value) => {
                    answers.extend(value.map(|value| (field.name.clone(), value)));
                    break;
                }
                Err(why) => {
                    let _ = writeln!(std::io::stderr(), "  {}", escape_line(&why));
                }
            }
        }
    }
    form_reply(FormAction::Accept, Some(form::content(answers)))
}

/// A field as the question names it: its title and name, then its description.
fn field_label(field: &form::Field) -> String {
    let name = escape_line(&field.name);
    let mut label = match &field.title {
        Some(title) => format!("{} ({name})", escape_line(title)),
        None => name.into_owned(),
    };
    if let Some(description) = &field.description {
        label.push_str(&format!(" — {}", escape_line(description)));
    }
    label
}

fn form_reply(action: FormAction, content: Option<serde_json::Value>) -> Reply {
    Reply::Form { action, content }
}

/// Asks the model's questions one by one: an option by its number, or an answer in words;
/// an empty line skips the question.
pub(crate) async fn ask_user_input(req: &UserInputRequest) -> Reply {
    let Some(terminal) = terminal() else {
        return Reply::denied("deputy exec has no terminal to ask the user on");
    };
    let mut lines = terminal.lines.lock().await;
    let mut answers = BTreeMap::new();
    for question in &req.questions {
        let mut text = format!(
            "{}: {}\n",
            escape_line(&question.header),
            escape_line(&question.question)
        );
        for (n, option) in question.options.iter().enumerate() {
            text.push_str(&format!(
                "  {}. {} — {}\n",
                n + 1,
                escape_line(&option.label),
                escape_line(&option.description)
            ));
        }
        text.push_str(if question.options.is_empty() {
            "answer (empty to skip): "
        } else {
            "number or answer (empty to skip): "
        });
        let Some(line) = ask_line(terminal.fd, &mut lines, &text).await else {
            break;
        };
        let line = line.trim();
        let picked = line
            .parse::<usize>()
            .ok()
            .and_then(|n| n.checked_sub(1))
            .and_then(|n| question.options.get(n));
        let answer = picked.map_or_else(|| line.to_string(), |option| option.label.clone());
        if !answer.is_empty() {
            answers.insert(question.id.clone(), answer);
        }
    }
    if answers.is_empty() {
        Reply::denied("the user answered none of the questions")
    } else {
        Reply::Answers { answers }
    }
}

/// The patch as a reader checks it: each file's header, then its diff (an added file's
/// lines with `+`), at most [`PREVIEW_LINES`] lines in all, with a count of the rest.
fn patch_preview(changes: &BTreeMap<PathBuf, FileChange>, cwd: Option<&Path>) -> String {
    let mut lines = Vec::new();
    for (path, change) in changes {
        let path = escape_line(&shown(path, cwd).to_string_lossy()).into_owned();
        match change {
            FileChange::Add { content } => {
                lines.push(format!("+++ {path} (new file)"));
                lines.extend(content.lines().map(|line| format!("+{line}")));
            }
            FileChange::Delete { content } => {
                lines.push(format!(
                    "--- {path} (deleted, {} lines)",
                    content.lines().count()
                ));
            }
            FileChange::Update {
                unified_diff,
                move_path,
            } => {
                match move_path {
                    Some(to) => lines.push(format!(
                        "*** {path} → {}",
                        escape_line(&shown(to, cwd).to_string_lossy())
                    )),
                    None => lines.push(format!("*** {path}")),
                }
                lines.extend(
                    unified_diff
                        .lines()
                        .filter(|line| !line.starts_with("---") && !line.starts_with("+++"))
                        .map(str::to_string),
                );
            }
        }
    }
    let hidden = lines.len().saturating_sub(PREVIEW_LINES);
    let mut preview: String = lines
        .iter()
        .take(PREVIEW_LINES)
        .map(|line| format!("  {}\n", escape_text(line)))
        .collect();
    if hidden > 0 {
        preview.push_str(&format!("  … {hidden} more lines\n"));
    }
    preview
}

/// `path` relative to the session's cwd when it lies inside it.
fn shown<'a>(path: &'a Path, cwd: Option<&Path>) -> &'a Path {
    cwd.and_then(|cwd| path.strip_prefix(cwd).ok())
        .filter(|relative| !relative.as_os_str().is_empty())
        .unwrap_or(path)
}

async fn ask(question: String) -> Reply {
    // Said once, by the engine's warning that the action was not approved.
    let Some(terminal) = terminal() else {
        return Reply::denied(NO_TTY_REASON);
    };
    let mut lines = terminal.lines.lock().await;
    let question = format!("{question}\n[y]es / [a]lways / [n]o / [q]uit: ");
    loop {
        let Some(line) = ask_line(terminal.fd, &mut lines, &question).await else {
            return Reply::denied("the terminal closed before an answer");
        };
        if let Some(decision) = parse_answer(&line) {
            return Reply::decided(decision);
        }
    }
}

/// Shows `question` (after dropping what was typed before it) and waits for the line
/// typed in answer; `None` when the terminal closed.
async fn ask_line(
    fd: RawFd,
    lines: &mut mpsc::UnboundedReceiver<String>,
    question: &str,
) -> Option<String> {
    discard_earlier_input(fd, lines);
    let mut stderr = std::io::stderr();
    let _ = write!(stderr, "{question}");
    let _ = stderr.flush();
    lines.recv().await
}

/// Drops whatever reached the terminal before the question is shown, so that only an answer
/// typed after it counts: keys typed ahead, and input a command pushed into the terminal
/// (which the sandbox refuses, but an unsandboxed command run by root could still try). Both
/// the terminal's pending input and lines the reader thread already took are dropped. A line
/// the thread reads from the terminal at this very moment may still slip through.
fn discard_earlier_input(fd: RawFd, lines: &mut mpsc::UnboundedReceiver<String>) {
    // SAFETY: tcflush only discards the pending input of the terminal open on `fd`,
    // which stays open for the whole process.
    unsafe {
        libc::tcflush(fd, libc::TCIFLUSH);
    }
    while lines.try_recv().is_ok() {}
}

/// The terminal answers come from, with the lines typed on it: one thread reads them for
/// the whole process, so a question can be abandoned (its task aborted when the turn ends
/// or the request expires) without a blocked read stealing the next answer.
struct Terminal {
    fd: RawFd,
    lines: tokio::sync::Mutex<mpsc::UnboundedReceiver<String>>,
}

/// Stdin when it is a terminal; else `/dev/tty` when stderr is a terminal (someone is
/// watching the run whose task came through a pipe); else none.
fn terminal() -> Option<&'static Terminal> {
    static TERMINAL: OnceLock<Option<Terminal>> = OnceLock::new();
    TERMINAL
        .get_or_init(|| {
            if std::io::stdin().is_terminal() {
                return Some(Terminal::reading(libc::STDIN_FILENO, || {
                    std::io::stdin().lock()
                }));
            }
            if !std::io::stderr().is_terminal() {
                return None;
            }
            let tty = File::open("/dev/tty").ok()?;
            let fd = tty.as_raw_fd();
            // The file moves into the reader thread, which keeps it open for the process.
            Some(Terminal::reading(fd, move || BufReader::new(tty)))
        })
        .as_ref()
}

impl Terminal {
    /// Reads lines from what `open` gives, on a thread of its own, from now on.
    fn reading<R: BufRead>(fd: RawFd, open: impl FnOnce() -> R + Send + 'static) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in open().lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            fd,
            lines: tokio::sync::Mutex::new(rx),
        }
    }
}

/// Maps a typed answer to a decision; `None` asks again.
fn parse_answer(line: &str) -> Option<ApprovalDecision> {
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Some(ApprovalDecision::Approved),
        "a" | "always" => Some(ApprovalDecision::ApprovedForSession),
        "n" | "no" => Some(ApprovalDecision::Denied),
        "q" | "quit" => Some(ApprovalDecision::Abort),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_map_to_decisions() {
        assert_eq!(parse_answer("y\n"), Some(ApprovalDecision::Approved));
        assert_eq!(
            parse_answer("Always"),
            Some(ApprovalDecision::ApprovedForSession)
        );
        assert_eq!(parse_answer(" n "), Some(ApprovalDecision::Denied));
        assert_eq!(parse_answer("q"), Some(ApprovalDecision::Abort));
        assert_eq!(parse_answer("maybe"), None);
    }

    #[test]
    fn a_patch_is_previewed_relative_to_the_cwd_cut_with_a_count_and_escaped() {
        let cwd = Path::new("/w");
        let long: String = (1..=50).map(|n| format!("line {n}\n")).collect();
        let changes = BTreeMap::from([
            (
                PathBuf::from("/w/a.txt"),
                FileChange::Add {
                    content: "first\x1b[2Jsecond\n".into(),
                },
            ),
            (
                PathBuf::from("/w/b.txt"),
                FileChange::Update {
                    unified_diff: "--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-old\n+new\n".into(),
                    move_path: None,
                },
            ),
            (PathBuf::from("/w/c.txt"), FileChange::Add { content: long }),
        ]);
        let preview = patch_preview(&changes, Some(cwd));
        let lines: Vec<&str> = preview.lines().collect();
        assert_eq!(
            lines[..7],
            [
                "  +++ a.txt (new file)",
                "  +first\\e[2Jsecond",
                "  *** b.txt",
                "  @@ -1 +1 @@",
                "  -old",
                "  +new",
                "  +++ c.txt (new file)",
            ]
        );
        assert_eq!(lines.len(), PREVIEW_LINES + 1);
        // 7 lines before c.txt's content, 50 of it: 57 in all, 40 shown.
        assert_eq!(lines[PREVIEW_LINES], "  … 17 more lines");
    }
}
