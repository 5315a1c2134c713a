//! Asking about a command over MCP: the question's exact shape, and what each answer does.

use pretty_assertions::assert_eq;
use serde_json::json;

use crate::harness::{Setup, escalated, question_params, say, shell};

/// The schema every approval question offers.
pub fn decision_schema() -> serde_json::Value {
    json!({
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Decision",
                "enum": ["approved", "approved_for_session", "denied", "abort"],
                "description": "approved: run it once; approved_for_session: also allow it again this session; denied: skip it and continue; abort: stop the turn"
            }
        },
        "required": ["decision"]
    })
}

/// The call ids of every approval question asked so far, in order.
fn asked(harness: &crate::harness::Harness) -> Vec<String> {
    harness
        .elicitations()
        .iter()
        .filter_map(|m| crate::harness::elicitation_call_id(m).map(str::to_string))
        .collect()
}

#[test]
fn exec_elicitation_carries_every_field_and_the_models_justification() {
    let harness = Setup::new("on-request", "workspace-write").start();
    harness.write("notes.txt", "n\n");
    let argv = ["bash", "-c", "cat notes.txt && touch created.txt"];
    let why = "needs to write outside the sandbox";
    harness.model.push(escalated("call-exec", &argv, why));
    harness.model.push(say("created"));

    let id = harness.codex("create it");
    let request = harness.elicitation("call-exec");
    let thread_id = harness.thread_of(id);
    let turn_id = harness.event(id, "task_started")["turn_id"].clone();
    let event = harness.event_params(id, "exec_approval_request");
    let cwd = harness.workspace();
    let parsed_cmd = json!([
        {"type": "read", "cmd": "cat notes.txt", "name": "notes.txt", "path": "notes.txt"},
        {"type": "unknown", "cmd": "touch created.txt"},
    ]);
    assert_eq!(
        question_params(&request),
        json!({
            "message": format!(
                "Allow the agent to run `bash -c 'cat notes.txt && touch created.txt'` in `{}`?",
                cwd.display()
            ),
            "requestedSchema": decision_schema(),
            "threadId": thread_id,
            "codex_elicitation": "exec-approval",
            "codex_mcp_tool_call_id": id.to_string(),
            "codex_event_id": event["id"],
            "codex_call_id": "call-exec",
            "codex_command": argv,
            "codex_cwd": cwd,
            "codex_parsed_cmd": parsed_cmd,
            "codex_reason": why,
        })
    );
    assert_eq!(
        event["msg"],
        json!({
            "type": "exec_approval_request",
            "call_id": "call-exec",
            "turn_id": turn_id,
            "command": argv,
            "cwd": cwd,
            "reason": why,
            "parsed_cmd": parsed_cmd,
        })
    );
    assert!(
        !harness.exists("created.txt"),
        "nothing runs before the answer"
    );

    harness
        .client
        .respond(request["id"].clone(), json!({"decision": "approved"}));
    let result = harness.result(id);
    assert_eq!(
        result["content"],
        json!([{"type": "text", "text": "created"}])
    );
    assert_eq!(
        result["structuredContent"],
        json!({"threadId": thread_id, "content": "created"})
    );
    assert_ne!(result["isError"], true);
    let output = harness.output_for("call-exec");
    assert!(output.starts_with("Exit code: 0\n"), "{output}");
    assert!(harness.exists("created.txt"));
}

#[test]
fn approved_for_session_skips_the_question_for_the_same_argv_in_the_same_thread_only() {
    let harness = Setup::new("untrusted", "danger-full-access").start();
    harness.model.push_all([
        shell("c1", &["touch", "a.txt"]),
        shell("c2", &["touch", "a.txt"]),
        shell("c3", &["touch", "b.txt"]),
        say("first turn"),
        shell("c4", &["touch", "a.txt"]),
        say("second turn"),
        shell("c5", &["touch", "a.txt"]),
        say("other session"),
    ]);

    let first = harness.codex("touch twice");
    harness.answer("c1", json!({"decision": "approved_for_session"}));
    harness.answer("c3", json!({"decision": "approved"}));
    assert_eq!(
        harness.result(first)["structuredContent"]["content"],
        "first turn"
    );
    assert!(harness.exists("a.txt") && harness.exists("b.txt"));
    let ran: Vec<_> = harness
        .events("exec_command_begin")
        .iter()
        .map(|e| e["call_id"].clone())
        .collect();
    assert_eq!(ran, [json!("c1"), json!("c2"), json!("c3")]);

    let thread_id = harness.thread_of(first);
    let reply = harness.codex_reply(&thread_id, "again");
    assert_eq!(
        harness.result(reply)["structuredContent"]["content"],
        "second turn"
    );

    let other = harness.codex("a new session");
    harness.answer("c5", json!({"decision": "denied"}));
    assert_eq!(
        harness.result(other)["structuredContent"]["content"],
        "other session"
    );
    assert_eq!(asked(&harness), ["c1", "c3", "c5"]);
}

#[test]
fn the_models_justification_reaches_the_user_without_an_escalation() {
    let harness = Setup::new("untrusted", "danger-full-access").start();
    let why = "the tests need a scratch file";
    harness.model.push_all([
        deputy_test_support::MockResponse::function_call_turn(
            "c1",
            "shell",
            json!({"command": ["touch", "scratch.txt"], "justification": why}),
        ),
        say("done"),
    ]);

    let id = harness.codex("make a scratch file");
    let question = harness.answer("c1", json!({"decision": "approved"}));
    assert_eq!(harness.result(id)["structuredContent"]["content"], "done");
    assert_eq!(question["params"]["codex_reason"], why);
    assert_eq!(
        harness.event_params(id, "exec_approval_request")["msg"]["reason"],
        why
    );
}

#[test]
fn approved_for_session_does_not_cover_the_same_argv_in_another_workdir() {
    let harness = Setup::new("untrusted", "danger-full-access").start();
    std::fs::create_dir(harness.workspace().join("sub")).expect("mkdir sub");
    let touch_in = |call_id: &str, workdir: &str| {
        deputy_test_support::MockResponse::function_call_turn(
            call_id,
            "shell",
            json!({"command": ["touch", "scoped.txt"], "workdir": workdir}),
        )
    };
    harness.model.push_all([
        touch_in("c1", "sub"),
        // The same place spelled differently is the same approval.
        touch_in("c2", "sub/../sub"),
        touch_in("c3", "."),
        say("done"),
    ]);

    let id = harness.codex("touch in two places");
    harness.answer("c1", json!({"decision": "approved_for_session"}));
    harness.answer("c3", json!({"decision": "denied"}));
    assert_eq!(harness.result(id)["structuredContent"]["content"], "done");
    assert_eq!(asked(&harness), ["c1", "c3"]);
    assert!(harness.exists("sub/scoped.txt"));
    assert!(
        !harness.exists("scoped.txt"),
        "the session approval for `sub` ran the command in the workspace root"
    );
}

#[test]
fn denied_command_does_not_run_and_the_model_is_told_while_the_turn_goes_on() {
    let harness = Setup::new("untrusted", "danger-full-access").start();
    harness
        .model
        .push_all([shell("c1", &["touch", "denied.txt"]), say("fine, skipped")]);

    let id = harness.codex("make a file");
    harness.answer("c1", json!({"decision": "denied"}));
    let result = harness.result(id);

    assert_eq!(result["structuredContent"]["content"], "fine, skipped");
    assert_ne!(result["isError"], true);
    assert!(!harness.exists("denied.txt"));
    // As in Codex, the declined command's entry opens and closes.
    let begins = harness.events("exec_command_begin");
    let ends = harness.events("exec_command_end");
    assert_eq!(begins.len(), 1, "{begins:?}");
    assert_eq!(begins[0]["call_id"], "c1");
    assert_eq!(ends.len(), 1, "{ends:?}");
    assert_eq!(ends[0]["call_id"], "c1");
    assert_eq!(ends[0]["status"], "declined");
    let output = harness.output_for("c1");
    assert!(output.contains("declined"), "{output}");
    assert_eq!(harness.events("task_complete").len(), 1);
}

#[test]
fn abort_ends_the_turn_with_turn_aborted_and_the_session_stays_usable() {
    let harness = Setup::new("untrusted", "danger-full-access").start();
    harness
        .model
        .push_all([shell("c1", &["touch", "aborted.txt"]), say("resumed")]);

    let id = harness.codex("make a file");
    harness.answer("c1", json!({"decision": "abort"}));
    let aborted = harness.event(id, "turn_aborted");
    let result = harness.result(id);

    assert_eq!(aborted["reason"], "aborted");
    assert_eq!(result["isError"], true);
    assert!(!harness.exists("aborted.txt"));
    assert_eq!(
        harness.model.request_count(),
        1,
        "the model is not called again"
    );
    assert!(harness.events("task_complete").is_empty());

    let thread_id = harness.thread_of(id);
    let reply = harness.codex_reply(&thread_id, "go on");
    assert_eq!(
        harness.result(reply)["structuredContent"]["content"],
        "resumed"
    );
    assert!(harness.output_for("c1").contains("aborted"));
}

#[test]
fn mcp_form_replies_accept_decline_and_cancel() {
    let harness = Setup::new("untrusted", "danger-full-access").start();
    harness.model.push_all([
        shell("c1", &["touch", "one.txt"]),
        shell("c2", &["touch", "two.txt"]),
        shell("c3", &["touch", "two.txt"]),
        shell("c4", &["touch", "three.txt"]),
        shell("c5", &["touch", "four.txt"]),
        say("unreachable"),
    ]);

    let id = harness.codex("make files");
    harness.answer("c1", json!({"action": "accept", "content": {}}));
    harness.answer(
        "c2",
        json!({"action": "accept", "content": {"decision": "approved_for_session"}}),
    );
    harness.answer("c4", json!({"action": "decline"}));
    harness.answer("c5", json!({"action": "cancel"}));
    harness.event(id, "turn_aborted");
    harness.result(id);

    assert_eq!(asked(&harness), ["c1", "c2", "c4", "c5"]);
    assert!(harness.exists("one.txt") && harness.exists("two.txt"));
    assert!(!harness.exists("three.txt") && !harness.exists("four.txt"));
    assert!(harness.output_for("c4").contains("declined"));
}

#[test]
fn a_command_hiding_behind_terminal_escapes_is_asked_about_escaped_and_exact() {
    let harness = Setup::new("untrusted", "danger-full-access").start();
    let spoof = "touch X #\u{1b}[9D\u{1b}[K pytest -q tests/";
    let argv = ["bash", "-lc", spoof];
    harness.model.push_all([shell("c1", &argv), say("done")]);

    let id = harness.codex("run the tests");
    let question = harness.answer("c1", json!({"decision": "denied"}));
    assert_eq!(harness.result(id)["structuredContent"]["content"], "done");

    let params = question_params(&question);
    assert_eq!(
        params["message"],
        format!(
            "Allow the agent to run `bash -lc $'touch X #\\e[9D\\e[K pytest -q tests/'` in `{}`?",
            harness.workspace().display()
        )
    );
    // The machine-readable argv stays exactly what would have run.
    assert_eq!(params["codex_command"], json!(argv));
    assert!(!harness.exists("X"));
}
