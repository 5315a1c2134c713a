//! What the model is given to work with, against the scripted model server: AGENTS.md
//! instructions, token accounting over both wire APIs, and compaction of a history
//! that outgrows the context window (automatic, on a provider's error, on request,
//! across a restart).
//!
//! - `agents_md`: which files are read, in which order, capped, skipped;
//! - `usage`: `token_count` over Responses and Chat, the context window reported;
//! - `compaction`: the summary request, the compacted history, compaction on request, resume;
//! - `compaction_failures`: a compaction that fails, does not help or is interrupted.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

#[path = "context/agents_md.rs"]
mod agents_md;
#[path = "context/compaction.rs"]
mod compaction;
#[path = "context/compaction_failures.rs"]
mod compaction_failures;
#[path = "context/usage.rs"]
mod usage;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use deputy_core::config::ConfigLayers;
use deputy_core::rollout::SessionSource;
use deputy_core::{Thread, ThreadManager};
use deputy_protocol::{
    ContextCompactionStatus, InputItem, ItemEvent, ThreadEvent, ThreadEventMsg, ThreadItem,
    TokenUsageInfo,
};
use deputy_test_support::{MockModelServer, RecordedRequest, SseEvent, TestHome};
use serde_json::{Value, json};

/// Longest a test waits for a turn to end.
const WAIT: Duration = Duration::from_secs(30);

/// A home whose config.toml starts with `top_level` (TOML lines) before the test defaults.
fn home_with(server: &MockModelServer, top_level: &str) -> TestHome {
    let home = TestHome::new(&server.base_url());
    home.write_config(&format!(
        "{top_level}\n{}",
        TestHome::default_config(&server.base_url())
    ));
    home
}

/// Like [`home_with`], the mock provider speaking Chat Completions.
fn chat_home_with(server: &MockModelServer, top_level: &str) -> TestHome {
    let home = TestHome::new(&server.base_url());
    let config = TestHome::default_config(&server.base_url())
        .replace("wire_api = \"responses\"", "wire_api = \"chat\"");
    home.write_config(&format!("{top_level}\n{config}"));
    home
}

fn layers_at(home: &TestHome, cwd: &Path) -> ConfigLayers {
    let mut layers = ConfigLayers::new(home.path().to_path_buf());
    layers.overrides.cwd = Some(cwd.to_path_buf());
    layers
}

async fn start(manager: &ThreadManager, home: &TestHome, cwd: &Path) -> Arc<Thread> {
    manager
        .start(layers_at(home, cwd).load().expect("config"))
        .await
        .expect("start thread")
}

fn manager() -> ThreadManager {
    ThreadManager::new(None, SessionSource::Exec)
}

/// Reads `thread`'s log after `after` until the end of turn `turn_id`.
async fn read_turn(thread: &Thread, after: u64, turn_id: &str) -> Vec<Arc<ThreadEvent>> {
    let mut events = thread.subscribe(after);
    let mut seen = Vec::new();
    let read = async {
        while let Some(event) = events.next().await {
            let done = event.turn_id.as_deref() == Some(turn_id) && event.msg.ends_turn();
            seen.push(event);
            if done {
                return;
            }
        }
        panic!("the log ended before the turn did");
    };
    tokio::time::timeout(WAIT, read)
        .await
        .expect("the turn ended in time");
    seen
}

/// Runs a turn with `prompt` and returns the log from its start to its end.
async fn run_turn(thread: &Thread, prompt: &str) -> Vec<Arc<ThreadEvent>> {
    let after = thread.last_seq();
    let turn_id = thread
        .submit_turn(
            "test".into(),
            vec![InputItem::Text {
                text: prompt.into(),
            }],
        )
        .expect("submit");
    read_turn(thread, after, &turn_id).await
}

/// Runs a turn with `prompt` and returns the whole log from the thread's first event.
async fn run_first_turn(thread: &Thread, prompt: &str) -> Vec<Arc<ThreadEvent>> {
    let turn_id = thread
        .submit_turn(
            "test".into(),
            vec![InputItem::Text {
                text: prompt.into(),
            }],
        )
        .expect("submit");
    read_turn(thread, 0, &turn_id).await
}

/// The turn-ending event of a turn's log.
fn turn_end(events: &[Arc<ThreadEvent>]) -> &ThreadEventMsg {
    &events.last().expect("events").msg
}

/// The `last_agent_message` of a completed turn; fails on any other ending.
fn completed_with(events: &[Arc<ThreadEvent>]) -> String {
    match turn_end(events) {
        ThreadEventMsg::TurnComplete(done) => done.last_agent_message.clone().unwrap_or_default(),
        other => panic!("the turn did not complete: {other:?}"),
    }
}

fn warnings(events: &[Arc<ThreadEvent>]) -> Vec<String> {
    events
        .iter()
        .filter_map(|event| match &event.msg {
            ThreadEventMsg::Warning(w) => Some(w.message.clone()),
            _ => None,
        })
        .collect()
}

fn token_counts(events: &[Arc<ThreadEvent>]) -> Vec<TokenUsageInfo> {
    events
        .iter()
        .filter_map(|event| match &event.msg {
            ThreadEventMsg::TokenCount(count) => count.info.clone(),
            _ => None,
        })
        .collect()
}

/// `(started | completed, item id, status)` for every context compaction item event.
fn compaction_items(
    events: &[Arc<ThreadEvent>],
) -> Vec<(&'static str, String, ContextCompactionStatus)> {
    events
        .iter()
        .filter_map(|event| match &event.msg {
            ThreadEventMsg::ItemStarted(ItemEvent {
                item: ThreadItem::ContextCompaction(item),
            }) => Some(("started", item.id.clone(), item.status)),
            ThreadEventMsg::ItemCompleted(ItemEvent {
                item: ThreadItem::ContextCompaction(item),
            }) => Some(("completed", item.id.clone(), item.status)),
            _ => None,
        })
        .collect()
}

/// The history a Responses request carries, as `role: text`, `call ID`, `output ID: text`.
fn transcript(request: &RecordedRequest) -> Vec<String> {
    request.body["input"]
        .as_array()
        .expect("a Responses request")
        .iter()
        .map(|item| match item["type"].as_str().unwrap_or_default() {
            "message" => format!(
                "{}: {}",
                item["role"].as_str().unwrap_or_default(),
                item["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|part| part["text"].as_str())
                    .collect::<String>()
            ),
            "function_call" => format!("call {}", item["call_id"].as_str().unwrap_or_default()),
            "function_call_output" => format!(
                "output {}: {}",
                item["call_id"].as_str().unwrap_or_default(),
                item["output"].as_str().unwrap_or_default()
            ),
            other => other.to_string(),
        })
        .collect()
}

/// The messages a Chat request carries, as `role: text`.
fn chat_transcript(request: &RecordedRequest) -> Vec<String> {
    request.body["messages"]
        .as_array()
        .expect("a Chat request")
        .iter()
        .map(|message| {
            format!(
                "{}: {}",
                message["role"].as_str().unwrap_or_default(),
                message["content"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

/// `response.completed` with every usage count given.
fn completed_with_usage(input: u64, cached: u64, output: u64, reasoning: u64) -> SseEvent {
    SseEvent::new(
        "response.completed",
        json!({"response": {
            "id": "resp-mock",
            "usage": {
                "input_tokens": input,
                "input_tokens_details": {"cached_tokens": cached},
                "output_tokens": output,
                "output_tokens_details": {"reasoning_tokens": reasoning},
                "total_tokens": input + output,
            },
        }}),
    )
}

/// A shell call running `script` with bash.
fn bash_args(script: &str) -> Value {
    json!({"command": ["bash", "-c", script]})
}
