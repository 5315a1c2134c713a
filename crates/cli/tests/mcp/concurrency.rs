//! Many sessions at once over one connection: every event and result stays with its call.

use std::collections::{HashMap, HashSet};

use deputy_test_support::{MockResponse, RecordedRequest};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::harness::{Mcp, function_outputs, messages, shell, text_of, thread_of};

const SESSIONS: usize = 16;

/// The model's side of every session, decided from the request alone because the
/// sessions' requests arrive in no fixed order: first run `echo out-<tag>`, then
/// answer with whether that output came back to this very session.
fn answer(request: &RecordedRequest) -> MockResponse {
    let prompt = messages(request)
        .into_iter()
        .rfind(|(role, _)| role == "user")
        .map(|(_, text)| text)
        .unwrap_or_default();
    let tag = prompt.trim_start_matches("run for ").to_string();
    let outputs = function_outputs(request);
    if outputs.is_empty() {
        return shell(&format!("call-{tag}"), &format!("echo out-{tag}"));
    }
    let heard = outputs
        .iter()
        .find(|(call_id, output)| {
            *call_id == format!("call-{tag}") && output.contains(&format!("out-{tag}"))
        })
        .map_or("nothing".to_string(), |_| format!("out-{tag}"));
    MockResponse::text_turn(format!("{tag} heard {heard}"))
}

#[test]
fn sixteen_concurrent_sessions_keep_their_events_and_results_apart() {
    let mcp = Mcp::start();
    mcp.model.respond_with(answer);

    let calls: Vec<(i64, String)> = (0..SESSIONS)
        .map(|n| {
            let tag = format!("session-{n}");
            let id = mcp.call("codex", json!({"prompt": format!("run for {tag}")}));
            (id, tag)
        })
        .collect();

    let mut threads = HashSet::new();
    for (id, tag) in &calls {
        let result = mcp.result(*id);
        let thread_id = thread_of(&result);
        assert_eq!(result.get("isError"), None, "{tag}: {result}");
        assert_eq!(text_of(&result), format!("{tag} heard out-{tag}"));
        assert!(
            threads.insert(thread_id.clone()),
            "thread {thread_id} reused"
        );

        let events = mcp.events(*id);
        assert!(
            events
                .iter()
                .all(|e| e["_meta"]["threadId"] == thread_id.as_str()),
            "{tag}: events of another thread arrived under this call"
        );
        let types = mcp.event_types(*id);
        assert_eq!(
            types.first().map(String::as_str),
            Some("session_configured"),
            "{tag}"
        );
        assert_eq!(
            types.last().map(String::as_str),
            Some("task_complete"),
            "{tag}"
        );
        let of = |kind: &str| {
            events
                .iter()
                .filter(|e| e["msg"]["type"] == kind)
                .collect::<Vec<_>>()
        };
        assert_eq!(of("user_message").len(), 1, "{tag}");
        assert_eq!(
            of("user_message")[0]["msg"]["message"],
            format!("run for {tag}")
        );
        let commands: Vec<_> = of("exec_command_begin")
            .iter()
            .map(|e| e["msg"]["command"].clone())
            .collect();
        assert_eq!(
            commands,
            [json!(["bash", "-lc", format!("echo out-{tag}")])],
            "{tag}"
        );
        assert_eq!(
            of("session_configured")[0]["msg"]["session_id"],
            thread_id.as_str()
        );
    }
    assert_eq!(mcp.model.request_count(), 2 * SESSIONS);

    // And the other way round: every event of a thread went out under one call.
    let mut calls_per_thread: HashMap<String, HashSet<i64>> = HashMap::new();
    for event in mcp.client.notifications("codex/event") {
        let meta = &event["params"]["_meta"];
        calls_per_thread
            .entry(meta["threadId"].as_str().unwrap_or_default().to_string())
            .or_default()
            .insert(meta["requestId"].as_i64().unwrap_or_default());
    }
    assert_eq!(calls_per_thread.len(), SESSIONS);
    assert!(
        calls_per_thread.values().all(|calls| calls.len() == 1),
        "{calls_per_thread:?}"
    );
}
