//! `deputy exec` as a user runs it: the real binary against a scripted model server,
//! judged by what it prints, how it exits, what it leaves on disk and what it sends.
//!
//! - `turns`: answers, tool calls over both wire APIs, plans, the raw event view;
//! - `jsonl`: `--json`, the JSONL of `codex exec --json`;
//! - `live_view`: what a person at a terminal sees;
//! - `failures`: model errors and retries, runaway commands, refused approvals;
//! - `config`: config.toml, profiles, `-c`, `-m` and `-C`;
//! - `first_run`: what a first run runs into (no API key, typos, ids, help);
//! - `codex_users`: what a Codex user brings (Codex's flags, a piped task on a terminal,
//!   a refused edit, a stopped or resumed session, an unreachable model server).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

mod common;

#[path = "exec/codex_users.rs"]
mod codex_users;
#[path = "exec/config.rs"]
mod config;
#[path = "exec/failures.rs"]
mod failures;
#[path = "exec/first_run.rs"]
mod first_run;
#[path = "exec/jsonl.rs"]
mod jsonl;
#[path = "exec/live_view.rs"]
mod live_view;
#[path = "exec/turns.rs"]
mod turns;

use std::time::Duration;

use deputy_test_support::{MockModelServer, RecordedRequest, TestHome};
use pretty_assertions::assert_eq;
use serde_json::Value;

use common::with_provider_key;

/// How long a test waits for requests it expects to have been sent already.
const SETTLED: Duration = Duration::from_secs(5);

/// A patch adding `hello.py`, a one-line Python greeting.
const HELLO_PATCH: &str =
    "*** Begin Patch\n*** Add File: hello.py\n+print(\"hello from deputy\")\n*** End Patch\n";

/// A fresh home using `server` with the default test config.
fn home_for(server: &MockModelServer) -> TestHome {
    TestHome::new(&server.base_url())
}

/// A home whose mock provider has `key = value` (TOML literals) set.
fn home_with_provider(server: &MockModelServer, keys: &[(&str, &str)]) -> TestHome {
    let home = home_for(server);
    let mut config = TestHome::default_config(&server.base_url());
    for (key, value) in keys {
        config = with_provider_key(&config, key, value);
    }
    home.write_config(&config);
    home
}

/// The `function_call_output` items of a Responses request, as `(call_id, output)`.
fn function_outputs(request: &RecordedRequest) -> Vec<(String, String)> {
    items_of_type(request, "function_call_output")
        .into_iter()
        .map(|item| {
            (
                item["call_id"].as_str().unwrap_or_default().to_string(),
                item["output"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn items_of_type(request: &RecordedRequest, kind: &str) -> Vec<Value> {
    request.body["input"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter(|item| item["type"] == kind)
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// The text of the only output for `call_id` in `request`.
fn output_for(request: &RecordedRequest, call_id: &str) -> String {
    let outputs: Vec<String> = function_outputs(request)
        .into_iter()
        .filter(|(id, _)| id == call_id)
        .map(|(_, output)| output)
        .collect();
    assert_eq!(
        outputs.len(),
        1,
        "expected one output for {call_id} in {}",
        request.body
    );
    outputs.into_iter().next().unwrap_or_default()
}

fn all_requests(server: &MockModelServer, n: usize) -> Vec<RecordedRequest> {
    let requests = server
        .wait_for_requests(n, SETTLED)
        .unwrap_or_else(|err| panic!("{err}"));
    assert_eq!(requests.len(), n, "unexpected extra requests");
    requests
}

/// Every stdout line as JSON; fails the test on a line that is not an event object.
fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|line| {
            let event: Value = serde_json::from_str(line)
                .unwrap_or_else(|err| panic!("stdout line is not JSON ({err}): {line}"));
            assert!(event["type"].is_string(), "event without a type: {line}");
            event
        })
        .collect()
}
