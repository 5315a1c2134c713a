//! Turns that run to their end: the events, the result, the history across
//! `codex-reply`, progress notifications, and approvals for a client that cannot be asked.

use deputy_test_support::MockResponse;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::harness::{Mcp, function_outputs, messages, shell, text_of, thread_of};

#[test]
fn codex_streams_events_then_answers_with_the_final_message() {
    let mcp = Mcp::start();
    mcp.model
        .push(MockResponse::text_turn("Hello from the model."));

    let id = mcp.call("codex", json!({"prompt": "say hello"}));
    let result = mcp.result(id);
    let thread_id = thread_of(&result);
    assert_eq!(
        result,
        json!({
            "content": [{"type": "text", "text": "Hello from the model."}],
            "structuredContent": {"threadId": thread_id, "content": "Hello from the model."},
        })
    );

    let events = mcp.events(id);
    let types = mcp.event_types(id);
    assert_eq!(
        types.first().map(String::as_str),
        Some("session_configured")
    );
    assert_eq!(types.get(1).map(String::as_str), Some("task_started"));
    assert_eq!(types.last().map(String::as_str), Some("task_complete"));
    let order: Vec<&str> = types
        .iter()
        .map(String::as_str)
        .filter(|t| ["user_message", "agent_message", "token_count"].contains(t))
        .collect();
    assert_eq!(order, ["user_message", "agent_message", "token_count"]);
    assert_eq!(
        events[0]["_meta"],
        json!({"requestId": id, "threadId": thread_id})
    );
    assert_eq!(events[0]["id"], "");
    assert_eq!(events[0]["msg"]["session_id"], thread_id.as_str());
    for event in &events[1..] {
        assert_eq!(
            event["_meta"],
            json!({"requestId": id, "threadId": thread_id})
        );
        assert_eq!(event["id"], id.to_string(), "{event}");
    }
    let complete = events.last().cloned().unwrap_or_default();
    assert_eq!(
        complete["msg"]["last_agent_message"],
        "Hello from the model."
    );

    let answered_at = mcp
        .position(|m| m["id"] == json!(id) && m.get("result").is_some())
        .unwrap_or_default();
    let last_event_at = mcp
        .position(|m| m["method"] == "codex/event" && m["params"]["msg"]["type"] == "task_complete")
        .unwrap_or(usize::MAX);
    assert!(
        last_event_at < answered_at,
        "task_complete must precede the result"
    );
}

#[test]
fn codex_reply_continues_the_thread_with_its_history() {
    let mcp = Mcp::start();
    mcp.model.push_all([
        MockResponse::text_turn("first answer"),
        MockResponse::text_turn("second answer"),
        MockResponse::text_turn("third answer"),
    ]);
    let first = mcp.result(mcp.call("codex", json!({"prompt": "first question"})));
    let thread_id = thread_of(&first);

    let reply = mcp.call(
        "codex-reply",
        json!({"threadId": thread_id, "prompt": "second question"}),
    );
    let second = mcp.result(reply);
    assert_eq!(
        second["structuredContent"],
        json!({"threadId": thread_id, "content": "second answer"})
    );
    assert_eq!(
        mcp.event_types(reply).first().map(String::as_str),
        Some("task_started")
    );
    assert!(
        mcp.events(reply)
            .iter()
            .all(|e| e["_meta"] == json!({"requestId": reply, "threadId": thread_id}))
    );

    let alias = mcp.result(mcp.call(
        "codex-reply",
        json!({"conversationId": thread_id, "prompt": "third question"}),
    ));
    assert_eq!(text_of(&alias), "third answer");
    assert_eq!(thread_of(&alias), thread_id);

    let requests = mcp.model.requests();
    let conversation = |n: usize| -> Vec<(String, String)> {
        messages(&requests[n])
            .into_iter()
            .filter(|(role, _)| role == "user" || role == "assistant")
            .collect()
    };
    let said = |role: &str, text: &str| (role.to_string(), text.to_string());
    assert_eq!(
        conversation(1),
        [
            said("user", "first question"),
            said("assistant", "first answer"),
            said("user", "second question"),
        ]
    );
    assert_eq!(
        conversation(2),
        [
            said("user", "first question"),
            said("assistant", "first answer"),
            said("user", "second question"),
            said("assistant", "second answer"),
            said("user", "third question"),
        ]
    );
}

#[test]
fn progress_notifications_carry_the_calls_token_and_name_the_command() {
    let mcp = Mcp::start();
    mcp.model.push_all([
        shell("call-echo", "echo progress-check"),
        MockResponse::text_turn("echoed"),
        MockResponse::text_turn("quiet"),
    ]);
    let id = mcp.call_with_progress("codex", json!({"prompt": "echo"}), json!("tok-1"));
    let thread_id = thread_of(&mcp.result(id));

    let progress = mcp.client.notifications("notifications/progress");
    assert!(!progress.is_empty(), "no progress notifications");
    let mut last = 0.0;
    for notification in &progress {
        let params = &notification["params"];
        assert_eq!(params["progressToken"], "tok-1", "{params}");
        let value = params["progress"].as_f64().unwrap_or_default();
        assert!(value > last, "progress must increase: {progress:?}");
        last = value;
    }
    let texts: Vec<&str> = progress
        .iter()
        .filter_map(|n| n["params"]["message"].as_str())
        .collect();
    assert!(
        texts
            .iter()
            .any(|t| t.contains("running `echo progress-check`")),
        "{texts:?}"
    );

    let quiet = mcp.call(
        "codex-reply",
        json!({"threadId": thread_id, "prompt": "again"}),
    );
    assert_eq!(text_of(&mcp.result(quiet)), "quiet");
    assert_eq!(
        mcp.client.notifications("notifications/progress").len(),
        progress.len(),
        "a call without a progress token got progress notifications"
    );
}

#[test]
fn a_client_without_capabilities_runs_an_approval_free_turn() {
    let mcp = Mcp::start();
    mcp.model.push_all([
        shell("call-touch", "touch made-by-agent.txt"),
        MockResponse::text_turn("File made."),
    ]);
    let result = mcp.result(mcp.call(
        "codex",
        json!({"prompt": "make a file", "approval-policy": "never", "sandbox": "danger-full-access"}),
    ));
    assert_eq!(text_of(&result), "File made.");
    assert_eq!(result.get("isError"), None);
    assert!(mcp.home.workspace().join("made-by-agent.txt").is_file());
    assert!(
        mcp.client
            .messages()
            .iter()
            .all(|m| m["method"] != "elicitation/create")
    );
}

#[test]
fn a_command_needing_approval_is_denied_when_the_client_cannot_be_asked() {
    let mcp = Mcp::start();
    mcp.model.push_all([
        shell("call-touch", "touch needs-approval.txt"),
        MockResponse::text_turn("Could not."),
    ]);
    let id = mcp.call(
        "codex",
        json!({"prompt": "make a file", "approval-policy": "untrusted"}),
    );
    assert_eq!(text_of(&mcp.result(id)), "Could not.");
    assert!(!mcp.home.workspace().join("needs-approval.txt").exists());
    assert!(
        mcp.client
            .messages()
            .iter()
            .all(|m| m["method"] != "elicitation/create")
    );

    let outputs = function_outputs(&mcp.model.requests()[1]);
    assert_eq!(outputs.len(), 1);
    assert!(
        outputs[0].1.contains("elicitation"),
        "model was told: {}",
        outputs[0].1
    );
    let warned = mcp.events(id).iter().any(|e: &Value| {
        e["msg"]["type"] == "warning"
            && e["msg"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("elicitation"))
    });
    assert!(warned, "no warning event: {:?}", mcp.event_types(id));
}

#[test]
fn progress_while_a_question_is_open_says_what_waits_for_approval_and_for_how_long() {
    let mcp = Mcp::spawn();
    deputy_test_support::McpSession::initialize(&mcp.client, json!({"elicitation": {}}));
    mcp.home.write_config(
        &deputy_test_support::TestHome::default_config(&mcp.model.base_url()).replace(
            "approval_policy = \"never\"",
            "approval_policy = \"untrusted\"",
        ),
    );
    mcp.model.push_all([
        shell("call-touch", "touch waited.txt"),
        MockResponse::text_turn("touched"),
    ]);
    let id = mcp.call_with_progress("codex", json!({"prompt": "touch"}), json!("tok-wait"));
    let question = mcp
        .client
        .wait_for(
            |m| m["method"] == "elicitation/create",
            crate::harness::WAIT,
        )
        .unwrap_or_else(|e| panic!("{e}"));
    // Unanswered, the question is reported again by the periodic progress, with its age.
    let tick = mcp
        .client
        .wait_for(
            |m| {
                m["method"] == "notifications/progress"
                    && m["params"]["message"].as_str().is_some_and(|t| {
                        t.starts_with("waiting for approval: `touch waited.txt` (")
                            && t.ends_with("s)")
                    })
            },
            crate::harness::WAIT,
        )
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(tick["params"]["progressToken"], "tok-wait");
    mcp.client
        .respond(question["id"].clone(), json!({"decision": "approved"}));
    assert_eq!(text_of(&mcp.result(id)), "touched");
    assert!(mcp.home.workspace().join("waited.txt").exists());
}

#[test]
fn a_calls_config_sets_reasoning_verbosity_and_the_thread_is_the_cache_key() {
    let mcp = Mcp::start();
    mcp.model.push(MockResponse::text_turn("Hi."));
    let result = mcp.result(mcp.call(
        "codex",
        json!({"prompt": "hello", "model": "gpt-5-codex", "config": {
            "model_reasoning_effort": "low",
            "model_reasoning_summary": "detailed",
            "model_verbosity": "high",
        }}),
    ));
    let thread_id = thread_of(&result);
    let requests = mcp.model.requests();
    let body = &requests[0].body;
    assert_eq!(
        body["reasoning"],
        json!({"effort": "low", "summary": "detailed"})
    );
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(body["text"], json!({"verbosity": "high"}));
    assert_eq!(body["prompt_cache_key"], thread_id.as_str());
}
