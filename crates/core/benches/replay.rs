//! How long a new subscriber takes to replay a 100,000-event thread from its first
//! event: the events of realistic turns (see `common`) are written to a rollout once,
//! then replayed by `subscribe(0)` until the newest event has arrived, in two states:
//!
//! - a resumed thread (`ThreadManager::open`): every past event comes back
//!   from the rollout file;
//! - a live log that published them all: the older events from the rollout, the newest
//!   ones from the in-memory window.
//!
//! Each replay must deliver every seq from 1 to the newest exactly once, in order. The
//! files are synced to disk and one replay is run before the measured ones, so that
//! neither the kernel's write-back nor the first flush lands in a sample. Prints
//! min/median/max against the goal of 100 ms.
//!
//! Run with `cargo bench -p deputy-core --bench replay`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark run: a failed step aborts the measurement"
)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use deputy_core::event_log::EventLog;
use deputy_core::rollout::{RolloutRecorder, SessionMeta, SessionSource, read_events};
use deputy_core::{Subscription, ThreadManager};

use common::{BenchHome, Until, report, write_session};

const EVENTS: u64 = 100_000;
const ITERATIONS: usize = 20;
const GOAL: Duration = Duration::from_millis(100);

fn main() {
    common::block_on(run());
}

async fn run() {
    let home = BenchHome::new();
    let layers = &home.layers;
    let written = write_session(layers, Until::Events(EVENTS)).await;
    settle(&written.path);
    let bytes = std::fs::metadata(&written.path).expect("stat").len();
    println!(
        "rollout: {} events, {:.1} MiB",
        written.events,
        bytes as f64 / (1024.0 * 1024.0)
    );

    let manager = ThreadManager::new(None, SessionSource::Exec);
    let start = Instant::now();
    let (thread, _) = manager.open(&written.id, layers).await.expect("resume");
    println!(
        "resuming it (history rebuilt, events counted): {:.1} ms",
        start.elapsed().as_secs_f64() * 1000.0
    );
    drain(thread.subscribe(0), thread.last_seq()).await; // Warm-up.
    let mut resumed = Vec::new();
    for _ in 0..ITERATIONS {
        resumed.push(timed(thread.subscribe(0), thread.last_seq()).await);
    }
    manager.shutdown_all().await;
    verdict("resumed thread (all from the rollout)", &resumed);

    let config = layers.load().expect("config");
    let id = uuid::Uuid::now_v7().to_string();
    let meta = SessionMeta::new(&id, &config, SessionSource::Exec);
    let recorder = RolloutRecorder::create(&config.deputy_home, &meta, &[]).expect("create");
    let path = recorder.path().to_path_buf();
    let log = Arc::new(EventLog::new(id, 1, Some(recorder)));
    for event in read_events(&written.path, 0, u64::MAX).expect("read") {
        log.publish(event.turn_id.as_deref(), &event.submission_id, event.msg);
    }
    // Warm-up: the first replay also flushes what the writer still holds.
    drain(log.subscribe(0), log.last_seq()).await;
    settle(&path);
    let mut live = Vec::new();
    for _ in 0..ITERATIONS {
        live.push(timed(log.subscribe(0), log.last_seq()).await);
    }
    log.close();
    verdict("live log (rollout, then the in-memory window)", &live);
}

/// Reads `subscription` until event `newest`, checking that every seq arrives once, in order.
async fn drain(mut subscription: Subscription, newest: u64) {
    assert!(newest >= EVENTS, "only {newest} events to replay");
    let mut expected = 1;
    while expected <= newest {
        let event = subscription
            .next()
            .await
            .expect("the log ended before its newest event");
        assert_eq!(event.seq, expected, "replay skipped or repeated an event");
        expected += 1;
    }
    assert_eq!(subscription.lags(), 0, "a replaying subscriber never lags");
}

/// [`drain`], with the wall time and the CPU time (all threads) it took.
async fn timed(subscription: Subscription, newest: u64) -> (Duration, Duration) {
    let cpu_before = cpu_time();
    let start = Instant::now();
    drain(subscription, newest).await;
    (start.elapsed(), cpu_time().saturating_sub(cpu_before))
}

/// The CPU time (user and system) this process has used.
fn cpu_time() -> Duration {
    // SAFETY: `getrusage` fills the struct it is given; an all-zero `rusage` is valid.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let of = |tv: libc::timeval| {
        Duration::from_secs(tv.tv_sec.unsigned_abs())
            + Duration::from_micros(tv.tv_usec.unsigned_abs())
    };
    of(usage.ru_utime) + of(usage.ru_stime)
}

/// Waits until the file just written is on disk, so that the kernel writing it back
/// does not run during the measurement.
fn settle(path: &std::path::Path) {
    std::fs::File::open(path)
        .and_then(|file| file.sync_all())
        .expect("sync");
}

fn verdict(what: &str, samples: &[(Duration, Duration)]) {
    let mut wall: Vec<Duration> = samples.iter().map(|(wall, _)| *wall).collect();
    let mut cpu: Vec<Duration> = samples.iter().map(|(_, cpu)| *cpu).collect();
    report(&format!("replay of {EVENTS}+ events, {what}"), &mut wall);
    cpu.sort();
    println!(
        "  CPU time, all threads: median {:.1} ms",
        cpu[cpu.len() / 2].as_secs_f64() * 1000.0
    );
    let median = wall[wall.len() / 2];
    let met = if median < GOAL { "met" } else { "NOT met" };
    println!("  goal: median < {} ms: {met}", GOAL.as_millis());
}
