//! Which commands ask and which run, for every approval policy: one table, one server per
//! policy, every command of the table called in one turn.

use std::collections::BTreeMap;

use deputy_test_support::MockResponse;
use serde_json::{Value, json};

use crate::harness::{Setup, WAIT, require_sandbox, say};

const RUNS: &str = "runs";
const ASKS: &str = "asks";
const RETRY_ASKS: &str = "runs, then asks";
const REFUSED: &str = "refused";

const POLICIES: [&str; 4] = ["untrusted", "on-failure", "on-request", "never"];

/// One row: what the model asks for, and what happens under each policy of [`POLICIES`].
struct Row {
    label: &'static str,
    arguments: Value,
    expected: [&'static str; 4],
}

fn row(label: &'static str, argv: &[&str], expected: [&'static str; 4]) -> Row {
    Row {
        label,
        arguments: json!({"command": argv}),
        expected,
    }
}

fn bash(label: &'static str, expected: [&'static str; 4]) -> Row {
    row(label, &["bash", "-lc", label], expected)
}

fn table() -> Vec<Row> {
    let anywhere = [RUNS; 4];
    let asks_if_untrusted = [ASKS, RUNS, RUNS, RUNS];
    vec![
        row("ls", &["ls"], anywhere),
        row("cat file.txt", &["cat", "file.txt"], anywhere),
        // Reads only while confined read-only (its configuration can run programs), and this
        // table's sandbox is workspace-write.
        row("git status", &["git", "status"], asks_if_untrusted),
        bash("ls | wc -l", anywhere),
        bash("ls && cat file.txt", anywhere),
        row("touch new.txt", &["touch", "new.txt"], asks_if_untrusted),
        bash("ls > f", asks_if_untrusted),
        row(
            "find . -name '*.tmp' -delete",
            &["find", ".", "-name", "*.tmp", "-delete"],
            asks_if_untrusted,
        ),
        row(
            "find . -name '*.tmp' -exec rm {} ;",
            &["find", ".", "-name", "*.tmp", "-exec", "rm", "{}", ";"],
            asks_if_untrusted,
        ),
        row("git push", &["git", "push"], asks_if_untrusted),
        bash("cat x | sh", asks_if_untrusted),
        bash("ls && rm file.txt", asks_if_untrusted),
        // Outside the only writable root: the kernel refuses it, and only `on-failure`
        // offers to run it again without the sandbox.
        row(
            "touch ../outside.txt",
            &["touch", "../outside.txt"],
            [ASKS, RETRY_ASKS, RUNS, RUNS],
        ),
        Row {
            label: "ls, require_escalated",
            arguments: json!({
                "command": ["ls"],
                "sandbox_permissions": "require_escalated",
                "justification": "list without the sandbox",
            }),
            expected: [ASKS, ASKS, ASKS, REFUSED],
        },
    ]
}

#[test]
fn each_policy_asks_for_exactly_the_commands_it_must() {
    require_sandbox!();
    let rows = table();
    let mut mismatches = Vec::new();
    for (column, policy) in POLICIES.into_iter().enumerate() {
        let observed = observe(policy, &rows);
        for (row, got) in rows.iter().zip(&observed) {
            let want = row.expected[column];
            if got != want {
                mismatches.push(format!(
                    "{policy:>10} | {:<34} | expected {want:<16} got {got}",
                    row.label
                ));
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "approval decisions differ from the table:\n{}",
        mismatches.join("\n")
    );
}

/// Runs every row under `policy` (workspace-write, only the workspace writable), denies every
/// question, and returns per row whether it ran, asked, both, or neither.
fn observe(policy: &'static str, rows: &[Row]) -> Vec<String> {
    let harness = Setup {
        workspace_only: true,
        ..Setup::new(policy, "workspace-write")
    }
    .start();
    harness.write("file.txt", "hello\n");
    harness.write("x", "echo from-x\n");
    harness.write("junk.tmp", "junk\n");
    let call_id = |index: usize| format!("call-{index}");
    for (index, row) in rows.iter().enumerate() {
        harness.model.push(MockResponse::function_call_turn(
            call_id(index),
            "shell",
            row.arguments.clone(),
        ));
    }
    harness.model.push(say("done"));

    let id = harness.codex("run the table");
    let mut answered = Vec::new();
    loop {
        let message = harness
            .client
            .wait_for(
                |m| {
                    (m["method"] == "elicitation/create" && !answered.contains(&m["id"]))
                        || (m["id"] == id && m.get("method").is_none())
                },
                WAIT,
            )
            .unwrap_or_else(|e| panic!("{policy}: {e}"));
        if message["method"] == "elicitation/create" {
            harness
                .client
                .respond(message["id"].clone(), json!({"decision": "denied"}));
            answered.push(message["id"].clone());
            continue;
        }
        assert_eq!(
            message["result"]["structuredContent"]["content"], "done",
            "{policy}: {message}"
        );
        break;
    }

    let mut steps: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for message in harness.client.messages() {
        if let Some(call) = crate::harness::elicitation_call_id(&message) {
            steps.entry(call.to_string()).or_default().push(ASKS);
        } else if message["method"] == "codex/event"
            && message["params"]["msg"]["type"] == "exec_command_end"
            // A declined command's entry is closed too; it did not run.
            && message["params"]["msg"]["status"] != "declined"
        {
            let call = message["params"]["msg"]["call_id"].as_str().unwrap_or("");
            steps.entry(call.to_string()).or_default().push(RUNS);
        }
    }
    if policy == "untrusted" {
        // Denied lookalikes left no trace.
        for name in ["new.txt", "f", "../outside.txt"] {
            assert!(!harness.exists(name), "untrusted: {name} was created");
        }
        assert!(
            harness.exists("junk.tmp"),
            "untrusted: junk.tmp was deleted"
        );
        assert!(
            harness.exists("file.txt"),
            "untrusted: file.txt was removed"
        );
    }
    (0..rows.len())
        .map(|index| match steps.get(&call_id(index)) {
            None => {
                let output = harness.output_for(&call_id(index));
                assert!(
                    output.contains("`never`"),
                    "{policy}: a refusal must tell the model why: {output}"
                );
                REFUSED.to_string()
            }
            Some(seen) => seen.join(", then "),
        })
        .collect()
}

#[test]
fn on_failure_reruns_a_sandbox_denied_command_without_the_sandbox_once_approved() {
    require_sandbox!();
    let harness = Setup {
        workspace_only: true,
        ..Setup::new("on-failure", "workspace-write")
    }
    .start();
    harness.model.push_all([
        crate::harness::shell("c1", &["touch", "../outside.txt"]),
        say("done"),
    ]);

    let id = harness.codex("touch outside");
    let question = harness.answer("c1", json!({"decision": "approved"}));
    harness.result(id);

    let reason = question["params"]["codex_reason"]
        .as_str()
        .unwrap_or_default();
    assert!(reason.contains("sandbox"), "{reason}");
    assert!(
        reason.to_lowercase().contains("permission denied"),
        "{reason}"
    );
    assert_eq!(harness.events("exec_command_begin").len(), 2);
    assert!(harness.home.path().join("outside.txt").exists());
    assert!(harness.output_for("c1").starts_with("Exit code: 0\n"));
}
