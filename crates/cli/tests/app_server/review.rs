//! `review/start`: a review runs inline as a turn of the thread, framed by
//! `enteredReviewMode` and `exitedReviewMode` items.

use std::path::Path;
use std::process::Command;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::harness::{AppServer, id_of, say};

const FINDINGS: &str = r#"{"findings":[{"title":"Handle the empty list","body":"`first()` is unwrapped.","confidence_score":0.9,"priority":1,"code_location":{"absolute_file_path":"/w/lib.rs","line_range":{"start":2,"end":2}}}],"overall_correctness":"patch is incorrect","overall_explanation":"It panics on empty input.","overall_confidence_score":0.8}"#;

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_review_runs_inline_between_review_mode_items() {
    let server = AppServer::start();
    let ws = server.home.workspace();
    git(ws, &["init", "-q", "-b", "main"]);
    std::fs::write(ws.join("lib.rs"), "fn a() {}\n").unwrap();
    git(ws, &["add", "."]);
    git(ws, &["commit", "-q", "-m", "first"]);
    std::fs::write(ws.join("lib.rs"), "fn a() { todo!() }\n").unwrap();
    let thread = server.start_thread();
    server.model.push(say(FINDINGS));

    let id = server.request(
        "review/start",
        json!({"threadId": thread, "target": {"type": "uncommittedChanges"}}),
    );
    let result = server.result(id);
    assert_eq!(result["reviewThreadId"], thread.as_str());
    assert_eq!(result["turn"]["status"], "inProgress");
    let turn = id_of(&result["turn"]);
    assert_eq!(server.turn_completed(&turn)["turn"]["status"], "completed");

    let labels = server.turn_labels(id, &turn);
    assert_eq!(labels[0], format!("response:{id}"));
    assert_eq!(labels[1], "turn/started");
    let position = |label: &str| labels.iter().position(|l| l == label);
    let entered = position("item/completed:enteredReviewMode").expect("entered");
    let exited = position("item/completed:exitedReviewMode").expect("exited");
    assert!(entered < exited, "{labels:?}");
    assert_eq!(labels.last().unwrap(), "turn/completed");
    let entered = server.notification("item/started", |p| p["item"]["type"] == "enteredReviewMode");
    assert_eq!(entered["item"]["review"], "the uncommitted changes");
    let exited = server.notification("item/completed", |p| {
        p["item"]["type"] == "exitedReviewMode"
    });
    let review = exited["item"]["review"].as_str().unwrap();
    assert!(review.contains("Handle the empty list"), "{review}");
    assert!(review.contains("It panics on empty input."), "{review}");

    // The thread goes on, its history holding the review's result only.
    server.model.push(say("noted"));
    let next = server.start_turn(&thread, "thanks");
    assert_eq!(server.turn_completed(&next)["turn"]["status"], "completed");
    let read = server.request("thread/read", json!({"threadId": thread}));
    let turns = server.result(read)["thread"]["turns"].clone();
    let kinds: Vec<Value> = turns[0]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["type"].clone())
        .collect();
    assert_eq!(kinds.first(), Some(&json!("enteredReviewMode")));
    assert_eq!(kinds.last(), Some(&json!("exitedReviewMode")));
}
