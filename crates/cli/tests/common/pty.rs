//! Running `deputy` on a pseudo-terminal, driven by python3's `pty` module.

use std::process::{Command, Stdio};

use deputy_test_support::TestHome;

use super::DEPUTY;

/// Runs argv[1:] with a pseudo-terminal as stdin and stderr (and stdout too with
/// `PTY_STDOUT=1`), copies the terminal transcript to stderr and the child's stdout to
/// stdout, and exits with the child's code. With `PTY_WAIT_FOR` set, types `PTY_INPUT` once
/// that text has appeared; with `PTY_STEPS` (a JSON list of `[wait_for, input]` pairs), types
/// each input once its text has appeared after the previous one's. With `PTY_PIPED_STDIN` set, stdin is a pipe carrying that text
/// instead, and the terminal is the child's controlling terminal (`echo task | deputy exec`
/// typed in a terminal).
const PTY_DRIVER: &str = r#"
import fcntl, json, os, pty, select, subprocess, sys, termios, time
wait_for = os.environ.get("PTY_WAIT_FOR", "")
typed = os.environ.get("PTY_INPUT", "")
steps = json.loads(os.environ.get("PTY_STEPS", "[]"))
if wait_for and typed:
    steps.insert(0, [wait_for, typed])
steps = [(w.encode(), t.encode()) for w, t in steps]
piped = os.environ.get("PTY_PIPED_STDIN")
stdout_on_tty = os.environ.get("PTY_STDOUT") == "1"
master, slave = pty.openpty()
stdout = slave if stdout_on_tty else subprocess.PIPE
if piped is None:
    child = subprocess.Popen(sys.argv[1:], stdin=slave, stderr=slave, stdout=stdout)
else:
    child = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stderr=slave,
                             stdout=stdout, start_new_session=True,
                             preexec_fn=lambda: fcntl.ioctl(2, termios.TIOCSCTTY, 0))
    child.stdin.write(piped.encode())
    child.stdin.close()
os.close(slave)
transcript, seen, deadline = b"", 0, time.time() + 50
while time.time() < deadline:
    ready, _, _ = select.select([master], [], [], 0.2)
    if not ready:
        if child.poll() is not None:
            break
        continue
    try:
        chunk = os.read(master, 4096)
    except OSError:
        break
    if not chunk:
        break
    transcript += chunk
    while steps and transcript.find(steps[0][0], seen) >= 0:
        step_wait, step_typed = steps.pop(0)
        seen = transcript.find(step_wait, seen) + len(step_wait)
        os.write(master, step_typed)
else:
    child.kill()
out = b"" if stdout_on_tty else child.stdout.read()
child.wait()
sys.stderr.buffer.write(transcript)
sys.stdout.buffer.write(out)
sys.exit(child.returncode)
"#;

/// What `deputy exec`'s approval question ends with.
pub const APPROVAL_PROMPT: &str = "[y]es / [a]lways / [n]o / [q]uit";

/// Whether python3's `pty` module is there to drive a terminal (says so when not).
pub fn has_pty() -> bool {
    let available = Command::new("python3")
        .args(["-c", "import pty, select, subprocess"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !available {
        eprintln!("skipping: python3 with the pty module is not available to drive a terminal");
    }
    available
}

/// `deputy exec ARGS` in `home` on a terminal, typing `input` once `wait_for` appears
/// (nothing when either is empty); run it with `common::finish`.
pub fn exec_on_terminal(home: &TestHome, args: &[&str], wait_for: &str, input: &str) -> Command {
    let mut command = home.command("python3");
    command
        .args(["-c", PTY_DRIVER, DEPUTY, "exec"])
        .args(args)
        .env("PTY_WAIT_FOR", wait_for)
        .env("PTY_INPUT", input)
        .stdin(Stdio::null());
    command
}

/// Like [`exec_on_terminal`], typing each step's input once its text has appeared (after
/// where the previous step's did).
pub fn exec_on_terminal_steps(home: &TestHome, args: &[&str], steps: &[(&str, &str)]) -> Command {
    let mut command = exec_on_terminal(home, args, "", "");
    let steps: Vec<[&str; 2]> = steps.iter().map(|(wait, typed)| [*wait, *typed]).collect();
    command.env(
        "PTY_STEPS",
        serde_json::to_string(&steps).expect("steps as JSON"),
    );
    command
}

/// Like [`exec_on_terminal`], with the task piped to stdin (`echo TASK | deputy exec ARGS`)
/// and the terminal only the controlling one, where questions must be asked.
pub fn exec_with_piped_task(
    home: &TestHome,
    task: &str,
    args: &[&str],
    wait_for: &str,
    input: &str,
) -> Command {
    let mut command = exec_on_terminal(home, args, wait_for, input);
    command.env("PTY_PIPED_STDIN", task);
    command
}
