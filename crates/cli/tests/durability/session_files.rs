//! Session files as a user finds them: private whatever the umask, and an empty one
//! explained rather than shown as nothing.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use deputy_test_support::{MockModelServer, MockResponse, TestHome};
use serde_json::json;

use crate::common::{DEPUTY, finish};

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn homes_sessions_and_journals_are_private_under_umask_022() {
    let model = MockModelServer::start();
    model.push_all([
        MockResponse::function_call_turn(
            "call-1",
            "apply_patch",
            json!({"input": "*** Begin Patch\n*** Add File: a.txt\n+a\n*** End Patch"}),
        ),
        MockResponse::text_turn("done"),
    ]);
    let test_home = TestHome::new(&model.base_url());
    // A home deputy creates itself, configured by `-c` alone.
    let home = test_home.path().join("fresh/home");
    let mut command = test_home.command("sh");
    command
        .args(["-c", "umask 022; exec \"$@\"", "sh", DEPUTY, "exec"])
        .args([
            "-c",
            "model_provider=mock",
            "-c",
            "model_providers.mock.name=Mock",
        ])
        .args([
            "-c",
            &format!("model_providers.mock.base_url={}", model.base_url()),
        ])
        .args(["-c", "model_providers.mock.request_max_retries=0"])
        .args(["-s", "danger-full-access", "-a", "never", "write a"])
        .env("DEPUTY_HOME", &home);
    finish(command).assert_code(0);

    assert_eq!(
        std::fs::read_to_string(test_home.workspace().join("a.txt")).unwrap(),
        "a\n"
    );
    assert_eq!(mode(&home), 0o700, "home");
    assert_eq!(mode(&home.join("patch-journal")), 0o700, "patch-journal/");
    let mut dir = home.join("sessions");
    for level in ["sessions", "year", "month", "day"] {
        assert_eq!(mode(&dir), 0o700, "{level}: {}", dir.display());
        let entry = std::fs::read_dir(&dir).unwrap().next().unwrap().unwrap();
        dir = entry.path();
    }
    assert!(
        dir.extension().is_some_and(|e| e == "jsonl"),
        "{}",
        dir.display()
    );
    assert_eq!(mode(&dir), 0o600, "the rollout");
}

#[test]
fn showing_an_empty_session_file_says_why_and_fails() {
    let model = MockModelServer::start();
    model.push(MockResponse::text_turn("hi"));
    let home = TestHome::new(&model.base_url());
    let run = finish({
        let mut command = home.command(DEPUTY);
        command.args(["exec", "--json-events", "hello"]);
        command
    });
    run.assert_code(0);
    let configured: serde_json::Value = run
        .stdout
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .find(|event: &serde_json::Value| event["type"] == "session_configured")
        .unwrap();
    let id = configured["session_id"].as_str().unwrap();
    std::fs::write(configured["rollout_path"].as_str().unwrap(), "").unwrap();

    let shown = finish({
        let mut command = home.command(DEPUTY);
        command.args(["sessions", "show", id]);
        command
    });
    shown.assert_code(1);
    assert_eq!(shown.stdout, "");
    assert!(shown.stderr.contains("is empty"), "{}", shown.stderr);
}
