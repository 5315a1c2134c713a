//! Which program launches commands: the stand-alone `deputy-sandbox-exec` built beside
//! `deputy` when it is there, else `deputy` re-executed; the one deputy started with, even
//! when a command puts another file in its place; and the stand-alone launcher run any other
//! way than deputy runs it. Each test reads the launcher's executable from the
//! command itself (`/proc/$PPID/exe`: the launcher is the command's parent).

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

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sandbox_cli::{run, workspace};
use sandbox_server::{Server, shell_command};
use serde_json::json;

const DEPUTY: &str = env!("CARGO_BIN_EXE_deputy");
const STANDALONE: &str = env!("CARGO_BIN_EXE_deputy-sandbox-exec");
/// Prints the executable of the command's parent, its launcher.
const PARENT_EXE: &str = "readlink /proc/$PPID/exe";

/// `deputy sandbox` through `deputy` at `exe`, running `script` in `mode`.
fn sandbox_run(exe: &Path, mode: &str, cwd: &Path, script: &str) -> Output {
    let mut command = Command::new(exe);
    command
        .args(["sandbox", "-s", mode, "-C"])
        .arg(cwd)
        .args(["--", "bash", "-c", script])
        .env_remove("TMPDIR");
    run(command)
}

fn stdout(output: &Output) -> String {
    assert!(output.status.success(), "failed: {output:?}");
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

#[test]
fn the_server_runs_commands_under_the_stand_alone_launcher_beside_it() {
    let server = Server::start(json!({}));
    let told = server.run(
        "danger-full-access",
        "never",
        &[shell_command("launcher", PARENT_EXE)],
    );
    assert!(told[0].contains(STANDALONE), "{told:?}");
}

/// Where the static C library is installed, the build links the stand-alone launcher
/// static-pie (see `build.rs`): the launcher supervising a command has no dynamic loader and
/// no shared library mapped, and still runs the command and hands back its output.
#[test]
fn the_stand_alone_launcher_maps_no_shared_library_where_it_is_linked_static() {
    let Some(static_launcher) = option_env!("DEPUTY_STATIC_LAUNCHER") else {
        eprintln!("skipped: this build links the launcher dynamically (no static C library)");
        return;
    };
    assert_eq!(static_launcher, "1");
    let server = Server::start(json!({}));
    let script = "readlink /proc/$PPID/exe; echo \"shared: $(grep -c '\\.so' /proc/$PPID/maps)\"";
    let told = server.run(
        "danger-full-access",
        "never",
        &[shell_command("maps", script)],
    );
    assert!(told[0].contains(STANDALONE), "{told:?}");
    assert!(told[0].contains("shared: 0"), "{told:?}");
}

#[test]
fn deputy_sandbox_uses_the_stand_alone_launcher_beside_it() {
    let (_ws, ws) = workspace();
    let output = sandbox_run(Path::new(DEPUTY), "danger-full-access", &ws, PARENT_EXE);
    assert_eq!(stdout(&output), STANDALONE);
}

/// `deputy` alone in a directory of its own (a hard link, or a copy where links fail).
fn deputy_alone() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
    let alone = dir.path().join("deputy");
    if std::fs::hard_link(DEPUTY, &alone).is_err() {
        std::fs::copy(DEPUTY, &alone).expect("copy deputy");
    }
    (dir, alone)
}

#[test]
fn without_the_stand_alone_launcher_deputy_re_executes_itself() {
    let (_dir, alone) = deputy_alone();
    let (_ws, ws) = workspace();
    let output = sandbox_run(&alone, "danger-full-access", &ws, PARENT_EXE);
    assert_eq!(PathBuf::from(stdout(&output)), alone);
}

#[test]
fn without_the_stand_alone_launcher_commands_are_still_confined() {
    require_sandbox!();
    let (_dir, alone) = deputy_alone();
    let (_ws, ws) = workspace();
    let outside = outside::outside_dir();
    let target = outside.path().join("escaped.txt");
    let script = format!("echo x > {}; echo ran", target.display());
    let output = sandbox_run(&alone, "workspace-write", &ws, &script);
    assert_eq!(stdout(&output), "ran");
    assert!(!target.exists(), "the command wrote outside its workspace");
}

/// `files` (binaries) hard-linked, or copied where links fail, into `dir`.
fn install(files: &[&str], dir: &Path) {
    std::fs::create_dir_all(dir).expect("create the install directory");
    for file in files {
        let to = dir.join(Path::new(file).file_name().expect("a file name"));
        if std::fs::hard_link(file, &to).is_err() {
            std::fs::copy(file, &to).expect("copy a binary");
        }
    }
}

/// deputy installed (with `files`) in its own workspace, running workspace-write: a first
/// command puts a program of its own in place of `replaced`, the binary that launches
/// commands, the way a build or an attacker would; the next command must still start under
/// the launcher deputy started with, confined.
fn a_replaced_launcher_is_never_run(files: &[&str], replaced: &str) {
    require_sandbox!();
    let outside = outside::outside_dir();
    let impostor_ran = outside.path().join("impostor-ran");
    let escaped = outside.path().join("escaped");
    let server = Server::start_from(json!({}), |ws| {
        install(files, &ws.join("bin"));
        ws.join("bin/deputy")
    });
    let target = server.ws.join("bin").join(replaced);
    let replace = format!(
        "printf '#!/bin/sh\\ntouch {}\\n' > impostor && chmod +x impostor && mv -f impostor {} && echo replaced",
        impostor_ran.display(),
        target.display()
    );
    let next = format!("echo x > {}; echo second", escaped.display());
    let told = server.run(
        "workspace-write",
        "never",
        &[
            shell_command("replace", &replace),
            shell_command("next", &next),
        ],
    );
    assert!(told[0].contains("replaced"), "{told:?}");
    let now = std::fs::read_to_string(&target).unwrap_or_default();
    assert!(
        now.starts_with("#!/bin/sh"),
        "the launcher was not replaced: {told:?}"
    );
    assert!(told[1].contains("second"), "{told:?}");
    assert!(
        !impostor_ran.exists(),
        "a command started under the replaced {replaced}"
    );
    assert!(!escaped.exists(), "the next command ran unconfined");
}

#[test]
fn a_stand_alone_launcher_replaced_by_a_command_is_never_run() {
    a_replaced_launcher_is_never_run(&[DEPUTY, STANDALONE], deputy_sandbox::LAUNCHER_BINARY);
}

#[test]
fn a_deputy_replaced_by_a_command_is_never_run_as_launcher() {
    a_replaced_launcher_is_never_run(&[DEPUTY], "deputy");
}

#[test]
fn the_launcher_is_named_in_process_listings() {
    let (_ws, ws) = workspace();
    let output = sandbox_run(
        Path::new(DEPUTY),
        "danger-full-access",
        &ws,
        "cat /proc/$PPID/comm",
    );
    assert_eq!(stdout(&output), "deputy-sandbox");
}

/// The stand-alone launcher's argv as deputy gives it, naming `build`, running `script`.
fn launch(build: &str, cwd: &Path, script: &str) -> Output {
    Command::new(STANDALONE)
        .args([deputy_sandbox::LAUNCHER_SUBCOMMAND, "--build", build])
        .args(["--mode", "danger-full-access", "--cwd"])
        .arg(cwd)
        .args(["--parent-pid", &std::process::id().to_string()])
        .args(["--", "bash", "-c", script])
        .output()
        .expect("run the launcher")
}

#[test]
fn a_launcher_of_another_build_refuses_the_command() {
    let (_ws, ws) = workspace();
    let marker = ws.join("ran");
    let touch = format!("touch {}", marker.display());
    let output = launch("0123456789abcdef", &ws, &touch);
    assert_eq!(
        output.status.code(),
        Some(deputy_sandbox::SANDBOX_UNAVAILABLE_EXIT_CODE),
        "{output:?}"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("build and install deputy"), "{stderr}");
    assert!(
        !marker.exists(),
        "a launcher of another build ran the command"
    );
    // The same launch naming this build runs it.
    let output = launch(deputy_sandbox::LAUNCHER_BUILD, &ws, &touch);
    assert!(output.status.success(), "{output:?}");
    assert!(marker.exists(), "the command did not run");
}

#[test]
fn the_stand_alone_launcher_run_by_hand_refuses_and_runs_nothing() {
    let (_ws, ws) = workspace();
    let marker = ws.join("ran");
    let touch = format!("touch {}", marker.display());
    // Without the subcommand deputy puts first, and with a flag no launcher knows.
    let calls: [&[&str]; 2] = [
        &["--", "bash", "-c", &touch],
        &["__sandbox-exec", "--unheard-of", "--", "bash", "-c", &touch],
    ];
    for args in calls {
        let output = Command::new(STANDALONE).args(args).output().expect("run");
        assert_eq!(
            output.status.code(),
            Some(deputy_sandbox::SANDBOX_UNAVAILABLE_EXIT_CODE),
            "{args:?}: {output:?}"
        );
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.starts_with("deputy sandbox: "), "{args:?}: {stderr}");
        assert!(!marker.exists(), "{args:?} ran the command");
    }
}
