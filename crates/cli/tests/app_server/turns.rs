//! Turns: what a client sees, in which order, and how turns stop.

use std::path::Path;
use std::time::{Duration, Instant};

use deputy_test_support::MockResponse;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::harness::{AppServer, WAIT, id_of, say, shell, text_input};

#[test]
fn thread_start_answers_before_thread_started() {
    let server = AppServer::start();
    let id = server.request("thread/start", json!({"model": "other-model"}));
    let result = server.result(id);
    let started = server.notification("thread/started", |_| true);
    assert_eq!(started["thread"], result["thread"]);
    assert_eq!(result["model"], "other-model");
    assert_eq!(result["approvalPolicy"], "never");
    assert_eq!(result["sandbox"], json!({"type": "dangerFullAccess"}));
    assert_eq!(result["thread"]["status"], json!({"type": "idle"}));
    assert_eq!(result["thread"]["source"], "appServer");
    let labels = server.labels();
    let response = labels.iter().position(|l| *l == format!("response:{id}"));
    let notified = labels.iter().position(|l| l == "thread/started");
    assert!(response < notified, "{labels:?}");
}

#[test]
fn a_text_turn_reports_its_items_in_order() {
    let server = AppServer::start();
    let thread = server.start_thread();
    server.model.push(say("Hello there."));
    let request = server.request(
        "turn/start",
        json!({"threadId": thread, "input": [text_input("hi")]}),
    );
    let turn = id_of(&server.result(request)["turn"]);
    let completed = server.turn_completed(&turn);

    assert_eq!(
        server.turn_labels(request, &turn),
        [
            format!("response:{request}"),
            "turn/started".into(),
            "item/started:userMessage".into(),
            "item/completed:userMessage".into(),
            "item/started:agentMessage".into(),
            "item/agentMessage/delta".into(),
            "item/completed:agentMessage".into(),
            "thread/tokenUsage/updated".into(),
            "turn/completed".into(),
        ]
    );
    assert_eq!(completed["threadId"], thread.as_str());
    assert_eq!(completed["turn"]["status"], "completed");
    assert_eq!(completed["turn"]["error"], Value::Null);
    let message = server.notification("item/completed", |p| p["item"]["type"] == "agentMessage");
    let delta = server.notification("item/agentMessage/delta", |_| true);
    assert_eq!(message["item"]["text"], "Hello there.");
    assert_eq!(delta["itemId"], message["item"]["id"]);
    assert_eq!(delta["delta"], "Hello there.");
    assert_eq!(delta["turnId"], turn.as_str());
    let user = server.notification("item/completed", |p| p["item"]["type"] == "userMessage");
    assert_eq!(
        user["item"]["content"],
        json!([{"type": "text", "text": "hi", "text_elements": []}])
    );
    // The model got the text.
    let body = &server.model.requests()[0].body;
    assert!(body.to_string().contains("\"hi\""), "{body}");
}

#[test]
fn a_command_item_reports_its_output_and_exit_code() {
    let server = AppServer::start();
    let thread = server.start_thread();
    server
        .model
        .push_all([shell("call-echo", "echo hi"), say("done")]);
    let turn = server.start_turn(&thread, "run echo");
    server.turn_completed(&turn);

    let started = server.notification("item/started", |p| p["item"]["type"] == "commandExecution");
    let completed = server.notification("item/completed", |p| {
        p["item"]["type"] == "commandExecution"
    });
    let item_id = id_of(&started["item"]);
    let ws = server.home.workspace().canonicalize().unwrap();
    assert_eq!(started["item"]["status"], "inProgress");
    assert_eq!(started["item"]["command"], "bash -lc 'echo hi'");
    assert_eq!(started["item"]["cwd"], ws.display().to_string());
    assert_eq!(started["item"]["aggregatedOutput"], Value::Null);
    assert_eq!(started["item"]["exitCode"], Value::Null);
    assert_eq!(
        started["item"]["commandActions"],
        json!([{"type": "unknown", "command": "echo hi"}])
    );
    assert_eq!(id_of(&completed["item"]), item_id);
    assert_eq!(completed["item"]["status"], "completed");
    assert_eq!(completed["item"]["exitCode"], 0);
    assert_eq!(completed["item"]["aggregatedOutput"], "hi\n");
    assert!(completed["item"]["durationMs"].is_i64());
    let output: String = server
        .notifications("item/commandExecution/outputDelta")
        .iter()
        .filter(|p| p["itemId"] == item_id.as_str())
        .map(|p| p["delta"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(output, "hi\n");
}

#[test]
fn a_plan_is_reported_as_turn_plan_updated_and_a_plan_item() {
    let server = AppServer::start();
    let thread = server.start_thread();
    server.model.push_all([
        MockResponse::function_call_turn(
            "call-plan",
            "update_plan",
            json!({"explanation": "two steps", "plan": [
                {"step": "look", "status": "completed"},
                {"step": "fix", "status": "in_progress"},
            ]}),
        ),
        say("planned"),
    ]);
    let turn = server.start_turn(&thread, "plan it");
    server.turn_completed(&turn);

    let updated = server.notification("turn/plan/updated", |_| true);
    assert_eq!(
        updated,
        json!({
            "threadId": thread,
            "turnId": turn,
            "explanation": "two steps",
            "plan": [
                {"step": "look", "status": "completed"},
                {"step": "fix", "status": "inProgress"},
            ],
        })
    );
    let item = server.notification("item/completed", |p| p["item"]["type"] == "plan");
    assert_eq!(item["item"]["text"], "two steps\n- [x] look\n- [~] fix");
}

#[test]
fn a_failed_turn_reports_an_error_then_turn_completed_failed() {
    let server = AppServer::start();
    let thread = server.start_thread();
    server.model.push(MockResponse::status(
        400,
        json!({"error": {"message": "the model is unhappy"}}),
    ));
    let turn = server.start_turn(&thread, "hi");
    let completed = server.turn_completed(&turn);
    let error = server.notification("error", |p| p["turnId"] == turn.as_str());

    assert_eq!(completed["turn"]["status"], "failed");
    let message = completed["turn"]["error"]["message"].as_str().unwrap();
    assert!(message.contains("the model is unhappy"), "{message}");
    assert_eq!(error["willRetry"], false);
    assert_eq!(error["error"]["message"], message);
    // The thread takes the next turn.
    server.model.push(say("better now"));
    let next = server.start_turn(&thread, "again");
    assert_eq!(server.turn_completed(&next)["turn"]["status"], "completed");
}

#[test]
fn turn_settings_persist_for_later_turns() {
    let server = AppServer::start();
    let thread = server.start_thread();
    server.model.push_all([say("one"), say("two")]);
    let first = server.start_turn_with(json!({
        "threadId": thread,
        "input": [text_input("first")],
        "model": "other-model",
    }));
    server.turn_completed(&first);
    let second = server.start_turn(&thread, "second");
    server.turn_completed(&second);

    let models: Vec<Value> = server
        .model
        .requests()
        .iter()
        .map(|r| r.body["model"].clone())
        .collect();
    assert_eq!(models, [json!("other-model"), json!("other-model")]);
}

#[test]
fn a_turn_started_while_one_runs_waits_for_it() {
    let server = AppServer::start();
    let thread = server.start_thread();
    server.model.push_all([
        say("first").delay_before(Duration::from_millis(300)),
        say("second"),
    ]);
    let first = server.start_turn(&thread, "one");
    let second = server.start_turn(&thread, "two");
    server.turn_completed(&second);
    let labels = server.labels();
    let done = |turn: &str| {
        server
            .client
            .messages()
            .iter()
            .position(|m| m["method"] == "turn/completed" && m["params"]["turn"]["id"] == turn)
    };
    assert!(done(&first) < done(&second), "{labels:?}");
    let started: Vec<Value> = server
        .notifications("turn/started")
        .iter()
        .map(|p| p["turn"]["id"].clone())
        .collect();
    assert_eq!(started, [json!(first), json!(second)]);
}

/// A shell script that records its pid, then becomes `sleep 30` (same pid).
const SLEEP_30: &str = "echo $$ > sleep.pid; exec sleep 30";

#[test]
fn interrupting_a_turn_kills_its_command_and_the_next_turn_works() {
    let server = AppServer::start();
    let thread = server.start_thread();
    server.model.push(shell("call-sleep", SLEEP_30));
    let turn = server.start_turn(&thread, "sleep");
    let pid = wait_for_pid(&server.home.workspace().join("sleep.pid"));
    assert!(is_running(pid), "the sleep should be running");

    let asked = Instant::now();
    let id = server.request(
        "turn/interrupt",
        json!({"threadId": thread, "turnId": turn}),
    );
    assert_eq!(server.result(id), json!({}));
    let completed = server.turn_completed(&turn);
    let took = asked.elapsed();
    assert_eq!(completed["turn"]["status"], "interrupted");
    assert!(took < Duration::from_secs(2), "interrupted after {took:?}");
    assert!(
        stops_within(pid, Duration::from_secs(2)),
        "the sleep survived"
    );
    let item = server.notification("item/completed", |p| {
        p["item"]["type"] == "commandExecution"
    });
    assert_eq!(item["item"]["status"], "failed");
    let labels = server.labels();
    let answered = labels.iter().position(|l| *l == format!("response:{id}"));
    let ended = labels.iter().rposition(|l| l == "turn/completed");
    assert!(answered < ended, "{labels:?}");

    // A finished turn cannot be interrupted again; the thread goes on.
    let again = server.request(
        "turn/interrupt",
        json!({"threadId": thread, "turnId": turn}),
    );
    assert_eq!(server.error(again)["code"], -32600);
    server.model.push(say("awake"));
    let next = server.start_turn(&thread, "wake up");
    assert_eq!(server.turn_completed(&next)["turn"]["status"], "completed");
}

use deputy_test_support::processes::{is_running, stops_within};

/// The pid a command wrote to `path`, waiting up to [`WAIT`] for it.
fn wait_for_pid(path: &Path) -> i32 {
    deputy_test_support::processes::wait_for_pid(path, WAIT)
}

#[test]
fn thread_start_settings_reach_the_model() {
    let server = AppServer::start();
    let started = server.start_thread_with(json!({
        "baseInstructions": "You are terse.",
        "developerInstructions": "Prefer ripgrep.",
        "config": {"model": "configured-model"},
        "approvalPolicy": "on-request",
        "sandbox": "read-only",
    }));
    assert_eq!(started["model"], "configured-model");
    assert_eq!(started["approvalPolicy"], "on-request");
    assert_eq!(
        started["sandbox"],
        json!({"type": "readOnly", "networkAccess": false})
    );
    server.model.push(say("ok"));
    let turn = server.start_turn(&id_of(&started["thread"]), "hi");
    server.turn_completed(&turn);

    let body = &server.model.requests()[0].body;
    assert_eq!(body["model"], "configured-model");
    assert!(
        body["instructions"]
            .as_str()
            .unwrap()
            .starts_with("You are terse."),
        "{body}"
    );
    assert!(
        body["input"].to_string().contains("Prefer ripgrep."),
        "{body}"
    );
}

#[test]
fn reasoning_streams_as_summary_text_deltas_of_a_reasoning_item() {
    use deputy_test_support::{SseEvent, responses};
    let server = AppServer::start();
    let thread = server.start_thread();
    server.model.push(MockResponse::sse(vec![
        responses::created("r1"),
        responses::reasoning_delta("Thinking it "),
        responses::reasoning_delta("over."),
        SseEvent::new(
            "response.output_item.done",
            json!({"item": {"type": "reasoning", "id": "rs1",
                "summary": [{"type": "summary_text", "text": "Thinking it over."}]}}),
        ),
        responses::message("m1", "Done."),
        responses::completed("r1"),
    ]));
    let turn = server.start_turn(&thread, "think");
    server.turn_completed(&turn);

    let item = server.notification("item/completed", |p| p["item"]["type"] == "reasoning");
    assert_eq!(item["item"]["summary"], json!(["Thinking it over."]));
    assert_eq!(item["item"]["content"], json!([]));
    let deltas: Vec<Value> = server
        .notifications("item/reasoning/summaryTextDelta")
        .into_iter()
        .map(|p| {
            assert_eq!(p["itemId"], item["item"]["id"]);
            assert_eq!(p["summaryIndex"], 0);
            p["delta"].clone()
        })
        .collect();
    assert_eq!(deltas, [json!("Thinking it "), json!("over.")]);
}

#[test]
fn compaction_on_request_is_a_turn_with_a_context_compaction_item() {
    let server = AppServer::start();
    let thread = server.start_thread();
    server.model.push_all([
        say("first answer"),
        say("SUMMARY: we said hello."),
        say("after"),
    ]);
    let first = server.start_turn(&thread, "hello");
    server.turn_completed(&first);

    let id = server.request("thread/compact/start", json!({"threadId": thread}));
    assert_eq!(server.result(id), json!({}));
    let started = server.notification("turn/started", |p| p["turn"]["id"] != first.as_str());
    let turn = id_of(&started["turn"]);
    assert_eq!(server.turn_completed(&turn)["turn"]["status"], "completed");
    let labels: Vec<String> = server
        .turn_labels(id, &turn)
        .into_iter()
        .filter(|l| l.starts_with("item/") || l.starts_with("turn/") || l.starts_with("response"))
        .collect();
    assert_eq!(
        labels,
        [
            format!("response:{id}"),
            "turn/started".into(),
            "item/started:contextCompaction".into(),
            "item/completed:contextCompaction".into(),
            "turn/completed".into(),
        ]
    );

    // The next turn starts from the summary.
    let next = server.start_turn(&thread, "go on");
    server.turn_completed(&next);
    let last = server.model.requests().last().unwrap().body.to_string();
    assert!(last.contains("SUMMARY: we said hello."), "{last}");
    assert!(!last.contains("first answer"), "{last}");
}

#[test]
fn sigterm_stops_the_turn_kills_its_command_and_exits_143() {
    let server = AppServer::start();
    let thread = server.start_thread();
    server.model.push(shell("call-sleep", SLEEP_30));
    let turn = server.start_turn(&thread, "sleep");
    let pid = wait_for_pid(&server.home.workspace().join("sleep.pid"));

    let server_pid = libc::pid_t::try_from(server.client.pid()).unwrap();
    // SAFETY: kill(2) has no memory-safety preconditions.
    assert_eq!(unsafe { libc::kill(server_pid, libc::SIGTERM) }, 0);
    let status = server.client.wait_exit(WAIT).expect("the server exits");
    assert_eq!(status.code(), Some(128 + libc::SIGTERM));
    assert!(
        stops_within(pid, Duration::from_secs(2)),
        "the sleep survived"
    );
    assert_eq!(
        server.turn_completed(&turn)["turn"]["status"],
        "interrupted"
    );
}
