//! `deputy exec` answers approval questions on the terminal, or refuses them without one.

use deputy_test_support::{MockModelServer, MockResponse, TestHome};

use crate::common::pty::{APPROVAL_PROMPT, exec_on_terminal, has_pty};
use crate::common::{exec, finish};
use crate::harness::{model_output, say, shell};

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

#[test]
fn exec_on_a_terminal_asks_and_runs_the_command_on_yes() {
    if !has_pty() {
        return;
    }
    let (model, home) = scripted_home();

    let run = finish(exec_on_terminal(
        &home,
        &["-a", "untrusted", "-s", "danger-full-access", "make a file"],
        APPROVAL_PROMPT,
        "y\n",
    ));

    run.assert_code(0);
    assert!(run.stderr.contains(APPROVAL_PROMPT), "{}", run.stderr);
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

    // Nobody answers.
    let command = exec_on_terminal(
        &home,
        &["-a", "untrusted", "-s", "danger-full-access", "make a file"],
        "",
        "",
    );
    let started = std::time::Instant::now();
    let run = finish(command);

    run.assert_code(0);
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert_eq!(run.stdout.trim(), "finished");
    assert!(!home.workspace().join("made.txt").exists());
    let output = model_output(&model, "c1");
    assert!(output.contains("within 1 s"), "{output}");
}

/// A command whose escape sequences, printed raw, move the cursor back over `touch X #` and
/// erase it: the terminal would show only `pytest -q tests/`.
const SPOOF: &str = "touch X #\u{1b}[9D\u{1b}[K pytest -q tests/";

#[test]
fn a_command_hiding_behind_terminal_escapes_is_asked_about_as_the_exact_argv() {
    if !has_pty() {
        return;
    }
    let model = MockModelServer::start();
    model.push_all([
        MockResponse::function_call_turn(
            "c1",
            "shell",
            serde_json::json!({
                "command": ["bash", "-lc", SPOOF],
                "justification": "run the tests\u{1b}[8m (hidden)\rreason: harmless",
            }),
        ),
        say("finished"),
    ]);
    let home = TestHome::new(&model.base_url());

    let run = finish(exec_on_terminal(
        &home,
        &[
            "-a",
            "untrusted",
            "-s",
            "danger-full-access",
            "run the tests",
        ],
        APPROVAL_PROMPT,
        "n\n",
    ));

    run.assert_code(0);
    let question = "Run `bash -lc $'touch X #\\e[9D\\e[K pytest -q tests/'` in ";
    assert!(run.stderr.contains(question), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("reason: run the tests\\e[8m (hidden)\\rreason: harmless"),
        "{}",
        run.stderr
    );
    for raw in ["\u{1b}[9D", "\u{1b}[K pytest", "\u{1b}[8m"] {
        assert!(!run.stderr.contains(raw), "{raw:?} reached the terminal");
    }
    assert!(!home.workspace().join("X").exists());
}
