//! The flags Codex's clients launch `codex app-server` with: `--listen stdio://`,
//! `--enable` / `--disable FEATURE` and `-c`, accepted as Codex accepts them; what
//! Codex refuses is refused with a message and an exit status.

use std::process::{Command, Output, Stdio};

use deputy_test_support::TestHome;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::harness::{DEPUTY, Setup, say, text_input};

/// Runs `deputy app-server ARGS` with nothing on stdin: what a refused launch prints.
fn launch(args: &[&str]) -> Output {
    let home = TestHome::new("http://127.0.0.1:9/v1");
    let mut command: Command = home.command(DEPUTY);
    command
        .arg("app-server")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command.output().unwrap()
}

#[test]
fn codex_launch_flags_start_a_server_that_runs_a_turn() {
    let server = Setup {
        args: &[
            "--listen",
            "stdio://",
            "--enable",
            "guardian_approval",
            "--disable",
            "unified_exec",
            "-c",
            "model=\"model-from-flag\"",
        ],
        ..Setup::default()
    }
    .start();
    server.model.push(say("hello"));

    let thread = server.start_thread_with(json!({}));
    assert_eq!(thread["model"], "model-from-flag");
    let thread_id = thread["thread"]["id"].as_str().unwrap().to_string();
    let turn = server.start_turn_with(json!({"threadId": thread_id, "input": [text_input("hi")]}));
    assert_eq!(server.turn_completed(&turn)["turn"]["status"], "completed");
    assert_eq!(server.model.requests()[0].body["model"], "model-from-flag");
    server.assert_stdout_is_protocol();
    server
        .client
        .wait_for_stderr(
            "warning: --enable guardian_approval: deputy does not have Codex's `guardian_approval` feature; ignored",
            crate::harness::WAIT,
        )
        .unwrap();
}

#[test]
fn an_unknown_feature_is_refused_as_codex_refuses_it() {
    let output = launch(&["--enable", "no_such_feature"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(output.stdout, b"");
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "error: unknown feature flag `no_such_feature`\n"
    );
}

#[test]
fn listen_urls_other_than_stdio_and_websocket_are_refused_clearly() {
    let output = launch(&["--listen", "tcp://127.0.0.1:1"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "unsupported --listen URL `tcp://127.0.0.1:1`; expected `stdio://` or `ws://IP:PORT`"
        ),
        "{stderr}"
    );

    // A WebSocket address needs an IP and a port.
    let output = launch(&["--listen", "ws://localhost"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(output.stdout, b"");
}
