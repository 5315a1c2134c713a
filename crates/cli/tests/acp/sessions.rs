//! Sessions: loading a thread another front door started, modes, the model option, the
//! slash commands and what the agent says about the client's MCP servers.

use deputy_test_support::{MockModelServer, TestHome};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::harness::{Agent, DEPUTY, agent_text, ok_step, run_plan, say, shell, updates_of};

/// Runs `deputy exec --json PROMPT` in `home` and returns the thread id it started.
fn exec_thread(home: &TestHome, prompt: &str) -> String {
    let output = home
        .command(DEPUTY)
        .args(["exec", "--json", prompt])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let started: Value = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|event| event["type"] == "thread.started")
        .unwrap_or_else(|| panic!("no thread.started in {stdout}"));
    started["thread_id"].as_str().unwrap().to_string()
}

#[test]
fn loading_a_thread_started_by_exec_replays_its_history_then_continues_it() {
    let model = MockModelServer::start();
    model.push_all([
        shell("call-1", "echo from exec"),
        say("The command printed from exec."),
        say("Continued."),
    ]);
    let home = TestHome::new(&model.base_url());
    let id = exec_thread(&home, "run the echo");

    let seen = run_plan(
        &home,
        Agent::Deputy,
        json!([]),
        json!([
            {"op": "initialize"},
            {"op": "load", "sessionId": id},
            {"op": "prompt", "text": "and now?"},
        ]),
    );

    let load = ok_step(&seen, 1);
    let replayed: Vec<Value> = load["updates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            assert_eq!(n["sessionId"], id.as_str());
            let u = &n["update"];
            match u["sessionUpdate"].as_str().unwrap() {
                "user_message_chunk" | "agent_message_chunk" => {
                    json!([u["sessionUpdate"], u["content"]["text"]])
                }
                "tool_call" => json!([u["sessionUpdate"], u["title"], u["kind"]]),
                "tool_call_update" => {
                    json!([
                        u["sessionUpdate"],
                        u["status"],
                        u["content"][0]["content"]["text"]
                    ])
                }
                other => json!([other]),
            }
        })
        .collect();
    assert_eq!(
        replayed,
        [
            json!(["user_message_chunk", "run the echo"]),
            json!(["tool_call", "echo from exec", "execute"]),
            json!(["tool_call_update", "in_progress", null]),
            json!(["tool_call_update", "completed", "from exec\n"]),
            json!(["agent_message_chunk", "The command printed from exec."]),
        ]
    );
    // The load's answer came after the replay, and the commands after the answer.
    assert_eq!(load["result"]["modes"]["currentModeId"], "full-access");
    let next = ok_step(&seen, 2);
    assert_eq!(
        next["updates"][0]["update"]["sessionUpdate"],
        "available_commands_update"
    );
    assert_eq!(next["result"]["stopReason"], "end_turn");
    assert_eq!(agent_text(next), "Continued.");
    // The model got the exec turn's history with the new prompt.
    let requests = model.requests();
    let input = requests[2].body["input"].to_string();
    assert!(
        input.contains("run the echo") && input.contains("from exec"),
        "{input}"
    );
    assert!(input.contains("and now?"), "{input}");
}

#[test]
fn loading_an_unknown_session_is_an_error_and_the_agent_keeps_serving() {
    let model = MockModelServer::start();
    let home = TestHome::new(&model.base_url());
    let seen = run_plan(
        &home,
        Agent::Deputy,
        json!([]),
        json!([
            {"op": "initialize"},
            {"op": "load", "sessionId": "01a2157a-0000-7000-8000-000000000000"},
            {"op": "new"},
        ]),
    );
    assert_eq!(seen["steps"][1]["error"]["code"], -32002, "{seen:#}");
    ok_step(&seen, 2);
}

#[test]
fn a_new_session_announces_modes_the_model_option_and_commands() {
    let model = MockModelServer::start();
    let home = TestHome::new(&model.base_url());
    let seen = run_plan(
        &home,
        Agent::Deputy,
        json!([]),
        json!([
            {"op": "initialize"},
            {"op": "new", "mcpServers": [{"type": "sse", "name": "files", "url": "http://127.0.0.1:9/sse", "headers": []}]},
            {"op": "setMode", "modeId": "read-only"},
            {"op": "request", "method": "session/set_mode", "params": {"sessionId": "$session", "modeId": "yolo"}},
        ]),
    );

    let init = ok_step(&seen, 0);
    assert_eq!(init["result"]["protocolVersion"], 1);
    assert_eq!(
        init["result"]["agentCapabilities"],
        json!({
            "loadSession": true,
            "promptCapabilities": {"image": true, "audio": false, "embeddedContext": true},
            "mcpCapabilities": {"http": true, "sse": false},
            "sessionCapabilities": {},
            "auth": {},
        })
    );
    assert_eq!(init["result"]["authMethods"], json!([]));
    let new = ok_step(&seen, 1);
    let modes = &new["result"]["modes"];
    assert_eq!(modes["currentModeId"], "full-access");
    let ids: Vec<&str> = modes["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["read-only", "ask", "auto", "full-access"]);
    assert_eq!(
        new["result"]["configOptions"],
        json!([{"id": "model", "name": "Model", "category": "model", "type": "select",
                "currentValue": "mock-model", "options": [{"value": "mock-model", "name": "mock-model"}]}])
    );
    // After the answer: the commands, and a warning that the SSE server is not used.
    let set_mode = ok_step(&seen, 2);
    let commands = updates_of(set_mode, "available_commands_update");
    let names: Vec<&str> = commands[0]["availableCommands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["review", "compact", "init"]);
    let notice = updates_of(set_mode, "notice");
    assert_eq!(notice[0]["severity"], "warning");
    let description = notice[0]["description"].as_str().unwrap();
    assert!(
        description.starts_with("files: the SSE transport"),
        "{description}"
    );
    // Sent right after the answer, so read during the next step; an unknown mode is refused.
    let unknown = &seen["steps"][3];
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    let mode_update = updates_of(unknown, "current_mode_update");
    assert_eq!(mode_update[0]["currentModeId"], "read-only");
}

#[test]
fn a_mode_change_applies_to_the_next_prompt() {
    let model = MockModelServer::start();
    model.push_all([
        shell("call-1", "touch before.txt"),
        say("one"),
        shell("call-2", "touch after.txt"),
        say("two"),
    ]);
    let home = TestHome::new(&model.base_url());
    let seen = run_plan(
        &home,
        Agent::Deputy,
        json!(["reject_once"]),
        json!([
            {"op": "initialize"},
            {"op": "new"},
            {"op": "prompt", "text": "first"},
            {"op": "setMode", "modeId": "ask"},
            {"op": "prompt", "text": "second"},
        ]),
    );
    let first = ok_step(&seen, 2);
    assert_eq!(first["permissions"], json!([]), "full access asks nothing");
    assert!(home.workspace().join("before.txt").exists());
    ok_step(&seen, 3);
    let second = ok_step(&seen, 4);
    assert_eq!(
        second["permissions"].as_array().unwrap().len(),
        1,
        "{second:#}"
    );
    assert!(!home.workspace().join("after.txt").exists(), "rejected");
    // The mode's policies reached the engine: the second request says so.
    let requests = model.requests();
    let body = requests[2].body.to_string();
    assert!(
        body.contains("untrusted") || body.contains("workspace-write"),
        "{body}"
    );
}

#[test]
fn the_model_option_changes_the_model_of_the_next_prompt() {
    let model = MockModelServer::start();
    model.push_all([say("one"), say("two")]);
    let home = TestHome::new(&model.base_url());
    home.append_config("[profiles.big]\nmodel = \"mock-model-big\"");
    let seen = run_plan(
        &home,
        Agent::Deputy,
        json!([]),
        json!([
            {"op": "initialize"},
            {"op": "new"},
            {"op": "prompt", "text": "first"},
            {"op": "setModel", "value": "mock-model-big"},
            {"op": "setModel", "value": "no-such-model"},
            {"op": "prompt", "text": "second"},
        ]),
    );
    let options = &ok_step(&seen, 1)["result"]["configOptions"][0]["options"];
    assert_eq!(
        options,
        &json!([{"value": "mock-model", "name": "mock-model"},
                {"value": "mock-model-big", "name": "mock-model-big"}])
    );
    let set = ok_step(&seen, 3);
    assert_eq!(
        set["result"]["configOptions"][0]["currentValue"],
        "mock-model-big"
    );
    assert_eq!(seen["steps"][4]["error"]["code"], -32602);
    ok_step(&seen, 5);
    let requests = model.requests();
    assert_eq!(requests[0].body["model"], "mock-model");
    assert_eq!(requests[1].body["model"], "mock-model-big");
}

#[test]
fn without_the_api_key_sessions_are_refused_naming_the_variable() {
    let model = MockModelServer::start();
    let home = TestHome::new(&model.base_url());
    home.append_config("env_key = \"DEPUTY_TEST_ACP_KEY\"");
    let seen = run_plan(
        &home,
        Agent::Deputy,
        json!([]),
        json!([
            {"op": "initialize"},
            {"op": "request", "method": "authenticate", "params": {"methodId": "env-var"}},
            {"op": "new"},
        ]),
    );
    let init = ok_step(&seen, 0);
    assert_eq!(init["result"]["authMethods"][0]["id"], "env-var");
    assert_eq!(
        init["result"]["authMethods"][0]["name"],
        "Set DEPUTY_TEST_ACP_KEY"
    );
    for step in [1, 2] {
        let error = &seen["steps"][step]["error"];
        assert_eq!(error["code"], -32000, "{error}");
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains("DEPUTY_TEST_ACP_KEY"),
            "{error}"
        );
    }
    assert_eq!(model.request_count(), 0);
}
