//! Unified exec on the real binary: `exec_command` starts a command that may outlive the
//! call, `write_stdin` drives or polls it. The model (a `gpt-5-codex`, which is offered
//! these tools) is scripted by what deputy sent it: each reply reads the previous tool
//! outputs, so session ids and ports are never guessed.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

mod common;
#[allow(
    dead_code,
    reason = "the app-server tests' harness; this file uses a part"
)]
#[path = "app_server/harness.rs"]
mod harness;
#[path = "common/outside.rs"]
mod outside;
#[macro_use]
#[path = "common/sandbox_cli.rs"]
mod sandbox_cli;
#[path = "common/injection.rs"]
mod injection;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use deputy_test_support::processes::poll_until;
use deputy_test_support::{MockModelServer, MockResponse, RecordedRequest, TestHome};
use serde_json::{Value, json};

use common::{DEPUTY, Finished, finish};
use sandbox_cli::{processes_with, python, unique_marker};

/// The model family that is offered `exec_command` and `write_stdin`.
const MODEL: &str = "gpt-5-codex";
/// Upper bound of any one wait; a passing test never comes near it.
const SOON: Duration = Duration::from_secs(20);

/// The `function_call_output` texts of `request`, in order.
fn outputs(request: &RecordedRequest) -> Vec<String> {
    request.body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == "function_call_output")
        .map(|item| match &item["output"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// The session id a tool output announces (`Process running with session ID N`).
fn session_of(output: &str) -> u64 {
    output
        .split("session ID ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|id| id.parse().ok())
        .unwrap_or_else(|| panic!("no running session in: {output}"))
}

fn exec_command(call_id: &str, args: Value) -> MockResponse {
    MockResponse::function_call_turn(call_id, "exec_command", args)
}

fn write_stdin(call_id: &str, args: Value) -> MockResponse {
    MockResponse::function_call_turn(call_id, "write_stdin", args)
}

/// A model whose reply to each request is `step(outputs so far)`.
fn scripted(step: impl Fn(&[String]) -> MockResponse + Send + Sync + 'static) -> MockModelServer {
    let model = MockModelServer::start();
    model.respond_with(move |request| step(&outputs(request)));
    model
}

/// A home for `model` with `sandbox_mode = sandbox`, never asking.
fn home_for(model: &MockModelServer, sandbox: &str) -> TestHome {
    let home = TestHome::new(&model.base_url());
    let config = TestHome::default_config(&model.base_url()).replace(
        "sandbox_mode = \"danger-full-access\"",
        &format!("sandbox_mode = \"{sandbox}\""),
    );
    home.write_config(&config);
    home
}

/// `deputy exec --json -m gpt-5-codex <task>` in `home`, with no input.
fn deputy_exec(home: &TestHome) -> Command {
    let mut command = home.command(DEPUTY);
    command
        .args(["exec", "--json", "--skip-git-repo-check", "-m", MODEL, "go"])
        .stdin(Stdio::null());
    command
}

/// [`deputy_exec`] run to its end.
fn run_exec(home: &TestHome) -> Finished {
    finish(deputy_exec(home))
}

/// [`deputy_exec`] left running (its output unread).
fn spawn_exec(home: &TestHome) -> Child {
    deputy_exec(home)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn deputy")
}

/// The tool outputs of the last request `model` received.
fn final_outputs(model: &MockModelServer) -> Vec<String> {
    let requests = model.requests();
    outputs(requests.last().expect("the model was asked"))
}

#[test]
fn an_interactive_python_is_driven_by_write_stdin() {
    let model = scripted(|outputs| match outputs.len() {
        0 => exec_command(
            "start",
            json!({"cmd": format!("{} -i -q", python()), "tty": true, "yield_time_ms": 2000}),
        ),
        1 => write_stdin(
            "ask",
            json!({"session_id": session_of(&outputs[0]), "chars": "print(6 * 7)\n", "yield_time_ms": 2000}),
        ),
        2 => write_stdin(
            "quit",
            json!({"session_id": session_of(&outputs[0]), "chars": "exit()\n", "yield_time_ms": 5000}),
        ),
        _ => MockResponse::text_turn("done"),
    });
    let home = home_for(&model, "danger-full-access");
    run_exec(&home).assert_code(0);
    let outputs = final_outputs(&model);
    assert_eq!(outputs.len(), 3, "{outputs:?}");
    assert!(outputs[0].contains(">>>"), "no prompt: {}", outputs[0]);
    assert!(outputs[1].contains("42"), "no answer: {}", outputs[1]);
    assert!(
        outputs[2].contains("Process exited with code 0"),
        "{}",
        outputs[2]
    );
}

/// Listens on a free loopback port, says which, serves one client `hello`, says so, and
/// stays up.
const SERVER: &str = "import socket, time\n\
s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n\
print('port', s.getsockname()[1], flush=True)\n\
c, _ = s.accept(); c.sendall(b'hello'); c.close()\n\
print('served one client', flush=True)\n\
time.sleep(60)\n";

#[test]
fn a_server_started_in_one_call_is_polled_in_a_later_one() {
    let model = scripted(|outputs| match outputs.len() {
        0 => exec_command(
            "server",
            json!({"cmd": format!("{} -c \"{SERVER}\"", python()), "yield_time_ms": 1500}),
        ),
        1 => {
            let port = outputs[0]
                .split("port ")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next())
                .unwrap_or_else(|| panic!("no port in: {}", outputs[0]))
                .to_string();
            let client = format!(
                "{} -c \"import socket; print(socket.create_connection(('127.0.0.1', {port})).recv(10))\"",
                python()
            );
            exec_command("client", json!({"cmd": client}))
        }
        2 => write_stdin(
            "poll",
            json!({"session_id": session_of(&outputs[0]), "chars": "", "yield_time_ms": 3000}),
        ),
        _ => MockResponse::text_turn("done"),
    });
    let home = home_for(&model, "danger-full-access");
    let run = run_exec(&home);
    run.assert_code(0);
    let outputs = final_outputs(&model);
    assert_eq!(outputs.len(), 3, "{outputs:?}");
    assert!(outputs[0].contains("Process running"), "{}", outputs[0]);
    assert!(outputs[1].contains("b'hello'"), "{}", outputs[1]);
    assert!(
        outputs[1].contains("Process exited with code 0"),
        "{}",
        outputs[1]
    );
    assert!(outputs[2].contains("served one client"), "{}", outputs[2]);
    assert!(outputs[2].contains("Process running"), "{}", outputs[2]);
    // The JSONL shows the session's command as a command_execution item.
    let started: Vec<Value> = run
        .stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|event| event["type"] == "item.completed")
        .filter(|event| event["item"]["type"] == "command_execution")
        .collect();
    assert_eq!(started.len(), 2, "{}", run.stdout);
}

#[test]
fn tty_true_runs_the_command_on_a_terminal_and_tty_false_does_not() {
    let script = "tty; test -t 1 && echo stdout-is-a-terminal || echo stdout-is-not-a-terminal";
    let model = scripted(move |outputs| match outputs.len() {
        0 => exec_command("on", json!({"cmd": script, "tty": true})),
        1 => exec_command("off", json!({"cmd": script})),
        _ => MockResponse::text_turn("done"),
    });
    let home = home_for(&model, "danger-full-access");
    run_exec(&home).assert_code(0);
    let outputs = final_outputs(&model);
    assert!(outputs[0].contains("/dev/pts/"), "{}", outputs[0]);
    assert!(
        outputs[0].contains("stdout-is-a-terminal"),
        "{}",
        outputs[0]
    );
    assert!(outputs[1].contains("not a tty"), "{}", outputs[1]);
    assert!(
        outputs[1].contains("stdout-is-not-a-terminal"),
        "{}",
        outputs[1]
    );
}

/// Fails the test unless no live process carries `marker` within [`SOON`].
fn assert_gone(marker: &str, what: &str) {
    let gone = poll_until(SOON, || processes_with(marker).is_empty().then_some(()));
    assert!(
        gone.is_some(),
        "{what}: a session process survived: {:?}",
        processes_with(marker)
    );
}

/// Waits until a live process carries `marker`; fails the test after [`SOON`].
fn wait_running(marker: &str) {
    let running = poll_until(SOON, || (!processes_with(marker).is_empty()).then_some(()));
    assert!(running.is_some(), "{marker} never started");
}

/// A command that runs for a minute with `marker` in its command line.
fn long_runner(marker: &str) -> String {
    format!("{} -c 'import time; time.sleep(60)' {marker}", python())
}

#[test]
fn sigkill_of_deputy_leaves_no_session_process() {
    for sandbox in ["danger-full-access", "workspace-write"] {
        if sandbox != "danger-full-access"
            && let Err(reason) = deputy_sandbox::probe()
        {
            deputy_test_support::skip_without_sandbox(reason);
            continue;
        }
        let marker = unique_marker("uexec-kill");
        let cmd = long_runner(&marker);
        let model = MockModelServer::start();
        model.push(exec_command(
            "start",
            json!({"cmd": cmd, "yield_time_ms": 100}),
        ));
        // The next request hangs: the session outlives its call while the turn goes on.
        model.push(MockResponse::text_turn("never").stall_after(0));
        let home = home_for(&model, sandbox);
        let mut child = spawn_exec(&home);
        model
            .wait_for_requests(2, SOON)
            .unwrap_or_else(|err| panic!("{err}"));
        wait_running(&marker);
        child.kill().expect("SIGKILL deputy");
        child.wait().expect("reap deputy");
        assert_gone(&marker, sandbox);
    }
}

#[test]
fn interrupting_the_turn_stops_every_session() {
    let marker = unique_marker("uexec-interrupt");
    let server = harness::Setup::default().start();
    let thread = harness::id_of(&server.start_thread_with(json!({"model": MODEL}))["thread"]);
    server.model.push(exec_command(
        "start",
        json!({"cmd": long_runner(&marker), "yield_time_ms": 100}),
    ));
    server
        .model
        .push(MockResponse::text_turn("never").stall_after(0));
    let turn = server.start_turn(&thread, "start it");
    server
        .model
        .wait_for_requests(2, SOON)
        .unwrap_or_else(|err| panic!("{err}"));
    wait_running(&marker);
    let id = server.request(
        "turn/interrupt",
        json!({"threadId": thread, "turnId": turn}),
    );
    assert_eq!(server.result(id), json!({}));
    assert_eq!(
        server.turn_completed(&turn)["turn"]["status"],
        "interrupted"
    );
    // The server lives on; the session is gone all the same.
    assert_gone(&marker, "interrupt");
    let item = server.notification("item/completed", |p| {
        p["item"]["type"] == "commandExecution"
    });
    assert!(item["item"]["processId"].is_string(), "{item}");
}

/// Runs a turn in which the model calls `exec_command` once with `args` under `sandbox`;
/// returns that call's output.
fn one_exec_command(sandbox: &str, args: Value) -> String {
    let model = MockModelServer::start();
    model.push(exec_command("call", args));
    model.push(MockResponse::text_turn("done"));
    let home = home_for(&model, sandbox);
    run_exec(&home).assert_code(0);
    final_outputs(&model).join("\n")
}

#[test]
fn exec_command_cannot_write_outside_the_workspace_in_a_confined_mode() {
    require_sandbox!();
    let outside = outside::outside_dir();
    let dir = outside.path().to_str().expect("utf-8 path").to_string();
    for mode in sandbox_cli::CONFINED_MODES {
        for tty in [false, true] {
            let target = outside.path().join(format!("{mode}-{tty}.txt"));
            let output = one_exec_command(
                mode,
                json!({"cmd": format!("echo escaped > '{}'", target.display()), "tty": tty}),
            );
            assert!(
                !target.exists(),
                "{mode}, tty {tty}: wrote {target:?}: {output}"
            );
            assert!(output.contains("Process exited with code 1"), "{output}");
            // A workdir outside the workspace grants nothing either.
            let output = one_exec_command(
                mode,
                json!({"cmd": "echo escaped > from-workdir.txt", "workdir": dir, "tty": tty}),
            );
            let from_workdir = outside.path().join("from-workdir.txt");
            assert!(!from_workdir.exists(), "{mode}, tty {tty}: {output}");
        }
    }
    // The control: unconfined, the same command does write there.
    let target = outside.path().join("unconfined.txt");
    one_exec_command(
        "danger-full-access",
        json!({"cmd": format!("echo escaped > '{}'", target.display()), "tty": true}),
    );
    assert!(target.exists(), "the control did not write {target:?}");
}

#[test]
fn no_exec_command_injects_into_the_terminal_deputy_runs_on_in_any_mode() {
    require_sandbox!();
    if !injection::has_pty() {
        return;
    }
    let control = injection::on_pty(&[python(), "-c", injection::INJECT]);
    if sandbox_cli::stdout(&control).trim() == "queued=b''" {
        eprintln!("skipping: this kernel refuses TIOCSTI (dev.tty.legacy_tiocsti = 0)");
        return;
    }
    for mode in ["read-only", "workspace-write", "danger-full-access"] {
        for tty in [false, true] {
            let model = MockModelServer::start();
            model.push(exec_command(
                "inject",
                json!({"cmd": format!("{} inject.py", python()), "tty": tty, "yield_time_ms": 5000}),
            ));
            model.push(MockResponse::text_turn("done"));
            let home = home_for(&model, mode);
            std::fs::write(home.workspace().join("inject.py"), injection::INJECT)
                .expect("write the injector");
            let run = home
                .command(python())
                .args([
                    "-c",
                    injection::PTY_RUN,
                    DEPUTY,
                    "exec",
                    "--json",
                    "-m",
                    MODEL,
                    "go",
                ])
                .env_remove("TMPDIR")
                .output()
                .expect("run the pty driver");
            let said = final_outputs(&model).join("\n");
            assert!(
                said.contains("/dev/tty"),
                "{mode}, tty {tty}: did not run: {said}"
            );
            assert!(!said.contains("injected"), "{mode}, tty {tty}: {said}");
            assert_eq!(
                sandbox_cli::stdout(&run).trim(),
                "queued=b''",
                "{mode}, tty {tty}: bytes were pushed into deputy's terminal: {said}"
            );
        }
    }
}

#[test]
fn the_seventeenth_session_closes_the_oldest_idle_one_and_none_outlives_deputy() {
    let markers: Vec<String> = (0..17)
        .map(|i| unique_marker(&format!("uexec-cap{i}")))
        .collect();
    let commands: Vec<String> = markers.iter().map(|m| long_runner(m)).collect();
    let model = scripted(move |outputs| match outputs.len() {
        n @ 0..17 => exec_command(
            &format!("start-{n}"),
            json!({"cmd": commands[n], "yield_time_ms": 50}),
        ),
        17 => write_stdin(
            "first",
            json!({"session_id": session_of(&outputs[0]), "yield_time_ms": 50}),
        ),
        18 => write_stdin(
            "second",
            json!({"session_id": session_of(&outputs[1]), "yield_time_ms": 50}),
        ),
        _ => MockResponse::text_turn("done"),
    });
    let home = home_for(&model, "danger-full-access");
    run_exec(&home).assert_code(0);
    let outputs = final_outputs(&model);
    assert_eq!(outputs.len(), 19, "{outputs:?}");
    let first = session_of(&outputs[0]);
    assert!(
        outputs[16].contains(&format!("Session {first} (the oldest idle one) was closed")),
        "{}",
        outputs[16]
    );
    assert!(
        outputs[17].contains(&format!("Unknown session_id {first}")),
        "{}",
        outputs[17]
    );
    assert!(outputs[18].contains("Process running"), "{}", outputs[18]);
    for marker in &markers {
        assert_gone(marker, "deputy exec has exited");
    }
}

#[test]
fn exec_command_asks_the_same_approval_question_and_runs_only_once_accepted() {
    for (decision, runs) in [("decline", false), ("accept", true)] {
        let server = harness::Setup::new("untrusted", "danger-full-access").start();
        let thread = harness::id_of(&server.start_thread_with(json!({"model": MODEL}))["thread"]);
        server.model.push(exec_command(
            "touch",
            json!({"cmd": "touch approved.txt", "tty": true}),
        ));
        server.model.push(MockResponse::text_turn("done"));
        let turn = server.start_turn(&thread, "make a file");
        let request = server.server_request("item/commandExecution/requestApproval", |_| true);
        assert!(
            request["params"]["command"]
                .as_str()
                .unwrap()
                .contains("touch approved.txt"),
            "{request}"
        );
        assert!(
            !server.home.workspace().join("approved.txt").exists(),
            "ran before the answer"
        );
        server
            .client
            .respond(request["id"].clone(), json!({"decision": decision}));
        assert_eq!(server.turn_completed(&turn)["turn"]["status"], "completed");
        assert_eq!(
            server.home.workspace().join("approved.txt").exists(),
            runs,
            "{decision}"
        );
    }
}

/// The threads `pid` runs, from `/proc`.
fn threads_of(pid: u32) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("deputy's status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))
        .and_then(|count| count.trim().parse().ok())
        .expect("a Threads line")
}

#[test]
fn quiet_terminal_sessions_hold_no_thread_each() {
    const SESSIONS: usize = 16;
    let markers: Vec<String> = (0..SESSIONS)
        .map(|i| unique_marker(&format!("uexec-quiet{i}")))
        .collect();
    let commands: Vec<String> = markers.iter().map(|m| long_runner(m)).collect();
    let model = scripted(move |outputs| match outputs.len() {
        n @ 0..SESSIONS => exec_command(
            &format!("start-{n}"),
            json!({"cmd": commands[n], "tty": true, "yield_time_ms": 50}),
        ),
        // Every session is running and printing nothing while this request hangs.
        _ => MockResponse::text_turn("never").stall_after(0),
    });
    let home = home_for(&model, "danger-full-access");
    let mut child = spawn_exec(&home);
    model
        .wait_for_requests(SESSIONS + 1, SOON)
        .unwrap_or_else(|err| panic!("{err}"));
    for marker in &markers {
        wait_running(marker);
    }
    // The runtime's workers, the main thread and a few more; a thread blocked in each
    // session's read would add sixteen.
    let workers = std::thread::available_parallelism().map_or(1, usize::from);
    let threads = threads_of(child.id());
    child.kill().expect("SIGKILL deputy");
    child.wait().expect("reap deputy");
    assert!(
        threads < workers + 12,
        "{threads} threads for {SESSIONS} quiet sessions ({workers} workers)"
    );
    for marker in &markers {
        assert_gone(marker, "deputy was killed");
    }
}
