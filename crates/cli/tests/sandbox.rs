//! Escape battery for `deputy sandbox`: each test runs the real binary on a small shell or
//! Python script and checks what actually happened on disk or on the wire.
//!
//! Everything the sandbox must keep out lives under Cargo's target tmp dir, never under `/tmp`
//! (which workspace-write may write) — and `TMPDIR` is removed for the same reason.

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

use outside::outside_dir;
use sandbox_cli::*;
use std::io::{ErrorKind, Read};
use std::net::{TcpListener, UdpSocket};
use std::process::Command;

#[test]
fn workspace_write_allows_writes_in_cwd_and_a_private_tmp() {
    require_namespaces!();
    let (_ws, ws) = workspace();
    // A file in the real /tmp, which the command must not see, and a name for one it writes
    // in its own /tmp, which must not land in the real one.
    let real_tmp = tempfile::tempdir_in("/tmp").expect("tempdir in /tmp");
    let secret = real_tmp.path().join("secret.txt");
    std::fs::write(&secret, "x").unwrap();
    let written = format!("/tmp/{}", unique_marker("tmp-file"));
    let script = format!(
        "echo inside > made.txt && echo tmp > {written} && cat {written} && \
         if test -e {}; then echo visible; else echo hidden; fi",
        secret.display()
    );
    let output = bash("workspace-write", &ws, &script);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "tmp\nhidden\n");
    assert_eq!(
        std::fs::read_to_string(ws.join("made.txt")).unwrap(),
        "inside\n"
    );
    assert!(
        !std::path::Path::new(&written).exists(),
        "the command wrote the real /tmp"
    );
}

#[test]
fn a_workspace_under_tmp_stays_visible_and_writable_in_the_private_tmp() {
    require_namespaces!();
    let in_tmp = tempfile::tempdir_in("/tmp").expect("tempdir in /tmp");
    let ws = std::fs::canonicalize(in_tmp.path()).unwrap();
    std::fs::create_dir(ws.join(".git")).unwrap();
    std::fs::write(ws.join(".git/config"), "original\n").unwrap();
    let output = bash(
        "workspace-write",
        &ws,
        "pwd && echo ok > made.txt && (echo evil >> .git/config; true)",
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output).trim(), ws.display().to_string());
    assert_eq!(
        std::fs::read_to_string(ws.join("made.txt")).unwrap(),
        "ok\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join(".git/config")).unwrap(),
        "original\n"
    );
}

#[test]
fn write_by_absolute_path_outside_the_root_is_refused() {
    require_sandbox!();
    let (_ws, ws) = workspace();
    let outside = outside_dir();
    let target = outside.path().join("escape.txt");
    let output = bash(
        "workspace-write",
        &ws,
        &format!("echo x > {}", target.display()),
    );
    assert_refused(&output, "Permission denied");
    assert!(!target.exists());
}

#[test]
fn write_through_dotdot_is_refused() {
    require_sandbox!();
    let (_base, base) = workspace();
    let ws = base.join("ws");
    std::fs::create_dir(&ws).unwrap();
    let output = bash("workspace-write", &ws, "echo x > ../escape.txt");
    assert_refused(&output, "Permission denied");
    assert!(!base.join("escape.txt").exists());
}

#[test]
fn write_through_symlink_planted_inside_the_root_is_refused() {
    require_sandbox!();
    let (_ws, ws) = workspace();
    let outside = outside_dir();
    let script = format!(
        "ln -s {} link && echo x > link/escape.txt",
        outside.path().display()
    );
    let output = bash("workspace-write", &ws, &script);
    assert_refused(&output, "Permission denied");
    assert!(
        ws.join("link").is_symlink(),
        "the link itself may be created"
    );
    assert!(!outside.path().join("escape.txt").exists());
}

#[test]
fn write_by_grandchild_process_is_refused() {
    require_sandbox!();
    let (_ws, ws) = workspace();
    let outside = outside_dir();
    let target = outside.path().join("grandchild.txt");
    let script = format!(
        // `& wait` keeps bash alive so python really is its child, not an exec of bash.
        "{} -c 'open(\"{}\", \"w\").write(\"x\")' & wait $!",
        python(),
        target.display()
    );
    let output = bash("workspace-write", &ws, &script);
    assert_refused(&output, "PermissionError");
    assert!(!target.exists());
}

#[test]
fn git_config_stays_read_only_while_its_siblings_are_writable() {
    require_sandbox!();
    let (_ws, ws) = workspace();
    std::fs::create_dir(ws.join(".git")).unwrap();
    std::fs::write(ws.join(".git/config"), "original\n").unwrap();
    let output = bash(
        "workspace-write",
        &ws,
        "echo ok > .git/../beside.txt && echo evil >> .git/config",
    );
    assert!(!output.status.success());
    let err = stderr(&output);
    assert!(
        err.contains("Read-only file system") || err.contains("Permission denied"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join(".git/config")).unwrap(),
        "original\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("beside.txt")).unwrap(),
        "ok\n"
    );
}

#[test]
fn worktree_gitdir_named_by_a_git_file_stays_read_only() {
    require_sandbox!();
    let (_base, base) = workspace();
    let gitdir = base.join("main/.git/worktrees/wt");
    std::fs::create_dir_all(&gitdir).unwrap();
    std::fs::write(gitdir.join("HEAD"), "ref: refs/heads/wt\n").unwrap();
    let wt = base.join("wt");
    std::fs::create_dir(&wt).unwrap();
    std::fs::write(wt.join(".git"), format!("gitdir: {}\n", gitdir.display())).unwrap();
    let command = deputy_sandbox(
        "workspace-write",
        &wt,
        &["--writable-root", base.to_str().unwrap()],
        &[
            "bash",
            "-c",
            &format!("echo evil > {}/HEAD", gitdir.display()),
        ],
    );
    let output = run(command);
    assert!(!output.status.success());
    assert_eq!(
        std::fs::read_to_string(gitdir.join("HEAD")).unwrap(),
        "ref: refs/heads/wt\n"
    );
}

#[test]
fn write_to_home_outside_the_root_is_refused() {
    require_sandbox!();
    let (_ws, ws) = workspace();
    let home = outside_dir();
    let mut command = deputy_sandbox(
        "workspace-write",
        &ws,
        &[],
        &["bash", "-c", "echo x > \"$HOME/.profile\""],
    );
    command.env("HOME", home.path());
    let output = run(command);
    assert_refused(&output, "Permission denied");
    assert!(!home.path().join(".profile").exists());
}

#[test]
fn read_only_refuses_a_write_in_cwd_but_allows_dev_null() {
    require_sandbox!();
    let (_ws, ws) = workspace();
    let output = bash("read-only", &ws, "echo ok > /dev/null && echo x > here.txt");
    assert_refused(&output, "Permission denied");
    assert!(!ws.join("here.txt").exists());
}

#[test]
fn danger_full_access_can_write_outside() {
    require_sandbox!();
    let (_ws, ws) = workspace();
    let outside = outside_dir();
    let target = outside.path().join("free.txt");
    let output = bash(
        "danger-full-access",
        &ws,
        &format!("echo x > {}", target.display()),
    );
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "x\n");
}

#[test]
fn tcp_connect_to_a_loopback_listener_is_refused() {
    require_sandbox!();
    let (_ws, ws) = workspace();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let output = bash(
        "workspace-write",
        &ws,
        &format!("echo hi > /dev/tcp/127.0.0.1/{port}"),
    );
    assert_refused(&output, "Operation not permitted");
    listener.set_nonblocking(true).unwrap();
    let accepted = listener.accept().map(|_| ()).map_err(|e| e.kind());
    assert_eq!(accepted, Err(ErrorKind::WouldBlock));
}

#[test]
fn tcp_connect_is_allowed_with_network_access() {
    require_sandbox!();
    let (_ws, ws) = workspace();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let script = format!("echo hi > /dev/tcp/127.0.0.1/{port}");
    let output = run(deputy_sandbox(
        "workspace-write",
        &ws,
        &["--network"],
        &["bash", "-c", &script],
    ));
    assert!(output.status.success(), "{}", stderr(&output));
    listener.set_nonblocking(true).unwrap();
    let (mut stream, _) = listener.accept().expect("the connection is queued");
    stream.set_nonblocking(false).unwrap();
    let mut received = String::new();
    stream.read_to_string(&mut received).unwrap();
    assert_eq!(received, "hi\n");
}

#[test]
fn udp_send_is_refused() {
    require_sandbox!();
    let (_ws, ws) = workspace();
    let receiver = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = receiver.local_addr().unwrap().port();
    let script = format!(
        "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'x', ('127.0.0.1', {port}))"
    );
    let output = run(deputy_sandbox(
        "workspace-write",
        &ws,
        &[],
        &[python(), "-c", &script],
    ));
    assert_refused(&output, "Operation not permitted");
    receiver.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 16];
    let received = receiver.recv(&mut buf).map_err(|e| e.kind());
    assert_eq!(received, Err(ErrorKind::WouldBlock));
}

#[test]
fn child_is_told_the_network_is_disabled() {
    require_sandbox!();
    let (_ws, ws) = workspace();
    let script = "printf '%s' \"$DEPUTY_SANDBOX_NETWORK_DISABLED\"";
    let without = bash("read-only", &ws, script);
    assert_eq!(stdout(&without), "1");
    let with = run(deputy_sandbox(
        "read-only",
        &ws,
        &["--network"],
        &["bash", "-c", script],
    ));
    assert_eq!(stdout(&with), "");
}

#[test]
fn ptrace_is_refused() {
    require_sandbox!();
    let (_ws, ws) = workspace();
    let script = "import ctypes, os\n\
        libc = ctypes.CDLL(None, use_errno=True)\n\
        print(libc.ptrace(0, 0, 0, 0), os.strerror(ctypes.get_errno()))";
    let output = run(deputy_sandbox(
        "workspace-write",
        &ws,
        &["--network"],
        &[python(), "-c", script],
    ));
    assert_eq!(stdout(&output).trim(), "-1 Operation not permitted");
}

#[test]
fn launcher_refuses_malformed_arguments_without_running_anything() {
    let output = Command::new(env!("CARGO_BIN_EXE_deputy"))
        .args([deputy_sandbox::LAUNCHER_SUBCOMMAND, "--bogus", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(deputy_sandbox::SANDBOX_UNAVAILABLE_EXIT_CODE)
    );
    assert!(
        stderr(&output).starts_with("deputy sandbox: "),
        "{}",
        stderr(&output)
    );
}
