//! Turns that must stop early: a cancelled call, a busy thread, and the client leaving.

use std::time::{Duration, Instant};

use deputy_test_support::MockResponse;
use deputy_test_support::processes::{is_running, stops_within};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::harness::{
    EXIT_WAIT, Mcp, SLEEP_30, function_outputs, shell, text_of, thread_of, wait_for_pid,
};

/// The contract's bound on how fast a cancellation takes effect.
const CANCEL_BOUND: Duration = Duration::from_secs(1);

/// How long a cancelled call is watched for a result it must never get.
const NO_RESULT_WATCH: Duration = Duration::from_millis(500);

/// Starts `codex` on a turn running [`SLEEP_30`] and returns the call id and the pid.
fn start_sleeping_turn(mcp: &Mcp) -> (i64, i32) {
    mcp.model.push(shell("call-sleep", SLEEP_30));
    let id = mcp.call(
        "codex",
        json!({"prompt": "sleep", "approval-policy": "never", "sandbox": "danger-full-access"}),
    );
    mcp.wait_event(id, "exec_command_begin");
    let pid = wait_for_pid(&mcp.home.workspace().join("sleep.pid"));
    assert!(is_running(pid), "the sleep should be running");
    (id, pid)
}

#[test]
fn a_cancelled_call_aborts_its_turn_kills_the_command_and_keeps_the_thread() {
    let mcp = Mcp::start();
    let (id, pid) = start_sleeping_turn(&mcp);
    let thread_id = mcp.events(id)[0]["_meta"]["threadId"].clone();

    let cancelled_at = Instant::now();
    mcp.client.notify(
        "notifications/cancelled",
        json!({"requestId": id, "reason": "test"}),
    );
    let aborted = mcp.wait_event(id, "turn_aborted");
    let took = cancelled_at.elapsed();
    assert!(took < CANCEL_BOUND, "turn_aborted after {took:?}");
    assert_eq!(aborted["msg"]["reason"], "interrupted");
    assert!(
        stops_within(pid, CANCEL_BOUND.saturating_sub(took)),
        "the command survived the cancellation"
    );
    assert!(
        mcp.client.wait_response(id, NO_RESULT_WATCH).is_err(),
        "a cancelled call must get no result"
    );

    mcp.model.push(MockResponse::text_turn("awake again"));
    let reply = mcp.call(
        "codex-reply",
        json!({"threadId": thread_id, "prompt": "go on"}),
    );
    assert_eq!(text_of(&mcp.result(reply)), "awake again");
    let outputs = function_outputs(&mcp.model.requests()[1]);
    assert_eq!(outputs.len(), 1, "{outputs:?}");
    assert_eq!(outputs[0].0, "call-sleep");
    assert!(outputs[0].1.contains("aborted"), "{outputs:?}");
    assert!(mcp.client.wait_response(id, Duration::ZERO).is_err());
}

#[test]
fn a_second_call_on_a_busy_thread_is_refused_not_interleaved() {
    let mcp = Mcp::start();
    let (id, pid) = start_sleeping_turn(&mcp);
    let thread_id = mcp.events(id)[0]["_meta"]["threadId"]
        .as_str()
        .unwrap_or_default()
        .to_string();

    let busy = mcp.result(mcp.call(
        "codex-reply",
        json!({"threadId": thread_id, "prompt": "interleaved?"}),
    ));
    assert_eq!(busy["isError"], true, "{busy}");
    assert!(text_of(&busy).starts_with("thread is busy"), "{busy}");
    assert_eq!(thread_of(&busy), thread_id);
    assert_eq!(mcp.model.request_count(), 1);
    assert!(is_running(pid));

    mcp.client
        .notify("notifications/cancelled", json!({"requestId": id}));
    mcp.wait_event(id, "turn_aborted");
    mcp.model.push(MockResponse::text_turn("next"));
    let next = mcp.result(mcp.call(
        "codex-reply",
        json!({"threadId": thread_id, "prompt": "now"}),
    ));
    assert_eq!(text_of(&next), "next");
    let said: Vec<String> = crate::harness::messages(&mcp.model.requests()[1])
        .into_iter()
        .map(|(_, text)| text)
        .collect();
    assert!(!said.iter().any(|t| t.contains("interleaved?")), "{said:?}");
}

#[test]
fn closing_stdin_mid_turn_exits_zero_and_kills_the_command() {
    let mcp = Mcp::start();
    let (_, pid) = start_sleeping_turn(&mcp);
    let closed_at = Instant::now();
    mcp.client.close_stdin();
    let status = mcp.client.wait_exit(EXIT_WAIT);
    let took = closed_at.elapsed();
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(0),
        "exit status {status:?}; stderr:\n{}",
        mcp.client.stderr_text()
    );
    assert!(took < Duration::from_secs(2), "exit took {took:?}");
    assert!(
        stops_within(pid, Duration::from_millis(200)),
        "the sleep survived"
    );
}
