//! The workloads of the benchmark, each measured against one server binary per run.

mod cold_start;
mod concurrency;
mod event_latency;
mod flood;
mod front_doors;
mod http;
mod idle_memory;
mod launcher;
mod mcp_tool;
pub mod model;
mod patch;
mod resume;
mod turns;
mod unified_exec;

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::report::Sample;
use crate::server::{Reply, ServerProcess};
use crate::target::{Home, Target};

/// Every workload's name, in the order they run and print.
pub const NAMES: [&str; 15] = [
    "cold-start",
    "front-doors",
    "launcher",
    "turn-overhead",
    "concurrency",
    "concurrency-1000",
    "idle-memory",
    "event-latency",
    "output-flood",
    "resume",
    "patch",
    "http-sessions",
    "http-overhead",
    "mcp-tool-call",
    "unified-exec",
];

/// How long the handshake may take, start-up included.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one tool call may take; the flood and Codex's slowest paths fit well inside.
pub(crate) const CALL_TIMEOUT: Duration = Duration::from_secs(300);
/// How long a server may take to exit once its stdin is closed.
pub(crate) const EXIT_TIMEOUT: Duration = Duration::from_secs(30);

/// What one run of a workload produced.
#[derive(Debug)]
pub enum Outcome {
    /// The figures of this run.
    Measured(Vec<Sample>),
    /// The server cannot do what the workload needs; the text says why.
    Unsupported(String),
}

/// A workload; it may keep state between runs against the same target (a prepared session).
pub trait Workload {
    /// Runs it once against `target`.
    fn run(&mut self, target: &Target) -> anyhow::Result<Outcome>;
}

/// The workload called `name`, if there is one.
pub fn create(name: &str) -> Option<Box<dyn Workload>> {
    Some(match name {
        "cold-start" => Box::new(cold_start::ColdStart),
        "front-doors" => Box::new(front_doors::FrontDoors),
        "launcher" => Box::new(launcher::Launcher),
        "turn-overhead" => Box::new(turns::TurnOverhead),
        "concurrency" => Box::new(concurrency::Concurrency::sixty_four()),
        "concurrency-1000" => Box::new(concurrency::Concurrency::thousand()),
        "idle-memory" => Box::new(idle_memory::IdleMemory),
        "event-latency" => Box::new(event_latency::EventLatency),
        "output-flood" => Box::new(flood::OutputFlood),
        "resume" => Box::new(resume::Resume::default()),
        "patch" => Box::new(patch::Patch::default()),
        "http-sessions" => Box::new(http::HttpSessions { sessions: 1000 }),
        "http-overhead" => Box::new(http::HttpOverhead),
        "mcp-tool-call" => Box::new(mcp_tool::McpToolCall),
        "unified-exec" => Box::new(unified_exec::UnifiedExec),
        _ => return None,
    })
}

/// Spawns `target` in `home` and completes the MCP handshake.
pub(crate) fn start(target: &Target, home: &Home) -> anyhow::Result<ServerProcess> {
    let server = ServerProcess::spawn(home.command(target))?;
    server
        .initialize(HANDSHAKE_TIMEOUT)
        .context("MCP handshake")?;
    Ok(server)
}

/// Sends a `tools/call` of `tool` and returns its id and when it was sent.
pub(crate) fn send_call(
    server: &ServerProcess,
    tool: &str,
    arguments: Value,
) -> anyhow::Result<(i64, Instant)> {
    server.request("tools/call", json!({"name": tool, "arguments": arguments}))
}

/// The `threadId` and `content` of a successful tool result; a failed one is an error
/// carrying its text.
pub(crate) fn tool_result(reply: &Reply) -> anyhow::Result<(String, String)> {
    let message = &reply.message;
    if let Some(error) = message.get("error") {
        bail!("tools/call failed: {error}");
    }
    let result = &message["result"];
    let text = result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    if result["isError"] == json!(true) {
        bail!("tool result is an error: {text}");
    }
    let structured = &result["structuredContent"];
    let thread = structured["threadId"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let content = structured["content"].as_str().map_or(text, str::to_owned);
    Ok((thread, content))
}

/// Calls `codex` with `prompt` and waits for the result, which must be `expected`.
pub(crate) fn codex_call(
    server: &ServerProcess,
    prompt: &str,
    expected: &str,
) -> anyhow::Result<(Instant, Reply, String)> {
    let (id, sent) = send_call(server, "codex", json!({"prompt": prompt}))?;
    let reply = server.wait(id, CALL_TIMEOUT)?;
    let (thread, content) = tool_result(&reply)?;
    if content != expected {
        bail!("the call answered {content:?}, expected {expected:?}");
    }
    Ok((sent, reply, thread))
}
