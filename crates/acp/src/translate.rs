//! The one translation of the engine's events into ACP `session/update`s: every
//! [`ThreadEventMsg`] and every engine item kind is matched here, exhaustively, and
//! nowhere else. The tool call a permission request is about is built here too.
//!
//! A command or a patch is one tool call whose id is the engine's item id: `tool_call`
//! (`pending`) when the model asks for it, `tool_call_update` `in_progress` once it runs,
//! then `completed` or `failed` with its output or its diffs.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    CompactionStatus, CompactionUpdate, ContentBlock, ContentChunk, Diff, Notice, NoticeSeverity,
    Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus, SessionUpdate, TextContent, ToolCall,
    ToolCallContent, ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
    ToolKind, UsageUpdate,
};
use deputy_core::command_safety::command_line;
use deputy_core::driver::Asked;
use deputy_protocol::{
    self as engine, CommandExecutionStatus, FileChange, ParsedCommand, PatchApplyStatus, Question,
    StepStatus, ThreadEvent, ThreadEventMsg, ThreadItem,
};
use serde_json::json;

/// How much of a running command's output a `tool_call_update` carries (its tail); the
/// completed command carries what the engine kept.
const LIVE_OUTPUT_BYTES: usize = 32 * 1024;

/// Turns a thread's events into session updates, keeping what a single event does not
/// say: how much of each message was already streamed, the output of running commands.
#[derive(Debug, Default)]
pub(crate) struct UpdateMapper {
    /// Replaying a stored thread (`session/load`): the user's messages are reported too,
    /// and so are failed turns, which a live prompt reports in its response instead.
    replay: bool,
    /// Bytes of each agent message or reasoning item already sent as chunks.
    streamed: HashMap<String, usize>,
    /// Output of each running command so far.
    outputs: HashMap<String, String>,
    /// The tool call standing for the review in progress.
    review: Option<String>,
}

impl UpdateMapper {
    /// A mapper for a prompt's live events.
    pub(crate) fn live() -> Self {
        Self::default()
    }

    /// A mapper for a stored thread's history.
    pub(crate) fn replay() -> Self {
        Self {
            replay: true,
            ..Self::default()
        }
    }

    /// The updates `event` stands for, in order.
    pub(crate) fn map(&mut self, event: &ThreadEvent) -> Vec<SessionUpdate> {
        match &event.msg {
            ThreadEventMsg::ItemStarted(started) => self.started(&started.item),
            ThreadEventMsg::ItemUpdated(updated) => self.updated(&updated.item),
            ThreadEventMsg::ItemCompleted(completed) => self.completed(&completed.item),
            ThreadEventMsg::AgentMessageDelta(delta) => {
                *self.streamed.entry(delta.item_id.clone()).or_default() += delta.delta.len();
                vec![SessionUpdate::AgentMessageChunk(text_chunk(&delta.delta))]
            }
            ThreadEventMsg::ReasoningDelta(delta) => {
                *self.streamed.entry(delta.item_id.clone()).or_default() += delta.delta.len();
                vec![SessionUpdate::AgentThoughtChunk(text_chunk(&delta.delta))]
            }
            ThreadEventMsg::CommandOutputDelta(delta) => {
                let output = self.outputs.entry(delta.item_id.clone()).or_default();
                output.push_str(&String::from_utf8_lossy(&delta.chunk));
                let tail = tail(output, LIVE_OUTPUT_BYTES);
                vec![update(
                    &delta.item_id,
                    ToolCallUpdateFields::new().content(vec![text_content(tail)]),
                )]
            }
            ThreadEventMsg::TokenCount(count) => count
                .info
                .as_ref()
                .and_then(|info| {
                    let size = info.model_context_window?;
                    Some(SessionUpdate::UsageUpdate(UsageUpdate::new(
                        info.last_token_usage.total_tokens,
                        size,
                    )))
                })
                .into_iter()
                .collect(),
            ThreadEventMsg::StreamError(failed) => vec![notice(
                NoticeSeverity::Warning,
                "The model stream failed; retrying",
                Some(&failed.message),
            )],
            ThreadEventMsg::Warning(warning) => {
                vec![notice(NoticeSeverity::Warning, &warning.message, None)]
            }
            ThreadEventMsg::TurnFailed(failed) if self.replay => vec![notice(
                NoticeSeverity::Error,
                "The turn failed",
                Some(&failed.message),
            )],
            // The prompt's response reports how a live turn ended; questions go through
            // the approver (`session/request_permission`), their outcome through the item.
            ThreadEventMsg::TurnFailed(_)
            | ThreadEventMsg::SessionConfigured(_)
            | ThreadEventMsg::TurnStarted(_)
            | ThreadEventMsg::TurnComplete(_)
            | ThreadEventMsg::TurnAborted(_)
            | ThreadEventMsg::QuestionAsked(_)
            | ThreadEventMsg::ApprovalResolved(_)
            | ThreadEventMsg::TurnDiff(_)
            | ThreadEventMsg::ShutdownComplete => Vec::new(),
            // A server that fails to start is also a warning, shown as a notice.
            ThreadEventMsg::McpStartupUpdate(_) | ThreadEventMsg::McpStartupComplete(_) => {
                Vec::new()
            }
        }
    }

    fn started(&mut self, item: &ThreadItem) -> Vec<SessionUpdate> {
        match item {
            ThreadItem::CommandExecution(cmd) => vec![SessionUpdate::ToolCall(
                ToolCall::new(cmd.id.clone(), command_line(&cmd.command))
                    .kind(command_kind(&cmd.parsed_cmd))
                    .status(ToolCallStatus::Pending)
                    .locations(command_locations(&cmd.cwd, &cmd.parsed_cmd))
                    .raw_input(json!({"command": cmd.command, "cwd": cmd.cwd})),
            )],
            ThreadItem::FileChange(patch) => vec![SessionUpdate::ToolCall(
                ToolCall::new(patch.id.clone(), patch_title(&patch.changes))
                    .kind(ToolKind::Edit)
                    .status(ToolCallStatus::Pending)
                    .locations(patch_locations(&patch.changes))
                    .content(diffs(&patch.changes))
                    .raw_input(patch_input(&patch.changes)),
            )],
            ThreadItem::Plan(plan) => vec![SessionUpdate::Plan(plan_update(plan))],
            ThreadItem::ContextCompaction(compaction) => {
                vec![SessionUpdate::CompactionUpdate(CompactionUpdate::new(
                    compaction.id.clone(),
                    CompactionStatus::InProgress,
                ))]
            }
            ThreadItem::WebSearch(search) => vec![SessionUpdate::ToolCall(
                ToolCall::new(
                    search.id.clone(),
                    format!("Search the web: {}", search.query),
                )
                .kind(ToolKind::Fetch)
                .status(ToolCallStatus::InProgress)
                .raw_input(json!({"query": search.query})),
            )],
            ThreadItem::EnteredReviewMode(entered) => {
                self.review = Some(entered.id.clone());
                vec![SessionUpdate::ToolCall(
                    ToolCall::new(entered.id.clone(), format!("Review {}", entered.review))
                        .kind(ToolKind::Read)
                        .status(ToolCallStatus::InProgress)
                        .raw_input(json!({"target": entered.request.target})),
                )]
            }
            ThreadItem::McpToolCall(call) => vec![SessionUpdate::ToolCall(
                ToolCall::new(call.id.clone(), format!("{}: {}", call.server, call.tool))
                    .kind(ToolKind::Other)
                    .status(ToolCallStatus::Pending)
                    .raw_input(json!({
                        "server": call.server,
                        "tool": call.tool,
                        "arguments": call.arguments,
                    })),
            )],
            // Text items report their text as it streams, and in full when they complete.
            ThreadItem::UserMessage(_)
            | ThreadItem::AgentMessage(_)
            | ThreadItem::Reasoning(_)
            | ThreadItem::ExitedReviewMode(_) => Vec::new(),
        }
    }

    fn updated(&mut self, item: &ThreadItem) -> Vec<SessionUpdate> {
        /// Whether a command, patch or MCP call has started running.
        fn tool_started(item: &ThreadItem) -> bool {
            match item {
                ThreadItem::CommandExecution(command) => command.started,
                ThreadItem::FileChange(change) => change.started,
                ThreadItem::McpToolCall(call) => call.started,
                _ => false,
            }
        }

        match item {
            ThreadItem::CommandExecution(_)
            | ThreadItem::FileChange(_)
            | ThreadItem::McpToolCall(_)
                if tool_started(item) =>
            {
                vec![update(
                    item.id(),
                    ToolCallUpdateFields::new().status(ToolCallStatus::InProgress),
                )]
            }
            ThreadItem::Plan(plan) => vec![SessionUpdate::Plan(plan_update(plan))],
            ThreadItem::CommandExecution(_)
            | ThreadItem::FileChange(_)
            | ThreadItem::McpToolCall(_)
            | ThreadItem::UserMessage(_)
            | ThreadItem::AgentMessage(_)
            | ThreadItem::Reasoning(_)
            | ThreadItem::EnteredReviewMode(_)
            | ThreadItem::ExitedReviewMode(_)
            | ThreadItem::ContextCompaction(_)
            | ThreadItem::WebSearch(_) => Vec::new(),
        }
    }

    fn completed(&mut self, item: &ThreadItem) -> Vec<SessionUpdate> {
        match item {
            ThreadItem::UserMessage(user) if self.replay => {
                vec![SessionUpdate::UserMessageChunk(text_chunk(&user.text))]
            }
            ThreadItem::UserMessage(_) => Vec::new(),
            ThreadItem::AgentMessage(engine::AgentMessageItem { id, text }) => self
                .rest_of(id, text)
                .map(|rest| SessionUpdate::AgentMessageChunk(text_chunk(rest)))
                .into_iter()
                .collect(),
            ThreadItem::Reasoning(engine::ReasoningItem { id, text }) => self
                .rest_of(id, text)
                .map(|rest| SessionUpdate::AgentThoughtChunk(text_chunk(rest)))
                .into_iter()
                .collect(),
            ThreadItem::CommandExecution(cmd) => {
                self.outputs.remove(&cmd.id);
                let status = match cmd.status {
                    CommandExecutionStatus::Completed => ToolCallStatus::Completed,
                    CommandExecutionStatus::InProgress
                    | CommandExecutionStatus::Failed
                    | CommandExecutionStatus::Declined => ToolCallStatus::Failed,
                };
                let output = if cmd.aggregated_output.is_empty() {
                    &cmd.formatted_output
                } else {
                    &cmd.aggregated_output
                };
                let content = if output.is_empty() {
                    Vec::new()
                } else {
                    vec![text_content(output)]
                };
                vec![update(
                    &cmd.id,
                    ToolCallUpdateFields::new()
                        .status(status)
                        .content(content)
                        .raw_output(json!({
                            "status": cmd.status,
                            "exit_code": cmd.exit_code,
                            "duration_ms": cmd.duration.map(|d| d.as_millis()),
                        })),
                )]
            }
            ThreadItem::FileChange(patch) => {
                let status = match patch.status {
                    PatchApplyStatus::Completed => ToolCallStatus::Completed,
                    PatchApplyStatus::InProgress
                    | PatchApplyStatus::Failed
                    | PatchApplyStatus::Declined => ToolCallStatus::Failed,
                };
                let mut content = diffs(&patch.changes);
                if status == ToolCallStatus::Failed && !patch.stderr.is_empty() {
                    content.push(text_content(&patch.stderr));
                }
                vec![update(
                    &patch.id,
                    ToolCallUpdateFields::new()
                        .status(status)
                        .content(content)
                        .raw_output(json!({"status": patch.status, "stdout": patch.stdout})),
                )]
            }
            ThreadItem::McpToolCall(call) => {
                let status = match call.status {
                    engine::McpToolCallStatus::Completed => ToolCallStatus::Completed,
                    engine::McpToolCallStatus::InProgress | engine::McpToolCallStatus::Failed => {
                        ToolCallStatus::Failed
                    }
                };
                let text: Vec<&str> = match (&call.result, &call.error) {
                    (Some(result), _) => result
                        .content
                        .iter()
                        .filter_map(|block| block.get("text").and_then(|t| t.as_str()))
                        .collect(),
                    (None, Some(error)) => vec![error.as_str()],
                    (None, None) => Vec::new(),
                };
                let content = if text.is_empty() {
                    Vec::new()
                } else {
                    vec![text_content(&text.join("\n"))]
                };
                vec![update(
                    &call.id,
                    ToolCallUpdateFields::new()
                        .status(status)
                        .content(content)
                        .raw_output(json!({
                            "status": call.status,
                            "result": call.result,
                            "error": call.error,
                            "duration_ms": call.duration.map(|d| d.as_millis()),
                        })),
                )]
            }
            ThreadItem::Plan(plan) => vec![SessionUpdate::Plan(plan_update(plan))],
            ThreadItem::ContextCompaction(compaction) => {
                let status = match compaction.status {
                    engine::ContextCompactionStatus::Completed => CompactionStatus::Completed,
                    engine::ContextCompactionStatus::InProgress
                    | engine::ContextCompactionStatus::Failed => CompactionStatus::Failed,
                };
                vec![SessionUpdate::CompactionUpdate(CompactionUpdate::new(
                    compaction.id.clone(),
                    status,
                ))]
            }
            ThreadItem::WebSearch(search) => vec![update(
                &search.id,
                ToolCallUpdateFields::new().status(ToolCallStatus::Completed),
            )],
            ThreadItem::EnteredReviewMode(_) => Vec::new(),
            ThreadItem::ExitedReviewMode(exited) => {
                let mut out = Vec::new();
                if let Some(review) = self.review.take() {
                    let status = if exited.output.is_some() {
                        ToolCallStatus::Completed
                    } else {
                        ToolCallStatus::Failed
                    };
                    out.push(update(&review, ToolCallUpdateFields::new().status(status)));
                }
                if !exited.review.is_empty() {
                    out.push(SessionUpdate::AgentMessageChunk(text_chunk(&exited.review)));
                }
                out
            }
        }
    }

    /// What of a completed text item was not streamed yet.
    fn rest_of<'t>(&mut self, id: &str, text: &'t str) -> Option<&'t str> {
        let sent = self.streamed.remove(id).unwrap_or(0);
        text.get(sent..).filter(|rest| !rest.is_empty())
    }
}

/// The tool call a permission request is about, as the client knows it from `tool_call`.
pub(crate) fn permission_tool_call(asked: &Asked) -> ToolCallUpdate {
    let fields = match &asked.question {
        Question::Exec(exec) => {
            let mut fields = ToolCallUpdateFields::new()
                .title(command_line(&exec.command))
                .kind(command_kind(&exec.parsed_cmd))
                .locations(command_locations(&exec.cwd, &exec.parsed_cmd))
                .raw_input(json!({"command": exec.command, "cwd": exec.cwd}));
            if let Some(reason) = &exec.reason {
                fields = fields.content(vec![text_content(reason)]);
            }
            fields
        }
        Question::Patch(patch) => {
            let mut content = diffs(&patch.changes);
            if let Some(reason) = &patch.reason {
                content.insert(0, text_content(reason));
            }
            ToolCallUpdateFields::new()
                .title(patch_title(&patch.changes))
                .kind(ToolKind::Edit)
                .locations(patch_locations(&patch.changes))
                .content(content)
                .raw_input(patch_input(&patch.changes))
        }
        Question::McpElicitation(form) => ToolCallUpdateFields::new()
            .title(format!("{} asks", form.server))
            .kind(ToolKind::Other)
            .content(vec![text_content(&form.message)]),
        Question::McpToolCall(call) => {
            let mut fields = ToolCallUpdateFields::new()
                .title(format!("{}: {}", call.server, call.tool))
                .kind(ToolKind::Other)
                .raw_input(json!({
                    "server": call.server,
                    "tool": call.tool,
                    "arguments": call.arguments,
                }));
            if let Some(reason) = &call.reason {
                fields = fields.content(vec![text_content(reason)]);
            }
            fields
        }
        // Never asked as a permission (see the approver); shown as what it is.
        Question::UserInput(request) => ToolCallUpdateFields::new()
            .title("Questions to the user")
            .kind(ToolKind::Other)
            .raw_input(json!({"questions": request.questions})),
    };
    ToolCallUpdate::new(asked.item_id.clone(), fields)
}

fn update(id: &str, fields: ToolCallUpdateFields) -> SessionUpdate {
    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(id.to_string(), fields))
}

fn text_chunk(text: &str) -> ContentChunk {
    ContentChunk::new(ContentBlock::Text(TextContent::new(text)))
}

fn text_content(text: &str) -> ToolCallContent {
    ToolCallContent::from(ContentBlock::Text(TextContent::new(text)))
}

fn notice(severity: NoticeSeverity, title: &str, description: Option<&str>) -> SessionUpdate {
    SessionUpdate::Notice(Notice::new(severity, title).description(description.map(str::to_string)))
}

/// The end of `text`, at most `max` bytes, cut at a character boundary.
fn tail(text: &str, max: usize) -> &str {
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// What a command does, as far as the engine's parse of it tells.
fn command_kind(parsed: &[ParsedCommand]) -> ToolKind {
    let mut kinds = parsed.iter().map(|parsed| match parsed {
        ParsedCommand::Read { .. } => ToolKind::Read,
        ParsedCommand::ListFiles { .. } | ParsedCommand::Search { .. } => ToolKind::Search,
        ParsedCommand::Unknown { .. } => ToolKind::Execute,
    });
    match kinds.next() {
        Some(first) if kinds.all(|kind| kind == first) => first,
        _ => ToolKind::Execute,
    }
}

/// The files a command reads, by the engine's parse of it.
fn command_locations(cwd: &Path, parsed: &[ParsedCommand]) -> Vec<ToolCallLocation> {
    parsed
        .iter()
        .filter_map(|parsed| match parsed {
            ParsedCommand::Read { path, .. } => Some(ToolCallLocation::new(cwd.join(path))),
            ParsedCommand::ListFiles { .. }
            | ParsedCommand::Search { .. }
            | ParsedCommand::Unknown { .. } => None,
        })
        .collect()
}

/// "Edit a.rs", "Add b.rs, edit a.rs", "Delete c.rs".
fn patch_title(changes: &BTreeMap<PathBuf, FileChange>) -> String {
    let mut parts = Vec::new();
    for (verb, wanted) in [("Add", 0), ("Edit", 1), ("Delete", 2)] {
        let files: Vec<String> = changes
            .iter()
            .filter(|(_, change)| change_rank(change) == wanted)
            .map(|(path, change)| match change {
                FileChange::Update {
                    move_path: Some(to),
                    ..
                } => format!("{} → {}", file_name(path), file_name(to)),
                FileChange::Add { .. } | FileChange::Delete { .. } | FileChange::Update { .. } => {
                    file_name(path)
                }
            })
            .collect();
        if !files.is_empty() {
            let verb = if parts.is_empty() {
                verb.to_string()
            } else {
                verb.to_lowercase()
            };
            parts.push(format!("{verb} {}", files.join(", ")));
        }
    }
    parts.join("; ")
}

fn change_rank(change: &FileChange) -> u8 {
    match change {
        FileChange::Add { .. } => 0,
        FileChange::Update { .. } => 1,
        FileChange::Delete { .. } => 2,
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

fn patch_locations(changes: &BTreeMap<PathBuf, FileChange>) -> Vec<ToolCallLocation> {
    changes
        .iter()
        .map(|(path, change)| match change {
            FileChange::Update {
                move_path: Some(to),
                ..
            } => ToolCallLocation::new(to),
            FileChange::Add { .. } | FileChange::Delete { .. } | FileChange::Update { .. } => {
                ToolCallLocation::new(path)
            }
        })
        .collect()
}

fn patch_input(changes: &BTreeMap<PathBuf, FileChange>) -> serde_json::Value {
    json!({ "changes": changes })
}

/// One `diff` block per changed file: the whole text of an added or deleted file, and
/// for an update the lines its hunks touch, with their context, before and after.
fn diffs(changes: &BTreeMap<PathBuf, FileChange>) -> Vec<ToolCallContent> {
    changes
        .iter()
        .map(|(path, change)| {
            let diff = match change {
                FileChange::Add { content } => Diff::new(path, content.as_str()),
                FileChange::Delete { content } => {
                    Diff::new(path, String::new()).old_text(content.clone())
                }
                FileChange::Update {
                    unified_diff,
                    move_path,
                } => {
                    let (old, new) = hunk_texts(unified_diff);
                    Diff::new(move_path.as_deref().unwrap_or(path), new).old_text(old)
                }
            };
            ToolCallContent::Diff(diff)
        })
        .collect()
}

/// The old and new text a unified diff's hunks cover: context and removed lines, then
/// context and added lines.
fn hunk_texts(unified_diff: &str) -> (String, String) {
    let (mut old, mut new) = (String::new(), String::new());
    let mut in_hunk = false;
    for line in unified_diff.split_inclusive('\n') {
        if line.starts_with("@@") {
            in_hunk = true;
            continue;
        }
        if !in_hunk {
            continue;
        }
        match line.as_bytes().first() {
            Some(b' ') => {
                old.push_str(&line[1..]);
                new.push_str(&line[1..]);
            }
            Some(b'-') => old.push_str(&line[1..]),
            Some(b'+') => new.push_str(&line[1..]),
            // `\ No newline at end of file` and anything else a hunk may hold.
            _ => {}
        }
    }
    (old, new)
}

fn plan_update(plan: &engine::PlanUpdateItem) -> Plan {
    Plan::new(
        plan.plan
            .iter()
            .map(|step| {
                let status = match step.status {
                    StepStatus::Pending => PlanEntryStatus::Pending,
                    StepStatus::InProgress => PlanEntryStatus::InProgress,
                    StepStatus::Completed => PlanEntryStatus::Completed,
                };
                PlanEntry::new(step.step.as_str(), PlanEntryPriority::Medium, status)
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests;
