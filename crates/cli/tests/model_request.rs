//! What the model is sent, on the real binary against the mock model: the request fields
//! that keep a reasoning model's state and the provider's cache (its encrypted reasoning
//! sent back unchanged within a turn, in later turns and after a restart), the first
//! request `deputy debug model-request` shows, and the tools each family is offered
//! compared with the request Codex 0.125 sends.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

mod common;
#[path = "model_request/parity.rs"]
mod parity;
#[path = "model_request/view_image.rs"]
mod view_image;
#[path = "model_request/web_search.rs"]
mod web_search;

use std::time::Duration;

use common::{Finished, deputy, exec, finish, with_provider_key};
use deputy_test_support::{
    MockModelServer, MockResponse, RecordedRequest, SseEvent, TestHome, responses,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// How long a test waits for the requests a finished run made.
const SOON: Duration = Duration::from_secs(30);

/// Encrypted reasoning as a provider sends it: opaque base64, with the characters JSON
/// and URL encodings like to touch.
const ENCRYPTED: &str = "gAAAAABo+/x9Qm1lZ2Fw\u{2028}ZXJzL3NhZmU=/+==";

/// The reasoning item the model sends with its first response.
fn reasoning_item() -> Value {
    json!({
        "type": "reasoning",
        "id": "rs_0a1b2c",
        "summary": [{"type": "summary_text", "text": "**Listing** the files first."}],
        "content": [{"type": "reasoning_text", "text": "ls shows what is there"}],
        "encrypted_content": ENCRYPTED,
    })
}

fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

/// The thread id of an `exec --json-events` run.
fn session_id(run: &Finished) -> String {
    json_lines(&run.stdout)
        .into_iter()
        .find(|event| event["type"] == "session_configured")
        .and_then(|event| event["session_id"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no session_configured in {}", run.stdout))
}

fn requests(server: &MockModelServer, n: usize) -> Vec<RecordedRequest> {
    let requests = server
        .wait_for_requests(n, SOON)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(requests.len(), n, "unexpected extra model requests");
    requests
}

/// The reasoning items of a request's input.
fn reasoning_in(request: &RecordedRequest) -> Vec<Value> {
    request.body["input"]
        .as_array()
        .expect("an input array")
        .iter()
        .filter(|item| item["type"] == "reasoning")
        .cloned()
        .collect()
}

/// How many times the request's raw bytes hold the encrypted reasoning exactly as the
/// model's stream carried it.
fn encrypted_copies(request: &RecordedRequest) -> usize {
    let as_streamed = format!(
        "\"encrypted_content\":{}",
        serde_json::to_string(ENCRYPTED).unwrap()
    );
    request.raw_body.matches(&as_streamed).count()
}

#[test]
fn encrypted_reasoning_goes_back_unchanged_within_a_turn_in_the_next_turn_and_after_a_restart() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    server.push_all([
        MockResponse::sse(vec![
            responses::created("r1"),
            responses::reasoning_delta("**Listing** the files first."),
            SseEvent::new(
                "response.output_item.done",
                json!({"item": reasoning_item()}),
            ),
            responses::function_call("call-1", "shell_command", r#"{"command":"echo hi"}"#),
            responses::completed("r1"),
        ]),
        MockResponse::text_turn("It printed hi."),
        MockResponse::text_turn("Bye."),
    ]);
    let first = exec(&home, &["--json-events", "-m", "gpt-5-codex", "run echo"]);
    first.assert_code(0);
    let id = session_id(&first);
    // A new process: the reasoning can only come from the rollout.
    let resumed = exec(
        &home,
        &[
            "resume",
            "--json-events",
            "-m",
            "gpt-5-codex",
            &id,
            "thanks",
        ],
    );
    resumed.assert_code(0);

    let requests = requests(&server, 3);
    let asked = &requests[0].body;
    assert_eq!(asked["store"], false);
    assert_eq!(asked["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(asked["reasoning"]["summary"], "auto");
    assert_eq!(asked["prompt_cache_key"], id.as_str());
    assert!(reasoning_in(&requests[0]).is_empty());

    // The item as the model sent it, less the id a `store: false` server would not know.
    let mut sent_back = reasoning_item();
    sent_back.as_object_mut().unwrap().remove("id");
    for (n, request) in requests.iter().enumerate().skip(1) {
        assert_eq!(
            reasoning_in(request),
            [sent_back.clone()],
            "request {}",
            n + 1
        );
        assert_eq!(encrypted_copies(request), 1, "request {}", n + 1);
        assert_eq!(request.body["prompt_cache_key"], id.as_str());
        assert_eq!(
            request.body["include"],
            json!(["reasoning.encrypted_content"])
        );
    }
    // In its place: after the user's prompt, before the call it led to.
    let kinds: Vec<&str> = requests[1].body["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|item| item["type"].as_str())
        .collect();
    let at = kinds.iter().position(|kind| *kind == "reasoning").unwrap();
    assert_eq!(kinds[at + 1..], ["function_call", "function_call_output"]);
}

#[test]
fn a_model_that_does_not_reason_is_asked_for_no_reasoning_but_still_caches_by_thread() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    server.push(MockResponse::text_turn("Hi."));
    let run = exec(
        &home,
        &[
            "--json-events",
            "-c",
            "model_verbosity=\"low\"",
            "-c",
            "model_reasoning_effort=\"high\"",
            "hello",
        ],
    );
    run.assert_code(0);
    let body = &requests(&server, 1)[0].body;
    assert_eq!(body["prompt_cache_key"], session_id(&run).as_str());
    assert_eq!(body.get("include"), None);
    // The effort is the user's explicit wish; no summary is asked of a model that has none.
    assert_eq!(body["reasoning"], json!({"effort": "high"}));
    assert_eq!(body["text"], json!({"verbosity": "low"}));
}

#[test]
fn debug_model_request_prints_the_first_request_exec_sends_with_its_secrets_redacted() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    let config = TestHome::default_config(&server.base_url());
    let config = with_provider_key(&config, "env_key", "\"MOCK_KEY\"");
    let config = with_provider_key(
        &config,
        "query_params",
        "{ api-version = \"2025\", sig = \"q-s3cret\" }",
    );
    let config = with_provider_key(&config, "http_headers", "{ X-Team-Token = \"h-s3cret\" }");
    home.write_config(&config);
    std::fs::write(
        home.workspace().join("AGENTS.md"),
        "Run `make check` before answering.\n",
    )
    .unwrap();

    let with_key = |args: &[&str]| {
        let mut command = deputy(&home, args);
        command.env("MOCK_KEY", "k-s3cret");
        finish(command)
    };
    let shown = with_key(&[
        "debug",
        "model-request",
        "-m",
        "gpt-5-codex",
        "fix the build",
    ]);
    shown.assert_code(0);
    assert!(
        !shown.stdout.contains("s3cret"),
        "a secret is shown:\n{}",
        shown.stdout
    );
    let shown: Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(shown["method"], "POST");
    let url = shown["url"].as_str().unwrap();
    assert!(
        url.starts_with(&format!("{}/responses?", server.base_url())),
        "{url}"
    );
    assert!(
        url.contains("api-version=%5Bredacted%5D") && url.contains("sig="),
        "{url}"
    );
    assert_eq!(shown["headers"]["authorization"], "Bearer [redacted]");
    assert_eq!(shown["headers"]["x-team-token"], "[redacted]");
    assert_eq!(shown["headers"]["content-type"], "application/json");
    assert_eq!(
        server.request_count(),
        0,
        "debug model-request sent a request"
    );

    // What a real session sends first is what was shown, but for the thread id.
    server.push(MockResponse::text_turn("Done."));
    let sent = with_key(&["exec", "-m", "gpt-5-codex", "fix the build"]);
    sent.assert_code(0);
    let sent = requests(&server, 1).remove(0);
    assert_eq!(sent.header("authorization"), Some("Bearer k-s3cret"));
    assert_eq!(sent.header("x-team-token"), Some("h-s3cret"));
    let without_cache_key = |body: &Value| {
        let mut body = body.clone();
        assert!(body["prompt_cache_key"].is_string());
        body.as_object_mut().unwrap().remove("prompt_cache_key");
        body
    };
    assert_eq!(
        without_cache_key(&shown["body"]),
        without_cache_key(&sent.body)
    );
    assert!(sent.raw_body.contains("make check"));
}

#[test]
fn a_freeform_apply_patch_call_edits_the_file_and_is_answered_as_a_custom_tool() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    let patch = "*** Begin Patch\n*** Add File: notes.md\n+# Notes\n+first line\n*** End Patch\n";
    server.push_all([
        MockResponse::sse(vec![
            responses::created("r1"),
            SseEvent::new(
                "response.output_item.done",
                json!({"item": {"type": "custom_tool_call", "id": "ctc_1", "call_id": "c1",
                    "name": "apply_patch", "input": patch}}),
            ),
            responses::completed("r1"),
        ]),
        MockResponse::text_turn("Added notes.md."),
    ]);
    exec(&home, &["-m", "gpt-5-codex", "add notes"]).assert_code(0);
    assert_eq!(
        std::fs::read_to_string(home.workspace().join("notes.md")).unwrap(),
        "# Notes\nfirst line\n"
    );
    let second = &requests(&server, 2)[1].body;
    let answer = second["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["call_id"] == "c1" && item["type"] == "custom_tool_call_output")
        .unwrap_or_else(|| panic!("no custom_tool_call_output in {second}"));
    assert!(
        answer["output"].as_str().unwrap().contains("notes.md"),
        "{answer}"
    );
}
