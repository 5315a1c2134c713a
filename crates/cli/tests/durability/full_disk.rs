//! A full (or read-only) disk under `$DEPUTY_HOME/sessions`: a real tmpfs of a few hundred KiB mounted
//! there in a private mount namespace (`unshare -m`; as a normal user, in a user namespace
//! too), filled by the test while a turn runs. The client is told the turn failed (naming
//! the file and the cause), the rollout keeps no torn line, and once space returns the
//! thread continues from exactly what was saved and its next turn says what was lost.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use deputy_test_support::{McpSession, MockModelServer, MockResponse, StdioClient, TestHome};
use serde_json::{Value, json};

use crate::common::{DEPUTY, finish};

const WAIT: Duration = Duration::from_secs(20);

/// `deputy args…` with a tmpfs mounted with `options` (`size=…`, `ro`) over the home's
/// `sessions/`, filled up first when `full`. Once deputy exits, the files left in the tmpfs
/// (size and path) are listed in `<home>/left-in-sessions.txt`, since the tmpfs goes with
/// the namespace.
fn on_tmpfs(home: &TestHome, options: &str, full: bool, args: &[&str]) -> Command {
    let sessions = home.path().join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let script = r#"
        dir=$1; options=$2; full=$3; shift 3
        mount -t tmpfs -o "$options,mode=700" tmpfs "$dir" || exit 97
        if [ "$full" = yes ]; then cat /dev/zero > "$dir/filler" 2>/dev/null; fi
        "$@"; code=$?
        find "$dir" -type f ! -name filler -printf '%s %P\n' > "$dir/../left-in-sessions.txt"
        exit $code
    "#;
    let mut command = home.command("unshare");
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        command.args(["--user", "--map-root-user"]);
    }
    command
        .args([
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            script,
            "sh",
        ])
        .arg(&sessions)
        .args([options, if full { "yes" } else { "no" }, DEPUTY])
        .args(args)
        .env("HOME", home.path());
    command
}

/// A path inside the namespace of process `pid` (its root, as `/proc` shows it).
fn seen_by(pid: u32, path: &Path) -> PathBuf {
    PathBuf::from(format!("/proc/{pid}/root{}", path.display()))
}

/// Fills the file system holding `dir` with `dir/filler`.
fn fill(dir: &Path) {
    use std::io::Write;
    let mut filler = std::fs::File::create(dir.join("filler")).unwrap();
    let block = vec![0u8; 64 << 10];
    while filler.write_all(&block).is_ok() {}
    let _ = filler.sync_all();
}

/// The rollout files under `sessions` (as seen from outside the namespace).
fn rollouts(sessions: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "jsonl") {
                out.push(path);
            }
        }
    }
    let mut out = Vec::new();
    walk(sessions, &mut out);
    out
}

fn user_texts(request: &deputy_test_support::RecordedRequest) -> Vec<String> {
    request.body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["role"] == "user")
        .filter_map(|item| item["content"][0]["text"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn a_thread_that_cannot_write_its_rollout_fails_and_leaves_no_empty_file() {
    let model = MockModelServer::start();
    let home = TestHome::new(&model.base_url());
    let run = finish(on_tmpfs(&home, "size=64k", true, &["exec", "hello"]));

    assert_ne!(run.status.code(), Some(0), "{}", run.stderr);
    assert_ne!(
        run.status.code(),
        Some(97),
        "the tmpfs could not be mounted"
    );
    assert!(
        run.stderr.contains("No space left on device") && run.stderr.contains("rollout-"),
        "{}",
        run.stderr
    );
    let left = std::fs::read_to_string(home.path().join("left-in-sessions.txt")).unwrap();
    assert_eq!(left, "", "files left in sessions/");
    assert_eq!(model.request_count(), 0);
}

#[test]
fn a_full_disk_mid_turn_fails_the_turn_and_the_thread_continues_from_what_was_saved() {
    let model = MockModelServer::start();
    let home = TestHome::new(&model.base_url());
    let big_answer = "lost words ".repeat(20_000);
    model.push_all([
        MockResponse::text_turn("first answer"),
        // Slow enough for the test to fill the disk once the request is in.
        MockResponse::text_turn(big_answer.clone()).delay_before(Duration::from_millis(500)),
        MockResponse::text_turn("third answer"),
    ]);
    let client = StdioClient::spawn(on_tmpfs(&home, "size=512k", false, &["mcp-server"]));
    McpSession::initialize(&client, json!({}));
    let sessions = seen_by(client.pid(), &home.path().join("sessions"));
    let call = |tool: &str, arguments: Value| {
        let id = client.request("tools/call", json!({"name": tool, "arguments": arguments}));
        let response = client.wait_response(id, WAIT).unwrap();
        (id, response["result"].clone())
    };
    let text = |result: &Value| {
        result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };

    let (_, first) = call("codex", json!({"prompt": "first prompt"}));
    assert_ne!(first["isError"], true, "{first}");
    let thread = first["structuredContent"]["threadId"]
        .as_str()
        .unwrap()
        .to_string();
    let rollout = rollouts(&sessions).pop().expect("a rollout");

    let second = {
        let id = client.request(
            "tools/call",
            json!({"name": "codex-reply", "arguments": {"threadId": thread, "prompt": "second prompt"}}),
        );
        model.wait_for_requests(2, WAIT).unwrap();
        fill(&sessions);
        client.wait_response(id, WAIT).unwrap()["result"].clone()
    };
    assert_eq!(second["isError"], true, "{:.400}", second.to_string());
    let told = text(&second);
    assert!(
        told.contains("No space left on device")
            && told.contains(&*rollout.file_name().unwrap().to_string_lossy()),
        "{told}"
    );

    // No torn record: every line is whole JSON, and the lost turn's answer is not there.
    let saved = std::fs::read_to_string(&rollout).unwrap();
    assert!(saved.ends_with('\n'));
    for line in saved.lines() {
        serde_json::from_str::<Value>(line)
            .unwrap_or_else(|e| panic!("torn line ({e}): {line:.200}"));
    }
    assert!(!saved.contains("lost words"));

    std::fs::remove_file(sessions.join("filler")).unwrap();
    let (third_id, third) = call(
        "codex-reply",
        json!({"threadId": thread, "prompt": "third prompt"}),
    );
    assert_ne!(third["isError"], true, "{third}");
    assert_eq!(text(&third), "third answer");
    let warnings: Vec<String> = client
        .notifications("codex/event")
        .iter()
        .filter(|m| m["params"]["_meta"]["requestId"] == json!(third_id))
        .filter(|m| m["params"]["msg"]["type"] == "warning")
        .map(|m| {
            m["params"]["msg"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("continues from what was saved") && w.contains("second prompt")),
        "{warnings:?}"
    );
    // The model sees what was saved: the first turn and the third prompt, not the second.
    let requests = model.wait_for_requests(3, WAIT).unwrap();
    assert_eq!(
        user_texts(&requests[2]).last().map(String::as_str),
        Some("third prompt")
    );
    assert!(user_texts(&requests[2]).iter().any(|t| t == "first prompt"));
    assert!(
        !user_texts(&requests[2])
            .iter()
            .any(|t| t == "second prompt")
    );

    // What is on disk is what the next process resumes: copy it out of the namespace.
    let saved = std::fs::read(&rollout).unwrap();
    client.close_stdin();
    assert!(client.wait_exit(WAIT).is_some_and(|s| s.success()));
    let outside = home
        .path()
        .join("sessions")
        .join(rollout.strip_prefix(&sessions).unwrap());
    std::fs::create_dir_all(outside.parent().unwrap()).unwrap();
    std::fs::write(&outside, saved).unwrap();
    model.push(MockResponse::text_turn("fourth answer"));
    let resumed = finish({
        let mut command = home.command(DEPUTY);
        command.args(["exec", "resume", &thread, "fourth prompt"]);
        command
    });
    resumed.assert_code(0);
    let requests = model.wait_for_requests(4, WAIT).unwrap();
    assert_eq!(
        user_texts(&requests[3]),
        user_texts(&requests[2])
            .into_iter()
            .chain(["fourth prompt".to_string()])
            .collect::<Vec<_>>()
    );
}

#[test]
fn a_read_only_sessions_directory_is_one_clear_error() {
    let model = MockModelServer::start();
    let home = TestHome::new(&model.base_url());
    let run = finish(on_tmpfs(&home, "ro", false, &["exec", "hello"]));

    assert_eq!(run.status.code(), Some(1), "{}", run.stderr);
    let cause = "Read-only file system";
    assert_eq!(run.stderr.matches(cause).count(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("cannot create the session file"),
        "{}",
        run.stderr
    );
}
