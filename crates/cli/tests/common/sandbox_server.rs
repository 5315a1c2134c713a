//! One `deputy mcp-server` against a scripted model, for the escape batteries that go
//! through the real server: the model asks for `shell` / `shell_command` calls that try to
//! leave the sandbox chosen by the `codex` tool's arguments, and the tests read what happened
//! on disk, on the wire and in the model's next request.
//!
//! Everything the sandbox must keep out lives under Cargo's target tmp dir, never under `/tmp`
//! (which workspace-write may write); `TMPDIR` is removed from the server's environment and
//! `HOME` points outside the workspace for the same reason.

#![allow(
    dead_code,
    reason = "each escape battery uses a different part of this module"
)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use deputy_test_support::{McpSession, MockModelServer, MockResponse, StdioClient, TestHome};
use serde_json::{Value, json};
use tempfile::TempDir;

use crate::outside::outside_dir;

/// How long a turn may take before the test gives up on it.
pub const WAIT: Duration = Duration::from_secs(60);
/// The model's last answer in every scripted turn.
pub const FINAL_TEXT: &str = "done";
/// What deputy appends to the output of a sandboxed command that failed like a denial.
pub const DENIAL_NOTE: &str = "looks like a sandbox denial";

/// One model tool call: its id and the turn that makes it.
pub struct Step {
    /// The call id.
    pub call_id: &'static str,
    /// The model turn that makes the call.
    pub turn: MockResponse,
}

/// A model turn calling `shell` with `argv`.
pub fn shell(call_id: &'static str, argv: &[&str]) -> Step {
    Step {
        call_id,
        turn: MockResponse::function_call_turn(call_id, "shell", json!({"command": argv})),
    }
}

/// A model turn calling `shell_command` with `script` (run by `bash -lc`).
pub fn shell_command(call_id: &'static str, script: &str) -> Step {
    Step {
        call_id,
        turn: MockResponse::function_call_turn(
            call_id,
            "shell_command",
            json!({"command": script}),
        ),
    }
}

/// A model turn calling `shell_command` with `script`, asking to run it in `workdir`.
pub fn shell_command_in(call_id: &'static str, script: &str, workdir: &str) -> Step {
    Step {
        call_id,
        turn: MockResponse::function_call_turn(
            call_id,
            "shell_command",
            json!({"command": script, "workdir": workdir}),
        ),
    }
}

/// A model turn calling `shell` with `argv`, asking to run it in `workdir`.
pub fn shell_in(call_id: &'static str, argv: &[&str], workdir: &str) -> Step {
    Step {
        call_id,
        turn: MockResponse::function_call_turn(
            call_id,
            "shell",
            json!({"command": argv, "workdir": workdir}),
        ),
    }
}

/// One `deputy mcp-server` against a scripted model, with a workspace at `<base>/ws` and a
/// `HOME`, all outside `/tmp`.
pub struct Server {
    /// The scripted model.
    pub model: MockModelServer,
    /// The MCP client on the server's stdio.
    pub client: StdioClient,
    /// The parent of the workspace: a `..` away, and not writable.
    pub base: TempDir,
    /// The workspace (canonical), passed as the `codex` call's `cwd`.
    pub ws: PathBuf,
    /// The server's (and its commands') `HOME`.
    pub user_home: TempDir,
    _deputy_home: TestHome,
}

impl Server {
    /// Starts the server; the client announces `capabilities`.
    pub fn start(capabilities: Value) -> Self {
        Self::start_from(capabilities, |_| {
            PathBuf::from(env!("CARGO_BIN_EXE_deputy"))
        })
    }

    /// Starts the `deputy` that `install` returns, given the workspace (where it may put it).
    pub fn start_from(capabilities: Value, install: impl FnOnce(&Path) -> PathBuf) -> Self {
        let base = outside_dir();
        let ws = base.path().join("ws");
        std::fs::create_dir(&ws).expect("create workspace");
        let ws = ws.canonicalize().expect("canonicalize workspace");
        let user_home = outside_dir();
        let model = MockModelServer::start();
        let deputy_home = TestHome::new(&model.base_url());
        let mut command = deputy_home.command(install(&ws));
        command
            .arg("mcp-server")
            .env_remove("TMPDIR")
            .env("HOME", user_home.path())
            .current_dir(&ws);
        let client = StdioClient::spawn(command);
        McpSession::initialize(&client, capabilities);
        Self {
            model,
            client,
            base,
            ws,
            user_home,
            _deputy_home: deputy_home,
        }
    }

    /// Sends the `codex` call running `steps` then a final answer; returns the request id.
    pub fn start_turn(&self, sandbox: &str, policy: &str, steps: &[Step]) -> i64 {
        self.start_turn_with(sandbox, policy, json!({}), steps)
    }

    /// Like [`Server::start_turn`], with `config` (dotted-path overrides) in the call.
    pub fn start_turn_with(
        &self,
        sandbox: &str,
        policy: &str,
        config: Value,
        steps: &[Step],
    ) -> i64 {
        self.model
            .push_all(steps.iter().map(|step| step.turn.clone()));
        self.model.push(MockResponse::text_turn(FINAL_TEXT));
        self.client.request(
            "tools/call",
            json!({"name": "codex", "arguments": {
                "prompt": "try the sandbox",
                "cwd": self.ws,
                "sandbox": sandbox,
                "approval-policy": policy,
                "config": config,
            }}),
        )
    }

    /// Waits for the `codex` call `id` to end, answering every approval question it asks
    /// with `decision`; returns the questions, in order.
    pub fn finish_turn_answering(&self, id: i64, decision: &str) -> Vec<Value> {
        let mut asked: Vec<Value> = Vec::new();
        loop {
            let seen: Vec<Value> = asked.iter().map(|q| q["id"].clone()).collect();
            let message = self
                .client
                .wait_for(
                    |m| {
                        (m["method"] == "elicitation/create" && !seen.contains(&m["id"]))
                            || (m["id"] == id && m.get("method").is_none())
                    },
                    WAIT,
                )
                .unwrap_or_else(|e| panic!("waiting for request {id}: {e}"));
            if message["method"] == "elicitation/create" {
                self.client
                    .respond(message["id"].clone(), json!({"decision": decision}));
                asked.push(message);
                continue;
            }
            let result = &message["result"];
            assert_ne!(result["isError"], true, "the turn failed: {message}");
            assert_eq!(
                result["structuredContent"]["content"], FINAL_TEXT,
                "{message}"
            );
            return asked;
        }
    }

    /// The thread id of the session the `codex` call `id` started.
    pub fn thread_of(&self, id: i64) -> String {
        let response = self
            .client
            .wait_response(id, WAIT)
            .unwrap_or_else(|e| panic!("{e}"));
        response["result"]["structuredContent"]["threadId"]
            .as_str()
            .unwrap_or_else(|| panic!("no thread id in {response}"))
            .to_string()
    }

    /// The outputs the model read about each of `steps`, run from request `first` on.
    pub fn told_from(&self, first: usize, steps: &[Step]) -> Vec<String> {
        steps
            .iter()
            .enumerate()
            .map(|(index, step)| self.told_after(first + index, step.call_id))
            .collect()
    }

    /// Waits for the successful result of the `codex` call `id`.
    pub fn finish_turn(&self, id: i64) {
        let response = self
            .client
            .wait_response(id, WAIT)
            .unwrap_or_else(|e| panic!("{e}"));
        let result = &response["result"];
        assert_ne!(result["isError"], true, "the turn failed: {response}");
        assert_eq!(
            result["structuredContent"]["content"], FINAL_TEXT,
            "{response}"
        );
    }

    /// Runs `steps` in one turn and returns, per step, the output the model read about it in
    /// the request right after its call.
    pub fn run(&self, sandbox: &str, policy: &str, steps: &[Step]) -> Vec<String> {
        let id = self.start_turn(sandbox, policy, steps);
        self.finish_turn(id);
        steps
            .iter()
            .enumerate()
            .map(|(index, step)| self.told_after(index, step.call_id))
            .collect()
    }

    /// The `function_call_output` for `call_id` in the model request following request
    /// `index`, the one whose answer made that call.
    pub fn told_after(&self, index: usize, call_id: &str) -> String {
        let requests = self.model.requests();
        let next = requests
            .get(index + 1)
            .unwrap_or_else(|| panic!("no model request followed the call {call_id}"));
        let items = next.body["input"].as_array().cloned().unwrap_or_default();
        items
            .iter()
            .find(|item| item["type"] == "function_call_output" && item["call_id"] == call_id)
            .and_then(|item| item["output"].as_str())
            .map(str::to_string)
            .unwrap_or_else(|| {
                panic!(
                    "request {} carries no output for {call_id}: {}",
                    index + 1,
                    next.body["input"]
                )
            })
    }

    /// Runs `git init` in the workspace and returns the contents of `.git/config`.
    pub fn git_init(&self) -> String {
        let status = Command::new("git")
            .args(["init", "-q"])
            .current_dir(&self.ws)
            .status()
            .expect("git is needed by the sandbox tests");
        assert!(status.success(), "git init failed");
        std::fs::read_to_string(self.ws.join(".git/config")).expect("read .git/config")
    }
}

/// The exit code on the first line of a command's output as the model reads it.
pub fn exit_code(told: &str) -> i32 {
    told.lines()
        .next()
        .and_then(|line| line.strip_prefix("Exit code: "))
        .and_then(|code| code.parse().ok())
        .unwrap_or_else(|| panic!("no exit code in the model's view: {told}"))
}

/// Asserts the model was told the command failed with one of `errno_texts` and that the
/// failure looks like the sandbox (`mode`) refusing it.
pub fn assert_told_denied(what: &str, told: &str, errno_texts: &[&str], mode: &str) {
    assert_ne!(exit_code(told), 0, "{what}: the command succeeded: {told}");
    assert!(
        errno_texts.iter().any(|errno| told.contains(errno)),
        "{what}: expected one of {errno_texts:?} in: {told}"
    );
    assert!(
        told.contains(DENIAL_NOTE) && told.contains(&format!("sandbox_mode `{mode}`")),
        "{what}: no sandbox denial note for {mode} in: {told}"
    );
}

/// Asserts the model was told the command succeeded, with no denial note.
pub fn assert_told_success(what: &str, told: &str) {
    assert_eq!(exit_code(told), 0, "{what}: {told}");
    assert!(!told.contains(DENIAL_NOTE), "{what}: {told}");
}
