//! MCP tool call overhead: sequential `codex` calls whose model calls the `echo` tool of a
//! local stdio MCP server (`server-everything`, configured as `[mcp_servers.bench]`); the
//! figure is what the agent adds between the model's call and the result in its next request.

use std::fs::OpenOptions;
use std::io::Write;
use std::time::Duration;

use anyhow::Context;
use deputy_test_support::{MockModelServer, MockResponse, NodeMcpServers, SseEvent, responses};
use serde_json::{Value, json};

use super::model::{ANSWER_OK, Model, marker};
use super::{EXIT_TIMEOUT, Outcome, Workload, codex_call, start};
use crate::report::{Goal, Sample, percentile};
use crate::target::{Home, Target};

/// How many calls one run makes.
pub const CALLS: u64 = 50;

/// One server, [`CALLS`] sessions one after the other, each one MCP tool call.
pub struct McpToolCall;

impl Workload for McpToolCall {
    fn run(&mut self, target: &Target) -> anyhow::Result<Outcome> {
        let servers = NodeMcpServers::install().map_err(anyhow::Error::msg)?;
        let model = echo_model()?;
        let home = Home::new(&model.server.base_url())?;
        let mut config = OpenOptions::new()
            .append(true)
            .open(home.path().join("config.toml"))
            .context("opening config.toml")?;
        writeln!(
            config,
            "[mcp_servers.bench]\ncommand = \"node\"\nargs = [{}, \"stdio\"]",
            Value::String(servers.everything().display().to_string())
        )
        .context("writing config.toml")?;
        let server = start(target, &home)?;
        for n in 0..CALLS {
            codex_call(&server, &format!("echo {}", marker(n)), ANSWER_OK)?;
        }
        let exit = server.finish(EXIT_TIMEOUT)?;
        let overheads = overheads(&model.server, CALLS)?;
        let p = |q| Duration::from_secs_f64(percentile(&overheads, q).unwrap_or(0.0) / 1000.0);
        Ok(Outcome::Measured(vec![
            Sample::ms(
                "MCP call overhead p50 (model's call sent -> result requested)",
                Goal::None,
                p(0.5),
            ),
            Sample::ms("MCP call overhead p99", Goal::None, p(0.99)),
            Sample::ms("total CPU (50 calls)", Goal::None, exit.cpu),
        ]))
    }
}

/// A model that calls `echo` of `mcp__bench__` with the session's marker, then answers
/// [`ANSWER_OK`] when the tool's output echoes it.
fn echo_model() -> anyhow::Result<Model> {
    let server = MockModelServer::try_start()?;
    server.respond_with(|request| {
        let input = request.body["input"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let last = input.last().cloned().unwrap_or_default();
        let marker = session_marker(&request.raw_body).unwrap_or_default();
        if last["type"] == "function_call_output" {
            let echoed = last["output"]
                .to_string()
                .contains(&format!("Echo: {marker}"));
            return MockResponse::text_turn(if echoed { ANSWER_OK } else { "missing echo" });
        }
        MockResponse::sse(vec![
            responses::created("resp-bench"),
            SseEvent::new(
                "response.output_item.done",
                json!({"item": {
                    "type": "function_call",
                    "call_id": format!("call-{marker}"),
                    "namespace": "mcp__bench__",
                    "name": "echo",
                    "arguments": json!({"message": marker}).to_string(),
                }}),
            ),
            responses::completed("resp-bench"),
        ])
    });
    Ok(Model { server })
}

/// The `<<bench:N>>` marker a request carries.
fn session_marker(raw_body: &str) -> Option<String> {
    let start = raw_body.find("<<bench:")?;
    let end = raw_body[start..].find(">>")? + start + 2;
    Some(raw_body[start..end].to_string())
}

/// Per call, in ms: from the last byte of the answer holding the tool call to the arrival
/// of the request carrying its output.
fn overheads(model: &MockModelServer, calls: u64) -> anyhow::Result<Vec<f64>> {
    let requests = model.requests();
    let timings = model.response_timings();
    (0..calls)
        .map(|n| {
            let marker = marker(n);
            let mut first_answer = None;
            for timing in &timings {
                let Some(request) = requests.get(timing.request.wrapping_sub(1)) else {
                    continue;
                };
                if !request.raw_body.contains(&marker) {
                    continue;
                }
                let is_output = request.body["input"]
                    .as_array()
                    .and_then(|items| items.last())
                    .is_some_and(|item| item["type"] == "function_call_output");
                match (is_output, first_answer) {
                    (false, None) => first_answer = timing.finished_at,
                    (true, Some(sent)) => {
                        return Ok(timing
                            .received_at
                            .saturating_duration_since(sent)
                            .as_secs_f64()
                            * 1000.0);
                    }
                    _ => {}
                }
            }
            anyhow::bail!("call {n} made no request carrying its tool output")
        })
        .collect()
}
