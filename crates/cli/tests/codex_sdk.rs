//! `deputy exec` driven by OpenAI's Codex TypeScript SDK (`@openai/codex-sdk`, the npm
//! package as published, with `codexPathOverride` pointing at deputy and no shim): every
//! way a client uses it, against the mock model, judged by what the SDK returns, what
//! reached the model and what happened on disk.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use deputy_test_support::{
    MockModelServer, MockResponse, NodeMcpSdk, RecordedRequest, TestHome, run_with_deadline,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use common::{DEPUTY, decode_base64};

/// Longest the Node client may run; every scenario takes a few seconds.
const SCRIPT_DEADLINE: Duration = Duration::from_secs(90);

/// A 1×1 PNG.
const PNG_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC";

/// Runs the SDK client through `scenario` in `home`'s workspace; the JSON it printed.
fn run_client(home: &TestHome, scenario: &str, argument: Option<&str>) -> Value {
    let sdk = NodeMcpSdk::install().unwrap_or_else(|err| panic!("no TypeScript SDKs: {err}"));
    let source =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/typescript/codex_sdk_client.mjs");
    let script = sdk
        .place_script(&source)
        .unwrap_or_else(|err| panic!("{err}"));
    let mut command = home.command("node");
    command
        .arg(&script)
        .arg(DEPUTY)
        .arg(scenario)
        .args(argument)
        .env("HOME", home.path());
    let output = run_with_deadline(command, SCRIPT_DEADLINE).unwrap_or_else(|err| panic!("{err}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "node exited with {}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}",
        output.status
    );
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|err| panic!("script output is not JSON ({err}): {stdout}\n{stderr}"))
}

/// The texts of a Responses request's input messages, in order.
fn said(request: &RecordedRequest) -> Vec<String> {
    request.body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == "message")
        .flat_map(|item| item["content"].as_array().cloned().unwrap_or_default())
        .filter_map(|part| part["text"].as_str().map(str::to_string))
        .collect()
}

/// A model that runs `echo made > notes.txt`, adds `plan.md` with a patch, then answers.
fn notes_model() -> MockModelServer {
    let model = MockModelServer::start();
    model.push_all([
        MockResponse::function_call_turn(
            "call-cmd",
            "shell_command",
            json!({"command": "echo made > notes.txt && echo done"}),
        ),
        MockResponse::function_call_turn(
            "call-patch",
            "apply_patch",
            json!({"input": "*** Begin Patch\n*** Add File: plan.md\n+step one\n*** End Patch\n"}),
        ),
        MockResponse::text_turn("Notes made."),
    ]);
    model
}

#[test]
fn run_returns_the_items_and_answer_of_a_turn_that_runs_a_command_and_edits_a_file() {
    let model = notes_model();
    let home = TestHome::new(&model.base_url());
    let seen = run_client(&home, "run", None);

    // `approvalPolicy: "untrusted"` with nobody to ask: the command ran in the sandbox,
    // as Codex runs it.
    let workspace = home.workspace();
    assert_eq!(
        std::fs::read_to_string(workspace.join("notes.txt")).unwrap(),
        "made\n"
    );
    assert_eq!(
        std::fs::read_to_string(workspace.join("plan.md")).unwrap(),
        "step one\n"
    );
    let plan = workspace.canonicalize().unwrap().join("plan.md");
    assert_eq!(
        seen["items"],
        json!([
            {"id": "item_0", "type": "command_execution",
             "command": "echo made > notes.txt && echo done", "aggregated_output": "done\n",
             "exit_code": 0, "status": "completed"},
            {"id": "item_1", "type": "file_change",
             "changes": [{"path": plan.display().to_string(), "kind": "add"}],
             "status": "completed"},
            {"id": "item_2", "type": "agent_message", "text": "Notes made."},
        ])
    );
    assert_eq!(seen["finalResponse"], "Notes made.");
    assert!(seen["threadId"].is_string(), "{seen}");
    assert_eq!(
        seen["usage"],
        json!({"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0,
               "reasoning_output_tokens": 0, "cache_write_input_tokens": 0})
    );
    // The reasoning effort the SDK set reached the model; its other settings are honoured
    // quietly (no web search, no network) and never became error items.
    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].body["reasoning"], json!({"effort": "high"}));
}

#[test]
fn run_streamed_yields_every_event_in_the_sdks_shapes() {
    let model = notes_model();
    let home = TestHome::new(&model.base_url());
    let seen = run_client(&home, "streamed", None);

    let events = seen["events"].as_array().unwrap();
    let shapes: Vec<String> = events
        .iter()
        .map(|event| {
            let kind = event["type"].as_str().unwrap_or_default();
            match event["item"]["type"].as_str() {
                Some(item) => format!("{kind} {item} {}", event["item"]["status"]),
                None => kind.to_string(),
            }
        })
        .collect();
    assert_eq!(
        shapes,
        [
            "thread.started",
            "turn.started",
            "item.started command_execution \"in_progress\"",
            "item.completed command_execution \"completed\"",
            "item.completed file_change \"completed\"",
            "item.completed agent_message null",
            "turn.completed",
        ]
    );
    assert_eq!(events[0]["thread_id"], seen["threadId"]);
    // While it runs a command has no exit code yet, and says so by leaving it out.
    assert_eq!(events[2]["item"].get("exit_code"), None, "{}", events[2]);
}

#[test]
fn resume_thread_continues_the_same_session_from_a_new_process() {
    let model = MockModelServer::start();
    model.push_all([
        MockResponse::text_turn("Noted."),
        MockResponse::text_turn("It was 7."),
    ]);
    let home = TestHome::new(&model.base_url());
    let seen = run_client(&home, "resume", None);

    let ids = seen["threadIds"].as_array().unwrap();
    assert_eq!(ids[0], ids[1], "{seen}");
    assert_eq!(seen["answers"], json!(["Noted.", "It was 7."]));
    let second = &model.requests()[1];
    let history = said(second);
    assert!(
        history.iter().any(|t| t == "remember the number 7")
            && history.iter().any(|t| t == "Noted.")
            && history.last().is_some_and(|t| t == "which number?"),
        "the second turn carries the first: {history:?}"
    );
}

#[test]
fn an_output_schema_reaches_the_model_as_a_strict_format_and_the_answer_parses() {
    let model = MockModelServer::start();
    model.push(MockResponse::text_turn(
        r#"{"summary":"all good","files":2}"#,
    ));
    let home = TestHome::new(&model.base_url());
    let seen = run_client(&home, "schema", None);

    assert_eq!(seen["parsed"], json!({"summary": "all good", "files": 2}));
    let request = &model.requests()[0];
    assert_eq!(
        request.body["text"]["format"],
        json!({
            "type": "json_schema",
            "name": "codex_output_schema",
            "strict": true,
            "schema": {
                "type": "object",
                "properties": {"summary": {"type": "string"}, "files": {"type": "integer"}},
                "required": ["summary", "files"],
                "additionalProperties": false,
            },
        })
    );
}

#[test]
fn api_key_and_base_url_reach_the_built_in_openai_provider() {
    let model = MockModelServer::start();
    model.push(MockResponse::text_turn("Hello from the keyed server."));
    let home = TestHome::new(&model.base_url());
    // No provider of its own: the built-in `openai`, which the SDK points at the mock
    // (`openai_base_url`) and gives a key (`CODEX_API_KEY`; OPENAI_API_KEY is unset).
    home.write_config(
        "model = \"mock-model\"\napproval_policy = \"never\"\nsandbox_mode = \"read-only\"\n",
    );
    let seen = run_client(&home, "apikey", Some(&model.base_url()));

    assert_eq!(seen["finalResponse"], "Hello from the keyed server.");
    let request = &model.requests()[0];
    assert_eq!(request.path, "/v1/responses");
    assert_eq!(
        request.header("authorization"),
        Some("Bearer sk-from-the-sdk")
    );
}

/// Whether a process whose command line is `argv` is running.
fn running(argv: &[&str]) -> bool {
    let wanted: Vec<u8> = argv
        .iter()
        .flat_map(|a| [a.as_bytes(), b"\0"].concat())
        .collect();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .any(|entry| std::fs::read(entry.path().join("cmdline")).is_ok_and(|c| c == wanted))
}

#[test]
fn an_abort_signal_surfaces_the_sdks_own_abort_error_and_kills_the_command() {
    // A number no other test sleeps for, to find this command among the processes.
    let sleeper = ["sleep", "41.2371"];
    let model = MockModelServer::start();
    model.push(MockResponse::function_call_turn(
        "call-long",
        "shell",
        json!({"command": sleeper, "timeout_ms": 120_000}),
    ));
    let home = TestHome::new(&model.base_url());
    let seen = run_client(&home, "abort", None);

    assert_eq!(
        json!({"outcome": seen["outcome"], "errorName": seen["errorName"]}),
        json!({"outcome": "threw", "errorName": "AbortError"}),
        "{seen}"
    );
    let events: Vec<&str> = seen["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(!events.contains(&"turn.failed"), "{events:?}");
    // deputy exits on the SDK's SIGTERM and takes the command with it.
    let deadline = Instant::now() + Duration::from_secs(5);
    while running(&sleeper) {
        assert!(Instant::now() < deadline, "the aborted command still runs");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(model.requests().len(), 1, "the turn must not go on");
}

#[test]
fn a_local_image_reaches_the_model_as_an_input_image() {
    let model = MockModelServer::start();
    model.push(MockResponse::text_turn("A green dot."));
    let home = TestHome::new(&model.base_url());
    let image = home.workspace().join("dot.png");
    std::fs::write(&image, decode_base64(PNG_BASE64).unwrap()).unwrap();
    let seen = run_client(&home, "image", Some(image.to_str().unwrap()));

    assert_eq!(seen["finalResponse"], "A green dot.");
    let input = model.requests()[0].body["input"].clone();
    let last = input.as_array().and_then(|items| items.last()).cloned();
    assert_eq!(
        last,
        Some(json!({"type": "message", "role": "user", "content": [
            {"type": "input_image", "image_url": format!("data:image/png;base64,{PNG_BASE64}")},
            {"type": "input_text", "text": "what is in the picture?"},
        ]}))
    );
}
