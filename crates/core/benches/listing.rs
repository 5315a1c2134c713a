//! How long listing 10,000 small sessions takes: the newest 20 (`list_sessions`), a page
//! by creation (`list_by_creation`), and a working-directory filter that matches none of
//! them — which reads only each file's first line. Prints min/median/max.
//!
//! Run with `cargo bench -p deputy-core --bench listing`.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark run: a failed step aborts the measurement"
)]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use deputy_core::rollout::{CreationQuery, list_by_creation, list_sessions, rollout_path};

use common::report;

const SESSIONS: usize = 10_000;
const ITERATIONS: usize = 10;

/// A small session as deputy writes it: its metadata, two turns of a few records.
fn write_sessions(home: &Path, cwd: &Path) {
    let start_ms: u64 = 1_760_000_000_000;
    for n in 0..SESSIONS {
        let ms = start_ms + n as u64 * 1000;
        let id = uuid::Uuid::new_v7(uuid::Timestamp::from_unix(
            uuid::NoContext,
            ms / 1000,
            (ms % 1000) as u32 * 1_000_000,
        ))
        .to_string();
        let path = rollout_path(home, &id).unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let meta = serde_json::json!({
            "timestamp": "2025-10-09T08:53:20.000Z", "type": "session_meta",
            "payload": {"id": id, "timestamp": "2025-10-09T08:53:20.000Z", "cwd": cwd,
                        "model": "m", "model_provider": "p", "approval_policy": "never",
                        "sandbox_mode": "read-only", "cli_version": "0.1.0", "source": "exec"}});
        let mut text = format!("{meta}\n");
        for turn in 0..2 {
            text.push_str(&format!(
                "{{\"timestamp\":\"2025-10-09T08:53:21.000Z\",\"type\":\"turn_context\",\"payload\":{{\"turn_id\":\"t{turn}\",\"cwd\":\"/w\",\"model\":\"m\",\"approval_policy\":\"never\",\"sandbox_policy\":{{\"type\":\"read-only\"}}}}}}\n"
            ));
            text.push_str(&format!(
                "{{\"timestamp\":\"2025-10-09T08:53:21.000Z\",\"type\":\"response_item\",\"payload\":{{\"type\":\"message\",\"role\":\"user\",\"content\":[{{\"type\":\"input_text\",\"text\":\"{}\"}}]}}}}\n",
                "fix the failing test ".repeat(40)
            ));
        }
        std::fs::write(path, text).unwrap();
    }
}

fn time(what: &str, mut run: impl FnMut() -> usize, expect: usize) {
    let mut samples: Vec<Duration> = Vec::new();
    for _ in 0..ITERATIONS {
        let start = Instant::now();
        assert_eq!(run(), expect, "{what}");
        samples.push(start.elapsed());
    }
    report(what, &mut samples);
}

fn main() {
    let home = tempfile::tempdir().expect("tempdir");
    let cwd = tempfile::tempdir().expect("tempdir");
    write_sessions(home.path(), cwd.path());
    println!("{SESSIONS} sessions of about 2 KiB");
    time(
        "list_sessions, newest 20",
        || list_sessions(home.path(), None, 20).unwrap().len(),
        20,
    );
    time(
        "list_by_creation, a page of 25",
        || {
            let query = CreationQuery {
                limit: 25,
                ..CreationQuery::default()
            };
            list_by_creation(home.path(), query).unwrap().sessions.len()
        },
        25,
    );
    let elsewhere = Path::new("/nowhere/else");
    time(
        "list_sessions -C matching none",
        || {
            list_sessions(home.path(), Some(elsewhere), 20)
                .unwrap()
                .len()
        },
        0,
    );
    time(
        "list_by_creation {cwd} matching none",
        || {
            let query = CreationQuery {
                cwd: Some(elsewhere),
                limit: 25,
                ..CreationQuery::default()
            };
            list_by_creation(home.path(), query).unwrap().sessions.len()
        },
        0,
    );
}
