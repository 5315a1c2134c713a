//! Calls that cannot run: each is a tool result with `isError`, never a hang or a
//! protocol error, and the server goes on serving.

use deputy_test_support::MockResponse;
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::harness::{Mcp, text_of};

#[test]
fn an_unknown_tool_is_an_error_result_naming_it() {
    let mcp = Mcp::start();
    let result = mcp.result(mcp.call("shell", json!({"prompt": "x"})));
    assert_eq!(
        result,
        json!({"content": [{"type": "text", "text": "Unknown tool 'shell'"}], "isError": true})
    );
}

#[test]
fn a_call_without_prompt_is_an_error_result() {
    let mcp = Mcp::start();
    for tool in ["codex", "codex-reply"] {
        let result = mcp.result(mcp.call(tool, json!({"model": "m"})));
        assert_eq!(result["isError"], true, "{tool}: {result}");
        assert!(text_of(&result).contains("prompt"), "{tool}: {result}");
    }
    assert_eq!(mcp.model.request_count(), 0);
}

#[test]
fn codex_reply_to_an_unknown_thread_says_session_not_found() {
    let mcp = Mcp::start();
    let id = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";
    let result = mcp.result(mcp.call("codex-reply", json!({"threadId": id, "prompt": "hi"})));
    let text = format!("Session not found for thread_id: {id}");
    assert_eq!(
        result,
        json!({
            "content": [{"type": "text", "text": text}],
            "structuredContent": {"threadId": id, "content": text},
            "isError": true,
        })
    );
}

#[test]
fn codex_reply_with_a_malformed_thread_id_says_so() {
    let mcp = Mcp::start();
    let result = mcp.result(mcp.call(
        "codex-reply",
        json!({"threadId": "not-a-thread", "prompt": "hi"}),
    ));
    assert_eq!(result["isError"], true, "{result}");
    let text = text_of(&result);
    assert!(
        text.contains("not-a-thread") && text.contains("thread_id"),
        "{text}"
    );

    let neither = mcp.result(mcp.call("codex-reply", json!({"prompt": "hi"})));
    assert_eq!(neither["isError"], true, "{neither}");
    assert!(text_of(&neither).contains("threadId"), "{neither}");
}

#[test]
fn a_missing_cwd_is_a_clear_error_and_a_relative_one_resolves_against_the_servers() {
    let mcp = Mcp::start();
    let missing = mcp.home.path().join("no-such-dir");
    let result = mcp.result(mcp.call(
        "codex",
        json!({"prompt": "hi", "cwd": missing.to_string_lossy()}),
    ));
    assert_eq!(result["isError"], true, "{result}");
    let text = text_of(&result);
    assert!(
        text.contains(&*missing.to_string_lossy()) && text.contains("does not exist"),
        "{text}"
    );
    assert_eq!(mcp.model.request_count(), 0);

    std::fs::create_dir(mcp.home.workspace().join("sub")).expect("create sub/");
    mcp.model.push(MockResponse::text_turn("in sub"));
    let id = mcp.call("codex", json!({"prompt": "hi", "cwd": "sub"}));
    assert_eq!(text_of(&mcp.result(id)), "in sub");
    let configured = mcp.wait_event(id, "session_configured");
    let expected = mcp.home.workspace().join("sub");
    let expected = expected.canonicalize().unwrap_or(expected);
    assert_eq!(configured["msg"]["cwd"], json!(expected));
}
