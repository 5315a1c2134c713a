//! Answering approval requests on the terminal, or refusing them without one.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::OnceLock;

use deputy_core::command_safety::escape_command_for_display;
use deputy_core::display::escape_line;
use deputy_protocol::{ApplyPatchApprovalRequestEvent, ExecApprovalRequestEvent, ReviewDecision};
use tokio::sync::mpsc;

const NO_TTY_REASON: &str = "deputy exec has no terminal to ask for approval on; \
pass `-a never` so that nothing asks (the sandbox mode alone then limits commands), \
or run it in a terminal";

/// Asks whether to run a command, shown as the exact argv that will run (shell-quoted, its
/// control and bidirectional characters escaped, like everything else the model wrote).
pub(crate) async fn ask_exec(req: &ExecApprovalRequestEvent) -> (ReviewDecision, Option<String>) {
    let command = escape_command_for_display(&req.command);
    let cwd = escape_line(&req.cwd.to_string_lossy()).into_owned();
    let mut question = format!("Run `{command}` in {cwd}?");
    if let Some(reason) = &req.reason {
        question.push_str(&format!("\n  reason: {}", escape_line(reason)));
    }
    ask(question).await
}

/// Asks whether to apply a patch.
pub(crate) async fn ask_patch(
    req: &ApplyPatchApprovalRequestEvent,
) -> (ReviewDecision, Option<String>) {
    let files: Vec<String> = req
        .changes
        .keys()
        .map(|p| escape_line(&p.to_string_lossy()).into_owned())
        .collect();
    let mut question = format!("Apply a patch to {}?", files.join(", "));
    if let Some(reason) = &req.reason {
        question.push_str(&format!("\n  reason: {}", escape_line(reason)));
    }
    ask(question).await
}

async fn ask(question: String) -> (ReviewDecision, Option<String>) {
    if !std::io::stdin().is_terminal() {
        // `eprintln!` panics when stderr is closed (`deputy exec … 2>&1 | head`).
        let _ = writeln!(
            std::io::stderr(),
            "approval needed: {question}\n  denied: {NO_TTY_REASON}"
        );
        return (ReviewDecision::Denied, Some(NO_TTY_REASON.to_string()));
    }
    let mut lines = terminal_lines().lock().await;
    loop {
        discard_earlier_input(&mut lines);
        let mut stderr = std::io::stderr();
        let _ = write!(stderr, "{question}\n[y]es / [a]lways / [n]o / [q]uit: ");
        let _ = stderr.flush();
        let Some(line) = lines.recv().await else {
            return (
                ReviewDecision::Denied,
                Some("the terminal closed before an answer".into()),
            );
        };
        if let Some(decision) = parse_answer(&line) {
            return (decision, None);
        }
    }
}

/// Drops whatever reached the terminal before the question is shown, so that only an answer
/// typed after it counts: keys typed ahead, and input a command pushed into the terminal
/// (which the sandbox refuses, but an unsandboxed command run by root could still try). Both
/// the terminal's pending input and lines the reader thread already took are dropped. A line
/// the thread reads from the terminal at this very moment may still slip through.
fn discard_earlier_input(lines: &mut mpsc::UnboundedReceiver<String>) {
    // SAFETY: tcflush only discards the pending input of the terminal on stdin.
    unsafe {
        libc::tcflush(libc::STDIN_FILENO, libc::TCIFLUSH);
    }
    while lines.try_recv().is_ok() {}
}

/// Lines typed on the terminal, read by one thread for the whole process. A
/// question can then be abandoned (its task aborted when the turn ends or the
/// request expires) without a blocked read stealing the next answer.
fn terminal_lines() -> &'static tokio::sync::Mutex<mpsc::UnboundedReceiver<String>> {
    static LINES: OnceLock<tokio::sync::Mutex<mpsc::UnboundedReceiver<String>>> = OnceLock::new();
    LINES.get_or_init(|| {
        let (tx, rx) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        tokio::sync::Mutex::new(rx)
    })
}

/// Maps a typed answer to a decision; `None` asks again.
fn parse_answer(line: &str) -> Option<ReviewDecision> {
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Some(ReviewDecision::Approved),
        "a" | "always" => Some(ReviewDecision::ApprovedForSession),
        "n" | "no" => Some(ReviewDecision::Denied),
        "q" | "quit" => Some(ReviewDecision::Abort),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_map_to_decisions() {
        assert_eq!(parse_answer("y\n"), Some(ReviewDecision::Approved));
        assert_eq!(
            parse_answer("Always"),
            Some(ReviewDecision::ApprovedForSession)
        );
        assert_eq!(parse_answer(" n "), Some(ReviewDecision::Denied));
        assert_eq!(parse_answer("q"), Some(ReviewDecision::Abort));
        assert_eq!(parse_answer("maybe"), None);
    }
}
