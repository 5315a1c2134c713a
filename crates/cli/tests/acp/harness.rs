//! Running the ACP client script (`typescript/acp_client.mjs`, on the official
//! TypeScript SDK) against `deputy acp` or Zed's `codex-acp`, both pointed at the same
//! kind of scripted model.

use std::path::{Path, PathBuf};
use std::time::Duration;

use deputy_test_support::{
    MockModelServer, MockResponse, NodeAcp, SseEvent, TestHome, responses, run_with_deadline,
};
use serde_json::{Value, json};

/// The binary under test.
pub const DEPUTY: &str = env!("CARGO_BIN_EXE_deputy");

/// Longest a client script may run; each finishes in a few seconds.
const SCRIPT_DEADLINE: Duration = Duration::from_secs(120);

/// The agent a plan runs against.
pub enum Agent<'a> {
    /// `deputy acp` with the home's `DEPUTY_HOME`.
    Deputy,
    /// Zed's adapter with a `CODEX_HOME` configured like the deputy home's config.
    CodexAcp(&'a CodexHome),
}

/// The SDK installation (installed once per test run).
pub fn node_acp() -> NodeAcp {
    NodeAcp::install().unwrap_or_else(|err| panic!("no ACP TypeScript SDK: {err}"))
}

/// Runs `steps` (answering permission requests with `permissions`, in order) against
/// `agent` working in `home`'s workspace, and returns what the client saw.
pub fn run_plan(home: &TestHome, agent: Agent<'_>, permissions: Value, steps: Value) -> Value {
    let node = node_acp();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/typescript/acp_client.mjs");
    let script = node
        .place_script(&source)
        .unwrap_or_else(|err| panic!("{err}"));
    let agent = match agent {
        Agent::Deputy => json!({"command": DEPUTY, "args": ["acp"]}),
        Agent::CodexAcp(codex) => json!({
            "command": codex.binary,
            "args": [],
            "env": {"CODEX_HOME": codex.dir},
        }),
    };
    let plan = json!({
        "agent": agent,
        "cwd": home.workspace(),
        "permissions": permissions,
        "steps": steps,
    });
    let plan_path = home.path().join("acp-plan.json");
    std::fs::write(&plan_path, plan.to_string()).unwrap();
    let mut command = home.command("node");
    command.arg(&script).arg(&plan_path);
    let output = run_with_deadline(command, SCRIPT_DEADLINE).unwrap_or_else(|err| panic!("{err}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "node exited with {}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}",
        output.status
    );
    serde_json::from_str(stdout.trim())
        .unwrap_or_else(|err| panic!("script output is not JSON ({err}): {stdout}\n{stderr}"))
}

/// The record of step `index`, which must have succeeded.
pub fn ok_step(seen: &Value, index: usize) -> &Value {
    let step = &seen["steps"][index];
    assert!(
        step.get("error").is_none() && step.get("result").is_some(),
        "step {index} failed: {}\n--- agent stderr ---\n{}",
        step,
        seen["stderr"].as_str().unwrap_or_default()
    );
    step
}

/// `(kind of update, tool call status)` for each update of a step, in order: a compact
/// view of what the client was told. A `tool_call` without a status is `pending`, the
/// protocol's default (the SDK leaves the default out).
pub fn update_kinds(step: &Value) -> Vec<(String, String)> {
    step["updates"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|n| {
            let update = &n["update"];
            let kind = update["sessionUpdate"].as_str().unwrap_or("?").to_string();
            let status = match update["status"].as_str() {
                Some(status) => status,
                None if kind == "tool_call" => "pending",
                None => "",
            };
            (kind, status.to_string())
        })
        .collect()
}

/// The updates of a step of kind `kind`.
pub fn updates_of<'a>(step: &'a Value, kind: &str) -> Vec<&'a Value> {
    step["updates"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|n| &n["update"])
        .filter(|u| u["sessionUpdate"] == kind)
        .collect()
}

/// The text of a step's `agent_message_chunk`s, joined.
pub fn agent_text(step: &Value) -> String {
    updates_of(step, "agent_message_chunk")
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

/// The model `codex-acp` is configured with: one Codex knows, so that it offers its
/// usual tools (`apply_patch` as a freeform tool); the mock answers whatever the name.
pub const CODEX_MODEL: &str = "gpt-5.3-codex";

/// A `CODEX_HOME` for `codex-acp` whose config points at `model` the way deputy's test
/// home does: under `target/` (Codex refuses a home under `/tmp`), removed on drop.
pub struct CodexHome {
    /// The home directory.
    pub dir: PathBuf,
    /// The adapter binary.
    pub binary: PathBuf,
}

impl CodexHome {
    /// A home for `codex-acp` talking to `model` under `approval` and `sandbox`; `None`
    /// when npm did not install the adapter for this platform.
    pub fn new(model: &MockModelServer, approval: &str, sandbox: &str) -> Option<Self> {
        let binary = node_acp().codex_acp()?;
        let target = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/acp-codex-homes");
        std::fs::create_dir_all(&target).unwrap();
        let dir = tempfile::Builder::new()
            .prefix("codex-home-")
            .tempdir_in(&target)
            .unwrap()
            .keep();
        let config = format!(
            "model = \"{CODEX_MODEL}\"\n\
             model_provider = \"mock\"\n\
             approval_policy = \"{approval}\"\n\
             sandbox_mode = \"{sandbox}\"\n\
             [model_providers.mock]\n\
             name = \"Mock\"\n\
             base_url = \"{}\"\n\
             wire_api = \"responses\"\n\
             request_max_retries = 0\n\
             stream_max_retries = 0\n",
            model.base_url()
        );
        std::fs::write(dir.join("config.toml"), config).unwrap();
        Some(Self { dir, binary })
    }
}

impl Drop for CodexHome {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A model turn calling `shell_command` with `command`.
pub fn shell(call_id: &str, command: &str) -> MockResponse {
    MockResponse::function_call_turn(call_id, "shell_command", json!({"command": command}))
}

/// A model turn calling `apply_patch` with `patch`.
pub fn patch(call_id: &str, patch: &str) -> MockResponse {
    MockResponse::function_call_turn(call_id, "apply_patch", json!({"input": patch}))
}

/// A model turn calling the freeform (custom) `apply_patch` tool with `patch`, as
/// Codex's own models do.
pub fn custom_patch(call_id: &str, patch: &str) -> MockResponse {
    MockResponse::sse(vec![
        responses::created("resp-custom"),
        SseEvent::new(
            "response.output_item.done",
            json!({"item": {"type": "custom_tool_call", "call_id": call_id, "name": "apply_patch", "input": patch}}),
        ),
        responses::completed("resp-custom"),
    ])
}

/// A model turn answering `text`.
pub fn say(text: &str) -> MockResponse {
    MockResponse::text_turn(text)
}
