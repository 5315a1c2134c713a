//! What a person sees: on a terminal, a spinner with the time while deputy waits, each
//! command with its exit status and the tail of its output when it fails, a failed
//! patch with its error, colour unless `NO_COLOR`, and the answer once, on stdout.
//! Piped, the same lines without spinner or colour.

use deputy_test_support::{MockModelServer, MockResponse, TestHome};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::common::pty::{exec_on_terminal, has_pty};
use crate::common::{Finished, exec, finish};
use crate::{all_requests, items_of_type};

const ANSWER: &str = "Final answer text.";

/// A command that takes a second and fails after 30 lines, a patch that cannot apply,
/// then the answer.
fn failing_turn(server: &MockModelServer) {
    let bad_patch =
        "*** Begin Patch\n*** Update File: missing.txt\n@@\n-old\n+new\n*** End Patch\n";
    server.push_all([
        MockResponse::function_call_turn(
            "call-fail",
            "shell",
            json!({"command": ["bash", "-c",
                "sleep 1; for i in $(seq 1 30); do echo out-line-$i; done; exit 3"]}),
        ),
        MockResponse::function_call_turn("call-patch", "apply_patch", json!({"input": bad_patch})),
        MockResponse::text_turn(ANSWER),
    ]);
}

/// `deputy exec ARGS` on a colour terminal, typing `input` once `wait_for` appears;
/// `env` is added to its environment.
fn on_terminal(
    home: &TestHome,
    args: &[&str],
    (wait_for, input): (&str, &str),
    env: &[(&str, &str)],
) -> Finished {
    let mut command = exec_on_terminal(home, args, wait_for, input);
    command
        .env("TERM", "xterm-256color")
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR")
        .env_remove("CLICOLOR_FORCE");
    for (name, value) in env {
        command.env(name, value);
    }
    finish(command)
}

/// Whether `text` holds an SGR (colour or style) escape sequence.
fn has_sgr(text: &str) -> bool {
    text.split("\x1b[").skip(1).any(|rest| {
        let params: String = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ';')
            .collect();
        rest[params.len()..].starts_with('m')
    })
}

/// The transcript as lines of text: line ends normalised, escape sequences dropped.
fn plain(transcript: &str) -> String {
    let mut out = String::new();
    let mut chars = transcript.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => {
                if chars.peek() == Some(&'[') {
                    chars.next();
                    for c in chars.by_ref() {
                        if c.is_ascii_alphabetic() {
                            break;
                        }
                    }
                }
            }
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

fn assert_failure_shown(text: &str) {
    assert!(text.contains("failed: exit 3 in"), "{text}");
    assert!(text.contains("│ … 20 earlier lines"), "{text}");
    assert!(text.contains("│ out-line-21\n"), "{text}");
    assert!(text.contains("│ out-line-30\n"), "{text}");
    assert!(!text.contains("out-line-20"), "only the tail: {text}");
    assert!(text.contains("patch not applied:"), "{text}");
    assert!(text.contains("missing.txt"), "{text}");
}

#[test]
fn on_a_terminal_a_spinner_counts_the_time_failures_show_their_tail_and_the_answer_comes_once() {
    if !has_pty() {
        return;
    }
    let server = MockModelServer::start();
    failing_turn(&server);
    let home = TestHome::new(&server.base_url());

    let run = on_terminal(&home, &["try it"], ("", ""), &[]);

    run.assert_code(0);
    assert_eq!(run.stdout, format!("{ANSWER}\n"));
    let text = plain(&run.stderr);
    assert!(
        text.contains("running sleep 1; for i in") && text.contains(" · 0s"),
        "no spinner with the command and its time: {text}"
    );
    assert!(
        run.stderr
            .chars()
            .any(|c| ('\u{2801}'..='\u{28ff}').contains(&c)),
        "no spinner frame: {text}"
    );
    assert_failure_shown(&text);
    assert!(
        !text.contains(ANSWER),
        "the answer belongs to stdout only: {text}"
    );
    assert!(
        has_sgr(&run.stderr),
        "no colour on a terminal: {:?}",
        run.stderr
    );
}

#[test]
fn no_color_turns_colour_off_but_keeps_the_spinner() {
    if !has_pty() {
        return;
    }
    let server = MockModelServer::start();
    failing_turn(&server);
    let home = TestHome::new(&server.base_url());

    let run = on_terminal(&home, &["try it"], ("", ""), &[("NO_COLOR", "1")]);

    run.assert_code(0);
    assert!(
        !has_sgr(&run.stderr),
        "colour despite NO_COLOR: {:?}",
        run.stderr
    );
    let text = plain(&run.stderr);
    assert!(text.contains("running sleep 1"), "{text}");
    assert_failure_shown(&text);
    assert_eq!(run.stdout, format!("{ANSWER}\n"));
}

#[test]
fn piped_stderr_gets_the_same_lines_without_spinner_or_colour() {
    let server = MockModelServer::start();
    failing_turn(&server);
    let home = TestHome::new(&server.base_url());

    let run = exec(&home, &["try it"]);

    run.assert_code(0);
    assert!(
        !run.stderr.contains('\x1b'),
        "escape codes in a pipe: {:?}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("running"),
        "a spinner in a pipe: {}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("$ sleep 1; for i in $(seq 1 30); do echo out-line-$i; done; exit 3\n"),
        "{}",
        run.stderr
    );
    assert_failure_shown(&run.stderr);
    assert!(!run.stderr.contains(ANSWER), "{}", run.stderr);
    assert_eq!(run.stdout, format!("{ANSWER}\n"));
}

#[test]
fn without_a_prompt_on_a_terminal_it_says_it_reads_the_task_from_stdin() {
    if !has_pty() {
        return;
    }
    let server = MockModelServer::start();
    server.push(MockResponse::text_turn("Hi."));
    let home = TestHome::new(&server.base_url());

    let run = on_terminal(
        &home,
        &[],
        ("Reading the task from stdin", "say hi\n\x04"),
        &[],
    );

    run.assert_code(0);
    assert_eq!(run.stdout, "Hi.\n");
    let requests = all_requests(&server, 1);
    let user = items_of_type(&requests[0], "message")
        .into_iter()
        .rfind(|m| m["role"] == "user")
        .expect("user message");
    assert_eq!(user["content"][0]["text"], "say hi\n");
}

/// An answer that would set the terminal's title, clear the screen and print backwards.
const HOSTILE_ANSWER: &str = "Done.\n\tAll \u{1b}]0;owned\u{7}good\u{1b}[2J \u{202e}txt.exe";

#[test]
fn the_answer_is_escaped_on_a_terminal_and_exact_in_a_pipe() {
    if !has_pty() {
        return;
    }
    let model = MockModelServer::start();
    model.push_all([
        MockResponse::text_turn(HOSTILE_ANSWER),
        MockResponse::text_turn(HOSTILE_ANSWER),
    ]);
    let home = TestHome::new(&model.base_url());

    let mut command = exec_on_terminal(&home, &["hello"], "", "");
    command.env("PTY_STDOUT", "1");
    let terminal = finish(command);
    let piped = exec(&home, &["hello"]);

    terminal.assert_code(0);
    // The terminal turns `\n` into `\r\n`; the lines and the tab stay, the rest is escaped.
    assert!(
        terminal
            .stderr
            .contains("Done.\r\n\tAll \\e]0;owned\\agood\\e[2J \\u202Etxt.exe\r\n"),
        "{:?}",
        terminal.stderr
    );
    for raw in ["\u{1b}]0;", "\u{1b}[2J", "\u{202e}"] {
        assert!(
            !terminal.stderr.contains(raw),
            "{raw:?} reached the terminal"
        );
    }
    piped.assert_code(0);
    assert_eq!(piped.stdout, format!("{HOSTILE_ANSWER}\n"));
}
