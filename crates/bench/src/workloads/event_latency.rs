//! Event latency: the model streams 10,000 text deltas, one a millisecond (a fast model),
//! and each is timed from the moment the mock hands its SSE frame to the connection to the
//! moment the client reads the `codex/event` that carries it.

use std::collections::HashMap;
use std::time::Duration;

use deputy_test_support::{MockModelServer, MockResponse, SseEvent, responses};

use super::{EXIT_TIMEOUT, Outcome, Workload, codex_call, start};
use crate::report::{Goal, Sample, percentile};
use crate::target::{Home, Target};

/// How many deltas the answer streams.
const DELTAS: usize = 10_000;
/// The pause between two frames of the answer.
const PACE: Duration = Duration::from_millis(1);

/// One `codex` call whose answer streams [`DELTAS`] deltas.
pub struct EventLatency;

impl Workload for EventLatency {
    fn run(&mut self, target: &Target) -> anyhow::Result<Outcome> {
        let model = MockModelServer::try_start()?;
        let text: String = (0..DELTAS).map(delta_text).collect();
        let mut events: Vec<SseEvent> = vec![responses::created("resp-latency")];
        events.extend((0..DELTAS).map(|i| responses::text_delta(delta_text(i))));
        events.push(responses::message("msg-latency", &text));
        events.push(responses::completed("resp-latency"));
        model.push(MockResponse::sse(events).delay_between(PACE));
        model.record_frame_times(true);

        let home = Home::new(&model.base_url())?;
        let server = start(target, &home)?;
        server.record_deltas();
        codex_call(&server, "stream a long answer", &text)?;
        let arrived = server.take_deltas();
        server.finish(EXIT_TIMEOUT)?;

        // Frame 0 is `response.created`; delta i is frame i + 1 of the only request.
        let sent: HashMap<usize, _> = model
            .frame_times()
            .into_iter()
            .map(|frame| (frame.frame, frame.sent_at))
            .collect();
        let mut latencies = Vec::with_capacity(DELTAS);
        for (delta, read_at) in &arrived {
            let index = delta_index(delta)
                .ok_or_else(|| anyhow::anyhow!("a delta the model never sent: {delta:?}"))?;
            let sent_at = sent
                .get(&(index + 1))
                .ok_or_else(|| anyhow::anyhow!("no send time for delta {index}"))?;
            latencies.push(read_at.saturating_duration_since(*sent_at).as_secs_f64() * 1000.0);
        }
        anyhow::ensure!(
            latencies.len() == DELTAS,
            "{} of {DELTAS} deltas reached the client",
            latencies.len()
        );
        let p = |q| Duration::from_secs_f64(percentile(&latencies, q).unwrap_or(0.0) / 1000.0);
        Ok(Outcome::Measured(vec![
            Sample::ms("delta latency p50", Goal::None, p(0.5)),
            Sample::ms("delta latency p99", Goal::AtMost(1.0), p(0.99)),
            Sample::ms("delta latency max", Goal::None, p(1.0)),
        ]))
    }
}

/// The text of delta `i`: its number and a space, so that every delta is told apart.
fn delta_text(i: usize) -> String {
    format!("{i} ")
}

/// The number [`delta_text`] put in a delta.
fn delta_index(delta: &str) -> Option<usize> {
    delta.trim_end().parse().ok()
}
