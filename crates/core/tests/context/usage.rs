//! Token accounting: every count the provider reports, per request and summed per
//! thread, over both wire APIs; the context window in `task_started` and `token_count`.

use deputy_protocol::{ThreadEventMsg, TokenUsage};
use deputy_test_support::{MockModelServer, MockResponse, chat, responses};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::{
    bash_args, chat_home_with, completed_with, completed_with_usage, home_with, manager, run_turn,
    start, token_counts,
};

fn usage(input: u64, cached: u64, output: u64, reasoning: u64) -> TokenUsage {
    TokenUsage {
        input_tokens: input,
        cached_input_tokens: cached,
        output_tokens: output,
        reasoning_output_tokens: reasoning,
        total_tokens: input + output,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_usage_is_reported_per_request_and_summed_over_the_thread() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::sse(vec![
            responses::created("r1"),
            responses::function_call("call-1", "shell", bash_args("true").to_string()),
            completed_with_usage(100, 40, 20, 5),
        ]),
        MockResponse::sse(vec![
            responses::created("r2"),
            responses::message("m2", "done"),
            completed_with_usage(200, 100, 30, 10),
        ]),
        MockResponse::sse(vec![
            responses::created("r3"),
            responses::message("m3", "again"),
            completed_with_usage(300, 0, 1, 0),
        ]),
    ]);
    let home = home_with(&server, "model_context_window = 50000");
    let manager = manager();
    let thread = start(&manager, &home, home.workspace()).await;

    let first = run_turn(&thread, "go").await;
    let second = run_turn(&thread, "more").await;

    assert_eq!(completed_with(&first), "done");
    let counts: Vec<_> = token_counts(&first)
        .into_iter()
        .chain(token_counts(&second))
        .map(|info| {
            (
                info.last_token_usage,
                info.total_token_usage,
                info.model_context_window,
            )
        })
        .collect();
    assert_eq!(
        counts,
        [
            (usage(100, 40, 20, 5), usage(100, 40, 20, 5), Some(50_000)),
            (
                usage(200, 100, 30, 10),
                usage(300, 140, 50, 15),
                Some(50_000)
            ),
            (usage(300, 0, 1, 0), usage(600, 140, 51, 15), Some(50_000)),
        ]
    );
    let ThreadEventMsg::TurnStarted(started) = &first[0].msg else {
        panic!("the turn opens with task_started: {:?}", first[0].msg);
    };
    assert_eq!(started.model_context_window, Some(50_000));
    manager.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_asks_for_usage_and_reports_every_count_it_gets() {
    let server = MockModelServer::start();
    let usage_chunk = |prompt: u64, cached: u64, completion: u64, reasoning: u64| {
        json!({
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "choices": [],
            "usage": {
                "prompt_tokens": prompt,
                "prompt_tokens_details": {"cached_tokens": cached},
                "completion_tokens": completion,
                "completion_tokens_details": {"reasoning_tokens": reasoning},
                "total_tokens": prompt + completion,
            },
        })
    };
    server.push_all([
        MockResponse::chat(vec![
            chat::tool_call_start(0, "call-1", "shell"),
            chat::tool_call_args(0, bash_args("true").to_string()),
            chat::finish("tool_calls"),
            usage_chunk(120, 64, 12, 4),
        ]),
        // A server that leaves the details out: what it gives still counts.
        MockResponse::chat(vec![
            chat::content("done"),
            chat::finish("stop"),
            chat::usage(150, 7, 157),
        ]),
    ]);
    let home = chat_home_with(&server, "");
    let config = std::fs::read_to_string(home.config_path()).unwrap();
    home.write_config(&config.replace("\"mock-model\"", "\"qwen2.5-coder:7b\""));
    let manager = manager();
    let thread = start(&manager, &home, home.workspace()).await;

    let events = run_turn(&thread, "go").await;

    assert_eq!(completed_with(&events), "done");
    for request in server.requests() {
        assert_eq!(request.path, "/v1/chat/completions");
        assert_eq!(
            request.body["stream_options"],
            json!({"include_usage": true})
        );
    }
    let counts: Vec<_> = token_counts(&events)
        .into_iter()
        .map(|info| {
            (
                info.last_token_usage,
                info.total_token_usage,
                info.model_context_window,
            )
        })
        .collect();
    // The window of qwen2.5-coder comes from the built-in table.
    assert_eq!(
        counts,
        [
            (usage(120, 64, 12, 4), usage(120, 64, 12, 4), Some(32_768)),
            (usage(150, 0, 7, 0), usage(270, 64, 19, 4), Some(32_768)),
        ]
    );
    manager.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_without_usage_reports_none_and_the_window_stays_unknown_for_unknown_models() {
    let server = MockModelServer::start();
    server.push(MockResponse::chat(vec![
        chat::content("quiet server"),
        chat::finish("stop"),
    ]));
    let home = chat_home_with(&server, "");
    let manager = manager();
    let thread = start(&manager, &home, home.workspace()).await;

    let events = run_turn(&thread, "go").await;

    assert_eq!(completed_with(&events), "quiet server");
    let counts: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.msg {
            ThreadEventMsg::TokenCount(count) => Some(count.info.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(counts, [None]);
    let ThreadEventMsg::TurnStarted(started) = &events[0].msg else {
        panic!("task_started first");
    };
    assert_eq!(started.model_context_window, None);
    manager.shutdown_all().await;
}
