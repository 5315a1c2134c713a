//! Whether a long session stays within the context window: 200 scripted turns,
//! each running a command that prints about 20 KB, against the mock model server
//! with a 32,768-token window (a local qwen2.5-coder's). The model reports usage
//! as a quarter of the request's bytes, like a real tokenizer would roughly. Prints
//! every 20th turn's largest request, the largest of any request (summaries
//! included) since the row before, the compactions so far, and the largest request
//! of the whole session, and fails if any request passed the window.
//!
//! Run with `cargo bench -p deputy-core --bench compaction` (the numbers are bytes
//! and tokens, not times: `cargo test -p deputy-core --bench compaction` prints the
//! same table from a debug build).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark run: a failed step aborts the measurement"
)]

use std::sync::{Arc, Mutex};
use std::time::Instant;

use deputy_core::ThreadManager;
use deputy_core::compact::DEFAULT_COMPACT_PROMPT;
use deputy_core::config::ConfigLayers;
use deputy_core::rollout::SessionSource;
use deputy_protocol::{ThreadEventMsg, ThreadItem};
use deputy_test_support::{MockModelServer, MockResponse, RecordedRequest, SseEvent, responses};
use serde_json::{Value, json};

const TURNS: usize = 200;
const WINDOW_TOKENS: u64 = 32_768;
/// What each turn's command prints: 400 numbered lines, about 20 KB.
const BIG_OUTPUT: &str = "seq -f 'line %g of a long listing the model asked to see' 1 400";

/// One model request as the server saw it.
#[derive(Debug, Clone, Copy)]
struct Seen {
    turn: usize,
    bytes: usize,
    summary: bool,
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(run());
}

async fn run() {
    let server = MockModelServer::start();
    server.keep_request_bodies(false);
    let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
    let turn_now = Arc::new(Mutex::new(0usize));
    {
        let (seen, turn_now) = (seen.clone(), turn_now.clone());
        server.respond_with(move |request| {
            let turn = *turn_now.lock().unwrap();
            let kind = last_input_kind(request);
            let summary = kind == Kind::CompactPrompt;
            seen.lock().unwrap().push(Seen {
                turn,
                bytes: request.raw_body.len(),
                summary,
            });
            let tokens = request.raw_body.len() as u64 / 4;
            match kind {
                Kind::CompactPrompt => text(
                    &format!(
                        "Turn {turn}: the user asks for one listing per turn; every listing so far printed 400 lines and was read. Next: the next listing."
                    ),
                    tokens,
                ),
                Kind::UserMessage => MockResponse::sse(vec![
                    responses::created("r"),
                    responses::function_call(
                        format!("call-{turn}"),
                        "shell",
                        json!({"command": ["bash", "-c", BIG_OUTPUT]}).to_string(),
                    ),
                    completed(tokens),
                ]),
                Kind::ToolOutput => text(&format!("Listing {turn} read."), tokens),
            }
        });
    }

    let home = tempfile::tempdir().expect("tempdir");
    let work = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        home.path().join("config.toml"),
        format!(
            "model = \"bench\"\nmodel_provider = \"mock\"\napproval_policy = \"never\"\n\
             sandbox_mode = \"danger-full-access\"\nmodel_context_window = {WINDOW_TOKENS}\n\
             [model_providers.mock]\nname = \"Mock\"\nbase_url = \"{}\"\n\
             request_max_retries = 0\nstream_max_retries = 0\n",
            server.base_url()
        ),
    )
    .expect("config");
    let mut layers = ConfigLayers::new(home.path().to_path_buf());
    layers.overrides.cwd = Some(work.path().to_path_buf());
    let manager = ThreadManager::new(None, SessionSource::Exec);
    let thread = manager
        .start(layers.load().expect("config"))
        .await
        .expect("thread");

    let started = Instant::now();
    let mut compactions = 0;
    let mut last_row = 0;
    for turn in 1..=TURNS {
        *turn_now.lock().unwrap() = turn;
        let mut events = thread
            .start_turn(
                format!("t{turn}"),
                format!("Turn {turn}: show me the next listing."),
            )
            .expect("turn");
        while let Some(event) = events.next().await {
            match &event.msg {
                ThreadEventMsg::ItemCompleted(item)
                    if matches!(item.item, ThreadItem::ContextCompaction(_)) =>
                {
                    compactions += 1;
                }
                ThreadEventMsg::TurnFailed(error) => {
                    panic!("turn {turn} failed: {}", error.message)
                }
                ThreadEventMsg::TurnAborted(_) => panic!("turn {turn} aborted"),
                _ => {}
            }
        }
        let seen = seen.lock().unwrap();
        if turn % 20 == 0 || turn == 1 {
            let this_turn = seen.iter().filter(|s| s.turn == turn && !s.summary);
            let largest = this_turn.map(|s| s.bytes).max().unwrap_or(0);
            let since = seen
                .iter()
                .filter(|s| s.turn > last_row && s.turn <= turn)
                .map(|s| s.bytes)
                .max()
                .unwrap_or(0);
            if turn == 1 {
                println!(
                    "{:>5} | {:>13} | {:>8} | {:>16} | {:>11}",
                    "turn", "request bytes", "≈ tokens", "max since prev.", "compactions"
                );
                println!(
                    "{:->5}-+-{:->13}-+-{:->8}-+-{:->16}-+-{:->11}",
                    "", "", "", "", ""
                );
            }
            println!(
                "{turn:>5} | {largest:>13} | {:>8} | {since:>16} | {compactions:>11}",
                largest / 4
            );
            last_row = turn;
        }
    }
    let elapsed = started.elapsed();
    manager.shutdown_all().await;

    let seen = seen.lock().unwrap();
    let largest = seen.iter().map(|s| s.bytes).max().unwrap_or(0);
    let largest_summary = seen
        .iter()
        .filter(|s| s.summary)
        .map(|s| s.bytes)
        .max()
        .unwrap_or(0);
    println!(
        "{TURNS} turns, {} requests ({} summaries) in {:.1} s; largest request {largest} bytes (≈ {} tokens), largest summary request {largest_summary} bytes; window {WINDOW_TOKENS} tokens (≈ {} bytes)",
        seen.len(),
        seen.iter().filter(|s| s.summary).count(),
        elapsed.as_secs_f64(),
        largest / 4,
        WINDOW_TOKENS * 4,
    );
    assert!(
        (largest as u64) < WINDOW_TOKENS * 4,
        "a request passed the context window"
    );
    assert!(compactions > 0, "the session never compacted");
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    UserMessage,
    CompactPrompt,
    ToolOutput,
}

/// What the request ends with: a new user message, the compact prompt, or a tool's output.
fn last_input_kind(request: &RecordedRequest) -> Kind {
    let last = request.body["input"]
        .as_array()
        .and_then(|items| items.last())
        .cloned()
        .unwrap_or(Value::Null);
    if last["type"] == "function_call_output" {
        Kind::ToolOutput
    } else if last["content"][0]["text"] == DEFAULT_COMPACT_PROMPT {
        Kind::CompactPrompt
    } else {
        Kind::UserMessage
    }
}

fn completed(input_tokens: u64) -> SseEvent {
    SseEvent::new(
        "response.completed",
        json!({"response": {"id": "r", "usage": {
            "input_tokens": input_tokens,
            "output_tokens": 20,
            "total_tokens": input_tokens + 20,
        }}}),
    )
}

fn text(text: &str, input_tokens: u64) -> MockResponse {
    MockResponse::sse(vec![
        responses::created("r"),
        responses::text_delta(text),
        responses::message("m", text),
        completed(input_tokens),
    ])
}
