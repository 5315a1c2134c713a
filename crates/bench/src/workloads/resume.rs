//! Resume: continuing a 10,000-event session from disk in a freshly started server.
//!
//! The session is built once per target by running turns (`codex`, then `codex-reply`
//! until its rollout holds [`EVENTS`] lines); each run then starts a new server process
//! and times one `codex-reply` naming the thread. A server that cannot continue a thread
//! from an earlier process is reported as unsupported, with its answer.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::json;

use super::model::{ANSWER_DONE, Model, marker};
use super::{
    CALL_TIMEOUT, EXIT_TIMEOUT, Outcome, Workload, codex_call, send_call, start, tool_result,
};
use crate::report::{Goal, Sample};
use crate::server::ServerProcess;
use crate::target::{Home, Target};

/// How many rollout lines (events and history items) the session holds before timing.
pub const EVENTS: usize = 10_000;
/// How many turns run between two counts of the rollout's lines.
const TURNS_PER_COUNT: usize = 50;

/// A built session: the model and home must outlive it, the config points at the model.
struct Fixture {
    model: Model,
    home: Home,
    thread: String,
    runs: u64,
}

/// Builds the session on first use; see the module docs.
#[derive(Default)]
pub struct Resume {
    fixtures: HashMap<String, Result<Fixture, String>>,
}

impl Workload for Resume {
    fn run(&mut self, target: &Target) -> anyhow::Result<Outcome> {
        let key = target.path.display().to_string();
        if !self.fixtures.contains_key(&key) {
            let built = build(target)?;
            self.fixtures.insert(key.clone(), built);
        }
        let fixture = match self.fixtures.get_mut(&key) {
            Some(Ok(fixture)) => fixture,
            Some(Err(why)) => return Ok(Outcome::Unsupported(why.clone())),
            None => anyhow::bail!("resume fixture missing"),
        };
        fixture.runs += 1;
        let lines = rollout_lines(fixture.home.path(), &fixture.thread)?;
        let label = marker(1_000_000 + fixture.runs);
        let server = start(target, &fixture.home)?;
        let (id, sent) = send_call(
            &server,
            "codex-reply",
            json!({"threadId": fixture.thread, "prompt": format!("continue {label}")}),
        )?;
        let reply = server.wait(id, CALL_TIMEOUT)?;
        let (_, content) = tool_result(&reply)?;
        if content != ANSWER_DONE {
            anyhow::bail!("the resumed turn answered {content:?}");
        }
        let spawned = server.spawned_at;
        let peak = server.peak_rss_kib()?;
        server.finish(EXIT_TIMEOUT)?;
        let model_time = fixture.model.time_of(&[label]).remove(0);
        let latency = reply.at - sent;
        Ok(Outcome::Measured(vec![
            Sample::count("rollout lines", lines as u64),
            Sample::ms("codex-reply latency", Goal::AtMost(100.0), latency),
            Sample::ms(
                "codex-reply latency - model time",
                Goal::None,
                latency.saturating_sub(model_time.total),
            ),
            Sample::ms("spawn to result", Goal::None, reply.at - spawned),
            Sample::mib("peak RSS", Goal::None, peak),
        ]))
    }
}

/// Builds the session, first checking with a one-turn session that the server resumes at
/// all (Codex's server keeps threads in memory only), so an unsupported server costs
/// seconds, not a 10,000-event build.
fn build(target: &Target) -> anyhow::Result<Result<Fixture, String>> {
    let model = Model::text_only()?;
    let home = Home::new(&model.server.base_url())?;
    let server = start(target, &home)?;
    let (_, _, thread) = codex_call(&server, &format!("start {}", marker(0)), ANSWER_DONE)?;
    server.finish(EXIT_TIMEOUT)?;
    let server = start(target, &home)?;
    let (id, _) = send_call(
        &server,
        "codex-reply",
        json!({"threadId": thread, "prompt": "are you there?"}),
    )?;
    let reply = server.wait(id, CALL_TIMEOUT)?;
    if let Err(err) = tool_result(&reply) {
        server.finish(EXIT_TIMEOUT)?;
        return Ok(Err(format!(
            "unsupported: codex-reply after a restart failed ({err})"
        )));
    }
    // Each request carries the whole history: kept whole, the build's thousands of them
    // would cost the benchmark gigabytes. The timed runs keep theirs, to find their marker.
    model.server.keep_request_bodies(false);
    grow(&server, &home, &thread)?;
    model.server.keep_request_bodies(true);
    server.finish(EXIT_TIMEOUT)?;
    Ok(Ok(Fixture {
        model,
        home,
        thread,
        runs: 0,
    }))
}

/// Runs `codex-reply` turns until the rollout holds [`EVENTS`] lines.
fn grow(server: &ServerProcess, home: &Home, thread: &str) -> anyhow::Result<()> {
    let mut turn = 0;
    while rollout_lines(home.path(), thread)? < EVENTS {
        for _ in 0..TURNS_PER_COUNT {
            turn += 1;
            let (id, _) = send_call(
                server,
                "codex-reply",
                json!({"threadId": thread, "prompt": format!("turn {turn}")}),
            )?;
            let reply = server.wait(id, CALL_TIMEOUT)?;
            tool_result(&reply).with_context(|| format!("building the session, turn {turn}"))?;
        }
    }
    Ok(())
}

/// How many lines the rollout of `thread` under `home/sessions` has.
fn rollout_lines(home: &Path, thread: &str) -> anyhow::Result<usize> {
    let path = find_rollout(&home.join("sessions"), thread)
        .with_context(|| format!("no rollout for thread {thread} under {}", home.display()))?;
    let text = fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    Ok(text.iter().filter(|b| **b == b'\n').count())
}

fn find_rollout(dir: &Path, thread: &str) -> Option<PathBuf> {
    for entry in fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = find_rollout(&path, thread) {
                return Some(found);
            }
        } else if path
            .file_name()
            .is_some_and(|name| name.to_string_lossy().contains(thread))
        {
            return Some(path);
        }
    }
    None
}
