//! `deputy exec` as a user runs it: the real binary against a scripted model server,
//! judged by what it prints, how it exits, what it leaves on disk and what it sends.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{decode_base64, exec, with_provider_key};
use deputy_test_support::{MockModelServer, MockResponse, RecordedRequest, TestHome, chat};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// How long a test waits for requests it expects to have been sent already.
const SETTLED: Duration = Duration::from_secs(5);

const HELLO_PATCH: &str =
    "*** Begin Patch\n*** Add File: hello.py\n+print(\"hello from deputy\")\n*** End Patch\n";

fn home_for(server: &MockModelServer) -> TestHome {
    TestHome::new(&server.base_url())
}

/// A home whose mock provider has `key = value` (TOML literals) set.
fn home_with_provider(server: &MockModelServer, keys: &[(&str, &str)]) -> TestHome {
    let home = home_for(server);
    let mut config = TestHome::default_config(&server.base_url());
    for (key, value) in keys {
        config = with_provider_key(&config, key, value);
    }
    home.write_config(&config);
    home
}

/// The `function_call_output` items of a Responses request, as `(call_id, output)`.
fn function_outputs(request: &RecordedRequest) -> Vec<(String, String)> {
    items_of_type(request, "function_call_output")
        .into_iter()
        .map(|item| {
            (
                item["call_id"].as_str().unwrap_or_default().to_string(),
                item["output"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn items_of_type(request: &RecordedRequest, kind: &str) -> Vec<Value> {
    request.body["input"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter(|item| item["type"] == kind)
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// The text of the only output for `call_id` in `request`.
fn output_for(request: &RecordedRequest, call_id: &str) -> String {
    let outputs: Vec<String> = function_outputs(request)
        .into_iter()
        .filter(|(id, _)| id == call_id)
        .map(|(_, output)| output)
        .collect();
    assert_eq!(
        outputs.len(),
        1,
        "expected one output for {call_id} in {}",
        request.body
    );
    outputs.into_iter().next().unwrap_or_default()
}

fn all_requests(server: &MockModelServer, n: usize) -> Vec<RecordedRequest> {
    let requests = server
        .wait_for_requests(n, SETTLED)
        .unwrap_or_else(|err| panic!("{err}"));
    assert_eq!(requests.len(), n, "unexpected extra requests");
    requests
}

/// Every stdout line as JSON; fails the test on a line that is not an event object.
fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|line| {
            let event: Value = serde_json::from_str(line)
                .unwrap_or_else(|err| panic!("stdout line is not JSON ({err}): {line}"));
            assert!(event["type"].is_string(), "event without a type: {line}");
            event
        })
        .collect()
}

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
fn server_error_is_retried_and_the_task_completes() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::status(
            500,
            json!({"error": {"message": "the server had a hiccup"}}),
        ),
        MockResponse::text_turn("Recovered."),
    ]);
    let home = home_with_provider(&server, &[("request_max_retries", "1")]);

    let run = exec(&home, &["hello"]);

    run.assert_code(0);
    assert_eq!(run.stdout, "Recovered.\n");
    let requests = all_requests(&server, 2);
    assert_eq!(requests[0].body, requests[1].body);
    let retry_line = run
        .stderr
        .lines()
        .find(|line| line.starts_with("retrying:"))
        .unwrap_or_else(|| panic!("no retry line on stderr:\n{}", run.stderr));
    assert!(retry_line.contains("500"), "{retry_line}");
    assert!(
        retry_line.contains("the server had a hiccup"),
        "{retry_line}"
    );
}

#[test]
fn broken_stream_is_retried_and_the_answer_comes_from_the_second_attempt() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::text_turn("Lost answer.").disconnect_after(3),
        MockResponse::text_turn("Second answer."),
    ]);
    let home = home_with_provider(&server, &[("stream_max_retries", "1")]);

    let run = exec(&home, &["hello"]);

    run.assert_code(0);
    assert_eq!(run.stdout, "Second answer.\n");
    let requests = all_requests(&server, 2);
    assert_eq!(requests[0].body, requests[1].body);
    assert!(
        run.stderr.lines().any(|line| line.starts_with("retrying:")),
        "no retry line on stderr:\n{}",
        run.stderr
    );
}

#[test]
fn unauthorized_is_a_clear_error_with_the_providers_message_and_no_retry() {
    let server = MockModelServer::start();
    server.push(MockResponse::status(
        401,
        json!({"error": {"message": "Incorrect API key provided: sk-bad"}}),
    ));
    let home = home_with_provider(
        &server,
        &[("request_max_retries", "3"), ("stream_max_retries", "3")],
    );

    let run = exec(&home, &["hello"]);

    assert_ne!(run.status.code(), Some(0), "{run:?}");
    assert!(run.status.code().is_some(), "killed by a signal: {run:?}");
    assert!(
        run.stderr.contains("Incorrect API key provided: sk-bad"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("401"), "{}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert_eq!(server.request_count(), 1);
}

/// Whether process `pid` still runs `sleep` (a zombie or a reused pid counts as gone).
fn sleep_process_alive(pid: &str) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    // Fields after the parenthesised command name start with the state letter.
    let (comm, after) = stat.rsplit_once(')').unwrap_or_default();
    let state = after.trim_start().chars().next().unwrap_or('X');
    comm.ends_with("(sleep") && !matches!(state, 'Z' | 'X' | 'x')
}

#[test]
fn command_is_killed_at_its_timeout_with_its_whole_process_group() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::function_call_turn(
            "call-sleep",
            "shell",
            json!({
                "command": ["bash", "-c", "sleep 30 & echo $! > grandchild.pid; wait"],
                "timeout_ms": 500,
            }),
        ),
        MockResponse::text_turn("It timed out."),
    ]);
    let home = home_for(&server);

    let run = exec(&home, &["sleep a while"]);

    run.assert_code(0);
    assert!(
        run.elapsed < Duration::from_secs(8),
        "took {:?}",
        run.elapsed
    );
    let pid = std::fs::read_to_string(home.workspace().join("grandchild.pid"))
        .expect("the command wrote its background child's pid");
    let pid = pid.trim();
    assert!(
        !sleep_process_alive(pid),
        "background `sleep` (pid {pid}) survived the timeout"
    );
    let requests = all_requests(&server, 2);
    let output = output_for(&requests[1], "call-sleep");
    assert!(output.contains("timed out"), "{output}");
    assert!(output.contains("Exit code: 124"), "{output}");
}

#[test]
fn huge_output_reaches_the_model_truncated_keeping_head_and_tail() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::function_call_turn(
            "call-flood",
            "shell_command",
            json!({"command":
                "echo HEAD-MARKER; head -c 50000000 /dev/zero | tr '\\0' x; echo; echo TAIL-MARKER"}),
        ),
        MockResponse::text_turn("That was a lot."),
    ]);
    let home = home_for(&server);

    let run = exec(&home, &["flood"]);

    run.assert_code(0);
    assert_eq!(run.stdout, "That was a lot.\n");
    let requests = all_requests(&server, 2);
    let output = output_for(&requests[1], "call-flood");
    assert!(output.contains("Exit code: 0"), "{}", &output[..200]);
    assert!(output.len() < 50_000, "{} bytes sent", output.len());
    assert!(output.contains("truncated"), "no truncation marker");
    let head = output.find("HEAD-MARKER").expect("head kept");
    let tail = output.find("TAIL-MARKER").expect("tail kept");
    let marker = output.find("truncated").expect("marker");
    assert!(head < marker && marker < tail);
    assert!(output.contains("xxxxxxxxxx"));
}

#[test]
fn json_mode_prints_one_event_per_line_with_command_output_deltas() {
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

    let run = exec(&home, &["--json", "run it"]);

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

#[test]
fn malformed_config_names_file_and_line_and_sends_nothing() {
    let server = MockModelServer::start();
    server.push(MockResponse::text_turn("unused"));
    let home = home_for(&server);
    let config = TestHome::default_config(&server.base_url());
    let broken_line = config.lines().count() + 1;
    home.write_config(&format!("{config}this line is not toml\n"));

    let run = exec(&home, &["hello"]);

    assert_ne!(run.status.code(), Some(0), "{run:?}");
    assert!(run.status.code().is_some(), "killed by a signal: {run:?}");
    let location = format!("{}:{broken_line}", home.config_path().display());
    assert!(run.stderr.contains(&location), "{}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert_eq!(server.request_count(), 0);
}

#[test]
fn wrongly_typed_config_value_names_file_line_and_key() {
    let server = MockModelServer::start();
    let home = home_for(&server);
    let config = TestHome::default_config(&server.base_url());
    home.write_config(&format!("tool_output_token_limit = \"lots\"\n{config}"));

    let run = exec(&home, &["hello"]);

    assert_ne!(run.status.code(), Some(0), "{run:?}");
    let location = format!("{}:1", home.config_path().display());
    assert!(run.stderr.contains(&location), "{}", run.stderr);
    assert!(
        run.stderr.contains("tool_output_token_limit"),
        "{}",
        run.stderr
    );
    assert_eq!(server.request_count(), 0);
}

#[test]
fn unknown_config_key_is_a_warning_and_the_run_succeeds() {
    let server = MockModelServer::start();
    server.push(MockResponse::text_turn("Fine."));
    let home = home_for(&server);
    let config = TestHome::default_config(&server.base_url());
    home.write_config(&format!("favourite_colour = \"blue\"\n{config}"));

    let run = exec(&home, &["hello"]);

    run.assert_code(0);
    assert_eq!(run.stdout, "Fine.\n");
    let warning = run
        .stderr
        .lines()
        .find(|line| line.contains("favourite_colour"))
        .unwrap_or_else(|| panic!("no warning naming the key:\n{}", run.stderr));
    assert!(warning.starts_with("warning:"), "{warning}");
    assert_eq!(server.request_count(), 1);
}

/// The `model` of the only request of a one-answer run with `args`.
fn model_sent(args: &[&str], extra_config: &str) -> String {
    let server = MockModelServer::start();
    server.push(MockResponse::text_turn("ok"));
    let home = home_for(&server);
    if !extra_config.is_empty() {
        home.append_config(extra_config);
    }
    let run = exec(&home, args);
    run.assert_code(0);
    let requests = all_requests(&server, 1);
    requests[0].body["model"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

const FAST_PROFILE: &str = "[profiles.fast]\nmodel = \"fast-model\"\n";

#[test]
fn dash_c_override_reaches_the_request() {
    assert_eq!(
        model_sent(&["-c", "model=other-model", "hello"], ""),
        "other-model"
    );
}

#[test]
fn dash_m_beats_dash_c() {
    assert_eq!(
        model_sent(&["-c", "model=from-c", "-m", "from-m", "hello"], ""),
        "from-m"
    );
}

#[test]
fn profile_flag_selects_the_profile_and_dash_c_beats_it() {
    assert_eq!(
        model_sent(&["--profile", "fast", "hello"], FAST_PROFILE),
        "fast-model"
    );
    assert_eq!(
        model_sent(
            &["--profile", "fast", "-c", "model=from-c", "hello"],
            FAST_PROFILE
        ),
        "from-c"
    );
}

#[test]
fn dash_c_dotted_path_reaches_the_provider_table() {
    let server = MockModelServer::start();
    server.push(MockResponse::text_turn("ok"));
    let home = home_for(&server);

    let run = exec(
        &home,
        &[
            "-c",
            "model_providers.mock.http_headers={ X-Extra = \"from-cli\" }",
            "hello",
        ],
    );

    run.assert_code(0);
    let requests = all_requests(&server, 1);
    assert_eq!(requests[0].header("x-extra"), Some("from-cli"));
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
fn update_plan_is_a_plan_update_event_in_json_mode() {
    let server = MockModelServer::start();
    plan_turns(&server);
    let home = home_for(&server);

    let run = exec(&home, &["--json", "plan it"]);

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
fn truncated_output_reports_the_real_line_count() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::function_call_turn(
            "call-seq",
            "shell",
            json!({"command": ["seq", "1", "2000000"]}),
        ),
        MockResponse::text_turn("Counted."),
    ]);
    let home = home_for(&server);

    exec(&home, &["count"]).assert_code(0);

    let requests = all_requests(&server, 2);
    let output = output_for(&requests[1], "call-seq");
    assert!(
        output.contains("Total output lines: 2000000\n"),
        "{}",
        &output[..output.len().min(300)]
    );
    assert!(output.contains("\n1\n2\n3\n"), "head kept");
    assert!(output.ends_with("1999999\n2000000\n"), "tail kept");
}

#[test]
fn missing_workdir_is_reported_as_such_to_the_model() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::function_call_turn(
            "call-cd",
            "shell",
            json!({"command": ["ls"], "workdir": "no-such-dir"}),
        ),
        MockResponse::text_turn("ok"),
    ]);
    let home = home_for(&server);

    exec(&home, &["list"]).assert_code(0);

    let requests = all_requests(&server, 2);
    let output = output_for(&requests[1], "call-cd");
    assert!(output.contains("no-such-dir"), "{output}");
    assert!(
        output.contains("not a directory") || output.contains("does not exist"),
        "{output}"
    );
}

#[test]
fn without_a_terminal_approval_is_denied_and_the_model_is_told_why() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::function_call_turn(
            "call-touch",
            "shell",
            json!({"command": ["touch", "created.txt"]}),
        ),
        MockResponse::text_turn("Could not."),
    ]);
    let home = home_for(&server);

    let run = exec(&home, &["-a", "untrusted", "touch a file"]);

    run.assert_code(0);
    assert!(!home.workspace().join("created.txt").exists());
    assert!(run.stderr.contains("approval needed"), "{}", run.stderr);
    let requests = all_requests(&server, 2);
    let output = output_for(&requests[1], "call-touch");
    assert!(output.contains("not run"), "{output}");
    assert!(output.contains("no terminal"), "{output}");
}

#[test]
fn dash_big_c_sets_the_working_directory_of_commands() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::function_call_turn(
            "call-pwd",
            "shell",
            json!({"command": ["bash", "-c", "pwd > where.txt"]}),
        ),
        MockResponse::text_turn("ok"),
    ]);
    let home = home_for(&server);
    let sub = home.workspace().join("sub");
    std::fs::create_dir(&sub).expect("mkdir sub");

    exec(&home, &["-C", "sub", "where am I"]).assert_code(0);

    let recorded = std::fs::read_to_string(sub.join("where.txt")).expect("where.txt in sub");
    assert_eq!(
        Path::new(recorded.trim()).canonicalize().expect("pwd"),
        sub.canonicalize().expect("sub")
    );
    let requests = all_requests(&server, 2);
    let developer = items_of_type(&requests[0], "message")
        .into_iter()
        .find(|m| m["role"] == "developer")
        .expect("developer message");
    let text = developer["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains(&sub.canonicalize().expect("sub").display().to_string()),
        "{text}"
    );
}
