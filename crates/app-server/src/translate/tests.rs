use std::time::Duration;

use deputy_protocol::{
    ApprovalDecision, ApprovalResolvedEvent, CommandExecutionItem, ErrorEvent,
    ExecApprovalRequestEvent, ItemEvent, Question, QuestionAsked, TaskCompleteEvent,
    TaskStartedEvent, TurnAbortReason, TurnAbortedEvent, UserMessageItem,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::*;
use crate::protocol::{ThreadItem as WireItem, UserInput};

fn event(msg: ThreadEventMsg) -> ThreadEvent {
    ThreadEvent {
        seq: 1,
        thread_id: "thread".into(),
        turn_id: Some("turn".into()),
        submission_id: "sub".into(),
        msg,
    }
}

/// Each outbound message as the client would read it.
fn wire(event: &ThreadEvent) -> Vec<Value> {
    wire_started_at(event, None)
}

/// [`wire`], the event's turn having started at `started_at`.
fn wire_started_at(event: &ThreadEvent, started_at: Option<i64>) -> Vec<Value> {
    thread_event(event, started_at)
        .into_iter()
        .map(|n| serde_json::from_str(&n.to_json().unwrap()).unwrap())
        .collect()
}

fn command(status: engine::CommandExecutionStatus) -> engine::CommandExecutionItem {
    CommandExecutionItem {
        id: "item".into(),
        call_id: "call".into(),
        command: vec!["bash".into(), "-lc".into(), "cat a.txt".into()],
        cwd: "/w".into(),
        parsed_cmd: vec![ParsedCommand::Read {
            cmd: "cat a.txt".into(),
            name: "a.txt".into(),
            path: "a.txt".into(),
        }],
        status,
        started: true,
        exit_code: None,
        stdout: String::new(),
        stderr: String::new(),
        aggregated_output: String::new(),
        duration: None,
        formatted_output: String::new(),
        process_id: None,
    }
}

#[test]
fn a_command_item_maps_to_command_execution() {
    let mut done = command(engine::CommandExecutionStatus::Completed);
    done.exit_code = Some(0);
    done.aggregated_output = "x\n".into();
    done.duration = Some(Duration::from_millis(1500));
    let started = event(ThreadEventMsg::ItemStarted(ItemEvent {
        item: engine::ThreadItem::CommandExecution(Box::new(command(
            engine::CommandExecutionStatus::InProgress,
        ))),
    }));
    let completed = event(ThreadEventMsg::ItemCompleted(ItemEvent {
        item: engine::ThreadItem::CommandExecution(Box::new(done)),
    }));
    assert_eq!(
        wire(&started),
        [json!({"method": "item/started", "params": {
            "item": {
                "type": "commandExecution", "id": "item", "command": "bash -lc 'cat a.txt'",
                "cwd": "/w", "processId": null, "source": "agent", "status": "inProgress",
                "commandActions": [{"type": "read", "command": "cat a.txt", "name": "a.txt", "path": "a.txt"}],
                "aggregatedOutput": null, "exitCode": null, "durationMs": null,
            },
            "threadId": "thread", "turnId": "turn",
        }})]
    );
    let item = &wire(&completed)[0]["params"]["item"];
    assert_eq!(item["status"], "completed");
    assert_eq!(item["exitCode"], 0);
    assert_eq!(item["aggregatedOutput"], "x\n");
    assert_eq!(item["durationMs"], 1500);
}

#[test]
fn a_question_makes_the_thread_wait_on_approval_until_it_is_answered() {
    // The question itself goes out through the thread's approver (`crate::approver`).
    let asked = event(ThreadEventMsg::QuestionAsked(Box::new(QuestionAsked {
        item_id: "item".into(),
        question: Question::Exec(ExecApprovalRequestEvent {
            call_id: "call".into(),
            turn_id: "turn".into(),
            command: vec!["touch".into(), "x y".into()],
            cwd: "/w".into(),
            reason: Some("outside the sandbox".into()),
            parsed_cmd: Vec::new(),
        }),
    })));
    assert_eq!(
        wire(&asked),
        [json!({"method": "thread/status/changed", "params": {
            "threadId": "thread", "status": {"type": "active", "activeFlags": ["waitingOnApproval"]},
        }})]
    );
    let resolved = event(ThreadEventMsg::ApprovalResolved(ApprovalResolvedEvent {
        item_id: "item".into(),
        call_id: "call".into(),
        decision: ApprovalDecision::Approved,
    }));
    assert_eq!(
        wire(&resolved),
        [json!({"method": "thread/status/changed", "params": {
            "threadId": "thread", "status": {"type": "active", "activeFlags": []},
        }})]
    );
}

#[test]
fn stored_turns_come_in_the_wire_shape_with_their_items_status_and_error() {
    let user = engine::ThreadItem::UserMessage(UserMessageItem {
        id: "u".into(),
        text: "hi".into(),
    });
    let in_turn = |turn: &str, msg| ThreadEvent {
        turn_id: Some(turn.into()),
        ..event(msg)
    };
    let events = [
        in_turn("1", ThreadEventMsg::ItemCompleted(ItemEvent { item: user })),
        in_turn(
            "1",
            ThreadEventMsg::TurnComplete(TaskCompleteEvent {
                turn_id: "1".into(),
                last_agent_message: None,
                completed_at: Some(9),
                duration_ms: Some(5),
            }),
        ),
        in_turn("2", ThreadEventMsg::TurnFailed(ErrorEvent::new("boom"))),
    ];

    let turns = turns(&events, None);

    assert_eq!(turns.len(), 2);
    assert_eq!(turns[0].status, TurnStatus::Completed);
    assert_eq!(
        (turns[0].completed_at, turns[0].duration_ms),
        (Some(9), Some(5))
    );
    assert_eq!(
        turns[0].items,
        [WireItem::UserMessage {
            id: "u".into(),
            content: vec![UserInput::Text {
                text: "hi".into(),
                text_elements: Vec::new()
            }],
        }]
    );
    assert_eq!(turns[1].status, TurnStatus::Failed);
    assert_eq!(turns[1].error, Some(TurnError::new("boom")));
}

#[test]
fn turn_starts_and_ends_carry_their_times_and_the_thread_status() {
    let status = |status: Value| json!({"method": "thread/status/changed", "params": {"threadId": "thread", "status": status}});
    let started = event(ThreadEventMsg::TurnStarted(TaskStartedEvent {
        turn_id: "turn".into(),
        started_at: Some(1_790_000_000),
        model_context_window: None,
    }));
    assert_eq!(
        wire(&started),
        [
            status(json!({"type": "active", "activeFlags": []})),
            json!({"method": "turn/started", "params": {"threadId": "thread", "turn": {
                "id": "turn", "items": [], "status": "inProgress", "error": null,
                "startedAt": 1_790_000_000, "completedAt": null, "durationMs": null,
            }}})
        ]
    );
    let aborted = event(ThreadEventMsg::TurnAborted(TurnAbortedEvent {
        turn_id: "turn".into(),
        reason: TurnAbortReason::Aborted,
        completed_at: Some(1_790_000_003),
        duration_ms: Some(2_500),
    }));
    assert_eq!(
        wire_started_at(&aborted, Some(1_790_000_000)),
        [
            status(json!({"type": "idle"})),
            json!({"method": "turn/completed", "params": {"threadId": "thread", "turn": {
                "id": "turn", "items": [], "status": "interrupted", "error": null,
                "startedAt": 1_790_000_000, "completedAt": 1_790_000_003, "durationMs": 2_500,
            }}})
        ]
    );
    let failed = wire(&event(ThreadEventMsg::TurnFailed(ErrorEvent {
        codex_error_info: Some(engine::CodexErrorInfo::ResponseTooManyFailedAttempts {
            http_status_code: Some(429),
        }),
        completed_at: Some(1_790_000_009),
        duration_ms: Some(9_000),
        ..ErrorEvent::new("boom")
    })));
    let error = json!({
        "message": "boom",
        "codexErrorInfo": {"responseTooManyFailedAttempts": {"httpStatusCode": 429}},
        "additionalDetails": null,
    });
    assert_eq!(
        failed,
        [
            status(json!({"type": "systemError"})),
            json!({"method": "error", "params": {
                "error": error, "willRetry": false, "threadId": "thread", "turnId": "turn",
            }}),
            json!({"method": "turn/completed", "params": {"threadId": "thread", "turn": {
                "id": "turn", "items": [], "status": "failed", "error": error,
                "startedAt": null, "completedAt": 1_790_000_009, "durationMs": 9_000,
            }}})
        ]
    );
}

#[test]
fn a_retried_stream_error_is_classified_as_codex_classifies_it() {
    let retried = wire(&event(ThreadEventMsg::StreamError(
        deputy_protocol::StreamErrorEvent {
            message: "model server returned 503; retrying 1/4".into(),
            codex_error_info: Some(engine::CodexErrorInfo::ResponseStreamDisconnected {
                http_status_code: Some(503),
            }),
        },
    )));
    assert_eq!(
        retried,
        [json!({"method": "error", "params": {
            "error": {
                "message": "model server returned 503; retrying 1/4",
                "codexErrorInfo": {"responseStreamDisconnected": {"httpStatusCode": 503}},
                "additionalDetails": null,
            },
            "willRetry": true, "threadId": "thread", "turnId": "turn",
        }})]
    );
}

#[test]
fn deltas_name_their_item() {
    let delta = event(ThreadEventMsg::CommandOutputDelta(
        deputy_protocol::CommandOutputDeltaEvent {
            item_id: "item".into(),
            call_id: "call".into(),
            stream: deputy_protocol::ExecOutputStream::Stdout,
            chunk: b"hi\n".to_vec(),
        },
    ));
    assert_eq!(
        wire(&delta),
        [
            json!({"method": "item/commandExecution/outputDelta", "params": {
                "threadId": "thread", "turnId": "turn", "itemId": "item", "delta": "hi\n",
            }})
        ]
    );
    let reasoning = event(ThreadEventMsg::ReasoningDelta(ItemDeltaEvent {
        item_id: "r".into(),
        delta: "hm".into(),
    }));
    assert_eq!(wire(&reasoning)[0]["params"]["summaryIndex"], 0);
}

#[test]
fn review_mode_items_carry_their_rendered_review() {
    let entered = event(ThreadEventMsg::ItemStarted(ItemEvent {
        item: engine::ThreadItem::EnteredReviewMode(Box::new(engine::EnteredReviewModeItem {
            id: "in".into(),
            review: "the uncommitted changes".into(),
            request: engine::ReviewRequest {
                target: engine::ReviewTarget::UncommittedChanges,
                prompt: None,
                model: None,
                user_facing_hint: "the uncommitted changes".into(),
            },
        })),
    }));
    let exited = event(ThreadEventMsg::ItemCompleted(ItemEvent {
        item: engine::ThreadItem::ExitedReviewMode(Box::new(engine::ExitedReviewModeItem {
            id: "out".into(),
            review: "Looks right.".into(),
            output: None,
        })),
    }));
    assert_eq!(
        wire(&entered)[0]["params"]["item"],
        json!({"type": "enteredReviewMode", "id": "in", "review": "the uncommitted changes"})
    );
    assert_eq!(
        wire(&exited)[0]["params"]["item"],
        json!({"type": "exitedReviewMode", "id": "out", "review": "Looks right."})
    );
}
