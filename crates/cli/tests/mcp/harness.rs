//! A `deputy mcp-server` process with its mock model and home, and the waits and
//! readings the MCP tests share.

use std::path::Path;
use std::time::Duration;

use deputy_test_support::{
    McpSession, MockModelServer, MockResponse, RecordedRequest, StdioClient, TestHome,
};
use serde_json::{Value, json};

/// The binary under test.
pub const DEPUTY: &str = env!("CARGO_BIN_EXE_deputy");

/// Upper bound of any one wait. Passing tests never come near it; it only turns a hang
/// into a failure with diagnostics.
pub const WAIT: Duration = Duration::from_secs(15);

/// Set this to a `RUST_LOG` filter to have the servers log more; a failed wait shows
/// their stderr.
const LOG_FILTER_VAR: &str = "DEPUTY_MCP_TEST_LOG";

/// How long the server gets to exit after stdin closes.
pub const EXIT_WAIT: Duration = Duration::from_secs(5);

/// A shell script that records its pid in `sleep.pid`, then becomes `sleep 30`
/// (same pid), so tests can tell whether the command is still running.
pub const SLEEP_30: &str = "echo $$ > sleep.pid; exec sleep 30";

/// A running `deputy mcp-server` talking to a mock model.
pub struct Mcp {
    /// The server process, driven over stdio.
    pub client: StdioClient,
    /// Its `DEPUTY_HOME`; the server runs in `home.workspace()`.
    pub home: TestHome,
    /// The model it talks to.
    pub model: MockModelServer,
}

impl Mcp {
    /// Spawns the server without the MCP handshake.
    pub fn spawn() -> Self {
        Self::spawn_with_args(&["mcp-server"])
    }

    /// Spawns `deputy ARGS` (a form of `deputy mcp-server`) without the MCP handshake.
    pub fn spawn_with_args(args: &[&str]) -> Self {
        Self::spawn_with(args, |_| {})
    }

    /// [`Mcp::spawn_with_args`], with `adjust` applied to the command before it starts.
    pub fn spawn_with(args: &[&str], adjust: impl FnOnce(&mut std::process::Command)) -> Self {
        let model = MockModelServer::start();
        let home = TestHome::new(&model.base_url());
        let mut command = home.command(DEPUTY);
        // `shell_command` runs `bash -lc`: with the developer's HOME, every command would
        // run their login profile (slow, and a killed one can leave locks behind).
        command.args(args).env("HOME", home.path());
        if let Ok(filter) = std::env::var(LOG_FILTER_VAR) {
            command.env("RUST_LOG", filter);
        }
        adjust(&mut command);
        let client = StdioClient::spawn(command);
        Self {
            client,
            home,
            model,
        }
    }

    /// Spawns the server and initializes it as a client declaring no capabilities.
    pub fn start() -> Self {
        let mcp = Self::spawn();
        McpSession::initialize(&mcp.client, json!({}));
        mcp
    }

    /// Sends `tools/call` for `tool` and returns the request id.
    pub fn call(&self, tool: &str, arguments: Value) -> i64 {
        self.client
            .request("tools/call", json!({"name": tool, "arguments": arguments}))
    }

    /// Sends `tools/call` with `_meta.progressToken` set.
    pub fn call_with_progress(&self, tool: &str, arguments: Value, token: Value) -> i64 {
        self.client.request(
            "tools/call",
            json!({"name": tool, "arguments": arguments, "_meta": {"progressToken": token}}),
        )
    }

    /// The `result` of request `id`, failing the test on an error or no answer.
    pub fn result(&self, id: i64) -> Value {
        let response = self
            .client
            .wait_response(id, WAIT)
            .unwrap_or_else(|err| panic!("{err}"));
        match response.get("result") {
            Some(result) => result.clone(),
            None => panic!("request {id} was answered with an error: {response}"),
        }
    }

    /// The params of every `codex/event` sent for request `id` so far, in order.
    pub fn events(&self, id: i64) -> Vec<Value> {
        self.client
            .notifications("codex/event")
            .into_iter()
            .map(|message| message["params"].clone())
            .filter(|params| params["_meta"]["requestId"] == json!(id))
            .collect()
    }

    /// The `msg.type` of every `codex/event` sent for request `id` so far.
    pub fn event_types(&self, id: i64) -> Vec<String> {
        self.events(id)
            .iter()
            .map(|params| {
                params["msg"]["type"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect()
    }

    /// Waits for the `codex/event` of request `id` whose `msg.type` is `kind`.
    pub fn wait_event(&self, id: i64, kind: &str) -> Value {
        self.client
            .wait_for(
                |message| {
                    message["method"] == "codex/event"
                        && message["params"]["_meta"]["requestId"] == json!(id)
                        && message["params"]["msg"]["type"] == kind
                },
                WAIT,
            )
            .map(|message| message["params"].clone())
            .unwrap_or_else(|err| panic!("waiting for `{kind}` of request {id}: {err}"))
    }

    /// Position of the first message matching `pred` in everything the server printed.
    pub fn position(&self, pred: impl Fn(&Value) -> bool) -> Option<usize> {
        self.client.messages().iter().position(pred)
    }

    /// Fails unless every line the server printed on stdout is a JSON-RPC 2.0 message.
    pub fn assert_stdout_is_protocol(&self) {
        for message in self.client.messages() {
            assert!(
                message.get("__unparsed").is_none() && message["jsonrpc"] == "2.0",
                "stdout carried a non-protocol line: {message}"
            );
        }
    }
}

impl Drop for Mcp {
    /// Lets the server shut down on its own (killing its commands) before the client
    /// kills its process group, so no `sleep 30` outlives a test.
    fn drop(&mut self) {
        self.client.close_stdin();
        self.client.wait_exit(EXIT_WAIT);
        if !std::thread::panicking() {
            self.assert_stdout_is_protocol();
        }
    }
}

/// The text of a tool result's first content block.
pub fn text_of(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// The thread id of a tool result.
pub fn thread_of(result: &Value) -> String {
    match result["structuredContent"]["threadId"].as_str() {
        Some(id) => id.to_string(),
        None => panic!("the result carries no threadId: {result}"),
    }
}

/// A model turn calling `shell_command` with `command`.
pub fn shell(call_id: &str, command: &str) -> MockResponse {
    MockResponse::function_call_turn(call_id, "shell_command", json!({"command": command}))
}

/// The `(role, text)` of every message in a Responses request's `input`.
pub fn messages(request: &RecordedRequest) -> Vec<(String, String)> {
    items(request, "message")
        .iter()
        .map(|item| {
            let text: String = item["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|part| part["text"].as_str())
                .collect();
            (item["role"].as_str().unwrap_or_default().to_string(), text)
        })
        .collect()
}

/// The `(call_id, output)` of every `function_call_output` in a request's `input`.
pub fn function_outputs(request: &RecordedRequest) -> Vec<(String, String)> {
    items(request, "function_call_output")
        .iter()
        .map(|item| {
            (
                item["call_id"].as_str().unwrap_or_default().to_string(),
                item["output"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

fn items(request: &RecordedRequest, kind: &str) -> Vec<Value> {
    request.body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|item| item["type"] == kind)
        .cloned()
        .collect()
}

/// The pid a command wrote to `path`, waiting up to [`WAIT`] for it.
pub fn wait_for_pid(path: &Path) -> i32 {
    deputy_test_support::processes::wait_for_pid(path, WAIT)
}
