//! A `deputy app-server` process with its mock model and home, and the waits and
//! readings the app-server tests share.

use std::time::Duration;

use deputy_test_support::{MockModelServer, MockResponse, StdioClient, TestHome};
use serde_json::{Value, json};

/// The binary under test.
pub const DEPUTY: &str = env!("CARGO_BIN_EXE_deputy");

/// Upper bound of any one wait: a passing test never comes near it.
pub const WAIT: Duration = Duration::from_secs(20);

/// How long the server gets to exit after stdin closes.
const EXIT_WAIT: Duration = Duration::from_secs(10);

/// Set this to a `RUST_LOG` filter to have the servers log more; a failed wait shows stderr.
const LOG_FILTER_VAR: &str = "DEPUTY_APP_SERVER_TEST_LOG";

/// How a test's server is configured.
pub struct Setup {
    /// `approval_policy`.
    pub policy: &'static str,
    /// `sandbox_mode`.
    pub sandbox: &'static str,
    /// More top-level config lines.
    pub top_level: &'static str,
    /// Arguments after `app-server` (Codex's launch flags).
    pub args: &'static [&'static str],
}

impl Default for Setup {
    fn default() -> Self {
        Self {
            policy: "never",
            sandbox: "danger-full-access",
            top_level: "",
            args: &[],
        }
    }
}

impl Setup {
    /// A mock model and a home configured for it, for a client that starts the server
    /// itself.
    pub fn home(&self) -> (TestHome, MockModelServer) {
        let model = MockModelServer::start();
        let home = TestHome::new(&model.base_url());
        let provider = TestHome::default_config(&model.base_url());
        let (_, provider) = provider
            .split_once("[model_providers.mock]")
            .expect("the default config has a mock provider table");
        home.write_config(&format!(
            "model = \"mock-model\"\nmodel_provider = \"mock\"\n\
             approval_policy = \"{}\"\nsandbox_mode = \"{}\"\n{}\n[model_providers.mock]{provider}",
            self.policy, self.sandbox, self.top_level
        ));
        (home, model)
    }

    /// `policy` and `sandbox`, nothing else.
    pub fn new(policy: &'static str, sandbox: &'static str) -> Self {
        Self {
            policy,
            sandbox,
            top_level: "",
            args: &[],
        }
    }

    /// Writes the config, starts the server and initializes it.
    pub fn start(self) -> AppServer {
        let server = self.spawn();
        server.initialize();
        server
    }

    /// Writes the config and starts the server, without the handshake.
    pub fn spawn(self) -> AppServer {
        let (home, model) = self.home();
        let args: Vec<&str> = std::iter::once("app-server")
            .chain(self.args.iter().copied())
            .collect();
        let client = spawn_client(&home, &args);
        AppServer {
            client,
            home,
            model,
        }
    }
}

fn spawn_client(home: &TestHome, args: &[&str]) -> StdioClient {
    let mut command = home.command(DEPUTY);
    command.args(args);
    if let Ok(filter) = std::env::var(LOG_FILTER_VAR) {
        command.env("RUST_LOG", filter);
    }
    StdioClient::spawn(command)
}

/// A running `deputy app-server` talking to a mock model.
pub struct AppServer {
    /// The server process, driven over stdio.
    pub client: StdioClient,
    /// Its `DEPUTY_HOME`; the server runs in `home.workspace()`.
    pub home: TestHome,
    /// The model it talks to.
    pub model: MockModelServer,
}

impl AppServer {
    /// A server with the default setup, initialized.
    pub fn start() -> Self {
        Setup::default().start()
    }

    /// Sends `initialize` and `initialized`; returns the `initialize` result.
    pub fn initialize(&self) -> Value {
        let id = self.client.request(
            "initialize",
            json!({"clientInfo": {"name": "deputy-tests", "version": "0"}}),
        );
        let result = self.result(id);
        self.client.notify("initialized", Value::Null);
        result
    }

    /// Stops this server process and starts a new one on the same home and model.
    pub fn restart(&mut self) {
        self.stop();
        self.client = spawn_client(&self.home, &["app-server"]);
        self.initialize();
    }

    /// Closes stdin and waits for the server to exit on its own.
    pub fn stop(&self) {
        self.client.close_stdin();
        assert!(
            self.client.wait_exit(EXIT_WAIT).is_some(),
            "the server did not exit after stdin closed\n{}",
            self.client.stderr_text()
        );
        self.assert_stdout_is_protocol();
    }

    /// Sends a request and returns its id.
    pub fn request(&self, method: &str, params: Value) -> i64 {
        self.client.request(method, params)
    }

    /// The `result` of request `id`, failing the test on an error or no answer.
    pub fn result(&self, id: i64) -> Value {
        let response = self.response(id);
        match response.get("result") {
            Some(result) => result.clone(),
            None => panic!("request {id} was answered with an error: {response}"),
        }
    }

    /// The `error` of request `id`, failing the test on a result or no answer.
    pub fn error(&self, id: i64) -> Value {
        let response = self.response(id);
        match response.get("error") {
            Some(error) => error.clone(),
            None => panic!("request {id} was expected to fail: {response}"),
        }
    }

    /// The response (result or error) to request `id`.
    pub fn response(&self, id: i64) -> Value {
        self.client
            .wait_response(id, WAIT)
            .unwrap_or_else(|err| panic!("{err}"))
    }

    /// Starts a thread with `params`; returns the `thread/start` result.
    pub fn start_thread_with(&self, params: Value) -> Value {
        let id = self.request("thread/start", params);
        self.result(id)
    }

    /// Starts a thread with the server's defaults; returns its id.
    pub fn start_thread(&self) -> String {
        id_of(&self.start_thread_with(json!({}))["thread"])
    }

    /// Starts a turn with `text` on `thread_id`; returns the turn id.
    pub fn start_turn(&self, thread_id: &str, text: &str) -> String {
        self.start_turn_with(json!({"threadId": thread_id, "input": [text_input(text)]}))
    }

    /// Starts a turn with `params`; returns the turn id.
    pub fn start_turn_with(&self, params: Value) -> String {
        let id = self.request("turn/start", params);
        let result = self.result(id);
        assert_eq!(result["turn"]["status"], "inProgress", "{result}");
        id_of(&result["turn"])
    }

    /// The params of the first notification `method` whose params match `pred`.
    pub fn notification(&self, method: &str, pred: impl Fn(&Value) -> bool) -> Value {
        self.client
            .wait_for(
                |m| m.get("id").is_none() && m["method"] == method && pred(&m["params"]),
                WAIT,
            )
            .map(|m| m["params"].clone())
            .unwrap_or_else(|err| panic!("waiting for {method}: {err}"))
    }

    /// The params of `turn/completed` for `turn_id`.
    pub fn turn_completed(&self, turn_id: &str) -> Value {
        self.notification("turn/completed", |p| p["turn"]["id"] == turn_id)
    }

    /// The first server request `method` whose params match `pred`.
    pub fn server_request(&self, method: &str, pred: impl Fn(&Value) -> bool) -> Value {
        self.client
            .wait_for(
                |m| m.get("id").is_some() && m["method"] == method && pred(&m["params"]),
                WAIT,
            )
            .unwrap_or_else(|err| panic!("waiting for the server request {method}: {err}"))
    }

    /// Every notification `method` received so far, params only.
    pub fn notifications(&self, method: &str) -> Vec<Value> {
        self.client
            .notifications(method)
            .into_iter()
            .map(|m| m["params"].clone())
            .collect()
    }

    /// Every message so far, each as a short label (see [`label`]).
    pub fn labels(&self) -> Vec<String> {
        self.client.messages().iter().map(label).collect()
    }

    /// The labels of the messages about `turn_id`, from its `turn/start` response on
    /// (`start_request` is the `turn/start` request id).
    pub fn turn_labels(&self, start_request: i64, turn_id: &str) -> Vec<String> {
        let messages = self.client.messages();
        let from = messages
            .iter()
            .position(|m| m["id"] == start_request && m.get("method").is_none())
            .expect("the turn/start response");
        messages[from..]
            .iter()
            .filter(|m| {
                let p = &m["params"];
                m.get("method").is_none()
                    || p["turnId"] == turn_id
                    || p["turn"]["id"] == turn_id
                    || m["method"] == "serverRequest/resolved"
            })
            .map(label)
            .collect()
    }

    /// Fails unless every line on stdout is a JSON-RPC message without `"jsonrpc"`.
    pub fn assert_stdout_is_protocol(&self) {
        for message in self.client.messages() {
            assert!(
                message.get("__unparsed").is_none(),
                "stdout carried a non-JSON line: {message}"
            );
            assert!(
                message.get("jsonrpc").is_none(),
                "the server wrote a \"jsonrpc\" field: {message}"
            );
        }
    }
}

impl Drop for AppServer {
    /// Lets the server shut down on its own (killing its commands) before the client kills
    /// its process group, so no command outlives a test.
    fn drop(&mut self) {
        self.client.close_stdin();
        self.client.wait_exit(EXIT_WAIT);
        if !std::thread::panicking() {
            self.assert_stdout_is_protocol();
        }
    }
}

/// `{type: "text", text}`.
pub fn text_input(text: &str) -> Value {
    json!({"type": "text", "text": text, "text_elements": []})
}

/// The `id` field of `value` as a string.
pub fn id_of(value: &Value) -> String {
    match value["id"].as_str() {
        Some(id) => id.to_string(),
        None => panic!("no id in {value}"),
    }
}

/// A short label for a message: `response:<id>`, `error:<id>`, `request:<method>`, or the
/// notification's method, with the item type for `item/*` notifications and the status
/// (and what an active thread waits on) for `thread/status/changed`.
pub fn label(message: &Value) -> String {
    let method = message["method"].as_str();
    if method == Some("thread/status/changed") {
        let status = &message["params"]["status"];
        let flags = status["activeFlags"]
            .as_array()
            .map(|flags| {
                let flags: Vec<&str> = flags.iter().filter_map(Value::as_str).collect();
                format!("[{}]", flags.join(","))
            })
            .unwrap_or_default();
        return format!(
            "thread/status/changed:{}{flags}",
            status["type"].as_str().unwrap_or("?")
        );
    }
    match (method, message.get("id")) {
        (None, Some(id)) if message.get("error").is_some() => format!("error:{id}"),
        (None, Some(id)) => format!("response:{id}"),
        (Some(method), Some(_)) => format!("request:{method}"),
        (Some(method), None) => match message["params"]["item"]["type"].as_str() {
            Some(kind) => format!("{method}:{kind}"),
            None => method.to_string(),
        },
        (None, None) => format!("unlabelled:{message}"),
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

/// A model turn answering `text`.
pub fn say(text: &str) -> MockResponse {
    MockResponse::text_turn(text)
}
