//! Permissions and cancellation: approvals as `session/request_permission`, and
//! `session/cancel` stopping a turn, its commands and its questions.

use std::path::Path;
use std::time::Duration;

use deputy_test_support::{MockModelServer, TestHome};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::harness::{Agent, agent_text, ok_step, run_plan, say, shell, updates_of};

/// A home whose configuration asks before every command that is not known to be safe.
fn asking_home(model: &MockModelServer) -> TestHome {
    let home = TestHome::new(&model.base_url());
    home.write_config(&TestHome::default_config(&model.base_url()).replace(
        "approval_policy = \"never\"",
        "approval_policy = \"untrusted\"",
    ));
    home
}

fn titles(permissions: &Value) -> Vec<String> {
    permissions
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            p["request"]["toolCall"]["title"]
                .as_str()
                .unwrap_or("?")
                .to_string()
        })
        .collect()
}

#[test]
fn each_permission_answer_decides_whether_the_command_runs() {
    let model = MockModelServer::start();
    model.push_all([
        shell("call-1", "touch once.txt"),
        shell("call-2", "touch always.txt"),
        shell("call-3", "touch always.txt"),
        shell("call-4", "touch rejected.txt"),
        shell("call-5", "touch cancelled.txt"),
        say("Done."),
    ]);
    let home = asking_home(&model);

    let seen = run_plan(
        &home,
        Agent::Deputy,
        json!(["allow_once", "allow_always", "reject_once", "cancelled"]),
        json!([{"op": "initialize"}, {"op": "new"}, {"op": "prompt", "text": "touch them"}]),
    );

    let prompt = ok_step(&seen, 2);
    assert_eq!(prompt["result"]["stopReason"], "end_turn");
    let ws = home.workspace();
    assert!(ws.join("once.txt").exists(), "allow_once ran it");
    assert!(ws.join("always.txt").exists(), "allow_always ran it");
    assert!(
        !ws.join("rejected.txt").exists(),
        "reject_once did not run it"
    );
    assert!(
        !ws.join("cancelled.txt").exists(),
        "a cancelled answer did not run it"
    );
    // The second `touch always.txt` was covered by the session approval: not asked.
    assert_eq!(
        titles(&prompt["permissions"]),
        [
            "touch once.txt",
            "touch always.txt",
            "touch rejected.txt",
            "touch cancelled.txt"
        ]
    );
    let first = &prompt["permissions"][0]["request"];
    assert_eq!(
        first["options"],
        json!([
            {"optionId": "allow_once", "name": "Allow once", "kind": "allow_once"},
            {"optionId": "allow_always", "name": "Allow for this session", "kind": "allow_always"},
            {"optionId": "reject_once", "name": "Reject", "kind": "reject_once"},
        ])
    );
    // The question is about the tool call the client was told of.
    let calls = updates_of(prompt, "tool_call");
    assert_eq!(first["toolCall"]["toolCallId"], calls[0]["toolCallId"]);
    assert_eq!(first["toolCall"]["kind"], "execute");
    let finals: Vec<(String, String)> = updates_of(prompt, "tool_call_update")
        .into_iter()
        .filter(|u| u["status"] == "completed" || u["status"] == "failed")
        .map(|u| {
            let title = calls
                .iter()
                .find(|c| c["toolCallId"] == u["toolCallId"])
                .map(|c| c["title"].as_str().unwrap_or_default().to_string())
                .unwrap_or_default();
            (title, u["status"].as_str().unwrap_or_default().to_string())
        })
        .collect();
    let expected: Vec<(String, String)> = [
        ("touch once.txt", "completed"),
        ("touch always.txt", "completed"),
        ("touch always.txt", "completed"),
        ("touch rejected.txt", "failed"),
        ("touch cancelled.txt", "failed"),
    ]
    .iter()
    .map(|(t, s)| (t.to_string(), s.to_string()))
    .collect();
    assert_eq!(finals, expected);
    assert_eq!(agent_text(prompt), "Done.");
}

#[test]
fn cancelling_the_prompt_withdraws_its_question_and_runs_nothing() {
    let model = MockModelServer::start();
    model.push_all([shell("call-1", "touch never.txt"), say("unreachable")]);
    let home = asking_home(&model);

    let seen = run_plan(
        &home,
        Agent::Deputy,
        json!(["cancel_prompt"]),
        json!([
            {"op": "initialize"},
            {"op": "new"},
            {"op": "prompt", "text": "touch it"},
            {"op": "prompt", "text": "still there?"},
        ]),
    );

    let prompt = ok_step(&seen, 2);
    assert_eq!(prompt["result"]["stopReason"], "cancelled");
    assert_eq!(
        prompt["permissions"][0]["withdrawn"], true,
        "the agent withdrew the question ($/cancel_request): {prompt:#}"
    );
    assert!(!home.workspace().join("never.txt").exists());
    // The session keeps serving: the next prompt runs (the model's next answer).
    let next = ok_step(&seen, 3);
    assert_eq!(next["result"]["stopReason"], "end_turn");
    assert_eq!(agent_text(next), "unreachable");
}

fn read_pid(path: &Path) -> i32 {
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn cancelling_mid_command_kills_the_command_and_answers_cancelled() {
    let model = MockModelServer::start();
    model.push_all([
        shell("call-1", "echo $$ > cmd.pid; exec sleep 60"),
        say("unreachable"),
    ]);
    let home = TestHome::new(&model.base_url());
    let pid_file = home.workspace().join("cmd.pid");

    let seen = run_plan(
        &home,
        Agent::Deputy,
        json!([]),
        json!([
            {"op": "initialize"},
            {"op": "new"},
            {"op": "prompt", "text": "sleep", "cancelWhenFile": pid_file},
        ]),
    );

    let prompt = ok_step(&seen, 2);
    assert_eq!(prompt["result"]["stopReason"], "cancelled");
    let pid = read_pid(&pid_file);
    assert!(
        deputy_test_support::processes::stops_within(pid, Duration::from_secs(10)),
        "the command (pid {pid}) still runs"
    );
    let updates = updates_of(prompt, "tool_call_update");
    assert_eq!(
        updates.last().map(|u| u["status"].clone()),
        Some(json!("failed"))
    );
    assert_eq!(model.request_count(), 1, "no model call after the cancel");
}
