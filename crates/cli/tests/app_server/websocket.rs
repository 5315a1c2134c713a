//! `deputy app-server --listen ws://IP:PORT`: the same protocol over WebSocket, driven
//! by codex-app-server-sdk's WebSocket transport, and the listener's rules (token,
//! Origin) at the handshake.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use deputy_test_support::{ListeningServer, TestHome};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::harness::{DEPUTY, Setup};
use crate::python_sdks::{
    approving_session, assert_files_of_the_approved_turn, run_script_against,
};

/// `deputy app-server --listen ws://127.0.0.1:0 <extra>` in `home`.
fn listen(home: &TestHome, extra: &[&str], env: &[(&str, &str)]) -> ListeningServer {
    let mut command = home.command(DEPUTY);
    command
        .args(["app-server", "--listen", "ws://127.0.0.1:0"])
        .args(extra)
        .envs(env.iter().copied());
    ListeningServer::start(command).unwrap_or_else(|err| panic!("{err}"))
}

/// The status code the server answers a WebSocket handshake carrying `headers` with.
fn handshake_status(server: &ListeningServer, headers: &[(&str, &str)]) -> u16 {
    let mut stream = TcpStream::connect(server.authority()).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut request = format!(
        "GET / HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n",
        server.authority()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).unwrap();
    let head = String::from_utf8_lossy(&head).into_owned();
    head.split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no HTTP status in {head:?}"))
}

#[test]
fn codex_app_server_sdk_over_websocket_runs_approves_cancels_and_resumes() {
    let (home, model) = approving_session();
    let server = listen(&home, &[], &[]);
    let seen = run_script_against("app_server_emsi_sdk.py", &home, server.url());

    assert_files_of_the_approved_turn(&home);
    assert_eq!(
        seen["approvals"],
        json!([
            {"kind": "command", "answer": "accept"},
            {"kind": "fileChange", "answer": "accept"},
            {"kind": "command", "answer": "decline"},
        ])
    );
    assert_eq!(
        seen["cancelled"],
        json!({"wasInterrupted": true, "wasCompleted": false})
    );
    // The second connection resumed the thread the first one left.
    assert_eq!(seen["resumedTurns"], json!(["completed", "interrupted"]));
    assert_eq!(seen["resumedAnswer"], "resumed");
    assert_eq!(model.requests().len(), 6, "{}", server.stderr());
}

#[test]
fn a_websocket_handshake_needs_the_token_and_an_allowed_origin() {
    let (home, _model) = Setup::default().home();
    let mut server = listen(
        &home,
        &["--auth-token-env", "DEPUTY_TEST_TOKEN"],
        &[("DEPUTY_TEST_TOKEN", "ws-s3cret")],
    );
    assert_eq!(handshake_status(&server, &[]), 401, "no token");
    assert_eq!(
        handshake_status(&server, &[("Authorization", "Bearer ws-s3creT")]),
        401,
        "a wrong token"
    );
    assert_eq!(
        handshake_status(
            &server,
            &[
                ("Authorization", "Bearer ws-s3cret"),
                ("Origin", "https://attacker.example")
            ]
        ),
        403,
        "a page on another origin"
    );
    assert_eq!(
        handshake_status(&server, &[("Authorization", "Bearer ws-s3cret")]),
        101,
        "the token, from no browser"
    );
    assert!(server.is_running());
}

#[test]
fn a_websocket_server_on_a_non_loopback_address_needs_a_token() {
    let (home, _model) = Setup::default().home();
    let mut command = home.command(DEPUTY);
    command.args(["app-server", "--listen", "ws://0.0.0.0:0"]);
    let output = deputy_test_support::run_with_deadline(command, Duration::from_secs(60)).unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("--auth-token-env"), "{stderr}");
}
