//! Compaction: the model writes a handoff summary, the history becomes the initial
//! context, the user's messages and the summary, and the turn goes on.

use deputy_core::compact::{DEFAULT_COMPACT_PROMPT, SUMMARY_PREFIX};
use deputy_core::rollout::{find_rollout, load_rollout};
use deputy_protocol::{ContextCompactionStatus, EventMsg, ThreadEventMsg, codex_events};
use deputy_test_support::{MockModelServer, MockResponse, RecordedRequest, responses};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::{
    bash_args, chat_home_with, chat_transcript, compaction_items, completed_with,
    completed_with_usage, home_with, layers_at, manager, read_turn, run_turn, start, transcript,
    turn_end, warnings,
};

/// Printed by the first command; must not survive a compaction.
const OLD_OUTPUT: &str = "OLD-TOOL-OUTPUT-4711";

/// A response calling `shell` with `script`, reporting `input_tokens` of usage.
fn call_turn(call_id: &str, script: &str, input_tokens: u64) -> MockResponse {
    MockResponse::sse(vec![
        responses::created("r"),
        responses::function_call(call_id, "shell", bash_args(script).to_string()),
        completed_with_usage(input_tokens, 0, 10, 0),
    ])
}

/// OpenAI's answer to a request longer than the context window.
pub(crate) fn too_long() -> MockResponse {
    MockResponse::status(
        400,
        json!({"error": {
            "message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }}),
    )
}

fn summary_message(summary: &str) -> String {
    format!("user: {SUMMARY_PREFIX}\n{summary}")
}

fn is_summary_request(request: &RecordedRequest, prompt: &str) -> bool {
    transcript(request).last() == Some(&format!("user: {prompt}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reported_usage_past_the_limit_compacts_before_the_next_request_and_the_turn_goes_on() {
    let server = MockModelServer::start();
    // 90 % of 10,000: the first response's 9,500 input tokens are past the limit.
    server.push_all([
        call_turn("call-1", &format!("printf {OLD_OUTPUT}"), 9_500),
        MockResponse::text_turn("SUMMARY-ONE"),
        MockResponse::text_turn("finished"),
    ]);
    let home = home_with(&server, "model_context_window = 10000");
    let manager = manager();
    let thread = start(&manager, &home, home.workspace()).await;

    let events = run_turn(&thread, "do the task").await;

    assert_eq!(completed_with(&events), "finished");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    // The summary request: the whole history, then the compact prompt, no tools.
    let summary_request = transcript(&requests[1]);
    assert!(is_summary_request(&requests[1], DEFAULT_COMPACT_PROMPT));
    assert!(
        summary_request
            .iter()
            .any(|item| item.starts_with("output call-1") && item.contains(OLD_OUTPUT)),
        "{summary_request:?}"
    );
    assert_eq!(requests[1].body["tools"], json!([]));
    // The turn goes on from the summary, without the old output.
    let next = transcript(&requests[2]);
    assert!(next[0].starts_with("developer: <environment_context>"));
    assert_eq!(
        next[1..],
        [
            "user: do the task".to_string(),
            summary_message("SUMMARY-ONE")
        ]
    );
    assert!(!requests[2].raw_body.contains(OLD_OUTPUT));
    assert!(!requests[2].body["tools"].as_array().unwrap().is_empty());

    let items = compaction_items(&events);
    assert_eq!(items.len(), 2, "{items:?}");
    assert_eq!(
        (items[0].0, items[0].2, items[1].0, items[1].2),
        (
            "started",
            ContextCompactionStatus::InProgress,
            "completed",
            ContextCompactionStatus::Completed
        )
    );
    assert_eq!(items[0].1, items[1].1, "one item, started then completed");
    let compacted = events
        .iter()
        .find(|e| {
            matches!(&e.msg, ThreadEventMsg::ItemCompleted(item)
            if matches!(item.item, deputy_protocol::ThreadItem::ContextCompaction(_)))
        })
        .unwrap();
    let codex: Vec<EventMsg> = codex_events(compacted).into_iter().map(|e| e.msg).collect();
    assert_eq!(
        codex,
        [EventMsg::ContextCompacted(
            deputy_protocol::ContextCompactedEvent {}
        )]
    );
    assert!(
        warnings(&events).iter().any(|w| w.contains("compacted")),
        "{:?}",
        warnings(&events)
    );
    manager.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_context_length_error_compacts_and_retries_the_request_once() {
    let server = MockModelServer::start();
    server.push_all([
        call_turn("call-1", &format!("printf {OLD_OUTPUT}"), 0),
        MockResponse::text_turn("first done"),
        too_long(),
        MockResponse::text_turn("SUMMARY-TWO"),
        MockResponse::text_turn("second done"),
    ]);
    let home = home_with(&server, "");
    let manager = manager();
    let thread = start(&manager, &home, home.workspace()).await;

    completed_with(&run_turn(&thread, "first task").await);
    let events = run_turn(&thread, "second task").await;

    assert_eq!(completed_with(&events), "second done");
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    assert_eq!(requests[3].body["input"], {
        // The summary request is the refused one plus the compact prompt.
        let mut input = requests[2].body["input"].as_array().unwrap().clone();
        input.push(json!({"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": DEFAULT_COMPACT_PROMPT}]}));
        json!(input)
    });
    let retry = transcript(&requests[4]);
    assert_eq!(
        retry[1..],
        [
            "user: first task".to_string(),
            "user: second task".to_string(),
            summary_message("SUMMARY-TWO"),
        ]
    );
    assert!(!requests[4].raw_body.contains(OLD_OUTPUT));
    assert_eq!(compaction_items(&events).len(), 2);
    manager.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_servers_context_error_in_words_compacts_too() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::chat_tool_call_turn(
            "call-1",
            "shell",
            bash_args(&format!("printf {OLD_OUTPUT}")),
        ),
        MockResponse::chat_text_turn("first done"),
        // llama.cpp's way of saying it: no OpenAI code, a message.
        MockResponse::status(
            400,
            json!({"error": {
                "code": 400,
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
            }}),
        ),
        MockResponse::chat_text_turn("SUMMARY-CHAT"),
        MockResponse::chat_text_turn("second done"),
    ]);
    let home = chat_home_with(&server, "");
    let manager = manager();
    let thread = start(&manager, &home, home.workspace()).await;

    completed_with(&run_turn(&thread, "first task").await);
    let events = run_turn(&thread, "second task").await;

    assert_eq!(completed_with(&events), "second done");
    let requests = server.requests();
    assert_eq!(requests.len(), 5);
    let summary_request = chat_transcript(&requests[3]);
    assert_eq!(
        summary_request.last(),
        Some(&format!("user: {DEFAULT_COMPACT_PROMPT}"))
    );
    assert!(requests[3].raw_body.contains(OLD_OUTPUT));
    assert!(requests[3].body.get("tools").is_none(), "no tools offered");
    let retry = chat_transcript(&requests[4]);
    assert!(retry[0].starts_with("system: "), "instructions: {retry:?}");
    assert!(retry[1].starts_with("system: <environment_context>"));
    assert_eq!(
        retry[2..],
        [
            "user: first task".to_string(),
            "user: second task".to_string(),
            summary_message("SUMMARY-CHAT"),
        ]
    );
    assert!(!requests[4].raw_body.contains(OLD_OUTPUT));
    manager.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_thread_continues_from_the_compacted_history() {
    let server = MockModelServer::start();
    server.push_all([
        call_turn("call-1", &format!("printf {OLD_OUTPUT}"), 9_500),
        MockResponse::text_turn("SUMMARY-R"),
        MockResponse::text_turn("finished"),
    ]);
    let home = home_with(&server, "model_context_window = 10000");
    let manager = manager();
    let thread = start(&manager, &home, home.workspace()).await;
    let id = thread.id().to_string();
    completed_with(&run_turn(&thread, "do the task").await);
    manager.shutdown_all().await;

    let expected = [
        "user: do the task".to_string(),
        summary_message("SUMMARY-R"),
        "assistant: finished".to_string(),
    ];
    let saved = load_rollout(&find_rollout(home.path(), &id).unwrap()).unwrap();
    assert_eq!(saved.history.len(), 4, "{:?}", saved.history);
    assert!(
        !serde_json::to_string(&saved.history)
            .unwrap()
            .contains(OLD_OUTPUT)
    );

    server.push(MockResponse::text_turn("after resume"));
    let manager = crate::manager();
    let (thread, before) = manager
        .open(&id, &layers_at(&home, home.workspace()))
        .await
        .expect("resume");
    let resumed = read_turn_configured(&thread, before.expect("resumed from disk")).await;
    assert_eq!(resumed, 4, "history_entry_count of the compacted history");
    assert_eq!(
        completed_with(&run_turn(&thread, "next").await),
        "after resume"
    );

    let last = server.requests().pop().unwrap();
    let request = transcript(&last);
    assert_eq!(request[1..4], expected);
    assert_eq!(request[4], "user: next");
    assert!(!last.raw_body.contains(OLD_OUTPUT));
    manager.shutdown_all().await;
}

/// The `history_entry_count` of the `session_configured` after `before`.
async fn read_turn_configured(thread: &deputy_core::Thread, before: u64) -> usize {
    let mut events = thread.subscribe(before);
    let event = events.next().await.unwrap();
    match &event.msg {
        ThreadEventMsg::SessionConfigured(configured) => configured.history_entry_count,
        other => panic!("expected session_configured, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_that_compacts_three_times_still_finishes() {
    let server = MockModelServer::start();
    server.push_all([
        call_turn("call-1", "printf one", 9_500),
        MockResponse::text_turn("S1"),
        call_turn("call-2", "printf two", 9_500),
        MockResponse::text_turn("S2"),
        call_turn("call-3", "printf three", 9_500),
        MockResponse::text_turn("S3"),
        MockResponse::text_turn("finished after three"),
    ]);
    let home = home_with(&server, "model_context_window = 10000");
    let manager = manager();
    let thread = start(&manager, &home, home.workspace()).await;

    let events = run_turn(&thread, "long task").await;

    assert_eq!(completed_with(&events), "finished after three");
    let requests = server.requests();
    assert_eq!(requests.len(), 7);
    for at in [1, 3, 5] {
        assert!(
            is_summary_request(&requests[at], DEFAULT_COMPACT_PROMPT),
            "request {at} asks for a summary"
        );
    }
    // Each summary builds on the one before.
    assert!(transcript(&requests[5]).contains(&summary_message("S2")));
    assert_eq!(
        transcript(&requests[6])[1..],
        ["user: long task".to_string(), summary_message("S3")]
    );
    assert_eq!(compaction_items(&events).len(), 6);
    manager.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_on_request_runs_as_a_turn_of_its_own_with_the_configured_prompt() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::text_turn("answered"),
        MockResponse::text_turn("MANUAL-SUMMARY"),
        MockResponse::text_turn("next answer"),
    ]);
    let home = home_with(&server, "compact_prompt = \"Summarize, please.\"");
    let manager = manager();
    let thread = start(&manager, &home, home.workspace()).await;
    completed_with(&run_turn(&thread, "question").await);

    let after = thread.last_seq();
    let turn_id = thread.submit_compact("compact".into()).expect("submit");
    let events = read_turn(&thread, after, &turn_id).await;

    let kinds: Vec<&str> = events
        .iter()
        .map(|e| match &e.msg {
            ThreadEventMsg::TurnStarted(_) => "turn_started",
            ThreadEventMsg::ItemStarted(_) => "item_started",
            ThreadEventMsg::ItemCompleted(_) => "item_completed",
            ThreadEventMsg::TokenCount(_) => "token_count",
            ThreadEventMsg::Warning(_) => "warning",
            ThreadEventMsg::TurnComplete(_) => "turn_complete",
            other => panic!("unexpected event {other:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "turn_started",
            "item_started",
            "token_count",
            "item_completed",
            "warning",
            "turn_complete"
        ]
    );
    assert!(
        events
            .iter()
            .all(|e| e.turn_id.as_deref() == Some(&turn_id))
    );
    assert_eq!(compaction_items(&events).len(), 2);
    let ThreadEventMsg::TurnComplete(done) = turn_end(&events) else {
        unreachable!()
    };
    assert_eq!(done.last_agent_message, None);

    let requests = server.requests();
    assert!(is_summary_request(&requests[1], "Summarize, please."));
    assert!(transcript(&requests[1]).contains(&"assistant: answered".to_string()));

    assert_eq!(
        completed_with(&run_turn(&thread, "follow-up").await),
        "next answer"
    );
    let next = transcript(&server.requests()[2]);
    assert_eq!(
        next[1..],
        [
            "user: question".to_string(),
            summary_message("MANUAL-SUMMARY"),
            "user: follow-up".to_string(),
        ]
    );
    manager.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_summary_request_drops_the_oldest_tool_outputs_to_fit_the_window() {
    let server = MockModelServer::start();
    let print = |ch: char, n: usize| format!("head -c {n} /dev/zero | tr '\\0' {ch}");
    server.push_all([
        call_turn("call-a", &print('a', 5000), 0),
        call_turn("call-b", &print('b', 5000), 0),
        call_turn("call-c", &print('c', 3000), 0),
        MockResponse::text_turn("ok"),
        too_long(),
        MockResponse::text_turn("S"),
        MockResponse::text_turn("done"),
    ]);
    // A 3,000-token window (about 12 KB); no compaction before the provider complains.
    let home = home_with(
        &server,
        "model_context_window = 3000\nmodel_auto_compact_token_limit = 1000000\nbase_instructions = \"Test.\"",
    );
    let manager = manager();
    let thread = start(&manager, &home, home.workspace()).await;
    completed_with(&run_turn(&thread, "first task").await);

    let events = run_turn(&thread, "next task").await;

    assert_eq!(completed_with(&events), "done");
    let requests = server.requests();
    let summary = &requests[5];
    assert!(is_summary_request(summary, DEFAULT_COMPACT_PROMPT));
    assert!(
        summary.raw_body.len() < 3000 * 4,
        "{} bytes",
        summary.raw_body.len()
    );
    let items = transcript(summary);
    let output = |call: &str| {
        items
            .iter()
            .find(|item| item.starts_with(&format!("output {call}: ")))
            .cloned()
            .unwrap_or_else(|| panic!("no output of {call}: {items:?}"))
    };
    assert!(output("call-a").contains("dropped"), "{}", output("call-a"));
    assert!(
        output("call-c").contains("ccccc"),
        "newest kept: {}",
        output("call-c")
    );
    assert!(
        items.contains(&"user: next task".to_string()),
        "the task stays"
    );
    manager.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_reports_no_usage_still_compacts_from_the_estimated_size() {
    let server = MockModelServer::start();
    server.push_all([
        // About 24 KB of output: past 90 % of a 6,000-token window by itself (the
        // instructions and tools take half of it).
        MockResponse::chat_tool_call_turn(
            "call-1",
            "shell",
            bash_args(&format!(
                "printf {OLD_OUTPUT}; head -c 24000 /dev/zero | tr '\\0' x"
            )),
        ),
        MockResponse::chat_text_turn("ESTIMATED-SUMMARY"),
        MockResponse::chat_text_turn("done"),
    ]);
    let home = chat_home_with(&server, "model_context_window = 6000");
    let manager = manager();
    let thread = start(&manager, &home, home.workspace()).await;

    let events = run_turn(&thread, "task").await;

    assert_eq!(completed_with(&events), "done");
    assert!(
        crate::token_counts(&events).is_empty(),
        "no usage was reported"
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    let summary = chat_transcript(&requests[1]);
    assert_eq!(
        summary.last(),
        Some(&format!("user: {DEFAULT_COMPACT_PROMPT}"))
    );
    // Even the summary request would not fit whole: the output went first.
    assert!(!requests[1].raw_body.contains("xxxxxxxxxxxxxxxx"));
    assert!(
        summary
            .iter()
            .any(|m| m.starts_with("tool: [output dropped")),
        "{summary:?}"
    );
    assert_eq!(
        chat_transcript(&requests[2])[2..],
        [
            "user: task".to_string(),
            summary_message("ESTIMATED-SUMMARY")
        ]
    );
    assert!(!requests[2].raw_body.contains(OLD_OUTPUT));
    manager.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_callers_compact_prompt_outlives_a_restart() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::text_turn("answered"),
        MockResponse::text_turn("SUMMARY"),
    ]);
    let home = home_with(&server, "");
    let manager = manager();
    let mut layers = layers_at(&home, home.workspace());
    layers.overrides.compact_prompt = Some("Per-call prompt.".into());
    let thread = manager.start(layers.load().unwrap()).await.expect("start");
    let id = thread.id().to_string();
    completed_with(&run_turn(&thread, "question").await);
    manager.shutdown_all().await;

    let manager = crate::manager();
    let (thread, _) = manager
        .open(&id, &layers_at(&home, home.workspace()))
        .await
        .expect("resume");
    let after = thread.last_seq();
    let turn_id = thread.submit_compact("compact".into()).unwrap();
    assert_completed(&read_turn(&thread, after, &turn_id).await);

    assert!(is_summary_request(
        &server.requests()[1],
        "Per-call prompt."
    ));
    manager.shutdown_all().await;
}

/// Fails unless the turn completed.
fn assert_completed(events: &[std::sync::Arc<deputy_protocol::ThreadEvent>]) {
    assert!(
        matches!(turn_end(events), ThreadEventMsg::TurnComplete(_)),
        "{:?}",
        turn_end(events)
    );
}
