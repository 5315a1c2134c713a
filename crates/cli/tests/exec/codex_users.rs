//! What a Codex user brings to `deputy exec`: Codex's flags (`--experimental-json`,
//! `--full-auto`, `-o`, `-i`, `--output-schema`, `--add-dir`, and ones deputy only notes),
//! a task piped in on a terminal, a refused edit, an interrupted or resumed session, a
//! model server that is not there.

use std::process::Stdio;
use std::time::{Duration, Instant};

use deputy_test_support::{MockModelServer, MockResponse, TestHome};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::common::pty::{exec_with_piped_task, has_pty};
use crate::common::{deputy, exec, finish, with_provider_key};
use crate::{HELLO_PATCH, home_for, json_lines};

/// Whether the kernel sandbox can run here (the sandboxed cases need it).
fn sandbox_available() -> bool {
    match deputy_sandbox::probe() {
        Ok(_) => true,
        Err(reason) => {
            deputy_test_support::skip_without_sandbox(reason);
            false
        }
    }
}

#[test]
fn codex_flags_are_accepted_and_the_ones_without_meaning_noted() {
    let server = MockModelServer::start();
    server.push(MockResponse::text_turn("Hi."));
    let home = home_for(&server);

    let run = exec(
        &home,
        &[
            "--experimental-json",
            "--skip-git-repo-check",
            "--thread-source",
            "sdk",
            "--cyber-access-program",
            "standard",
            "hello",
        ],
    );

    run.assert_code(0);
    let lines = json_lines(&run.stdout);
    assert_eq!(lines.last().unwrap()["type"], "turn.completed");
    for flag in ["--thread-source", "--cyber-access-program"] {
        let note = format!("deputy: ignoring {flag} (a Codex option deputy has no use for)");
        assert_eq!(run.stderr.matches(&note).count(), 1, "{}", run.stderr);
    }
    assert!(
        !run.stderr.contains("--skip-git-repo-check"),
        "{}",
        run.stderr
    );
}

#[test]
fn full_auto_edits_the_workspace_and_output_last_message_writes_the_answer() {
    if !sandbox_available() {
        return;
    }
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::function_call_turn(
            "call-patch",
            "apply_patch",
            json!({"input": HELLO_PATCH}),
        ),
        MockResponse::text_turn("Wrote hello.py."),
    ]);
    let home = home_for(&server);
    let answer = home.path().join("answer.txt");

    let run = exec(
        &home,
        &[
            "--full-auto",
            "-o",
            answer.to_str().unwrap(),
            "write hello.py",
        ],
    );

    run.assert_code(0);
    assert!(
        run.stderr
            .contains("sandbox workspace-write · approvals on-request"),
        "{}",
        run.stderr
    );
    assert!(home.workspace().join("hello.py").exists(), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&answer).unwrap(), "Wrote hello.py.");
    assert_eq!(run.stdout, "Wrote hello.py.\n");
}

#[test]
fn add_dir_lets_a_sandboxed_command_write_one_more_directory() {
    if !sandbox_available() {
        return;
    }
    let server = MockModelServer::start();
    let home = home_for(&server);
    // Beside the workspace, not in it.
    let outside = home.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let target = outside.join("made.txt");
    let touch = |id: &str| {
        MockResponse::function_call_turn(
            id,
            "shell",
            json!({"command": ["touch", target.to_str().unwrap()]}),
        )
    };
    server.push_all([
        touch("call-1"),
        MockResponse::text_turn("Tried."),
        touch("call-2"),
        MockResponse::text_turn("Made."),
    ]);
    let confined = ["-s", "workspace-write", "-a", "never"];

    exec(&home, &[&confined[..], &["touch it"]].concat()).assert_code(0);
    assert!(!target.exists(), "written without --add-dir");
    let dir = outside.to_str().unwrap();
    exec(
        &home,
        &[&confined[..], &["--add-dir", dir, "touch it"]].concat(),
    )
    .assert_code(0);
    assert!(target.exists(), "not written with --add-dir");
}

#[test]
fn images_and_output_schemas_that_cannot_be_used_stop_the_run_with_a_clear_error() {
    let server = MockModelServer::start();
    server.push(MockResponse::text_turn("unreachable"));
    let home = home_for(&server);
    std::fs::write(home.workspace().join("notes.png"), "not a picture").unwrap();
    std::fs::write(home.workspace().join("schema.json"), "[1, 2]").unwrap();

    let missing = exec(&home, &["-i", "gone.png", "describe it"]);
    assert_eq!(missing.status.code(), Some(1), "{missing:?}");
    assert!(
        missing.stderr.contains("cannot read image") && missing.stderr.contains("gone.png"),
        "{}",
        missing.stderr
    );
    let text = exec(&home, &["--image", "notes.png", "describe it"]);
    assert!(
        text.stderr
            .contains("notes.png is not a PNG, JPEG, GIF or WebP image"),
        "{}",
        text.stderr
    );
    let schema = exec(&home, &["--output-schema", "schema.json", "describe it"]);
    assert_eq!(schema.status.code(), Some(1), "{schema:?}");
    assert!(
        schema
            .stderr
            .contains("--output-schema: schema.json holds no JSON Schema object"),
        "{}",
        schema.stderr
    );
    assert_eq!(server.request_count(), 0, "nothing reached the model");
}

#[test]
fn a_task_piped_in_on_a_terminal_asks_there_showing_the_patch_and_a_no_is_not_applied() {
    if !has_pty() {
        return;
    }
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::function_call_turn(
            "call-patch",
            "apply_patch",
            json!({"input": HELLO_PATCH}),
        ),
        MockResponse::text_turn("Left it."),
    ]);
    let home = home_for(&server);

    let run = finish(exec_with_piped_task(
        &home,
        "write hello.py",
        &["-s", "read-only", "-a", "on-request"],
        "Apply this patch",
        "n\n",
    ));

    run.assert_code(0);
    assert!(!home.workspace().join("hello.py").exists());
    let transcript = without_escapes(&run.stderr);
    // The diff before the question, the answer in the user's words, the way out once.
    assert!(
        transcript.contains("+++ hello.py (new file)\n  +print(\"hello from deputy\")\n"),
        "{transcript}"
    );
    assert!(
        transcript.contains("Apply this patch to hello.py?"),
        "{transcript}"
    );
    assert!(transcript.contains("not applied: declined"), "{transcript}");
    assert_eq!(
        transcript.matches("-s workspace-write").count(),
        1,
        "{transcript}"
    );
    assert!(!transcript.contains("Do not retry"), "{transcript}");
    assert_eq!(run.stdout, "Left it.\n");
}

#[test]
fn a_refused_edit_without_a_terminal_names_what_unblocks_it_once() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::function_call_turn("call-1", "apply_patch", json!({"input": HELLO_PATCH})),
        MockResponse::function_call_turn("call-2", "apply_patch", json!({"input": HELLO_PATCH})),
        MockResponse::text_turn("Cannot write here."),
    ]);
    let home = home_for(&server);

    let run = exec(
        &home,
        &["-s", "read-only", "-a", "on-request", "write hello.py"],
    );

    run.assert_code(0);
    assert!(!home.workspace().join("hello.py").exists());
    assert_eq!(
        run.stderr.matches("not applied:").count(),
        2,
        "{}",
        run.stderr
    );
    assert_eq!(
        run.stderr
            .matches("hint: the sandbox is read-only; `-s workspace-write` (or `--full-auto`)")
            .count(),
        1,
        "{}",
        run.stderr
    );
}

#[test]
fn resume_names_the_session_and_a_stopped_run_says_how_to_continue_it() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::function_call_turn(
            "call-sleep",
            "shell",
            json!({"command": ["sleep", "30"], "timeout_ms": 60_000}),
        ),
        MockResponse::text_turn("Picked up."),
    ]);
    let home = home_for(&server);
    let child = deputy(&home, &["exec", "--json", "wait a while"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.request_count() < 1 || !sleeping_under(child.id()) {
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: kill sends a signal to the child this test spawned.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(143), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let id = json_lines(&stdout)[0]["thread_id"]
        .as_str()
        .unwrap()
        .to_string();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!(
            "deputy: stopped by SIGTERM; continue with `deputy exec resume {id} PROMPT`"
        )),
        "{stderr}"
    );

    let resumed = exec(&home, &["resume", &id, "go on"]);
    resumed.assert_code(0);
    assert!(
        resumed
            .stderr
            .starts_with(&format!("deputy: resuming session {id}\n")),
        "{}",
        resumed.stderr
    );
    assert_eq!(resumed.stdout, "Picked up.\n");
}

/// A terminal transcript as plain lines: carriage returns and escape sequences dropped.
fn without_escapes(transcript: &str) -> String {
    let mut out = String::new();
    let mut chars = transcript.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' if chars.peek() == Some(&'[') => {
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

/// Whether a `sleep` runs among the descendants of `pid`.
fn sleeping_under(pid: u32) -> bool {
    // Each thread lists the children it spawned.
    let children = |pid: u32| -> Vec<u32> {
        std::fs::read_dir(format!("/proc/{pid}/task"))
            .into_iter()
            .flatten()
            .flatten()
            .flat_map(|task| {
                std::fs::read_to_string(task.path().join("children"))
                    .unwrap_or_default()
                    .split_whitespace()
                    .filter_map(|p| p.parse().ok())
                    .collect::<Vec<u32>>()
            })
            .collect()
    };
    let mut stack = children(pid);
    while let Some(next) = stack.pop() {
        if std::fs::read(format!("/proc/{next}/comm")).is_ok_and(|comm| comm == b"sleep\n") {
            return true;
        }
        stack.extend(children(next));
    }
    false
}

#[test]
fn an_unreachable_model_server_gets_one_line_per_retry_and_a_hint_naming_base_url() {
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let base_url = format!("http://127.0.0.1:{port}/v1");
    let home = TestHome::new(&base_url);
    home.write_config(&with_provider_key(
        &TestHome::default_config(&base_url),
        "request_max_retries",
        "2",
    ));

    let run = exec(&home, &["hello"]);

    assert_eq!(run.status.code(), Some(1), "{run:?}");
    let retries: Vec<&str> = run
        .stderr
        .lines()
        .filter(|line| line.starts_with("retrying:"))
        .collect();
    assert_eq!(retries.len(), 2, "{}", run.stderr);
    for line in &retries {
        assert!(
            line.starts_with(&format!(
                "retrying: could not reach the model server at {base_url}/responses: Connection refused; retrying "
            )),
            "{line}"
        );
    }
    assert!(
        run.stderr.contains(&format!(
            "Is the model server running? deputy uses base_url = \"{base_url}\" of \
             [model_providers.mock] in {}",
            home.config_path().display()
        )),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("error sending request"),
        "{}",
        run.stderr
    );
}

#[test]
fn mcp_server_refuses_a_missing_key_in_the_words_exec_uses() {
    let server = MockModelServer::start();
    let home = home_for(&server);
    home.append_config("env_key = \"DEPUTY_TEST_NO_SUCH_KEY\"");
    let from_exec = exec(&home, &["hello"]);
    let exec_message = from_exec
        .stderr
        .trim()
        .trim_start_matches("error: ")
        .to_string();

    let mut command = home.command(crate::common::DEPUTY);
    command.arg("mcp-server");
    let client = deputy_test_support::StdioClient::spawn(command);
    deputy_test_support::McpSession::initialize(&client, json!({}));
    let id = client.request(
        "tools/call",
        json!({"name": "codex", "arguments": {"prompt": "hello"}}),
    );
    let response = client
        .wait_response(id, Duration::from_secs(15))
        .unwrap_or_else(|err| panic!("{err}"));

    assert_eq!(response["result"]["isError"], true, "{response}");
    assert_eq!(
        response["result"]["content"][0]["text"],
        exec_message.as_str()
    );
    assert!(
        exec_message.contains("DEPUTY_TEST_NO_SUCH_KEY"),
        "{exec_message}"
    );
    assert_eq!(server.request_count(), 0);
}

#[test]
fn codex_api_key_and_openai_base_url_reach_the_built_in_provider_from_the_environment() {
    let server = MockModelServer::start();
    server.push(MockResponse::text_turn("Reached."));
    let home = home_for(&server);
    home.write_config("model = \"mock-model\"\napproval_policy = \"never\"\n");

    let mut command = deputy(&home, &["exec", "hello"]);
    command
        .env("OPENAI_BASE_URL", server.base_url())
        .env("CODEX_API_KEY", "sk-codex");
    let run = finish(command);

    run.assert_code(0);
    assert_eq!(run.stdout, "Reached.\n");
    let request = &server.requests()[0];
    assert_eq!(request.header("authorization"), Some("Bearer sk-codex"));
}
