//! The `review` tool through the official MCP SDKs, which check a result's
//! `structuredContent` against the tool's `outputSchema`: both accept a review's result
//! and its error.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use deputy_test_support::{
    MockModelServer, MockResponse, NodeMcpSdk, TestHome, python_with_mcp, run_with_deadline,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::{FINDINGS, findings_value, repository};

/// The binary under test.
const DEPUTY: &str = env!("CARGO_BIN_EXE_deputy");

/// Longest a client script may run; it finishes in a few seconds.
const SCRIPT_DEADLINE: Duration = Duration::from_secs(60);

/// A repository to review and a model that answers with [`FINDINGS`].
fn reviewable() -> (MockModelServer, TestHome) {
    let model = MockModelServer::start();
    model.push(MockResponse::text_turn(FINDINGS));
    let home = TestHome::new(&model.base_url());
    repository(&home);
    (model, home)
}

/// Runs a client script and returns the JSON it printed.
fn run_script(mut command: Command) -> Value {
    command.arg(DEPUTY);
    let output = run_with_deadline(command, SCRIPT_DEADLINE).unwrap_or_else(|err| panic!("{err}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the client exited with {}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}",
        output.status
    );
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|err| panic!("script output is not JSON ({err}): {stdout}\n{stderr}"))
}

/// What both SDKs must have seen: a validated result, and an error without structure.
fn assert_seen(seen: &Value) {
    let thread_id = seen["reviewed"]["structuredContent"]["threadId"].clone();
    assert!(thread_id.is_string(), "{seen}");
    let mut output = findings_value();
    output["threadId"] = thread_id;
    assert_eq!(seen["hasOutputSchema"], true, "{seen}");
    assert_eq!(seen["reviewed"]["isError"], false, "{seen}");
    assert_eq!(seen["reviewed"]["structuredContent"], output);
    assert_eq!(seen["failed"]["isError"], true, "{seen}");
    assert_eq!(seen["failed"]["structuredContent"], json!(null), "{seen}");
    let failure = seen["failed"]["text"][0].as_str().unwrap_or_default();
    assert!(failure.contains("no-such-branch"), "{seen}");
}

#[test]
fn the_typescript_sdk_validates_a_review_and_accepts_its_error() {
    let sdk = NodeMcpSdk::install().unwrap_or_else(|err| panic!("no MCP TypeScript SDK: {err}"));
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/typescript/review_client.mjs");
    let script = sdk
        .place_script(&source)
        .unwrap_or_else(|err| panic!("{err}"));
    let (_model, home) = reviewable();
    let mut command = home.command("node");
    command.arg(&script);
    assert_seen(&run_script(command));
}

#[test]
fn the_python_sdk_validates_a_review_and_accepts_its_error() {
    let python = python_with_mcp().unwrap_or_else(|err| panic!("no Python MCP SDK: {err}"));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/review_client.py");
    let (_model, home) = reviewable();
    let mut command = home.command(&python);
    command.arg(&script);
    assert_seen(&run_script(command));
}
