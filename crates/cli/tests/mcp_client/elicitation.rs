//! A server's form (`elicitation/create`) relayed to deputy's own client, answered there
//! (by the official MCP Python SDK, an app-server client, or a person at `deputy exec`'s
//! terminal), and the answer carried back to the server; a server's request to sample
//! deputy's model declined.

use std::path::Path;
use std::time::Duration;

use deputy_test_support::{MockModelServer, MockResponse, python_with_mcp, run_with_deadline};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::common::{DEPUTY, exec, finish, pty};
use crate::{
    APP_SERVER_WAIT, all_requests, app_server_thread, home_with, namespaced_call_turn, output_for,
    reference_servers, toml_str,
};

/// A home whose model calls server-everything's `trigger-elicitation-request` (the form
/// of every kind of field), then answers `Done.`.
fn home_asking_for_the_form(model: &MockModelServer) -> deputy_test_support::TestHome {
    let everything = reference_servers().everything();
    let home = home_with(
        model,
        &format!(
            "[mcp_servers.everything]\ncommand = \"node\"\nargs = [{}, \"stdio\"]\n",
            toml_str(&everything.display().to_string())
        ),
    );
    model.push_all([
        namespaced_call_turn(
            "c-form",
            "mcp__everything__",
            "trigger-elicitation-request",
            json!({}),
        ),
        MockResponse::text_turn("Done."),
    ]);
    home
}

/// The elicitation result server-everything reports in its tool result (`Raw result:`).
fn raw_result(output: &str) -> Value {
    let (_, raw) = output
        .split_once("Raw result: ")
        .unwrap_or_else(|| panic!("no raw result in {output}"));
    serde_json::Deserializer::from_str(raw)
        .into_iter::<Value>()
        .next()
        .and_then(Result::ok)
        .unwrap_or_else(|| panic!("no JSON after `Raw result:` in {output}"))
}

#[test]
fn deputy_exec_fills_in_a_form_on_its_terminal_field_by_field_checking_each_answer() {
    if !pty::has_pty() {
        return;
    }
    let model = MockModelServer::start();
    let home = home_asking_for_the_form(&model);
    // The fields come in the order the server wrote them; a bad answer is asked again (the same
    // question appears once more, after the complaint).
    let run = finish(pty::exec_on_terminal_steps(
        &home,
        &["fill in the form"],
        &[
            ("[d]ecline / [c]ancel", "f\n"),
            ("[1/13]", "\n"),
            ("[1/13]", "Ada Lovelace\n"),
            ("[2/13]", "y\n"),
            ("[3/13]", "\n"),
            ("[4/13]", "ada\n"),
            ("[4/13]", "ada@example.org\n"),
            ("[5/13]", "\n"),
            ("[6/13]", "1815-13-10\n"),
            ("[6/13]", "1815-12-10\n"),
            ("[7/13]", "abc\n"),
            ("[7/13]", "150\n"),
            ("[7/13]", "7\n"),
            ("[8/13]", "2.5\n"),
            ("[9/13]", "4\n"),
            ("[10/13]", "Piano,9\n"),
            ("[10/13]", "Piano,Drums\n"),
            ("[11/13]", "wonder woman\n"),
            ("[12/13]", "1, 3\n"),
            ("[13/13]", "dogs\n"),
        ],
    ));

    run.assert_code(0);
    for said in [
        "The MCP server `everything` asks you to fill in a form:",
        "[1/13] String (name) — Your full, legal name",
        "This field is required.",
        "That is not a whole number.",
        "Out of range: a whole number, from 1 to 100.",
        "Expected an email address.",
        "Expected a date, YYYY-MM-DD.",
        "`9` is none of the options",
        "2. Dogs (pet-2)",
    ] {
        assert!(run.stderr.contains(said), "no {said:?} in\n{}", run.stderr);
    }
    let requests = all_requests(&model, 2);
    let output = output_for(&requests[1], "c-form");
    assert_eq!(
        raw_result(&output),
        json!({
            "action": "accept",
            "content": {
                "birthdate": "1815-12-10",
                "check": true,
                "email": "ada@example.org",
                "firstLine": "It was a dark and stormy night.",
                "integer": 7,
                "legacyTitledEnum": "pet-2",
                "name": "Ada Lovelace",
                "number": 2.5,
                "titledMultipleSelectEnum": ["fish-1", "fish-3"],
                "titledSingleSelectEnum": "hero-3",
                "untitledMultipleSelectEnum": ["Piano", "Drums"],
                "untitledSingleSelectEnum": "Chandler",
            },
        }),
        "{output}"
    );
    assert!(output.contains("- Name: Ada Lovelace"), "{output}");
}

/// `deputy exec` on a terminal whose user answers the form's first question with
/// `answer`: the run, and what the model was told the form tool returned.
fn exec_answering_the_form_with(answer: &str) -> (crate::common::Finished, String) {
    let model = MockModelServer::start();
    let home = home_asking_for_the_form(&model);
    let run = finish(pty::exec_on_terminal(
        &home,
        &["fill in the form"],
        "[d]ecline / [c]ancel",
        answer,
    ));
    run.assert_code(0);
    let requests = all_requests(&model, 2);
    let output = output_for(&requests[1], "c-form");
    (run, output)
}

#[test]
fn deputy_exec_declines_a_form_when_the_user_says_so() {
    if !pty::has_pty() {
        return;
    }
    let (run, output) = exec_answering_the_form_with("d\n");

    assert_eq!(
        raw_result(&output),
        json!({"action": "decline"}),
        "{output}"
    );
    assert!(
        run.stderr.contains("[f]ill it in / [d]ecline / [c]ancel"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("[1/13]"), "{}", run.stderr);
}

#[test]
fn deputy_exec_cancels_a_form_when_the_user_says_so() {
    if !pty::has_pty() {
        return;
    }
    let (_, output) = exec_answering_the_form_with("c\n");

    assert_eq!(raw_result(&output), json!({"action": "cancel"}), "{output}");
}

#[test]
fn deputy_exec_without_a_terminal_shows_the_form_and_declines_it() {
    let model = MockModelServer::start();
    let home = home_asking_for_the_form(&model);

    let run = exec(&home, &["fill in the form"]);

    run.assert_code(0);
    assert!(
        run.stderr
            .contains("(declined: deputy exec has no terminal to fill it in on)"),
        "{}",
        run.stderr
    );
    let requests = all_requests(&model, 2);
    let output = output_for(&requests[1], "c-form");
    assert_eq!(
        raw_result(&output),
        json!({"action": "decline"}),
        "{output}"
    );
}

#[test]
fn a_form_from_server_everything_is_answered_by_the_python_sdk_client() {
    let python = python_with_mcp().unwrap_or_else(|err| panic!("no Python MCP SDK: {err}"));
    let everything = reference_servers().everything();
    let model = MockModelServer::start();
    let home = home_with(
        &model,
        &format!(
            "[mcp_servers.everything]\ncommand = \"node\"\nargs = [{}, \"stdio\"]\n",
            toml_str(&everything.display().to_string())
        ),
    );
    model.push_all([
        namespaced_call_turn(
            "c-form",
            "mcp__everything__",
            "trigger-elicitation-request",
            json!({}),
        ),
        MockResponse::text_turn("Thanks, Ada."),
    ]);
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/mcp_elicitation_client.py");
    let mut command = home.command(&python);
    command.arg(&script).arg(DEPUTY).env("HOME", home.path());

    let output =
        run_with_deadline(command, Duration::from_secs(90)).unwrap_or_else(|e| panic!("{e}"));

    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "python exited with {}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}",
        output.status
    );
    let seen: Value = serde_json::from_str(stdout.trim())
        .unwrap_or_else(|err| panic!("script output is not JSON ({err}): {stdout}"));
    let asked = seen["asked"].as_array().expect("asked");
    assert_eq!(asked.len(), 1, "{seen}");
    let message = asked[0]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("everything") && message.contains("Please provide inputs"),
        "{message}"
    );
    let fields = &asked[0]["fields"];
    assert!(
        fields
            .as_array()
            .is_some_and(|f| f.contains(&json!("name"))),
        "{fields}"
    );
    assert_eq!(
        seen["structuredContent"]["content"], "Thanks, Ada.",
        "{seen}"
    );
    let requests = all_requests(&model, 2);
    let answered = output_for(&requests[1], "c-form");
    assert!(answered.contains("- Name: Ada Lovelace"), "{answered}");
}

#[test]
fn a_form_from_server_everything_reaches_an_app_server_client_and_its_answer_goes_back() {
    let everything = reference_servers().everything();
    let model = MockModelServer::start();
    let home = home_with(
        &model,
        &format!(
            "[mcp_servers.everything]\ncommand = \"node\"\nargs = [{}, \"stdio\"]\n",
            toml_str(&everything.display().to_string())
        ),
    );
    model.push_all([
        namespaced_call_turn(
            "c-form",
            "mcp__everything__",
            "trigger-elicitation-request",
            json!({}),
        ),
        MockResponse::text_turn("Thanks, Grace."),
    ]);
    let (client, thread_id) = app_server_thread(&home);
    let wait = APP_SERVER_WAIT;
    let id = client.request(
        "turn/start",
        json!({"threadId": thread_id, "input": [{"type": "text", "text": "ask for my name"}]}),
    );
    client
        .wait_response(id, wait)
        .unwrap_or_else(|e| panic!("{e}"));

    let question = client
        .wait_for(
            |m| m.get("id").is_some() && m["method"] == "mcpServer/elicitation/request",
            wait,
        )
        .unwrap_or_else(|e| panic!("{e}"));
    let params = &question["params"];
    assert_eq!(params["serverName"], "everything", "{params}");
    assert_eq!(
        params["message"],
        "Please provide inputs for the following fields:"
    );
    assert_eq!(
        params["requestedSchema"]["properties"]["name"]["type"],
        "string"
    );
    // Codex 0.125's schema carries the required fields, as the server named them.
    assert_eq!(params["requestedSchema"]["required"], json!(["name"]));
    client.respond(
        question["id"].clone(),
        json!({"action": "accept", "content": {"name": "Grace Hopper"}}),
    );
    client
        .wait_for(|m| m["method"] == "turn/completed", wait)
        .unwrap_or_else(|e| panic!("{e}"));

    let requests = all_requests(&model, 2);
    let answered = output_for(&requests[1], "c-form");
    assert!(answered.contains("- Name: Grace Hopper"), "{answered}");
}

#[test]
fn a_server_asking_to_sample_deputys_model_is_declined_and_the_model_hears_why() {
    let python = python_with_mcp().unwrap_or_else(|err| panic!("no Python MCP SDK: {err}"));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client/sampling_server.py");
    let model = MockModelServer::start();
    let home = home_with(
        &model,
        &format!(
            "[mcp_servers.sampler]\ncommand = {}\nargs = [{}]\n",
            toml_str(&python.display().to_string()),
            toml_str(&script.display().to_string())
        ),
    );
    model.push_all([
        namespaced_call_turn(
            "c-sample",
            "mcp__sampler__",
            "summarize",
            json!({"text": "a long story"}),
        ),
        MockResponse::text_turn("No summary, then."),
    ]);

    let run = exec(&home, &["--json", "summarize it with the server"]);

    run.assert_code(0);
    let requests = all_requests(&model, 2);
    let output = output_for(&requests[1], "c-sample");
    assert!(
        output.contains("sampling failed")
            && output.contains("deputy does not offer sampling: its model is not available"),
        "{output}"
    );
}
