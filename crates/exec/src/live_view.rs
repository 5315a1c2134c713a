//! The human view of a turn, written to stderr: what the model thinks and says, each
//! command with its exit status (and the tail of its output when it fails), each patch
//! with its files and line counts (and its error when it fails), plan updates, and a
//! spinner while deputy waits. The final answer is left to stdout.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anstyle::{AnsiColor, Style};
use deputy_protocol::{
    ApprovalDecision, CommandExecutionItem, CommandExecutionStatus, ContextCompactionStatus,
    FileChange, FileChangeItem, PatchApplyStatus, PlanUpdateItem, SandboxMode, StepStatus,
    ThreadEvent, ThreadEventMsg, ThreadItem, TurnAbortReason,
};

use crate::spinner::Spinner;
use deputy_core::command_safety::command_line;
use deputy_core::display::{escape_line, escape_text};

/// Lines of a failed command's output shown under it.
const TAIL_LINES: usize = 10;
/// Characters of one shown output line, and of a command in the spinner.
const LINE_CHARS: usize = 200;
const SPINNER_COMMAND_CHARS: usize = 60;

const BOLD: Style = Style::new().bold();
const DIM: Style = Style::new().dimmed();
const THINKING: Style = Style::new().dimmed().italic();
const GREEN: Style = Style::new().fg_color(Some(anstyle::Color::Ansi(AnsiColor::Green)));
const RED: Style = Style::new().fg_color(Some(anstyle::Color::Ansi(AnsiColor::Red)));
const YELLOW: Style = Style::new().fg_color(Some(anstyle::Color::Ansi(AnsiColor::Yellow)));
const CYAN: Style = Style::new().fg_color(Some(anstyle::Color::Ansi(AnsiColor::Cyan)));

/// Turns a thread's events into styled lines for stderr (the caller strips the styles
/// where colour is off) and keeps the spinner saying what is being waited for.
pub(crate) struct LiveView {
    spinner: Spinner,
    /// The session's working directory; paths under it are shown relative to it.
    cwd: Option<PathBuf>,
    /// The session's sandbox mode, for the hint after a refused edit.
    sandbox: Option<SandboxMode>,
    /// How the user answered the questions about items, by item id.
    answers: HashMap<String, ApprovalDecision>,
    /// Whether the hint about what lets deputy edit files was shown (it is shown once).
    hinted: bool,
    /// The model's latest message, held back: if the turn ends with it, it is the
    /// answer, which goes to stdout only.
    pending_message: Option<String>,
    total_tokens: Option<u64>,
}

impl LiveView {
    /// A view driving `spinner`.
    pub(crate) fn new(spinner: Spinner) -> Self {
        Self {
            spinner,
            cwd: None,
            sandbox: None,
            answers: HashMap::new(),
            hinted: false,
            pending_message: None,
            total_tokens: None,
        }
    }

    /// The lines `event` adds to the view (often none), styled.
    pub(crate) fn render(&mut self, event: &ThreadEvent) -> String {
        let mut out = String::new();
        match &event.msg {
            ThreadEventMsg::SessionConfigured(c) => {
                self.cwd = Some(c.cwd.clone());
                self.sandbox = Some(c.sandbox_policy.mode());
                let _ = writeln!(
                    out,
                    "{BOLD}deputy{BOLD:#}{DIM} · model {} ({}) · sandbox {} · approvals {} · {}{DIM:#}",
                    c.model,
                    c.model_provider_id,
                    c.sandbox_policy.mode().as_str(),
                    c.approval_policy.as_str(),
                    c.cwd.display()
                );
            }
            ThreadEventMsg::TurnStarted(_) => {
                self.total_tokens = None;
                self.spinner.set("thinking");
            }
            ThreadEventMsg::ItemStarted(e) => self.item_started(&e.item, &mut out),
            ThreadEventMsg::ItemUpdated(e) => self.item_updated(&e.item, &mut out),
            ThreadEventMsg::ItemCompleted(e) => self.item_completed(&e.item, &mut out),
            ThreadEventMsg::AgentMessageDelta(_) => self.spinner.set("writing"),
            ThreadEventMsg::ReasoningDelta(_) => self.spinner.set("thinking"),
            ThreadEventMsg::TokenCount(t) => {
                if let Some(info) = &t.info {
                    self.total_tokens = Some(info.total_token_usage.total_tokens);
                }
            }
            ThreadEventMsg::StreamError(e) => {
                self.flush_message(&mut out);
                let _ = writeln!(
                    out,
                    "{YELLOW}retrying:{YELLOW:#} {}",
                    escape_text(&e.message)
                );
            }
            ThreadEventMsg::Warning(w) => {
                let _ = writeln!(
                    out,
                    "{YELLOW}warning:{YELLOW:#} {}",
                    escape_text(&w.message)
                );
            }
            ThreadEventMsg::TurnComplete(_) => {
                self.spinner.clear();
                // The answer goes to stdout; here only what came before it.
                self.pending_message = None;
                if let Some(total) = self.total_tokens {
                    let _ = writeln!(out, "{DIM}tokens used: {total}{DIM:#}");
                }
            }
            ThreadEventMsg::TurnAborted(aborted) => {
                self.spinner.clear();
                self.flush_message(&mut out);
                let why = match aborted.reason {
                    TurnAbortReason::Interrupted => "interrupted",
                    TurnAbortReason::Aborted => "aborted by the user",
                };
                let _ = writeln!(out, "{YELLOW}turn stopped:{YELLOW:#} {why}");
            }
            ThreadEventMsg::TurnFailed(e) => {
                self.spinner.clear();
                self.flush_message(&mut out);
                let _ = writeln!(
                    out,
                    "{RED}{BOLD}error:{BOLD:#}{RED:#} {}",
                    escape_text(&e.message)
                );
            }
            // Output is shown when a command ends; questions are asked by the approval
            // prompt; the diff is shown per patch; the thread's end adds nothing.
            ThreadEventMsg::ApprovalResolved(resolved) => {
                self.answers
                    .insert(resolved.item_id.clone(), resolved.decision);
            }
            ThreadEventMsg::CommandOutputDelta(_)
            | ThreadEventMsg::QuestionAsked(_)
            | ThreadEventMsg::TurnDiff(_)
            | ThreadEventMsg::ShutdownComplete => {}
            // A server that fails to start is also a warning; a ready one says nothing.
            ThreadEventMsg::McpStartupUpdate(update) => {
                if update.status == deputy_protocol::McpStartupStatus::Starting {
                    self.spinner.set(&format!(
                        "starting MCP server {}",
                        escape_line(&update.server)
                    ));
                }
            }
            ThreadEventMsg::McpStartupComplete(_) => self.spinner.clear(),
        }
        out
    }

    fn item_started(&mut self, item: &ThreadItem, out: &mut String) {
        match item {
            ThreadItem::CommandExecution(command) => {
                self.spinner.set(&format!(
                    "running {}",
                    shorten(
                        &escape_line(&command_line(&command.command)),
                        SPINNER_COMMAND_CHARS
                    )
                ));
            }
            ThreadItem::FileChange(_) => self.spinner.set("applying a patch"),
            ThreadItem::Reasoning(_) => self.spinner.set("thinking"),
            ThreadItem::AgentMessage(_) => self.spinner.set("writing"),
            ThreadItem::Plan(plan) => {
                self.flush_message(out);
                plan_lines(plan, out);
            }
            ThreadItem::EnteredReviewMode(review) => {
                self.flush_message(out);
                let _ = writeln!(
                    out,
                    "{BOLD}reviewing {}{BOLD:#}",
                    escape_line(&review.review)
                );
                self.spinner.set("reviewing");
            }
            ThreadItem::ContextCompaction(_) => self.spinner.set("compacting the conversation"),
            ThreadItem::WebSearch(_) => self.spinner.set("searching the web"),
            ThreadItem::McpToolCall(call) => self.spinner.set(&format!(
                "calling {}",
                shorten(&escape_line(&mcp_call_line(call)), SPINNER_COMMAND_CHARS)
            )),
            ThreadItem::UserMessage(_) | ThreadItem::ExitedReviewMode(_) => {}
        }
    }

    fn item_updated(&mut self, item: &ThreadItem, out: &mut String) {
        match item {
            ThreadItem::CommandExecution(command) if command.started => {
                self.flush_message(out);
                let _ = writeln!(
                    out,
                    "{BOLD}$ {}{BOLD:#}",
                    escape_line(&command_line(&command.command))
                );
            }
            ThreadItem::Plan(plan) => {
                self.flush_message(out);
                plan_lines(plan, out);
            }
            ThreadItem::McpToolCall(call) if call.started => {
                self.flush_message(out);
                let _ = writeln!(
                    out,
                    "{BOLD}mcp {}{BOLD:#}",
                    escape_line(&mcp_call_line(call))
                );
            }
            ThreadItem::McpToolCall(_)
            | ThreadItem::CommandExecution(_)
            | ThreadItem::FileChange(_)
            | ThreadItem::UserMessage(_)
            | ThreadItem::AgentMessage(_)
            | ThreadItem::Reasoning(_)
            | ThreadItem::EnteredReviewMode(_)
            | ThreadItem::ExitedReviewMode(_)
            | ThreadItem::ContextCompaction(_)
            | ThreadItem::WebSearch(_) => {}
        }
    }

    fn item_completed(&mut self, item: &ThreadItem, out: &mut String) {
        match item {
            ThreadItem::AgentMessage(message) => {
                self.flush_message(out);
                self.pending_message = Some(message.text.clone());
            }
            ThreadItem::Reasoning(reasoning) if !reasoning.text.trim().is_empty() => {
                self.flush_message(out);
                let _ = writeln!(
                    out,
                    "{THINKING}thinking: {}{THINKING:#}",
                    escape_text(reasoning.text.trim_end())
                );
            }
            ThreadItem::CommandExecution(command) => {
                self.flush_message(out);
                let why_not = self.why_not(&command.id, &command.formatted_output);
                command_result(command, &why_not, out);
            }
            ThreadItem::FileChange(patch) => {
                self.flush_message(out);
                self.patch_result(patch, out);
            }
            ThreadItem::ContextCompaction(compaction) => {
                self.flush_message(out);
                if compaction.status == ContextCompactionStatus::Completed {
                    let _ = writeln!(out, "{THINKING}context compacted{THINKING:#}");
                }
            }
            ThreadItem::McpToolCall(call) => {
                self.flush_message(out);
                mcp_result(call, out);
            }
            // The reviewer's answer is the findings, shown as the review's result.
            ThreadItem::ExitedReviewMode(review) => {
                self.pending_message = Some(review.review.clone());
            }
            ThreadItem::WebSearch(search) => {
                self.flush_message(out);
                let _ = writeln!(
                    out,
                    "{THINKING}searched the web: {}{THINKING:#}",
                    escape_line(&search.query)
                );
            }
            // The plan was shown as it changed; the user knows what they asked.
            ThreadItem::Reasoning(_)
            | ThreadItem::Plan(_)
            | ThreadItem::UserMessage(_)
            | ThreadItem::EnteredReviewMode(_) => {}
        }
        if !matches!(item, ThreadItem::UserMessage(_)) {
            // Back to the model.
            self.spinner.set("thinking");
        }
    }

    /// Shows the held-back message: something came after it, so it is not the answer.
    fn flush_message(&mut self, out: &mut String) {
        if let Some(message) = self.pending_message.take() {
            let _ = writeln!(out, "{}", escape_text(message.trim_end()));
        }
    }

    /// Why an item was not run or applied, in words for the user: how they answered its
    /// question, or else deputy's own reason (`engine`; a user's "no" is told to the model
    /// in words meant for it, which are not repeated here).
    fn why_not(&self, item_id: &str, engine: &str) -> String {
        match self.answers.get(item_id) {
            Some(ApprovalDecision::Denied) => "declined".to_string(),
            Some(ApprovalDecision::Abort) => "the turn was stopped".to_string(),
            Some(ApprovalDecision::TimedOut) => "no answer in time".to_string(),
            Some(ApprovalDecision::Approved | ApprovalDecision::ApprovedForSession) | None => {
                engine.to_string()
            }
        }
    }

    /// Once per run, after a refused edit: the setting that lets deputy make it.
    fn edit_hint(&mut self, out: &mut String) {
        let hint = match self.sandbox {
            _ if self.hinted => return,
            Some(SandboxMode::ReadOnly) => "the sandbox is read-only; `-s workspace-write` \
                 (or `--full-auto`) lets deputy edit files in the working directory"
                .to_string(),
            Some(SandboxMode::WorkspaceWrite) => "deputy edits outside the working directory \
                 only with your approval, or in a directory given with `--add-dir DIR`"
                .to_string(),
            Some(SandboxMode::DangerFullAccess) | None => return,
        };
        self.hinted = true;
        let _ = writeln!(out, "{CYAN}hint:{CYAN:#} {hint}");
    }

    fn patch_result(&mut self, patch: &FileChangeItem, out: &mut String) {
        for (path, change) in &patch.changes {
            let (tag, colour, added, removed) = match change {
                FileChange::Add { content } => ("A", GREEN, content.lines().count(), 0),
                FileChange::Delete { content } => ("D", RED, 0, content.lines().count()),
                FileChange::Update { unified_diff, .. } => {
                    let (added, removed) = diff_counts(unified_diff);
                    ("M", YELLOW, added, removed)
                }
            };
            let moved = match change {
                FileChange::Update {
                    move_path: Some(to),
                    ..
                } => format!(" → {}", escape_line(&self.shown(to).to_string_lossy())),
                FileChange::Update { .. } | FileChange::Add { .. } | FileChange::Delete { .. } => {
                    String::new()
                }
            };
            let _ = writeln!(
                out,
                "patch {colour}{tag}{colour:#} {}{moved} ({GREEN}+{added}{GREEN:#} {RED}−{removed}{RED:#})",
                escape_line(&self.shown(path).to_string_lossy())
            );
        }
        let (indent, label) = if patch.changes.is_empty() {
            ("", "patch not applied")
        } else {
            ("  ", "not applied")
        };
        match patch.status {
            PatchApplyStatus::Completed | PatchApplyStatus::InProgress => {}
            PatchApplyStatus::Failed => labelled(out, indent, RED, label, &patch.stderr),
            PatchApplyStatus::Declined => {
                let why = self.why_not(&patch.id, &patch.stderr);
                labelled(out, indent, YELLOW, label, &why);
                self.edit_hint(out);
            }
        }
    }

    /// `path` relative to the session's cwd when it lies inside it.
    fn shown<'a>(&self, path: &'a Path) -> &'a Path {
        self.cwd
            .as_deref()
            .and_then(|cwd| path.strip_prefix(cwd).ok())
            .filter(|relative| !relative.as_os_str().is_empty())
            .unwrap_or(path)
    }
}

/// A finished command: its status line, and the tail of its output when it failed;
/// `why_not` says why it was not run when it was declined.
fn command_result(command: &CommandExecutionItem, why_not: &str, out: &mut String) {
    if !command.started {
        // Never ran (declined, refused, cut short while waiting): it has no `$` line yet.
        let _ = writeln!(
            out,
            "{BOLD}$ {}{BOLD:#}",
            escape_line(&command_line(&command.command))
        );
    }
    let seconds = command.duration.unwrap_or_default().as_secs_f64();
    match (command.status, command.exit_code) {
        (CommandExecutionStatus::Completed, code) => {
            let _ = writeln!(
                out,
                "  {GREEN}ok:{GREEN:#} exit {} in {seconds:.1}s",
                code.unwrap_or(0)
            );
        }
        (CommandExecutionStatus::Failed, Some(code)) if command.started && code >= 0 => {
            let _ = writeln!(out, "  {RED}failed:{RED:#} exit {code} in {seconds:.1}s");
            output_tail(&command.aggregated_output, out);
        }
        (CommandExecutionStatus::Failed, _) => {
            labelled(out, "  ", RED, "failed", &command.formatted_output);
            output_tail(&command.aggregated_output, out);
        }
        (CommandExecutionStatus::Declined, _) => {
            labelled(out, "  ", YELLOW, "not run", why_not);
        }
        (CommandExecutionStatus::InProgress, _) => {}
    }
}

/// `server.tool {arguments}`, as the call's line shows it.
fn mcp_call_line(call: &deputy_protocol::McpToolCallItem) -> String {
    let arguments = call
        .arguments
        .as_ref()
        .map(|args| format!(" {args}"))
        .unwrap_or_default();
    format!("{}.{}{arguments}", call.server, call.tool)
}

/// How an MCP tool call ended, under its line: the text it returned, or why it failed.
fn mcp_result(call: &deputy_protocol::McpToolCallItem, out: &mut String) {
    if !call.started {
        let _ = writeln!(
            out,
            "{BOLD}mcp {}{BOLD:#}",
            escape_line(&mcp_call_line(call))
        );
    }
    let seconds = call.duration.unwrap_or_default().as_secs_f64();
    match (&call.result, &call.error) {
        (Some(result), _) if result.is_error != Some(true) => {
            let _ = writeln!(out, "  {GREEN}ok:{GREEN:#} in {seconds:.1}s");
            let text: Vec<&str> = result
                .content
                .iter()
                .filter_map(|block| block.get("text").and_then(|t| t.as_str()))
                .collect();
            output_tail(&text.join("\n"), out);
        }
        (Some(result), _) => {
            let _ = writeln!(out, "  {RED}failed:{RED:#} the tool reported an error");
            let text: Vec<&str> = result
                .content
                .iter()
                .filter_map(|block| block.get("text").and_then(|t| t.as_str()))
                .collect();
            output_tail(&text.join("\n"), out);
        }
        (None, Some(error)) => labelled(out, "  ", RED, "failed", error),
        (None, None) => {}
    }
}

/// The last lines of a command's output, under it.
fn output_tail(output: &str, out: &mut String) {
    let lines: Vec<&str> = output.trim_end().lines().collect();
    let skipped = lines.len().saturating_sub(TAIL_LINES);
    if skipped > 0 {
        let _ = writeln!(out, "  {DIM}│ … {skipped} earlier lines{DIM:#}");
    }
    for line in &lines[skipped..] {
        let _ = writeln!(
            out,
            "  {DIM}│{DIM:#} {}",
            escape_line(&shorten(line, LINE_CHARS))
        );
    }
}

fn plan_lines(plan: &PlanUpdateItem, out: &mut String) {
    let _ = writeln!(out, "plan:");
    for step in &plan.plan {
        let (mark, style) = match step.status {
            StepStatus::Completed => ("[x]", GREEN),
            StepStatus::InProgress => ("[>]", CYAN),
            StepStatus::Pending => ("[ ]", DIM),
        };
        let _ = writeln!(out, "  {style}{mark}{style:#} {}", escape_line(&step.step));
    }
}

/// `indent` + `label: first line`, later lines indented under it.
fn labelled(out: &mut String, indent: &str, style: Style, label: &str, text: &str) {
    let mut lines = text.trim_end().lines();
    let _ = writeln!(
        out,
        "{indent}{style}{label}:{style:#} {}",
        escape_line(lines.next().unwrap_or_default())
    );
    for line in lines {
        let _ = writeln!(out, "{indent}  {}", escape_line(&shorten(line, LINE_CHARS)));
    }
}

/// Lines added and removed by a unified diff (headers before the first hunk not counted).
fn diff_counts(diff: &str) -> (usize, usize) {
    let mut in_hunk = false;
    let (mut added, mut removed) = (0, 0);
    for line in diff.lines() {
        if line.starts_with("@@") {
            in_hunk = true;
        } else if in_hunk && line.starts_with('+') {
            added += 1;
        } else if in_hunk && line.starts_with('-') {
            removed += 1;
        }
    }
    (added, removed)
}

/// `text`'s first line, cut to `max` characters with an ellipsis.
fn shorten(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    let cut = text.lines().nth(1).is_some() || line.chars().count() > max;
    if cut {
        let kept: String = line.chars().take(max.saturating_sub(1)).collect();
        format!("{kept}…")
    } else {
        line.to_string()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use super::*;
    use deputy_protocol::{
        AgentMessageItem, ItemEvent, TaskCompleteEvent, TokenCountEvent, TokenUsage, TokenUsageInfo,
    };
    use pretty_assertions::assert_eq;

    fn event(msg: ThreadEventMsg) -> ThreadEvent {
        ThreadEvent {
            seq: 1,
            thread_id: "t".into(),
            turn_id: Some("turn".into()),
            submission_id: "exec".into(),
            msg,
        }
    }

    fn plain(view: &mut LiveView, msg: ThreadEventMsg) -> String {
        anstream::adapter::strip_str(&view.render(&event(msg))).to_string()
    }

    fn completed(item: ThreadItem) -> ThreadEventMsg {
        ThreadEventMsg::ItemCompleted(ItemEvent { item })
    }

    fn failed_command(output: &str) -> ThreadItem {
        ThreadItem::CommandExecution(Box::new(CommandExecutionItem {
            id: "c".into(),
            call_id: "call".into(),
            command: vec!["make".into(), "test".into()],
            cwd: "/w".into(),
            parsed_cmd: Vec::new(),
            status: CommandExecutionStatus::Failed,
            started: true,
            exit_code: Some(2),
            stdout: String::new(),
            stderr: String::new(),
            aggregated_output: output.into(),
            duration: Some(Duration::from_millis(1500)),
            formatted_output: String::new(),
            process_id: None,
        }))
    }

    #[test]
    fn a_failed_command_shows_its_exit_and_the_tail_of_its_output() {
        let mut view = LiveView::new(Spinner::default());
        let output: String = (1..=12).map(|n| format!("line {n}\n")).collect();
        let shown = plain(&mut view, completed(failed_command(&output)));
        let mut expected = String::from("  failed: exit 2 in 1.5s\n  │ … 2 earlier lines\n");
        for n in 3..=12 {
            expected.push_str(&format!("  │ line {n}\n"));
        }
        assert_eq!(shown, expected);
    }

    #[test]
    fn what_the_model_wrote_cannot_move_the_cursor_or_reorder_the_line() {
        let mut view = LiveView::new(Spinner::default());
        let spoof = "touch X #\u{1b}[9D\u{1b}[K pytest -q tests/";
        let mut command = failed_command("ok\u{1b}]0;title\u{7}\n");
        if let ThreadItem::CommandExecution(item) = &mut command {
            item.command = vec!["bash".into(), "-lc".into(), spoof.into()];
        }
        let started = ThreadEventMsg::ItemUpdated(ItemEvent {
            item: command.clone(),
        });
        let shown = view.render(&event(started)) + &view.render(&event(completed(command)));
        let message = completed(ThreadItem::AgentMessage(AgentMessageItem {
            id: "m".into(),
            text: "line one\n\u{202e}txt.exe\u{9b}2J".into(),
        }));
        view.render(&event(message));
        let plan = ThreadEventMsg::ItemStarted(ItemEvent {
            item: ThreadItem::Plan(Box::new(PlanUpdateItem {
                id: "p".into(),
                explanation: None,
                plan: vec![deputy_protocol::PlanItem {
                    step: "step\rdone".into(),
                    status: StepStatus::Pending,
                }],
            })),
        });
        let shown = shown + &view.render(&event(plan));
        // Only the view's own styles are escape sequences; the model's are shown escaped.
        let own_styles = anstream::adapter::strip_str(&shown).to_string();
        assert!(!own_styles.contains(['\u{1b}', '\u{7}', '\u{202e}', '\u{9b}', '\r']));
        for escaped in [
            "$ touch X #\\e[9D\\e[K pytest -q tests/",
            "│ ok\\e]0;title\\a",
            "line one\n\\u202Etxt.exe\\u009B2J",
            "[ ] step\\rdone",
        ] {
            assert!(own_styles.contains(escaped), "{escaped} in {own_styles}");
        }
    }

    #[test]
    fn a_patch_shows_its_files_with_counts_and_a_failed_one_its_error() {
        let mut view = LiveView::new(Spinner::default());
        let patch = |status, changes, stderr: &str| {
            completed(ThreadItem::FileChange(Box::new(FileChangeItem {
                id: "p".into(),
                call_id: "call".into(),
                changes,
                status,
                started: status == PatchApplyStatus::Completed,
                auto_approved: true,
                stdout: String::new(),
                stderr: stderr.into(),
            })))
        };
        let changes = BTreeMap::from([
            (
                PathBuf::from("new.txt"),
                FileChange::Add {
                    content: "a\nb\n".into(),
                },
            ),
            (
                PathBuf::from("lib.rs"),
                FileChange::Update {
                    unified_diff: "--- a/lib.rs\n+++ b/lib.rs\n@@ -1,2 +1,2 @@\n-old\n+new\n ctx\n"
                        .into(),
                    move_path: None,
                },
            ),
        ]);
        assert_eq!(
            plain(&mut view, patch(PatchApplyStatus::Completed, changes, "")),
            "patch M lib.rs (+1 −1)\npatch A new.txt (+2 −0)\n"
        );
        assert_eq!(
            plain(
                &mut view,
                patch(
                    PatchApplyStatus::Failed,
                    BTreeMap::new(),
                    "Failed to find expected lines in x.rs:\n-missing"
                )
            ),
            "patch not applied: Failed to find expected lines in x.rs:\n  -missing\n"
        );
    }

    #[test]
    fn the_last_message_of_a_completed_turn_is_held_back_for_stdout() {
        let mut view = LiveView::new(Spinner::default());
        let message = |text: &str| {
            completed(ThreadItem::AgentMessage(AgentMessageItem {
                id: "m".into(),
                text: text.into(),
            }))
        };
        assert_eq!(plain(&mut view, message("Let me look.")), "");
        assert_eq!(
            plain(&mut view, completed(failed_command("oops\n"))),
            "Let me look.\n  failed: exit 2 in 1.5s\n  │ oops\n"
        );
        assert_eq!(plain(&mut view, message("The answer.")), "");
        let usage = TokenUsage {
            total_tokens: 42,
            ..TokenUsage::default()
        };
        plain(
            &mut view,
            ThreadEventMsg::TokenCount(Box::new(TokenCountEvent {
                info: Some(TokenUsageInfo {
                    total_token_usage: usage,
                    last_token_usage: usage,
                    model_context_window: None,
                }),
                rate_limits: None,
            })),
        );
        let end = plain(
            &mut view,
            ThreadEventMsg::TurnComplete(TaskCompleteEvent {
                turn_id: "turn".into(),
                last_agent_message: Some("The answer.".into()),
                completed_at: None,
                duration_ms: None,
            }),
        );
        assert_eq!(end, "tokens used: 42\n");
    }

    #[test]
    fn a_declined_patch_is_not_applied_in_the_users_words_with_the_hint_once() {
        use deputy_protocol::{ApprovalResolvedEvent, SandboxPolicy, SessionConfiguredEvent};
        let mut view = LiveView::new(Spinner::default());
        let configured: SessionConfiguredEvent = serde_json::from_value(serde_json::json!({
            "session_id": "t", "model": "m", "model_provider_id": "p",
            "approval_policy": "on-request",
            "sandbox_policy": SandboxPolicy::ReadOnly { network_access: false },
            "cwd": "/w", "history_log_id": 0, "history_entry_count": 0,
            "rollout_path": "/r.jsonl"
        }))
        .unwrap();
        plain(
            &mut view,
            ThreadEventMsg::SessionConfigured(Box::new(configured)),
        );
        let model_text = "The user declined this patch; nothing was changed. Do not retry it.";
        let declined = |id: &str| {
            completed(ThreadItem::FileChange(Box::new(FileChangeItem {
                id: id.into(),
                call_id: "call".into(),
                changes: BTreeMap::from([(
                    PathBuf::from("/w/hello.py"),
                    FileChange::Add {
                        content: "print()\n".into(),
                    },
                )]),
                status: PatchApplyStatus::Declined,
                started: false,
                auto_approved: false,
                stdout: String::new(),
                stderr: model_text.into(),
            })))
        };
        for id in ["p1", "p2"] {
            plain(
                &mut view,
                ThreadEventMsg::ApprovalResolved(ApprovalResolvedEvent {
                    item_id: id.into(),
                    call_id: "call".into(),
                    decision: ApprovalDecision::Denied,
                }),
            );
        }
        assert_eq!(
            plain(&mut view, declined("p1")),
            "patch A hello.py (+1 −0)\n  not applied: declined\n\
             hint: the sandbox is read-only; `-s workspace-write` (or `--full-auto`) lets \
             deputy edit files in the working directory\n"
        );
        assert_eq!(
            plain(&mut view, declined("p2")),
            "patch A hello.py (+1 −0)\n  not applied: declined\n"
        );
        // Refused by the policy, without a question: deputy's reason.
        let refused = plain(&mut view, declined("p3"));
        assert!(
            refused.contains(&format!("not applied: {model_text}")),
            "{refused}"
        );
    }
}
