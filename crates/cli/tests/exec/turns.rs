//! Tasks that succeed: answers, tool calls over both wire APIs, plans and the JSON view.

use deputy_test_support::{MockModelServer, MockResponse, chat};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::{decode_base64, deputy, exec, finish};
use crate::{
    HELLO_PATCH, all_requests, home_for, home_with_provider, items_of_type, json_lines, output_for,
};

#[test]
fn plain_answer_prints_final_message_on_stdout_and_sends_a_complete_request() {
    let server = MockModelServer::start();
    server.push(MockResponse::text_turn("The answer is 42."));
    let home = home_for(&server);

    let run = exec(&home, &["What is six times seven?"]);

    run.assert_code(0);
    assert_eq!(run.stdout, "The answer is 42.\n");
    let requests = all_requests(&server, 1);
    let request = &requests[0];
    assert_eq!(request.path, "/v1/responses");
    let body = &request.body;
    assert_eq!(body["model"], "mock-model");
    assert_eq!(body["stream"], true);
    assert!(
        body["instructions"]
            .as_str()
            .is_some_and(|text| !text.trim().is_empty()),
        "instructions missing: {body}"
    );
    let messages = items_of_type(request, "message");
    let developer = messages
        .iter()
        .find(|m| m["role"] == "developer")
        .unwrap_or_else(|| panic!("no developer message: {body}"));
    let developer_text = developer["content"][0]["text"].as_str().unwrap_or_default();
    assert!(developer_text.contains("<environment_context>"));
    let cwd = home.workspace().canonicalize().expect("workspace path");
    assert!(
        developer_text.contains(&cwd.display().to_string()),
        "environment context lacks the cwd: {developer_text}"
    );
    let user = messages.last().expect("messages");
    assert_eq!(user["role"], "user");
    assert_eq!(user["content"][0]["text"], "What is six times seven?");
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .expect("tools array")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect();
    for name in ["shell", "shell_command", "apply_patch", "update_plan"] {
        assert!(tools.contains(&name), "tool {name} not offered: {tools:?}");
    }
}

#[test]
fn shell_output_reaches_the_model_in_the_next_request() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::function_call_turn(
            "call-echo",
            "shell",
            json!({"command": ["bash", "-c", "echo first-line; echo second-line"]}),
        ),
        MockResponse::text_turn("Printed two lines."),
    ]);
    let home = home_for(&server);

    let run = exec(&home, &["print two lines"]);

    run.assert_code(0);
    assert_eq!(run.stdout, "Printed two lines.\n");
    let requests = all_requests(&server, 2);
    let output = output_for(&requests[1], "call-echo");
    assert!(output.contains("Exit code: 0"), "{output}");
    assert!(
        output.contains("Output:\nfirst-line\nsecond-line\n"),
        "{output}"
    );
    let calls = items_of_type(&requests[1], "function_call");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["call_id"], "call-echo");
    assert_eq!(calls[0]["name"], "shell");
}

#[test]
fn multi_step_task_writes_a_file_runs_it_and_reports_its_real_output() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::function_call_turn(
            "call-patch",
            "apply_patch",
            json!({"input": HELLO_PATCH}),
        ),
        MockResponse::function_call_turn(
            "call-run",
            "shell",
            json!({"command": ["python3", "hello.py"]}),
        ),
        MockResponse::text_turn("hello.py prints a greeting."),
    ]);
    let home = home_for(&server);

    let run = exec(&home, &["write hello.py and run it"]);

    run.assert_code(0);
    assert_eq!(run.stdout, "hello.py prints a greeting.\n");
    let written = std::fs::read_to_string(home.workspace().join("hello.py")).expect("hello.py");
    assert_eq!(written, "print(\"hello from deputy\")\n");
    assert!(run.stderr.contains("patch A hello.py"), "{}", run.stderr);
    let requests = all_requests(&server, 3);
    let patch_output = output_for(&requests[1], "call-patch");
    assert!(patch_output.contains("hello.py"), "{patch_output}");
    let run_output = output_for(&requests[2], "call-run");
    assert!(run_output.contains("Exit code: 0"), "{run_output}");
    assert!(run_output.contains("hello from deputy"), "{run_output}");
}

#[test]
fn multi_step_task_over_the_chat_wire_api_sends_tool_messages() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::chat_tool_call_turn(
            "call-patch",
            "apply_patch",
            json!({"input": HELLO_PATCH}),
        ),
        MockResponse::chat_tool_call_turn(
            "call-run",
            "shell",
            json!({"command": ["python3", "hello.py"]}),
        ),
        MockResponse::chat(vec![
            chat::content("Ran "),
            chat::content("hello.py."),
            chat::finish("stop"),
            chat::usage(10, 5, 15),
        ]),
    ]);
    let home = home_with_provider(&server, &[("wire_api", "\"chat\"")]);

    let run = exec(&home, &["write hello.py and run it"]);

    run.assert_code(0);
    assert_eq!(run.stdout, "Ran hello.py.\n");
    let written = std::fs::read_to_string(home.workspace().join("hello.py")).expect("hello.py");
    assert_eq!(written, "print(\"hello from deputy\")\n");
    let requests = all_requests(&server, 3);
    for request in &requests {
        assert_eq!(request.path, "/v1/chat/completions");
        assert_eq!(request.body["stream"], true);
        assert_eq!(request.body["model"], "mock-model");
    }
    let first = requests[0].body["messages"].as_array().expect("messages");
    assert_eq!(first[0]["role"], "system");
    assert_eq!(first.last().expect("user")["role"], "user");
    assert_eq!(
        first.last().expect("user")["content"],
        "write hello.py and run it"
    );

    let last = requests[2].body["messages"].as_array().expect("messages");
    let assistant_calls: Vec<&Value> = last
        .iter()
        .filter(|m| m["role"] == "assistant")
        .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
        .collect();
    assert_eq!(assistant_calls.len(), 2, "{last:?}");
    assert_eq!(assistant_calls[0]["id"], "call-patch");
    assert_eq!(assistant_calls[0]["function"]["name"], "apply_patch");
    let patch_args: Value = serde_json::from_str(
        assistant_calls[0]["function"]["arguments"]
            .as_str()
            .unwrap_or_default(),
    )
    .expect("reassembled arguments are JSON");
    assert_eq!(patch_args, json!({"input": HELLO_PATCH}));
    assert_eq!(assistant_calls[1]["id"], "call-run");
    let tool_messages: Vec<&Value> = last.iter().filter(|m| m["role"] == "tool").collect();
    assert_eq!(tool_messages.len(), 2, "{last:?}");
    assert_eq!(tool_messages[0]["tool_call_id"], "call-patch");
    assert_eq!(tool_messages[1]["tool_call_id"], "call-run");
    let run_output = tool_messages[1]["content"].as_str().unwrap_or_default();
    assert!(run_output.contains("Exit code: 0"), "{run_output}");
    assert!(run_output.contains("hello from deputy"), "{run_output}");
}

#[test]
fn json_events_mode_prints_one_codex_event_per_line_with_command_output_deltas() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::function_call_turn(
            "call-json",
            "shell",
            json!({"command": ["bash", "-c", "echo delta-one; echo delta-two"]}),
        ),
        MockResponse::text_turn("Done."),
    ]);
    let home = home_for(&server);

    let run = exec(&home, &["--json-events", "run it"]);

    run.assert_code(0);
    let events = json_lines(&run.stdout);
    let types: Vec<&str> = events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(types.first(), Some(&"session_configured"), "{types:?}");
    assert_eq!(types.last(), Some(&"task_complete"), "{types:?}");
    assert_eq!(
        events.last().expect("events")["last_agent_message"],
        "Done."
    );
    let position = |kind: &str| types.iter().position(|t| *t == kind);
    let begin = position("exec_command_begin").expect("exec_command_begin");
    let end = position("exec_command_end").expect("exec_command_end");
    assert!(begin < end);
    assert_eq!(events[begin]["call_id"], "call-json");
    assert_eq!(events[end]["call_id"], "call-json");
    assert_eq!(events[end]["exit_code"], 0);
    let streamed: Vec<u8> = events
        .iter()
        .filter(|e| e["type"] == "exec_command_output_delta")
        .flat_map(|e| {
            assert_eq!(e["call_id"], "call-json");
            decode_base64(e["chunk"].as_str().unwrap_or_default()).expect("base64 chunk")
        })
        .collect();
    assert_eq!(String::from_utf8_lossy(&streamed), "delta-one\ndelta-two\n");
    assert!(
        !run.stderr.contains("Done."),
        "json mode must not render the human view: {}",
        run.stderr
    );
}

fn plan_turns(server: &MockModelServer) {
    server.push_all([
        MockResponse::function_call_turn(
            "call-plan",
            "update_plan",
            json!({
                "explanation": "two steps",
                "plan": [
                    {"step": "Write hello.py", "status": "completed"},
                    {"step": "Run hello.py", "status": "in_progress"},
                    {"step": "Report", "status": "pending"},
                ],
            }),
        ),
        MockResponse::text_turn("Planned."),
    ]);
}

#[test]
fn update_plan_is_shown_on_stderr_and_acknowledged_to_the_model() {
    let server = MockModelServer::start();
    plan_turns(&server);
    let home = home_for(&server);

    let run = exec(&home, &["plan it"]);

    run.assert_code(0);
    assert_eq!(run.stdout, "Planned.\n");
    assert!(
        run.stderr
            .contains("plan:\n  [x] Write hello.py\n  [>] Run hello.py\n  [ ] Report\n"),
        "{}",
        run.stderr
    );
    let requests = all_requests(&server, 2);
    assert!(!output_for(&requests[1], "call-plan").is_empty());
}

#[test]
fn update_plan_is_a_plan_update_event_in_json_events_mode() {
    let server = MockModelServer::start();
    plan_turns(&server);
    let home = home_for(&server);

    let run = exec(&home, &["--json-events", "plan it"]);

    run.assert_code(0);
    let events = json_lines(&run.stdout);
    let plan = events
        .iter()
        .find(|e| e["type"] == "plan_update")
        .unwrap_or_else(|| panic!("no plan_update in {}", run.stdout));
    assert_eq!(plan["explanation"], "two steps");
    assert_eq!(
        plan["plan"][1],
        json!({"step": "Run hello.py", "status": "in_progress"})
    );
}

#[test]
fn apply_patch_heredoc_in_shell_command_is_applied_as_a_patch() {
    let server = MockModelServer::start();
    let script = format!("apply_patch <<'EOF'\n{HELLO_PATCH}EOF\n");
    server.push_all([
        MockResponse::function_call_turn(
            "call-heredoc",
            "shell_command",
            json!({"command": script}),
        ),
        MockResponse::text_turn("Patched."),
    ]);
    let home = home_for(&server);

    let run = exec(&home, &["--json", "add hello.py"]);

    run.assert_code(0);
    let written = std::fs::read_to_string(home.workspace().join("hello.py")).expect("hello.py");
    assert_eq!(written, "print(\"hello from deputy\")\n");
    let item_types: Vec<String> = json_lines(&run.stdout)
        .iter()
        .filter(|e| e["type"] == "item.completed")
        .map(|e| e["item"]["type"].as_str().unwrap_or_default().to_string())
        .collect();
    assert!(
        item_types.iter().any(|t| t == "file_change"),
        "{item_types:?}"
    );
    assert!(
        !item_types.iter().any(|t| t == "command_execution"),
        "{item_types:?}"
    );
    let requests = all_requests(&server, 2);
    assert!(output_for(&requests[1], "call-heredoc").contains("hello.py"));
}

#[test]
fn commands_do_not_see_secret_looking_variables_but_keep_the_rest() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::function_call_turn("call-env", "shell", json!({"command": ["env"]})),
        MockResponse::text_turn("listed"),
    ]);
    let home = home_for(&server);
    home.append_config(
        "[shell_environment_policy]\nexclude = [\"DEPUTY_TEST_DROP_*\"]\nset = { DEPUTY_TEST_SET = \"from-config\" }\n",
    );

    let mut command = deputy(&home, &["exec", "-s", "danger-full-access", "list the env"]);
    command
        .env("OPENAI_API_KEY", "sk-must-not-leak")
        .env("MY_SERVICE_TOKEN", "token-must-not-leak")
        .env("aws_secret_access_key", "secret-must-not-leak")
        .env("PGPASSWORD", "password-must-not-leak")
        .env("DATABASE_URL", "postgres://u:url-must-not-leak@db/x")
        .env("DOCKER_AUTH_CONFIG", "auth-must-not-leak")
        .env("GIT_AUTHOR_NAME", "Kept Author")
        .env("DEPUTY_TEST_DROP_ME", "excluded-by-pattern")
        .env("DEPUTY_TEST_KEEP", "kept-value");
    let run = finish(command);

    run.assert_code(0);
    let requests = all_requests(&server, 2);
    let output = output_for(&requests[1], "call-env");
    for leaked in ["must-not-leak", "excluded-by-pattern"] {
        assert!(
            !output.contains(leaked),
            "{leaked} reached the command:\n{output}"
        );
    }
    assert!(output.contains("DEPUTY_TEST_KEEP=kept-value"), "{output}");
    assert!(output.contains("GIT_AUTHOR_NAME=Kept Author"), "{output}");
    assert!(output.contains("DEPUTY_TEST_SET=from-config"), "{output}");
    assert!(
        output.contains("\nPATH=") || output.starts_with("PATH="),
        "{output}"
    );
}
