//! How long building the bytes of one model request takes (`ModelClient::request_bytes`,
//! what every turn's every request pays before it is sent): a new thread's first request
//! (the built-in tools, deputy's instructions, the initial context and a prompt), and the
//! request of a thread 100 turns in (each turn a reasoning item with its encrypted state, a
//! command call, its output of a few KiB and an answer). Prints min/median/max of the
//! microseconds per request over batches.
//!
//! Run with `cargo bench -p deputy-core --bench request`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark run: a failed step aborts the measurement"
)]

mod common;

use std::time::Instant;

use deputy_core::client::{ModelClient, Prompt};
use deputy_protocol::{FunctionOutput, ReasoningSummary, ResponseItem};

use common::{BenchHome, filler};

const BATCHES: usize = 21;

fn main() {
    let home = BenchHome::new();
    let config = home.layers.load().expect("config");
    let (client, first) = common::block_on(deputy_core::request::first_prompt(
        &config,
        "The test `parses_empty_input` fails since yesterday: find out why and fix it.",
    ))
    .expect("first prompt");
    let mut long = first.clone();
    for turn in 0..100 {
        long.input.extend(turn_items(turn));
    }
    measure("first request of a thread", &client, &first, 500);
    measure("request 100 turns in", &client, &long, 20);
}

/// One turn's history: reasoning, a command call, its output and the answer.
fn turn_items(turn: usize) -> Vec<ResponseItem> {
    let call_id = format!("call_{turn}");
    vec![
        ResponseItem::user_text(format!(
            "turn {turn}: and now the next failing test, please"
        )),
        ResponseItem::Reasoning {
            id: format!("rs_{turn}"),
            summary: vec![ReasoningSummary::SummaryText { text: filler(300) }],
            content: None,
            encrypted_content: Some("gAAAAB".repeat(200)),
        },
        ResponseItem::FunctionCall {
            id: Some(format!("fc_{turn}")),
            name: "shell_command".into(),
            namespace: None,
            arguments: r#"{"command":"cargo test -p parser 2>&1 | tail -40"}"#.into(),
            call_id: call_id.clone(),
        },
        ResponseItem::FunctionCallOutput {
            call_id,
            output: FunctionOutput::from(format!("Exit code: 1\nOutput:\n{}", filler(3000))),
        },
        ResponseItem::assistant_text(filler(400)),
    ]
}

/// Times `per_batch` requests for `prompt`, [`BATCHES`] times, after one warm-up batch.
fn measure(what: &str, client: &ModelClient, prompt: &Prompt, per_batch: usize) {
    let bytes = client.request_bytes(prompt).len();
    let mut micros: Vec<f64> = Vec::with_capacity(BATCHES);
    for batch in 0..=BATCHES {
        let start = Instant::now();
        for _ in 0..per_batch {
            std::hint::black_box(client.request_bytes(std::hint::black_box(prompt)));
        }
        if batch > 0 {
            micros.push(start.elapsed().as_secs_f64() * 1e6 / per_batch as f64);
        }
    }
    micros.sort_by(f64::total_cmp);
    println!(
        "{what} ({:.1} KiB): min {:.1} µs, median {:.1} µs, max {:.1} µs per request ({BATCHES} batches of {per_batch})",
        bytes as f64 / 1024.0,
        micros[0],
        micros[BATCHES / 2],
        micros[BATCHES - 1],
    );
}
