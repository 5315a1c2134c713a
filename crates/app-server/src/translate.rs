//! The one translation of the engine's events into the app-server's messages: every
//! [`ThreadEventMsg`] and every engine item kind is matched here, exhaustively, and
//! nowhere else.

use std::collections::BTreeMap;
use std::path::PathBuf;

use deputy_core::command_safety::escape_command_for_display;
use deputy_core::turn_history::{TurnState, turns_from_events};
use deputy_protocol::{
    self as engine, FileChange, ItemDeltaEvent, ParsedCommand, StepStatus, ThreadEvent,
    ThreadEventMsg, TokenUsage,
};

use crate::protocol::{
    AgentMessageDeltaNotification, CodexErrorInfo, CommandAction,
    CommandExecutionOutputDeltaNotification, CommandExecutionSource, CommandExecutionStatus,
    ErrorNotification, FileUpdateChange, ItemCompletedNotification, ItemStartedNotification,
    PatchApplyStatus, PatchChangeKind, ReasoningSummaryTextDeltaNotification, ServerNotification,
    ThreadActiveFlag, ThreadClosedNotification, ThreadItem, ThreadStatus,
    ThreadStatusChangedNotification, ThreadTokenUsage, ThreadTokenUsageUpdatedNotification,
    TokenUsageBreakdown, Turn, TurnCompletedNotification, TurnDiffUpdatedNotification, TurnError,
    TurnPlanStep, TurnPlanStepStatus, TurnPlanUpdatedNotification, TurnStartedNotification,
    TurnStatus, UserInput, WarningNotification, WebSearchAction,
};
// MCP servers and their tool calls.
use crate::protocol::{
    McpServerStartupState, McpServerStatusUpdatedNotification, McpToolCallError, McpToolCallResult,
    McpToolCallStatus,
};

/// The notifications `event` stands for, in order; `started_at` is when the event's turn
/// started, if known (the events ending a turn do not repeat it).
///
/// Besides the event's own messages, `thread/status/changed` reports what the thread
/// now waits on: a turn (`active`), an approval (`waitingOnApproval`), nothing (`idle`),
/// or the user after a failed turn (`systemError`), as Codex reports them. A question
/// itself is put to the client by the thread's approver (`crate::approver`).
pub(crate) fn thread_event(
    event: &ThreadEvent,
    started_at: Option<i64>,
) -> Vec<ServerNotification> {
    use ServerNotification as N;
    let notify = |n: ServerNotification| n;
    let thread_id = event.thread_id.to_string();
    let turn_id = event.turn_id.as_deref().unwrap_or_default().to_string();
    let status = |status: ThreadStatus| {
        notify(N::ThreadStatusChanged(ThreadStatusChangedNotification {
            thread_id: event.thread_id.to_string(),
            status,
        }))
    };
    let active = |waiting: bool| ThreadStatus::Active {
        active_flags: waiting
            .then_some(ThreadActiveFlag::WaitingOnApproval)
            .into_iter()
            .collect(),
    };
    let ended = |status: TurnStatus, completed_at, duration_ms| Turn {
        started_at,
        completed_at,
        duration_ms,
        ..Turn::new(turn_id.clone(), status)
    };
    match &event.msg {
        ThreadEventMsg::SessionConfigured(_) => Vec::new(),
        ThreadEventMsg::TurnStarted(started) => vec![
            status(active(false)),
            notify(N::TurnStarted(TurnStartedNotification {
                thread_id,
                turn: Turn {
                    started_at: started.started_at,
                    ..Turn::new(turn_id, TurnStatus::InProgress)
                },
            })),
        ],
        ThreadEventMsg::ItemStarted(started) => {
            let mut out = vec![notify(N::ItemStarted(ItemStartedNotification {
                item: item(&started.item),
                thread_id: thread_id.clone(),
                turn_id: turn_id.clone(),
            }))];
            out.extend(item_progress(&started.item, thread_id, turn_id));
            out
        }
        ThreadEventMsg::ItemUpdated(updated) => item_progress(&updated.item, thread_id, turn_id),
        ThreadEventMsg::ItemCompleted(completed) => {
            vec![notify(N::ItemCompleted(ItemCompletedNotification {
                item: item(&completed.item),
                thread_id,
                turn_id,
            }))]
        }
        ThreadEventMsg::AgentMessageDelta(ItemDeltaEvent { item_id, delta }) => {
            vec![notify(N::AgentMessageDelta(
                AgentMessageDeltaNotification {
                    thread_id,
                    turn_id,
                    item_id: item_id.clone(),
                    delta: delta.clone(),
                },
            ))]
        }
        ThreadEventMsg::ReasoningDelta(ItemDeltaEvent { item_id, delta }) => vec![notify(
            N::ReasoningSummaryTextDelta(ReasoningSummaryTextDeltaNotification {
                thread_id,
                turn_id,
                item_id: item_id.clone(),
                delta: delta.clone(),
                summary_index: 0,
            }),
        )],
        ThreadEventMsg::CommandOutputDelta(delta) => vec![notify(N::CommandExecutionOutputDelta(
            CommandExecutionOutputDeltaNotification {
                thread_id,
                turn_id,
                item_id: delta.item_id.clone(),
                delta: String::from_utf8_lossy(&delta.chunk).into_owned(),
            },
        ))],
        ThreadEventMsg::QuestionAsked(_) => vec![status(active(true))],
        ThreadEventMsg::ApprovalResolved(_) => vec![status(active(false))],
        ThreadEventMsg::TurnDiff(diff) => {
            vec![notify(N::TurnDiffUpdated(TurnDiffUpdatedNotification {
                thread_id,
                turn_id,
                diff: diff.unified_diff.clone(),
            }))]
        }
        ThreadEventMsg::TokenCount(count) => count
            .info
            .as_ref()
            .map(|info| {
                notify(N::ThreadTokenUsageUpdated(
                    ThreadTokenUsageUpdatedNotification {
                        thread_id,
                        turn_id,
                        token_usage: ThreadTokenUsage {
                            total: breakdown(&info.total_token_usage),
                            last: breakdown(&info.last_token_usage),
                            model_context_window: info
                                .model_context_window
                                .map(|w| i64::try_from(w).unwrap_or(i64::MAX)),
                        },
                    },
                ))
            })
            .into_iter()
            .collect(),
        ThreadEventMsg::StreamError(failed) => vec![notify(N::Error(ErrorNotification {
            error: TurnError {
                codex_error_info: failed.codex_error_info.map(codex_error_info),
                ..TurnError::new(failed.message.clone())
            },
            will_retry: true,
            thread_id,
            turn_id,
        }))],
        ThreadEventMsg::Warning(warning) => vec![notify(N::Warning(WarningNotification {
            thread_id: Some(thread_id),
            turn_id: event.turn_id.as_deref().map(str::to_string),
            message: warning.message.clone(),
        }))],
        ThreadEventMsg::TurnComplete(done) => vec![
            status(ThreadStatus::Idle),
            turn_completed(
                thread_id,
                ended(TurnStatus::Completed, done.completed_at, done.duration_ms),
            ),
        ],
        ThreadEventMsg::TurnAborted(aborted) => vec![
            status(ThreadStatus::Idle),
            turn_completed(
                thread_id,
                ended(
                    TurnStatus::Interrupted,
                    aborted.completed_at,
                    aborted.duration_ms,
                ),
            ),
        ],
        ThreadEventMsg::TurnFailed(failed) => {
            let error = turn_error(failed);
            vec![
                status(ThreadStatus::SystemError),
                notify(N::Error(ErrorNotification {
                    error: error.clone(),
                    will_retry: false,
                    thread_id: thread_id.clone(),
                    turn_id: turn_id.clone(),
                })),
                turn_completed(
                    thread_id,
                    Turn {
                        error: Some(error),
                        ..ended(TurnStatus::Failed, failed.completed_at, failed.duration_ms)
                    },
                ),
            ]
        }
        ThreadEventMsg::ShutdownComplete => {
            vec![notify(N::ThreadClosed(ThreadClosedNotification {
                thread_id,
            }))]
        }
        ThreadEventMsg::McpStartupUpdate(update) => {
            let (status, error) = match &update.status {
                engine::McpStartupStatus::Starting => (McpServerStartupState::Starting, None),
                engine::McpStartupStatus::Ready => (McpServerStartupState::Ready, None),
                engine::McpStartupStatus::Failed { error } => {
                    (McpServerStartupState::Failed, Some(error.clone()))
                }
                engine::McpStartupStatus::Cancelled => (McpServerStartupState::Cancelled, None),
            };
            vec![notify(N::McpServerStatusUpdated(
                McpServerStatusUpdatedNotification {
                    name: update.server.clone(),
                    status,
                    error,
                },
            ))]
        }
        // Each server's own update already said how it went.
        ThreadEventMsg::McpStartupComplete(_) => Vec::new(),
    }
}

/// The turns `events` tell of (see `deputy_core::turn_history`), in the wire shape.
pub(crate) fn turns<'a>(
    events: impl IntoIterator<Item = &'a ThreadEvent>,
    running: Option<&str>,
) -> Vec<Turn> {
    turns_from_events(events, running)
        .iter()
        .map(|record| Turn {
            items: record.items.iter().map(item).collect(),
            error: record.error.as_ref().map(turn_error),
            started_at: record.started_at,
            completed_at: record.completed_at,
            duration_ms: record.duration_ms,
            ..Turn::new(record.id.clone(), turn_status(record.state))
        })
        .collect()
}

fn turn_status(state: TurnState) -> TurnStatus {
    match state {
        TurnState::InProgress => TurnStatus::InProgress,
        TurnState::Completed => TurnStatus::Completed,
        TurnState::Interrupted => TurnStatus::Interrupted,
        TurnState::Failed => TurnStatus::Failed,
    }
}

/// A failed turn's error in the wire shape.
pub(crate) fn turn_error(failed: &engine::ErrorEvent) -> TurnError {
    TurnError {
        codex_error_info: failed.codex_error_info.map(codex_error_info),
        ..TurnError::new(failed.message.clone())
    }
}

fn codex_error_info(info: engine::CodexErrorInfo) -> CodexErrorInfo {
    use engine::CodexErrorInfo as E;
    match info {
        E::ContextWindowExceeded => CodexErrorInfo::ContextWindowExceeded,
        E::UsageLimitExceeded => CodexErrorInfo::UsageLimitExceeded,
        E::ServerOverloaded => CodexErrorInfo::ServerOverloaded,
        E::InternalServerError => CodexErrorInfo::InternalServerError,
        E::Unauthorized => CodexErrorInfo::Unauthorized,
        E::BadRequest => CodexErrorInfo::BadRequest,
        E::SandboxError => CodexErrorInfo::SandboxError,
        E::HttpConnectionFailed { http_status_code } => {
            CodexErrorInfo::HttpConnectionFailed { http_status_code }
        }
        E::ResponseStreamConnectionFailed { http_status_code } => {
            CodexErrorInfo::ResponseStreamConnectionFailed { http_status_code }
        }
        E::ResponseStreamDisconnected { http_status_code } => {
            CodexErrorInfo::ResponseStreamDisconnected { http_status_code }
        }
        E::ResponseTooManyFailedAttempts { http_status_code } => {
            CodexErrorInfo::ResponseTooManyFailedAttempts { http_status_code }
        }
        E::Other => CodexErrorInfo::Other,
    }
}

fn turn_completed(thread_id: String, turn: Turn) -> ServerNotification {
    ServerNotification::TurnCompleted(TurnCompletedNotification { thread_id, turn })
}

/// What an item's start or update says besides `item/started`: the plan's new state.
fn item_progress(
    item: &engine::ThreadItem,
    thread_id: String,
    turn_id: String,
) -> Vec<ServerNotification> {
    match item {
        engine::ThreadItem::Plan(plan) => vec![ServerNotification::TurnPlanUpdated(
            TurnPlanUpdatedNotification {
                thread_id,
                turn_id,
                explanation: plan.explanation.clone(),
                plan: plan
                    .plan
                    .iter()
                    .map(|step| TurnPlanStep {
                        step: step.step.clone(),
                        status: plan_status(step.status),
                    })
                    .collect(),
            },
        )],
        engine::ThreadItem::UserMessage(_)
        | engine::ThreadItem::AgentMessage(_)
        | engine::ThreadItem::Reasoning(_)
        | engine::ThreadItem::CommandExecution(_)
        | engine::ThreadItem::FileChange(_)
        | engine::ThreadItem::EnteredReviewMode(_)
        | engine::ThreadItem::ExitedReviewMode(_)
        | engine::ThreadItem::ContextCompaction(_)
        | engine::ThreadItem::WebSearch(_)
        | engine::ThreadItem::McpToolCall(_) => Vec::new(),
    }
}

/// An engine item in the app-server's shape.
pub(crate) fn item(item: &engine::ThreadItem) -> ThreadItem {
    match item {
        engine::ThreadItem::UserMessage(user) => ThreadItem::UserMessage {
            id: user.id.clone(),
            content: vec![UserInput::Text {
                text: user.text.clone(),
                text_elements: Vec::new(),
            }],
        },
        engine::ThreadItem::AgentMessage(agent) => ThreadItem::AgentMessage {
            id: agent.id.clone(),
            text: agent.text.clone(),
        },
        engine::ThreadItem::Reasoning(reasoning) => ThreadItem::Reasoning {
            id: reasoning.id.clone(),
            summary: if reasoning.text.is_empty() {
                Vec::new()
            } else {
                vec![reasoning.text.clone()]
            },
            content: Vec::new(),
        },
        engine::ThreadItem::CommandExecution(cmd) => ThreadItem::CommandExecution {
            id: cmd.id.clone(),
            command: escape_command_for_display(&cmd.command),
            cwd: cmd.cwd.clone(),
            process_id: cmd.process_id.clone(),
            source: CommandExecutionSource::Agent,
            status: match cmd.status {
                engine::CommandExecutionStatus::InProgress => CommandExecutionStatus::InProgress,
                engine::CommandExecutionStatus::Completed => CommandExecutionStatus::Completed,
                engine::CommandExecutionStatus::Failed => CommandExecutionStatus::Failed,
                engine::CommandExecutionStatus::Declined => CommandExecutionStatus::Declined,
            },
            command_actions: command_actions(&cmd.parsed_cmd),
            aggregated_output: (!cmd.aggregated_output.is_empty())
                .then(|| cmd.aggregated_output.clone()),
            exit_code: cmd.exit_code,
            duration_ms: cmd
                .duration
                .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
        },
        engine::ThreadItem::FileChange(patch) => ThreadItem::FileChange {
            id: patch.id.clone(),
            changes: file_changes(&patch.changes),
            status: match patch.status {
                engine::PatchApplyStatus::InProgress => PatchApplyStatus::InProgress,
                engine::PatchApplyStatus::Completed => PatchApplyStatus::Completed,
                engine::PatchApplyStatus::Failed => PatchApplyStatus::Failed,
                engine::PatchApplyStatus::Declined => PatchApplyStatus::Declined,
            },
        },
        engine::ThreadItem::Plan(plan) => ThreadItem::Plan {
            id: plan.id.clone(),
            text: plan_text(plan),
        },
        engine::ThreadItem::EnteredReviewMode(entered) => ThreadItem::EnteredReviewMode {
            id: entered.id.clone(),
            review: entered.review.clone(),
        },
        engine::ThreadItem::ExitedReviewMode(exited) => ThreadItem::ExitedReviewMode {
            id: exited.id.clone(),
            review: exited.review.clone(),
        },
        engine::ThreadItem::ContextCompaction(compaction) => ThreadItem::ContextCompaction {
            id: compaction.id.clone(),
        },
        engine::ThreadItem::WebSearch(search) => ThreadItem::WebSearch {
            id: search.id.clone(),
            query: search.query.clone(),
            action: Some(WebSearchAction::Search {
                query: Some(search.query.clone()).filter(|query| !query.is_empty()),
            }),
        },
        engine::ThreadItem::McpToolCall(call) => ThreadItem::McpToolCall {
            id: call.id.clone(),
            server: call.server.clone(),
            tool: call.tool.clone(),
            status: match call.status {
                engine::McpToolCallStatus::InProgress => McpToolCallStatus::InProgress,
                engine::McpToolCallStatus::Completed => McpToolCallStatus::Completed,
                engine::McpToolCallStatus::Failed => McpToolCallStatus::Failed,
            },
            arguments: call.arguments.clone().unwrap_or(serde_json::Value::Null),
            result: call.result.as_ref().map(|result| McpToolCallResult {
                content: result.content.clone(),
                structured_content: result.structured_content.clone(),
            }),
            error: call.error.as_ref().map(|message| McpToolCallError {
                message: message.clone(),
            }),
            duration_ms: call
                .duration
                .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
        },
    }
}

pub(crate) fn command_actions(parsed: &[ParsedCommand]) -> Vec<CommandAction> {
    parsed
        .iter()
        .map(|parsed| match parsed {
            ParsedCommand::Read { cmd, name, path } => CommandAction::Read {
                command: cmd.clone(),
                name: name.clone(),
                path: path.clone(),
            },
            ParsedCommand::ListFiles { cmd, path } => CommandAction::ListFiles {
                command: cmd.clone(),
                path: path.clone(),
            },
            ParsedCommand::Search { cmd, query, path } => CommandAction::Search {
                command: cmd.clone(),
                query: query.clone(),
                path: path.clone(),
            },
            ParsedCommand::Unknown { cmd } => CommandAction::Unknown {
                command: cmd.clone(),
            },
        })
        .collect()
}

fn file_changes(changes: &BTreeMap<PathBuf, FileChange>) -> Vec<FileUpdateChange> {
    changes
        .iter()
        .map(|(path, change)| {
            let (kind, diff) = match change {
                FileChange::Add { content } => (PatchChangeKind::Add, content.clone()),
                FileChange::Delete { content } => (PatchChangeKind::Delete, content.clone()),
                FileChange::Update {
                    unified_diff,
                    move_path,
                } => (
                    PatchChangeKind::Update {
                        move_path: move_path.clone(),
                    },
                    unified_diff.clone(),
                ),
            };
            FileUpdateChange {
                path: path.display().to_string(),
                kind,
                diff,
            }
        })
        .collect()
}

fn plan_status(status: StepStatus) -> TurnPlanStepStatus {
    match status {
        StepStatus::Pending => TurnPlanStepStatus::Pending,
        StepStatus::InProgress => TurnPlanStepStatus::InProgress,
        StepStatus::Completed => TurnPlanStepStatus::Completed,
    }
}

/// The plan as text: the explanation, then one checkbox line per step.
fn plan_text(plan: &engine::PlanUpdateItem) -> String {
    let mut lines = Vec::new();
    if let Some(explanation) = plan.explanation.as_deref().filter(|e| !e.is_empty()) {
        lines.push(explanation.to_string());
    }
    for step in &plan.plan {
        let mark = match step.status {
            StepStatus::Pending => "[ ]",
            StepStatus::InProgress => "[~]",
            StepStatus::Completed => "[x]",
        };
        lines.push(format!("- {mark} {}", step.step));
    }
    lines.join("\n")
}

fn breakdown(usage: &TokenUsage) -> TokenUsageBreakdown {
    let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    TokenUsageBreakdown {
        total_tokens: n(usage.total_tokens),
        input_tokens: n(usage.input_tokens),
        cached_input_tokens: n(usage.cached_input_tokens),
        output_tokens: n(usage.output_tokens),
        reasoning_output_tokens: n(usage.reasoning_output_tokens),
    }
}

#[cfg(test)]
mod tests;
