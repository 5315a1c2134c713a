//! The sandbox where the kernel gives an unprivileged user no user namespaces: deputy says
//! so, and confined commands still cannot write outside their roots, touch `.git`, signal
//! their supervisor or leave processes behind. The tests build that world for real: as root,
//! they run deputy as `nobody` inside a user namespace whose `user.max_user_namespaces` is 0.

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

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use sandbox_cli::*;

/// The uid and gid deputy runs as.
const NOBODY: u32 = 65534;

/// Becomes uid 0 of the new user namespace once the test has written its id maps (exec'ing
/// again so that the capabilities come with it), forbids nested user namespaces, then runs
/// the command as `nobody`.
const INSIDE: &str = r#"
while [ -z "$(cat /proc/self/uid_map)" ]; do sleep 0.01; done
exec bash -c 'echo 0 > /proc/sys/user/max_user_namespaces || exit 99
exec setpriv --reuid=65534 --regid=65534 --clear-groups "$@"' inside "$@"
"#;

/// Why this world cannot be built here, if it cannot.
fn unavailable() -> Option<String> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Some("building a world without user namespaces needs root".into());
    }
    for tool in ["unshare", "setpriv"] {
        let found = Command::new(tool)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            return Some(format!("{tool} (util-linux) is not installed"));
        }
    }
    None
}

/// Runs `argv` as `nobody` where no user namespace can be created, feeding `stdin`.
fn without_user_namespaces(argv: &[&str], stdin: &str) -> Output {
    let mut child = Command::new("unshare")
        .args(["-U", "bash", "-c", INSIDE, "outside"])
        .args(argv)
        .env_remove("TMPDIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn unshare");
    let pid = child.id();
    let ours = std::fs::read_link("/proc/self/ns/user").expect("own user namespace");
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::fs::read_link(format!("/proc/{pid}/ns/user")).ok() == Some(ours.clone()) {
        assert!(
            Instant::now() < deadline,
            "unshare never entered its namespace"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let map = "0 0 65536";
    std::fs::write(format!("/proc/{pid}/uid_map"), map).expect("uid_map");
    std::fs::write(format!("/proc/{pid}/gid_map"), map).expect("gid_map");
    let mut input = child.stdin.take().expect("stdin");
    let _ = input.write_all(stdin.as_bytes());
    drop(input);
    child.wait_with_output().expect("wait for unshare")
}

/// A workspace (with a `.git` and a `src/`) and an outside directory that `nobody` owns.
fn nobodys_dirs() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let base = outside::outside_dir();
    let root = std::fs::canonicalize(base.path()).unwrap();
    let ws = root.join("ws");
    let out = root.join("out");
    std::fs::create_dir_all(ws.join(".git")).unwrap();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join(".git/config"), "original\n").unwrap();
    std::fs::create_dir(&out).unwrap();
    let owned = [
        &root,
        &ws,
        &ws.join(".git"),
        &ws.join(".git/config"),
        &ws.join("src"),
        &out,
    ];
    for path in owned {
        std::os::unix::fs::chown(path, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    (base, ws, out)
}

fn deputy_sandbox_as_nobody(mode: &str, ws: &Path, script: &str) -> Output {
    let ws = ws.to_str().expect("utf-8 path");
    without_user_namespaces(
        &[
            env!("CARGO_BIN_EXE_deputy"),
            "sandbox",
            "-s",
            mode,
            "-C",
            ws,
            "--",
            "bash",
            "-c",
            script,
        ],
        "",
    )
}

#[test]
fn deputy_sandbox_says_what_is_missing_and_still_confines() {
    require_sandbox!();
    if let Some(reason) = unavailable() {
        eprintln!("skipping: {reason}");
        return;
    }
    let (_base, ws, out) = nobodys_dirs();
    let marker = unique_marker("no-userns");
    let script = format!(
        "echo ok > src/made.txt; \
         echo top > top.txt; \
         echo x > {out}/escape.txt; \
         echo evil >> .git/config; \
         kill -9 $PPID && echo killed-parent; \
         (setsid {python} -c 'import time; time.sleep(1000)' {marker} >/dev/null 2>&1 &); \
         echo done",
        out = out.display(),
        python = python(),
    );
    let output = deputy_sandbox_as_nobody("workspace-write", &ws, &script);
    let survivors = survivors_after(&marker, Duration::from_secs(10));
    kill_all_with(&marker);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("user namespaces are unavailable"),
        "{}",
        stderr(&output)
    );
    assert_eq!(stdout(&output), "done\n", "{}", stderr(&output));
    assert_eq!(
        std::fs::read_to_string(ws.join("src/made.txt")).unwrap(),
        "ok\n"
    );
    // The limitation the note names: Landlock alone spares `.git` only by leaving the root's
    // own entries unwritable.
    assert!(!ws.join("top.txt").exists());
    assert!(!out.join("escape.txt").exists());
    assert_eq!(
        std::fs::read_to_string(ws.join(".git/config")).unwrap(),
        "original\n"
    );
    assert!(survivors.is_empty(), "{survivors:?} outlived the command");
}

#[test]
fn the_mcp_server_says_at_startup_what_is_missing() {
    require_sandbox!();
    if let Some(reason) = unavailable() {
        eprintln!("skipping: {reason}");
        return;
    }
    let home = outside::outside_dir();
    std::os::unix::fs::chown(home.path(), Some(NOBODY), Some(NOBODY)).unwrap();
    let home_dir = home.path().to_str().expect("utf-8 path");
    // stdin at EOF: the server logs, then shuts down.
    let output = without_user_namespaces(
        &[
            "env",
            &format!("DEPUTY_HOME={home_dir}"),
            env!("CARGO_BIN_EXE_deputy"),
            "mcp-server",
        ],
        "",
    );
    assert!(
        stderr(&output).contains("user namespaces are unavailable"),
        "{}",
        stderr(&output)
    );
}
