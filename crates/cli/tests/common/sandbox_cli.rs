//! Running `deputy sandbox` on small shell and Python scripts, for the escape batteries.
//!
//! Everything the sandbox must keep out lives under Cargo's target tmp dir, never under `/tmp`
//! (which workspace-write may write) — and `TMPDIR` is removed for the same reason.

#![allow(
    dead_code,
    unused_macros,
    reason = "each escape battery uses a different part of this module"
)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::outside::outside_dir;

/// Returns early (with the reason printed) where the kernel cannot confine commands.
macro_rules! require_sandbox {
    () => {
        if let Err(reason) = deputy_sandbox::probe() {
            deputy_test_support::skip_without_sandbox(reason);
            return;
        }
    };
}

/// Returns early (with the reason printed) where commands cannot get namespaces.
macro_rules! require_namespaces {
    () => {
        require_sandbox!();
        if let Some(limits) = deputy_sandbox::probe()
            .ok()
            .and_then(|support| support.namespace_limitations())
        {
            eprintln!("skipping: {limits}");
            return;
        }
    };
}

/// The sandbox modes that confine commands.
pub const CONFINED_MODES: [&str; 2] = ["read-only", "workspace-write"];

/// A workspace directory, also outside `/tmp`, canonicalized so paths compare equal.
pub fn workspace() -> (TempDir, PathBuf) {
    let dir = outside_dir();
    let path = std::fs::canonicalize(dir.path()).expect("canonicalize");
    (dir, path)
}

/// `deputy sandbox -s MODE -C CWD EXTRA... -- ARGV...`, with `TMPDIR` removed.
pub fn deputy_sandbox(mode: &str, cwd: &Path, extra: &[&str], argv: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_deputy"));
    command
        .args(["sandbox", "-s", mode, "-C"])
        .arg(cwd)
        .args(extra)
        .arg("--")
        .args(argv)
        .env_remove("TMPDIR")
        .env_remove(deputy_sandbox::NETWORK_DISABLED_ENV);
    command
}

/// Runs `command` to completion.
pub fn run(mut command: Command) -> Output {
    command.output().expect("run deputy sandbox")
}

/// Runs `script` with `bash -c` in `mode`.
pub fn bash(mode: &str, cwd: &Path, script: &str) -> Output {
    run(deputy_sandbox(mode, cwd, &[], &["bash", "-c", script]))
}

/// Runs `script` with the real Python interpreter in `mode`, with `extra` flags.
pub fn python_script(mode: &str, cwd: &Path, extra: &[&str], script: &str) -> Output {
    run(deputy_sandbox(mode, cwd, extra, &[python(), "-c", script]))
}

/// The command's stderr, as text.
pub fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The command's stdout, as text.
pub fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The real interpreter behind `python3` (resolved outside the sandbox, so version-manager
/// shims do not need to run inside it).
pub fn python() -> &'static str {
    static PYTHON: OnceLock<String> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let output = Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect("python3 is needed by the sandbox tests");
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    })
}

/// Asserts the command failed and printed `errno_text`.
pub fn assert_refused(output: &Output, errno_text: &str) {
    assert!(!output.status.success(), "command succeeded: {output:?}");
    assert!(
        stderr(output).contains(errno_text),
        "expected {errno_text:?} in stderr: {}",
        stderr(output)
    );
}

/// A marker unique to this test run, to put in a process's argv and find it again.
pub fn unique_marker(what: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("deputy-test-{what}-{}-{nanos}", std::process::id())
}

/// The pids of running processes (zombies excluded) whose command line contains `marker`,
/// wherever they were re-parented.
pub fn processes_with(marker: &str) -> Vec<i32> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let running = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| {
                let (_, after) = stat.rsplit_once(')')?;
                after
                    .split_whitespace()
                    .next()
                    .map(|s| s != "Z" && s != "X")
            })
            .unwrap_or(false);
        if running && String::from_utf8_lossy(&cmdline).contains(marker) {
            found.push(pid);
        }
    }
    found
}

/// Waits up to `within` for every process carrying `marker` to be gone (a SIGKILL completes
/// asynchronously); returns those still running at the deadline.
pub fn survivors_after(marker: &str, within: Duration) -> Vec<i32> {
    let deadline = Instant::now() + within;
    loop {
        let alive = processes_with(marker);
        if alive.is_empty() || Instant::now() >= deadline {
            return alive;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits up to `within` for a process carrying `marker` to run; returns whether one did.
pub fn appears_within(marker: &str, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if !processes_with(marker).is_empty() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kills every process carrying `marker`, so a failed test leaves nothing behind.
pub fn kill_all_with(marker: &str) {
    for pid in processes_with(marker) {
        // SAFETY: kill(2) only sends a signal.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}
