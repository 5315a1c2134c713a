//! Concurrency: many sessions at once on one server (64, and 1,000), each one shell call
//! and an answer.

use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::json;

use super::model::{ANSWER_OK, Model, marker};
use super::{CALL_TIMEOUT, EXIT_TIMEOUT, Outcome, Workload, send_call, start, tool_result};
use crate::report::{Goal, Sample};
use crate::target::{Home, Target};

/// `sessions` `codex` calls sent back to back, then all results awaited.
pub struct Concurrency {
    sessions: u64,
    wall_time: &'static str,
    /// Goals for the wall time and the peak RSS.
    wall_time_goal: Goal,
    rss_goal: Goal,
    /// How long all the answers may take before the run is reported as failed.
    deadline: Duration,
}

impl Concurrency {
    /// 64 sessions: wall time and memory against Codex's.
    pub fn sixty_four() -> Self {
        Self {
            sessions: 64,
            wall_time: "wall time (64 sessions)",
            wall_time_goal: Goal::RatioAtLeast(3.0),
            rss_goal: Goal::RatioAtLeast(4.0),
            deadline: CALL_TIMEOUT,
        }
    }

    /// 1,000 sessions in one process; a server that has not answered them all after
    /// two minutes (40 times the goal) fails the run rather than holding up the bench.
    pub fn thousand() -> Self {
        Self {
            sessions: 1000,
            wall_time: "wall time (1000 sessions)",
            wall_time_goal: Goal::AtMost(3000.0),
            rss_goal: Goal::AtMost(48.0),
            deadline: Duration::from_secs(120),
        }
    }
}

impl Workload for Concurrency {
    fn run(&mut self, target: &Target) -> anyhow::Result<Outcome> {
        let model = Model::one_command(|n| format!("echo ran-{n}"), "ran-{n}")?;
        let home = Home::new(&model.server.base_url())?;
        let server = start(target, &home)?;
        let mut ids = Vec::new();
        for n in 0..self.sessions {
            let prompt = format!("run the command {}", marker(n));
            ids.push(send_call(&server, "codex", json!({"prompt": prompt}))?);
        }
        let first_sent = ids.first().map(|(_, sent)| *sent);
        let deadline = Instant::now() + self.deadline;
        let mut last_result = None;
        let mut wrong = 0;
        for (n, (id, _)) in ids.iter().enumerate() {
            let left = deadline.saturating_duration_since(Instant::now());
            let reply = server.wait(*id, left).with_context(|| {
                format!(
                    "session {n} of {} had no answer {:?} after the calls began",
                    self.sessions, self.deadline
                )
            })?;
            let (_, content) = tool_result(&reply)?;
            // A lost command output is the server's failure, not the bench's: count it.
            if content != ANSWER_OK {
                wrong += 1;
                eprintln!("  session {n} answered {content:?} instead of {ANSWER_OK:?}");
            }
            last_result = last_result.max(Some(reply.at));
        }
        let rss_before_exit = server.peak_rss_kib()?;
        let exit = server.finish(EXIT_TIMEOUT)?;
        let (Some(first), Some(last)) = (first_sent, last_result) else {
            anyhow::bail!("no call was made");
        };
        Ok(Outcome::Measured(vec![
            Sample::ms(self.wall_time, self.wall_time_goal, last - first),
            Sample::mib("peak RSS", self.rss_goal, rss_before_exit),
            Sample::ms("total CPU", Goal::None, exit.cpu),
            Sample::count("sessions that lost the command output", wrong),
        ]))
    }
}
