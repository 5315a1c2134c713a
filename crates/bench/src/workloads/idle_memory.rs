//! Idle memory per loaded thread: one server runs many sessions one after the other, each
//! a turn with one command, and keeps them all loaded; the growth of its resident memory
//! divided by the sessions is what an idle thread costs, next to the size of its history
//! (the `response_item` records of its rollout: the model history as serialized).

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use super::model::{ANSWER_OK, Model, marker};
use super::{CALL_TIMEOUT, EXIT_TIMEOUT, Outcome, Workload, send_call, start, tool_result};
use crate::report::{Goal, Sample};
use crate::target::{Home, Target};

/// Sessions run before the first reading, so that start-up allocations are not counted.
const WARM_UP: u64 = 20;
/// Sessions whose memory is measured.
const SESSIONS: u64 = 500;
/// The goal for an idle thread beyond its history.
const GOAL_KIB: f64 = 16.0;
/// How long all the sessions may take before the run is reported as failed: deputy needs a
/// few seconds, Codex about a second per session (more than eight minutes a run).
const DEADLINE: Duration = Duration::from_secs(120);

/// [`WARM_UP`] + [`SESSIONS`] sequential `codex` calls, each one command and an answer.
pub struct IdleMemory;

impl Workload for IdleMemory {
    fn run(&mut self, target: &Target) -> anyhow::Result<Outcome> {
        let model = Model::one_command(|n| format!("echo idle-{n}"), "idle-{n}")?;
        model.server.keep_request_bodies(false);
        let home = Home::new(&model.server.base_url())?;
        let server = start(target, &home)?;
        let began = Instant::now();
        let call = |n: u64| -> anyhow::Result<()> {
            anyhow::ensure!(
                began.elapsed() < DEADLINE,
                "only {n} of {} sessions ran within {} s",
                WARM_UP + SESSIONS,
                DEADLINE.as_secs()
            );
            let prompt = format!("run the command {}", marker(n));
            let (id, _) = send_call(&server, "codex", json!({"prompt": prompt}))?;
            let (_, content) = tool_result(&server.wait(id, CALL_TIMEOUT)?)?;
            anyhow::ensure!(content == ANSWER_OK, "session {n} answered {content:?}");
            Ok(())
        };
        for n in 0..WARM_UP {
            call(n)?;
        }
        let before = server.rss_kib()?;
        let history_before = history_bytes(home.path());
        for n in WARM_UP..WARM_UP + SESSIONS {
            call(n)?;
        }
        let after = server.rss_kib()?;
        let history = history_bytes(home.path()).saturating_sub(history_before) as f64 / 1024.0;
        server.finish(EXIT_TIMEOUT)?;
        let sessions = SESSIONS as f64;
        let per_thread = after.saturating_sub(before) as f64 / sessions;
        let history_per_thread = history / sessions;
        Ok(Outcome::Measured(vec![
            Sample::kib("resident memory per idle thread", Goal::None, per_thread),
            Sample::kib("its history (serialized)", Goal::None, history_per_thread),
            Sample::kib(
                "per idle thread beyond its history",
                Goal::AtMost(GOAL_KIB),
                (per_thread - history_per_thread).max(0.0),
            ),
        ]))
    }
}

/// The bytes of every `response_item` record in the rollouts under `home`'s `sessions/`.
fn history_bytes(home: &Path) -> u64 {
    let mut total = 0;
    let mut dirs = vec![home.join("sessions")];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if let Ok(text) = std::fs::read_to_string(&path) {
                total += text
                    .lines()
                    .filter(|line| line.contains(r#""type":"response_item""#))
                    .map(|line| line.len() as u64)
                    .sum::<u64>();
            }
        }
    }
    total
}
