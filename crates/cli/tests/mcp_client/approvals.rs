//! Which MCP tool calls ask first (policy × `readOnlyHint`), asked through the MCP front
//! door and the app-server, and what a refusal leaves: nothing done, the model told.
//!
//! `server-filesystem` serves the workspace: `read_text_file` says `readOnlyHint: true`,
//! `write_file` says it changes things, and whether the file exists shows whether the
//! call was made.

use std::fs;
use std::time::Duration;

use deputy_test_support::{McpSession, MockModelServer, MockResponse, StdioClient, TestHome};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::DEPUTY;
use crate::{app_server_thread, namespaced_call_turn, reference_servers, toml_str};

/// How long a test waits for what deputy should do on its own.
const WAIT: Duration = Duration::from_secs(30);

/// A home whose policy is `policy`, with `server-filesystem` serving the workspace as `files`.
fn home(model: &MockModelServer, policy: &str) -> TestHome {
    let home = TestHome::new(&model.base_url());
    let config = TestHome::default_config(&model.base_url()).replace(
        "approval_policy = \"never\"",
        &format!("approval_policy = \"{policy}\""),
    );
    let workspace = home
        .workspace()
        .canonicalize()
        .expect("canonical workspace");
    home.write_config(&format!(
        "{config}[mcp_servers.files]\ncommand = \"node\"\nargs = [{}, {}]\n",
        toml_str(&reference_servers().filesystem().display().to_string()),
        toml_str(&workspace.display().to_string())
    ));
    fs::write(workspace.join("notes.txt"), "the answer is 42\n").expect("write notes");
    home
}

/// The model reads `notes.txt` (`c-read`), writes `written.txt` (`c-write`), then answers.
fn script_read_then_write(model: &MockModelServer, home: &TestHome) {
    let workspace = home
        .workspace()
        .canonicalize()
        .expect("canonical workspace");
    model.push_all([
        namespaced_call_turn(
            "c-read",
            "mcp__files__",
            "read_text_file",
            json!({"path": workspace.join("notes.txt").display().to_string()}),
        ),
        namespaced_call_turn(
            "c-write",
            "mcp__files__",
            "write_file",
            json!({"path": workspace.join("written.txt").display().to_string(),
                "content": "written\n"}),
        ),
        MockResponse::text_turn("Done."),
    ]);
}

/// The output the model was given for `call_id`, from the last request holding it.
fn model_output(model: &MockModelServer, call_id: &str) -> String {
    model
        .requests()
        .iter()
        .rev()
        .flat_map(|request| {
            request.body["input"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .find(|item| item["type"] == "function_call_output" && item["call_id"] == call_id)
        .map(|item| item["output"].as_str().unwrap_or_default().to_string())
        .unwrap_or_else(|| panic!("the model was given no output for {call_id}"))
}

/// `deputy mcp-server` under `policy`: answers each question with `answers` (by call id,
/// in the order they come), checks every other call ran unasked.
fn through_mcp_front_door(
    policy: &str,
    answers: &[(&str, &str)],
) -> (TestHome, MockModelServer, Vec<Value>) {
    let model = MockModelServer::start();
    let home = home(&model, policy);
    script_read_then_write(&model, &home);
    let mut command = home.command(DEPUTY);
    command.arg("mcp-server");
    let client = StdioClient::spawn(command);
    McpSession::initialize(&client, json!({"elicitation": {}}));

    let id = client.request(
        "tools/call",
        json!({"name": "codex", "arguments": {"prompt": "read, then write"}}),
    );
    for (call_id, decision) in answers {
        let question = client
            .wait_for(
                |m| m["method"] == "elicitation/create" && m["params"]["codex_call_id"] == *call_id,
                WAIT,
            )
            .unwrap_or_else(|e| panic!("no question about {call_id} under {policy}: {e}"));
        let params = &question["params"];
        assert_eq!(
            params["codex_elicitation"], "mcp-tool-call-approval",
            "{params}"
        );
        assert_eq!(params["codex_mcp_server"], "files", "{params}");
        let message = params["message"].as_str().unwrap_or_default();
        assert!(message.contains("`files`"), "{message}");
        client.respond(question["id"].clone(), json!({"decision": decision}));
    }
    let response = client
        .wait_response(id, WAIT)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        response["result"]["structuredContent"]["content"], "Done.",
        "{response}"
    );
    let asked: Vec<Value> = client
        .messages()
        .into_iter()
        .filter(|m| m["method"] == "elicitation/create")
        .map(|m| m["params"]["codex_call_id"].clone())
        .collect();
    let expected: Vec<&str> = answers.iter().map(|(call_id, _)| *call_id).collect();
    assert_eq!(asked, expected, "questions under {policy}");
    assert!(
        model_output(&model, "c-read").contains("the answer is 42"),
        "{}",
        model_output(&model, "c-read")
    );
    let events = client
        .notifications("codex/event")
        .into_iter()
        .map(|n| n["params"]["msg"].clone())
        .collect();
    (home, model, events)
}

fn written(home: &TestHome) -> Option<String> {
    fs::read_to_string(home.workspace().join("written.txt")).ok()
}

#[test]
fn untrusted_asks_for_every_mcp_call_even_read_only_ones() {
    let (home, _, _) = through_mcp_front_door(
        "untrusted",
        &[("c-read", "approved"), ("c-write", "approved")],
    );
    assert_eq!(written(&home).as_deref(), Some("written\n"));
}

#[test]
fn on_request_asks_only_for_tools_not_marked_read_only() {
    let (home, _, _) = through_mcp_front_door("on-request", &[("c-write", "approved")]);
    assert_eq!(written(&home).as_deref(), Some("written\n"));
}

#[test]
fn on_failure_asks_only_for_tools_not_marked_read_only() {
    let (home, _, _) = through_mcp_front_door("on-failure", &[("c-write", "approved")]);
    assert_eq!(written(&home).as_deref(), Some("written\n"));
}

#[test]
fn never_asks_for_no_mcp_call() {
    let (home, _, _) = through_mcp_front_door("never", &[]);
    assert_eq!(written(&home).as_deref(), Some("written\n"));
}

/// The calls and the server's start reach the MCP client as Codex's `codex/event`s.
#[test]
fn mcp_tool_calls_and_server_startup_are_codex_events() {
    let (_, _, events) = through_mcp_front_door("never", &[]);
    let of_type =
        |kind: &str| -> Vec<&Value> { events.iter().filter(|e| e["type"] == kind).collect() };
    let begins = of_type("mcp_tool_call_begin");
    let ends = of_type("mcp_tool_call_end");
    assert_eq!(begins.len(), 2, "{events:?}");
    assert_eq!(ends.len(), 2, "{events:?}");
    assert_eq!(begins[1]["call_id"], "c-write");
    assert_eq!(begins[1]["invocation"]["server"], "files");
    assert_eq!(begins[1]["invocation"]["tool"], "write_file");
    assert_eq!(begins[1]["invocation"]["arguments"]["content"], "written\n");
    assert_eq!(ends[0]["call_id"], "c-read");
    let result = ends[0]["result"].to_string();
    assert!(result.contains("the answer is 42"), "{result}");
    assert!(
        ends[0]["duration"].is_object() || ends[0]["duration"].is_string(),
        "{}",
        ends[0]
    );
    let complete = of_type("mcp_startup_complete");
    assert_eq!(complete.len(), 1, "{events:?}");
    assert_eq!(complete[0]["ready"], json!(["files"]));
    assert!(
        of_type("mcp_startup_update")
            .iter()
            .any(|e| e["server"] == "files"),
        "{events:?}"
    );
}

#[test]
fn a_declined_mcp_call_is_not_made_and_the_model_is_told() {
    let (home, model, _) = through_mcp_front_door("on-request", &[("c-write", "denied")]);
    assert_eq!(written(&home), None, "the declined write happened");
    let told = model_output(&model, "c-write");
    assert!(told.contains("declined"), "{told}");
}

/// `deputy app-server` under `policy`: the question for `c-write` is an
/// `mcpServer/elicitation/request` answered with `action`.
fn through_app_server(policy: &str, action: &str) -> (TestHome, MockModelServer, StdioClient) {
    let model = MockModelServer::start();
    let home = home(&model, policy);
    script_read_then_write(&model, &home);
    let (client, thread_id) = app_server_thread(&home);
    let id = client.request(
        "turn/start",
        json!({"threadId": thread_id, "input": [{"type": "text", "text": "read, then write"}]}),
    );
    client
        .wait_response(id, WAIT)
        .unwrap_or_else(|e| panic!("{e}"));
    let question = client
        .wait_for(
            |m| m.get("id").is_some() && m["method"] == "mcpServer/elicitation/request",
            WAIT,
        )
        .unwrap_or_else(|e| panic!("no question under {policy}: {e}"));
    let params = &question["params"];
    assert_eq!(params["serverName"], "files", "{params}");
    assert_eq!(params["_meta"]["tool"], "write_file", "{params}");
    assert!(
        params["message"]
            .as_str()
            .unwrap_or_default()
            .contains("write_file"),
        "{params}"
    );
    client.respond(question["id"].clone(), json!({"action": action}));
    client
        .wait_for(|m| m["method"] == "turn/completed", WAIT)
        .unwrap_or_else(|e| panic!("{e}"));
    let questions = client
        .messages()
        .into_iter()
        .filter(|m| m.get("id").is_some() && m["method"] == "mcpServer/elicitation/request")
        .count();
    assert_eq!(questions, 1, "only the write is asked for under {policy}");
    (home, model, client)
}

#[test]
fn app_server_asks_for_a_write_under_on_request_and_runs_it_when_accepted() {
    let (home, model, client) = through_app_server("on-request", "accept");
    assert_eq!(written(&home).as_deref(), Some("written\n"));
    assert!(model_output(&model, "c-read").contains("the answer is 42"));
    let item = client
        .wait_for(
            |m| {
                m["method"] == "item/completed"
                    && m["params"]["item"]["type"] == "mcpToolCall"
                    && m["params"]["item"]["tool"] == "write_file"
            },
            WAIT,
        )
        .unwrap_or_else(|e| panic!("{e}"))["params"]["item"]
        .clone();
    assert_eq!(item["server"], "files", "{item}");
    assert_eq!(item["status"], "completed", "{item}");
}

#[test]
fn app_server_decline_leaves_the_file_alone_and_tells_the_model() {
    let (home, model, _client) = through_app_server("on-failure", "decline");
    assert_eq!(written(&home), None, "the declined write happened");
    assert!(model_output(&model, "c-write").contains("declined"));
}
