//! Sessions that outlive their process: `deputy exec` writes a rollout, and a later
//! `deputy exec resume` (or `--last`) continues it with the same history — after a clean
//! exit, a SIGKILL mid-command or a torn last line — while a live session stays locked
//! to its process. `deputy sessions list|show` read the same files.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

mod common;
#[path = "sessions/mcp.rs"]
mod mcp;

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{Finished, deputy, exec, finish};
use deputy_test_support::{MockModelServer, MockResponse, RecordedRequest, TestHome};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// How long a test waits for something a running process is about to do.
const SOON: Duration = Duration::from_secs(30);

/// Text the model reads for a call whose process died before it finished.
const UNFINISHED: &str = "aborted: the session stopped before this call finished";

fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

/// The `session_configured` event of an `exec --json-events` run.
fn configured(run: &Finished) -> Value {
    json_lines(&run.stdout)
        .into_iter()
        .find(|event| event["type"] == "session_configured")
        .unwrap_or_else(|| panic!("no session_configured in {}", run.stdout))
}

/// Runs `deputy exec --json-events PROMPT` to success and returns its thread id and rollout path.
fn start_session(home: &TestHome, prompt: &str) -> (String, PathBuf) {
    let run = exec(home, &["--json-events", prompt]);
    run.assert_code(0);
    let event = configured(&run);
    let id = event["session_id"]
        .as_str()
        .expect("session_id")
        .to_string();
    let path = PathBuf::from(event["rollout_path"].as_str().expect("rollout_path"));
    (id, path)
}

fn input(request: &RecordedRequest) -> Vec<Value> {
    request.body["input"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn user(text: &str) -> Value {
    json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
}

fn assistant(text: &str) -> Value {
    json!({"type": "message", "role": "assistant",
           "content": [{"type": "output_text", "text": text}]})
}

fn requests(server: &MockModelServer, n: usize) -> Vec<RecordedRequest> {
    let requests = server
        .wait_for_requests(n, SOON)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(requests.len(), n, "unexpected extra model requests");
    requests
}

/// Polls until `path` exists, failing the test after [`SOON`].
fn wait_for_file(path: &Path) {
    let start = Instant::now();
    while !path.exists() {
        assert!(start.elapsed() < SOON, "{} never appeared", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn spawn_quiet(home: &TestHome, args: &[&str]) -> Child {
    deputy(home, args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn deputy")
}

#[test]
fn exec_resume_sends_the_model_turn_one_history_in_turn_two() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    server.push_all([
        MockResponse::function_call_turn("call-1", "shell", json!({"command": ["echo", "hi"]})),
        MockResponse::text_turn("It printed hi."),
        MockResponse::text_turn("Bye."),
    ]);
    let (id, _) = start_session(&home, "run echo");

    let resumed = exec(&home, &["resume", "--json-events", &id, "thanks"]);
    resumed.assert_code(0);
    let event = configured(&resumed);
    assert_eq!(event["session_id"], id.as_str());
    assert_eq!(event["history_entry_count"], 5);

    let requests = requests(&server, 3);
    let turn_one_last = input(&requests[1]);
    let kinds: Vec<&str> = turn_one_last
        .iter()
        .map(|item| item["type"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        kinds,
        [
            "message",
            "message",
            "function_call",
            "function_call_output"
        ]
    );
    assert_eq!(turn_one_last[1], user("run echo"));
    assert_eq!(turn_one_last[2]["call_id"], "call-1");
    assert!(
        turn_one_last[3]["output"]
            .as_str()
            .unwrap_or_default()
            .ends_with("Output:\nhi\n"),
        "{}",
        turn_one_last[3]
    );
    let mut expected = turn_one_last;
    expected.push(assistant("It printed hi."));
    expected.push(user("thanks"));
    assert_eq!(input(&requests[2]), expected);
    assert_eq!(
        requests[2].body["instructions"],
        requests[1].body["instructions"]
    );
    assert_eq!(requests[2].body["tools"], requests[1].body["tools"]);
}

#[test]
fn exec_resume_last_picks_the_newest_session_optionally_in_a_directory() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    let sub = home.workspace().join("sub");
    std::fs::create_dir(&sub).expect("mkdir");
    server.push_all([
        MockResponse::text_turn("A."),
        MockResponse::text_turn("B."),
        MockResponse::text_turn("more B."),
        MockResponse::text_turn("more A."),
    ]);
    exec(&home, &["first task"]).assert_code(0);
    let sub_arg = sub.to_string_lossy().into_owned();
    exec(&home, &["-C", &sub_arg, "second task"]).assert_code(0);

    let newest = exec(&home, &["--json-events", "resume", "--last", "go on"]);
    newest.assert_code(0);
    assert!(newest.stdout.contains(r#""last_agent_message":"more B.""#));
    let workspace = home.workspace().to_string_lossy().into_owned();
    let here = exec(&home, &["resume", "--last", "-C", &workspace, "and here"]);
    here.assert_code(0);
    assert_eq!(here.stdout, "more A.\n");

    let requests = requests(&server, 4);
    assert_eq!(input(&requests[2])[1], user("second task"));
    assert_eq!(input(&requests[2]).last(), Some(&user("go on")));
    assert_eq!(input(&requests[3])[1], user("first task"));
    assert_eq!(input(&requests[3]).last(), Some(&user("and here")));
}

#[test]
fn sigkill_during_a_command_keeps_earlier_turns_and_the_thread_resumes() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    let pid_file = home.workspace().join("sleeper.pid");
    let sleep_args = json!({"command": ["bash", "-c",
        "echo $$ > sleeper.pid.tmp && mv sleeper.pid.tmp sleeper.pid && exec sleep 30"]});
    server.push_all([
        MockResponse::text_turn("Ready."),
        MockResponse::function_call_turn("call-sleep", "shell", sleep_args.clone()),
        MockResponse::text_turn("Recovered."),
    ]);
    let (id, rollout) = start_session(&home, "hello");

    let mut killed = spawn_quiet(&home, &["exec", "resume", &id, "sleep a while"]);
    wait_for_file(&pid_file);
    killed.kill().expect("SIGKILL deputy");
    killed.wait().expect("reap deputy");
    let sleeper = std::fs::read_to_string(&pid_file).expect("pid");
    if let Ok(pid) = sleeper.trim().parse::<i32>() {
        // The orphaned command is not the test's concern; don't leave it running.
        // SAFETY: sending a signal has no memory effects.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let after_kill = std::fs::read_to_string(&rollout).expect("rollout");
    assert!(after_kill.contains(r#""call_id":"call-sleep""#));

    let resumed = exec(&home, &["resume", &id, "status?"]);
    resumed.assert_code(0);
    assert_eq!(resumed.stdout, "Recovered.\n");

    let requests = requests(&server, 3);
    let mut expected = input(&requests[0]);
    expected.push(assistant("Ready."));
    expected.push(user("sleep a while"));
    assert_eq!(
        input(&requests[1]),
        expected,
        "turn 1 intact when turn 2 began"
    );
    expected.extend([
        json!({"type": "function_call", "name": "shell", "call_id": "call-sleep",
               "arguments": sleep_args.to_string()}),
        json!({"type": "function_call_output", "call_id": "call-sleep", "output": UNFINISHED}),
        user("status?"),
    ]);
    assert_eq!(input(&requests[2]), expected);
}

#[test]
fn a_torn_final_line_is_skipped_with_a_warning_and_cut_off() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    server.push_all([
        MockResponse::text_turn("One."),
        MockResponse::text_turn("Two."),
    ]);
    let (id, rollout) = start_session(&home, "first");
    let intact = std::fs::read(&rollout).expect("rollout");
    let mut torn = intact.clone();
    torn.extend_from_slice(br#"{"timestamp":"2025-01-01T00:00:00.000Z","type":"response_item","payload":{"type":"message","role":"assi"#);
    std::fs::write(&rollout, torn).expect("tear");

    let resumed = exec(&home, &["resume", &id, "second"]);
    resumed.assert_code(0);
    assert!(
        resumed.stderr.contains("torn last line"),
        "{}",
        resumed.stderr
    );

    let requests = requests(&server, 2);
    let mut expected = input(&requests[0]);
    expected.push(assistant("One."));
    expected.push(user("second"));
    assert_eq!(input(&requests[1]), expected);
    let text = std::fs::read(&rollout).expect("rollout");
    assert_eq!(text[..intact.len()], intact[..]);
    for line in String::from_utf8_lossy(&text).lines() {
        serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    }
}

#[test]
fn a_session_live_in_one_process_is_refused_to_another() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    let started = home.workspace().join("started");
    server.push_all([
        MockResponse::text_turn("Ready."),
        MockResponse::function_call_turn(
            "call-wait",
            "shell",
            json!({"command": ["bash", "-c", "touch started; while [ ! -e release ]; do sleep 0.05; done"]}),
        ),
        MockResponse::text_turn("Released."),
    ]);
    let (id, _) = start_session(&home, "hello");

    let mut holder = spawn_quiet(&home, &["exec", "resume", &id, "wait for release"]);
    wait_for_file(&started);
    let second = exec(&home, &["resume", &id, "me too"]);
    second.assert_code(1);
    assert!(
        second.stderr.contains("thread is open in another process"),
        "{}",
        second.stderr
    );

    std::fs::write(home.workspace().join("release"), "").expect("release");
    let status = holder.wait().expect("holder exits");
    assert_eq!(status.code(), Some(0));
    let requests = requests(&server, 3);
    assert_eq!(
        input(&requests[2]).last().map(|i| i["call_id"].clone()),
        Some("call-wait".into())
    );
}

#[test]
fn sessions_list_shows_id_updated_cwd_preview_and_turns_newest_first() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    server.push_all(["1", "2", "3"].map(MockResponse::text_turn));
    let long = format!("first task\nwith details {}", "x".repeat(80));
    let (older, _) = start_session(&home, &long);
    let (newer, _) = start_session(&home, "second task");
    exec(&home, &["resume", &newer, "again"]).assert_code(0);

    let listed = finish(deputy(&home, &["sessions", "list"]));
    listed.assert_code(0);
    let cwd = home.workspace().canonicalize().expect("cwd");
    let rows: Vec<Vec<&str>> = listed
        .stdout
        .lines()
        .map(|l| l.split('\t').collect())
        .collect();
    assert_eq!(rows.len(), 2, "{}", listed.stdout);
    for row in &rows {
        assert_eq!(row.len(), 5, "{row:?}");
        assert!(
            row[1].len() == 20 && row[1].ends_with('Z'),
            "updated time {}",
            row[1]
        );
        assert_eq!(row[2], cwd.to_string_lossy());
    }
    assert_eq!(
        (rows[0][0], rows[0][3], rows[0][4]),
        (newer.as_str(), "second task", "2")
    );
    let preview = format!("first task with details {}…", "x".repeat(36));
    assert_eq!(
        (rows[1][0], rows[1][3], rows[1][4]),
        (older.as_str(), preview.as_str(), "1")
    );

    let limited = finish(deputy(&home, &["sessions", "list", "--limit", "1"]));
    assert_eq!(limited.stdout.lines().count(), 1);
    assert!(limited.stdout.starts_with(&newer));
    let elsewhere = finish(deputy(&home, &["sessions", "list", "--cwd", "/"]));
    elsewhere.assert_code(0);
    assert_eq!(elsewhere.stdout, "");
    assert!(elsewhere.stderr.contains("no saved sessions"));
}

#[test]
fn sessions_show_prints_the_conversation_with_long_tool_output_cut() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    server.push_all([
        MockResponse::function_call_turn(
            "call-seq",
            "shell",
            json!({"command": ["seq", "1", "30"]}),
        ),
        MockResponse::text_turn("Counted\nto thirty."),
    ]);
    let (id, _) = start_session(&home, "count to thirty");
    let output = requests(&server, 2)[1].body["input"][3]["output"]
        .as_str()
        .expect("function_call_output")
        .to_string();

    let shown = finish(deputy(&home, &["sessions", "show", &id]));
    shown.assert_code(0);
    let lines: Vec<&str> = output.lines().collect();
    assert!(lines.len() > 20, "{output}");
    let mut expected = String::from("\n── turn 1 ──\nuser: count to thirty\n");
    expected.push_str("tool shell {\"command\":[\"seq\",\"1\",\"30\"]}\n");
    for line in &lines[..20] {
        expected.push_str(&format!("  │ {line}\n"));
    }
    expected.push_str(&format!("  │ … {} more lines\n", lines.len() - 20));
    expected.push_str("assistant: Counted\n           to thirty.\n");
    let (head, body) = shown
        .stdout
        .split_at(shown.stdout.find("\n──").unwrap_or(0));
    assert!(
        head.starts_with(&format!("session {id}\nstarted ")),
        "{head}"
    );
    assert!(head.contains("model mock-model (mock)"), "{head}");
    assert_eq!(body, expected);

    let missing = finish(deputy(
        &home,
        &["sessions", "show", "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"],
    ));
    missing.assert_code(1);
    assert!(missing.stderr.contains("Session not found for thread_id"));
}
