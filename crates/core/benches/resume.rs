//! How long resuming a long session takes: a 10,000-record rollout of realistic
//! turns (messages, reasoning, tool calls with outputs of a few KiB, item events) is
//! written once, then loaded repeatedly — first the file alone (`load_rollout`:
//! read, parse, rebuild the history), then a whole `ThreadManager::open`
//! (lock, load, configuration, a live thread). Prints min/median/max.
//!
//! Run with `cargo bench -p deputy-core --bench resume`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark run: a failed step aborts the measurement"
)]

mod common;

use std::time::Instant;

use deputy_core::ThreadManager;
use deputy_core::rollout::{SessionSource, load_rollout};

use common::{BenchHome, Until, Written, report, write_session};

const RECORDS: usize = 10_000;
const ITERATIONS: usize = 30;

fn main() {
    common::block_on(run());
}

async fn run() {
    let home = BenchHome::new();
    let layers = &home.layers;
    let Written {
        id,
        path,
        history: history_len,
        ..
    } = write_session(layers, Until::Records(RECORDS)).await;
    let bytes = std::fs::metadata(&path).expect("stat").len();
    println!(
        "rollout: {RECORDS} records, {:.1} MiB, {history_len} history items",
        bytes as f64 / (1024.0 * 1024.0)
    );

    let mut load = Vec::new();
    for _ in 0..ITERATIONS {
        let start = Instant::now();
        let session = load_rollout(&path).expect("load");
        load.push(start.elapsed());
        assert_eq!(session.history.len(), history_len);
    }
    report("load_rollout + history", &mut load);

    let mut resume = Vec::new();
    for _ in 0..ITERATIONS {
        let manager = ThreadManager::new(None, SessionSource::Exec);
        let start = Instant::now();
        let (thread, _) = manager.open(&id, layers).await.expect("resume");
        resume.push(start.elapsed());
        assert!(thread.last_seq() > 0);
        manager.shutdown_all().await;
    }
    report("ThreadManager::open", &mut resume);
}
