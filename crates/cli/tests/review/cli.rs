//! `deputy review`, as a user runs it.

use std::process::Stdio;
use std::time::{Duration, Instant};

use deputy_test_support::{MockModelServer, MockResponse, TestHome};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::{Finished, deputy, finish};
use crate::harness::WAIT;
use crate::{
    FINDINGS, base_branch_diff, commit_diff, feature_commit, fenced_diff, findings_value,
    repository, review_input, uncommitted_diff,
};

/// An answer with findings of three priorities, listed out of order, in the workspace.
fn mixed_findings(home: &TestHome) -> String {
    // As the process sees its working directory: symlinks resolved.
    let ws = home
        .workspace()
        .canonicalize()
        .unwrap()
        .display()
        .to_string();
    serde_json::json!({
        "findings": [
            {
                "title": "Name the magic number",
                "body": "`42` means nothing here.",
                "confidence_score": 0.4,
                "priority": 3,
                "code_location": {"absolute_file_path": format!("{ws}/lib.rs"), "line_range": {"start": 1, "end": 1}}
            },
            {
                "title": "Do not panic on a bad input",
                "body": "`todo!()` aborts the caller.\nReturn an error instead.",
                "confidence_score": 0.9,
                "priority": 0,
                "code_location": {"absolute_file_path": format!("{ws}/lib.rs"), "line_range": {"start": 2, "end": 3}}
            },
            {
                "title": "Test the staged helper",
                "body": "Nothing covers it.",
                "confidence_score": 0.6,
                "priority": 2,
                "code_location": {"absolute_file_path": "/elsewhere/staged.rs", "line_range": {"start": 1, "end": 1}}
            }
        ],
        "overall_correctness": "patch is incorrect",
        "overall_explanation": "b() panics.\nEverything else is fine.",
        "overall_confidence_score": 0.75
    })
    .to_string()
}

fn review(home: &TestHome, args: &[&str]) -> Finished {
    let mut full = vec!["review"];
    full.extend_from_slice(args);
    finish(deputy(home, &full))
}

fn setup(answers: impl IntoIterator<Item = String>) -> (MockModelServer, TestHome) {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    repository(&home);
    server.push_all(answers.into_iter().map(MockResponse::text_turn));
    (server, home)
}

#[test]
fn findings_print_by_priority_with_locations_and_a_verdict_and_exit_zero() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    repository(&home);
    server.push(MockResponse::text_turn(mixed_findings(&home)));

    let done = review(&home, &[]);
    // An incorrect patch is the review's answer, not a failure of the command.
    done.assert_code(0);
    assert_eq!(
        done.stdout,
        "[P0] lib.rs:2-3 Do not panic on a bad input\n\
         \x20    `todo!()` aborts the caller.\n\
         \x20    Return an error instead.\n\
         \n\
         [P2] /elsewhere/staged.rs:1 Test the staged helper\n\
         \x20    Nothing covers it.\n\
         \n\
         [P3] lib.rs:1 Name the magic number\n\
         \x20    `42` means nothing here.\n\
         \n\
         Verdict: patch is incorrect (confidence 0.75) — b() panics. Everything else is fine.\n"
    );
    // Progress is for terminals; piped, stderr stays quiet.
    assert!(!done.stderr.contains("reviewing"), "{}", done.stderr);
    // No flag: the uncommitted changes.
    let input = review_input(&server.wait_for_requests(1, WAIT).unwrap()[0]);
    assert_eq!(fenced_diff(&input), Some(uncommitted_diff(&home).as_str()));
}

#[test]
fn json_prints_the_review_output_object() {
    let (server, home) = setup([format!("```json\n{FINDINGS}\n```")]);
    let done = review(&home, &["--json", "--uncommitted"]);
    done.assert_code(0);
    let printed: Value = serde_json::from_str(&done.stdout)
        .unwrap_or_else(|err| panic!("stdout is not one JSON document ({err}): {}", done.stdout));
    assert_eq!(printed, findings_value());
    assert_eq!(server.request_count(), 1);
}

#[test]
fn an_unreadable_answer_is_printed_as_it_came() {
    let (_server, home) = setup(["I could not decide.".to_string()]);
    let text = review(&home, &[]);
    text.assert_code(0);
    assert!(
        text.stdout.starts_with("I could not decide.\n"),
        "{}",
        text.stdout
    );
    assert!(text.stdout.contains("Verdict: none"), "{}", text.stdout);
}

#[test]
fn base_commit_prompt_and_model_flags_shape_the_request() {
    let (server, home) = setup([FINDINGS.to_string(), FINDINGS.to_string()]);
    let sha = feature_commit(&home);

    review(
        &home,
        &["--base", "main", "-m", "review-model", "Focus on panics."],
    )
    .assert_code(0);
    review(&home, &["--commit", &sha, "--json"]).assert_code(0);

    let requests = server.wait_for_requests(2, WAIT).unwrap();
    let base = review_input(&requests[0]);
    assert_eq!(
        fenced_diff(&base),
        Some(base_branch_diff(&home).as_str()),
        "{base}"
    );
    assert!(base.contains("Also: Focus on panics."), "{base}");
    assert_eq!(requests[0].body["model"], "review-model");
    let commit = review_input(&requests[1]);
    assert_eq!(
        fenced_diff(&commit),
        Some(commit_diff(&home, &sha).as_str()),
        "{commit}"
    );
    assert_eq!(requests[1].body["model"], "mock-model");
}

#[test]
fn a_directory_outside_any_repository_fails_clearly() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    let done = review(&home, &[]);
    done.assert_code(1);
    assert_eq!(done.stdout, "");
    assert!(
        done.stderr.contains("is not inside a git repository"),
        "{}",
        done.stderr
    );
    assert_eq!(server.request_count(), 0);

    let json = review(&home, &["--json"]);
    json.assert_code(1);
    assert_eq!(json.stdout, "");
}

#[test]
fn a_clean_tree_has_nothing_to_review_and_no_model_is_asked() {
    let (server, home) = setup([]);
    let ws = home.workspace();
    // Back to the last commit: the staged file goes with the reset, the untracked by hand.
    crate::git(&home, ws, &["reset", "-q", "--hard"]);
    std::fs::remove_file(ws.join("new.rs")).unwrap();

    let done = review(&home, &[]);

    done.assert_code(0);
    assert_eq!(
        done.stdout,
        "Nothing to review: no diff for the uncommitted changes (staged, unstaged and \
         untracked files).\n"
    );
    let json = review(&home, &["--json"]);
    json.assert_code(0);
    let output: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(output["findings"], json!([]));
    assert_eq!(server.request_count(), 0);
}

#[test]
fn an_unknown_branch_fails_clearly() {
    let (server, home) = setup([]);
    let done = review(&home, &["--base", "no-such-branch"]);
    done.assert_code(1);
    assert_eq!(done.stdout, "");
    assert!(done.stderr.contains("no-such-branch"), "{}", done.stderr);
    assert_eq!(server.request_count(), 0);
}

/// A "sha" that is really a git option (`--output=FILE` would empty FILE) names no commit.
#[test]
fn an_option_shaped_commit_or_branch_is_refused_and_writes_nothing() {
    let (server, home) = setup([]);
    let victim = home.path().join("victim.txt");
    std::fs::write(&victim, "keep me\n").unwrap();
    let option = format!("--output={}", victim.display());
    for flag in ["--commit", "--base"] {
        let done = review(&home, &[&format!("{flag}={option}")]);
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me\n");
        done.assert_code(1);
        assert!(
            done.stderr
                .contains(&format!("`{option}` does not name a commit")),
            "{flag}: {}",
            done.stderr
        );
    }
    assert_eq!(server.request_count(), 0);
}

#[test]
fn one_target_at_a_time() {
    let (server, home) = setup([]);
    let done = review(&home, &["--base", "main", "--commit", "HEAD"]);
    done.assert_code(2);
    assert!(
        done.stderr.contains("cannot be used with"),
        "{}",
        done.stderr
    );
    assert_eq!(server.request_count(), 0);
}

/// Live (not zombie) processes whose argv[0] is `marker`.
fn running(marker: &str) -> Vec<i32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let argv0 = cmdline.split(|b| *b == 0).next().unwrap_or_default();
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next())
                .unwrap_or('X');
            argv0 == marker.as_bytes() && !matches!(state, 'Z' | 'X' | 'x')
        })
        .collect()
}

/// Polls `done` until it holds or [`WAIT`] passes; returns whether it held.
fn within_wait(mut done: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while !done() {
        if start.elapsed() > WAIT {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

#[test]
fn sigterm_stops_the_review_and_the_reviewers_command() {
    if let Err(why) = deputy_sandbox::probe() {
        // The reviewer's commands run read-only in the sandbox, or not at all.
        deputy_test_support::skip_without_sandbox(why);
        return;
    }
    let (server, home) = setup([]);
    let marker = format!("deputy-review-sleeper-{}", std::process::id());
    server.push(MockResponse::function_call_turn(
        "call-sleep",
        "shell_command",
        json!({"command": format!("exec -a {marker} sleep 30")}),
    ));
    let mut command = deputy(&home, &["review"]);
    command.stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = command.spawn().expect("spawn deputy");
    let started = within_wait(|| !running(&marker).is_empty());
    // SAFETY: kill(2) has no memory-safety preconditions; the pid is our child's.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let mut status = None;
    within_wait(|| {
        status = child.try_wait().ok().flatten();
        status.is_some()
    });
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let stopped = within_wait(|| running(&marker).is_empty());
    for pid in running(&marker) {
        // SAFETY: as above; the survivor must not outlive the test.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    assert!(started, "the reviewer's command never ran");
    assert_eq!(status.and_then(|s| s.code()), Some(128 + libc::SIGTERM));
    assert!(stopped, "the reviewer's command outlived deputy");
}

#[test]
fn what_the_reviewer_wrote_is_printed_with_its_controls_escaped() {
    let answer = json!({
        "findings": [{
            "title": "Fine\u{1b}[2K\rNo issue",
            "body": "Looks \u{202e}doog\u{202c}.\nSecond line.",
            "confidence_score": 0.5,
            "priority": 1,
            "code_location": {"absolute_file_path": "/elsewhere/a\u{1b}[8m.rs", "line_range": {"start": 1, "end": 1}}
        }],
        "overall_correctness": "patch is correct",
        "overall_explanation": "ok\u{7}",
        "overall_confidence_score": 0.5
    });
    let (_server, home) = setup([answer.to_string()]);
    let done = review(&home, &[]);
    done.assert_code(0);
    assert_eq!(
        done.stdout,
        "[P1] /elsewhere/a\\e[8m.rs:1 Fine\\e[2K\\rNo issue\n\
         \x20    Looks \\u202Edoog\\u202C.\n\
         \x20    Second line.\n\
         \n\
         Verdict: patch is correct (confidence 0.50) — ok\\a\n"
    );
}
