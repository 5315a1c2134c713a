//! The Streamable HTTP door (`deputy mcp-server --listen`): many HTTP sessions at once,
//! each running a short turn, and what one request costs over HTTP next to stdio.
//!
//! The client is plain HTTP/1.1 over `std::net`, one connection per request
//! (`Connection: close`), so the figures include a loopback TCP connect per request.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::model::{ANSWER_DONE, Model, marker};
use super::{EXIT_TIMEOUT, Outcome, Workload, start};
use crate::report::{Goal, Sample, percentile};
use crate::server::ServerProcess;
use crate::target::{Home, Kind, Target};

/// How long the server may take to announce its address.
const LISTEN_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one HTTP exchange may take (a turn included).
const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(300);
/// How many pings the overhead workload times per transport.
const PINGS: usize = 200;

/// `sessions` HTTP sessions opened at once, each `initialize`, then one `codex` call.
pub struct HttpSessions {
    pub sessions: u64,
}

/// Sequential `ping`s over stdio and over HTTP against the same binary.
pub struct HttpOverhead;

/// Starts `target` listening on a free loopback port; returns it and its `host:port`.
fn listen(target: &Target, home: &Home) -> anyhow::Result<(ServerProcess, String)> {
    let mut command = home.command(target);
    command.args(["--listen", "127.0.0.1:0"]);
    let server = ServerProcess::spawn(command)?;
    let deadline = Instant::now() + LISTEN_TIMEOUT;
    loop {
        let said = server.stderr_tail();
        if let Some((_, rest)) = said.split_once("listening on http://") {
            let authority = rest.split('/').next().unwrap_or_default().to_owned();
            return Ok((server, authority));
        }
        if Instant::now() > deadline {
            bail!("the server announced no address: {said}");
        }
        thread::sleep(Duration::from_millis(5));
    }
}

/// One POST to `/mcp`; returns the status, the session id header if any, and every
/// JSON-RPC message of the body (a JSON body or SSE `data:` lines).
fn post(
    authority: &str,
    session: Option<&str>,
    message: &Value,
) -> anyhow::Result<(u16, Option<String>, Vec<Value>)> {
    let body = serde_json::to_vec(message)?;
    let mut stream = TcpStream::connect(authority).context("connecting")?;
    stream.set_read_timeout(Some(EXCHANGE_TIMEOUT))?;
    stream.set_nodelay(true)?;
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if let Some(session) = session {
        head.push_str(&format!(
            "Mcp-Session-Id: {session}\r\nMCP-Protocol-Version: 2025-11-25\r\n"
        ));
    }
    head.push_str("\r\n");
    let mut request = head.into_bytes();
    request.extend_from_slice(&body);
    stream.write_all(&request)?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    let text = String::from_utf8_lossy(&response);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .with_context(|| format!("no HTTP status in {head:?}"))?;
    let session = head.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        name.eq_ignore_ascii_case("mcp-session-id")
            .then(|| value.trim().to_owned())
    });
    // Chunk sizes and SSE fields are lines of their own; only JSON lines matter.
    let messages = body
        .lines()
        .filter_map(|line| {
            let line = line.strip_prefix("data:").unwrap_or(line).trim();
            line.starts_with('{')
                .then(|| serde_json::from_str(line).ok())
                .flatten()
        })
        .collect();
    Ok((status, session, messages))
}

/// The answer to request `id` among `messages`.
fn answer(messages: &[Value], id: i64) -> Option<&Value> {
    messages
        .iter()
        .find(|m| m["id"] == json!(id) && (m.get("result").is_some() || m.get("error").is_some()))
}

/// A new, initialized 2025-11-25 session; returns its id.
fn open_session(authority: &str) -> anyhow::Result<String> {
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "deputy-bench", "version": "0"}
        }
    });
    let (status, session, messages) = post(authority, None, &initialize)?;
    if status != 200 || answer(&messages, 1).is_none() {
        bail!("initialize answered {status}: {messages:?}");
    }
    let session = session.context("no Mcp-Session-Id")?;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (status, _, _) = post(authority, Some(&session), &initialized)?;
    if status != 202 {
        bail!("notifications/initialized answered {status}");
    }
    Ok(session)
}

/// One session's short turn: whether its result carried the model's answer.
fn session_turn(authority: &str, n: u64) -> anyhow::Result<bool> {
    let session = open_session(authority)?;
    let call = json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "codex", "arguments": {"prompt": format!("say done {}", marker(n))}}
    });
    let (_, _, messages) = post(authority, Some(&session), &call)?;
    let Some(reply) = answer(&messages, 2) else {
        return Ok(false);
    };
    let text = reply["result"]["structuredContent"]["content"].as_str();
    Ok(text == Some(ANSWER_DONE))
}

/// Stops a listening server (SIGTERM, as a service manager would) and reaps it.
fn stop(server: ServerProcess) -> anyhow::Result<Duration> {
    server.terminate();
    Ok(server.finish(EXIT_TIMEOUT)?.cpu)
}

impl Workload for HttpSessions {
    fn run(&mut self, target: &Target) -> anyhow::Result<Outcome> {
        if target.kind == Kind::Codex {
            return Ok(Outcome::Unsupported(
                "codex mcp-server serves stdio only".into(),
            ));
        }
        let model = Model::text_only()?;
        let home = Home::new(&model.server.base_url())?;
        let (server, authority) = listen(target, &home)?;
        let started = Instant::now();
        let clients: Vec<_> = (0..self.sessions)
            .map(|n| {
                let authority = authority.clone();
                thread::Builder::new()
                    .stack_size(256 * 1024)
                    .spawn(move || session_turn(&authority, n))
            })
            .collect::<Result<_, _>>()?;
        let mut lost = 0;
        for client in clients {
            match client.join() {
                Ok(Ok(true)) => {}
                Ok(Ok(false)) => lost += 1,
                Ok(Err(err)) => {
                    lost += 1;
                    eprintln!("  an HTTP session failed: {err:#}");
                }
                Err(_) => lost += 1,
            }
        }
        let wall = started.elapsed();
        let peak = server.peak_rss_kib()?;
        let cpu = stop(server)?;
        Ok(Outcome::Measured(vec![
            Sample::ms("wall time (1000 HTTP sessions)", Goal::None, wall),
            Sample::mib("peak RSS", Goal::None, peak),
            Sample::ms("total CPU", Goal::None, cpu),
            Sample::count("sessions that lost their result", lost),
        ]))
    }
}

impl Workload for HttpOverhead {
    fn run(&mut self, target: &Target) -> anyhow::Result<Outcome> {
        if target.kind == Kind::Codex {
            return Ok(Outcome::Unsupported(
                "codex mcp-server serves stdio only".into(),
            ));
        }
        let model = Model::text_only()?;
        let home = Home::new(&model.server.base_url())?;
        let ping = |id: i64| json!({"jsonrpc": "2.0", "id": id, "method": "ping"});

        let server = start(target, &home)?;
        let mut stdio = Vec::with_capacity(PINGS);
        for _ in 0..PINGS {
            let sent = Instant::now();
            let reply = server.call("ping", json!({}), EXCHANGE_TIMEOUT)?;
            stdio.push(ms(reply.at - sent));
        }
        server.finish(EXIT_TIMEOUT)?;

        let (server, authority) = listen(target, &home)?;
        let session = open_session(&authority)?;
        let mut http = Vec::with_capacity(PINGS);
        for n in 0..PINGS {
            let id = i64::try_from(n)? + 10;
            let sent = Instant::now();
            let (status, _, messages) = post(&authority, Some(&session), &ping(id))?;
            if status != 200 || answer(&messages, id).is_none() {
                bail!("ping over HTTP answered {status}: {messages:?}");
            }
            http.push(ms(sent.elapsed()));
        }
        stop(server)?;
        let p = |values: &[f64], q| {
            Duration::from_secs_f64(percentile(values, q).unwrap_or(0.0) / 1000.0)
        };
        Ok(Outcome::Measured(vec![
            Sample::ms("ping round trip p50, stdio", Goal::None, p(&stdio, 0.5)),
            Sample::ms(
                "ping round trip p50, HTTP (new connection)",
                Goal::None,
                p(&http, 0.5),
            ),
            Sample::ms(
                "ping round trip p99, HTTP (new connection)",
                Goal::None,
                p(&http, 0.99),
            ),
        ]))
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
