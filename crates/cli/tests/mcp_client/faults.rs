//! MCP servers that misbehave: one that never answers `initialize` (also while the turn
//! waiting for it is interrupted), one that dies in the middle of a call, one that never
//! answers a call, a `required` one that cannot start, and deputy killed while its servers
//! run. None hangs a turn; none outlives deputy.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use deputy_test_support::processes::{poll_until, stops_within, wait_for_pid};
use deputy_test_support::{MockModelServer, MockResponse, TestHome, responses};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::common::{DEPUTY, exec, wait_with_deadline};
use crate::{
    APP_SERVER_WAIT, all_requests, app_server_thread, home_with, json_lines, namespaced_call_turn,
    output_for, toml_str,
};

/// The misbehaving server's script.
fn fault_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client/fault_server.py")
}

/// `[mcp_servers.NAME]` running the fault server in `mode`, its pids written to `pidfile`,
/// with `extra` keys.
fn fault_config(name: &str, mode: &str, pidfile: &Path, extra: &str) -> String {
    format!(
        "[mcp_servers.{name}]\ncommand = \"python3\"\nargs = [{}, \"{mode}\", {}]\n{extra}",
        toml_str(&fault_server().display().to_string()),
        toml_str(&pidfile.display().to_string()),
    )
}

/// The pids the fault server wrote, in order of its starts.
fn pids(pidfile: &Path) -> Vec<i32> {
    fs::read_to_string(pidfile)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .collect()
}

/// Fails unless every pid in `pidfile` is gone within a few seconds (the containment's
/// grace periods); kills the survivors so they do not outlive the test.
fn assert_all_gone(pidfile: &Path) {
    let pids = pids(pidfile);
    assert!(!pids.is_empty(), "the server never started");
    let survivors: Vec<i32> = pids
        .iter()
        .copied()
        .filter(|pid| !stops_within(*pid, Duration::from_secs(10)))
        .collect();
    for pid in &survivors {
        // SAFETY: kill(2) has no memory-safety preconditions.
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    assert!(
        survivors.is_empty(),
        "MCP server processes survived deputy: {survivors:?}"
    );
}

#[test]
fn a_server_that_never_answers_initialize_is_skipped_after_its_startup_timeout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pidfile = dir.path().join("pids");
    let server = MockModelServer::start();
    let home = home_with(
        &server,
        &fault_config("mute", "silent", &pidfile, "startup_timeout_sec = 1\n"),
    );
    server.push(MockResponse::text_turn("Answered without it."));

    let run = exec(&home, &["--json", "go on without the mute server"]);

    run.assert_code(0);
    let requests = all_requests(&server, 1);
    let tools = requests[0].body["tools"].to_string();
    assert!(!tools.contains("mcp__mute__"), "{tools}");
    let said = format!("{}{}", run.stdout, run.stderr);
    assert!(
        said.contains("mute") && said.contains("did not start"),
        "no word of the server that did not start:\n{said}"
    );
    assert!(
        run.stdout.contains("Answered without it."),
        "{}",
        run.stdout
    );
    assert_all_gone(&pidfile);
}

#[test]
fn a_server_that_dies_mid_call_fails_that_call_and_is_restarted_on_the_next() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pidfile = dir.path().join("pids");
    let server = MockModelServer::start();
    let home = home_with(&server, &fault_config("flaky", "normal", &pidfile, ""));
    server.push_all([
        namespaced_call_turn("c-crash", "mcp__flaky__", "crash", json!({})),
        namespaced_call_turn("c-pid", "mcp__flaky__", "pid", json!({})),
        MockResponse::text_turn("Survived."),
    ]);

    let run = exec(&home, &["--json", "crash it, then ask again"]);

    run.assert_code(0);
    let requests = all_requests(&server, 3);
    let crashed = output_for(&requests[1], "c-crash");
    assert!(
        crashed.contains("flaky") && crashed.contains("restarted"),
        "{crashed}"
    );
    let started = pids(&pidfile);
    assert_eq!(started.len(), 2, "one start and one restart: {started:?}");
    assert_eq!(
        output_for(&requests[2], "c-pid"),
        format!("pid {}", started[1])
    );
    let events = json_lines(&run.stdout);
    let failed: Vec<_> = events
        .iter()
        .filter(|e| e["type"] == "item.completed" && e["item"]["tool"] == "crash")
        .collect();
    assert_eq!(failed.len(), 1, "{}", run.stdout);
    assert_eq!(failed[0]["item"]["status"], "failed");
    assert_all_gone(&pidfile);
}

#[test]
fn a_call_that_never_answers_ends_at_the_tool_timeout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pidfile = dir.path().join("pids");
    let server = MockModelServer::start();
    let home = home_with(
        &server,
        &fault_config("stuck", "normal", &pidfile, "tool_timeout_sec = 1\n"),
    );
    server.push_all([
        namespaced_call_turn("c-hang", "mcp__stuck__", "hang", json!({})),
        namespaced_call_turn("c-pid", "mcp__stuck__", "pid", json!({})),
        MockResponse::text_turn("Gave up on it."),
    ]);

    let run = exec(&home, &["--json", "call the stuck tool"]);

    run.assert_code(0);
    let requests = all_requests(&server, 3);
    let timed_out = output_for(&requests[1], "c-hang");
    assert!(timed_out.contains("tool_timeout_sec"), "{timed_out}");
    // The server itself still answers the next call.
    let started = pids(&pidfile);
    assert_eq!(
        output_for(&requests[2], "c-pid"),
        format!("pid {}", started[0])
    );
    assert_all_gone(&pidfile);
}

#[test]
fn a_required_server_that_cannot_start_fails_the_thread_with_its_error() {
    let server = MockModelServer::start();
    let home = home_with(
        &server,
        "[mcp_servers.needed]\ncommand = \"/nonexistent/mcp-server\"\nrequired = true\n",
    );
    server.push(MockResponse::text_turn("never sent"));

    let run = exec(&home, &["--json", "this needs the server"]);

    assert_ne!(run.status.code(), Some(0), "{}", run.stdout);
    let said = format!("{}{}", run.stdout, run.stderr);
    assert!(
        said.contains("required MCP server `needed`") && said.contains("/nonexistent/mcp-server"),
        "{said}"
    );
    assert_eq!(server.request_count(), 0, "the model was asked anyway");
}

/// `deputy exec` mid-turn (the model's stream stalls) with a running MCP server that
/// ignores SIGTERM and the end of its input and has a child of its own, killed with `sig`:
/// the server and its child go with it.
fn killed_mid_turn(sig: i32) {
    let dir = tempfile::tempdir().expect("tempdir");
    let pidfile = dir.path().join("pids");
    let server = MockModelServer::start();
    let home: TestHome = home_with(&server, &fault_config("held", "stubborn", &pidfile, ""));
    server.push(
        MockResponse::sse(vec![
            responses::created("r-stall"),
            responses::text_delta("thinking"),
        ])
        .stall_after(2),
    );
    let mut command = home.command(DEPUTY);
    command
        .args(["exec", "--json", "wait forever"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut deputy = command.spawn().expect("spawn deputy");
    server
        .wait_for_requests(1, Duration::from_secs(30))
        .unwrap_or_else(|err| panic!("{err}"));
    let started = poll_until(Duration::from_secs(10), || {
        (pids(&pidfile).len() == 2).then_some(())
    });
    assert!(
        started.is_some(),
        "the server and its child are not running"
    );

    // SAFETY: kill(2) has no memory-safety preconditions.
    let sent = unsafe { libc::kill(deputy.id() as i32, sig) };
    assert_eq!(sent, 0, "kill failed");
    wait_with_deadline(&mut deputy, Duration::from_secs(30));

    assert_all_gone(&pidfile);
}

#[test]
fn no_mcp_server_survives_sigterm_of_deputy() {
    killed_mid_turn(libc::SIGTERM);
}

#[test]
fn no_mcp_server_survives_sigkill_of_deputy() {
    killed_mid_turn(libc::SIGKILL);
}

#[test]
fn dash_c_overrides_a_server_like_any_other_key_and_enabled_tools_filters() {
    let dir = tempfile::tempdir().expect("tempdir");
    let off_pids = dir.path().join("off-pids");
    let on_pids = dir.path().join("on-pids");
    let server = MockModelServer::start();
    let home = home_with(
        &server,
        &format!(
            "{}{}",
            fault_config("off", "normal", &off_pids, ""),
            fault_config("on", "normal", &on_pids, "enabled_tools = [\"pid\"]\n")
        ),
    );
    server.push(MockResponse::text_turn("Looked."));

    let run = exec(
        &home,
        &[
            "-c",
            "mcp_servers.off.enabled=false",
            "--json",
            "what tools are there?",
        ],
    );

    run.assert_code(0);
    let requests = all_requests(&server, 1);
    let tools = requests[0].body["tools"].as_array().expect("tools").clone();
    assert!(
        !tools.iter().any(|t| t["name"] == "mcp__off__"),
        "a disabled server is offered"
    );
    assert!(pids(&off_pids).is_empty(), "a disabled server was started");
    let on = tools
        .iter()
        .find(|t| t["name"] == "mcp__on__")
        .unwrap_or_else(|| panic!("mcp__on__ not offered: {tools:?}"));
    let offered: Vec<&str> = on["tools"]
        .as_array()
        .expect("namespace tools")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(offered, ["pid"]);
}

/// A home whose only MCP server never answers `initialize`, with a startup timeout far
/// longer than any test waits; its pid is written to `pidfile`.
fn home_with_a_mute_server(server: &MockModelServer, pidfile: &Path) -> TestHome {
    home_with(
        server,
        &fault_config("mute", "silent", pidfile, "startup_timeout_sec = 300\n"),
    )
}

#[test]
fn ctrl_c_of_exec_while_a_server_starts_stops_it_without_waiting_for_its_timeout() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pidfile = dir.path().join("pids");
    let server = MockModelServer::start();
    let home = home_with_a_mute_server(&server, &pidfile);
    server.push(MockResponse::text_turn("never sent"));
    let mut command = home.command(DEPUTY);
    command
        .args(["exec", "--json", "wait for the mute server"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut deputy = command.spawn().expect("spawn deputy");
    let pid = wait_for_pid(&pidfile, Duration::from_secs(30));

    // SAFETY: kill(2) has no memory-safety preconditions.
    let sent = unsafe { libc::kill(deputy.id() as i32, libc::SIGINT) };
    assert_eq!(sent, 0, "kill failed");
    let status = wait_with_deadline(&mut deputy, Duration::from_secs(30));

    if status.is_none() {
        let _ = deputy.kill();
    }
    assert_eq!(
        status.and_then(|status| status.code()),
        Some(128 + libc::SIGINT),
        "deputy did not stop while its MCP server was starting"
    );
    assert!(
        stops_within(pid, Duration::from_secs(10)),
        "the server outlived deputy"
    );
    assert_eq!(server.request_count(), 0, "the model was asked anyway");
}

#[test]
fn interrupting_a_turn_that_waits_for_a_starting_server_ends_it_and_stops_the_server() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pidfile = dir.path().join("pids");
    let server = MockModelServer::start();
    let home = home_with_a_mute_server(&server, &pidfile);
    server.push(MockResponse::text_turn("answered afterwards"));
    let (client, thread_id) = app_server_thread(&home);
    let wait = APP_SERVER_WAIT;
    let turn_start = |text: &str| {
        let id = client.request(
            "turn/start",
            json!({"threadId": thread_id, "input": [{"type": "text", "text": text}]}),
        );
        let response = client
            .wait_response(id, wait)
            .unwrap_or_else(|e| panic!("{e}"));
        response["result"]["turn"]["id"].clone()
    };
    let turn_id = turn_start("wait for the mute server");
    let pid = wait_for_pid(&pidfile, wait);

    let id = client.request(
        "turn/interrupt",
        json!({"threadId": thread_id, "turnId": turn_id}),
    );
    client
        .wait_response(id, wait)
        .unwrap_or_else(|e| panic!("{e}"));
    let completed = client
        .wait_for(
            |m| m["method"] == "turn/completed" && m["params"]["turn"]["id"] == turn_id,
            wait,
        )
        .unwrap_or_else(|e| panic!("{e}"));

    assert_eq!(
        completed["params"]["turn"]["status"], "interrupted",
        "{completed}"
    );
    assert!(
        stops_within(pid, Duration::from_secs(10)),
        "the server is still running"
    );
    assert_eq!(
        server.request_count(),
        0,
        "the interrupted turn asked the model"
    );
    // The thread goes on without the server.
    let next = turn_start("and now?");
    let completed = client
        .wait_for(
            |m| m["method"] == "turn/completed" && m["params"]["turn"]["id"] == next,
            wait,
        )
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        completed["params"]["turn"]["status"], "completed",
        "{completed}"
    );
    let requests = all_requests(&server, 1);
    assert!(
        !requests[0].body["tools"]
            .to_string()
            .contains("mcp__mute__"),
        "the server that never started is offered"
    );
}
