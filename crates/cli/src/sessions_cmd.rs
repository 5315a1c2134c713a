//! `deputy sessions list|show|repair`: what is saved under `$DEPUTY_HOME/sessions`.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use deputy_core::rollout::{
    RolloutError, RolloutItem, find_rollout, list_sessions, read_rollout, repair_thread,
    resolve_thread_id, threads_needing_repair,
};
use deputy_protocol::{EventMsg, ReasoningSummary, ResponseItem, TurnAbortReason, codex_events};

/// Lines of a tool's output shown by `sessions show`; the rest is counted.
const OUTPUT_LINES: usize = 20;

/// Prints one tab-separated line per session, newest first:
/// id, updated (UTC), cwd, first prompt preview, turns.
pub fn list(home: &Path, cwd: Option<&Path>, limit: usize) -> anyhow::Result<i32> {
    let sessions = list_sessions(home, cwd, limit).context("listing sessions")?;
    if sessions.is_empty() {
        let _ = writeln!(std::io::stderr(), "no saved sessions");
        return Ok(0);
    }
    let mut out = std::io::stdout().lock();
    for s in sessions {
        writeln!(
            out,
            "{}\t{}\t{}\t{}\t{}",
            s.id,
            s.updated_utc(),
            s.cwd.display(),
            s.first_prompt_preview,
            s.turns
        )?;
    }
    Ok(0)
}

/// Prints session `id`'s (or the one session whose id starts with `id`) conversation as
/// text: turns, messages, tool calls and their output.
pub fn show(home: &Path, id: &str) -> anyhow::Result<i32> {
    let id = resolve_thread_id(home, id)?;
    let path = find_rollout(home, &id)?;
    let contents = read_rollout(&path)?;
    for warning in &contents.warnings {
        let _ = writeln!(std::io::stderr(), "warning: {warning}");
    }
    if !contents
        .items
        .iter()
        .any(|item| matches!(item, RolloutItem::SessionMeta(_)))
    {
        let reason = if contents.items.is_empty() && contents.warnings.is_empty() {
            "it is empty (the process creating it was stopped before writing anything)"
        } else {
            "it holds no readable session metadata"
        };
        anyhow::bail!(
            "session {id} cannot be shown: its file {} is unusable: {reason}",
            path.display()
        );
    }
    let mut text = String::new();
    let mut turn = 0;
    for item in &contents.items {
        render(item, &mut turn, &mut text);
    }
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(0)
}

/// Repairs session `id` (or every session with interrupted patches) and says, per
/// session, what state its files are in now. Exits 1 when a session could not be repaired.
pub fn repair(home: &Path, id: Option<&str>) -> anyhow::Result<i32> {
    let ids = match id {
        Some(id) => vec![resolve_thread_id(home, id)?],
        None => threads_needing_repair(home),
    };
    let (mut out, mut err) = (std::io::stdout().lock(), std::io::stderr());
    if ids.is_empty() {
        writeln!(out, "no session needs repair")?;
        return Ok(0);
    }
    let mut code = 0;
    for id in ids {
        match repair_thread(home, &id) {
            Ok(repaired) => {
                if repaired.patches.is_empty() {
                    writeln!(out, "{id}: no interrupted patch")?;
                }
                for patch in &repaired.patches {
                    let call = patch.call_id.as_deref().unwrap_or("unknown");
                    writeln!(out, "{id}: patch of call {call}: {}", patch.report)?;
                }
                for warning in &repaired.warnings {
                    let _ = writeln!(err, "warning: {warning}");
                }
            }
            Err(RolloutError::Locked) => {
                code = 1;
                let _ = writeln!(
                    err,
                    "{id}: not repaired: the session is open in another process, which \
                     repairs it itself"
                );
            }
            Err(error) => {
                code = 1;
                let _ = writeln!(err, "{id}: not repaired: {error}");
            }
        }
    }
    Ok(code)
}

fn render(item: &RolloutItem, turn: &mut usize, out: &mut String) {
    match item {
        RolloutItem::SessionMeta(meta) => {
            out.push_str(&format!(
                "session {}\nstarted {} · model {} ({}) · cwd {}\n",
                meta.id,
                meta.timestamp,
                meta.model,
                meta.model_provider,
                meta.cwd.display()
            ));
        }
        RolloutItem::TurnContext(_) => {
            *turn += 1;
            out.push_str(&format!("\n── turn {turn} ──\n"));
        }
        RolloutItem::ResponseItem(item) => render_item(item, out),
        RolloutItem::Event(event) => {
            for codex in codex_events(event) {
                render_event(&codex.msg, out);
            }
        }
        RolloutItem::EventMsg(msg) => render_event(msg, out),
        // The compaction's event line already says so; the summary is the model's business.
        RolloutItem::Compacted(_) => {}
    }
}

/// The turn endings worth showing; messages and commands come from the history items.
fn render_event(msg: &EventMsg, out: &mut String) {
    match msg {
        EventMsg::TurnAborted(aborted) => {
            let why = match aborted.reason {
                TurnAbortReason::Interrupted => "interrupted",
                TurnAbortReason::Aborted => "aborted by the user",
            };
            out.push_str(&format!("(turn stopped: {why})\n"));
        }
        EventMsg::Error(error) => labelled(out, "error", &error.message),
        EventMsg::ContextCompacted(_) => out.push_str("(context compacted)\n"),
        EventMsg::WebSearchEnd(search) => labelled(out, "web search", &search.query),
        EventMsg::SessionConfigured(_)
        | EventMsg::TaskStarted(_)
        | EventMsg::UserMessage(_)
        | EventMsg::AgentMessageDelta(_)
        | EventMsg::AgentMessage(_)
        | EventMsg::AgentReasoningDelta(_)
        | EventMsg::AgentReasoning(_)
        | EventMsg::ExecCommandBegin(_)
        | EventMsg::ExecCommandOutputDelta(_)
        | EventMsg::ExecCommandEnd(_)
        | EventMsg::ExecApprovalRequest(_)
        | EventMsg::ApplyPatchApprovalRequest(_)
        | EventMsg::PatchApplyBegin(_)
        | EventMsg::PatchApplyEnd(_)
        | EventMsg::TurnDiff(_)
        | EventMsg::PlanUpdate(_)
        | EventMsg::TokenCount(_)
        | EventMsg::StreamError(_)
        | EventMsg::Warning(_)
        | EventMsg::TaskComplete(_)
        | EventMsg::EnteredReviewMode(_)
        | EventMsg::ExitedReviewMode(_)
        | EventMsg::WebSearchBegin(_)
        | EventMsg::ShutdownComplete
        | EventMsg::McpToolCallBegin(_)
        | EventMsg::McpToolCallEnd(_)
        | EventMsg::McpStartupUpdate(_)
        | EventMsg::McpStartupComplete(_) => {}
    }
}

fn render_item(item: &ResponseItem, out: &mut String) {
    match item {
        ResponseItem::Message { role, .. } if role == "user" || role == "assistant" => {
            labelled(out, role, &item.message_text().unwrap_or_default());
        }
        ResponseItem::Message { .. } | ResponseItem::Other(_) => {}
        ResponseItem::Reasoning { summary, .. } => {
            let text: String = summary
                .iter()
                .map(|ReasoningSummary::SummaryText { text }| text.as_str())
                .collect();
            if !text.trim().is_empty() {
                labelled(out, "thinking", &text);
            }
        }
        ResponseItem::FunctionCall {
            name,
            namespace,
            arguments,
            ..
        } => {
            let namespace = namespace.as_deref().unwrap_or_default();
            out.push_str(&format!("tool {namespace}{name} {arguments}\n"));
        }
        ResponseItem::CustomToolCall { name, input, .. } => {
            out.push_str(&format!("tool {name} {input}\n"));
        }
        ResponseItem::FunctionCallOutput { output, .. }
        | ResponseItem::CustomToolCallOutput { output, .. } => {
            let output = output.text();
            let lines: Vec<&str> = output.lines().collect();
            for line in lines.iter().take(OUTPUT_LINES) {
                out.push_str(&format!("  │ {line}\n"));
            }
            if lines.len() > OUTPUT_LINES {
                out.push_str(&format!(
                    "  │ … {} more lines\n",
                    lines.len() - OUTPUT_LINES
                ));
            }
        }
    }
}

/// `label: text`, continuation lines indented under the text.
fn labelled(out: &mut String, label: &str, text: &str) {
    let indent = " ".repeat(label.len() + 2);
    for (n, line) in text.lines().enumerate() {
        if n == 0 {
            out.push_str(&format!("{label}: {line}\n"));
        } else {
            out.push_str(&format!("{indent}{line}\n"));
        }
    }
    if text.lines().next().is_none() {
        out.push_str(&format!("{label}:\n"));
    }
}
