//! Things going wrong: model errors and retries, runaway commands, refused approvals.

use std::time::{Duration, Instant};

use deputy_test_support::{MockModelServer, MockResponse};
use serde_json::json;

use crate::common::{deputy, exec, finish_with_closed_stderr};

/// A command timeout for output-heavy commands that a loaded 2-core machine cannot hit.
const SLOW_MACHINE_TIMEOUT_MS: u64 = 120_000;
use crate::{all_requests, home_for, home_with_provider, output_for};

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
        run.elapsed < Duration::from_secs(20),
        "took {:?}",
        run.elapsed
    );
    let pid = std::fs::read_to_string(home.workspace().join("grandchild.pid"))
        .expect("the command wrote its background child's pid");
    let pid = pid.trim();
    // The group was SIGKILLed; the kernel completes that asynchronously.
    let deadline = Instant::now() + Duration::from_secs(5);
    while sleep_process_alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        !sleep_process_alive(pid),
        "background `sleep` (pid {pid}) survived the timeout"
    );
    let requests = all_requests(&server, 2);
    let output = output_for(&requests[1], "call-sleep");
    assert!(output.contains("timed out"), "{output}");
    assert!(output.contains("Exit code: 124"), "{output}");
    // Killed at its own 0.5 s, not at the 10 s default.
    let wall: f64 = output
        .split("Wall time: ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|secs| secs.parse().ok())
        .unwrap_or_else(|| panic!("no wall time in {output}"));
    assert!((0.5..5.0).contains(&wall), "wall time {wall} s");
}

#[test]
fn huge_output_reaches_the_model_truncated_keeping_head_and_tail() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::function_call_turn(
            "call-flood",
            "shell_command",
            json!({
                "command":
                    "echo HEAD-MARKER; head -c 50000000 /dev/zero | tr '\\0' x; echo; echo TAIL-MARKER",
                "timeout_ms": SLOW_MACHINE_TIMEOUT_MS,
            }),
        ),
        MockResponse::text_turn("That was a lot."),
    ]);
    let home = home_for(&server);

    let run = exec(&home, &["flood"]);

    run.assert_code(0);
    assert_eq!(run.stdout, "That was a lot.\n");
    let requests = all_requests(&server, 2);
    let output = output_for(&requests[1], "call-flood");
    assert!(
        output.contains("Exit code: 0"),
        "{}",
        &output[..output.len().min(300)]
    );
    assert!(output.len() < 50_000, "{} bytes sent", output.len());
    assert!(output.contains("truncated"), "no truncation marker");
    let head = output.find("HEAD-MARKER").expect("head kept");
    let tail = output.find("TAIL-MARKER").expect("tail kept");
    let marker = output.find("truncated").expect("marker");
    assert!(head < marker && marker < tail);
    assert!(output.contains("xxxxxxxxxx"));
}

#[test]
fn truncated_output_reports_the_real_line_count() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::function_call_turn(
            "call-seq",
            "shell",
            json!({"command": ["seq", "1", "2000000"], "timeout_ms": SLOW_MACHINE_TIMEOUT_MS}),
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
fn without_a_terminal_a_sandboxed_run_uses_approval_policy_never_as_codex_does() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::function_call_turn(
            "call-touch",
            "shell",
            json!({"command": ["touch", "created.txt"]}),
        ),
        MockResponse::text_turn("Created."),
    ]);
    let home = home_for(&server);

    let run = exec(
        &home,
        &["-a", "untrusted", "-s", "workspace-write", "touch a file"],
    );

    run.assert_code(0);
    // Nobody to ask: the command ran, confined, instead of being refused.
    assert!(home.workspace().join("created.txt").exists(), "{run:?}");
    assert_eq!(
        run.stderr
            .matches("no terminal to ask for approval on: running with approval policy `never`")
            .count(),
        1,
        "{}",
        run.stderr
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
    // Said once (the warning), not again by the question and the command's line.
    assert_eq!(
        run.stderr.matches("no terminal").count(),
        1,
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("not run: declined"), "{}", run.stderr);
    let requests = all_requests(&server, 2);
    let output = output_for(&requests[1], "call-touch");
    assert!(output.contains("not run"), "{output}");
    assert!(output.contains("no terminal"), "{output}");
}

#[test]
fn closed_stderr_does_not_stop_the_run() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::status(500, json!({"error": {"message": "retry me"}})),
        MockResponse::text_turn("Still answered."),
    ]);
    let home = home_with_provider(&server, &[("request_max_retries", "1")]);

    let run = finish_with_closed_stderr(deputy(&home, &["exec", "hello"]));

    run.assert_code(0);
    assert_eq!(run.stdout, "Still answered.\n");
    assert_eq!(server.request_count(), 2);
}
