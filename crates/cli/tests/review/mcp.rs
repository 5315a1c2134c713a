//! The MCP `review` tool, as a client calls it.

use std::time::Duration;

use deputy_core::review::REVIEW_PROMPT;
use deputy_test_support::MockResponse;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::harness::{Mcp, WAIT, text_of, thread_of};
use crate::{
    FINDINGS, base_branch_diff, commit_diff, feature_commit, fenced_diff, findings_value,
    repository, review_input, uncommitted_diff, user_texts,
};

/// How long a cancelled call is watched for a result it must never get.
const NO_RESULT_WATCH: Duration = Duration::from_millis(500);

/// `result` without its `threadId`: the review output object.
fn output_of(result: &Value) -> Value {
    let mut output = result["structuredContent"].clone();
    output
        .as_object_mut()
        .expect("structured content")
        .remove("threadId");
    output
}

#[test]
fn each_target_sends_the_reviewer_exactly_its_change() {
    let mcp = Mcp::start();
    repository(&mcp.home);
    let sha = feature_commit(&mcp.home);
    mcp.model
        .push_all((0..4).map(|_| MockResponse::text_turn(FINDINGS)));

    for target in [
        json!(null),
        json!("uncommitted"),
        json!({"base_branch": "main"}),
        json!({"commit": sha}),
    ] {
        let mut arguments = json!({});
        if !target.is_null() {
            arguments["target"] = target.clone();
        }
        let result = mcp.result(mcp.call("review", arguments));
        assert_eq!(result.get("isError"), None, "{target}: {result}");
    }
    let requests = mcp.model.wait_for_requests(4, WAIT).unwrap();
    let inputs: Vec<String> = requests.iter().map(review_input).collect();

    // No target means the uncommitted changes: staged, unstaged and untracked, not ignored.
    let uncommitted = uncommitted_diff(&mcp.home);
    for input in &inputs[..2] {
        assert_eq!(fenced_diff(input), Some(uncommitted.as_str()), "{input}");
        assert!(input.contains("+fn staged() {}"), "staged: {input}");
        assert!(input.contains("+fn untracked() {}"), "untracked: {input}");
        assert!(!input.contains("ignored output"), "ignored: {input}");
    }
    // The base branch: from the merge base, so not what `main` did since.
    let base = base_branch_diff(&mcp.home);
    assert_eq!(
        fenced_diff(&inputs[2]),
        Some(base.as_str()),
        "{}",
        inputs[2]
    );
    assert!(!inputs[2].contains("on_main"), "{}", inputs[2]);
    assert!(inputs[2].contains("`main`"), "{}", inputs[2]);
    // One commit: its own change, named by its title, without the work in progress.
    let commit = commit_diff(&mcp.home, &sha);
    assert_eq!(
        fenced_diff(&inputs[3]),
        Some(commit.as_str()),
        "{}",
        inputs[3]
    );
    assert!(inputs[3].contains("add b"), "{}", inputs[3]);
    assert!(!inputs[3].contains("todo!"), "{}", inputs[3]);
}

#[test]
fn a_custom_review_sends_the_instructions_and_no_diff() {
    let mcp = Mcp::start();
    repository(&mcp.home);
    mcp.model.push(MockResponse::text_turn(FINDINGS));
    let result = mcp.result(mcp.call(
        "review",
        json!({"target": {"custom": "Check lib.rs for panics"}, "prompt": "Be brief."}),
    ));
    assert_eq!(result.get("isError"), None, "{result}");
    let input = review_input(&mcp.model.wait_for_requests(1, WAIT).unwrap()[0]);
    assert!(
        input.starts_with("Review Check lib.rs for panics in the repository at"),
        "{input}"
    );
    assert!(input.contains("Also: Be brief."), "{input}");
    assert_eq!(fenced_diff(&input), None, "{input}");
}

#[test]
fn the_reviewer_sees_no_session_instructions_and_the_session_keeps_only_the_result() {
    let mcp = Mcp::start();
    repository(&mcp.home);
    let ws = mcp.home.workspace();
    // Project instructions (committed, so not part of the change), global ones, and
    // developer instructions: all for the session, none for the reviewer.
    std::fs::write(ws.join("AGENTS.md"), "Always say hi.\n").unwrap();
    crate::git(&mcp.home, ws, &["add", "AGENTS.md"]);
    crate::git(
        &mcp.home,
        ws,
        &["commit", "-q", "-m", "instructions", "--", "AGENTS.md"],
    );
    std::fs::write(mcp.home.path().join("AGENTS.md"), "Globally, say hi.\n").unwrap();
    mcp.home.write_config(&format!(
        "developer_instructions = \"be terse\"\n{}",
        deputy_test_support::TestHome::default_config(&mcp.model.base_url())
    ));
    mcp.model.push_all([
        MockResponse::text_turn(format!("```json\n{FINDINGS}\n```")),
        MockResponse::text_turn("you're welcome"),
    ]);

    let review = mcp.result(mcp.call("review", json!({"model": "review-model"})));
    let thread_id = thread_of(&review);
    let reply = mcp.result(mcp.call(
        "codex-reply",
        json!({"threadId": thread_id, "prompt": "thanks"}),
    ));
    assert_eq!(text_of(&reply), "you're welcome");

    let requests = mcp.model.wait_for_requests(2, WAIT).unwrap();
    let asked = &requests[0].body;
    assert_eq!(asked["instructions"], REVIEW_PROMPT);
    assert_eq!(asked["model"], "review-model");
    review_input(&requests[0]);
    let sent = asked.to_string();
    for leaked in ["say hi.", "be terse"] {
        assert!(
            !sent.contains(leaked),
            "{leaked} reached the reviewer: {sent}"
        );
    }

    // The session's next request: its own instructions, the review's result, and
    // nothing of the reviewer's prompt, input or model.
    let next = &requests[1];
    assert_eq!(next.body["model"], "mock-model");
    assert_ne!(next.body["instructions"], REVIEW_PROMPT);
    let whole = next.body.to_string();
    assert!(whole.contains("be terse"), "{whole}");
    assert!(whole.contains("Always say hi."), "{whole}");
    assert_eq!(user_texts(next).last().map(String::as_str), Some("thanks"));
    assert!(whole.contains("Handle the empty list"), "{whole}");
    assert!(!whole.contains("Review guidelines"), "{whole}");
    assert!(!whole.contains("fn untracked"), "{whole}");
}

#[test]
fn fenced_bare_and_unreadable_answers_become_the_structured_result() {
    let mcp = Mcp::start();
    repository(&mcp.home);
    mcp.model.push_all([
        MockResponse::text_turn(FINDINGS),
        MockResponse::text_turn(format!("Here is my review.\n```json\n{FINDINGS}\n```\n")),
        MockResponse::text_turn("Looks fine to me, ship it."),
    ]);
    let bare = mcp.result(mcp.call("review", json!({})));
    let fenced = mcp.result(mcp.call("review", json!({})));
    let unreadable = mcp.result(mcp.call("review", json!({})));

    for result in [&bare, &fenced] {
        assert_eq!(output_of(result), findings_value(), "{result}");
        let text = text_of(result);
        assert!(text.contains("**Verdict:** patch is incorrect"), "{text}");
        assert!(
            text.contains("[P1] Handle the empty list — `/w/lib.rs:2`"),
            "{text}"
        );
    }
    assert_eq!(
        output_of(&unreadable),
        json!({
            "findings": [],
            "overall_correctness": "",
            "overall_explanation": "Looks fine to me, ship it.",
            "overall_confidence_score": 0.0
        })
    );
    assert_eq!(unreadable.get("isError"), None, "{unreadable}");
    assert_eq!(text_of(&unreadable), "Looks fine to me, ship it.");
}

#[test]
fn the_result_and_events_carry_the_review() {
    let mcp = Mcp::start();
    repository(&mcp.home);
    mcp.model.push(MockResponse::text_turn(FINDINGS));
    let id = mcp.call_with_progress("review", json!({}), json!("review-progress"));
    let result = mcp.result(id);

    let thread_id = thread_of(&result);
    assert_eq!(output_of(&result), findings_value());
    assert_eq!(result["content"][0]["type"], "text");
    assert_eq!(
        text_of(&result),
        "**Verdict:** patch is incorrect (confidence 0.80)\n\n\
         It panics on empty input.\n\n\
         - [P1] Handle the empty list — `/w/lib.rs:2`\n  `first()` is unwrapped."
    );

    let events = mcp.events(id);
    for event in &events {
        assert_eq!(event["_meta"]["threadId"], json!(thread_id), "{event}");
    }
    let types = mcp.event_types(id);
    let at = |kind: &str| {
        types
            .iter()
            .position(|t| t == kind)
            .unwrap_or_else(|| panic!("no {kind} in {types:?}"))
    };
    assert_eq!(types[0], "session_configured");
    assert!(at("task_started") < at("entered_review_mode"), "{types:?}");
    assert!(at("entered_review_mode") < at("agent_message"), "{types:?}");
    assert!(at("agent_message") < at("exited_review_mode"), "{types:?}");
    assert_eq!(
        types.last().map(String::as_str),
        Some("task_complete"),
        "{types:?}"
    );

    let entered = &events[at("entered_review_mode")]["msg"];
    assert_eq!(entered["target"], json!({"type": "uncommitted_changes"}));
    assert_eq!(entered["user_facing_hint"], "the uncommitted changes");
    let exited = &events[at("exited_review_mode")]["msg"];
    assert_eq!(exited["review_output"], findings_value());

    let progress: Vec<String> = mcp
        .client
        .notifications("notifications/progress")
        .iter()
        .filter(|n| n["params"]["progressToken"] == "review-progress")
        .filter_map(|n| n["params"]["message"].as_str().map(str::to_string))
        .collect();
    assert!(
        progress
            .iter()
            .any(|m| m == "reviewing the uncommitted changes"),
        "{progress:?}"
    );
}

#[test]
fn a_cancelled_review_exits_review_mode_without_output_and_gets_no_result() {
    let mcp = Mcp::start();
    repository(&mcp.home);
    mcp.model
        .push(MockResponse::text_turn(FINDINGS).delay_before(Duration::from_secs(30)));
    let id = mcp.call("review", json!({}));
    mcp.wait_event(id, "entered_review_mode");
    mcp.model.wait_for_requests(1, WAIT).unwrap();

    mcp.client.notify(
        "notifications/cancelled",
        json!({"requestId": id, "reason": "test"}),
    );
    let exited = mcp.wait_event(id, "exited_review_mode");
    assert_eq!(exited["msg"]["review_output"], Value::Null);
    let aborted = mcp.wait_event(id, "turn_aborted");
    assert_eq!(aborted["msg"]["reason"], "interrupted");
    assert!(
        mcp.client.wait_response(id, NO_RESULT_WATCH).is_err(),
        "a cancelled call must get no result"
    );
    // The server goes on serving.
    mcp.model.push(MockResponse::text_turn(FINDINGS));
    let next = mcp.result(mcp.call("review", json!({})));
    assert_eq!(output_of(&next), findings_value());
}

#[test]
fn a_review_that_cannot_run_is_an_error_and_the_server_goes_on() {
    let mcp = Mcp::start();
    // The workspace is no repository yet.
    let outside = mcp.result(mcp.call("review", json!({})));
    assert_eq!(outside["isError"], true, "{outside}");
    assert!(
        text_of(&outside).contains("is not inside a git repository"),
        "{outside}"
    );
    assert_eq!(outside.get("structuredContent"), None, "{outside}");

    repository(&mcp.home);
    for (arguments, says) in [
        (
            json!({"target": {"base_branch": "no-such-branch"}}),
            "no-such-branch",
        ),
        (json!({"target": {"commit": "0123abcd"}}), "0123abcd"),
        (
            json!({"target": "everything"}),
            "Invalid arguments for `review`",
        ),
        (
            json!({"target": {"commit": 3}}),
            "Invalid arguments for `review`",
        ),
    ] {
        let result = mcp.result(mcp.call("review", arguments.clone()));
        assert_eq!(result["isError"], true, "{arguments}: {result}");
        assert!(text_of(&result).contains(says), "{arguments}: {result}");
        assert_eq!(result.get("structuredContent"), None, "{result}");
    }
    assert_eq!(mcp.model.request_count(), 0);

    mcp.model.push(MockResponse::text_turn(FINDINGS));
    let fine = mcp.result(mcp.call("review", json!({"target": "uncommitted"})));
    assert_eq!(output_of(&fine), findings_value());
}
