//! One `deputy mcp-server` driven over stdio against a scripted model, with the waits and
//! look-ups the approval tests share.

use std::path::PathBuf;
use std::time::Duration;

use deputy_test_support::{McpSession, MockModelServer, MockResponse, StdioClient, TestHome};
use serde_json::{Value, json};

use crate::common::DEPUTY;

/// How long a test waits for something the server should do on its own.
pub const WAIT: Duration = Duration::from_secs(30);

/// The capabilities of a client that can answer approval questions.
pub fn with_elicitation() -> Value {
    json!({"elicitation": {}})
}

/// How a test's server is configured.
pub struct Setup {
    /// `approval_policy`.
    pub policy: &'static str,
    /// `sandbox_mode`.
    pub sandbox: &'static str,
    /// More top-level config lines (e.g. `approval_timeout_sec = 1`).
    pub top_level: &'static str,
    /// Whether `/tmp` and `$TMPDIR` stay out of the writable roots, so that the home (a
    /// temporary directory) is outside them and only the workspace is writable.
    pub workspace_only: bool,
    /// What the client announces in `initialize`.
    pub capabilities: Value,
}

impl Setup {
    /// `policy` and `sandbox`, an eliciting client, nothing else.
    pub fn new(policy: &'static str, sandbox: &'static str) -> Self {
        Self {
            policy,
            sandbox,
            top_level: "",
            workspace_only: false,
            capabilities: with_elicitation(),
        }
    }

    /// Writes the config and starts the server.
    pub fn start(self) -> Harness {
        let model = MockModelServer::start();
        let home = TestHome::new(&model.base_url());
        let provider = TestHome::default_config(&model.base_url());
        let (_, provider) = provider
            .split_once("[model_providers.mock]")
            .expect("the default config has a mock provider table");
        let mut config = format!(
            "model = \"mock-model\"\nmodel_provider = \"mock\"\n\
             approval_policy = \"{}\"\nsandbox_mode = \"{}\"\n{}\n[model_providers.mock]{provider}",
            self.policy, self.sandbox, self.top_level
        );
        if self.workspace_only {
            config.push_str(
                "[sandbox_workspace_write]\nexclude_slash_tmp = true\nexclude_tmpdir_env_var = true\n",
            );
        }
        home.write_config(&config);
        let mut command = home.command(DEPUTY);
        command.arg("mcp-server");
        let client = StdioClient::spawn(command);
        McpSession::initialize(&client, self.capabilities);
        Harness {
            model,
            home,
            client,
        }
    }
}

/// A running server, its model and its home.
pub struct Harness {
    /// The scripted model.
    pub model: MockModelServer,
    /// `DEPUTY_HOME`, with the workspace the server runs in.
    pub home: TestHome,
    /// The MCP client.
    pub client: StdioClient,
}

impl Harness {
    /// The workspace, canonical, as the server reports paths.
    pub fn workspace(&self) -> PathBuf {
        self.home.workspace().canonicalize().expect("workspace")
    }

    /// Writes `text` to `name` in the workspace.
    pub fn write(&self, name: &str, text: &str) {
        std::fs::write(self.home.workspace().join(name), text).expect("write workspace file");
    }

    /// Whether `name` (relative to the workspace) exists.
    pub fn exists(&self, name: &str) -> bool {
        self.home.workspace().join(name).exists()
    }

    /// Calls the `codex` tool with `prompt`; returns the request id.
    pub fn codex(&self, prompt: &str) -> i64 {
        self.client.request(
            "tools/call",
            json!({"name": "codex", "arguments": {"prompt": prompt}}),
        )
    }

    /// Calls `codex-reply` on `thread_id`; returns the request id.
    pub fn codex_reply(&self, thread_id: &str, prompt: &str) -> i64 {
        self.client.request(
            "tools/call",
            json!({"name": "codex-reply", "arguments": {"prompt": prompt, "threadId": thread_id}}),
        )
    }

    /// The `result` of request `id`.
    pub fn result(&self, id: i64) -> Value {
        let response = self
            .client
            .wait_response(id, WAIT)
            .unwrap_or_else(|e| panic!("{e}"));
        response
            .get("result")
            .cloned()
            .unwrap_or_else(|| panic!("request {id} failed: {response}"))
    }

    /// The thread id of the session request `id` started, from its `codex/event`s.
    pub fn thread_of(&self, id: i64) -> String {
        let event = self.event(id, "session_configured");
        event["session_id"]
            .as_str()
            .expect("session_id")
            .to_string()
    }

    /// The `msg` of the first `codex/event` of type `kind` for request `id`.
    pub fn event(&self, id: i64, kind: &str) -> Value {
        self.client
            .wait_for(|m| is_event_of(m, id, kind), WAIT)
            .unwrap_or_else(|e| panic!("waiting for {kind} of request {id}: {e}"))["params"]["msg"]
            .clone()
    }

    /// The full `codex/event` params of the first event of type `kind` for request `id`.
    pub fn event_params(&self, id: i64, kind: &str) -> Value {
        self.client
            .wait_for(|m| is_event_of(m, id, kind), WAIT)
            .unwrap_or_else(|e| panic!("waiting for {kind} of request {id}: {e}"))["params"]
            .clone()
    }

    /// Every `codex/event` `msg` of type `kind` received so far, for any request.
    pub fn events(&self, kind: &str) -> Vec<Value> {
        self.client
            .notifications("codex/event")
            .into_iter()
            .map(|n| n["params"]["msg"].clone())
            .filter(|msg| msg["type"] == kind)
            .collect()
    }

    /// The `elicitation/create` request about the model's call `call_id`.
    pub fn elicitation(&self, call_id: &str) -> Value {
        self.client
            .wait_for(|m| elicitation_call_id(m) == Some(call_id), WAIT)
            .unwrap_or_else(|e| panic!("waiting for the approval of {call_id}: {e}"))
    }

    /// Every `elicitation/create` request received so far.
    pub fn elicitations(&self) -> Vec<Value> {
        self.client
            .messages()
            .into_iter()
            .filter(|m| m["method"] == "elicitation/create")
            .collect()
    }

    /// Waits for the question about `call_id` and answers it with `reply`.
    pub fn answer(&self, call_id: &str, reply: Value) -> Value {
        let request = self.elicitation(call_id);
        self.client.respond(request["id"].clone(), reply);
        request
    }

    /// The output the model was given for `call_id`.
    pub fn output_for(&self, call_id: &str) -> String {
        model_output(&self.model, call_id)
    }
}

/// The output `model` was given for `call_id`, from the requests it received.
pub fn model_output(model: &MockModelServer, call_id: &str) -> String {
    let requests = model.requests();
    for request in requests.iter().rev() {
        let items = request.body["input"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let found = items
            .iter()
            .find(|item| item["type"] == "function_call_output" && item["call_id"] == call_id);
        if let Some(item) = found {
            return item["output"].as_str().unwrap_or_default().to_string();
        }
    }
    let inputs: Vec<&Value> = requests.iter().map(|r| &r.body["input"]).collect();
    panic!("the model never received an output for {call_id}; its inputs: {inputs:?}")
}

/// The params of an `elicitation/create` request without `_meta`, whose only content is a
/// progress token that the MCP library numbers for every request it sends.
pub fn question_params(request: &Value) -> Value {
    let mut params = request["params"].clone();
    if let Some(object) = params.as_object_mut() {
        object.remove("_meta");
    }
    params
}

/// Whether `message` is a `codex/event` of type `kind` for request `id`.
pub fn is_event_of(message: &Value, id: i64, kind: &str) -> bool {
    message["method"] == "codex/event"
        && message["params"]["_meta"]["requestId"] == id
        && message["params"]["msg"]["type"] == kind
}

/// The model call id an `elicitation/create` request is about.
pub fn elicitation_call_id(message: &Value) -> Option<&str> {
    (message["method"] == "elicitation/create")
        .then(|| message["params"]["codex_call_id"].as_str())
        .flatten()
}

/// A model turn calling `shell` with `argv`.
pub fn shell(call_id: &str, argv: &[&str]) -> MockResponse {
    MockResponse::function_call_turn(call_id, "shell", json!({"command": argv}))
}

/// A model turn calling `shell` with `argv`, asking to leave the sandbox because `why`.
pub fn escalated(call_id: &str, argv: &[&str], why: &str) -> MockResponse {
    MockResponse::function_call_turn(
        call_id,
        "shell",
        json!({"command": argv, "sandbox_permissions": "require_escalated", "justification": why}),
    )
}

/// A model turn calling `apply_patch` with `patch`.
pub fn patch(call_id: &str, patch: &str) -> MockResponse {
    MockResponse::function_call_turn(call_id, "apply_patch", json!({"input": patch}))
}

/// A model turn answering `text` without calling a tool.
pub fn say(text: &str) -> MockResponse {
    MockResponse::text_turn(text)
}

/// Returns early (printing why) where the kernel cannot confine commands.
macro_rules! require_sandbox {
    () => {
        if let Err(reason) = deputy_sandbox::probe() {
            deputy_test_support::skip_without_sandbox(reason);
            return;
        }
    };
}
pub(crate) use require_sandbox;
