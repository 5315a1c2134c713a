//! Prompts: what a command and an edit look like as session updates.

use deputy_test_support::{MockModelServer, TestHome};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::harness::{
    Agent, agent_text, ok_step, patch, run_plan, say, shell, update_kinds, updates_of,
};

const EDIT: &str =
    "*** Begin Patch\n*** Update File: notes.txt\n@@\n first\n-second\n+SECOND\n*** End Patch";

#[test]
fn a_prompt_that_runs_a_command_and_edits_a_file_reports_both_as_tool_calls_in_order() {
    let model = MockModelServer::start();
    model.push_all([
        shell("call-1", "echo hello from the command"),
        patch("call-2", EDIT),
        say("Edited."),
    ]);
    let home = TestHome::new(&model.base_url());
    std::fs::write(home.workspace().join("notes.txt"), "first\nsecond\nthird\n").unwrap();

    let seen = run_plan(
        &home,
        Agent::Deputy,
        json!([]),
        json!([{"op": "initialize"}, {"op": "new"}, {"op": "prompt", "text": "do it"}]),
    );

    let prompt = ok_step(&seen, 2);
    assert_eq!(prompt["result"]["stopReason"], "end_turn");
    assert_eq!(
        std::fs::read_to_string(home.workspace().join("notes.txt")).unwrap(),
        "first\nSECOND\nthird\n"
    );
    let kinds: Vec<(String, String)> = update_kinds(prompt)
        .into_iter()
        // The session's commands arrive right after `session/new`'s answer.
        .filter(|(kind, _)| kind != "usage_update" && kind != "available_commands_update")
        .collect();
    let expected: Vec<(String, String)> = [
        ("tool_call", "pending"),
        ("tool_call_update", "in_progress"),
        ("tool_call_update", ""),
        ("tool_call_update", "completed"),
        ("tool_call", "pending"),
        ("tool_call_update", "in_progress"),
        ("tool_call_update", "completed"),
        ("agent_message_chunk", ""),
    ]
    .iter()
    .map(|(k, s)| (k.to_string(), s.to_string()))
    .collect();
    assert_eq!(kinds, expected, "{prompt:#}");

    let calls = updates_of(prompt, "tool_call");
    let command = calls[0];
    assert_eq!(command["kind"], "execute");
    assert_eq!(command["title"], "echo hello from the command");
    assert_eq!(command["rawInput"]["cwd"], json!(home.workspace()));
    let updates = updates_of(prompt, "tool_call_update");
    let command_done = updates[2];
    assert_eq!(command_done["toolCallId"], command["toolCallId"]);
    assert_eq!(
        command_done["content"][0]["content"]["text"],
        "hello from the command\n"
    );
    assert_eq!(command_done["rawOutput"]["exit_code"], 0);

    let edit = calls[1];
    let path = home.workspace().join("notes.txt");
    assert_eq!(edit["kind"], "edit");
    assert_eq!(edit["title"], "Edit notes.txt");
    assert_eq!(edit["locations"], json!([{"path": path}]));
    let diff = json!({"type": "diff", "path": path, "oldText": "first\nsecond\nthird\n", "newText": "first\nSECOND\nthird\n"});
    assert_eq!(edit["content"], json!([diff]));
    let edit_done = updates[4];
    assert_eq!(edit_done["toolCallId"], edit["toolCallId"]);
    assert_eq!(edit_done["content"], json!([diff]));
    assert_eq!(agent_text(prompt), "Edited.");
}
