use std::time::Duration;

use deputy_protocol::{
    ApprovalResolvedEvent, CommandExecutionItem, ErrorEvent, ExecApprovalRequest,
    ExecApprovalRequestEvent, ItemEvent, ReviewDecision, TaskStartedEvent, TurnAbortReason,
    TurnAbortedEvent,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::*;
use crate::protocol::RequestId;

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
    thread_event(event)
        .into_iter()
        .map(|out| match out {
            Outbound::Notify(n) => serde_json::from_str(&n.to_json().unwrap()).unwrap(),
            Outbound::Ask { call_id, request } => {
                let mut v: Value =
                    serde_json::from_str(&request.to_json(&RequestId::Integer(0)).unwrap())
                        .unwrap();
                v["callId"] = json!(call_id);
                v
            }
            Outbound::Resolved { call_id } => json!({"resolved": call_id}),
        })
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
    }
}

#[test]
fn a_command_item_maps_to_command_execution() {
    let mut done = command(engine::CommandExecutionStatus::Completed);
    done.exit_code = Some(0);
    done.aggregated_output = "x\n".into();
    done.duration = Some(Duration::from_millis(1500));
    let started = event(ThreadEventMsg::ItemStarted(ItemEvent {
        item: engine::ThreadItem::CommandExecution(command(
            engine::CommandExecutionStatus::InProgress,
        )),
    }));
    let completed = event(ThreadEventMsg::ItemCompleted(ItemEvent {
        item: engine::ThreadItem::CommandExecution(done),
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
fn an_approval_request_asks_about_the_item_and_its_answer_resolves_it() {
    let asked = event(ThreadEventMsg::ExecApprovalRequest(ExecApprovalRequest {
        item_id: "item".into(),
        request: ExecApprovalRequestEvent {
            call_id: "call".into(),
            turn_id: "turn".into(),
            command: vec!["touch".into(), "x y".into()],
            cwd: "/w".into(),
            reason: Some("outside the sandbox".into()),
            parsed_cmd: vec![ParsedCommand::Unknown {
                cmd: "touch 'x y'".into(),
            }],
        },
    }));
    assert_eq!(
        wire(&asked),
        [json!({
            "id": 0,
            "method": "item/commandExecution/requestApproval",
            "params": {
                "threadId": "thread", "turnId": "turn", "itemId": "item",
                "reason": "outside the sandbox", "command": "touch 'x y'", "cwd": "/w",
                "commandActions": [{"type": "unknown", "command": "touch 'x y'"}],
            },
            "callId": "call",
        })]
    );
    let resolved = event(ThreadEventMsg::ApprovalResolved(ApprovalResolvedEvent {
        item_id: "item".into(),
        call_id: "call".into(),
        decision: ReviewDecision::Approved,
    }));
    assert_eq!(wire(&resolved), [json!({"resolved": "call"})]);
}

#[test]
fn turn_ends_map_to_turn_completed_statuses() {
    let started = event(ThreadEventMsg::TurnStarted(TaskStartedEvent {
        turn_id: "turn".into(),
        model_context_window: None,
    }));
    assert_eq!(
        wire(&started),
        [
            json!({"method": "turn/started", "params": {"threadId": "thread", "turn": {
                "id": "turn", "items": [], "status": "inProgress", "error": null,
                "startedAt": null, "completedAt": null, "durationMs": null,
            }}})
        ]
    );
    let aborted = event(ThreadEventMsg::TurnAborted(TurnAbortedEvent {
        turn_id: "turn".into(),
        reason: TurnAbortReason::Aborted,
    }));
    assert_eq!(wire(&aborted)[0]["params"]["turn"]["status"], "interrupted");
    let failed = wire(&event(ThreadEventMsg::TurnFailed(ErrorEvent {
        message: "boom".into(),
    })));
    assert_eq!(failed.len(), 2);
    assert_eq!(failed[0]["method"], "error");
    assert_eq!(failed[0]["params"]["willRetry"], false);
    assert_eq!(failed[0]["params"]["error"]["message"], "boom");
    assert_eq!(failed[1]["method"], "turn/completed");
    assert_eq!(failed[1]["params"]["turn"]["status"], "failed");
    assert_eq!(failed[1]["params"]["turn"]["error"]["message"], "boom");
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
        item: engine::ThreadItem::EnteredReviewMode(engine::EnteredReviewModeItem {
            id: "in".into(),
            review: "the uncommitted changes".into(),
            request: engine::ReviewRequest {
                target: engine::ReviewTarget::UncommittedChanges,
                prompt: None,
                model: None,
                user_facing_hint: "the uncommitted changes".into(),
            },
        }),
    }));
    let exited = event(ThreadEventMsg::ItemCompleted(ItemEvent {
        item: engine::ThreadItem::ExitedReviewMode(engine::ExitedReviewModeItem {
            id: "out".into(),
            review: "Looks right.".into(),
            output: None,
        }),
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
