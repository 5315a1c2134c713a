//! The approval flow (seed 001): `item/started` → the server request → the client's answer
//! → `serverRequest/resolved` → `item/completed`, for each decision, for commands and for
//! file changes, and when nobody answers.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::harness::{AppServer, Setup, id_of, patch, say, shell};

const EXEC_APPROVAL: &str = "item/commandExecution/requestApproval";
const PATCH_APPROVAL: &str = "item/fileChange/requestApproval";

/// An `untrusted` server whose model asks to `touch created.txt`, then says `after`.
fn asking_to_touch(after: &str) -> (AppServer, String, String) {
    let server = Setup::new("untrusted", "danger-full-access").start();
    let thread = server.start_thread();
    server
        .model
        .push_all([shell("call-touch", "touch created.txt"), say(after)]);
    let turn = server.start_turn(&thread, "make a file");
    (server, thread, turn)
}

/// Answers the one command question with `answer`; returns the request.
fn answer_command(server: &AppServer, answer: Value) -> Value {
    let request = server.server_request(EXEC_APPROVAL, |_| true);
    server.client.respond(request["id"].clone(), answer);
    request
}

fn command_item(server: &AppServer, method: &str) -> Value {
    server.notification(method, |p| p["item"]["type"] == "commandExecution")["item"].clone()
}

#[test]
fn an_accepted_command_runs_after_the_exact_approval_flow() {
    let (server, thread, turn) = asking_to_touch("created");
    let request = answer_command(&server, json!({"decision": "accept"}));
    let completed = server.turn_completed(&turn);

    let started = command_item(&server, "item/started");
    let ws = server.home.workspace().canonicalize().unwrap();
    assert_eq!(
        request["params"],
        json!({
            "threadId": thread,
            "turnId": turn,
            "itemId": started["id"],
            "command": "bash -lc 'touch created.txt'",
            "cwd": ws.display().to_string(),
            "commandActions": [{"type": "unknown", "command": "touch created.txt"}],
            "availableDecisions": ["accept", "acceptForSession", "decline", "cancel"],
        })
    );
    let resolved = server.notification("serverRequest/resolved", |_| true);
    assert_eq!(
        resolved,
        json!({"threadId": thread, "requestId": request["id"]})
    );
    let item = command_item(&server, "item/completed");
    assert_eq!(item["id"], started["id"]);
    assert_eq!(item["status"], "completed");
    assert_eq!(item["exitCode"], 0);
    assert!(server.home.workspace().join("created.txt").exists());
    assert_eq!(completed["turn"]["status"], "completed");

    let labels: Vec<String> = server
        .labels()
        .into_iter()
        .filter(|l| {
            l.ends_with(":commandExecution")
                || l.starts_with("request:")
                || l.starts_with("thread/status/changed")
                || l == "serverRequest/resolved"
                || l == "turn/completed"
        })
        .collect();
    assert_eq!(
        labels,
        [
            "thread/status/changed:active[]",
            "item/started:commandExecution",
            "thread/status/changed:active[waitingOnApproval]",
            &format!("request:{EXEC_APPROVAL}"),
            "serverRequest/resolved",
            "thread/status/changed:active[]",
            "item/completed:commandExecution",
            "thread/status/changed:idle",
            "turn/completed",
        ]
    );
}

#[test]
fn a_declined_command_does_not_run_and_the_turn_goes_on() {
    let (server, _thread, turn) = asking_to_touch("skipped it");
    answer_command(&server, json!({"decision": "decline"}));
    let completed = server.turn_completed(&turn);

    assert_eq!(
        command_item(&server, "item/completed")["status"],
        "declined"
    );
    assert!(!server.home.workspace().join("created.txt").exists());
    assert_eq!(completed["turn"]["status"], "completed");
    assert_eq!(server.model.requests().len(), 2, "the model hears of it");
}

#[test]
fn a_cancelled_command_does_not_run_and_the_turn_stops() {
    let (server, _thread, turn) = asking_to_touch("never said");
    answer_command(&server, json!({"decision": "cancel"}));
    let completed = server.turn_completed(&turn);

    assert_eq!(
        command_item(&server, "item/completed")["status"],
        "declined"
    );
    assert!(!server.home.workspace().join("created.txt").exists());
    assert_eq!(completed["turn"]["status"], "interrupted");
    assert_eq!(server.model.requests().len(), 1, "no further model request");
}

#[test]
fn an_unreadable_answer_declines() {
    for answer in [
        json!({"decision": "approved"}),
        json!({"verdict": "accept"}),
        json!("yes"),
    ] {
        let (server, _thread, turn) = asking_to_touch("skipped it");
        answer_command(&server, answer.clone());
        assert_eq!(
            server.turn_completed(&turn)["turn"]["status"],
            "completed",
            "{answer}"
        );
        assert_eq!(
            command_item(&server, "item/completed")["status"],
            "declined",
            "{answer}"
        );
        assert!(!server.home.workspace().join("created.txt").exists());
    }
}

#[test]
fn an_error_answer_declines() {
    let (server, _thread, turn) = asking_to_touch("skipped it");
    let request = server.server_request(EXEC_APPROVAL, |_| true);
    server
        .client
        .respond_error(request["id"].clone(), -32000, "the user closed the dialog");
    server.turn_completed(&turn);
    assert_eq!(
        command_item(&server, "item/completed")["status"],
        "declined"
    );
}

#[test]
fn accept_for_session_skips_the_next_question_about_the_same_command() {
    let (server, thread, turn) = asking_to_touch("created");
    answer_command(&server, json!({"decision": "acceptForSession"}));
    server.turn_completed(&turn);
    std::fs::remove_file(server.home.workspace().join("created.txt")).unwrap();

    server
        .model
        .push_all([shell("call-again", "touch created.txt"), say("again")]);
    let next = server.start_turn(&thread, "once more");
    assert_eq!(server.turn_completed(&next)["turn"]["status"], "completed");
    assert!(server.home.workspace().join("created.txt").exists());
    let asked: Vec<Value> = server
        .client
        .messages()
        .into_iter()
        .filter(|m| m["method"] == EXEC_APPROVAL)
        .collect();
    assert_eq!(asked.len(), 1, "asked again: {asked:?}");
}

#[test]
fn a_question_nobody_answers_times_out_and_the_turn_ends() {
    let server = Setup {
        top_level: "approval_timeout_sec = 1",
        ..Setup::new("untrusted", "danger-full-access")
    }
    .start();
    let thread = server.start_thread();
    server
        .model
        .push_all([shell("call-touch", "touch created.txt"), say("gave up")]);
    let turn = server.start_turn(&thread, "make a file");
    let request = server.server_request(EXEC_APPROVAL, |_| true);

    let completed = server.turn_completed(&turn);
    assert_eq!(completed["turn"]["status"], "completed");
    assert_eq!(
        server.notification("serverRequest/resolved", |_| true)["requestId"],
        request["id"]
    );
    assert_eq!(
        command_item(&server, "item/completed")["status"],
        "declined"
    );
    assert!(!server.home.workspace().join("created.txt").exists());
    let warning = server.notification("warning", |p| p["turnId"] == turn.as_str());
    assert!(
        warning["message"].as_str().unwrap().contains("no answer"),
        "{warning}"
    );
    // A late answer changes nothing.
    server
        .client
        .respond(request["id"].clone(), json!({"decision": "accept"}));
    let listed = server.request("thread/list", json!({}));
    server.result(listed);
    assert!(!server.home.workspace().join("created.txt").exists());
}

#[test]
fn interrupting_a_turn_settles_its_open_question() {
    let (server, thread, turn) = asking_to_touch("never said");
    let request = server.server_request(EXEC_APPROVAL, |_| true);
    let id = server.request(
        "turn/interrupt",
        json!({"threadId": thread, "turnId": turn}),
    );
    server.result(id);
    assert_eq!(
        server.turn_completed(&turn)["turn"]["status"],
        "interrupted"
    );
    let resolved = server.notification("serverRequest/resolved", |_| true);
    assert_eq!(resolved["requestId"], request["id"]);
    let labels = server.labels();
    let settled = labels.iter().position(|l| l == "serverRequest/resolved");
    let ended = labels.iter().position(|l| l == "turn/completed");
    assert!(settled < ended, "{labels:?}");
    assert!(!server.home.workspace().join("created.txt").exists());
}

const ADD_FILE: &str = "*** Begin Patch\n*** Add File: added.txt\n+brand new\n*** End Patch\n";

#[test]
fn a_file_change_asks_with_its_item_id_and_applies_when_accepted() {
    let server = Setup::new("untrusted", "danger-full-access").start();
    let thread = server.start_thread();
    server
        .model
        .push_all([patch("call-patch", ADD_FILE), say("patched")]);
    let turn = server.start_turn(&thread, "add a file");
    let request = server.server_request(PATCH_APPROVAL, |_| true);
    let started = server.notification("item/started", |p| p["item"]["type"] == "fileChange");
    assert!(
        !server.home.workspace().join("added.txt").exists(),
        "nothing is written before the answer"
    );
    server
        .client
        .respond(request["id"].clone(), json!({"decision": "accept"}));
    server.turn_completed(&turn);

    assert_eq!(
        request["params"],
        json!({
            "threadId": thread,
            "turnId": turn,
            "itemId": started["item"]["id"],
            "reason": null,
            "grantRoot": null,
        })
    );
    let ws = server.home.workspace().canonicalize().unwrap();
    assert_eq!(
        started["item"]["changes"],
        json!([{
            "path": ws.join("added.txt").display().to_string(),
            "kind": {"type": "add"},
            "diff": "brand new\n",
        }])
    );
    let completed = server.notification("item/completed", |p| p["item"]["type"] == "fileChange");
    assert_eq!(id_of(&completed["item"]), id_of(&started["item"]));
    assert_eq!(completed["item"]["status"], "completed");
    assert_eq!(
        std::fs::read_to_string(server.home.workspace().join("added.txt")).unwrap(),
        "brand new\n"
    );
    let diff = server.notification("turn/diff/updated", |p| p["turnId"] == turn.as_str());
    assert!(
        diff["diff"].as_str().unwrap().contains("+brand new"),
        "{diff}"
    );
    assert!(
        server
            .notifications("serverRequest/resolved")
            .iter()
            .any(|p| p["requestId"] == request["id"])
    );
}

#[test]
fn a_declined_file_change_writes_nothing() {
    let server = Setup::new("untrusted", "danger-full-access").start();
    let thread = server.start_thread();
    server
        .model
        .push_all([patch("call-patch", ADD_FILE), say("left it")]);
    let turn = server.start_turn(&thread, "add a file");
    let request = server.server_request(PATCH_APPROVAL, |_| true);
    server
        .client
        .respond(request["id"].clone(), json!({"decision": "decline"}));
    assert_eq!(server.turn_completed(&turn)["turn"]["status"], "completed");
    let completed = server.notification("item/completed", |p| p["item"]["type"] == "fileChange");
    assert_eq!(completed["item"]["status"], "declined");
    assert!(!server.home.workspace().join("added.txt").exists());
}
