//! A repository's configured programs — a filter driver named by `.gitattributes`,
//! `gpg.program` with `log.showSignature`, `core.fsmonitor`, `diff.external`, a textconv —
//! never run outside the sandbox: not in a review, through any of its three doors
//! (`deputy review`, the MCP `review` tool, the app-server's `review/start`), and not in
//! the git commands `untrusted` runs without asking. Each program would leave a mark outside
//! the workspace; every test first proves that plain git does run them.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

#[allow(dead_code, reason = "these tests use part of the app-server harness")]
#[path = "app_server/harness.rs"]
mod app_server_harness;
mod common;
#[allow(dead_code, reason = "these tests use part of the MCP harness")]
#[path = "mcp/harness.rs"]
mod mcp_harness;
#[path = "common/outside.rs"]
mod outside;
#[path = "common/sandbox_server.rs"]
mod sandbox_server;

use deputy_test_support::{
    HostileRepository, MockModelServer, MockResponse, RecordedRequest, TestHome,
};
use serde_json::json;

use common::{deputy, finish};
use outside::outside_dir;
use sandbox_server::{Server, WAIT, exit_code, shell, shell_command};

/// A reviewer's answer with no findings.
const NO_FINDINGS: &str = r#"{"findings":[],"overall_correctness":"patch is correct","overall_explanation":"Fine.","overall_confidence_score":0.5}"#;

/// Returns early (with the reason printed) where the kernel cannot confine commands: a
/// review then refuses to run at all.
macro_rules! require_sandbox {
    () => {
        if let Err(reason) = deputy_sandbox::probe() {
            deputy_test_support::skip_without_sandbox(reason);
            return;
        }
    };
}

/// The hostile repository in `workspace`, proven hostile; its marks go to `outside`.
fn hostile(workspace: &std::path::Path, outside: &std::path::Path) -> HostileRepository {
    let repo = HostileRepository::create(workspace, outside);
    repo.assert_git_runs_its_programs();
    repo
}

/// Asserts the reviewer was sent the worktree change (`request`) or the signed commit's.
fn assert_sent(request: &RecordedRequest, expected: &str) {
    let body = request.body.to_string();
    assert!(body.contains(expected), "{expected} missing from {body}");
}

/// Asserts no program of `repo` ran.
fn assert_none_ran(repo: &HostileRepository) {
    assert_eq!(repo.programs_that_ran(), Vec::<String>::new());
}

#[test]
fn deputy_review_runs_none_of_the_repository_s_programs() {
    require_sandbox!();
    let model = MockModelServer::start();
    let home = TestHome::new(&model.base_url());
    let outside = outside_dir();
    let repo = hostile(home.workspace(), outside.path());
    model.push_all([NO_FINDINGS, NO_FINDINGS].map(MockResponse::text_turn));

    finish(deputy(&home, &["review"])).assert_code(0);
    finish(deputy(&home, &["review", "--commit", &repo.signed_commit])).assert_code(0);

    assert_none_ran(&repo);
    let requests = model.wait_for_requests(2, WAIT).unwrap();
    assert_sent(&requests[0], "+two");
    assert_sent(&requests[0], "+new file");
    assert_sent(&requests[1], "+signed");
    assert_sent(&requests[1], "signed work");
}

#[test]
fn the_mcp_review_tool_runs_none_of_the_repository_s_programs() {
    require_sandbox!();
    let mcp = mcp_harness::Mcp::start();
    let outside = outside_dir();
    let repo = hostile(mcp.home.workspace(), outside.path());
    mcp.model
        .push_all([NO_FINDINGS, NO_FINDINGS].map(MockResponse::text_turn));

    for target in [json!("uncommitted"), json!({"commit": repo.signed_commit})] {
        let result = mcp.result(mcp.call("review", json!({"target": target})));
        assert_eq!(result.get("isError"), None, "{target}: {result}");
    }

    assert_none_ran(&repo);
    let requests = mcp.model.wait_for_requests(2, WAIT).unwrap();
    assert_sent(&requests[0], "+two");
    assert_sent(&requests[0], "+new file");
    assert_sent(&requests[1], "+signed");
}

#[test]
fn the_app_server_review_runs_none_of_the_repository_s_programs() {
    require_sandbox!();
    let server = app_server_harness::AppServer::start();
    let outside = outside_dir();
    let repo = hostile(server.home.workspace(), outside.path());
    let thread = server.start_thread();
    let targets = [
        json!({"type": "uncommittedChanges"}),
        json!({"type": "commit", "sha": repo.signed_commit}),
    ];
    for target in targets {
        server.model.push(MockResponse::text_turn(NO_FINDINGS));
        let id = server.request(
            "review/start",
            json!({"threadId": thread, "target": target}),
        );
        let turn = app_server_harness::id_of(&server.result(id)["turn"]);
        let completed = server.turn_completed(&turn);
        assert_eq!(completed["turn"]["status"], "completed", "{completed}");
    }

    assert_none_ran(&repo);
    let requests = server.model.wait_for_requests(2, WAIT).unwrap();
    assert_sent(&requests[0], "+two");
    assert_sent(&requests[1], "+signed");
}

/// A command under `workspace-write` may create `.git` where there was none, with a
/// configuration and attributes of its choosing; the next review still runs nothing of it.
#[test]
fn a_review_runs_nothing_a_sandboxed_command_configured() {
    require_sandbox!();
    let server = Server::start(json!({}));
    let outside = outside_dir();
    let mark = outside.path().join("ran");
    let plant = format!(
        "git init -q && printf '#!/bin/sh\\necho ran >> {mark}\\ncat\\n' > prog.sh && chmod +x prog.sh \
         && git config filter.x.clean \"$PWD/prog.sh\" && git config core.fsmonitor \"$PWD/prog.sh\" \
         && echo '* filter=x' > .gitattributes && echo planted > new.txt",
        mark = mark.display()
    );
    let told = server.run(
        "workspace-write",
        "never",
        &[shell_command("plant", &plant)],
    );
    assert_eq!(exit_code(&told[0]), 0, "{}", told[0]);
    // Proof that the planted configuration is live: plain git runs the filter.
    let plain = std::process::Command::new("git")
        .args(["diff", "--no-index", "--", "/dev/null", "new.txt"])
        .current_dir(&server.ws)
        .output()
        .unwrap();
    assert_eq!(plain.status.code(), Some(1), "{plain:?}");
    assert!(
        mark.exists(),
        "the planted filter did not run under plain git"
    );
    std::fs::remove_file(&mark).unwrap();

    server.model.push(MockResponse::text_turn(NO_FINDINGS));
    let id = server.client.request(
        "tools/call",
        json!({"name": "review", "arguments": {"cwd": server.ws}}),
    );
    let response = server.client.wait_response(id, WAIT).unwrap();
    assert_eq!(response["result"].get("isError"), None, "{response}");

    assert!(!mark.exists(), "a planted program ran during the review");
    let requests = server.model.requests();
    assert_sent(requests.last().unwrap(), "+planted");
}

/// `git status` is read-only only as long as the repository says so: `untrusted` runs it
/// unasked where it is confined read-only, and asks first where it would run unconfined.
#[test]
fn untrusted_runs_git_unasked_only_where_it_is_confined() {
    require_sandbox!();
    let server = Server::start(json!({"elicitation": {}}));
    let outside = outside_dir();
    let repo = hostile(&server.ws, outside.path());

    let id = server.start_turn("read-only", "untrusted", &[shell("ro", &["git", "status"])]);
    let asked = server.finish_turn_answering(id, "denied");
    assert_eq!(asked.len(), 0, "{asked:?}");
    let told = server.told_after(0, "ro");
    assert_eq!(exit_code(&told), 0, "{told}");
    assert!(told.contains("tracked.txt"), "{told}");
    assert_none_ran(&repo);

    let id = server.start_turn(
        "danger-full-access",
        "untrusted",
        &[shell("full", &["git", "status"])],
    );
    let asked = server.finish_turn_answering(id, "denied");
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["params"]["codex_call_id"], "full", "{}", asked[0]);
    assert_eq!(
        asked[0]["params"]["codex_command"],
        json!(["git", "status"]),
        "{}",
        asked[0]
    );
    assert_none_ran(&repo);
}
