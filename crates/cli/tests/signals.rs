//! No command outlives deputy: SIGTERM, SIGHUP or SIGINT to `deputy exec`,
//! `deputy mcp-server` or `deputy acp` while a command runs stops the turn, kills the command with
//! everything it started (sandboxed or not), closes the session and exits with
//! `128 + signal`.
//!
//! The command is `sleep 30` twice (one in the background) under a unique name, found
//! afterwards by scanning `/proc` wherever it was re-parented.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

mod common;

use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use deputy_test_support::{McpSession, MockModelServer, MockResponse, StdioClient, TestHome};
use serde_json::json;

use common::{DEPUTY, deputy};

/// How long anything the test waits for may take on a loaded machine.
const SOON: Duration = Duration::from_secs(20);

/// A name no other process has: this test process, this test, a counter.
fn unique_marker(label: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!(
        "deputy-signal-{label}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A script that becomes two `sleep 30`s named `marker`, one in the background.
fn sleepers(marker: &str) -> String {
    format!("(exec -a {marker} sleep 30) & exec -a {marker} sleep 30")
}

/// Live (not zombie) processes whose argv[0] is `marker`.
fn running(marker: &str) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
                return false;
            };
            let argv0 = cmdline.split(|b| *b == 0).next().unwrap_or_default();
            if argv0 != marker.as_bytes() {
                return false;
            }
            // Killed but not yet reaped (a zombie) counts as gone.
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next())
                .unwrap_or('X');
            !matches!(state, 'Z' | 'X' | 'x')
        })
        .collect()
}

/// Polls until `done` holds, for at most [`SOON`].
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let reached = deputy_test_support::processes::poll_until(SOON, || done().then_some(()));
    assert!(reached.is_some(), "timed out waiting until {what}");
}

/// Fails the test if a process named `marker` is still running once the kernel had
/// time to finish the kill; kills the survivors first so they do not outlive the test.
fn assert_none_survives(marker: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !running(marker).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let survivors = running(marker);
    for pid in &survivors {
        // SAFETY: kill(2) has no memory-safety preconditions.
        unsafe { libc::kill(*pid, libc::SIGKILL) };
    }
    assert!(
        survivors.is_empty(),
        "the command outlived deputy: {survivors:?}"
    );
}

/// Whether the sandbox can run here; prints why not.
fn sandbox_available() -> bool {
    match deputy_sandbox::probe() {
        Ok(_) => true,
        Err(reason) => {
            deputy_test_support::skip_without_sandbox(reason);
            false
        }
    }
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) has no memory-safety preconditions.
    let sent = unsafe { libc::kill(pid as i32, sig) };
    assert_eq!(sent, 0, "could not signal {pid}");
}

fn wait_child(child: &mut Child) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("poll deputy") {
            return status;
        }
        if start.elapsed() > SOON {
            let _ = child.kill();
            panic!("deputy did not exit within {SOON:?} of the signal");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `deputy exec -s SANDBOX` runs the sleepers; `sig` arrives while they run.
fn exec_case(sig: i32, sandbox: &str) {
    if sandbox != "danger-full-access" && !sandbox_available() {
        return;
    }
    let marker = unique_marker("exec");
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::function_call_turn(
            "call-sleep",
            "shell",
            json!({"command": ["bash", "-c", sleepers(&marker)], "timeout_ms": 120_000}),
        ),
        MockResponse::text_turn("unreachable"),
    ]);
    let home = TestHome::new(&server.base_url());
    let mut child = deputy(&home, &["exec", "-a", "never", "-s", sandbox, "sleep"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn deputy");
    wait_until("both sleepers run", || running(&marker).len() == 2);

    signal(child.id(), sig);
    let status = wait_child(&mut child);

    assert_none_survives(&marker);
    assert_eq!(status.code(), Some(128 + sig), "{status:?}");
    assert_eq!(server.request_count(), 1, "no turn after the signal");
}

/// `deputy mcp-server` runs the sleepers for a `codex` call; `sig` arrives meanwhile.
fn mcp_case(sig: i32, sandbox: &str) {
    if sandbox != "danger-full-access" && !sandbox_available() {
        return;
    }
    let marker = unique_marker("mcp");
    let server = MockModelServer::start();
    server.push(MockResponse::function_call_turn(
        "call-sleep",
        "shell",
        json!({"command": ["bash", "-c", sleepers(&marker)], "timeout_ms": 120_000}),
    ));
    let home = TestHome::new(&server.base_url());
    let mut command = home.command(DEPUTY);
    command.arg("mcp-server");
    let client = StdioClient::spawn(command);
    McpSession::initialize(&client, json!({}));
    client.request(
        "tools/call",
        json!({"name": "codex", "arguments": {
            "prompt": "sleep", "sandbox": sandbox, "approval-policy": "never"}}),
    );
    wait_until("both sleepers run", || running(&marker).len() == 2);

    signal(client.pid(), sig);
    let status = client.wait_exit(SOON);

    assert_none_survives(&marker);
    let status = status.unwrap_or_else(|| panic!("deputy mcp-server did not exit"));
    assert_eq!(status.code(), Some(128 + sig), "{status:?}");
}

/// `deputy acp` runs the sleepers for a prompt; `sig` arrives meanwhile.
fn acp_case(sig: i32) {
    let marker = unique_marker("acp");
    let server = MockModelServer::start();
    server.push(MockResponse::function_call_turn(
        "call-sleep",
        "shell",
        json!({"command": ["bash", "-c", sleepers(&marker)], "timeout_ms": 120_000}),
    ));
    let home = TestHome::new(&server.base_url());
    let mut command = home.command(DEPUTY);
    command.arg("acp");
    let client = StdioClient::spawn(command);
    let init = client.request("initialize", json!({"protocolVersion": 1}));
    client.wait_response(init, SOON).unwrap();
    let new = client.request(
        "session/new",
        json!({"cwd": home.workspace(), "mcpServers": []}),
    );
    let session = client.wait_response(new, SOON).unwrap()["result"]["sessionId"].clone();
    client.request(
        "session/prompt",
        json!({"sessionId": session, "prompt": [{"type": "text", "text": "sleep"}]}),
    );
    wait_until("both sleepers run", || running(&marker).len() == 2);

    signal(client.pid(), sig);
    let status = client.wait_exit(SOON);

    assert_none_survives(&marker);
    let status = status.unwrap_or_else(|| panic!("deputy acp did not exit"));
    assert_eq!(status.code(), Some(128 + sig), "{status:?}");
    // Stdout carried protocol messages and nothing else.
    for line in client.lines() {
        let message: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
    }
}

#[test]
fn sigterm_to_acp_kills_the_command() {
    acp_case(libc::SIGTERM);
}

#[test]
fn sighup_to_acp_kills_the_command() {
    acp_case(libc::SIGHUP);
}

#[test]
fn sigint_to_acp_kills_the_command() {
    acp_case(libc::SIGINT);
}

#[test]
fn sigterm_to_exec_kills_an_unsandboxed_command() {
    exec_case(libc::SIGTERM, "danger-full-access");
}

#[test]
fn sigterm_to_exec_kills_a_sandboxed_command() {
    exec_case(libc::SIGTERM, "workspace-write");
}

#[test]
fn sighup_to_exec_kills_an_unsandboxed_command() {
    exec_case(libc::SIGHUP, "danger-full-access");
}

#[test]
fn sighup_to_exec_kills_a_sandboxed_command() {
    exec_case(libc::SIGHUP, "workspace-write");
}

#[test]
fn sigint_to_exec_kills_an_unsandboxed_command() {
    exec_case(libc::SIGINT, "danger-full-access");
}

#[test]
fn sigint_to_exec_kills_a_sandboxed_command() {
    exec_case(libc::SIGINT, "workspace-write");
}

#[test]
fn sigterm_to_mcp_server_kills_an_unsandboxed_command() {
    mcp_case(libc::SIGTERM, "danger-full-access");
}

#[test]
fn sigterm_to_mcp_server_kills_a_sandboxed_command() {
    mcp_case(libc::SIGTERM, "workspace-write");
}

#[test]
fn sighup_to_mcp_server_kills_an_unsandboxed_command() {
    mcp_case(libc::SIGHUP, "danger-full-access");
}

#[test]
fn sighup_to_mcp_server_kills_a_sandboxed_command() {
    mcp_case(libc::SIGHUP, "workspace-write");
}

#[test]
fn sigint_to_mcp_server_kills_an_unsandboxed_command() {
    mcp_case(libc::SIGINT, "danger-full-access");
}

#[test]
fn sigint_to_mcp_server_kills_a_sandboxed_command() {
    mcp_case(libc::SIGINT, "workspace-write");
}
