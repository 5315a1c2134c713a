//! `request_user_input` at the front doors that can ask: the app-server's
//! `item/tool/requestUserInput` request and `deputy exec`'s terminal (the MCP elicitation
//! form is tested with the Python SDK in `mcp_python.rs`). No answer is said to the model
//! and the turn goes on.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

mod common;
#[allow(
    dead_code,
    reason = "the app-server tests' harness; this file uses a part"
)]
#[path = "app_server/harness.rs"]
mod harness;

use deputy_test_support::{MockModelServer, MockResponse, TestHome};
use serde_json::{Value, json};

use common::{finish, pty};

/// The model family that is offered `request_user_input`.
const MODEL: &str = "gpt-5-codex";

/// The model's turn asking which database, with two options.
fn ask_database() -> MockResponse {
    MockResponse::function_call_turn(
        "ask",
        "request_user_input",
        json!({"questions": [{"id": "db", "header": "Database", "question": "Which one?",
            "options": [{"label": "sqlite", "description": "a file"},
                        {"label": "postgres", "description": "a server"}]}]}),
    )
}

/// What the model was told for the question, from its last request.
fn told(model: &MockModelServer) -> String {
    let requests = model.requests();
    let last = requests.last().expect("the model was asked");
    last.body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|item| item["type"] == "function_call_output" && item["call_id"] == "ask")
        .and_then(|item| item["output"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no answer to the question in {}", last.body))
}

#[test]
fn the_app_server_asks_item_tool_request_user_input_and_the_answer_reaches_the_model() {
    let server = harness::Setup::default().start();
    let thread = harness::id_of(&server.start_thread_with(json!({"model": MODEL}))["thread"]);
    server.model.push(ask_database());
    server.model.push(MockResponse::text_turn("thanks"));
    let turn = server.start_turn(&thread, "ask me");
    let request = server.server_request("item/tool/requestUserInput", |_| true);
    let params = &request["params"];
    assert_eq!(params["threadId"], json!(thread));
    assert_eq!(params["turnId"], json!(turn));
    assert_eq!(params["questions"][0]["id"], "db");
    assert_eq!(params["questions"][0]["options"][1]["label"], "postgres");
    server.client.respond(
        request["id"].clone(),
        json!({"answers": {"db": {"answers": ["postgres"]}}}),
    );
    assert_eq!(server.turn_completed(&turn)["turn"]["status"], "completed");
    let answers: Value = serde_json::from_str(&told(&server.model)).unwrap();
    assert_eq!(
        answers,
        json!({"answers": {"db": {"answers": ["postgres"]}}})
    );
}

/// A home for `model` whose default model is offered `request_user_input`.
fn home_for(model: &MockModelServer) -> TestHome {
    let home = TestHome::new(&model.base_url());
    home.write_config(
        &TestHome::default_config(&model.base_url())
            .replace("model = \"mock-model\"", &format!("model = \"{MODEL}\"")),
    );
    home
}

#[test]
fn deputy_exec_asks_on_its_terminal_and_a_number_picks_an_option() {
    if !pty::has_pty() {
        return;
    }
    let model = MockModelServer::start();
    model.push_all([ask_database(), MockResponse::text_turn("thanks")]);
    let home = home_for(&model);
    let run = finish(pty::exec_on_terminal(
        &home,
        &["ask me"],
        "number or answer",
        "2\n",
    ));
    run.assert_code(0);
    assert!(
        run.stderr.contains("Database: Which one?"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("1. sqlite"), "{}", run.stderr);
    let answers: Value = serde_json::from_str(&told(&model)).unwrap();
    assert_eq!(
        answers,
        json!({"answers": {"db": {"answers": ["postgres"]}}})
    );
}

#[test]
fn without_a_terminal_the_model_hears_there_was_no_answer_and_the_turn_goes_on() {
    let model = MockModelServer::start();
    model.push_all([ask_database(), MockResponse::text_turn("went on")]);
    let home = home_for(&model);
    let run = common::exec(&home, &["ask me"]);
    run.assert_code(0);
    assert_eq!(run.stdout.trim(), "went on");
    let said = told(&model);
    assert!(said.starts_with("The user gave no answer"), "{said}");
}
