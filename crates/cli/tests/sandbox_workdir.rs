//! Escape battery for the `workdir` of `shell` / `shell_command`: the directory a command
//! asks to start in never widens the sandbox. The writable roots and the protected `.git`
//! come from the session's cwd; a command started in `/`, `..`, an outside directory or a
//! symlink out of the workspace may read there but writes nothing outside the workspace and
//! nothing to its `.git` — under every approval policy (`untrusted` asks before running it).

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
#[path = "common/sandbox_server.rs"]
mod sandbox_server;

use std::path::Path;

use outside::outside_dir;
use sandbox_server::*;
use serde_json::json;

/// One escape attempt: the step, and the file it must not have written (`.git/config`, which
/// must not change, is checked for all of them).
struct Attempt {
    step: Step,
    target: Option<std::path::PathBuf>,
}

/// Tries every workdir escape in one workspace-write session under `policy`, answering every
/// approval question with `denied`; returns how many questions were asked.
fn try_workdir_escapes(policy: &str) -> usize {
    let server = Server::start(json!({"elicitation": {}}));
    let git_config = server.git_init();
    let outside = outside_dir();
    let out = outside.path();
    std::os::unix::fs::symlink(out, server.ws.join("link")).expect("symlink");
    let relative_from_root = out.strip_prefix("/").expect("absolute");
    let ws = server.ws.clone();
    let attempts = [
        Attempt {
            step: shell_command_in(
                "root-absolute",
                &format!("echo x > {}", out.join("from-root.txt").display()),
                "/",
            ),
            target: Some(out.join("from-root.txt")),
        },
        Attempt {
            step: shell_command_in(
                "root-relative",
                &format!(
                    "echo x > {}",
                    relative_from_root.join("relative.txt").display()
                ),
                "/",
            ),
            target: Some(out.join("relative.txt")),
        },
        Attempt {
            step: shell_in(
                "root-git",
                &[
                    "bash",
                    "-c",
                    &format!("echo evil >> {}", ws.join(".git/config").display()),
                ],
                "/",
            ),
            target: None,
        },
        Attempt {
            step: shell_command_in("dotdot", "echo x > escape.txt", ".."),
            target: Some(server.base.path().join("escape.txt")),
        },
        Attempt {
            step: shell_command_in(
                "outside-absolute",
                "echo x > here.txt",
                out.to_str().expect("utf-8 path"),
            ),
            target: Some(out.join("here.txt")),
        },
        Attempt {
            step: shell_command_in("symlink", "echo x > through-link.txt", "link"),
            target: Some(out.join("through-link.txt")),
        },
        Attempt {
            step: shell_command_in("git-dir", "echo evil >> config && touch hooks/x", ".git"),
            target: Some(ws.join(".git/hooks/x")),
        },
    ];
    let steps: Vec<Step> = attempts
        .iter()
        .map(|a| Step {
            call_id: a.step.call_id,
            turn: a.step.turn.clone(),
        })
        .collect();
    let id = server.start_turn("workspace-write", policy, &steps);
    let asked = server.finish_turn_answering(id, "denied");

    for attempt in &attempts {
        if let Some(target) = &attempt.target {
            assert!(
                !target.exists(),
                "{policy}: {} wrote {}",
                attempt.step.call_id,
                target.display()
            );
        }
    }
    assert_eq!(
        std::fs::read_to_string(ws.join(".git/config")).unwrap(),
        git_config,
        "{policy}: .git/config changed"
    );
    assert_nothing_new_in(out, policy);
    if policy != "untrusted" {
        for (index, attempt) in attempts.iter().enumerate() {
            let told = server.told_after(index, attempt.step.call_id);
            assert_ne!(
                exit_code(&told),
                0,
                "{policy}: {}: {told}",
                attempt.step.call_id
            );
        }
    }
    asked.len()
}

/// Asserts the outside directory holds nothing the session wrote.
fn assert_nothing_new_in(dir: &Path, policy: &str) {
    let entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(entries.is_empty(), "{policy}: written outside: {entries:?}");
}

#[test]
fn workdir_does_not_widen_workspace_write_under_never() {
    require_sandbox!();
    assert_eq!(try_workdir_escapes("never"), 0);
}

#[test]
fn workdir_does_not_widen_workspace_write_under_on_request() {
    require_sandbox!();
    assert_eq!(try_workdir_escapes("on-request"), 0);
}

#[test]
fn workdir_does_not_widen_workspace_write_under_on_failure() {
    require_sandbox!();
    // Every attempt fails in the sandbox and asks to re-run unsandboxed; all are denied.
    assert_eq!(try_workdir_escapes("on-failure"), 7);
}

#[test]
fn workdir_does_not_widen_workspace_write_under_untrusted() {
    require_sandbox!();
    // Nothing runs before the user answers; every question is denied.
    assert_eq!(try_workdir_escapes("untrusted"), 7);
}

#[test]
fn a_command_started_outside_the_workspace_still_reads_there() {
    require_sandbox!();
    let server = Server::start(json!({}));
    let outside = outside_dir();
    std::fs::write(outside.path().join("notes.txt"), "readable\n").unwrap();
    let steps = [shell_command_in(
        "read",
        "cat notes.txt && pwd",
        outside.path().to_str().expect("utf-8 path"),
    )];
    let told = server.run("workspace-write", "never", &steps);
    assert_told_success("read outside", &told[0]);
    assert!(told[0].contains("readable"), "{}", told[0]);
    assert!(
        told[0].contains(&outside.path().display().to_string()),
        "{}",
        told[0]
    );
}

#[test]
fn a_workdir_that_holds_the_private_tmp_is_refused() {
    require_sandbox!();
    let server = Server::start(json!({}));
    let outside = outside_dir();
    // SAFETY: geteuid cannot fail.
    let base = format!("/tmp/deputy-{}", unsafe { libc::geteuid() });
    // From there a command could swap its session's /tmp for a link to any directory, which
    // the next command would get as its writable /tmp.
    let swap = format!(
        "for d in */; do mv \"$d\" \"${{d%/}}.moved\" && ln -s {} \"${{d%/}}\"; done",
        outside.path().display()
    );
    let steps = [
        shell_command("first", "echo x > /tmp/x"),
        shell_command_in("swap", &swap, &base),
        shell_command("next", "echo pwned > /tmp/pwned"),
    ];
    let told = server.run("workspace-write", "never", &steps);
    assert_told_success("first", &told[0]);
    assert_eq!(exit_code(&told[1]), 125, "{}", told[1]);
    assert!(told[1].contains("would be reachable"), "{}", told[1]);
    assert_told_success("next", &told[2]);
    assert!(!outside.path().join("pwned").exists());
}
