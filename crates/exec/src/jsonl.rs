//! `deputy exec --json`: the JSONL that `codex exec --json` prints, derived from the
//! engine's items in this one place.
//!
//! One line per event: `thread.started`, `turn.started`, `item.started|updated|completed`
//! (items `agent_message`, `reasoning`, `command_execution`, `file_change`,
//! `mcp_tool_call`, `todo_list`, `error`), then `turn.completed {usage}` or `turn.failed {error}`. Item ids are this
//! stream's own (`item_0`, `item_1`, … in order of first appearance), as in Codex.
//! Messages, reasoning and patches appear once, completed; commands and the plan are
//! started, updated when what a script sees of them changes, and completed. Statuses and
//! fields are spelled as `@openai/codex-sdk`'s types have them (no `declined`; no
//! `exit_code` until there is one). A turn stopped by a signal ends without a line, as in
//! Codex, so that the SDK reports its own abort.

use std::collections::HashMap;

use deputy_core::command_safety::command_line;
use deputy_protocol::{
    CommandExecutionItem, CommandExecutionStatus, FileChange, FileChangeItem, McpToolCallItem,
    McpToolCallStatus, PatchApplyStatus, PlanItem, StepStatus, ThreadEvent, ThreadEventMsg,
    ThreadItem, TokenUsage, TurnAbortReason,
};
use serde::Serialize;

/// One line of `codex exec --json` output.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type")]
pub enum JsonlEvent {
    /// The thread exists (first line; again when a saved thread is resumed).
    #[serde(rename = "thread.started")]
    ThreadStarted {
        /// The id to resume the thread with.
        thread_id: String,
    },
    /// The turn began.
    #[serde(rename = "turn.started")]
    TurnStarted {},
    /// The turn finished.
    #[serde(rename = "turn.completed")]
    TurnCompleted {
        /// Tokens the turn used.
        usage: Usage,
    },
    /// The turn ended without finishing (a model error, an interruption).
    #[serde(rename = "turn.failed")]
    TurnFailed {
        /// Why.
        error: ErrorPayload,
    },
    /// An item began.
    #[serde(rename = "item.started")]
    ItemStarted {
        /// The item as it stands.
        item: Item,
    },
    /// An item changed.
    #[serde(rename = "item.updated")]
    ItemUpdated {
        /// The item as it stands.
        item: Item,
    },
    /// An item reached its final state.
    #[serde(rename = "item.completed")]
    ItemCompleted {
        /// The item, final.
        item: Item,
    },
    /// An error of the stream itself (a model error, a retry).
    #[serde(rename = "error")]
    Error {
        /// What went wrong.
        message: String,
    },
}

/// Token usage of a turn, summed over its model responses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    /// Tokens sent to the model.
    pub input_tokens: u64,
    /// Of those, served from the provider's cache.
    pub cached_input_tokens: u64,
    /// Tokens the model produced.
    pub output_tokens: u64,
    /// Of those, spent on reasoning.
    pub reasoning_output_tokens: u64,
}

impl Usage {
    fn add(&mut self, usage: &TokenUsage) {
        self.input_tokens += usage.input_tokens;
        self.cached_input_tokens += usage.cached_input_tokens;
        self.output_tokens += usage.output_tokens;
        self.reasoning_output_tokens += usage.reasoning_output_tokens;
    }
}

/// Payload of `turn.failed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorPayload {
    /// Why the turn failed.
    pub message: String,
}

/// An item: this stream's id and what it is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Item {
    /// `item_N`.
    pub id: String,
    /// The item's type and fields.
    #[serde(flatten)]
    pub details: ItemDetails,
}

/// The kinds of items, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ItemDetails {
    /// A message from the model.
    AgentMessage {
        /// Its text.
        text: String,
    },
    /// The model's reasoning summary.
    Reasoning {
        /// Its text.
        text: String,
    },
    /// A command the model ran (or asked to run).
    CommandExecution {
        /// The command line: the script of `bash -lc SCRIPT`, else the shell-quoted argv.
        command: String,
        /// Its output, both streams as they arrived.
        aggregated_output: String,
        /// Its exit code, once it exited.
        #[serde(skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        /// Where it stands.
        status: CommandStatus,
    },
    /// A patch the model applied (or tried to).
    FileChange {
        /// The files it touches.
        changes: Vec<FileUpdateChange>,
        /// Where it stands.
        status: PatchStatus,
    },
    /// The model's plan.
    TodoList {
        /// Its steps.
        items: Vec<TodoItem>,
    },
    /// A search by the provider's hosted web search.
    WebSearch {
        /// What was searched for.
        query: String,
    },
    /// A call of an MCP server's tool.
    McpToolCall {
        /// The server, as named in the configuration.
        server: String,
        /// The tool.
        tool: String,
        /// The arguments the model passed.
        arguments: serde_json::Value,
        /// The server's result, once it answered.
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<McpResult>,
        /// Why there is no result.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<ErrorPayload>,
        /// Where it stands.
        status: CommandStatus,
    },
    /// Something that went wrong without ending the turn (a configuration warning).
    Error {
        /// What.
        message: String,
    },
}

/// `command_execution.status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CommandStatus {
    /// Waiting for approval, or running.
    InProgress,
    /// Exited 0.
    Completed,
    /// Exited non-zero, timed out, could not start, was killed, or was not run (declined).
    Failed,
}

/// `mcp_tool_call.result`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct McpResult {
    /// The content blocks, as MCP writes them.
    pub content: Vec<serde_json::Value>,
    /// The structured result (null when there is none).
    pub structured_content: serde_json::Value,
}

/// `file_change.status`. Like Codex, a declined patch counts as failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PatchStatus {
    /// Every change landed.
    Completed,
    /// Nothing changed.
    Failed,
}

/// One file of a `file_change`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileUpdateChange {
    /// The file.
    pub path: String,
    /// What happens to it.
    pub kind: ChangeKind,
}

/// `file_change.changes[].kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// Created.
    Add,
    /// Removed.
    Delete,
    /// Changed (or moved).
    Update,
}

/// One step of a `todo_list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TodoItem {
    /// The step.
    pub text: String,
    /// Whether it is done.
    pub completed: bool,
}

/// Turns a thread's events into `codex exec --json` lines.
#[derive(Debug, Default)]
pub struct JsonlMapper {
    next_id: u64,
    /// Engine item id → this stream's id, for items started and not yet completed.
    open: HashMap<String, Item>,
    usage: Usage,
}

impl JsonlMapper {
    /// The lines `event` stands for, in order (often none).
    pub fn map(&mut self, event: &ThreadEvent) -> Vec<JsonlEvent> {
        match &event.msg {
            ThreadEventMsg::SessionConfigured(configured) => vec![JsonlEvent::ThreadStarted {
                thread_id: configured.session_id.clone(),
            }],
            ThreadEventMsg::TurnStarted(_) => {
                self.usage = Usage::default();
                vec![JsonlEvent::TurnStarted {}]
            }
            ThreadEventMsg::ItemStarted(e) => self.started(&e.item).into_iter().collect(),
            ThreadEventMsg::ItemUpdated(e) => self.updated(&e.item).into_iter().collect(),
            ThreadEventMsg::ItemCompleted(e) => self.completed(&e.item).into_iter().collect(),
            ThreadEventMsg::TokenCount(count) => {
                if let Some(info) = &count.info {
                    self.usage.add(&info.last_token_usage);
                }
                Vec::new()
            }
            // The configuration's warnings (no turn yet) are for stderr, not error items.
            ThreadEventMsg::Warning(_) if event.turn_id.is_none() => Vec::new(),
            ThreadEventMsg::Warning(warning) => vec![JsonlEvent::ItemCompleted {
                item: Item {
                    id: self.new_id(),
                    details: ItemDetails::Error {
                        message: warning.message.clone(),
                    },
                },
            }],
            ThreadEventMsg::StreamError(e) => vec![JsonlEvent::Error {
                message: e.message.clone(),
            }],
            ThreadEventMsg::TurnComplete(_) => {
                vec![JsonlEvent::TurnCompleted { usage: self.usage }]
            }
            // Codex reports the error, then the turn's failure.
            ThreadEventMsg::TurnFailed(e) => {
                let message = e.message.clone();
                vec![
                    JsonlEvent::Error {
                        message: message.clone(),
                    },
                    JsonlEvent::TurnFailed {
                        error: ErrorPayload { message },
                    },
                ]
            }
            // A signal stopped the run: nothing, as in Codex (the SDK then reports its
            // own abort). The user's "quit" at a question is the turn's failure.
            ThreadEventMsg::TurnAborted(aborted) => match aborted.reason {
                TurnAbortReason::Interrupted => Vec::new(),
                TurnAbortReason::Aborted => vec![JsonlEvent::TurnFailed {
                    error: ErrorPayload {
                        message: "turn aborted by the user".to_string(),
                    },
                }],
            },
            // Streaming pieces are repeated by their completed item; questions, answers,
            // diffs and the thread's end have no line in this format.
            ThreadEventMsg::AgentMessageDelta(_)
            | ThreadEventMsg::ReasoningDelta(_)
            | ThreadEventMsg::CommandOutputDelta(_)
            | ThreadEventMsg::QuestionAsked(_)
            | ThreadEventMsg::ApprovalResolved(_)
            | ThreadEventMsg::TurnDiff(_)
            | ThreadEventMsg::ShutdownComplete
            | ThreadEventMsg::McpStartupUpdate(_)
            | ThreadEventMsg::McpStartupComplete(_) => Vec::new(),
        }
    }

    fn new_id(&mut self) -> String {
        let id = format!("item_{}", self.next_id);
        self.next_id += 1;
        id
    }

    fn started(&mut self, item: &ThreadItem) -> Option<JsonlEvent> {
        let details = match item {
            ThreadItem::CommandExecution(_) | ThreadItem::Plan(_) | ThreadItem::WebSearch(_) => {
                details(item)?
            }
            // Shown once sent to the server (after any approval), as in Codex.
            ThreadItem::McpToolCall(call) if call.started => details(item)?,
            ThreadItem::McpToolCall(_) => return None,
            // Messages, reasoning and patches are shown once, complete (the SDK's
            // `file_change` is "emitted once the patch succeeds or fails"); codex exec has
            // no review items.
            ThreadItem::UserMessage(_)
            | ThreadItem::AgentMessage(_)
            | ThreadItem::Reasoning(_)
            | ThreadItem::FileChange(_)
            | ThreadItem::EnteredReviewMode(_)
            | ThreadItem::ExitedReviewMode(_)
            | ThreadItem::ContextCompaction(_) => {
                return None;
            }
        };
        let shown = Item {
            id: self.new_id(),
            details,
        };
        self.open.insert(item.id().to_string(), shown.clone());
        Some(JsonlEvent::ItemStarted { item: shown })
    }

    fn updated(&mut self, item: &ThreadItem) -> Option<JsonlEvent> {
        if matches!(item, ThreadItem::FileChange(_)) {
            return None;
        }
        let details = details(item)?;
        let Some(open) = self.open.get_mut(item.id()) else {
            return self.started(item);
        };
        // A command's process starting changes nothing a script sees: no line for it.
        if open.details == details {
            return None;
        }
        open.details = details;
        Some(JsonlEvent::ItemUpdated { item: open.clone() })
    }

    fn completed(&mut self, item: &ThreadItem) -> Option<JsonlEvent> {
        let details = details(item)?;
        let id = match self.open.remove(item.id()) {
            Some(open) => open.id,
            None => self.new_id(),
        };
        Some(JsonlEvent::ItemCompleted {
            item: Item { id, details },
        })
    }
}

/// What a script sees of an engine item; `None` for items this format leaves out
/// (the user's own message, empty reasoning).
fn details(item: &ThreadItem) -> Option<ItemDetails> {
    Some(match item {
        ThreadItem::UserMessage(_)
        | ThreadItem::EnteredReviewMode(_)
        | ThreadItem::ExitedReviewMode(_)
        | ThreadItem::ContextCompaction(_) => return None,
        ThreadItem::AgentMessage(message) => ItemDetails::AgentMessage {
            text: message.text.clone(),
        },
        ThreadItem::Reasoning(reasoning) if reasoning.text.trim().is_empty() => return None,
        ThreadItem::Reasoning(reasoning) => ItemDetails::Reasoning {
            text: reasoning.text.clone(),
        },
        ThreadItem::CommandExecution(command) => command_details(command),
        ThreadItem::FileChange(patch) => patch_details(patch),
        ThreadItem::McpToolCall(call) => mcp_details(call),
        ThreadItem::Plan(plan) => ItemDetails::TodoList {
            items: plan.plan.iter().map(todo_item).collect(),
        },
        ThreadItem::WebSearch(search) => ItemDetails::WebSearch {
            query: search.query.clone(),
        },
    })
}

fn command_details(command: &CommandExecutionItem) -> ItemDetails {
    ItemDetails::CommandExecution {
        command: command_line(&command.command),
        aggregated_output: command.aggregated_output.clone(),
        exit_code: match command.status {
            CommandExecutionStatus::InProgress | CommandExecutionStatus::Declined => None,
            // -1 stands for "no exit code" (never started, or killed without one).
            CommandExecutionStatus::Completed | CommandExecutionStatus::Failed => {
                command.exit_code.filter(|code| *code >= 0)
            }
        },
        status: match command.status {
            CommandExecutionStatus::InProgress => CommandStatus::InProgress,
            CommandExecutionStatus::Completed => CommandStatus::Completed,
            CommandExecutionStatus::Failed | CommandExecutionStatus::Declined => {
                CommandStatus::Failed
            }
        },
    }
}

fn mcp_details(call: &McpToolCallItem) -> ItemDetails {
    ItemDetails::McpToolCall {
        server: call.server.clone(),
        tool: call.tool.clone(),
        arguments: call.arguments.clone().unwrap_or(serde_json::Value::Null),
        result: call.result.as_ref().map(|result| McpResult {
            content: result.content.clone(),
            structured_content: result
                .structured_content
                .clone()
                .unwrap_or(serde_json::Value::Null),
        }),
        error: call.error.as_ref().map(|message| ErrorPayload {
            message: message.clone(),
        }),
        status: match call.status {
            McpToolCallStatus::InProgress => CommandStatus::InProgress,
            McpToolCallStatus::Completed => CommandStatus::Completed,
            McpToolCallStatus::Failed => CommandStatus::Failed,
        },
    }
}

fn patch_details(patch: &FileChangeItem) -> ItemDetails {
    ItemDetails::FileChange {
        changes: patch
            .changes
            .iter()
            .map(|(path, change)| FileUpdateChange {
                path: path.display().to_string(),
                kind: match change {
                    FileChange::Add { .. } => ChangeKind::Add,
                    FileChange::Delete { .. } => ChangeKind::Delete,
                    FileChange::Update { .. } => ChangeKind::Update,
                },
            })
            .collect(),
        status: match patch.status {
            PatchApplyStatus::Completed => PatchStatus::Completed,
            // Only completed patches are shown; one still open when the turn stops is
            // completed as failed by the engine.
            PatchApplyStatus::InProgress
            | PatchApplyStatus::Failed
            | PatchApplyStatus::Declined => PatchStatus::Failed,
        },
    }
}

fn todo_item(step: &PlanItem) -> TodoItem {
    TodoItem {
        text: step.step.clone(),
        completed: match step.status {
            StepStatus::Completed => true,
            StepStatus::Pending | StepStatus::InProgress => false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use deputy_protocol::{
        AgentMessageItem, ErrorEvent, ItemEvent, PlanUpdateItem, TaskCompleteEvent,
        TokenCountEvent, TokenUsageInfo,
    };
    use pretty_assertions::assert_eq;
    use serde_json::{Value, json};

    fn event(msg: ThreadEventMsg) -> ThreadEvent {
        ThreadEvent {
            seq: 1,
            thread_id: "t".into(),
            turn_id: Some("turn".into()),
            submission_id: "exec".into(),
            msg,
        }
    }

    fn lines(mapper: &mut JsonlMapper, msgs: Vec<ThreadEventMsg>) -> Vec<Value> {
        msgs.into_iter()
            .flat_map(|msg| mapper.map(&event(msg)))
            .map(|line| serde_json::to_value(line).unwrap())
            .collect()
    }

    fn command(status: CommandExecutionStatus, started: bool, exit: Option<i32>) -> ThreadItem {
        command_with_output(
            status,
            started,
            exit,
            if exit.is_some() { "a\n" } else { "" },
        )
    }

    fn command_with_output(
        status: CommandExecutionStatus,
        started: bool,
        exit: Option<i32>,
        output: &str,
    ) -> ThreadItem {
        ThreadItem::CommandExecution(Box::new(CommandExecutionItem {
            id: "engine-cmd".into(),
            call_id: "call".into(),
            command: vec!["bash".into(), "-lc".into(), "ls -la".into()],
            cwd: "/w".into(),
            parsed_cmd: Vec::new(),
            status,
            started,
            exit_code: exit,
            stdout: String::new(),
            stderr: String::new(),
            aggregated_output: output.into(),
            duration: None,
            formatted_output: String::new(),
            process_id: None,
        }))
    }

    #[test]
    fn a_command_is_started_then_completed_under_one_id_without_a_line_for_its_spawn() {
        let mut mapper = JsonlMapper::default();
        let out = lines(
            &mut mapper,
            vec![
                ThreadEventMsg::ItemStarted(ItemEvent {
                    item: command(CommandExecutionStatus::InProgress, false, None),
                }),
                ThreadEventMsg::ItemUpdated(ItemEvent {
                    item: command_with_output(CommandExecutionStatus::InProgress, true, None, ""),
                }),
                ThreadEventMsg::ItemCompleted(ItemEvent {
                    item: command(CommandExecutionStatus::Failed, true, Some(2)),
                }),
            ],
        );
        assert_eq!(
            out,
            [
                json!({"type": "item.started", "item": {"id": "item_0", "type": "command_execution",
                    "command": "ls -la", "aggregated_output": "", "status": "in_progress"}}),
                json!({"type": "item.completed", "item": {"id": "item_0", "type": "command_execution",
                    "command": "ls -la", "aggregated_output": "a\n", "exit_code": 2,
                    "status": "failed"}}),
            ]
        );
    }

    #[test]
    fn the_plan_is_a_todo_list_started_updated_and_completed() {
        let plan = |done: bool| {
            ThreadItem::Plan(Box::new(PlanUpdateItem {
                id: "engine-plan".into(),
                explanation: None,
                plan: vec![PlanItem {
                    step: "Write it".into(),
                    status: if done {
                        StepStatus::Completed
                    } else {
                        StepStatus::InProgress
                    },
                }],
            }))
        };
        let mut mapper = JsonlMapper::default();
        let out = lines(
            &mut mapper,
            vec![
                ThreadEventMsg::ItemStarted(ItemEvent { item: plan(false) }),
                ThreadEventMsg::ItemUpdated(ItemEvent { item: plan(true) }),
                ThreadEventMsg::ItemCompleted(ItemEvent { item: plan(true) }),
            ],
        );
        let kinds: Vec<&str> = out.iter().map(|l| l["type"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["item.started", "item.updated", "item.completed"]);
        assert_eq!(
            out[1]["item"],
            json!({"id": "item_0", "type": "todo_list",
                   "items": [{"text": "Write it", "completed": true}]})
        );
    }

    #[test]
    fn usage_sums_the_turns_responses_and_a_failure_is_error_then_turn_failed() {
        let count = |input, cached, output, reasoning| {
            let usage = TokenUsage {
                input_tokens: input,
                cached_input_tokens: cached,
                output_tokens: output,
                reasoning_output_tokens: reasoning,
                total_tokens: input + output,
            };
            ThreadEventMsg::TokenCount(Box::new(TokenCountEvent {
                info: Some(TokenUsageInfo {
                    total_token_usage: usage,
                    last_token_usage: usage,
                    model_context_window: None,
                }),
                rate_limits: None,
            }))
        };
        let mut mapper = JsonlMapper::default();
        let done = lines(
            &mut mapper,
            vec![
                count(10, 2, 5, 1),
                count(20, 4, 7, 3),
                ThreadEventMsg::ItemCompleted(ItemEvent {
                    item: ThreadItem::AgentMessage(AgentMessageItem {
                        id: "m".into(),
                        text: "Done.".into(),
                    }),
                }),
                ThreadEventMsg::TurnComplete(TaskCompleteEvent {
                    turn_id: "turn".into(),
                    last_agent_message: Some("Done.".into()),
                    completed_at: None,
                    duration_ms: None,
                }),
            ],
        );
        assert_eq!(
            done,
            [
                json!({"type": "item.completed",
                       "item": {"id": "item_0", "type": "agent_message", "text": "Done."}}),
                json!({"type": "turn.completed", "usage": {"input_tokens": 30,
                       "cached_input_tokens": 6, "output_tokens": 12, "reasoning_output_tokens": 4}}),
            ]
        );
        let failed = lines(
            &mut mapper,
            vec![ThreadEventMsg::TurnFailed(ErrorEvent::new("boom"))],
        );
        assert_eq!(
            failed,
            [
                json!({"type": "error", "message": "boom"}),
                json!({"type": "turn.failed", "error": {"message": "boom"}}),
            ]
        );
    }

    #[test]
    fn what_the_sdk_types_lack_is_spelled_as_they_have_it() {
        use deputy_protocol::{TurnAbortedEvent, WarningEvent};
        let patch = |status| {
            ThreadItem::FileChange(Box::new(FileChangeItem {
                id: "engine-patch".into(),
                call_id: "call".into(),
                changes: [(
                    std::path::PathBuf::from("/w/a.txt"),
                    FileChange::Add {
                        content: "a\n".into(),
                    },
                )]
                .into(),
                status,
                started: false,
                auto_approved: false,
                stdout: String::new(),
                stderr: String::new(),
            }))
        };
        let mut mapper = JsonlMapper::default();
        let thread_warning = ThreadEvent {
            turn_id: None,
            ..event(ThreadEventMsg::Warning(WarningEvent {
                message: "unknown config key `x`".into(),
            }))
        };
        let mut out: Vec<Value> = mapper
            .map(&thread_warning)
            .into_iter()
            .map(|line| serde_json::to_value(line).unwrap())
            .collect();
        out.extend(lines(
            &mut mapper,
            vec![
                ThreadEventMsg::ItemCompleted(ItemEvent {
                    item: command(CommandExecutionStatus::Declined, false, None),
                }),
                ThreadEventMsg::ItemStarted(ItemEvent {
                    item: patch(PatchApplyStatus::InProgress),
                }),
                ThreadEventMsg::ItemUpdated(ItemEvent {
                    item: patch(PatchApplyStatus::InProgress),
                }),
                ThreadEventMsg::ItemCompleted(ItemEvent {
                    item: patch(PatchApplyStatus::Declined),
                }),
                ThreadEventMsg::Warning(WarningEvent {
                    message: "patch not approved".into(),
                }),
                ThreadEventMsg::TurnAborted(TurnAbortedEvent {
                    turn_id: "turn".into(),
                    reason: TurnAbortReason::Interrupted,
                    completed_at: None,
                    duration_ms: None,
                }),
            ],
        ));
        assert_eq!(
            out,
            [
                json!({"type": "item.completed", "item": {"id": "item_0", "type": "command_execution",
                    "command": "ls -la", "aggregated_output": "", "status": "failed"}}),
                json!({"type": "item.completed", "item": {"id": "item_1", "type": "file_change",
                    "changes": [{"path": "/w/a.txt", "kind": "add"}], "status": "failed"}}),
                json!({"type": "item.completed", "item": {"id": "item_2", "type": "error",
                    "message": "patch not approved"}}),
            ]
        );
    }
}
