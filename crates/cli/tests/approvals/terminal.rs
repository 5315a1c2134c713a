//! `deputy exec` answers approval questions on the terminal, or refuses them without one.

use std::process::{Command, Stdio};

use deputy_test_support::{MockModelServer, TestHome};

use crate::common::{DEPUTY, exec, finish};
use crate::harness::{model_output, say, shell};

/// Runs argv[1:] with a pseudo-terminal as stdin and stderr, answers `$PTY_ANSWER`
/// (default `y`; empty = never answer) to the first approval prompt, copies the
/// terminal transcript to stderr and the child's stdout to stdout, and exits with the
/// child's code.
const PTY_DRIVER: &str = r#"
import os, pty, select, subprocess, sys, time
answer = os.environ.get("PTY_ANSWER", "y").encode()
master, slave = pty.openpty()
child = subprocess.Popen(sys.argv[1:], stdin=slave, stderr=slave, stdout=subprocess.PIPE)
os.close(slave)
transcript, answered, deadline = b"", False, time.time() + 60
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
    if answer and not answered and b"[y]es / [a]lways / [n]o / [q]uit" in transcript:
        os.write(master, answer + b"\n")
        answered = True
else:
    child.kill()
out = child.stdout.read()
child.wait()
sys.stderr.buffer.write(transcript)
sys.stdout.buffer.write(out)
sys.exit(child.returncode)
"#;

fn scripted_home() -> (MockModelServer, TestHome) {
    let model = MockModelServer::start();
    model.push_all([shell("c1", &["touch", "made.txt"]), say("finished")]);
    let home = TestHome::new(&model.base_url());
    (model, home)
}

#[test]
fn exec_without_a_terminal_denies_and_says_how_to_run_without_approvals() {
    let (model, home) = scripted_home();

    let run = exec(
        &home,
        &["-a", "untrusted", "-s", "danger-full-access", "make a file"],
    );

    run.assert_code(0);
    assert!(run.stderr.contains("-a never"), "{}", run.stderr);
    assert_eq!(run.stdout.trim(), "finished");
    assert!(!home.workspace().join("made.txt").exists());
    let output = model_output(&model, "c1");
    assert!(output.contains("-a never"), "{output}");
}

/// Whether python3's `pty` module is there to drive a terminal.
fn has_pty() -> bool {
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

#[test]
fn exec_on_a_terminal_asks_and_runs_the_command_on_yes() {
    if !has_pty() {
        return;
    }
    let (model, home) = scripted_home();

    let mut command = home.command("python3");
    command
        .args(["-c", PTY_DRIVER, DEPUTY, "exec"])
        .args(["-a", "untrusted", "-s", "danger-full-access", "make a file"])
        .stdin(Stdio::null());
    let run = finish(command);

    run.assert_code(0);
    assert!(
        run.stderr.contains("[y]es / [a]lways / [n]o / [q]uit"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("touch made.txt"), "{}", run.stderr);
    assert_eq!(run.stdout.trim(), "finished");
    assert!(home.workspace().join("made.txt").exists());
    assert!(model_output(&model, "c1").starts_with("Exit code: 0\n"));
}

#[test]
fn an_unanswered_question_on_a_terminal_expires_and_the_turn_goes_on() {
    if !has_pty() {
        return;
    }
    let (model, home) = scripted_home();
    home.write_config(&format!(
        "approval_timeout_sec = 1\n{}",
        TestHome::default_config(&model.base_url())
    ));

    let mut command = home.command("python3");
    command
        .env("PTY_ANSWER", "")
        .args(["-c", PTY_DRIVER, DEPUTY, "exec"])
        .args(["-a", "untrusted", "-s", "danger-full-access", "make a file"])
        .stdin(Stdio::null());
    let started = std::time::Instant::now();
    let run = finish(command);

    run.assert_code(0);
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert_eq!(run.stdout.trim(), "finished");
    assert!(!home.workspace().join("made.txt").exists());
    let output = model_output(&model, "c1");
    assert!(output.contains("within 1 s"), "{output}");
}
