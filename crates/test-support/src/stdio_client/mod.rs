//! A synchronous client for a child process speaking newline-delimited JSON-RPC on stdio.
//!
//! Every stdout line is kept, in order, in one log; waits search that log first, so a
//! message that arrived before the test asked for it is never lost.

mod background_write;
mod mcp_session;

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

pub use background_write::BackgroundWrite;
pub use mcp_session::McpSession;

/// How many recent messages a failed wait prints.
const DIAGNOSTIC_MESSAGES: usize = 20;
/// How much of the end of stderr a failed wait prints.
const DIAGNOSTIC_STDERR_BYTES: usize = 8 * 1024;
/// How often [`StdioClient::wait_exit`] checks the child; std offers no wait with timeout.
const EXIT_POLL_INTERVAL: Duration = Duration::from_millis(10);

/// Locks `mutex`, ignoring poisoning so diagnostics survive a panicking test thread.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Everything read from the child's stdout so far.
#[derive(Default)]
struct Inbox {
    log: Vec<Value>,
    /// Each line as the child wrote it, without its newline: numbers a `Value` cannot
    /// hold exactly (ids beyond 64 bits) are only seen as written here.
    lines: Vec<String>,
    /// Set when stdout reached end of file: nothing more will arrive.
    closed: bool,
}

/// State shared with the reader threads.
#[derive(Default)]
struct Shared {
    inbox: Mutex<Inbox>,
    /// Signalled on every new message and when stdout closes.
    arrived: Condvar,
    stderr: Mutex<Vec<u8>>,
    /// Signalled whenever stderr output arrives.
    stderr_grew: Condvar,
    /// Whether the stdout reader is told to stop reading.
    paused: Mutex<bool>,
    /// Signalled when reading resumes.
    resumed: Condvar,
}

/// A child process driven over newline-delimited JSON-RPC on its stdin and stdout.
///
/// Stdout lines that are not JSON are recorded as `{"__unparsed": "<line>"}`; stderr is
/// captured for [`StdioClient::stderr_text`]. The child runs in its own process group,
/// which is killed when the client is dropped.
pub struct StdioClient {
    child: Mutex<Child>,
    pid: u32,
    stdin: Mutex<Option<ChildStdin>>,
    shared: Arc<Shared>,
    next_id: AtomicI64,
    write_errors: Mutex<Vec<String>>,
}

impl StdioClient {
    /// Spawns `cmd` with piped stdio.
    ///
    /// # Panics
    /// When the process cannot be started; see [`StdioClient::try_spawn`].
    pub fn spawn(cmd: Command) -> Self {
        let program = cmd.get_program().to_string_lossy().into_owned();
        match Self::try_spawn(cmd) {
            Ok(client) => client,
            Err(err) => panic!("could not spawn {program}: {err}"),
        }
    }

    /// Spawns `cmd` with piped stdio, reporting a failure to start it.
    pub fn try_spawn(mut cmd: Command) -> io::Result<Self> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // Its own group lets Drop also kill whatever the child started.
        cmd.process_group(0);
        let mut child = cmd.spawn()?;
        let missing = |name: &str| io::Error::other(format!("child {name} was not piped"));
        let stdin = child.stdin.take().ok_or_else(|| missing("stdin"))?;
        let stdout = child.stdout.take().ok_or_else(|| missing("stdout"))?;
        let stderr = child.stderr.take().ok_or_else(|| missing("stderr"))?;
        let shared = Arc::new(Shared::default());
        let pid = child.id();

        let stdout_shared = Arc::clone(&shared);
        let stdout_thread = thread::Builder::new()
            .name(format!("stdio-client-stdout-{pid}"))
            .spawn(move || read_stdout(stdout, &stdout_shared));
        let stderr_shared = Arc::clone(&shared);
        let stderr_thread = thread::Builder::new()
            .name(format!("stdio-client-stderr-{pid}"))
            .spawn(move || read_stderr(stderr, &stderr_shared));
        if let Err(err) = stdout_thread.and(stderr_thread) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(err);
        }
        Ok(Self {
            child: Mutex::new(child),
            pid,
            stdin: Mutex::new(Some(stdin)),
            shared,
            next_id: AtomicI64::new(1),
            write_errors: Mutex::new(Vec::new()),
        })
    }

    /// The child's process id (also its process group id).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Writes `message` as one JSON line.
    pub fn send(&self, message: &Value) {
        self.send_raw(&message.to_string());
    }

    /// Writes `line` followed by `\n`, verbatim.
    ///
    /// A write failure (the child is gone) is not an error here: it is remembered and
    /// reported by the next failed wait, next to the child's stderr.
    pub fn send_raw(&self, line: &str) {
        let mut stdin = lock(&self.stdin);
        let result = match stdin.as_mut() {
            Some(pipe) => pipe
                .write_all(format!("{line}\n").as_bytes())
                .and_then(|()| pipe.flush()),
            None => Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "stdin was closed by the test",
            )),
        };
        if let Err(err) = result {
            let shown: String = line.chars().take(200).collect();
            lock(&self.write_errors).push(format!("writing {shown:?} failed: {err}"));
        }
    }

    /// Sends a JSON-RPC request and returns its id; ids count up from 1.
    pub fn request(&self, method: &str, params: Value) -> i64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if !params.is_null() {
            message["params"] = params;
        }
        self.send(&message);
        id
    }

    /// Sends a JSON-RPC notification (no id).
    pub fn notify(&self, method: &str, params: Value) {
        let mut message = json!({"jsonrpc": "2.0", "method": method});
        if !params.is_null() {
            message["params"] = params;
        }
        self.send(&message);
    }

    /// Answers the child's request `id` with `result`.
    pub fn respond(&self, id: Value, result: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    /// Answers the child's request `id` with a JSON-RPC error.
    pub fn respond_error(&self, id: Value, code: i64, message: &str) {
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
        );
    }

    /// The first message in the log matching `pred`, waiting up to `timeout` for one.
    ///
    /// The whole log is searched first, so the same message can be returned again; use a
    /// predicate that singles out the one you want (an id, a method and a field).
    pub fn wait_for(
        &self,
        pred: impl Fn(&Value) -> bool,
        timeout: Duration,
    ) -> Result<Value, String> {
        let deadline = Instant::now() + timeout;
        let mut inbox = lock(&self.shared.inbox);
        let mut searched = 0;
        loop {
            if let Some(found) = inbox.log[searched..].iter().find(|message| pred(message)) {
                return Ok(found.clone());
            }
            searched = inbox.log.len();
            if inbox.closed {
                drop(inbox);
                return Err(
                    self.diagnose("the child closed its stdout before a matching message arrived")
                );
            }
            let now = Instant::now();
            if now >= deadline {
                drop(inbox);
                return Err(self.diagnose(&format!("no matching message within {timeout:?}")));
            }
            inbox = self
                .shared
                .arrived
                .wait_timeout(inbox, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// The response (result or error) to request `id`.
    pub fn wait_response(&self, id: impl Into<Value>, timeout: Duration) -> Result<Value, String> {
        let id = id.into();
        self.wait_for(
            |message| {
                message.get("id") == Some(&id)
                    && message.get("method").is_none()
                    && (message.get("result").is_some() || message.get("error").is_some())
            },
            timeout,
        )
        .map_err(|err| format!("waiting for the response to request {id}: {err}"))
    }

    /// Every message received so far, in order.
    pub fn messages(&self) -> Vec<Value> {
        lock(&self.shared.inbox).log.clone()
    }

    /// Every stdout line received so far exactly as written (without its newline).
    pub fn lines(&self) -> Vec<String> {
        lock(&self.shared.inbox).lines.clone()
    }

    /// Stops reading the child's stdout once the lines already buffered here are
    /// taken (at most 8 KiB), so that the child's writes back up like those to a
    /// client that does not read.
    pub fn pause_reading(&self) {
        *lock(&self.shared.paused) = true;
    }

    /// Reads the child's stdout again after [`StdioClient::pause_reading`].
    pub fn resume_reading(&self) {
        *lock(&self.shared.paused) = false;
        self.shared.resumed.notify_all();
    }

    /// Writes `chunks` to the child's stdin on a thread of its own, so that a child
    /// that stops reading blocks that thread, never the test. The thread ends when
    /// everything is written or the child is gone (it is killed when the client drops).
    pub fn write_in_background(
        &self,
        chunks: impl Iterator<Item = Vec<u8>> + Send + 'static,
    ) -> io::Result<BackgroundWrite> {
        let stdin = lock(&self.stdin);
        let Some(pipe) = stdin.as_ref() else {
            return Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "stdin was closed by the test",
            ));
        };
        let pipe = File::from(pipe.as_fd().try_clone_to_owned()?);
        BackgroundWrite::start(pipe, chunks, self.pid)
    }

    /// Every notification (a message without id) with `method` received so far.
    pub fn notifications(&self, method: &str) -> Vec<Value> {
        lock(&self.shared.inbox)
            .log
            .iter()
            .filter(|message| {
                message.get("id").is_none()
                    && message.get("method").and_then(Value::as_str) == Some(method)
            })
            .cloned()
            .collect()
    }

    /// Everything the child wrote to stderr so far, invalid UTF-8 replaced.
    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&lock(&self.shared.stderr)).into_owned()
    }

    /// Waits up to `timeout` until stderr contains `needle`, returning all of stderr.
    pub fn wait_for_stderr(&self, needle: &str, timeout: Duration) -> Result<String, String> {
        let deadline = Instant::now() + timeout;
        let mut stderr = lock(&self.shared.stderr);
        loop {
            let text = String::from_utf8_lossy(&stderr);
            if text.contains(needle) {
                return Ok(text.into_owned());
            }
            let now = Instant::now();
            if now >= deadline {
                drop(stderr);
                return Err(self.diagnose(&format!(
                    "stderr did not contain {needle:?} within {timeout:?}"
                )));
            }
            stderr = self
                .shared
                .stderr_grew
                .wait_timeout(stderr, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Closes the child's stdin, which tells a stdio server to shut down.
    pub fn close_stdin(&self) {
        lock(&self.stdin).take();
    }

    /// Waits up to `timeout` for the child to exit; `None` if it is still running.
    pub fn wait_exit(&self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            match lock(&self.child).try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) => {}
                Err(_) => return None,
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            thread::sleep(EXIT_POLL_INTERVAL.min(deadline - now));
        }
    }

    /// Waits up to `timeout` for the child to exit and returns the CPU time (user and
    /// system) that it and every descendant it waited for used, as `wait4(2)` reports it;
    /// `None` if it is still running or was already waited for.
    pub fn wait_exit_with_cpu(&self, timeout: Duration) -> Option<Duration> {
        let pid = libc::pid_t::try_from(self.pid).ok()?;
        // Held throughout, so that `Child::try_wait` cannot reap the child meanwhile.
        let _child = lock(&self.child);
        let deadline = Instant::now() + timeout;
        loop {
            let mut status = 0;
            // SAFETY: wait4 writes the status and an `rusage` into the live locals; an
            // all-zero `rusage` is valid.
            let (reaped, usage) = unsafe {
                let mut usage: libc::rusage = std::mem::zeroed();
                let reaped = libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage);
                (reaped, usage)
            };
            if reaped == pid {
                let of = |tv: libc::timeval| {
                    Duration::from_secs(tv.tv_sec.unsigned_abs())
                        + Duration::from_micros(tv.tv_usec.unsigned_abs())
                };
                return Some(of(usage.ru_utime) + of(usage.ru_stime));
            }
            if reaped == -1 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                continue;
            }
            let now = Instant::now();
            if reaped != 0 || now >= deadline {
                return None;
            }
            thread::sleep(EXIT_POLL_INTERVAL.min(deadline - now));
        }
    }

    /// Kills the child's whole process group and reaps the child.
    pub fn kill(&self) {
        let mut child = lock(&self.child);
        // The group outlives its leader while descendants remain, so signal it even when
        // the child itself has exited; its id cannot be reused while the group exists.
        if let Ok(pgid) = libc::pid_t::try_from(self.pid) {
            // SAFETY: kill(2) has no memory-safety preconditions; a negative pid names
            // the process group this client created for the child.
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
        if matches!(child.try_wait(), Ok(None)) {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// A failure message with the recent messages, write errors, exit status and stderr.
    fn diagnose(&self, what: &str) -> String {
        let mut text = format!("{what}\n");
        {
            let inbox = lock(&self.shared.inbox);
            let skip = inbox.log.len().saturating_sub(DIAGNOSTIC_MESSAGES);
            text.push_str(&format!(
                "last {} of {} message(s) from pid {}:\n",
                inbox.log.len() - skip,
                inbox.log.len(),
                self.pid
            ));
            for message in &inbox.log[skip..] {
                text.push_str(&format!("  {message}\n"));
            }
        }
        for err in lock(&self.write_errors).iter() {
            text.push_str(&format!("stdin: {err}\n"));
        }
        if let Ok(Some(status)) = lock(&self.child).try_wait() {
            text.push_str(&format!("child exited: {status}\n"));
        }
        let stderr = lock(&self.shared.stderr);
        let start = stderr.len().saturating_sub(DIAGNOSTIC_STDERR_BYTES);
        text.push_str(&format!(
            "stderr ({} bytes, last {} shown):\n{}",
            stderr.len(),
            stderr.len() - start,
            String::from_utf8_lossy(&stderr[start..])
        ));
        text
    }
}

impl Drop for StdioClient {
    fn drop(&mut self) {
        self.close_stdin();
        self.kill();
        // A paused reader would otherwise wait forever for a resume.
        self.resume_reading();
    }
}

impl std::fmt::Debug for StdioClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StdioClient")
            .field("pid", &self.pid)
            .finish_non_exhaustive()
    }
}

/// Parses each stdout line into the inbox until end of file.
fn read_stdout(stdout: impl Read, shared: &Shared) {
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        let mut paused = lock(&shared.paused);
        while *paused {
            paused = shared
                .resumed
                .wait(paused)
                .unwrap_or_else(PoisonError::into_inner);
        }
        drop(paused);
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.strip_suffix('\n').unwrap_or(&text);
        let text = text.strip_suffix('\r').unwrap_or(text);
        let message = serde_json::from_str(text).unwrap_or_else(|_| json!({"__unparsed": text}));
        let mut inbox = lock(&shared.inbox);
        inbox.log.push(message);
        inbox.lines.push(text.to_string());
        drop(inbox);
        shared.arrived.notify_all();
    }
    lock(&shared.inbox).closed = true;
    shared.arrived.notify_all();
}

/// Appends everything the child writes to stderr to the shared buffer.
fn read_stderr(mut stderr: impl Read, shared: &Shared) {
    let mut chunk = [0u8; 8192];
    loop {
        match stderr.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                lock(&shared.stderr).extend_from_slice(&chunk[..n]);
                shared.stderr_grew.notify_all();
            }
        }
    }
}
