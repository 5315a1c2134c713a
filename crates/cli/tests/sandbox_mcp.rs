//! The escape battery of `tests/sandbox.rs`, driven through `deputy mcp-server`: the scripted
//! model asks for `shell` / `shell_command` calls that try to leave the sandbox chosen by the
//! `codex` tool's `sandbox` argument. Each test checks what happened on disk or on the wire,
//! and what the model was told in its next request: the exit code, the kernel's errno text and
//! deputy's note that the failure looks like a sandbox denial.
//!
//! Everything the sandbox must keep out lives under Cargo's target tmp dir, never under `/tmp`
//! (which workspace-write may write); `TMPDIR` is removed from the server's environment and
//! `HOME` points outside the workspace for the same reason.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

#[path = "common/outside.rs"]
mod outside;

use outside::outside_dir;
use std::io::{ErrorKind, Read};
use std::net::{TcpListener, UdpSocket};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use deputy_test_support::{McpSession, MockModelServer, MockResponse, StdioClient, TestHome};
use serde_json::{Value, json};
use tempfile::TempDir;

/// How long a turn may take before the test gives up on it.
const WAIT: Duration = Duration::from_secs(60);
/// The model's last answer in every scripted turn.
const FINAL_TEXT: &str = "done";
/// What deputy appends to the output of a sandboxed command that failed like a denial.
const DENIAL_NOTE: &str = "looks like a sandbox denial";

/// Returns early (with the reason printed) where the kernel cannot confine commands.
macro_rules! require_sandbox {
    () => {
        if let Err(reason) = deputy_sandbox::probe() {
            eprintln!("skipping: {reason}");
            return;
        }
    };
}

/// The real interpreter behind `python3`, resolved here because version-manager shims look
/// for their versions under `$HOME`, which the server's commands see as an empty directory.
fn python() -> &'static str {
    static PYTHON: OnceLock<String> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let output = Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect("python3 is needed by the sandbox tests");
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    })
}

/// One model tool call: its id and the turn that makes it.
struct Step {
    call_id: &'static str,
    turn: MockResponse,
}

/// A model turn calling `shell` with `argv`.
fn shell(call_id: &'static str, argv: &[&str]) -> Step {
    Step {
        call_id,
        turn: MockResponse::function_call_turn(call_id, "shell", json!({"command": argv})),
    }
}

/// A model turn calling `shell_command` with `script` (run by `bash -lc`).
fn shell_command(call_id: &'static str, script: &str) -> Step {
    Step {
        call_id,
        turn: MockResponse::function_call_turn(
            call_id,
            "shell_command",
            json!({"command": script}),
        ),
    }
}

/// One `deputy mcp-server` against a scripted model, with a workspace at `<base>/ws` and a
/// `HOME`, all outside `/tmp`.
struct Server {
    model: MockModelServer,
    client: StdioClient,
    /// The parent of the workspace: a `..` away, and not writable.
    base: TempDir,
    /// The workspace (canonical), passed as the `codex` call's `cwd`.
    ws: PathBuf,
    /// The server's (and its commands') `HOME`.
    user_home: TempDir,
    _deputy_home: TestHome,
}

impl Server {
    /// Starts the server; the client announces `capabilities`.
    fn start(capabilities: Value) -> Self {
        let base = outside_dir();
        let ws = base.path().join("ws");
        std::fs::create_dir(&ws).expect("create workspace");
        let ws = ws.canonicalize().expect("canonicalize workspace");
        let user_home = outside_dir();
        let model = MockModelServer::start();
        let deputy_home = TestHome::new(&model.base_url());
        let mut command = deputy_home.command(env!("CARGO_BIN_EXE_deputy"));
        command
            .arg("mcp-server")
            .env_remove("TMPDIR")
            .env("HOME", user_home.path())
            .current_dir(&ws);
        let client = StdioClient::spawn(command);
        McpSession::initialize(&client, capabilities);
        Self {
            model,
            client,
            base,
            ws,
            user_home,
            _deputy_home: deputy_home,
        }
    }

    /// Sends the `codex` call running `steps` then a final answer; returns the request id.
    fn start_turn(&self, sandbox: &str, policy: &str, steps: &[Step]) -> i64 {
        self.model
            .push_all(steps.iter().map(|step| step.turn.clone()));
        self.model.push(MockResponse::text_turn(FINAL_TEXT));
        self.client.request(
            "tools/call",
            json!({"name": "codex", "arguments": {
                "prompt": "try the sandbox",
                "cwd": self.ws,
                "sandbox": sandbox,
                "approval-policy": policy,
            }}),
        )
    }

    /// Waits for the successful result of the `codex` call `id`.
    fn finish_turn(&self, id: i64) {
        let response = self
            .client
            .wait_response(id, WAIT)
            .unwrap_or_else(|e| panic!("{e}"));
        let result = &response["result"];
        assert_ne!(result["isError"], true, "the turn failed: {response}");
        assert_eq!(
            result["structuredContent"]["content"], FINAL_TEXT,
            "{response}"
        );
    }

    /// Runs `steps` in one turn and returns, per step, the output the model read about it in
    /// the request right after its call.
    fn run(&self, sandbox: &str, policy: &str, steps: &[Step]) -> Vec<String> {
        let id = self.start_turn(sandbox, policy, steps);
        self.finish_turn(id);
        steps
            .iter()
            .enumerate()
            .map(|(index, step)| self.told_after(index, step.call_id))
            .collect()
    }

    /// The `function_call_output` for `call_id` in the model request following request
    /// `index`, the one whose answer made that call.
    fn told_after(&self, index: usize, call_id: &str) -> String {
        let requests = self.model.requests();
        let next = requests
            .get(index + 1)
            .unwrap_or_else(|| panic!("no model request followed the call {call_id}"));
        let items = next.body["input"].as_array().cloned().unwrap_or_default();
        items
            .iter()
            .find(|item| item["type"] == "function_call_output" && item["call_id"] == call_id)
            .and_then(|item| item["output"].as_str())
            .map(str::to_string)
            .unwrap_or_else(|| {
                panic!(
                    "request {} carries no output for {call_id}: {}",
                    index + 1,
                    next.body["input"]
                )
            })
    }

    /// Runs `git init` in the workspace and returns the contents of `.git/config`.
    fn git_init(&self) -> String {
        let status = Command::new("git")
            .args(["init", "-q"])
            .current_dir(&self.ws)
            .status()
            .expect("git is needed by the sandbox tests");
        assert!(status.success(), "git init failed");
        std::fs::read_to_string(self.ws.join(".git/config")).expect("read .git/config")
    }
}

/// The exit code on the first line of a command's output as the model reads it.
fn exit_code(told: &str) -> i32 {
    told.lines()
        .next()
        .and_then(|line| line.strip_prefix("Exit code: "))
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no exit code in the model's view: {told}"))
}

/// Asserts the model was told the command failed with one of `errno_texts` and that the
/// failure looks like the sandbox (`mode`) refusing it.
fn assert_told_denied(what: &str, told: &str, errno_texts: &[&str], mode: &str) {
    assert_ne!(exit_code(told), 0, "{what}: the command succeeded: {told}");
    assert!(
        errno_texts.iter().any(|errno| told.contains(errno)),
        "{what}: expected one of {errno_texts:?} in: {told}"
    );
    assert!(
        told.contains(DENIAL_NOTE) && told.contains(&format!("sandbox_mode `{mode}`")),
        "{what}: no sandbox denial note for {mode} in: {told}"
    );
}

/// Asserts the model was told the command succeeded, with no denial note.
fn assert_told_success(what: &str, told: &str) {
    assert_eq!(exit_code(told), 0, "{what}: {told}");
    assert!(!told.contains(DENIAL_NOTE), "{what}: {told}");
}

#[test]
fn workspace_write_refuses_file_escapes_and_tells_the_model() {
    require_sandbox!();
    let server = Server::start(json!({}));
    let git_config = server.git_init();
    let outside = outside_dir();
    let absolute = outside.path().join("absolute.txt");
    let grandchild = outside.path().join("grandchild.txt");
    // `&` and `wait` make bash fork, so python runs as a grandchild of the launcher
    // rather than replacing bash by exec.
    let grandchild_script = format!(
        "{} -c 'open(\"{}\", \"w\").write(\"x\")' & wait $!",
        python(),
        grandchild.display()
    );
    let steps = [
        shell_command("absolute", &format!("echo x > {}", absolute.display())),
        shell_command("dotdot", "echo x > ../escape.txt"),
        shell_command(
            "symlink",
            &format!(
                "ln -s {} link && echo x > link/through-link.txt",
                outside.path().display()
            ),
        ),
        shell("grandchild", &["bash", "-c", &grandchild_script]),
        shell("git-append", &["bash", "-c", "echo evil >> .git/config"]),
        shell("git-config", &["git", "config", "user.name", "evil"]),
        shell_command("home", "echo x > \"$HOME/.profile\""),
    ];
    let told = server.run("workspace-write", "never", &steps);

    let mode = "workspace-write";
    let denied = ["Permission denied"];
    assert_told_denied("absolute path", &told[0], &denied, mode);
    assert!(!absolute.exists());
    assert_told_denied("..", &told[1], &denied, mode);
    assert!(!server.base.path().join("escape.txt").exists());
    assert_told_denied("symlink", &told[2], &denied, mode);
    assert!(
        server.ws.join("link").is_symlink(),
        "the link itself may be made"
    );
    assert!(!outside.path().join("through-link.txt").exists());
    assert_told_denied("grandchild", &told[3], &denied, mode);
    assert!(told[3].contains("PermissionError"), "{}", told[3]);
    assert!(!grandchild.exists());
    let git_denied = ["Read-only file system", "Permission denied"];
    assert_told_denied(".git/config append", &told[4], &git_denied, mode);
    assert_told_denied("git config", &told[5], &git_denied, mode);
    assert_eq!(
        std::fs::read_to_string(server.ws.join(".git/config")).unwrap(),
        git_config
    );
    assert_told_denied("$HOME", &told[6], &denied, mode);
    assert!(!server.user_home.path().join(".profile").exists());
}

#[test]
fn workspace_write_refuses_tcp_and_udp_but_not_unix_sockets_and_tells_the_model() {
    require_sandbox!();
    let server = Server::start(json!({}));
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    let tcp_port = tcp.local_addr().unwrap().port();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    let socket_path = server.ws.join("agent.sock");
    let unix = UnixListener::bind(&socket_path).unwrap();
    let udp_script = format!(
        "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', {udp_port}))"
    );
    let unix_script = format!(
        "import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}'); s.sendall(b'hello')",
        socket_path.display()
    );
    let steps = [
        shell_command("tcp", &format!("echo hi > /dev/tcp/127.0.0.1/{tcp_port}")),
        shell("udp", &[python(), "-c", &udp_script]),
        shell("unix", &[python(), "-c", &unix_script]),
    ];
    let told = server.run("workspace-write", "never", &steps);

    let denied = ["Operation not permitted"];
    assert_told_denied("tcp connect", &told[0], &denied, "workspace-write");
    tcp.set_nonblocking(true).unwrap();
    let accepted = tcp.accept().map(|_| ()).map_err(|e| e.kind());
    assert_eq!(
        accepted,
        Err(ErrorKind::WouldBlock),
        "a connection got through"
    );
    assert_told_denied("udp send", &told[1], &denied, "workspace-write");
    udp.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 16];
    let received = udp.recv(&mut buf).map_err(|e| e.kind());
    assert_eq!(
        received,
        Err(ErrorKind::WouldBlock),
        "a datagram got through"
    );
    assert_told_success("unix socket", &told[2]);
    unix.set_nonblocking(true).unwrap();
    let (mut stream, _) = unix.accept().expect("the unix connection is queued");
    stream.set_nonblocking(false).unwrap();
    let mut received = Vec::new();
    stream.read_to_end(&mut received).unwrap();
    assert_eq!(received, b"hello");
}

#[test]
fn workspace_write_allows_writes_in_the_workspace_and_tmp() {
    require_sandbox!();
    let server = Server::start(json!({}));
    let in_tmp = tempfile::tempdir_in("/tmp").expect("tempdir in /tmp");
    let tmp_file = in_tmp.path().join("t.txt");
    let steps = [shell_command(
        "inside",
        &format!(
            "echo inside > made.txt && echo tmp > {}",
            tmp_file.display()
        ),
    )];
    let told = server.run("workspace-write", "never", &steps);

    assert_told_success("writes inside", &told[0]);
    assert_eq!(
        std::fs::read_to_string(server.ws.join("made.txt")).unwrap(),
        "inside\n"
    );
    assert_eq!(std::fs::read_to_string(&tmp_file).unwrap(), "tmp\n");
}

#[test]
fn read_only_refuses_a_write_in_the_workspace_and_tells_the_model() {
    require_sandbox!();
    let server = Server::start(json!({}));
    let steps = [
        shell_command("dev-null", "echo ok > /dev/null"),
        shell_command("here", "echo x > here.txt"),
    ];
    let told = server.run("read-only", "never", &steps);

    assert_told_success("/dev/null", &told[0]);
    assert_told_denied(
        "write in cwd",
        &told[1],
        &["Permission denied", "Read-only file system"],
        "read-only",
    );
    assert!(!server.ws.join("here.txt").exists());
}

#[test]
fn danger_full_access_writes_outside_the_workspace() {
    require_sandbox!();
    let server = Server::start(json!({}));
    let outside = outside_dir();
    let target = outside.path().join("free.txt");
    let steps = [shell_command(
        "free",
        &format!("echo x > {}", target.display()),
    )];
    let told = server.run("danger-full-access", "never", &steps);

    assert_told_success("write outside", &told[0]);
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "x\n");
}

/// Starts an on-failure turn whose one command writes outside the workspace, and returns the
/// server, the request id, the target and the approval question that follows the denial.
fn on_failure_question() -> (Server, i64, TempDir, PathBuf, Value) {
    let server = Server::start(json!({"elicitation": {}}));
    let outside = outside_dir();
    let target = outside.path().join("retried.txt");
    let steps = [shell_command(
        "retry",
        &format!("echo x > {}", target.display()),
    )];
    let id = server.start_turn("workspace-write", "on-failure", &steps);
    let question = server
        .client
        .wait_for(
            |m| m["method"] == "elicitation/create" && m["params"]["codex_call_id"] == "retry",
            WAIT,
        )
        .unwrap_or_else(|e| panic!("waiting for the retry question: {e}"));
    (server, id, outside, target, question)
}

/// Asserts the question asks to re-run after a sandbox denial, before anything was written.
fn assert_asks_about_the_denial(question: &Value, target: &Path) {
    let reason = question["params"]["codex_reason"]
        .as_str()
        .unwrap_or_default();
    assert!(
        reason.contains("sandbox") && reason.contains("Permission denied"),
        "codex_reason: {question}"
    );
    assert_eq!(question["params"]["codex_elicitation"], "exec-approval");
    assert!(!target.exists(), "the sandboxed attempt wrote the file");
}

#[test]
fn on_failure_asks_after_a_sandbox_denial_and_an_approval_reruns_unsandboxed() {
    require_sandbox!();
    let (server, id, _outside, target, question) = on_failure_question();
    assert_asks_about_the_denial(&question, &target);

    server
        .client
        .respond(question["id"].clone(), json!({"decision": "approved"}));
    server.finish_turn(id);

    assert_eq!(std::fs::read_to_string(&target).unwrap(), "x\n");
    assert_told_success("approved re-run", &server.told_after(0, "retry"));
}

#[test]
fn on_failure_denied_retry_leaves_the_file_unwritten_and_tells_the_model() {
    require_sandbox!();
    let (server, id, _outside, target, question) = on_failure_question();
    assert_asks_about_the_denial(&question, &target);

    server
        .client
        .respond(question["id"].clone(), json!({"decision": "denied"}));
    server.finish_turn(id);

    assert!(!target.exists());
    let told = server.told_after(0, "retry");
    assert_ne!(exit_code(&told), 0, "{told}");
    assert!(
        told.contains("Permission denied") && told.contains("declined"),
        "{told}"
    );
}
