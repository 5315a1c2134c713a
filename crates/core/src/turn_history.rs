//! A thread's turns rebuilt from its event log, which the rollout keeps whole (all but
//! streaming deltas): each turn with its items in the order they started, each item in
//! the last state the log recorded (its completed form once it completed). Front doors
//! that show a stored thread (`thread/read`, `thread/resume`) put these in their shapes.

use std::collections::HashMap;

use deputy_protocol::{ErrorEvent, ThreadEvent, ThreadEventMsg, ThreadItem};

/// Where a turn stands, as its events tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnState {
    /// Started and running now.
    InProgress,
    /// Finished.
    Completed,
    /// Stopped: interrupted, or cut off by the process running it stopping.
    Interrupted,
    /// Failed.
    Failed,
}

/// One turn of a thread, as its events tell it.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnRecord {
    /// The turn's id.
    pub id: String,
    /// Where it stands.
    pub state: TurnState,
    /// When it started (Unix seconds), if its start was recorded with a time.
    pub started_at: Option<i64>,
    /// When it ended (Unix seconds).
    pub completed_at: Option<i64>,
    /// How long it ran.
    pub duration_ms: Option<i64>,
    /// Why it failed.
    pub error: Option<ErrorEvent>,
    /// Its items, in the order they started, each in its last recorded state.
    pub items: Vec<ThreadItem>,
}

/// The turns `events` (in log order) tell of. A turn without an end is `InProgress` if
/// it is `running`, else `Interrupted`: the process running it stopped.
pub fn turns_from_events<'a>(
    events: impl IntoIterator<Item = &'a ThreadEvent>,
    running: Option<&str>,
) -> Vec<TurnRecord> {
    let mut turns: Vec<TurnRecord> = Vec::new();
    let mut by_id: HashMap<String, usize> = HashMap::new();
    for event in events {
        let Some(turn_id) = event.turn_id.as_deref() else {
            continue;
        };
        let at = *by_id.entry(turn_id.to_string()).or_insert_with(|| {
            turns.push(TurnRecord {
                id: turn_id.to_string(),
                state: TurnState::InProgress,
                started_at: None,
                completed_at: None,
                duration_ms: None,
                error: None,
                items: Vec::new(),
            });
            turns.len() - 1
        });
        let turn = &mut turns[at];
        match &event.msg {
            ThreadEventMsg::ItemStarted(e)
            | ThreadEventMsg::ItemUpdated(e)
            | ThreadEventMsg::ItemCompleted(e) => {
                match turn
                    .items
                    .iter_mut()
                    .find(|known| known.id() == e.item.id())
                {
                    Some(known) => *known = e.item.clone(),
                    None => turn.items.push(e.item.clone()),
                }
            }
            ThreadEventMsg::TurnStarted(started) => turn.started_at = started.started_at,
            ThreadEventMsg::TurnComplete(done) => {
                turn.state = TurnState::Completed;
                (turn.completed_at, turn.duration_ms) = (done.completed_at, done.duration_ms);
            }
            ThreadEventMsg::TurnAborted(aborted) => {
                turn.state = TurnState::Interrupted;
                (turn.completed_at, turn.duration_ms) = (aborted.completed_at, aborted.duration_ms);
            }
            ThreadEventMsg::TurnFailed(failed) => {
                turn.state = TurnState::Failed;
                turn.error = Some(failed.clone());
                (turn.completed_at, turn.duration_ms) = (failed.completed_at, failed.duration_ms);
            }
            ThreadEventMsg::SessionConfigured(_)
            | ThreadEventMsg::AgentMessageDelta(_)
            | ThreadEventMsg::ReasoningDelta(_)
            | ThreadEventMsg::CommandOutputDelta(_)
            | ThreadEventMsg::QuestionAsked(_)
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
    for turn in &mut turns {
        if turn.state == TurnState::InProgress && running != Some(turn.id.as_str()) {
            turn.state = TurnState::Interrupted;
        }
    }
    turns
}

#[cfg(test)]
mod tests {
    use deputy_protocol::{
        AgentMessageItem, ItemDeltaEvent, ItemEvent, TaskCompleteEvent, TaskStartedEvent,
        UserMessageItem,
    };

    use super::*;

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
        let started = |item| ThreadEventMsg::ItemStarted(ItemEvent { item });
        let completed = |item| ThreadEventMsg::ItemCompleted(ItemEvent { item });
        let events = [
            event(
                1,
                "1",
                ThreadEventMsg::TurnStarted(TaskStartedEvent {
                    turn_id: "1".into(),
                    started_at: Some(7),
                    model_context_window: None,
                }),
            ),
            event(2, "1", started(user.clone())),
            event(3, "1", started(agent("a", ""))),
            event(4, "1", completed(user.clone())),
            event(
                5,
                "1",
                ThreadEventMsg::AgentMessageDelta(ItemDeltaEvent {
                    item_id: "a".into(),
                    delta: "hel".into(),
                }),
            ),
            event(6, "1", completed(agent("a", "hello"))),
            event(
                7,
                "1",
                ThreadEventMsg::TurnComplete(TaskCompleteEvent {
                    turn_id: "1".into(),
                    last_agent_message: Some("hello".into()),
                    completed_at: Some(9),
                    duration_ms: Some(2000),
                }),
            ),
            event(8, "2", ThreadEventMsg::TurnFailed(ErrorEvent::new("boom"))),
            event(9, "3", started(agent("b", ""))),
        ];

        let turns = turns_from_events(&events, None);

        assert_eq!(turns.len(), 3);
        assert_eq!(turns[0].state, TurnState::Completed);
        assert_eq!(
            (
                turns[0].started_at,
                turns[0].completed_at,
                turns[0].duration_ms
            ),
            (Some(7), Some(9), Some(2000))
        );
        assert_eq!(turns[0].items, [user, agent("a", "hello")]);
        assert_eq!(turns[1].state, TurnState::Failed);
        assert_eq!(turns[1].error, Some(ErrorEvent::new("boom")));
        assert_eq!(turns[2].state, TurnState::Interrupted, "cut off by a stop");
        assert_eq!(
            turns_from_events(&events, Some("3"))[2].state,
            TurnState::InProgress
        );
    }
}
