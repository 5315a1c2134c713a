//! One MCP server process under measurement, driven over newline-delimited JSON-RPC.
//!
//! Lighter than the test client on purpose: the benchmark shares two cores with the server,
//! so the reader thread only timestamps each line and keeps responses, and notifications
//! are counted, not stored. The child is reaped with `wait4` to get its peak RSS and CPU.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use serde::Deserialize;
use serde_json::{Value, json};

/// The protocol version the benchmark client announces; both servers accept it.
const PROTOCOL_VERSION: &str = "2025-06-18";
/// How much of the end of stderr an error message shows.
const STDERR_TAIL: usize = 4096;

/// A response to one of our requests, stamped when its line was read.
#[derive(Debug, Clone)]
pub struct Reply {
    /// When the reader thread had the complete line.
    pub at: Instant,
    /// The whole JSON-RPC response.
    pub message: Value,
}

/// How the child ended: when, and the CPU it used.
///
/// Its peak memory is read from `/proc` instead ([`ServerProcess::peak_rss_kib`]): std
/// spawns with `CLONE_VM`, and Linux then folds the parent's own peak into the child's
/// `ru_maxrss` at exec, so a benchmark that grew large would be charged to the server.
#[derive(Debug, Clone, Copy)]
pub struct ExitStats {
    /// When `wait4` returned.
    pub exited_at: Instant,
    /// User plus system CPU time, reaped descendants included.
    pub cpu: Duration,
}

#[derive(Default)]
struct Inbox {
    replies: HashMap<i64, Reply>,
    /// Requests from the server (id, method) not answered yet.
    server_requests: Vec<(Value, String)>,
    notifications: u64,
    stdout_bytes: u64,
    closed: bool,
    /// The text of each `agent_message_delta` event and when its line was read, once
    /// [`ServerProcess::record_deltas`] asked for them.
    deltas: Option<Vec<(String, Instant)>>,
}

#[derive(Default)]
struct Shared {
    inbox: Mutex<Inbox>,
    arrived: Condvar,
    stderr: Mutex<Vec<u8>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A spawned server with piped stdio, in its own process group.
pub struct ServerProcess {
    pid: libc::pid_t,
    stdin: Mutex<Option<ChildStdin>>,
    shared: Arc<Shared>,
    next_id: AtomicI64,
    /// When `spawn` was called.
    pub spawned_at: Instant,
    reaped: bool,
}

impl ServerProcess {
    /// Starts `cmd`, a stdio JSON-RPC server (its subcommand already among its arguments).
    pub fn spawn(mut cmd: Command) -> anyhow::Result<Self> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        let program = cmd.get_program().to_string_lossy().into_owned();
        let spawned_at = Instant::now();
        let mut child = cmd.spawn().with_context(|| format!("starting {program}"))?;
        let pid = libc::pid_t::try_from(child.id()).context("child pid out of range")?;
        let stdin = child.stdin.take().context("child stdin not piped")?;
        let stdout = child.stdout.take().context("child stdout not piped")?;
        let stderr = child.stderr.take().context("child stderr not piped")?;
        // The child is reaped with wait4 in `finish`; std's handle is not used again.
        drop(child);
        let shared = Arc::new(Shared::default());
        let reader_shared = Arc::clone(&shared);
        thread::Builder::new()
            .name(format!("bench-stdout-{pid}"))
            .spawn(move || read_stdout(stdout, &reader_shared))?;
        let stderr_shared = Arc::clone(&shared);
        thread::Builder::new()
            .name(format!("bench-stderr-{pid}"))
            .spawn(move || read_stderr(stderr, &stderr_shared))?;
        Ok(Self {
            pid,
            stdin: Mutex::new(Some(stdin)),
            shared,
            next_id: AtomicI64::new(1),
            spawned_at,
            reaped: false,
        })
    }

    fn send(&self, message: &Value) -> anyhow::Result<()> {
        let mut line = serde_json::to_vec(message)?;
        line.push(b'\n');
        let mut stdin = lock(&self.stdin);
        let pipe = stdin.as_mut().context("stdin already closed")?;
        pipe.write_all(&line)
            .and_then(|()| pipe.flush())
            .map_err(|err| anyhow!("writing to the server: {err}\n{}", self.stderr_tail()))
    }

    /// Sends request `method` and returns its id and when it was written.
    pub fn request(&self, method: &str, params: Value) -> anyhow::Result<(i64, Instant)> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let sent_at = Instant::now();
        self.send(&message)?;
        Ok((id, sent_at))
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: Value) -> anyhow::Result<()> {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    /// Waits up to `timeout` for the response to request `id`.
    pub fn wait(&self, id: i64, timeout: Duration) -> anyhow::Result<Reply> {
        let deadline = Instant::now() + timeout;
        let mut inbox = lock(&self.shared.inbox);
        loop {
            if !inbox.server_requests.is_empty() {
                let requests = std::mem::take(&mut inbox.server_requests);
                drop(inbox);
                for (request_id, method) in requests {
                    self.answer_server_request(request_id, &method)?;
                }
                inbox = lock(&self.shared.inbox);
                continue;
            }
            if let Some(reply) = inbox.replies.remove(&id) {
                return Ok(reply);
            }
            let now = Instant::now();
            if inbox.closed || now >= deadline {
                let why = if inbox.closed {
                    "the server closed its stdout"
                } else {
                    "timed out"
                };
                drop(inbox);
                bail!(
                    "no response to request {id} ({why} after {:?})\nstderr: {}",
                    timeout,
                    self.stderr_tail()
                );
            }
            inbox = self
                .shared
                .arrived
                .wait_timeout(inbox, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// The policy is `never`, so servers should not ask; answer rather than hang if they do.
    fn answer_server_request(&self, id: Value, method: &str) -> anyhow::Result<()> {
        let answer = if method == "elicitation/create" {
            json!({"jsonrpc": "2.0", "id": id, "result": {"decision": "approved"}})
        } else {
            json!({"jsonrpc": "2.0", "id": id,
                   "error": {"code": -32601, "message": "not supported by the bench"}})
        };
        self.send(&answer)
    }

    /// Sends request `method` and waits for its response; an error response is an error.
    pub fn call(&self, method: &str, params: Value, timeout: Duration) -> anyhow::Result<Reply> {
        let (id, _) = self.request(method, params)?;
        let reply = self.wait(id, timeout)?;
        if let Some(error) = reply.message.get("error") {
            bail!("{method} failed: {error}");
        }
        Ok(reply)
    }

    /// The MCP handshake: `initialize`, then `notifications/initialized`.
    pub fn initialize(&self, timeout: Duration) -> anyhow::Result<Reply> {
        let reply = self.call(
            "initialize",
            json!({
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "deputy-bench", "version": "0"},
            }),
            timeout,
        )?;
        self.notify("notifications/initialized", json!({}))?;
        Ok(reply)
    }

    /// From now on, keeps the text and arrival time of every `agent_message_delta` event.
    pub fn record_deltas(&self) {
        lock(&self.shared.inbox).deltas.get_or_insert_with(Vec::new);
    }

    /// The deltas recorded since [`ServerProcess::record_deltas`], in arrival order.
    pub fn take_deltas(&self) -> Vec<(String, Instant)> {
        lock(&self.shared.inbox).deltas.take().unwrap_or_default()
    }

    /// The child's resident set now (`VmRSS`), in KiB.
    pub fn rss_kib(&self) -> anyhow::Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid))
            .context("reading the server's /proc status")?;
        status_field_kib(&status, "VmRSS").context("no VmRSS in /proc status")
    }

    /// How many notifications and stdout bytes arrived so far.
    pub fn traffic(&self) -> (u64, u64) {
        let inbox = lock(&self.shared.inbox);
        (inbox.notifications, inbox.stdout_bytes)
    }

    /// The child's peak resident set so far (`VmHWM`), in KiB.
    pub fn peak_rss_kib(&self) -> anyhow::Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid))
            .context("reading the server's /proc status")?;
        status_field_kib(&status, "VmHWM").context("no VmHWM in /proc status")
    }

    /// Asks the server to stop (SIGTERM), as for one that does not serve stdin.
    pub fn terminate(&self) {
        // SAFETY: kill(2) has no memory-safety preconditions; the pid is our child's,
        // not reaped yet (`finish` reaps it).
        unsafe {
            libc::kill(self.pid, libc::SIGTERM);
        }
    }

    /// The end of what the server wrote to stderr, for error messages.
    pub fn stderr_tail(&self) -> String {
        let stderr = lock(&self.shared.stderr);
        let start = stderr.len().saturating_sub(STDERR_TAIL);
        String::from_utf8_lossy(&stderr[start..]).into_owned()
    }

    /// Closes stdin (the shutdown signal of a stdio server) and reaps the child, killing
    /// its process group if it has not exited within `timeout`.
    pub fn finish(mut self, timeout: Duration) -> anyhow::Result<ExitStats> {
        lock(&self.stdin).take();
        let pid = self.pid;
        let (tx, rx) = mpsc::channel();
        thread::Builder::new()
            .name(format!("bench-reap-{pid}"))
            .spawn(move || {
                let _ = tx.send(reap(pid));
            })?;
        let result = match rx.recv_timeout(timeout) {
            Ok(result) => result,
            Err(_) => {
                kill_group(pid);
                let _ = rx.recv_timeout(Duration::from_secs(10));
                self.reaped = true;
                bail!(
                    "the server did not exit within {timeout:?} of stdin closing\nstderr: {}",
                    self.stderr_tail()
                );
            }
        };
        self.reaped = true;
        // Whatever it started in its group must not outlive the measurement.
        kill_group(pid);
        result
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if !self.reaped {
            lock(&self.stdin).take();
            kill_group(self.pid);
            let _ = reap(self.pid);
        }
    }
}

/// Waits for `pid` to exit and returns its resource usage.
fn reap(pid: libc::pid_t) -> anyhow::Result<ExitStats> {
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value for this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: both pointers point to live, writable locals for the duration of the call.
        let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if rc == pid {
            break;
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(anyhow!("wait4({pid}) failed: {err}"));
        }
    }
    let exited_at = Instant::now();
    let cpu = timeval(usage.ru_utime) + timeval(usage.ru_stime);
    Ok(ExitStats { exited_at, cpu })
}

fn timeval(tv: libc::timeval) -> Duration {
    let secs = u64::try_from(tv.tv_sec).unwrap_or(0);
    let micros = u32::try_from(tv.tv_usec).unwrap_or(0);
    Duration::from_secs(secs) + Duration::from_micros(u64::from(micros))
}

fn kill_group(pid: libc::pid_t) {
    // SAFETY: kill(2) has no memory-safety preconditions; -pid names the child's group.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
}

/// The value in KiB of `field` (e.g. `VmHWM`) in a `/proc/<pid>/status` text.
pub fn status_field_kib(status: &str, field: &str) -> Option<u64> {
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        rest.trim().strip_suffix("kB")?.trim().parse().ok()
    })
}

/// Just enough of an incoming message to route it; unknown fields (params) are skipped.
#[derive(Deserialize)]
struct Incoming {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

fn read_stdout(stdout: impl Read, shared: &Shared) {
    let mut reader = BufReader::with_capacity(1 << 20, stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let at = Instant::now();
        let parsed: Option<Incoming> = serde_json::from_slice(&line).ok();
        let mut inbox = lock(&shared.inbox);
        inbox.stdout_bytes += line.len() as u64;
        let Some(message) = parsed else {
            continue;
        };
        match (message.id, message.method) {
            (Some(id), Some(method)) => {
                inbox.server_requests.push((id, method));
                drop(inbox);
                shared.arrived.notify_all();
            }
            (Some(id), None) => {
                if let Some(id) = id.as_i64() {
                    let mut reply = json!({"jsonrpc": "2.0", "id": id});
                    if let Some(result) = message.result {
                        reply["result"] = result;
                    }
                    if let Some(error) = message.error {
                        reply["error"] = error;
                    }
                    inbox.replies.insert(id, Reply { at, message: reply });
                    drop(inbox);
                    shared.arrived.notify_all();
                }
            }
            (None, _) => {
                inbox.notifications += 1;
                if let Some(deltas) = inbox.deltas.as_mut()
                    && let Some(delta) = agent_message_delta(&line)
                {
                    deltas.push((delta, at));
                }
            }
        }
    }
    lock(&shared.inbox).closed = true;
    shared.arrived.notify_all();
}

/// The text of a `codex/event` notification carrying an `agent_message_delta`.
fn agent_message_delta(line: &[u8]) -> Option<String> {
    const MARKER: &[u8] = b"\"agent_message_delta\"";
    #[derive(Deserialize)]
    struct Notification {
        params: Params,
    }
    #[derive(Deserialize)]
    struct Params {
        msg: Msg,
    }
    #[derive(Deserialize)]
    struct Msg {
        #[serde(rename = "type")]
        kind: String,
        delta: String,
    }
    // Most lines are not deltas: look before decoding.
    line.windows(MARKER.len()).position(|w| w == MARKER)?;
    let notification: Notification = serde_json::from_slice(line).ok()?;
    (notification.params.msg.kind == "agent_message_delta").then_some(notification.params.msg.delta)
}

fn read_stderr(mut stderr: impl Read, shared: &Shared) {
    let mut chunk = [0u8; 8192];
    loop {
        match stderr.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let mut buffer = lock(&shared.stderr);
                buffer.extend_from_slice(&chunk[..n]);
                // Only the tail is ever shown; a chatty server must not grow the bench.
                if buffer.len() > 4 * STDERR_TAIL {
                    let cut = buffer.len() - STDERR_TAIL;
                    buffer.drain(..cut);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_field_reads_kib_values() {
        let status = "Name:\tdeputy\nVmPeak:\t  20000 kB\nVmHWM:\t    7344 kB\nVmRSS:\t 7000 kB\n";
        assert_eq!(status_field_kib(status, "VmHWM"), Some(7344));
        assert_eq!(status_field_kib(status, "VmRSS"), Some(7000));
        assert_eq!(status_field_kib(status, "VmSwap"), None);
    }

    #[test]
    fn agent_message_deltas_are_read_from_codex_events_only() {
        let delta = br#"{"jsonrpc":"2.0","method":"codex/event","params":{"_meta":{"requestId":1},"id":"1","msg":{"type":"agent_message_delta","delta":"d7 "}}}"#;
        assert_eq!(agent_message_delta(delta).as_deref(), Some("d7 "));
        let other = br#"{"jsonrpc":"2.0","method":"codex/event","params":{"msg":{"type":"agent_message","message":"agent_message_delta"}}}"#;
        assert_eq!(agent_message_delta(other), None);
        assert_eq!(
            agent_message_delta(b"not json \"agent_message_delta\""),
            None
        );
    }
}
