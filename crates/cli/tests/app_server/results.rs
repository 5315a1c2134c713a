//! The fields Codex's generated clients require of results and notifications, with the
//! values deputy gives them: settings and permissions, models, turn times, error
//! classes, thread status, and the output schema a turn hands the model.

use std::time::{SystemTime, UNIX_EPOCH};

use deputy_test_support::MockResponse;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::harness::{AppServer, Setup, id_of, say, text_input};

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        .try_into()
        .unwrap()
}

#[test]
fn thread_start_and_resume_report_reviewer_permissions_and_instruction_sources() {
    let mut server = Setup::new("on-request", "workspace-write").start();
    let workspace = server.home.workspace().canonicalize().unwrap();
    std::fs::create_dir(workspace.join(".git")).unwrap();
    std::fs::write(workspace.join("AGENTS.md"), "Run the tests first.\n").unwrap();

    let started = server.start_thread_with(json!({}));
    assert_eq!(started["approvalsReviewer"], "user");
    assert_eq!(started["reasoningEffort"], Value::Null);
    assert_eq!(started["serviceTier"], Value::Null);
    let agents = workspace.join("AGENTS.md").display().to_string();
    assert_eq!(started["instructionSources"], json!([agents]));
    let special = |kind: &str, access: &str| json!({"path": {"type": "special", "value": {"kind": kind}}, "access": access});
    assert_eq!(
        started["permissionProfile"],
        json!({
            "type": "managed",
            "network": {"enabled": false},
            "fileSystem": {"type": "restricted", "entries": [
                special("root", "read"),
                special("current_working_directory", "write"),
                special("slash_tmp", "write"),
                special("tmpdir", "write"),
                {"path": {"type": "path", "path": workspace.join(".git")}, "access": "read"},
            ]},
        })
    );

    let thread = id_of(&started["thread"]);
    // Resumed in a new process, with other settings.
    server.restart();
    let id = server.request(
        "thread/resume",
        json!({"threadId": thread, "sandbox": "danger-full-access"}),
    );
    let resumed = server.result(id);
    assert_eq!(resumed["approvalsReviewer"], "user");
    assert_eq!(resumed["permissionProfile"], json!({"type": "disabled"}));
    assert_eq!(resumed["instructionSources"], json!([agents]));
}

#[test]
fn model_list_offers_reasoning_efforts_and_text_input() {
    let server = AppServer::start();
    let id = server.request("model/list", json!({}));
    let model = &server.result(id)["data"][0];
    assert_eq!(model["defaultReasoningEffort"], "medium");
    let efforts: Vec<&str> = model["supportedReasoningEfforts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|option| {
            assert!(
                option["description"]
                    .as_str()
                    .is_some_and(|d| !d.is_empty())
            );
            option["reasoningEffort"].as_str().unwrap()
        })
        .collect();
    assert_eq!(efforts, ["low", "medium", "high"]);
    assert_eq!(model["inputModalities"], json!(["text"]));
}

#[test]
fn turns_carry_when_they_started_and_ended_and_how_long_they_ran() {
    let server = AppServer::start();
    let thread = server.start_thread();
    let before = now();
    server
        .model
        .push(say("done").delay_before(std::time::Duration::from_millis(300)));
    let turn = server.start_turn(&thread, "hi");
    let completed = server.turn_completed(&turn)["turn"].clone();
    let after = now();

    let started = server.notification("turn/started", |p| p["turn"]["id"] == turn.as_str());
    let started_at = started["turn"]["startedAt"].as_i64().unwrap();
    assert!((before..=after).contains(&started_at), "{started}");
    assert_eq!(completed["startedAt"], started_at);
    let completed_at = completed["completedAt"].as_i64().unwrap();
    assert!((started_at..=after).contains(&completed_at), "{completed}");
    let duration = completed["durationMs"].as_i64().unwrap();
    assert!(duration >= 300, "the model took 300 ms: {completed}");

    // The same times come back from the rollout.
    let id = server.request("thread/read", json!({"threadId": thread}));
    let read = &server.result(id)["thread"]["turns"][0];
    assert_eq!(read["startedAt"], started_at);
    assert_eq!(read["completedAt"], completed_at);
    assert_eq!(read["durationMs"], duration);
}

#[test]
fn a_turn_failing_on_the_model_server_carries_codex_error_info() {
    let server = AppServer::start();
    let thread = server.start_thread();
    server.model.push(MockResponse::status(
        500,
        json!({"error": {"message": "it broke"}}),
    ));
    let turn = server.start_turn(&thread, "hi");
    let completed = server.turn_completed(&turn);
    let error = server.notification("error", |p| p["turnId"] == turn.as_str());

    assert_eq!(error["willRetry"], false);
    assert_eq!(error["error"]["codexErrorInfo"], "internalServerError");
    assert_eq!(
        completed["turn"]["error"]["codexErrorInfo"],
        "internalServerError"
    );
    let status: Vec<String> = server
        .labels()
        .into_iter()
        .filter(|l| l.starts_with("thread/status/changed") || l == "turn/completed")
        .collect();
    assert_eq!(
        status,
        [
            "thread/status/changed:active[]",
            "thread/status/changed:systemError",
            "turn/completed"
        ]
    );
}

#[test]
fn a_retried_request_reports_each_retry_with_its_status() {
    let server = AppServer::start();
    let started = server
        .start_thread_with(json!({"config": {"model_providers.mock.request_max_retries": 1}}));
    let thread = id_of(&started["thread"]);
    server.model.push_all([
        MockResponse::status(503, json!({"error": {"message": "busy"}})),
        say("made it"),
    ]);
    let turn = server.start_turn(&thread, "hi");
    assert_eq!(server.turn_completed(&turn)["turn"]["status"], "completed");

    let retry = server.notification("error", |p| p["turnId"] == turn.as_str());
    assert_eq!(retry["willRetry"], true);
    assert_eq!(
        retry["error"]["codexErrorInfo"],
        json!({"responseStreamDisconnected": {"httpStatusCode": 503}})
    );
}

#[test]
fn an_output_schema_is_sent_to_the_model_for_that_turn_only() {
    let server = AppServer::start();
    let thread = server.start_thread();
    let schema = json!({
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
        "additionalProperties": false,
    });
    server
        .model
        .push_all([say(r#"{"answer":"yes"}"#), say("plain")]);
    let first = server.start_turn_with(json!({
        "threadId": thread, "input": [text_input("decide")], "outputSchema": schema,
    }));
    server.turn_completed(&first);
    let second = server.start_turn(&thread, "chat");
    server.turn_completed(&second);

    let requests = server.model.requests();
    assert_eq!(
        requests[0].body["text"],
        json!({"format": {
            "type": "json_schema", "name": "codex_output_schema", "schema": schema, "strict": true,
        }})
    );
    assert_eq!(requests[1].body.get("text"), None, "{}", requests[1].body);

    let bad = server.request(
        "turn/start",
        json!({"threadId": thread, "input": [text_input("x")], "outputSchema": "not a schema"}),
    );
    assert_eq!(server.error(bad)["code"], -32602);
}
