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
#[macro_use]
#[path = "common/sandbox_cli.rs"]
mod sandbox_cli;
#[path = "common/sandbox_server.rs"]
mod sandbox_server;

use outside::outside_dir;
use sandbox_cli::{python, unique_marker};
use sandbox_server::*;
use std::io::{ErrorKind, Read};
use std::net::{TcpListener, UdpSocket};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tempfile::TempDir;

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
fn workspace_write_refuses_tcp_udp_and_unix_sockets_and_tells_the_model() {
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
    let steps = [
        shell_command("tcp", &format!("echo hi > /dev/tcp/127.0.0.1/{tcp_port}")),
        shell("udp", &[python(), "-c", &udp_script]),
        shell(
            "unix",
            &[python(), "-c", &unix_connect_script(&socket_path)],
        ),
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
    assert_told_denied("unix connect", &told[2], &denied, "workspace-write");
    unix.set_nonblocking(true).unwrap();
    let accepted = unix.accept().map(|_| ()).map_err(|e| e.kind());
    assert_eq!(
        accepted,
        Err(ErrorKind::WouldBlock),
        "a unix connection got through"
    );
}

/// A Python script that connects to the Unix socket at `path` and sends `hello`.
fn unix_connect_script(path: &Path) -> String {
    format!(
        "import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}'); s.sendall(b'hello')",
        path.display()
    )
}

#[test]
fn allow_unix_sockets_lets_both_confined_modes_reach_a_visible_socket() {
    require_sandbox!();
    let server = Server::start(json!({}));
    let socket_path = server.ws.join("agent.sock");
    let unix = UnixListener::bind(&socket_path).unwrap();
    let script = unix_connect_script(&socket_path);
    let mut first_request = 0;
    for mode in ["read-only", "workspace-write"] {
        let steps = [shell("unix", &[python(), "-c", &script])];
        let config = json!({"sandbox_workspace_write.allow_unix_sockets": true});
        let id = server.start_turn_with(mode, "never", config, &steps);
        server.finish_turn(id);
        let told = server.told_from(first_request, &steps);
        first_request += steps.len() + 1;
        assert_told_success(mode, &told[0]);
        unix.set_nonblocking(true).unwrap();
        let (mut stream, _) = unix.accept().expect("the unix connection is queued");
        stream.set_nonblocking(false).unwrap();
        let mut received = Vec::new();
        stream.read_to_end(&mut received).unwrap();
        assert_eq!(received, b"hello", "{mode}");
    }
}

#[test]
fn workspace_write_allows_writes_in_the_workspace_and_a_private_tmp_kept_for_the_session() {
    require_namespaces!();
    let server = Server::start(json!({}));
    let name = unique_marker("session-tmp");
    let real = PathBuf::from("/tmp").join(&name);
    let steps = [
        shell_command(
            "write",
            &format!("echo inside > made.txt && echo tmp > /tmp/{name}"),
        ),
        shell_command("read", &format!("cat /tmp/{name}")),
    ];
    let id = server.start_turn("workspace-write", "never", &steps);
    server.finish_turn(id);
    let told = server.told_from(0, &steps);

    assert_told_success("writes inside", &told[0]);
    assert_eq!(
        std::fs::read_to_string(server.ws.join("made.txt")).unwrap(),
        "inside\n"
    );
    assert_told_success("read back", &told[1]);
    assert!(told[1].contains("tmp"), "{}", told[1]);
    assert!(!real.exists(), "the command wrote the real /tmp");
    // The thread's private /tmp is a 0700 directory of deputy's, outside every command's view.
    let thread = server.thread_of(id);
    // SAFETY: geteuid cannot fail.
    let uid = unsafe { libc::geteuid() };
    let host = PathBuf::from(format!("/tmp/deputy-{uid}/{thread}"));
    assert_eq!(std::fs::read_to_string(host.join(&name)).unwrap(), "tmp\n");
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
