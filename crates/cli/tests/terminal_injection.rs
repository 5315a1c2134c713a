//! No terminal injection: a command — sandboxed or not — cannot push input into the terminal
//! deputy runs on (`ioctl(TIOCSTI)` through `/dev/tty` or the terminal's own path), neither
//! into the user's shell nor into `deputy exec`'s approval prompt, and `deputy exec` ignores
//! whatever was typed before it asked. Python drives a real pseudo-terminal, made the
//! controlling terminal of `deputy` as a login shell's terminal would be.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

#[path = "common/outside.rs"]
mod outside;
#[macro_use]
#[path = "common/sandbox_cli.rs"]
mod sandbox_cli;
#[path = "common/injection.rs"]
mod injection;

use std::process::{Command, Output, Stdio};

use deputy_test_support::{MockModelServer, MockResponse, TestHome};
use injection::{INJECT, has_pty, on_pty};
use sandbox_cli::*;
use serde_json::json;

/// Runs argv[1:] (`deputy exec …`) with a pseudo-terminal as its controlling terminal, stdin
/// and stderr; writes `$TYPEAHEAD` at once, then the next of `$ANSWERS` (a JSON list) each
/// time an approval prompt appears (`n` once they run out); prints the terminal transcript on
/// stderr and deputy's stdout on stdout.
const PTY_EXEC: &str = r#"
import fcntl, json, os, pty, select, subprocess, sys, termios, time
answers = json.loads(os.environ.get("ANSWERS", "[]"))
master, slave = pty.openpty()
env = dict(os.environ, INJECT_TTY=os.ttyname(slave))
child = subprocess.Popen(sys.argv[1:], stdin=slave, stderr=slave, stdout=subprocess.PIPE,
    env=env, start_new_session=True, preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
os.write(master, os.environ.get("TYPEAHEAD", "").encode())
prompt = b"[y]es / [a]lways / [n]o / [q]uit"
transcript, answered, deadline = b"", 0, time.time() + 60
while time.time() < deadline:
    ready, _, _ = select.select([master], [], [], 0.1)
    if not ready:
        if child.poll() is not None:
            break
        continue
    try:
        chunk = os.read(master, 4096)
    except OSError:
        break
    transcript += chunk
    while transcript.count(prompt) > answered:
        os.write(master, (answers[answered] if answered < len(answers) else "n\n").encode())
        answered += 1
else:
    child.kill()
out = child.stdout.read()
child.wait()
sys.stderr.buffer.write(transcript)
sys.stdout.buffer.write(out)
"#;

#[test]
fn no_command_injects_into_the_terminal_it_runs_on_in_any_mode() {
    require_sandbox!();
    if !has_pty() {
        return;
    }
    // The control: run bare, the same script does inject (else this kernel refuses TIOCSTI
    // by itself, and there is nothing to show).
    let control = on_pty(&[python(), "-c", INJECT]);
    if stdout(&control).trim() == "queued=b''" {
        eprintln!("skipping: this kernel refuses TIOCSTI (dev.tty.legacy_tiocsti = 0)");
        return;
    }
    assert!(stdout(&control).contains("yes"), "{}", stdout(&control));
    let (_ws, ws) = workspace();
    let ws = ws.to_str().expect("utf-8 path");
    for mode in ["read-only", "workspace-write", "danger-full-access"] {
        let deputy = env!("CARGO_BIN_EXE_deputy");
        let run = on_pty(&[
            deputy,
            "sandbox",
            "-s",
            mode,
            "-C",
            ws,
            "--",
            python(),
            "-c",
            INJECT,
        ]);
        assert_eq!(
            stdout(&run).trim(),
            "queued=b''",
            "{mode}: bytes were pushed into the terminal; it showed:\n{}",
            stderr(&run)
        );
        assert!(
            !stderr(&run).contains("injected"),
            "{mode}: {}",
            stderr(&run)
        );
    }
}

/// A model turn calling `shell` with `argv` (and escalation when `escalated`).
fn shell(call_id: &str, argv: &[&str], escalated: bool) -> MockResponse {
    let mut args = json!({"command": argv});
    if escalated {
        args["sandbox_permissions"] = json!("require_escalated");
        args["justification"] = json!("needs to leave the sandbox");
    }
    MockResponse::function_call_turn(call_id, "shell", args)
}

/// Runs `deputy exec` under [`PTY_EXEC`] against a model scripted with `turns`.
fn exec_on_pty(
    turns: Vec<MockResponse>,
    flags: &[&str],
    typeahead: &str,
    answers: &[&str],
) -> (TestHome, Output) {
    let model = MockModelServer::start();
    model.push_all(turns);
    model.push(MockResponse::text_turn("finished"));
    let home = TestHome::new(&model.base_url());
    home.write_config(&format!(
        "approval_timeout_sec = 10\n{}",
        TestHome::default_config(&model.base_url())
    ));
    let output = home
        .command(python())
        .args(["-c", PTY_EXEC, env!("CARGO_BIN_EXE_deputy"), "exec"])
        .args(flags)
        .arg("do it")
        .env("TYPEAHEAD", typeahead)
        .env("ANSWERS", json!(answers).to_string())
        .stdin(Stdio::null())
        .output()
        .expect("run the pty driver");
    drop(model);
    (home, output)
}

/// Asserts the escalated command was refused and nothing was echoed as typed `yes`.
fn assert_not_approved(what: &str, home: &TestHome, output: &Output, file: &str) {
    assert_eq!(
        stdout(output).trim(),
        "finished",
        "{what}: {}",
        stderr(output)
    );
    assert!(
        !home.workspace().join(file).exists(),
        "{what}: the command was approved; terminal:\n{}",
        stderr(output)
    );
    assert!(
        !stderr(output).contains("yes\r\n"),
        "{what}: input was pushed into the terminal:\n{}",
        stderr(output)
    );
}

#[test]
fn a_sandboxed_command_cannot_answer_deputy_exec_s_approval_prompt() {
    require_sandbox!();
    if !has_pty() {
        return;
    }
    let turns = vec![
        shell("inject", &[python(), "-c", INJECT], false),
        shell("escape", &["touch", "escalated.txt"], true),
    ];
    let flags = ["-a", "on-request", "-s", "workspace-write"];
    let (home, output) = exec_on_pty(turns, &flags, "", &["n\n"]);
    assert_not_approved("sandboxed injection", &home, &output, "escalated.txt");
}

#[test]
fn an_unsandboxed_command_cannot_answer_deputy_exec_s_approval_prompt() {
    if !has_pty() {
        return;
    }
    let turns = vec![
        shell("inject", &[python(), "-c", INJECT], false),
        shell("second", &["touch", "second.txt"], false),
    ];
    let flags = ["-a", "untrusted", "-s", "danger-full-access"];
    // The injecting command itself is approved; the next one must wait for a real answer.
    let (home, output) = exec_on_pty(turns, &flags, "", &["y\n", "n\n"]);
    assert_not_approved("unsandboxed injection", &home, &output, "second.txt");
}

#[test]
fn keys_typed_before_a_question_do_not_answer_it() {
    if !has_pty() {
        return;
    }
    let turns = vec![shell("first", &["touch", "first.txt"], false)];
    let flags = ["-a", "untrusted", "-s", "danger-full-access"];
    let (home, output) = exec_on_pty(turns, &flags, "y\n", &["n\n"]);
    assert_eq!(stdout(&output).trim(), "finished", "{}", stderr(&output));
    assert!(
        !home.workspace().join("first.txt").exists(),
        "type-ahead answered the question:\n{}",
        stderr(&output)
    );
}

#[test]
fn a_line_typed_after_an_answer_does_not_answer_the_next_question() {
    if !has_pty() {
        return;
    }
    let turns = vec![
        shell("first", &["touch", "first.txt"], false),
        shell("second", &["touch", "second.txt"], false),
    ];
    let flags = ["-a", "untrusted", "-s", "danger-full-access"];
    let (home, output) = exec_on_pty(turns, &flags, "", &["n\ny\n", "n\n"]);
    assert_eq!(stdout(&output).trim(), "finished", "{}", stderr(&output));
    for file in ["first.txt", "second.txt"] {
        assert!(
            !home.workspace().join(file).exists(),
            "{file} ran:\n{}",
            stderr(&output)
        );
    }
}

/// A 64-bit program that pushes `yes\n` into `$INJECT_TTY` through the 32-bit system call
/// door (`int 0x80`, where ioctl is number 54), which a filter of 64-bit numbers alone does
/// not see. Its data lives below 4 GiB (`-no-pie`), as 32-bit calls need.
const INJECT_I386: &str = r#"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
static char bytes[] = "yes\n";
int main(void) {
    int fd = open(getenv("INJECT_TTY"), O_RDONLY | O_NOCTTY);
    if (fd < 0) { perror("open"); return 2; }
    int injected = 0;
    for (int i = 0; i < 4; i++) {
        long ret;
        __asm__ volatile("int $0x80" : "=a"(ret)
                         : "a"(54L), "b"((long)fd), "c"((long)TIOCSTI), "d"(&bytes[i])
                         : "memory");
        if (ret == 0) injected++;
        else printf("i386 ioctl: %ld\n", ret);
    }
    printf("injected %d\n", injected);
    return 0;
}
"#;

/// Compiles [`INJECT_I386`] into `dir`; `None` (saying why) where that cannot be done.
fn compile_i386_injector(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    if !cfg!(target_arch = "x86_64") {
        eprintln!("skipping: the 32-bit x86 system call door exists on x86_64 only");
        return None;
    }
    let source = dir.join("inject_i386.c");
    let binary = dir.join("inject_i386");
    std::fs::write(&source, INJECT_I386).expect("write the C source");
    let compiled = Command::new("gcc")
        .args(["-O2", "-no-pie", "-o"])
        .arg(&binary)
        .arg(&source)
        .output();
    match compiled {
        Ok(out) if out.status.success() => Some(binary),
        Ok(out) => {
            eprintln!(
                "skipping: gcc failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            None
        }
        Err(err) => {
            eprintln!("skipping: no C compiler to build the injector ({err})");
            None
        }
    }
}

#[test]
fn no_command_injects_into_the_terminal_through_32_bit_system_calls_in_any_mode() {
    require_sandbox!();
    if !has_pty() {
        return;
    }
    let (_ws, ws) = workspace();
    let Some(injector) = compile_i386_injector(&ws) else {
        return;
    };
    let injector = injector.to_str().expect("utf-8 path");
    // The control: run bare, it does inject (else this kernel has no 32-bit door, or
    // refuses TIOCSTI by itself, and there is nothing to show).
    let control = on_pty(&[injector]);
    if !stdout(&control).contains("yes") {
        eprintln!(
            "skipping: the injector cannot inject here even unconfined: {}",
            stdout(&control)
        );
        return;
    }
    let ws = ws.to_str().expect("utf-8 path");
    for mode in ["read-only", "workspace-write", "danger-full-access"] {
        let deputy = env!("CARGO_BIN_EXE_deputy");
        let run = on_pty(&[deputy, "sandbox", "-s", mode, "-C", ws, "--", injector]);
        assert_eq!(
            stdout(&run).trim(),
            "queued=b''",
            "{mode}: bytes were pushed into the terminal; it showed:\n{}",
            stderr(&run)
        );
        assert!(
            !stderr(&run).contains("injected 4"),
            "{mode}: {}",
            stderr(&run)
        );
    }
}
