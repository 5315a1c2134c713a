//! Review mode through both front doors: the MCP `review` tool and `deputy review`, each
//! the real binary against a scripted model, in real git repositories. Judged by what the
//! model is sent (exactly the change, nothing of the session), what the client or the
//! terminal gets back, and how failures are reported.
//!
//! - `mcp`: the `review` tool — targets, isolation, answers, events, cancellation, errors;
//! - `cli`: `deputy review` — the text and `--json` views, flags, exit statuses;
//! - `sdk`: the tool through the TypeScript and Python MCP SDKs, which validate results
//!   against the output schema.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

mod common;
#[allow(dead_code, reason = "the review tests use part of the MCP harness")]
#[path = "mcp/harness.rs"]
mod harness;

#[path = "review/cli.rs"]
mod cli;
#[path = "review/mcp.rs"]
mod mcp;
#[path = "review/sdk.rs"]
mod sdk;

use std::path::Path;
use std::process::Command;

use deputy_test_support::{RecordedRequest, TestHome};
use serde_json::Value;

/// A reviewer's answer: one finding, the patch judged incorrect.
const FINDINGS: &str = r#"{"findings":[{"title":"Handle the empty list","body":"`first()` is unwrapped.","confidence_score":0.9,"priority":1,"code_location":{"absolute_file_path":"/w/lib.rs","line_range":{"start":2,"end":2}}}],"overall_correctness":"patch is incorrect","overall_explanation":"It panics on empty input.","overall_confidence_score":0.8}"#;

/// Runs git in `dir` the way deputy does under `home` (its private `HOME`, so no user
/// config applies), with an identity, and returns its stdout. Exit status 1 is accepted
/// for `diff --no-index`, which uses it to say the files differ.
fn git(home: &TestHome, dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .env("HOME", home.path().join("home"))
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
        .args(args)
        .output()
        .expect("git runs");
    let accepted =
        out.status.success() || (args.contains(&"--no-index") && out.status.code() == Some(1));
    assert!(
        accepted,
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Turns the home's workspace into a repository: `main` with `lib.rs` and a `.gitignore`,
/// a `feature` branch with one commit ("add b"), a later commit on `main` the feature
/// does not have, and on `feature` uncommitted work of every kind — an unstaged edit, a
/// staged new file, an untracked file and an ignored one.
fn repository(home: &TestHome) {
    let ws = home.workspace();
    let git = |args: &[&str]| git(home, ws, args);
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(ws.join("lib.rs"), "fn a() {}\n").unwrap();
    std::fs::write(ws.join(".gitignore"), "*.log\n").unwrap();
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "first"]);
    git(&["checkout", "-q", "-b", "feature"]);
    std::fs::write(ws.join("lib.rs"), "fn a() {}\nfn b() {}\n").unwrap();
    git(&["commit", "-q", "-am", "add b"]);
    git(&["checkout", "-q", "main"]);
    std::fs::write(ws.join("main_only.rs"), "fn on_main() {}\n").unwrap();
    git(&["add", "main_only.rs"]);
    git(&["commit", "-q", "-m", "main moves on"]);
    git(&["checkout", "-q", "feature"]);
    std::fs::write(ws.join("lib.rs"), "fn a() {}\nfn b() { todo!() }\n").unwrap();
    std::fs::write(ws.join("staged.rs"), "fn staged() {}\n").unwrap();
    git(&["add", "staged.rs"]);
    std::fs::write(ws.join("new.rs"), "fn untracked() {}\n").unwrap();
    std::fs::write(ws.join("build.log"), "ignored output\n").unwrap();
}

/// The diff an uncommitted-changes review must be given: tracked changes against `HEAD`,
/// then each untracked file as an addition.
fn uncommitted_diff(home: &TestHome) -> String {
    let ws = home.workspace();
    git(home, ws, &["diff", "HEAD"])
        + &git(
            home,
            ws,
            &["diff", "--no-index", "--", "/dev/null", "new.rs"],
        )
}

/// The diff a review against `main` must be given: from the merge base.
fn base_branch_diff(home: &TestHome) -> String {
    let ws = home.workspace();
    let base = git(home, ws, &["merge-base", "HEAD", "main"]);
    git(home, ws, &["diff", base.trim()])
}

/// The diff of commit `sha`.
fn commit_diff(home: &TestHome, sha: &str) -> String {
    git(
        home,
        home.workspace(),
        &["show", "--format=", "--patch", sha],
    )
}

/// The id of the commit titled "add b".
fn feature_commit(home: &TestHome) -> String {
    git(home, home.workspace(), &["rev-parse", "HEAD"])
        .trim()
        .to_string()
}

/// The texts of the user messages of a Responses request.
fn user_texts(request: &RecordedRequest) -> Vec<String> {
    harness::messages(request)
        .into_iter()
        .filter(|(role, _)| role == "user")
        .map(|(_, text)| text)
        .collect()
}

/// The reviewer's one message, checking that it is the request's only input.
fn review_input(request: &RecordedRequest) -> String {
    let input = request.body["input"].as_array().expect("an input array");
    assert_eq!(input.len(), 1, "only the review request: {input:?}");
    user_texts(request).remove(0)
}

/// The diff inside the review input's ```diff fence; `None` when it has none.
fn fenced_diff(input: &str) -> Option<&str> {
    let (_, rest) = input.split_once("```diff\n")?;
    let (diff, _) = rest.rsplit_once("```\n")?;
    Some(diff)
}

/// The findings object [`FINDINGS`] stands for.
fn findings_value() -> Value {
    serde_json::from_str(FINDINGS).unwrap()
}
