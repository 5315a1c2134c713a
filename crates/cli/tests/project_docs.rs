//! Hostile `AGENTS.md` files, through the real binary: a FIFO (there before deputy starts, or
//! planted by the model's own command) is skipped with a warning and never freezes deputy —
//! other sessions and `ping` are still answered and SIGTERM still obeyed — and a link out of
//! the repository is refused, so the file it names never reaches the model.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use deputy_test_support::{McpSession, MockModelServer, MockResponse, StdioClient, TestHome};
use serde_json::{Value, json};

use common::{DEPUTY, exec};

/// Upper bound of any one wait; only a hang comes near it.
const WAIT: Duration = Duration::from_secs(30);

fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(made.success(), "mkfifo {}", path.display());
}

/// `deputy mcp-server` in `home`, initialized.
fn mcp_server(home: &TestHome) -> StdioClient {
    let mut command = home.command(DEPUTY);
    command.arg("mcp-server").env("HOME", home.path());
    let client = StdioClient::spawn(command);
    McpSession::initialize(&client, json!({}));
    client
}

/// Calls the `codex` tool in `cwd` and waits for its answer's text.
fn codex(client: &StdioClient, cwd: &Path, sandbox: &str, prompt: &str) -> String {
    let id = client.request(
        "tools/call",
        json!({"name": "codex", "arguments": {
            "prompt": prompt, "cwd": cwd, "sandbox": sandbox, "approval-policy": "never"}}),
    );
    let response = client
        .wait_response(id, WAIT)
        .unwrap_or_else(|err| panic!("no answer to `{prompt}`: {err}"));
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {response}"))
        .to_string()
}

/// The `warning` events' messages the server sent so far.
fn warnings(client: &StdioClient) -> Vec<String> {
    client
        .notifications("codex/event")
        .iter()
        .filter(|n| n["params"]["msg"]["type"] == "warning")
        .filter_map(|n| n["params"]["msg"]["message"].as_str().map(str::to_string))
        .collect()
}

/// Pings, then SIGTERMs the server and expects it to exit with 128 + SIGTERM.
fn still_answers_then_obeys_sigterm(client: &StdioClient) {
    let ping = client.request("ping", json!({}));
    let pong = client.wait_response(ping, WAIT).expect("ping answered");
    assert_eq!(pong["result"], json!({}), "{pong}");
    // SAFETY: kill(2) only sends a signal, to the server this test started.
    unsafe { libc::kill(client.pid() as i32, libc::SIGTERM) };
    let status = client.wait_exit(WAIT).expect("exit after SIGTERM");
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{status:?}");
}

fn sandbox_mode() -> &'static str {
    match deputy_sandbox::probe() {
        Ok(_) => "workspace-write",
        Err(reason) => {
            assert!(
                !deputy_test_support::sandbox_required(),
                "the kernel sandbox is unavailable: {reason}"
            );
            eprintln!("the kernel sandbox is unavailable ({reason}): commands run unconfined");
            "danger-full-access"
        }
    }
}

#[test]
fn exec_skips_a_fifo_agents_md_with_a_warning_and_finishes() {
    let model = MockModelServer::start();
    model.push(MockResponse::text_turn("hello"));
    let home = TestHome::new(&model.base_url());
    mkfifo(&home.workspace().join("AGENTS.md"));

    let run = exec(&home, &["say hello"]);

    run.assert_code(0);
    assert_eq!(run.stdout, "hello\n");
    assert!(
        run.stderr
            .contains("AGENTS.md: not a regular file (a FIFO)"),
        "{}",
        run.stderr
    );
}

#[test]
fn mcp_server_with_a_fifo_agents_md_answers_every_session_and_ping_and_obeys_sigterm() {
    let model = MockModelServer::start();
    model.push_all([
        MockResponse::text_turn("first"),
        MockResponse::text_turn("second"),
    ]);
    let home = TestHome::new(&model.base_url());
    mkfifo(&home.workspace().join("AGENTS.md"));
    let elsewhere = tempfile::tempdir().unwrap();
    let client = mcp_server(&home);

    assert_eq!(
        codex(&client, home.workspace(), "read-only", "in the repo"),
        "first"
    );
    assert_eq!(
        codex(&client, elsewhere.path(), "read-only", "elsewhere"),
        "second"
    );

    let warned = warnings(&client);
    assert!(
        warned
            .iter()
            .any(|w| w.contains("not a regular file (a FIFO)")),
        "{warned:?}"
    );
    still_answers_then_obeys_sigterm(&client);
}

#[test]
fn a_fifo_the_model_plants_does_not_freeze_the_next_session_in_that_repository() {
    let model = MockModelServer::start();
    model.push_all([
        MockResponse::function_call_turn(
            "plant",
            "shell",
            json!({"command": ["mkfifo", "AGENTS.md"]}),
        ),
        MockResponse::text_turn("planted"),
        MockResponse::text_turn("next session"),
    ]);
    let home = TestHome::new(&model.base_url());
    std::fs::create_dir(home.workspace().join(".git")).unwrap();
    let client = mcp_server(&home);
    let sandbox = sandbox_mode();

    assert_eq!(
        codex(&client, home.workspace(), sandbox, "plant it"),
        "planted"
    );
    let planted = std::fs::symlink_metadata(home.workspace().join("AGENTS.md")).unwrap();
    assert!(
        std::os::unix::fs::FileTypeExt::is_fifo(&planted.file_type()),
        "the command did not make a FIFO"
    );
    assert_eq!(
        codex(&client, home.workspace(), sandbox, "go on"),
        "next session"
    );

    let warned = warnings(&client);
    assert!(
        warned
            .iter()
            .any(|w| w.contains("not a regular file (a FIFO)")),
        "{warned:?}"
    );
    still_answers_then_obeys_sigterm(&client);
}

/// The text of every message the model was sent in `request`.
fn sent_text(request: &Value) -> String {
    request["input"].to_string()
}

#[test]
fn an_agents_md_linking_out_of_the_repository_is_refused_and_never_sent() {
    let model = MockModelServer::start();
    model.push(MockResponse::text_turn("done"));
    let home = TestHome::new(&model.base_url());
    let user_home = tempfile::tempdir().unwrap();
    let secret = user_home.path().join("id_rsa");
    std::fs::write(&secret, "TOP-SECRET-KEY-MATERIAL").unwrap();
    let repo = home.workspace();
    std::fs::create_dir(repo.join(".git")).unwrap();
    std::fs::create_dir(repo.join("docs")).unwrap();
    std::os::unix::fs::symlink(&secret, repo.join("AGENTS.md")).unwrap();
    // A link that stays inside the repository is followed.
    std::fs::write(repo.join("docs/RULES.md"), "Use tabs.").unwrap();
    std::os::unix::fs::symlink("../docs/RULES.md", repo.join("docs/AGENTS.md")).unwrap();

    let run = exec(&home, &["-C", "docs", "hello"]);

    run.assert_code(0);
    assert!(
        run.stderr
            .contains("AGENTS.md: a symbolic link leading outside"),
        "{}",
        run.stderr
    );
    let requests = model.wait_for_requests(1, WAIT).unwrap();
    let sent = sent_text(&requests[0].body);
    assert!(!sent.contains("TOP-SECRET"), "the secret was sent: {sent}");
    assert!(sent.contains("Use tabs."), "{sent}");
}
