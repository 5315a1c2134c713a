//! `deputy exec --json` speaks `codex exec --json`: the same event and item types, the
//! same field names, item ids `item_0`, `item_1`, … and the turn's token usage.

use deputy_test_support::{MockModelServer, MockResponse, SseEvent, responses};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::exec;
use crate::{HELLO_PATCH, all_requests, home_for, json_lines};

/// `response.completed` with every kind of token count set.
fn completed(id: &str, input: u64, cached: u64, output: u64, reasoning: u64) -> SseEvent {
    SseEvent::new(
        "response.completed",
        json!({"response": {"id": id, "usage": {
            "input_tokens": input,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": output,
            "output_tokens_details": {"reasoning_tokens": reasoning},
            "total_tokens": input + output,
        }}}),
    )
}

fn reasoning(id: &str, text: &str) -> SseEvent {
    SseEvent::new(
        "response.output_item.done",
        json!({"item": {"type": "reasoning", "id": id,
                        "summary": [{"type": "summary_text", "text": text}]}}),
    )
}

fn call(call_id: &str, name: &str, args: Value) -> SseEvent {
    responses::function_call(call_id, name, args.to_string())
}

#[test]
fn a_patch_command_and_answer_turn_prints_codex_exec_jsonl_field_for_field() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::sse(vec![
            responses::created("r1"),
            responses::reasoning_delta("Writing the script first."),
            reasoning("rs_1", "Writing the script first."),
            call("call-patch", "apply_patch", json!({"input": HELLO_PATCH})),
            completed("r1", 100, 20, 30, 10),
        ]),
        MockResponse::sse(vec![
            responses::created("r2"),
            call(
                "call-run",
                "shell",
                json!({"command": ["bash", "-lc", "python3 hello.py"]}),
            ),
            completed("r2", 200, 100, 15, 5),
        ]),
        MockResponse::sse(vec![
            responses::created("r3"),
            responses::text_delta("hello.py prints a greeting."),
            responses::message("m3", "hello.py prints a greeting."),
            completed("r3", 300, 200, 12, 0),
        ]),
    ]);
    let home = home_for(&server);

    let run = exec(&home, &["--json", "write hello.py and run it"]);

    run.assert_code(0);
    let lines = json_lines(&run.stdout);
    let thread_id = lines[0]["thread_id"]
        .as_str()
        .expect("thread id")
        .to_string();
    let hello = home
        .workspace()
        .canonicalize()
        .expect("workspace")
        .join("hello.py")
        .display()
        .to_string();
    let patch = |status: &str| {
        json!({"id": "item_1", "type": "file_change",
               "changes": [{"path": hello, "kind": "add"}], "status": status})
    };
    let command = |output: &str, exit_code: Option<i32>, status: &str| {
        let mut item = json!({"id": "item_2", "type": "command_execution",
            "command": "python3 hello.py", "aggregated_output": output, "status": status});
        // As the SDK's types have it: no exit code until there is one.
        if let Some(code) = exit_code {
            item["exit_code"] = json!(code);
        }
        item
    };
    assert_eq!(
        lines,
        [
            json!({"type": "thread.started", "thread_id": thread_id}),
            json!({"type": "turn.started"}),
            json!({"type": "item.completed", "item":
                {"id": "item_0", "type": "reasoning", "text": "Writing the script first."}}),
            // A patch is shown once it applied or failed, as the SDK's `file_change` is.
            json!({"type": "item.completed", "item": patch("completed")}),
            json!({"type": "item.started", "item": command("", None, "in_progress")}),
            json!({"type": "item.completed", "item":
                command("hello from deputy\n", Some(0), "completed")}),
            json!({"type": "item.completed", "item":
                {"id": "item_3", "type": "agent_message", "text": "hello.py prints a greeting."}}),
            json!({"type": "turn.completed", "usage": {"input_tokens": 600,
                "cached_input_tokens": 320, "output_tokens": 57, "reasoning_output_tokens": 15}}),
        ]
    );
    assert!(uuid_like(&thread_id), "{thread_id}");
    assert_eq!(run.stderr.matches("hello.py prints a greeting.").count(), 0);
    all_requests(&server, 3);
}

fn uuid_like(id: &str) -> bool {
    id.len() == 36 && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
}

#[test]
fn a_failing_command_a_failed_patch_and_the_plan_are_items_too() {
    let server = MockModelServer::start();
    let bad_patch =
        "*** Begin Patch\n*** Update File: missing.txt\n@@\n-old\n+new\n*** End Patch\n";
    server.push_all([
        MockResponse::function_call_turn(
            "call-plan",
            "update_plan",
            json!({"plan": [{"step": "Try things", "status": "in_progress"},
                            {"step": "Report", "status": "pending"}]}),
        ),
        MockResponse::function_call_turn(
            "call-fail",
            "shell",
            json!({"command": ["bash", "-c", "echo broken >&2; exit 3"]}),
        ),
        MockResponse::function_call_turn("call-bad", "apply_patch", json!({"input": bad_patch})),
        MockResponse::text_turn("Nothing worked."),
    ]);
    let home = home_for(&server);

    let run = exec(&home, &["--json", "try"]);

    run.assert_code(0);
    let lines = json_lines(&run.stdout);
    let completed: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "item.completed")
        .map(|l| &l["item"])
        .collect();
    let of_type = |kind: &str| {
        completed
            .iter()
            .find(|item| item["type"] == kind)
            .unwrap_or_else(|| panic!("no completed {kind} in {}", run.stdout))
    };
    assert_eq!(
        *of_type("command_execution"),
        &json!({"id": "item_1", "type": "command_execution",
                "command": "echo broken >&2; exit 3",
                "aggregated_output": "broken\n", "exit_code": 3, "status": "failed"})
    );
    assert_eq!(
        *of_type("file_change"),
        &json!({"id": "item_2", "type": "file_change", "changes": [], "status": "failed"})
    );
    // The plan is started at once, and completed when the turn ends.
    assert_eq!(
        lines[2],
        json!({"type": "item.started", "item": {"id": "item_0", "type": "todo_list", "items": [
            {"text": "Try things", "completed": false}, {"text": "Report", "completed": false}]}})
    );
    assert_eq!(of_type("todo_list")["id"], "item_0");
    let last_two: Vec<&str> = lines[lines.len() - 2..]
        .iter()
        .map(|l| l["type"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(last_two, ["item.completed", "turn.completed"]);
}

#[test]
fn a_model_error_is_an_error_line_then_turn_failed() {
    let server = MockModelServer::start();
    server.push(MockResponse::status(
        400,
        json!({"error": {"message": "model `nope` does not exist"}}),
    ));
    let home = home_for(&server);

    let run = exec(&home, &["--json", "hello"]);

    assert_eq!(run.status.code(), Some(1), "{run:?}");
    let lines = json_lines(&run.stdout);
    let tail: Vec<&Value> = lines.iter().rev().take(2).rev().collect();
    assert_eq!(tail[0]["type"], "error");
    assert_eq!(tail[1]["type"], "turn.failed");
    let message = tail[1]["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("model `nope` does not exist"), "{message}");
    assert_eq!(tail[0]["message"], tail[1]["error"]["message"]);
}

#[test]
fn config_keys_a_client_writes_are_noted_once_on_stderr_never_as_error_items() {
    let server = MockModelServer::start();
    server.push(MockResponse::text_turn("Fine."));
    let home = home_for(&server);

    let run = exec(
        &home,
        &[
            "--json",
            "-c",
            "web_search=\"live\"",
            "-c",
            "model_verbosity=\"low\"",
            "-c",
            "service_tier=\"flex\"",
            "-c",
            "model_reasoning_effort=\"minimal\"",
            "-c",
            "aproval_policy=\"never\"",
            "hello",
        ],
    );

    run.assert_code(0);
    let lines = json_lines(&run.stdout);
    assert!(
        !lines
            .iter()
            .any(|l| l["type"] == "error" || l["item"]["type"] == "error"),
        "{}",
        run.stdout
    );
    for note in [
        "`service_tier` is a Codex setting deputy does not use (ignored)",
        "unknown config key `aproval_policy` (ignored); did you mean `approval_policy`?",
    ] {
        assert_eq!(
            run.stderr.matches(note).count(),
            1,
            "{note}: {}",
            run.stderr
        );
    }
    // The settings deputy uses reach the model.
    let requests = all_requests(&server, 1);
    assert_eq!(requests[0].body["reasoning"], json!({"effort": "minimal"}));
    assert_eq!(requests[0].body["text"], json!({"verbosity": "low"}));
    let tools = requests[0].body["tools"].as_array().unwrap();
    assert!(tools.contains(&json!({"type": "web_search", "external_web_access": true})));
}
