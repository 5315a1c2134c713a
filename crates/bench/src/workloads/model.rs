//! The scripted model every workload talks to, and the model-side time of each call.
//!
//! Requests are answered from their content rather than from a queue, because sessions run
//! concurrently and because Codex may send requests deputy does not: a request whose last
//! input item is a tool output gets the final answer, any other gets the workload's tool
//! call (or the final answer when it has none).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use deputy_test_support::{MockModelServer, MockResponse, RecordedRequest};
use serde_json::{Value, json};

/// How long any scripted command may run; the flood needs far more than the default.
const COMMAND_TIMEOUT_MS: u64 = 120_000;

/// The final answer when the tool output held what the workload expected.
pub const ANSWER_OK: &str = "ok";
/// The final answer of a turn without a tool call.
pub const ANSWER_DONE: &str = "done";

/// Builds the shell script a session's model asks to run, from the session's number.
type ScriptFn = dyn Fn(u64) -> String + Send + Sync;

/// A mock model with a fixed behaviour per request.
pub struct Model {
    /// The server, for its base URL and its records.
    pub server: MockModelServer,
}

impl Model {
    /// Answers every request with [`ANSWER_DONE`] right away.
    pub fn text_only() -> anyhow::Result<Self> {
        Self::start(None, String::new())
    }

    /// Asks each session to run `script(session)` once, then answers [`ANSWER_OK`] when the
    /// tool output contains `expect` (with `{n}` replaced by the session number), else
    /// `missing: <start of the output>`.
    pub fn one_command(
        script: impl Fn(u64) -> String + Send + Sync + 'static,
        expect: &str,
    ) -> anyhow::Result<Self> {
        Self::start(Some(Arc::new(script)), expect.to_owned())
    }

    fn start(script: Option<Arc<ScriptFn>>, expect: String) -> anyhow::Result<Self> {
        let server = MockModelServer::try_start()?;
        let calls = AtomicU64::new(0);
        server.respond_with(move |request| {
            answer(request, script.as_deref(), &expect, &calls)
                .unwrap_or_else(|| MockResponse::text_turn(ANSWER_DONE))
        });
        Ok(Self { server })
    }

    /// The model time of every call marked `marker` (see [`marker`]): the sum over its
    /// requests of arrival to last byte sent, and when its last answer finished.
    pub fn time_of(&self, markers: &[String]) -> Vec<ModelTime> {
        let requests = self.server.requests();
        let timings = self.server.response_timings();
        markers
            .iter()
            .map(|marker| {
                let mut time = ModelTime::default();
                for timing in &timings {
                    let Some(request) = requests.get(timing.request.wrapping_sub(1)) else {
                        continue;
                    };
                    if !request.raw_body.contains(marker.as_str()) {
                        continue;
                    }
                    if let Some(finished) = timing.finished_at {
                        time.total += finished.saturating_duration_since(timing.received_at);
                        time.last_finish = time.last_finish.max(Some(finished));
                    }
                    time.requests += 1;
                }
                time
            })
            .collect()
    }
}

/// The model side of one call.
#[derive(Debug, Clone, Copy, Default)]
pub struct ModelTime {
    /// Arrival to last byte, summed over the call's requests.
    pub total: Duration,
    /// When the call's last answer had been sent.
    pub last_finish: Option<Instant>,
    /// How many model requests the call made.
    pub requests: usize,
}

/// The text to put in the prompt of session `n` so that its requests can be told apart.
pub fn marker(n: u64) -> String {
    format!("<<bench:{n}>>")
}

/// The session number in a request carrying a [`marker`].
fn session_of(raw_body: &str) -> Option<u64> {
    let start = raw_body.find("<<bench:")? + "<<bench:".len();
    let end = raw_body[start..].find(">>")? + start;
    raw_body[start..end].parse().ok()
}

fn answer(
    request: &RecordedRequest,
    script: Option<&ScriptFn>,
    expect: &str,
    calls: &AtomicU64,
) -> Option<MockResponse> {
    let session = session_of(&request.raw_body).unwrap_or(0);
    let input = request.body.get("input")?.as_array()?;
    let last = input.last()?;
    if last.get("type").and_then(Value::as_str) == Some("function_call_output") {
        let output = last.get("output").map(Value::to_string).unwrap_or_default();
        let wanted = expect.replace("{n}", &session.to_string());
        let text = if output.contains(&wanted) {
            ANSWER_OK.to_owned()
        } else {
            let head: String = output.chars().take(300).collect();
            format!("missing: {head}")
        };
        return Some(MockResponse::text_turn(text));
    }
    let script = script?(session);
    let (name, args) = shell_call(request.body.get("tools"), &script);
    let call = calls.fetch_add(1, Ordering::Relaxed);
    Some(MockResponse::function_call_turn(
        format!("call-bench-{call}"),
        name,
        args,
    ))
}

/// The shell tool the server offers and its arguments for `script`; deputy and Codex both
/// offer `shell_command`, older shapes are covered in case a build offers only those.
pub fn shell_call(tools: Option<&Value>, script: &str) -> (&'static str, Value) {
    let offered = |wanted: &str| {
        tools
            .and_then(Value::as_array)
            .is_some_and(|tools| tools.iter().any(|t| t.get("name") == Some(&json!(wanted))))
    };
    if offered("shell_command") || !offered("shell") && !offered("exec_command") {
        (
            "shell_command",
            json!({"command": script, "timeout_ms": COMMAND_TIMEOUT_MS}),
        )
    } else if offered("shell") {
        (
            "shell",
            json!({"command": ["bash", "-lc", script], "timeout_ms": COMMAND_TIMEOUT_MS}),
        )
    } else {
        (
            "exec_command",
            json!({"cmd": script, "yield_time_ms": COMMAND_TIMEOUT_MS}),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_number_is_read_back_from_the_marker() {
        let body = format!("{{\"input\":\"do it {}\"}}", marker(17));
        assert_eq!(session_of(&body), Some(17));
        assert_eq!(session_of("no marker"), None);
    }

    #[test]
    fn shell_call_prefers_shell_command_and_falls_back_to_shell() {
        let both = json!([{"name": "shell"}, {"name": "shell_command"}]);
        assert_eq!(shell_call(Some(&both), "ls").0, "shell_command");
        let argv_only = json!([{"name": "shell"}]);
        let (name, args) = shell_call(Some(&argv_only), "ls");
        assert_eq!(name, "shell");
        assert_eq!(args["command"], json!(["bash", "-lc", "ls"]));
        assert_eq!(shell_call(None, "ls").0, "shell_command");
    }
}
