//! A thread's turns rebuilt from its event log, which the rollout keeps whole (all
//! but streaming deltas): each turn with its items in the order they started, each
//! item in the last state the log recorded (its completed form once it completed).

use std::collections::HashMap;

use deputy_protocol::{self as engine, ThreadEvent, ThreadEventMsg};

use crate::protocol::{Turn, TurnStatus};
use crate::translate;

/// The turns `events` (in log order) tell of. A turn without an end is `inProgress` if
/// it is `running`, else `interrupted`: the process running it stopped.
pub(crate) fn turns_from_events<'a>(
    events: impl IntoIterator<Item = &'a ThreadEvent>,
    running: Option<&str>,
) -> Vec<Turn> {
    let mut turns: Vec<(Turn, Vec<engine::ThreadItem>)> = Vec::new();
    let mut by_id: HashMap<String, usize> = HashMap::new();
    for event in events {
        let Some(turn_id) = event.turn_id.as_deref() else {
            continue;
        };
        let at = *by_id.entry(turn_id.to_string()).or_insert_with(|| {
            turns.push((Turn::new(turn_id, TurnStatus::InProgress), Vec::new()));
            turns.len() - 1
        });
        let (turn, items) = &mut turns[at];
        match &event.msg {
            ThreadEventMsg::ItemStarted(e)
            | ThreadEventMsg::ItemUpdated(e)
            | ThreadEventMsg::ItemCompleted(e) => {
                match items.iter_mut().find(|known| known.id() == e.item.id()) {
                    Some(known) => *known = e.item.clone(),
                    None => items.push(e.item.clone()),
                }
            }
            ThreadEventMsg::TurnStarted(started) => turn.started_at = started.started_at,
            ThreadEventMsg::TurnComplete(done) => {
                turn.status = TurnStatus::Completed;
                (turn.completed_at, turn.duration_ms) = (done.completed_at, done.duration_ms);
            }
            ThreadEventMsg::TurnAborted(aborted) => {
                turn.status = TurnStatus::Interrupted;
                (turn.completed_at, turn.duration_ms) = (aborted.completed_at, aborted.duration_ms);
            }
            ThreadEventMsg::TurnFailed(failed) => {
                turn.status = TurnStatus::Failed;
                turn.error = Some(translate::turn_error(failed));
                (turn.completed_at, turn.duration_ms) = (failed.completed_at, failed.duration_ms);
            }
            ThreadEventMsg::SessionConfigured(_)
            | ThreadEventMsg::AgentMessageDelta(_)
            | ThreadEventMsg::ReasoningDelta(_)
            | ThreadEventMsg::CommandOutputDelta(_)
            | ThreadEventMsg::ExecApprovalRequest(_)
            | ThreadEventMsg::PatchApprovalRequest(_)
            | ThreadEventMsg::ApprovalResolved(_)
            | ThreadEventMsg::TurnDiff(_)
            | ThreadEventMsg::TokenCount(_)
            | ThreadEventMsg::StreamError(_)
            | ThreadEventMsg::Warning(_)
            | ThreadEventMsg::ShutdownComplete
            | ThreadEventMsg::McpStartupUpdate(_)
            | ThreadEventMsg::McpStartupComplete(_) => {}
        }
    }
    turns
        .into_iter()
        .map(|(mut turn, items)| {
            if turn.status == TurnStatus::InProgress && running != Some(turn.id.as_str()) {
                turn.status = TurnStatus::Interrupted;
            }
            turn.items = items.iter().map(translate::item).collect();
            turn
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use deputy_protocol::{
        AgentMessageItem, ErrorEvent, ItemDeltaEvent, ItemEvent, TaskCompleteEvent,
        TaskStartedEvent, ThreadItem, UserMessageItem,
    };
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::protocol::{ThreadItem as WireItem, UserInput};

    fn event(seq: u64, turn: &str, msg: ThreadEventMsg) -> ThreadEvent {
        ThreadEvent {
            seq,
            thread_id: "t".into(),
            turn_id: Some(turn.into()),
            submission_id: "s".into(),
            msg,
        }
    }

    fn agent(id: &str, text: &str) -> ThreadItem {
        ThreadItem::AgentMessage(AgentMessageItem {
            id: id.into(),
            text: text.into(),
        })
    }

    #[test]
    fn turns_carry_their_items_in_start_order_in_their_final_form() {
        let user = ThreadItem::UserMessage(UserMessageItem {
            id: "u".into(),
            text: "hi".into(),
        });
        let events = [
            event(
                1,
                "1",
                ThreadEventMsg::TurnStarted(TaskStartedEvent {
                    turn_id: "1".into(),
                    started_at: None,
                    model_context_window: None,
                }),
            ),
            event(
                2,
                "1",
                ThreadEventMsg::ItemStarted(ItemEvent { item: user.clone() }),
            ),
            event(
                3,
                "1",
                ThreadEventMsg::ItemStarted(ItemEvent {
                    item: agent("a", ""),
                }),
            ),
            event(
                4,
                "1",
                ThreadEventMsg::ItemCompleted(ItemEvent { item: user }),
            ),
            event(
                5,
                "1",
                ThreadEventMsg::AgentMessageDelta(ItemDeltaEvent {
                    item_id: "a".into(),
                    delta: "hel".into(),
                }),
            ),
            event(
                6,
                "1",
                ThreadEventMsg::ItemCompleted(ItemEvent {
                    item: agent("a", "hello"),
                }),
            ),
            event(
                7,
                "1",
                ThreadEventMsg::TurnComplete(TaskCompleteEvent {
                    turn_id: "1".into(),
                    last_agent_message: Some("hello".into()),
                    completed_at: None,
                    duration_ms: None,
                }),
            ),
            event(8, "2", ThreadEventMsg::TurnFailed(ErrorEvent::new("boom"))),
            event(
                9,
                "3",
                ThreadEventMsg::ItemStarted(ItemEvent {
                    item: agent("b", ""),
                }),
            ),
        ];

        let turns = turns_from_events(&events, None);

        assert_eq!(turns.len(), 3);
        assert_eq!(turns[0].status, TurnStatus::Completed);
        assert_eq!(
            turns[0].items,
            [
                WireItem::UserMessage {
                    id: "u".into(),
                    content: vec![UserInput::Text {
                        text: "hi".into(),
                        text_elements: Vec::new()
                    }],
                },
                WireItem::AgentMessage {
                    id: "a".into(),
                    text: "hello".into()
                },
            ]
        );
        assert_eq!(turns[1].status, TurnStatus::Failed);
        assert_eq!(
            turns[1].error,
            Some(crate::protocol::TurnError::new("boom"))
        );
        assert_eq!(
            turns[2].status,
            TurnStatus::Interrupted,
            "cut off by a stop"
        );
        assert_eq!(
            turns_from_events(&events, Some("3"))[2].status,
            TurnStatus::InProgress
        );
    }
}
