//! Unified exec next to `shell_command`: how long a tool call takes as the model sees it,
//! from the last byte of the answer that asked for it to the arrival of the request that
//! carries its output (deputy running the tool and building the next request included).
//!
//! Each of [`CALLS`] sequential `codex` calls runs, with a `gpt-5-codex` model (which is
//! offered unified exec): `exec_command` of `echo`, which exits within the call; then
//! `exec_command` of `head -n1` on a terminal (`tty`), still running when its
//! `yield_time_ms` ends; then `write_stdin` of one line, which `head` prints before it
//! exits. On a terminal because Codex gives a command without one no input at all (its
//! `head` reads the end of input and exits at once), so that Codex can run this too. A
//! second server run with the default model asks for the same `echo` through
//! `shell_command`.

use std::time::Duration;

use deputy_test_support::{MockModelServer, MockResponse, RecordedRequest};
use serde_json::{Value, json};

use super::model::{ANSWER_OK, marker};
use super::{CALL_TIMEOUT, EXIT_TIMEOUT, Outcome, Workload, send_call, start, tool_result};
use crate::report::{Goal, Sample, percentile};
use crate::target::{Home, Target};

/// How many calls each server makes.
pub const CALLS: u64 = 50;
/// The `yield_time_ms` of the `head -n1` start: short, so the session is left running.
const START_YIELD_MS: u64 = 100;

/// Which tools a run's model asks for.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tools {
    /// `shell_command` once.
    ShellCommand,
    /// `exec_command` (exits), `exec_command` (keeps running), `write_stdin`.
    UnifiedExec,
}

/// The workload.
pub struct UnifiedExec;

impl Workload for UnifiedExec {
    fn run(&mut self, target: &Target) -> anyhow::Result<Outcome> {
        let shell = gaps(target, Tools::ShellCommand)?;
        let unified = gaps(target, Tools::UnifiedExec)?;
        let p50 = |gaps: &[Vec<f64>], step: usize| {
            let values: Vec<f64> = gaps.iter().filter_map(|g| g.get(step).copied()).collect();
            Duration::from_secs_f64(percentile(&values, 0.5).unwrap_or(0.0) / 1000.0)
        };
        Ok(Outcome::Measured(vec![
            Sample::ms(
                "shell_command `echo` round trip p50",
                Goal::None,
                p50(&shell, 0),
            ),
            Sample::ms(
                "exec_command `echo` round trip p50",
                Goal::None,
                p50(&unified, 0),
            ),
            Sample::ms(
                "write_stdin line to a running `head -n1` (tty) and back p50",
                Goal::None,
                p50(&unified, 2),
            ),
        ]))
    }
}

/// Runs [`CALLS`] calls asking for `tools`; per call, the model-side gap after each answer
/// that asked for a tool, in milliseconds.
fn gaps(target: &Target, tools: Tools) -> anyhow::Result<Vec<Vec<f64>>> {
    let model = MockModelServer::try_start()?;
    model.respond_with(move |request| answer(request, tools));
    let home = Home::new(&model.base_url())?;
    let server = start(target, &home)?;
    for n in 0..CALLS {
        let mut arguments = json!({"prompt": format!("run it {}", marker(n))});
        if tools == Tools::UnifiedExec {
            arguments["model"] = json!("gpt-5-codex");
        }
        let (id, _) = send_call(&server, "codex", arguments)?;
        let (_, content) = tool_result(&server.wait(id, CALL_TIMEOUT)?)?;
        anyhow::ensure!(content == ANSWER_OK, "call {n} answered {content:?}");
    }
    server.finish(EXIT_TIMEOUT)?;
    let requests = model.requests();
    let timings = model.response_timings();
    Ok((0..CALLS)
        .map(|n| {
            let marker = marker(n);
            let mut mine: Vec<_> = timings
                .iter()
                .filter(|t| {
                    requests
                        .get(t.request.wrapping_sub(1))
                        .is_some_and(|r| r.raw_body.contains(&marker))
                })
                .collect();
            mine.sort_by_key(|t| t.received_at);
            mine.windows(2)
                .filter_map(|pair| {
                    let asked_done = pair[0].finished_at?;
                    Some(
                        pair[1]
                            .received_at
                            .saturating_duration_since(asked_done)
                            .as_secs_f64()
                            * 1000.0,
                    )
                })
                .collect()
        })
        .collect())
}

/// The model's next step, from the tool outputs the request carries.
fn answer(request: &RecordedRequest, tools: Tools) -> MockResponse {
    let outputs: Vec<String> = request.body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == "function_call_output")
        .map(|item| item["output"].as_str().unwrap_or_default().to_owned())
        .collect();
    let call = |name: &str, args: Value| {
        MockResponse::function_call_turn(format!("bench-{}", outputs.len()), name, args)
    };
    let expect = |output: &str, wanted: &str| {
        if output.contains(wanted) {
            None
        } else {
            let head: String = output.chars().take(300).collect();
            Some(MockResponse::text_turn(format!(
                "missing {wanted:?}: {head}"
            )))
        }
    };
    match (tools, outputs.as_slice()) {
        (Tools::ShellCommand, []) => call("shell_command", json!({"command": "echo hi"})),
        (Tools::UnifiedExec, []) => call("exec_command", json!({"cmd": "echo hi"})),
        (Tools::UnifiedExec, [first]) => expect(first, "hi").unwrap_or_else(|| {
            call(
                "exec_command",
                json!({"cmd": "head -n1", "tty": true, "yield_time_ms": START_YIELD_MS}),
            )
        }),
        (Tools::UnifiedExec, [_, started]) => match session_of(started) {
            Some(session) => call(
                "write_stdin",
                json!({"session_id": session, "chars": "ping\n", "yield_time_ms": 10_000}),
            ),
            None => MockResponse::text_turn(format!("no session in: {started}")),
        },
        (_, [.., last]) => expect(
            last,
            if tools == Tools::ShellCommand {
                "hi"
            } else {
                "ping"
            },
        )
        .unwrap_or_else(|| MockResponse::text_turn(ANSWER_OK)),
    }
}

/// The session id an `exec_command` output announces.
fn session_of(output: &str) -> Option<u64> {
    let rest = output.split("session ID ").nth(1)?;
    rest.split_whitespace().next()?.parse().ok()
}
