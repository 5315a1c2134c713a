//! Approvals never hang a turn: clients that cannot or do not answer get a denial with a
//! reason, cancellation ends the wait, and a pending question blocks nobody else.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{Setup, WAIT, say, shell};

/// The `warning` events' messages received so far.
fn warnings(harness: &crate::harness::Harness) -> Vec<String> {
    harness
        .events("warning")
        .iter()
        .map(|w| w["message"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn client_without_elicitation_is_denied_at_once_with_a_reason() {
    let harness = Setup {
        capabilities: json!({}),
        ..Setup::new("untrusted", "danger-full-access")
    }
    .start();
    harness
        .model
        .push_all([shell("c1", &["touch", "x.txt"]), say("could not ask")]);

    let id = harness.codex("make a file");
    let result = harness.result(id);

    assert_eq!(result["structuredContent"]["content"], "could not ask");
    assert!(harness.elicitations().is_empty(), "nothing was asked");
    assert!(!harness.exists("x.txt"));
    let output = harness.output_for("c1");
    assert!(output.contains("does not support elicitation"), "{output}");
    assert!(
        warnings(&harness)
            .iter()
            .any(|w| w.contains("does not support elicitation")),
        "{:?}",
        warnings(&harness)
    );
}

#[test]
fn error_and_malformed_replies_deny_with_the_reason() {
    let harness = Setup::new("untrusted", "danger-full-access").start();
    harness.model.push_all([
        shell("c1", &["touch", "one.txt"]),
        shell("c2", &["touch", "two.txt"]),
        say("both refused"),
    ]);

    let id = harness.codex("make files");
    let question = harness.elicitation("c1");
    harness
        .client
        .respond_error(question["id"].clone(), -32000, "dialog closed");
    harness.answer("c2", json!({"decision": "maybe"}));
    assert_eq!(
        harness.result(id)["structuredContent"]["content"],
        "both refused"
    );

    assert!(!harness.exists("one.txt") && !harness.exists("two.txt"));
    let error_output = harness.output_for("c1");
    assert!(error_output.contains("dialog closed"), "{error_output}");
    let malformed_output = harness.output_for("c2");
    assert!(malformed_output.contains("maybe"), "{malformed_output}");
    assert_eq!(warnings(&harness).len(), 2, "{:?}", warnings(&harness));
}

#[test]
fn unanswered_approval_times_out_as_denied() {
    let harness = Setup {
        top_level: "approval_timeout_sec = 1",
        ..Setup::new("untrusted", "danger-full-access")
    }
    .start();
    harness
        .model
        .push_all([shell("c1", &["touch", "late.txt"]), say("timed out")]);

    let id = harness.codex("make a file");
    let question = harness.elicitation("c1");
    let asked_at = Instant::now();
    let result = harness.result(id);
    let waited = asked_at.elapsed();

    assert_eq!(result["structuredContent"]["content"], "timed out");
    // The question is withdrawn so the client's dialog does not stay open.
    harness
        .client
        .wait_for(
            |m| {
                m["method"] == "notifications/cancelled"
                    && m["params"]["requestId"] == question["id"]
            },
            Duration::from_secs(5),
        )
        .expect("the timed-out elicitation is cancelled");
    assert!(waited < Duration::from_secs(10), "waited {waited:?}");
    assert!(!harness.exists("late.txt"));
    let output = harness.output_for("c1");
    assert!(output.contains("within 1 s"), "{output}");
    assert!(
        warnings(&harness).iter().any(|w| w.contains("within 1 s")),
        "{:?}",
        warnings(&harness)
    );
}

#[test]
fn cancelling_the_call_while_it_waits_for_approval_aborts_the_turn() {
    let harness = Setup::new("untrusted", "danger-full-access").start();
    harness
        .model
        .push_all([shell("c1", &["touch", "never.txt"]), say("after cancel")]);

    let id = harness.codex("make a file");
    harness.elicitation("c1");
    let cancelled_at = Instant::now();
    harness.client.notify(
        "notifications/cancelled",
        json!({"requestId": id, "reason": "user pressed stop"}),
    );
    let aborted = harness.event(id, "turn_aborted");
    let took = cancelled_at.elapsed();

    assert_eq!(aborted["reason"], "interrupted");
    // The contract allows one second.
    assert!(took < Duration::from_secs(1), "turn_aborted after {took:?}");
    assert!(!harness.exists("never.txt"));

    // The session stays usable, and the cancelled call gets no result.
    let thread_id = harness.thread_of(id);
    let reply = harness.codex_reply(&thread_id, "go on");
    assert_eq!(
        harness.result(reply)["structuredContent"]["content"],
        "after cancel"
    );
    assert!(!harness.exists("never.txt"));
    let answered_cancelled = harness
        .client
        .messages()
        .iter()
        .any(|m| m["id"] == id && m.get("method").is_none());
    assert!(!answered_cancelled, "the cancelled call was answered");
}

#[test]
fn a_pending_approval_blocks_neither_stdin_nor_other_sessions() {
    let harness = Setup::new("untrusted", "danger-full-access").start();
    harness.model.push_all([
        shell("c1", &["touch", "waiting.txt"]),
        say("other session done"),
        say("first session done"),
    ]);

    let first = harness.codex("make a file");
    let question = harness.elicitation("c1");

    let ping = harness.client.request("ping", Value::Null);
    harness
        .client
        .wait_response(ping, WAIT)
        .unwrap_or_else(|e| panic!("{e}"));
    let other = harness.codex("something else");
    assert_eq!(
        harness.result(other)["structuredContent"]["content"],
        "other session done"
    );
    assert!(harness.client.wait_response(first, Duration::ZERO).is_err());

    harness
        .client
        .respond(question["id"].clone(), json!({"decision": "approved"}));
    assert_eq!(
        harness.result(first)["structuredContent"]["content"],
        "first session done"
    );
    assert!(harness.exists("waiting.txt"));
}
