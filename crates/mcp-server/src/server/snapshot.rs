//! The snapshot a conversation stream opens with (`notifications/initial_state`):
//! every event of the conversation so far as Codex events, kept bounded. Streaming
//! deltas are left out where the completed item they add up to is present, and large
//! text fields are cut to head and tail with a note of what was dropped; no event is
//! left out otherwise, except the thread's `session_configured` announcements, which
//! `conversationCreate` answers with instead. It also tells which approval requests are
//! still unanswered, so the stream can ask them once the snapshot is out. A snapshot
//! sent to a resumable HTTP stream is tagged with the seq it runs through, so that a
//! resumption rebuilds it from the log ([`read_snapshot`]) instead of keeping it.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use deputy_core::driver::Asked;
use deputy_core::exec::truncate_middle;
use deputy_core::{Subscription, Thread};
use deputy_protocol::{EventMsg, FileChange, ThreadEvent, ThreadEventMsg, codex_events};
use rmcp::model::ServerNotification;
use tokio_util::sync::CancellationToken;

use crate::log_tags::{LogTag, LogTags, SNAPSHOT};
use crate::wire::{
    self, ConversationEventParams, ConversationMeta, InitialState, InitialStateParams,
    InitialStatePayload,
};

/// Most bytes a text field of a snapshot event keeps, the note of the cut included.
pub(crate) const FIELD_BYTES: usize = 64 * 1024;

/// Room left in a cut field for the note saying how much was cut.
const NOTE_ROOM: usize = 64;

/// A conversation's events so far, gathered in order.
#[derive(Debug, Default)]
pub(crate) struct Snapshot {
    entries: Vec<Entry>,
    /// Items whose completed form is in the snapshot.
    completed: HashSet<String>,
    /// Questions not answered (yet), in the order they were asked.
    pending: Vec<Asked>,
}

#[derive(Debug)]
struct Entry {
    /// For a streaming delta: the item it belongs to.
    delta_of: Option<String>,
    msg: EventMsg,
}

/// What a finished snapshot holds.
#[derive(Debug)]
pub(crate) struct Finished {
    /// The Codex events, in order.
    pub(crate) events: Vec<EventMsg>,
    /// The questions still waiting for an answer, in order.
    pub(crate) pending_approvals: Vec<Asked>,
}

impl Snapshot {
    /// Adds the next event of the conversation.
    pub(crate) fn push(&mut self, event: &Arc<ThreadEvent>) {
        let delta_of = match &event.msg {
            ThreadEventMsg::AgentMessageDelta(delta) | ThreadEventMsg::ReasoningDelta(delta) => {
                Some(delta.item_id.clone())
            }
            ThreadEventMsg::CommandOutputDelta(delta) => Some(delta.item_id.clone()),
            ThreadEventMsg::ItemCompleted(completed) => {
                self.completed.insert(completed.item.id().to_string());
                None
            }
            ThreadEventMsg::QuestionAsked(_) => {
                self.pending.extend(Asked::from_event(event));
                None
            }
            ThreadEventMsg::ApprovalResolved(resolved) => {
                self.pending
                    .retain(|asked| asked.call_id() != resolved.call_id);
                None
            }
            ThreadEventMsg::TurnComplete(_)
            | ThreadEventMsg::TurnAborted(_)
            | ThreadEventMsg::TurnFailed(_) => {
                let ended = event.turn_id.as_deref().unwrap_or_default();
                self.pending.retain(|asked| asked.turn_id != ended);
                None
            }
            // A thread announces itself again when it is resumed: whatever waited
            // before belonged to turns that died with the earlier process. The
            // announcement itself is `conversationCreate`'s result, not a stream event
            // (a fresh conversation's snapshot is `{"events": []}`, as in Codex).
            ThreadEventMsg::SessionConfigured(_) => {
                self.pending.clear();
                return;
            }
            ThreadEventMsg::TurnStarted(_)
            | ThreadEventMsg::ItemStarted(_)
            | ThreadEventMsg::ItemUpdated(_)
            | ThreadEventMsg::TurnDiff(_)
            | ThreadEventMsg::TokenCount(_)
            | ThreadEventMsg::StreamError(_)
            | ThreadEventMsg::Warning(_)
            | ThreadEventMsg::ShutdownComplete
            | ThreadEventMsg::McpStartupUpdate(_)
            | ThreadEventMsg::McpStartupComplete(_) => None,
        };
        for codex in codex_events(event) {
            self.entries.push(Entry {
                delta_of: delta_of.clone(),
                msg: bounded(codex.msg),
            });
        }
    }

    /// The snapshot: deltas of items completed in it left out.
    pub(crate) fn finish(self) -> Finished {
        let Self {
            entries,
            completed,
            pending,
        } = self;
        let events = entries
            .into_iter()
            .filter(|entry| {
                entry
                    .delta_of
                    .as_ref()
                    .is_none_or(|item| !completed.contains(item))
            })
            .map(|entry| entry.msg)
            .collect();
        Finished {
            events,
            pending_approvals: pending,
        }
    }
}

/// `msg` with every large text field cut to [`FIELD_BYTES`].
fn bounded(mut msg: EventMsg) -> EventMsg {
    match &mut msg {
        EventMsg::UserMessage(e) => cut(&mut e.message),
        EventMsg::AgentMessage(e) => cut(&mut e.message),
        EventMsg::AgentMessageDelta(e) | EventMsg::AgentReasoningDelta(e) => cut(&mut e.delta),
        EventMsg::AgentReasoning(e) => cut(&mut e.text),
        EventMsg::ExecCommandEnd(e) => {
            for field in [
                &mut e.stdout,
                &mut e.stderr,
                &mut e.aggregated_output,
                &mut e.formatted_output,
            ] {
                cut(field);
            }
        }
        EventMsg::ApplyPatchApprovalRequest(e) => cut_changes(&mut e.changes),
        EventMsg::PatchApplyBegin(e) => cut_changes(&mut e.changes),
        EventMsg::PatchApplyEnd(e) => {
            cut(&mut e.stdout);
            cut(&mut e.stderr);
        }
        EventMsg::TurnDiff(e) => cut(&mut e.unified_diff),
        EventMsg::Error(e) => cut(&mut e.message),
        EventMsg::TaskComplete(e) => {
            if let Some(message) = &mut e.last_agent_message {
                cut(message);
            }
        }
        // Output chunks are at most 64 KiB as read; the rest carry no large text.
        EventMsg::ExecCommandOutputDelta(_)
        | EventMsg::SessionConfigured(_)
        | EventMsg::TaskStarted(_)
        | EventMsg::ExecCommandBegin(_)
        | EventMsg::ExecApprovalRequest(_)
        | EventMsg::PlanUpdate(_)
        | EventMsg::TokenCount(_)
        | EventMsg::StreamError(_)
        | EventMsg::Warning(_)
        | EventMsg::TurnAborted(_)
        | EventMsg::EnteredReviewMode(_)
        | EventMsg::ExitedReviewMode(_)
        | EventMsg::ContextCompacted(_)
        | EventMsg::WebSearchBegin(_)
        | EventMsg::WebSearchEnd(_)
        | EventMsg::ShutdownComplete => {}
        // An MCP tool's result may hold large text and images.
        EventMsg::McpToolCallEnd(e) => match &mut e.result {
            Ok(result) => {
                for block in &mut result.content {
                    cut_json(block);
                }
                if let Some(structured) = &mut result.structured_content {
                    cut_json(structured);
                }
            }
            Err(message) => cut(message),
        },
        EventMsg::McpToolCallBegin(_)
        | EventMsg::McpStartupUpdate(_)
        | EventMsg::McpStartupComplete(_) => {}
    }
    msg
}

/// Every string in `value` cut to [`FIELD_BYTES`].
fn cut_json(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(text) => cut(text),
        serde_json::Value::Array(items) => items.iter_mut().for_each(cut_json),
        serde_json::Value::Object(map) => map.values_mut().for_each(cut_json),
        serde_json::Value::Null | serde_json::Value::Bool(_) | serde_json::Value::Number(_) => {}
    }
}

fn cut_changes(changes: &mut BTreeMap<PathBuf, FileChange>) {
    for change in changes.values_mut() {
        match change {
            FileChange::Add { content } | FileChange::Delete { content } => cut(content),
            FileChange::Update { unified_diff, .. } => cut(unified_diff),
        }
    }
}

/// Cuts the middle out of `text` when it is longer than [`FIELD_BYTES`], leaving a
/// note of how many bytes went.
fn cut(text: &mut String) {
    if text.len() > FIELD_BYTES {
        *text = truncate_middle(text, FIELD_BYTES - NOTE_ROOM).0;
    }
}

/// A snapshot's tag left for the event store, to take back if it was not sent.
pub(crate) struct SnapshotTag<'a>(Option<(&'a LogTags, &'a str)>);

impl SnapshotTag<'_> {
    /// The snapshot was not sent.
    pub(crate) fn withdraw(self) {
        if let Some((tags, thread)) = self.0 {
            tags.withdraw(thread, SNAPSHOT);
        }
    }
}

/// Tells `tags` (if the snapshot goes to a resumable stream) that the `initial_state`
/// about to be sent for `thread` holds its events through `snapshot_end`.
pub(crate) fn tag_snapshot<'a>(
    tags: Option<&'a LogTags>,
    thread: &'a Thread,
    snapshot_end: u64,
) -> SnapshotTag<'a> {
    SnapshotTag(tags.map(|tags| {
        let tag = LogTag {
            seq: snapshot_end,
            part: 0,
            kind: SNAPSHOT.to_string(),
        };
        tags.put(thread.id(), SNAPSHOT, tag);
        (tags, thread.id())
    }))
}

/// What a stream starts with.
pub(crate) struct Opened {
    /// `notifications/initial_state`: the conversation so far.
    pub(crate) initial_state: ServerNotification,
    /// The questions in it still waiting for an answer.
    pub(crate) open_questions: Vec<Asked>,
}

/// Reads `thread`'s events up to `snapshot_end` (the moment the stream was opened) from
/// `events`; `None` if `stop` fires first.
pub(crate) async fn read_snapshot(
    thread: &Thread,
    events: &mut Subscription,
    snapshot_end: u64,
    stop: &CancellationToken,
) -> Option<Opened> {
    let mut snapshot = Snapshot::default();
    loop {
        let next = tokio::select! {
            biased;
            () = stop.cancelled() => return None,
            next = events.next_through(snapshot_end) => next,
        };
        match next {
            Some(event) => snapshot.push(&event),
            None => break,
        }
    }
    let finished = snapshot.finish();
    let params = InitialStateParams {
        meta: ConversationMeta {
            conversation_id: thread.id().to_string(),
        },
        initial_state: InitialStatePayload {
            events: finished
                .events
                .into_iter()
                .map(|msg| ConversationEventParams { msg })
                .collect(),
        },
    };
    Some(Opened {
        initial_state: wire::notification::<InitialState>(&params),
        open_questions: finished.pending_approvals,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use deputy_protocol::{
        AgentMessageItem, CommandExecutionItem, CommandExecutionStatus, CommandOutputDeltaEvent,
        ExecApprovalRequestEvent, ExecOutputStream, ItemDeltaEvent, ItemEvent, Question,
        QuestionAsked, TaskCompleteEvent, ThreadItem,
    };
    use pretty_assertions::assert_eq;

    fn event(seq: u64, turn: &str, msg: ThreadEventMsg) -> Arc<ThreadEvent> {
        Arc::new(ThreadEvent {
            seq,
            thread_id: "t".into(),
            turn_id: Some(turn.into()),
            submission_id: "1".into(),
            msg,
        })
    }

    fn kinds(events: &[EventMsg]) -> Vec<String> {
        events
            .iter()
            .map(|e| {
                serde_json::to_value(e).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    }

    fn message_delta(seq: u64, item: &str) -> Arc<ThreadEvent> {
        event(
            seq,
            "turn",
            ThreadEventMsg::AgentMessageDelta(ItemDeltaEvent {
                item_id: item.into(),
                delta: "Do".into(),
            }),
        )
    }

    fn command(output: String) -> ThreadItem {
        ThreadItem::CommandExecution(Box::new(CommandExecutionItem {
            id: "cmd".into(),
            call_id: "call".into(),
            command: vec!["yes".into()],
            cwd: "/w".into(),
            parsed_cmd: Vec::new(),
            status: CommandExecutionStatus::Completed,
            started: true,
            exit_code: Some(0),
            stdout: output.clone(),
            stderr: String::new(),
            aggregated_output: output.clone(),
            duration: None,
            formatted_output: output,
            process_id: None,
        }))
    }

    #[test]
    fn deltas_of_completed_items_are_left_out_and_open_ones_kept() {
        let mut snapshot = Snapshot::default();
        snapshot.push(&message_delta(1, "done"));
        snapshot.push(&event(
            2,
            "turn",
            ThreadEventMsg::ItemCompleted(ItemEvent {
                item: ThreadItem::AgentMessage(AgentMessageItem {
                    id: "done".into(),
                    text: "Done".into(),
                }),
            }),
        ));
        snapshot.push(&message_delta(3, "streaming"));
        let finished = snapshot.finish();
        assert_eq!(
            kinds(&finished.events),
            ["agent_message", "agent_message_delta"]
        );
    }

    #[test]
    fn large_outputs_are_cut_to_head_and_tail_with_a_note() {
        let output = format!("{}{}", "h".repeat(3_000_000), "t".repeat(3_000_000));
        let mut snapshot = Snapshot::default();
        snapshot.push(&event(
            1,
            "turn",
            ThreadEventMsg::CommandOutputDelta(CommandOutputDeltaEvent {
                item_id: "cmd".into(),
                call_id: "call".into(),
                stream: ExecOutputStream::Stdout,
                chunk: vec![b'h'; 64 * 1024],
            }),
        ));
        snapshot.push(&event(
            2,
            "turn",
            ThreadEventMsg::ItemCompleted(ItemEvent {
                item: command(output),
            }),
        ));
        let finished = snapshot.finish();
        assert_eq!(kinds(&finished.events), ["exec_command_end"]);
        let EventMsg::ExecCommandEnd(end) = &finished.events[0] else {
            unreachable!()
        };
        for field in [&end.stdout, &end.aggregated_output, &end.formatted_output] {
            assert!(field.len() <= FIELD_BYTES, "{}", field.len());
            assert!(field.starts_with("hhh") && field.ends_with("ttt"));
            assert!(field.contains("bytes truncated"));
        }
    }

    #[test]
    fn only_unanswered_approvals_of_open_turns_are_pending() {
        let request = |seq, turn: &str, call: &str| {
            event(
                seq,
                turn,
                ThreadEventMsg::QuestionAsked(Box::new(QuestionAsked {
                    item_id: format!("item-{call}"),
                    question: Question::Exec(ExecApprovalRequestEvent {
                        call_id: call.into(),
                        turn_id: turn.into(),
                        command: vec!["touch".into(), "x".into()],
                        cwd: "/w".into(),
                        reason: None,
                        parsed_cmd: Vec::new(),
                    }),
                })),
            )
        };
        let mut snapshot = Snapshot::default();
        snapshot.push(&request(1, "old", "a"));
        snapshot.push(&event(
            2,
            "old",
            ThreadEventMsg::TurnComplete(TaskCompleteEvent {
                turn_id: "old".into(),
                last_agent_message: None,
                completed_at: None,
                duration_ms: None,
            }),
        ));
        snapshot.push(&request(3, "now", "b"));
        snapshot.push(&event(
            4,
            "now",
            ThreadEventMsg::ApprovalResolved(deputy_protocol::ApprovalResolvedEvent {
                item_id: "item-b".into(),
                call_id: "b".into(),
                decision: deputy_protocol::ApprovalDecision::Approved,
            }),
        ));
        snapshot.push(&request(5, "now", "c"));
        let finished = snapshot.finish();
        let pending: Vec<&str> = finished
            .pending_approvals
            .iter()
            .map(Asked::call_id)
            .collect();
        assert_eq!(pending, ["c"]);
        assert_eq!(
            kinds(&finished.events),
            [
                "exec_approval_request",
                "task_complete",
                "exec_approval_request",
                "exec_approval_request"
            ]
        );
    }
}
