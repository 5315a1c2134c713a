//! `deputy app-server` driven by the Python clients of Codex's app-server from PyPI,
//! unchanged: each launches the real binary itself, as it launches `codex`, and talks to
//! it over stdio while deputy talks to the mock model. The clients need Python 3.12 or
//! newer (see `deputy_test_support::python312_with_app_server_sdks`).

use std::path::Path;
use std::time::Duration;

use deputy_test_support::{
    MockModelServer, MockResponse, TestHome, python312_with_app_server_sdks, run_with_deadline,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::harness::{DEPUTY, Setup, patch, say, shell};

/// Longest a client script may run; each finishes in a few seconds.
const SCRIPT_DEADLINE: Duration = Duration::from_secs(120);

const ADD_NOTES: &str = "*** Begin Patch\n*** Add File: notes.txt\n+hello\n*** End Patch\n";

/// Runs `tests/python/<script>` with the SDKs' Python against `home`; its JSON output.
fn run_script(script: &str, home: &TestHome) -> Value {
    run_script_against(script, home, DEPUTY)
}

/// Runs `tests/python/<script>` against `deputy` (the binary, or a listening server's
/// URL) in `home`; its JSON output.
pub(crate) fn run_script_against(script: &str, home: &TestHome, deputy: &str) -> Value {
    let python = python312_with_app_server_sdks().unwrap_or_else(|err| panic!("{err}"));
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/python")
        .join(script);
    let mut command = home.command(&python);
    command
        .arg(&script)
        .arg(deputy)
        .arg(home.workspace().canonicalize().unwrap());
    let output = run_with_deadline(command, SCRIPT_DEADLINE).unwrap_or_else(|err| panic!("{err}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "{} exited with {}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}",
        script.display(),
        output.status
    );
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|err| panic!("the script's output is not JSON ({err}): {stdout}"))
}

/// A home that asks before every command and file change, and the model's answers for:
/// a turn that runs a command, writes a file and tries a second command (declined); a
/// turn whose command runs until it is interrupted; one more turn after the resume.
pub(crate) fn approving_session() -> (TestHome, MockModelServer) {
    let (home, model) = Setup::new("untrusted", "danger-full-access").home();
    model.push_all([
        shell("call-touch", "touch made.txt"),
        patch("call-notes", ADD_NOTES),
        shell("call-refused", "touch refused.txt"),
        say("made them"),
        shell("call-wait", "sleep 30"),
        say("resumed"),
    ]);
    (home, model)
}

pub(crate) fn assert_files_of_the_approved_turn(home: &TestHome) {
    let workspace = home.workspace();
    assert!(
        workspace.join("made.txt").exists(),
        "the accepted command ran"
    );
    assert_eq!(
        std::fs::read_to_string(workspace.join("notes.txt")).unwrap(),
        "hello\n",
        "the accepted file change was applied"
    );
    assert!(
        !workspace.join("refused.txt").exists(),
        "the declined command did not run"
    );
}

#[test]
fn codex_python_sdk_unofficial_runs_approves_interrupts_and_resumes() {
    let (home, model) = approving_session();
    let seen = run_script("app_server_unofficial_sdk.py", &home);

    assert_files_of_the_approved_turn(&home);
    let every = json!(["accept", "acceptForSession", "decline", "cancel"]);
    assert_eq!(
        seen["approvals"],
        json!([
            {"method": "item/commandExecution/requestApproval", "availableDecisions": every, "answer": "accept"},
            {"method": "item/fileChange/requestApproval", "availableDecisions": null, "answer": "accept"},
            {"method": "item/commandExecution/requestApproval", "availableDecisions": every, "answer": "decline"},
        ])
    );
    assert_eq!(
        seen["models"],
        json!([{"id": "mock-model", "defaultReasoningEffort": "medium",
                "supportedReasoningEfforts": ["low", "medium", "high"]}])
    );
    assert_eq!(seen["approvalsReviewer"], "user");
    assert_eq!(seen["firstTurn"], "completed");
    assert_eq!(seen["interruptedTurn"], "interrupted");
    assert_eq!(
        seen["typedFailures"],
        json!([]),
        "every notification is typed"
    );
    for method in [
        "thread/status/changed",
        "turn/started",
        "item/completed",
        "turn/completed",
    ] {
        assert!(
            seen["methods"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m == method),
            "{method} in {}",
            seen["methods"]
        );
    }
    assert_eq!(seen["resumedTurns"], json!(["completed", "interrupted"]));
    assert_eq!(
        seen["resumedItems"],
        json!([
            "agentMessage",
            "commandExecution",
            "fileChange",
            "userMessage"
        ])
    );
    assert_eq!(seen["resumedTurn"], "completed");
    assert_eq!(
        model.requests().len(),
        6,
        "every scripted answer was asked for"
    );
}

#[test]
fn codex_app_server_sdk_runs_approves_cancels_and_resumes() {
    let (home, model) = approving_session();
    let seen = run_script("app_server_emsi_sdk.py", &home);

    assert_files_of_the_approved_turn(&home);
    assert_eq!(seen["models"], json!(["mock-model"]));
    assert_eq!(
        seen["approvals"],
        json!([
            {"kind": "command", "answer": "accept"},
            {"kind": "fileChange", "answer": "accept"},
            {"kind": "command", "answer": "decline"},
        ])
    );
    assert_eq!(
        seen["steps"],
        json!([
            ["userMessage", "userMessage"],
            ["exec", "commandExecution"],
            ["file", "fileChange"],
            ["exec", "commandExecution"],
            ["codex", "agentMessage"],
        ])
    );
    assert_eq!(
        seen["cancelled"],
        json!({"wasInterrupted": true, "wasCompleted": false})
    );
    assert_eq!(seen["resumedTurns"], json!(["completed", "interrupted"]));
    assert_eq!(seen["resumedAnswer"], "resumed");
    assert_eq!(
        model.requests().len(),
        6,
        "every scripted answer was asked for"
    );
}

#[test]
fn codex_python_sdk_starts_with_guardian_approval_enabled_and_runs_a_turn() {
    let (home, model) = Setup::default().home();
    model.push(MockResponse::text_turn("hello from deputy"));
    let seen = run_script("app_server_codex_python_sdk.py", &home);

    assert_eq!(
        seen["launchArgs"],
        json!([
            "app-server",
            "--enable",
            "guardian_approval",
            "-c",
            "web_search=\"live\""
        ])
    );
    assert_eq!(seen["models"], json!(["mock-model"]));
    assert_eq!(seen["answer"], "hello from deputy");
    assert!(seen["threadId"].is_string(), "{seen}");
    assert_eq!(seen["listed"], json!([seen["threadId"]]));
}
