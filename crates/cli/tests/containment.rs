//! Commands cannot touch deputy or outlive their command: each test starts real processes
//! through `deputy sandbox`, the launcher itself, `deputy mcp-server` or `deputy exec`, and
//! checks which processes are still running afterwards (found by a unique marker in their
//! argv, wherever they were re-parented), waiting a bounded time for the kernel to finish a
//! SIGKILL.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

#[path = "common/outside.rs"]
mod outside;
#[macro_use]
#[path = "common/sandbox_cli.rs"]
mod sandbox_cli;
#[path = "common/sandbox_server.rs"]
mod sandbox_server;

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use deputy_test_support::{MockModelServer, MockResponse, TestHome};
use sandbox_cli::*;
use sandbox_server::*;
use serde_json::json;

/// How long the kernel gets to finish killing a process tree.
const GONE_WITHIN: Duration = Duration::from_secs(10);

/// Every mode, confined or not.
const ALL_MODES: [&str; 3] = ["read-only", "workspace-write", "danger-full-access"];

/// A shell script that leaves a daemon behind (setsid'd, double-forked, so re-parented away
/// from the command) carrying `marker`, and ends once the daemon says it is up.
fn daemon_script(marker: &str) -> String {
    format!(
        r#"{python} -c 'import os, sys, time
if os.fork(): sys.exit(0)
os.setsid()
if os.fork(): os._exit(0)
print("up", flush=True)
time.sleep(1000)' {marker} 2>/dev/null | head -n1"#,
        python = python()
    )
}

/// `deputy __sandbox-exec` run directly by this test, forced to supervise without
/// namespaces: what commands get where the kernel offers none.
fn launcher_without_namespaces(mode: &str, ws: &Path, argv: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_deputy"));
    command
        .arg(deputy_sandbox::LAUNCHER_SUBCOMMAND)
        .args(["--mode", mode, "--cwd"])
        .arg(ws)
        .args(["--parent-pid", &std::process::id().to_string()])
        .args(["--writable-root"])
        .arg(ws)
        .arg("--without-namespaces")
        .arg("--")
        .args(argv)
        .env_remove("TMPDIR");
    command
}

/// Asserts the run said its daemon was up, then that no process with `marker` survives.
fn assert_daemon_gone(what: &str, output: &Output, marker: &str) {
    assert_eq!(stdout(output), "up\n", "{what}: {}", stderr(output));
    let survivors = survivors_after(marker, GONE_WITHIN);
    kill_all_with(marker);
    assert!(
        survivors.is_empty(),
        "{what}: {survivors:?} outlived the command"
    );
}

#[test]
fn a_daemon_dies_when_its_command_ends_in_every_mode() {
    require_sandbox!();
    let (_ws, ws) = workspace();
    for mode in ALL_MODES {
        let marker = unique_marker("daemon");
        let output = bash(mode, &ws, &daemon_script(&marker));
        assert_daemon_gone(mode, &output, &marker);
    }
}

#[test]
fn a_daemon_dies_when_its_command_ends_without_namespaces() {
    require_sandbox!();
    let (_ws, ws) = workspace();
    for mode in CONFINED_MODES {
        let marker = unique_marker("daemon-nons");
        let script = daemon_script(&marker);
        let output = run(launcher_without_namespaces(
            mode,
            &ws,
            &["bash", "-c", &script],
        ));
        assert_daemon_gone(mode, &output, &marker);
    }
}

/// A process outside the sandbox for the command to try to kill.
struct Bystander(std::process::Child);

impl Bystander {
    fn start() -> Self {
        Bystander(
            Command::new("sleep")
                .arg("1000")
                .stdout(Stdio::null())
                .spawn()
                .expect("spawn sleep"),
        )
    }

    fn is_alive(&mut self) -> bool {
        matches!(self.0.try_wait(), Ok(None))
    }
}

impl Drop for Bystander {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A script that SIGKILLs its parent (the launcher or the namespace's init) and `pid`, then
/// says it is still running. Had the parent died, the launcher would report SIGKILL.
fn killer_script(pid: u32) -> String {
    format!("kill -9 $PPID; kill -9 {pid}; echo still here")
}

#[test]
fn a_confined_command_cannot_kill_its_supervisor_or_a_process_outside() {
    require_sandbox!();
    let (_ws, ws) = workspace();
    for mode in CONFINED_MODES {
        let mut bystander = Bystander::start();
        let with_namespaces = bash(mode, &ws, &killer_script(bystander.0.id()));
        assert_eq!(
            (with_namespaces.status.code(), stdout(&with_namespaces)),
            (Some(0), "still here\n".to_string()),
            "{mode}: {}",
            stderr(&with_namespaces)
        );
        let script = killer_script(bystander.0.id());
        let without = run(launcher_without_namespaces(
            mode,
            &ws,
            &["bash", "-c", &script],
        ));
        assert_eq!(
            (without.status.code(), stdout(&without)),
            (Some(0), "still here\n".to_string()),
            "{mode} without namespaces: {}",
            stderr(&without)
        );
        assert!(
            stderr(&without).contains("Operation not permitted"),
            "{}",
            stderr(&without)
        );
        assert!(
            bystander.is_alive(),
            "{mode}: the command killed a process outside"
        );
    }
}

#[test]
fn a_command_dies_with_its_launcher_s_parent_without_namespaces() {
    require_sandbox!();
    let (_ws, ws) = workspace();
    for mode in ["workspace-write", "danger-full-access"] {
        let marker = unique_marker("orphaned");
        let sleeper = format!(
            "setsid {python} -c 'import time; time.sleep(1000)' {marker} & \
             {python} -c 'import time; time.sleep(1000)' {marker}",
            python = python()
        );
        // A shell stands in for deputy: it starts the launcher and is SIGKILLed.
        let parent_script = format!(
            "{deputy} {launcher} --mode {mode} --cwd {ws} --parent-pid $$ --writable-root {ws} \
             --without-namespaces -- bash -c \"$0\" & wait",
            deputy = env!("CARGO_BIN_EXE_deputy"),
            launcher = deputy_sandbox::LAUNCHER_SUBCOMMAND,
            ws = ws.display(),
        );
        let mut parent = Command::new("bash")
            .args(["-c", &parent_script, &sleeper])
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn the stand-in parent");
        let started = processes_appear(&marker, 2);
        let _ = parent.kill();
        let _ = parent.wait();
        let survivors = survivors_after(&marker, GONE_WITHIN);
        kill_all_with(&marker);
        assert!(started, "{mode}: the command never started");
        assert!(
            survivors.is_empty(),
            "{mode}: {survivors:?} outlived their parent"
        );
    }
}

/// Waits until `count` processes carry `marker`; returns whether they did.
fn processes_appear(marker: &str, count: usize) -> bool {
    let deadline = std::time::Instant::now() + WAIT;
    while std::time::Instant::now() < deadline {
        if processes_with(marker).len() >= count {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn a_sandboxed_command_cannot_kill_deputy_and_the_turn_completes() {
    require_sandbox!();
    for mode in CONFINED_MODES {
        let server = Server::start(json!({}));
        let deputy = server.client.pid();
        let steps = [
            shell_command("parent", "kill -9 $PPID; echo survived"),
            shell_command("deputy", &format!("kill -9 {deputy}; echo survived")),
        ];
        let told = server.run(mode, "never", &steps);
        for told in &told {
            assert!(told.contains("survived"), "{mode}: {told}");
        }
        assert!(
            server.client.wait_exit(Duration::ZERO).is_none(),
            "{mode}: deputy died"
        );
    }
}

/// A script that runs two sleepers carrying `marker`: a daemon (setsid'd, in the background)
/// and the command's own foreground process.
fn sleepers(marker: &str) -> String {
    format!(
        "setsid {python} -c 'import time; time.sleep(1000)' {marker} >/dev/null 2>&1 & \
         {python} -c 'import time; time.sleep(1000)' {marker}",
        python = python()
    )
}

#[test]
fn sigkill_of_deputy_leaves_no_command_running() {
    require_sandbox!();
    for mode in ["read-only", "workspace-write", "danger-full-access"] {
        let server = Server::start(json!({}));
        let marker = unique_marker("sigkill");
        let step = Step {
            call_id: "sleep",
            turn: MockResponse::function_call_turn(
                "sleep",
                "shell_command",
                json!({"command": sleepers(&marker), "timeout_ms": 120_000}),
            ),
        };
        let _id = server.start_turn(mode, "never", &[step]);
        let started = processes_appear(&marker, 2);
        // SAFETY: kill(2) only sends a signal, to the server this test started.
        unsafe {
            libc::kill(server.client.pid() as i32, libc::SIGKILL);
        }
        let survivors = survivors_after(&marker, GONE_WITHIN);
        kill_all_with(&marker);
        assert!(started, "{mode}: the command never started");
        assert!(
            survivors.is_empty(),
            "{mode}: {survivors:?} outlived a SIGKILLed deputy"
        );
    }
}

/// `deputy exec -s MODE` runs the sleepers and is SIGKILLed while they run: neither the
/// command nor its daemon may outlive it.
fn sigkill_of_exec_case(mode: &str) {
    let model = MockModelServer::start();
    let marker = unique_marker("sigkill-exec");
    model.push_all([
        MockResponse::function_call_turn(
            "sleep",
            "shell_command",
            json!({"command": sleepers(&marker), "timeout_ms": 120_000}),
        ),
        MockResponse::text_turn("unreachable"),
    ]);
    let home = TestHome::new(&model.base_url());
    let mut exec = home
        .command(env!("CARGO_BIN_EXE_deputy"))
        .args(["exec", "-a", "never", "-s", mode, "sleep"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn deputy exec");
    let started = processes_appear(&marker, 2);
    // `Child::kill` is SIGKILL on Unix.
    let _ = exec.kill();
    let status = exec.wait().expect("reap deputy exec");
    let survivors = survivors_after(&marker, GONE_WITHIN);
    kill_all_with(&marker);
    assert!(started, "{mode}: the command never started");
    assert_eq!(
        status.signal(),
        Some(libc::SIGKILL),
        "{mode}: deputy exec ended before the SIGKILL: {status:?}"
    );
    assert!(
        survivors.is_empty(),
        "{mode}: {survivors:?} outlived a SIGKILLed deputy exec"
    );
}

#[test]
fn sigkill_of_exec_leaves_no_unsandboxed_command_running() {
    sigkill_of_exec_case("danger-full-access");
}

#[test]
fn sigkill_of_exec_leaves_no_sandboxed_command_running() {
    require_sandbox!();
    sigkill_of_exec_case("workspace-write");
}

#[test]
fn a_timed_out_command_leaves_nothing_behind() {
    require_sandbox!();
    let server = Server::start(json!({}));
    for mode in ["workspace-write", "danger-full-access"] {
        let marker = unique_marker("timeout");
        let script = format!(
            "setsid {python} -c 'import time; print(\"up\", flush=True); time.sleep(1000)' {marker} & \
             sleep 1000",
            python = python()
        );
        let step = Step {
            call_id: "slow",
            turn: MockResponse::function_call_turn(
                "slow",
                "shell_command",
                json!({"command": script, "timeout_ms": 1500}),
            ),
        };
        let first = server.model.requests().len();
        let id = server.start_turn(mode, "never", &[step]);
        server.finish_turn(id);
        let told = server.told_after(first, "slow");
        let survivors = survivors_after(&marker, GONE_WITHIN);
        kill_all_with(&marker);
        assert!(
            told.contains("up"),
            "{mode}: the daemon never started: {told}"
        );
        assert_eq!(exit_code(&told), 124, "{mode}: {told}");
        assert!(
            survivors.is_empty(),
            "{mode}: {survivors:?} outlived the timeout"
        );
    }
}

/// A script that starts two sleepers carrying `marker` (each touches its file once it runs),
/// waits for both, then SIGKILLs its parent: its launcher, or, confined, the namespace's init
/// (which ignores it) — unconfined, the kill works and nothing is left to kill the sleepers.
fn supervisor_killer(marker: &str) -> String {
    let sleeper = |file: &str| {
        format!(
            "{python} -c 'import pathlib, sys, time; pathlib.Path(sys.argv[1]).touch(); \
             time.sleep(1000)' {file} {marker} &",
            python = python()
        )
    };
    format!(
        "{} {} while [ ! -e up-1 ] || [ ! -e up-2 ]; do sleep 0.05; done; kill -9 $PPID",
        sleeper("up-1"),
        sleeper("up-2")
    )
}

#[test]
fn a_command_that_kills_its_launcher_leaves_nothing_after_it_or_after_deputy() {
    require_sandbox!();
    let server = Server::start(json!({}));
    let mut markers = Vec::new();
    for mode in ["workspace-write", "danger-full-access"] {
        let marker = unique_marker("killer");
        for file in ["up-1", "up-2"] {
            let _ = std::fs::remove_file(server.ws.join(file));
        }
        let step = Step {
            call_id: "killer",
            turn: MockResponse::function_call_turn(
                "killer",
                "shell_command",
                json!({"command": supervisor_killer(&marker), "timeout_ms": 60_000}),
            ),
        };
        let first = server.model.requests().len();
        let id = server.start_turn(mode, "never", &[step]);
        server.finish_turn(id);
        let told = server.told_after(first, "killer");
        let survivors = survivors_after(&marker, GONE_WITHIN);
        kill_all_with(&marker);
        assert!(
            server.ws.join("up-1").exists() && server.ws.join("up-2").exists(),
            "{mode}: the sleepers never ran: {told}"
        );
        assert!(
            survivors.is_empty(),
            "{mode}: {survivors:?} outlived the command ({told})"
        );
        markers.push(marker);
    }
    // SAFETY: kill(2) only sends a signal, to the server this test started.
    unsafe { libc::kill(server.client.pid() as i32, libc::SIGTERM) };
    let status = server.client.wait_exit(GONE_WITHIN);
    for marker in &markers {
        assert!(
            processes_with(marker).is_empty(),
            "{marker} outlived deputy"
        );
    }
    assert_eq!(
        status.and_then(|s| s.code()),
        Some(128 + libc::SIGTERM),
        "deputy did not stop on SIGTERM"
    );
}

#[test]
fn a_command_that_kills_its_launcher_leaves_nothing_after_a_sigkilled_deputy_exec() {
    let model = MockModelServer::start();
    let marker = unique_marker("killer-exec");
    model.push_all([
        MockResponse::function_call_turn(
            "killer",
            "shell_command",
            json!({"command": supervisor_killer(&marker), "timeout_ms": 60_000}),
        ),
        // deputy waits here, after the command, until it is killed.
        MockResponse::text_turn("unreachable").stall_after(0),
    ]);
    let home = TestHome::new(&model.base_url());
    let mut exec = home
        .command(env!("CARGO_BIN_EXE_deputy"))
        .args(["exec", "-a", "never", "-s", "danger-full-access", "go"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn deputy exec");
    let after_the_command = model.wait_for_requests(2, WAIT);
    let _ = exec.kill();
    let _ = exec.wait();
    let survivors = survivors_after(&marker, GONE_WITHIN);
    kill_all_with(&marker);
    assert!(after_the_command.is_ok(), "the command never ended");
    assert!(
        home.workspace().join("up-1").exists() && home.workspace().join("up-2").exists(),
        "the sleepers never ran"
    );
    assert!(
        survivors.is_empty(),
        "{survivors:?} outlived the command and deputy exec"
    );
}
