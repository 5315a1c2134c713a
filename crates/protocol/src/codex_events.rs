//! The one translation from the engine's item events to Codex's `EventMsg`s, which
//! `codex/event` and `deputy exec`'s raw event lines carry unchanged for clients
//! written against Codex.

use crate::{
    AgentMessageEvent, AgentReasoningEvent, CommandExecutionItem, CommandExecutionStatus,
    ContextCompactedEvent, ContextCompactionStatus, DeltaEvent, Event, EventMsg,
    ExecCommandBeginEvent, ExecCommandEndEvent, ExecCommandOutputDeltaEvent, ExecCommandStatus,
    ExitedReviewModeEvent, FileChangeItem, PatchApplyBeginEvent, PatchApplyEndEvent,
    PatchApplyEndStatus, PatchApplyStatus, Question, SessionConfiguredEvent, ThreadEvent,
    ThreadEventMsg, ThreadItem, TokenCountEvent, UpdatePlanArgs, UserMessageEvent,
    WebSearchBeginEvent, WebSearchEndEvent,
};

/// The Codex events an engine event stands for, in order (often one, sometimes none).
pub fn codex_events(event: &ThreadEvent) -> Vec<Event> {
    let turn_id = event.turn_id.clone().unwrap_or_default();
    let msgs: Vec<EventMsg> = match &event.msg {
        ThreadEventMsg::SessionConfigured(e) => vec![EventMsg::SessionConfigured(
            SessionConfiguredEvent::clone(e),
        )],
        ThreadEventMsg::TurnStarted(e) => vec![EventMsg::TaskStarted(e.clone())],
        ThreadEventMsg::ItemStarted(e) => match &e.item {
            ThreadItem::Plan(plan) => vec![plan_update(plan)],
            ThreadItem::WebSearch(search) => vec![EventMsg::WebSearchBegin(WebSearchBeginEvent {
                call_id: search.id.clone(),
            })],
            ThreadItem::UserMessage(_)
            | ThreadItem::AgentMessage(_)
            | ThreadItem::Reasoning(_)
            | ThreadItem::CommandExecution(_)
            | ThreadItem::FileChange(_)
            | ThreadItem::EnteredReviewMode(_)
            | ThreadItem::ExitedReviewMode(_)
            | ThreadItem::ContextCompaction(_)
            | ThreadItem::McpToolCall(_) => Vec::new(),
        },
        ThreadEventMsg::ItemUpdated(e) => match &e.item {
            ThreadItem::CommandExecution(cmd) if cmd.started => {
                vec![EventMsg::ExecCommandBegin(exec_begin(cmd, &turn_id))]
            }
            ThreadItem::FileChange(patch) if patch.started => {
                vec![EventMsg::PatchApplyBegin(patch_begin(patch, &turn_id))]
            }
            ThreadItem::Plan(plan) => vec![plan_update(plan)],
            ThreadItem::McpToolCall(call) if call.started => {
                vec![EventMsg::McpToolCallBegin(mcp_begin(call))]
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
            | ThreadItem::WebSearch(_) => Vec::new(),
        },
        ThreadEventMsg::ItemCompleted(e) => match &e.item {
            ThreadItem::EnteredReviewMode(review) => {
                vec![EventMsg::EnteredReviewMode(review.request.clone())]
            }
            ThreadItem::ExitedReviewMode(review) => {
                vec![EventMsg::ExitedReviewMode(ExitedReviewModeEvent {
                    review_output: review.output.clone(),
                })]
            }
            ThreadItem::WebSearch(search) => vec![EventMsg::WebSearchEnd(WebSearchEndEvent {
                call_id: search.id.clone(),
                query: search.query.clone(),
            })],
            ThreadItem::UserMessage(m) => vec![EventMsg::UserMessage(UserMessageEvent {
                message: m.text.clone(),
            })],
            ThreadItem::AgentMessage(m) => vec![EventMsg::AgentMessage(AgentMessageEvent {
                message: m.text.clone(),
            })],
            ThreadItem::Reasoning(r) if !r.text.is_empty() => {
                vec![EventMsg::AgentReasoning(AgentReasoningEvent {
                    text: r.text.clone(),
                })]
            }
            ThreadItem::CommandExecution(cmd) if cmd.started => {
                vec![EventMsg::ExecCommandEnd(exec_end(cmd, &turn_id))]
            }
            // As Codex does, a declined command still opens and closes its entry.
            ThreadItem::CommandExecution(cmd) if cmd.status == CommandExecutionStatus::Declined => {
                vec![
                    EventMsg::ExecCommandBegin(exec_begin(cmd, &turn_id)),
                    EventMsg::ExecCommandEnd(exec_end(cmd, &turn_id)),
                ]
            }
            ThreadItem::FileChange(patch) if patch.started => {
                vec![EventMsg::PatchApplyEnd(patch_end(patch, &turn_id))]
            }
            // Codex announces a compaction once it is done, with an empty payload; one
            // that failed changed nothing, and the turn's error says why.
            ThreadItem::ContextCompaction(c) if c.status == ContextCompactionStatus::Completed => {
                vec![EventMsg::ContextCompacted(ContextCompactedEvent {})]
            }
            ThreadItem::FileChange(patch) if patch.status == PatchApplyStatus::Declined => {
                vec![
                    EventMsg::PatchApplyBegin(patch_begin(patch, &turn_id)),
                    EventMsg::PatchApplyEnd(patch_end(patch, &turn_id)),
                ]
            }
            ThreadItem::McpToolCall(call) if call.started => {
                vec![EventMsg::McpToolCallEnd(mcp_end(call))]
            }
            // As Codex does, an MCP call that was never sent (declined, its server
            // unavailable) still opens and closes its entry.
            ThreadItem::McpToolCall(call) => vec![
                EventMsg::McpToolCallBegin(mcp_begin(call)),
                EventMsg::McpToolCallEnd(mcp_end(call)),
            ],
            // One that never started otherwise (interrupted while waiting, a patch that
            // did not verify) has no entry to close.
            ThreadItem::Reasoning(_)
            | ThreadItem::CommandExecution(_)
            | ThreadItem::FileChange(_)
            | ThreadItem::Plan(_)
            | ThreadItem::ContextCompaction(_) => Vec::new(),
        },
        ThreadEventMsg::AgentMessageDelta(d) => vec![EventMsg::AgentMessageDelta(DeltaEvent {
            delta: d.delta.clone(),
        })],
        ThreadEventMsg::ReasoningDelta(d) => vec![EventMsg::AgentReasoningDelta(DeltaEvent {
            delta: d.delta.clone(),
        })],
        ThreadEventMsg::CommandOutputDelta(d) => {
            vec![EventMsg::ExecCommandOutputDelta(
                ExecCommandOutputDeltaEvent {
                    call_id: d.call_id.clone(),
                    stream: d.stream,
                    chunk: d.chunk.clone(),
                },
            )]
        }
        ThreadEventMsg::QuestionAsked(asked) => match &asked.question {
            Question::Exec(q) => vec![EventMsg::ExecApprovalRequest(q.clone())],
            Question::Patch(q) => vec![EventMsg::ApplyPatchApprovalRequest(q.clone())],
            // Codex has no event for it: each front door asks it through its approver.
            Question::McpToolCall(_) | Question::McpElicitation(_) | Question::UserInput(_) => {
                Vec::new()
            }
        },
        ThreadEventMsg::ApprovalResolved(_) => Vec::new(),
        ThreadEventMsg::TurnDiff(e) => vec![EventMsg::TurnDiff(e.clone())],
        ThreadEventMsg::TokenCount(e) => vec![EventMsg::TokenCount(TokenCountEvent::clone(e))],
        ThreadEventMsg::StreamError(e) => vec![EventMsg::StreamError(e.clone())],
        ThreadEventMsg::Warning(e) => vec![EventMsg::Warning(e.clone())],
        ThreadEventMsg::TurnComplete(e) => vec![EventMsg::TaskComplete(e.clone())],
        ThreadEventMsg::TurnAborted(e) => vec![EventMsg::TurnAborted(e.clone())],
        // Codex's `error` event carries no turn timing.
        ThreadEventMsg::TurnFailed(e) => vec![EventMsg::Error(crate::ErrorEvent {
            completed_at: None,
            duration_ms: None,
            ..e.clone()
        })],
        ThreadEventMsg::ShutdownComplete => vec![EventMsg::ShutdownComplete],
        ThreadEventMsg::McpStartupUpdate(e) => vec![EventMsg::McpStartupUpdate(e.clone())],
        ThreadEventMsg::McpStartupComplete(e) => vec![EventMsg::McpStartupComplete(e.clone())],
    };
    msgs.into_iter()
        .map(|msg| Event {
            id: event.submission_id.to_string(),
            msg,
        })
        .collect()
}

fn mcp_begin(call: &crate::McpToolCallItem) -> crate::McpToolCallBeginEvent {
    crate::McpToolCallBeginEvent {
        call_id: call.call_id.clone(),
        invocation: call.invocation(),
    }
}

fn mcp_end(call: &crate::McpToolCallItem) -> crate::McpToolCallEndEvent {
    crate::McpToolCallEndEvent {
        call_id: call.call_id.clone(),
        invocation: call.invocation(),
        duration: call.duration.unwrap_or_default(),
        result: match (&call.result, &call.error) {
            (Some(result), _) => Ok(result.clone()),
            (None, Some(error)) => Err(error.clone()),
            (None, None) => Err("the call did not finish".to_string()),
        },
    }
}

fn plan_update(plan: &crate::PlanUpdateItem) -> EventMsg {
    EventMsg::PlanUpdate(UpdatePlanArgs {
        explanation: plan.explanation.clone(),
        plan: plan.plan.clone(),
    })
}

fn exec_begin(cmd: &CommandExecutionItem, turn_id: &str) -> ExecCommandBeginEvent {
    ExecCommandBeginEvent {
        call_id: cmd.call_id.clone(),
        turn_id: turn_id.to_string(),
        command: cmd.command.clone(),
        cwd: cmd.cwd.clone(),
        parsed_cmd: cmd.parsed_cmd.clone(),
        process_id: cmd.process_id.clone(),
    }
}

fn exec_end(cmd: &CommandExecutionItem, turn_id: &str) -> ExecCommandEndEvent {
    ExecCommandEndEvent {
        call_id: cmd.call_id.clone(),
        turn_id: turn_id.to_string(),
        command: cmd.command.clone(),
        cwd: cmd.cwd.clone(),
        stdout: cmd.stdout.clone(),
        stderr: cmd.stderr.clone(),
        aggregated_output: cmd.aggregated_output.clone(),
        exit_code: cmd.exit_code.unwrap_or(-1),
        duration: cmd.duration.unwrap_or_default(),
        formatted_output: cmd.formatted_output.clone(),
        status: match cmd.status {
            CommandExecutionStatus::Declined => ExecCommandStatus::Declined,
            CommandExecutionStatus::Completed => ExecCommandStatus::Completed,
            CommandExecutionStatus::InProgress | CommandExecutionStatus::Failed => {
                ExecCommandStatus::Failed
            }
        },
        process_id: cmd.process_id.clone(),
    }
}

fn patch_begin(patch: &FileChangeItem, turn_id: &str) -> PatchApplyBeginEvent {
    PatchApplyBeginEvent {
        call_id: patch.call_id.clone(),
        turn_id: turn_id.to_string(),
        auto_approved: patch.auto_approved,
        changes: patch.changes.clone(),
    }
}

fn patch_end(patch: &FileChangeItem, turn_id: &str) -> PatchApplyEndEvent {
    PatchApplyEndEvent {
        call_id: patch.call_id.clone(),
        turn_id: turn_id.to_string(),
        stdout: patch.stdout.clone(),
        stderr: patch.stderr.clone(),
        success: patch.status == PatchApplyStatus::Completed,
        status: match patch.status {
            PatchApplyStatus::Declined => PatchApplyEndStatus::Declined,
            PatchApplyStatus::Completed => PatchApplyEndStatus::Completed,
            PatchApplyStatus::InProgress | PatchApplyStatus::Failed => PatchApplyEndStatus::Failed,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CommandExecutionStatus, ItemEvent, ThreadItem};
    use pretty_assertions::assert_eq;

    fn command(status: CommandExecutionStatus, started: bool) -> ThreadItem {
        ThreadItem::CommandExecution(Box::new(CommandExecutionItem {
            id: "item-1".into(),
            call_id: "call-1".into(),
            command: vec!["ls".into()],
            cwd: "/w".into(),
            parsed_cmd: Vec::new(),
            status,
            started,
            exit_code: started.then_some(0),
            stdout: "a\n".into(),
            stderr: String::new(),
            aggregated_output: "a\n".into(),
            duration: None,
            formatted_output: "Exit code: 0".into(),
            process_id: None,
        }))
    }

    fn event(msg: ThreadEventMsg) -> ThreadEvent {
        ThreadEvent {
            seq: 7,
            thread_id: "t".into(),
            turn_id: Some("turn-1".into()),
            submission_id: "3".into(),
            msg,
        }
    }

    fn kinds(events: &[Event]) -> Vec<String> {
        events
            .iter()
            .map(|e| {
                serde_json::to_value(&e.msg).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn a_command_item_becomes_begin_then_end_with_the_turn_and_submission_ids() {
        let started = event(ThreadEventMsg::ItemStarted(ItemEvent {
            item: command(CommandExecutionStatus::InProgress, false),
        }));
        assert!(codex_events(&started).is_empty());
        let running = codex_events(&event(ThreadEventMsg::ItemUpdated(ItemEvent {
            item: command(CommandExecutionStatus::InProgress, true),
        })));
        assert_eq!(kinds(&running), ["exec_command_begin"]);
        assert_eq!(running[0].id, "3");
        let EventMsg::ExecCommandBegin(begin) = &running[0].msg else {
            unreachable!()
        };
        assert_eq!(begin.turn_id, "turn-1");
        let done = codex_events(&event(ThreadEventMsg::ItemCompleted(ItemEvent {
            item: command(CommandExecutionStatus::Completed, true),
        })));
        assert_eq!(kinds(&done), ["exec_command_end"]);
    }

    #[test]
    fn a_declined_command_opens_and_closes_its_entry_and_an_interrupted_wait_has_none() {
        let declined = codex_events(&event(ThreadEventMsg::ItemCompleted(ItemEvent {
            item: command(CommandExecutionStatus::Declined, false),
        })));
        assert_eq!(kinds(&declined), ["exec_command_begin", "exec_command_end"]);
        let EventMsg::ExecCommandEnd(end) = &declined[1].msg else {
            unreachable!()
        };
        assert_eq!(end.status, ExecCommandStatus::Declined);
        let cut_short = event(ThreadEventMsg::ItemCompleted(ItemEvent {
            item: command(CommandExecutionStatus::Failed, false),
        }));
        assert!(codex_events(&cut_short).is_empty());
    }

    #[test]
    fn a_completed_compaction_is_codex_context_compacted() {
        let item = |status| {
            ThreadItem::ContextCompaction(crate::ContextCompactionItem {
                id: "item-9".into(),
                status,
            })
        };
        let started = event(ThreadEventMsg::ItemStarted(ItemEvent {
            item: item(ContextCompactionStatus::InProgress),
        }));
        assert!(codex_events(&started).is_empty());
        let failed = event(ThreadEventMsg::ItemCompleted(ItemEvent {
            item: item(ContextCompactionStatus::Failed),
        }));
        assert!(codex_events(&failed).is_empty(), "nothing was compacted");
        let done = codex_events(&event(ThreadEventMsg::ItemCompleted(ItemEvent {
            item: item(ContextCompactionStatus::Completed),
        })));
        assert_eq!(done.len(), 1);
        assert_eq!(
            serde_json::to_value(&done[0].msg).unwrap(),
            serde_json::json!({"type": "context_compacted"})
        );
        assert_eq!(done[0].id, "3");
    }

    #[test]
    fn turn_ends_map_to_codex_turn_ends() {
        let failed = codex_events(&event(ThreadEventMsg::TurnFailed(crate::ErrorEvent::new(
            "boom",
        ))));
        assert_eq!(kinds(&failed), ["error"]);
    }
}
