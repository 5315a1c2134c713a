//! Review mode in the engine: the reviewer sees exactly the change and nothing of the
//! session; the session keeps only a short record of the result. Driven in-process through
//! `deputy-core`, with the `deputy` binary as the sandbox launcher its git calls need.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use deputy_core::config::ConfigLayers;
use deputy_core::review::REVIEW_PROMPT;
use deputy_core::rollout::{SessionSource, list_sessions};
use deputy_core::{Thread, ThreadManager};
use deputy_protocol::{
    ExitedReviewModeItem, ReviewRequest, ReviewTarget, ThreadEvent, ThreadEventMsg, ThreadItem,
    TurnAbortReason,
};
use deputy_test_support::{MockModelServer, MockResponse, TestHome};
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(30);

const FINDINGS: &str = r#"{"findings":[{"title":"Handle the empty list","body":"`first()` is unwrapped.","confidence_score":0.9,"priority":1,"code_location":{"absolute_file_path":"/w/lib.rs","line_range":{"start":2,"end":2}}}],"overall_correctness":"patch is incorrect","overall_explanation":"It panics on empty input.","overall_confidence_score":0.8}"#;

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A repository with one commit on `main`, a feature commit, then uncommitted work.
fn repository(dir: &Path) {
    git(dir, &["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("lib.rs"), "fn a() {}\n").unwrap();
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "first"]);
    git(dir, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(dir.join("lib.rs"), "fn a() {}\nfn b() {}\n").unwrap();
    git(dir, &["commit", "-q", "-am", "add b"]);
    std::fs::write(dir.join("lib.rs"), "fn a() {}\nfn b() { todo!() }\n").unwrap();
    std::fs::write(dir.join("new.rs"), "fn untracked() {}\n").unwrap();
}

/// A thread manager whose commands (and a review's git) the real launcher confines.
fn manager() -> ThreadManager {
    let launcher = PathBuf::from(env!("CARGO_BIN_EXE_deputy"));
    ThreadManager::new(Some(launcher), SessionSource::Exec)
}

fn layers(home: &TestHome) -> ConfigLayers {
    let mut layers = ConfigLayers::new(home.path().to_path_buf());
    layers.overrides.cwd = Some(home.workspace().to_path_buf());
    layers
}

fn request(target: ReviewTarget) -> ReviewRequest {
    ReviewRequest {
        user_facing_hint: target.hint(),
        target,
        prompt: None,
        model: None,
    }
}

/// Runs a review turn to its end; returns its events.
async fn review(thread: &Arc<Thread>, target: ReviewTarget) -> Vec<Arc<ThreadEvent>> {
    let after = thread.last_seq();
    let turn = thread.submit_review("r".into(), request(target)).unwrap();
    let mut events = thread.subscribe(after);
    let mut seen = Vec::new();
    tokio::time::timeout(WAIT, async {
        while let Some(event) = events.next().await {
            let done = event.turn_id.as_deref() == Some(turn.as_str()) && event.msg.ends_turn();
            seen.push(event);
            if done {
                return;
            }
        }
    })
    .await
    .expect("the review ended");
    seen
}

fn user_texts(body: &Value) -> Vec<String> {
    body["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["role"] == "user")
        .map(|item| {
            item["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect()
}

fn exited(events: &[Arc<ThreadEvent>]) -> ExitedReviewModeItem {
    events
        .iter()
        .find_map(|e| match &e.msg {
            ThreadEventMsg::ItemCompleted(done) => match &done.item {
                ThreadItem::ExitedReviewMode(item) => Some(ExitedReviewModeItem::clone(item)),
                _ => None,
            },
            _ => None,
        })
        .expect("an exited_review_mode item")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_review_of_uncommitted_changes_sees_exactly_them_and_leaves_a_short_record() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    repository(home.workspace());
    // Project instructions, committed (so not part of the change) and global.
    std::fs::write(home.workspace().join("AGENTS.md"), "Always say hi.\n").unwrap();
    git(home.workspace(), &["add", "AGENTS.md"]);
    git(
        home.workspace(),
        &["commit", "-q", "-m", "instructions", "--", "AGENTS.md"],
    );
    std::fs::write(home.path().join("AGENTS.md"), "Globally, say hi.\n").unwrap();
    home.write_config(&format!(
        "developer_instructions = \"be terse\"\n{}",
        TestHome::default_config(&server.base_url())
    ));
    server.push_all([
        MockResponse::text_turn(format!("```json\n{FINDINGS}\n```")),
        MockResponse::text_turn("ok"),
    ]);
    let manager = manager();
    let thread = manager.start(layers(&home).load().unwrap()).await.unwrap();

    let events = review(&thread, ReviewTarget::UncommittedChanges).await;
    let output = exited(&events).output.expect("findings");
    assert_eq!(output.overall_correctness, "patch is incorrect");
    assert_eq!(output.findings[0].title, "Handle the empty list");
    assert!(matches!(
        events.last().unwrap().msg,
        ThreadEventMsg::TurnComplete(_)
    ));

    let asked = &server.requests()[0].body;
    assert_eq!(asked["instructions"], REVIEW_PROMPT);
    let input = asked["input"].as_array().unwrap();
    assert_eq!(input.len(), 1, "only the review request: {input:?}");
    let text = user_texts(asked).remove(0);
    let diff = git(home.workspace(), &["diff", "HEAD"]);
    assert!(text.contains(&diff), "{text}");
    assert!(
        text.contains("+fn untracked() {}"),
        "untracked content: {text}"
    );
    assert!(text.contains("new.rs\t(untracked)"), "{text}");
    for leaked in ["say hi.", "be terse"] {
        assert!(
            !serde_json::to_string(asked).unwrap().contains(leaked),
            "{leaked}"
        );
    }

    // The session's next request holds the rendered result, not the reviewer's prompt.
    let mut turn = thread.start_turn("n".into(), "thanks".into()).unwrap();
    while turn.next().await.is_some() {}
    let next = serde_json::to_string(&server.requests()[1].body).unwrap();
    assert!(next.contains("Handle the empty list"));
    assert!(!next.contains("Review guidelines"));
    assert!(!next.contains("fn untracked"));

    // The reviewer's own session is saved, linked to the parent, and not listed.
    let listed = list_sessions(home.path(), None, 10).unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, thread.id());
    manager.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn base_branch_and_commit_reviews_carry_their_own_diffs() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    repository(home.workspace());
    server.push_all([
        MockResponse::text_turn(FINDINGS),
        MockResponse::text_turn("not json at all"),
    ]);
    let manager = manager();
    let thread = manager.start(layers(&home).load().unwrap()).await.unwrap();
    let ws = home.workspace();

    review(
        &thread,
        ReviewTarget::BaseBranch {
            branch: "main".into(),
        },
    )
    .await;
    let base = git(ws, &["merge-base", "HEAD", "main"]);
    let expected = git(ws, &["diff", base.trim()]);
    assert!(user_texts(&server.requests()[0].body)[0].contains(&expected));

    let head = git(ws, &["rev-parse", "HEAD"]).trim().to_string();
    let events = review(
        &thread,
        ReviewTarget::Commit {
            sha: head.clone(),
            title: None,
        },
    )
    .await;
    let text = user_texts(&server.requests()[1].body).remove(0);
    assert!(text.contains(&git(ws, &["show", "--format=", "--patch", &head])));
    assert!(text.contains("add b"), "the commit's title: {text}");
    assert!(
        !text.contains("todo!"),
        "uncommitted work is not in a commit review"
    );
    // An answer that is not JSON keeps its text.
    let output = exited(&events).output.expect("an output");
    assert!(output.findings.is_empty());
    assert_eq!(output.overall_explanation, "not json at all");
    manager.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outside_a_repository_the_review_fails_clearly() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    let manager = manager();
    let thread = manager.start(layers(&home).load().unwrap()).await.unwrap();
    let events = review(&thread, ReviewTarget::UncommittedChanges).await;
    match &events.last().unwrap().msg {
        ThreadEventMsg::TurnFailed(failed) => {
            assert!(
                failed.message.contains("not inside a git repository"),
                "{}",
                failed.message
            );
        }
        other => panic!("expected a failure, got {other:?}"),
    }
    assert!(exited(&events).output.is_none());
    assert_eq!(server.request_count(), 0);
    manager.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_review_exits_without_findings() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    repository(home.workspace());
    server.push(MockResponse::text_turn(FINDINGS).delay_before(Duration::from_secs(30)));
    let manager = manager();
    let thread = manager.start(layers(&home).load().unwrap()).await.unwrap();
    let after = thread.last_seq();
    let turn = thread
        .submit_review("r".into(), request(ReviewTarget::UncommittedChanges))
        .unwrap();
    let waiting = async {
        while server.request_count() == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(WAIT, waiting)
        .await
        .expect("the reviewer asked the model");
    thread.interrupt(&turn).unwrap();
    let mut events = thread.subscribe(after);
    let mut seen = Vec::new();
    tokio::time::timeout(WAIT, async {
        while let Some(event) = events.next().await {
            let done = event.msg.ends_turn();
            seen.push(event);
            if done {
                return;
            }
        }
    })
    .await
    .expect("the review ended");
    assert!(exited(&seen).output.is_none());
    assert!(matches!(
        &seen.last().unwrap().msg,
        ThreadEventMsg::TurnAborted(a) if a.reason == TurnAbortReason::Interrupted
    ));
    manager.shutdown_all().await;
}
