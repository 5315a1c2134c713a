//! Running a helper program (an SDK client script) to its end, never past a deadline.

use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Runs `command` with stdin closed and its output captured, killing it (and
/// failing) if it is still running after `deadline`.
pub fn run_with_deadline(mut command: Command, deadline: Duration) -> Result<Output, String> {
    let program = command.get_program().to_string_lossy().into_owned();
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|err| format!("could not start {program}: {err}"))?;
    let pid = child.id();
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = done_tx.send(child.wait_with_output());
    });
    match done_rx.recv_timeout(deadline) {
        Ok(output) => output.map_err(|err| format!("waiting for {program}: {err}")),
        Err(_) => {
            if let Ok(pid) = libc::pid_t::try_from(pid) {
                // SAFETY: kill(2) has no memory-safety preconditions; the pid is our
                // child's, not yet reaped (the waiting thread still holds it).
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                }
            }
            Err(format!("{program} did not finish within {deadline:?}"))
        }
    }
}
