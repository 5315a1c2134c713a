//! Running the real `deputy` binary against a mock model server, for whole-process tests.

#![allow(
    dead_code,
    reason = "each test file uses a different part of this module"
)]

pub mod pty;

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use deputy_test_support::TestHome;

/// The binary under test.
pub const DEPUTY: &str = env!("CARGO_BIN_EXE_deputy");

/// Longest a `deputy` process may run before the test gives up on it and kills it.
pub const PROCESS_DEADLINE: Duration = Duration::from_secs(60);

/// A finished `deputy` process.
#[derive(Debug)]
pub struct Finished {
    /// How it exited.
    pub status: ExitStatus,
    /// Everything it printed on stdout.
    pub stdout: String,
    /// Everything it printed on stderr.
    pub stderr: String,
    /// Wall time from spawn to exit.
    pub elapsed: Duration,
}

impl Finished {
    /// Fails the test, showing both streams, unless the process exited with `code`.
    pub fn assert_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.status.code(),
            Some(code),
            "deputy exited with {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.status,
            self.stdout,
            self.stderr
        );
        self
    }
}

/// `deputy <args>` in `home`'s workspace, stdin closed.
pub fn deputy(home: &TestHome, args: &[&str]) -> Command {
    let mut command = home.command(DEPUTY);
    command.args(args).stdin(Stdio::null());
    command
}

/// Runs `command` to its end (killing it after [`PROCESS_DEADLINE`]) and collects its output.
pub fn finish(command: Command) -> Finished {
    run_to_end(command, true)
}

/// Like [`finish`], with stderr a pipe nobody reads (closed before the process starts),
/// as in `deputy exec … 2>&1 | head -1`.
pub fn finish_with_closed_stderr(mut command: Command) -> Finished {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    command.stderr(writer);
    run_to_end(command, false)
}

fn run_to_end(mut command: Command, capture_stderr: bool) -> Finished {
    let start = Instant::now();
    command.stdout(Stdio::piped());
    if capture_stderr {
        command.stderr(Stdio::piped());
    }
    let mut child = command.spawn().expect("spawn deputy");
    let stdout = drain(child.stdout.take().expect("piped stdout"));
    let stderr = child.stderr.take().map(drain);
    let status = wait_with_deadline(&mut child, PROCESS_DEADLINE);
    let elapsed = start.elapsed();
    let finished = Finished {
        status: status.unwrap_or_else(|| {
            let _ = child.kill();
            child.wait().expect("reap deputy")
        }),
        stdout: join(stdout),
        stderr: stderr.map(join).unwrap_or_default(),
        elapsed,
    };
    assert!(
        status.is_some(),
        "deputy did not exit within {PROCESS_DEADLINE:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        finished.stdout,
        finished.stderr
    );
    finished
}

/// `deputy exec <args>` in `home`, run to its end.
pub fn exec(home: &TestHome, args: &[&str]) -> Finished {
    let mut full = vec!["exec"];
    full.extend_from_slice(args);
    finish(deputy(home, &full))
}

fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    })
}

fn join(reader: std::thread::JoinHandle<String>) -> String {
    reader.join().unwrap_or_default()
}

/// Polls the child until it exits or `deadline` passes (`None`).
pub fn wait_with_deadline(child: &mut Child, deadline: Duration) -> Option<ExitStatus> {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("poll deputy") {
            return Some(status);
        }
        if start.elapsed() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// [`TestHome::default_config`] with provider key `key` of `[model_providers.mock]` set to
/// `value` (a TOML literal), replacing the default line for it when there is one.
pub fn with_provider_key(config: &str, key: &str, value: &str) -> String {
    let prefix = format!("{key} = ");
    let mut replaced = false;
    let mut lines: Vec<String> = config
        .lines()
        .map(|line| {
            if line.starts_with(&prefix) && !replaced {
                replaced = true;
                format!("{key} = {value}")
            } else {
                line.to_string()
            }
        })
        .collect();
    if !replaced {
        lines.push(format!("{key} = {value}"));
    }
    lines.join("\n") + "\n"
}

/// Decodes standard base64 (with padding), as `exec_command_output_delta` chunks carry it.
pub fn decode_base64(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(4) {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() / 4 * 3);
    for quad in bytes.chunks(4) {
        let pad = quad.iter().rev().take_while(|&&c| c == b'=').count();
        let mut acc = 0u32;
        for &c in &quad[..4 - pad] {
            acc = (acc << 6) | value(c)?;
        }
        acc <<= 6 * pad as u32;
        let decoded = [(acc >> 16) as u8, (acc >> 8) as u8, acc as u8];
        out.extend_from_slice(&decoded[..3 - pad]);
    }
    Some(out)
}
