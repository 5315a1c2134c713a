//! The same client script against Zed's `codex-acp` adapter (Codex's engine behind ACP),
//! pointed at the same kind of scripted model: both agents do the same work; README.md's
//! table says where their messages differ.

use std::time::Duration;

use deputy_test_support::{MockModelServer, MockResponse, TestHome};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::harness::{
    Agent, CodexHome, agent_text, custom_patch, ok_step, patch, run_plan, say, shell, updates_of,
};

const EDIT: &str =
    "*** Begin Patch\n*** Update File: notes.txt\n@@\n first\n-second\n+SECOND\n*** End Patch";

/// The two agents, each with the model turns `script` gives it (`true`: Codex, whose
/// `apply_patch` is a freeform tool), in a fresh home; codex-acp only where npm
/// installed it.
fn each_agent(
    approval: &str,
    script: impl Fn(bool) -> Vec<MockResponse>,
    run: impl Fn(&str, &MockModelServer, &TestHome, Agent<'_>),
) {
    for codex in [false, true] {
        let model = MockModelServer::start();
        model.push_all(script(codex));
        let home = TestHome::new(&model.base_url());
        home.write_config(&TestHome::default_config(&model.base_url()).replace(
            "approval_policy = \"never\"",
            &format!("approval_policy = \"{approval}\""),
        ));
        let codex_home = CodexHome::new(&model, approval, "danger-full-access");
        let (name, agent) = match (codex, &codex_home) {
            (false, _) => ("deputy", Agent::Deputy),
            (true, Some(codex_home)) => ("codex-acp", Agent::CodexAcp(codex_home)),
            (true, None) => {
                eprintln!("codex-acp is not installed for this platform: deputy only");
                continue;
            }
        };
        run(name, &model, &home, agent);
    }
}

#[test]
fn both_agents_run_a_command_and_edit_a_file() {
    each_agent(
        "never",
        |codex| {
            vec![
                shell("call-1", "echo hello from the command"),
                if codex {
                    custom_patch("call-2", EDIT)
                } else {
                    patch("call-2", EDIT)
                },
                say("Edited."),
            ]
        },
        |name, _, home, agent| {
            std::fs::write(home.workspace().join("notes.txt"), "first\nsecond\nthird\n").unwrap();
            let seen = run_plan(
                home,
                agent,
                json!([]),
                json!([{"op": "initialize"}, {"op": "new"}, {"op": "prompt", "text": "do it"}]),
            );
            let prompt = ok_step(&seen, 2);
            assert_eq!(prompt["result"]["stopReason"], "end_turn", "{name}");
            assert_eq!(
                std::fs::read_to_string(home.workspace().join("notes.txt")).unwrap(),
                "first\nSECOND\nthird\n",
                "{name}"
            );
            let calls = updates_of(prompt, "tool_call");
            let kinds: Vec<&Value> = calls.iter().map(|c| &c["kind"]).collect();
            assert_eq!(kinds, [&json!("execute"), &json!("edit")], "{name}");
            let path = home.workspace().join("notes.txt");
            let diff = json!({"type": "diff", "path": path, "oldText": "first\nsecond\nthird\n", "newText": "first\nSECOND\nthird\n"});
            assert_eq!(calls[1]["content"], json!([diff]), "{name}");
            let finals: Vec<&Value> = updates_of(prompt, "tool_call_update")
                .into_iter()
                .filter_map(|u| u.get("status"))
                .filter(|s| *s == "completed" || *s == "failed")
                .collect();
            assert_eq!(finals, [&json!("completed"), &json!("completed")], "{name}");
            assert!(agent_text(prompt).ends_with("Edited."), "{name}");
        },
    );
}

#[test]
fn both_agents_ask_and_obey_the_answer() {
    each_agent(
        "untrusted",
        |_| {
            vec![
                shell("call-1", "touch once.txt"),
                shell("call-2", "touch rejected.txt"),
                say("Done."),
            ]
        },
        |name, _, home, agent| {
            let seen = run_plan(
                home,
                agent,
                json!(["allow_once", "reject_once"]),
                json!([{"op": "initialize"}, {"op": "new"}, {"op": "prompt", "text": "touch"}]),
            );
            let prompt = ok_step(&seen, 2);
            // Codex's `reject_once` option is "abort": it ends the turn; deputy's declines
            // the command and the turn goes on (the model is told).
            let stop = if name == "deputy" {
                "end_turn"
            } else {
                "cancelled"
            };
            assert_eq!(prompt["result"]["stopReason"], stop, "{name}");
            assert!(home.workspace().join("once.txt").exists(), "{name}");
            assert!(!home.workspace().join("rejected.txt").exists(), "{name}");
            let asked = prompt["permissions"].as_array().unwrap();
            assert_eq!(asked.len(), 2, "{name}: {prompt:#}");
            for question in asked {
                let kinds: Vec<&Value> = question["request"]["options"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|o| &o["kind"])
                    .collect();
                for kind in ["allow_once", "allow_always", "reject_once"] {
                    assert!(kinds.contains(&&json!(kind)), "{name}: {kinds:?}");
                }
            }
        },
    );
}

#[test]
fn both_agents_stop_a_command_on_cancel() {
    each_agent(
        "never",
        |_| {
            vec![
                shell("call-1", "echo $$ > cmd.pid; exec sleep 60"),
                say("unreachable"),
            ]
        },
        |name, model, home, agent| {
            let pid_file = home.workspace().join("cmd.pid");
            let seen = run_plan(
                home,
                agent,
                json!([]),
                json!([
                    {"op": "initialize"},
                    {"op": "new"},
                    {"op": "prompt", "text": "sleep", "cancelWhenFile": pid_file},
                ]),
            );
            let prompt = ok_step(&seen, 2);
            assert_eq!(prompt["result"]["stopReason"], "cancelled", "{name}");
            let pid: i32 = std::fs::read_to_string(&pid_file)
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while std::path::Path::new(&format!("/proc/{pid}")).exists()
                && std::time::Instant::now() < deadline
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            assert!(
                stat.is_empty() || stat.contains(") Z"),
                "{name}: the command still runs: {stat}"
            );
            assert_eq!(model.request_count(), 1, "{name}");
        },
    );
}
