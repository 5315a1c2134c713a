//! Turn overhead: 200 sequential `codex` calls whose model answers at once.

use std::time::Duration;

use super::model::{ANSWER_DONE, Model, marker};
use super::{EXIT_TIMEOUT, Outcome, Workload, codex_call, start};
use crate::report::{Goal, Sample, percentile};
use crate::target::{Home, Target};

/// How many calls one run makes.
pub const CALLS: u64 = 200;

/// One server, [`CALLS`] new sessions one after the other.
pub struct TurnOverhead;

impl Workload for TurnOverhead {
    fn run(&mut self, target: &Target) -> anyhow::Result<Outcome> {
        let model = Model::text_only()?;
        let home = Home::new(&model.server.base_url())?;
        let server = start(target, &home)?;
        let mut calls = Vec::new();
        for n in 0..CALLS {
            let prompt = format!("say done {}", marker(n));
            let (sent, reply, _) = codex_call(&server, &prompt, ANSWER_DONE)?;
            calls.push((sent, reply.at));
        }
        let peak = server.peak_rss_kib()?;
        let exit = server.finish(EXIT_TIMEOUT)?;
        let markers: Vec<String> = (0..CALLS).map(marker).collect();
        let model_times = model.time_of(&markers);
        let mut after_model = Vec::new();
        let mut latency = Vec::new();
        let mut not_model = Vec::new();
        for ((sent, result_at), model_time) in calls.iter().zip(&model_times) {
            let Some(finished) = model_time.last_finish else {
                anyhow::bail!("a call made no model request that finished");
            };
            after_model.push(ms(result_at.saturating_duration_since(finished)));
            let total = *result_at - *sent;
            latency.push(ms(total));
            not_model.push(ms(total.saturating_sub(model_time.total)));
        }
        let p = |values: &[f64], q| {
            Duration::from_secs_f64(percentile(values, q).unwrap_or(0.0) / 1000.0)
        };
        Ok(Outcome::Measured(vec![
            Sample::ms(
                "overhead p50 (result - model done)",
                Goal::RatioAtLeast(5.0),
                p(&after_model, 0.5),
            ),
            Sample::ms(
                "overhead p99 (result - model done)",
                Goal::None,
                p(&after_model, 0.99),
            ),
            Sample::ms("call latency p50", Goal::None, p(&latency, 0.5)),
            Sample::ms(
                "call latency - model time p50",
                Goal::None,
                p(&not_model, 0.5),
            ),
            Sample::ms(
                "call latency - model time p99",
                Goal::None,
                p(&not_model, 0.99),
            ),
            Sample::ms("total CPU (200 calls)", Goal::None, exit.cpu),
            Sample::mib("peak RSS", Goal::None, peak),
        ]))
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
