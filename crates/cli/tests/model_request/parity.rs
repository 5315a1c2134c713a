//! The first request per model family next to the one Codex 0.125 sends
//! (`codex_0_125_tools.json`, recorded with descriptions left out): the tools deputy
//! offers carry Codex's names and parameter schemas (names, types, required), and the
//! request fields are Codex's.

use std::collections::BTreeSet;

use deputy_test_support::{MockModelServer, MockResponse, TestHome};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::exec;
use super::{requests, session_id};

/// Codex 0.125's tools, as its first request for `gpt-5-codex` offers them.
fn codex_tools() -> Vec<Value> {
    serde_json::from_str(include_str!("codex_0_125_tools.json")).unwrap()
}

/// A tool's name as the model sees it: its `name`, or the type of a hosted tool.
fn tool_name(tool: &Value) -> String {
    tool["name"]
        .as_str()
        .or_else(|| tool["function"]["name"].as_str())
        .or_else(|| tool["type"].as_str())
        .unwrap()
        .to_string()
}

/// `value` without the prose: every `description` removed, at any depth.
fn shape(value: &Value) -> Value {
    match value {
        Value::Object(fields) => Value::Object(
            fields
                .iter()
                .filter(|(key, _)| *key != "description")
                .map(|(key, value)| (key.clone(), shape(value)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(shape).collect()),
        other => other.clone(),
    }
}

/// The first request of `deputy exec --json-events` with `args`, the run's thread id and
/// its events.
fn first_request(args: &[&str], chat: bool) -> (Value, String, String) {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    if chat {
        home.write_config(
            &TestHome::default_config(&server.base_url())
                .replace("wire_api = \"responses\"", "wire_api = \"chat\""),
        );
        server.push(MockResponse::chat_text_turn("Hi."));
    } else {
        server.push(MockResponse::text_turn("Hi."));
    }
    let mut full = vec!["--json-events"];
    full.extend_from_slice(args);
    full.push("hello");
    let run = exec(&home, &full);
    run.assert_code(0);
    let body = requests(&server, 1).remove(0).body;
    (body, session_id(&run), run.stdout)
}

/// Checks the offered tools: exactly `expected` by name, and each one Codex also offers
/// with Codex's shape.
fn assert_tools(family: &str, body: &Value, expected: &[&str]) {
    let offered = body["tools"].as_array().unwrap();
    let names: BTreeSet<String> = offered.iter().map(tool_name).collect();
    let expected: BTreeSet<String> = expected.iter().map(|name| name.to_string()).collect();
    assert_eq!(names, expected, "{family}: the tools offered");
    let codex = codex_tools();
    for tool in offered {
        if let Some(reference) = codex.iter().find(|c| tool_name(c) == tool_name(tool)) {
            assert_eq!(
                shape(tool),
                shape(reference),
                "{family}: `{}`",
                tool_name(tool)
            );
        }
    }
}

/// The freeform `apply_patch` of the coding families: a custom tool constrained by a Lark
/// grammar of the patch format.
fn assert_freeform_apply_patch(body: &Value) {
    let tool = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "apply_patch")
        .unwrap();
    assert_eq!(tool["type"], "custom");
    assert_eq!(tool["format"]["type"], "grammar");
    assert_eq!(tool["format"]["syntax"], "lark");
    let grammar = tool["format"]["definition"].as_str().unwrap();
    for part in [
        "*** Begin Patch",
        "*** End Patch",
        "*** Add File: ",
        "*** Update File: ",
    ] {
        assert!(grammar.contains(part), "the grammar has no {part:?}");
    }
}

#[test]
fn the_codex_family_gets_codex_tools_reasoning_and_caching_fields() {
    let (body, id, _) = first_request(
        &[
            "-m",
            "gpt-5-codex",
            "-c",
            "web_search=\"live\"",
            "-c",
            "model_reasoning_effort=\"high\"",
        ],
        false,
    );
    assert_tools(
        "gpt-5-codex",
        &body,
        &[
            "exec_command",
            "write_stdin",
            "apply_patch",
            "update_plan",
            "request_user_input",
            "view_image",
            "web_search",
        ],
    );
    assert_freeform_apply_patch(&body);
    for (field, value) in [
        ("model", json!("gpt-5-codex")),
        ("tool_choice", json!("auto")),
        ("parallel_tool_calls", json!(false)),
        ("store", json!(false)),
        ("stream", json!(true)),
        ("include", json!(["reasoning.encrypted_content"])),
        ("reasoning", json!({"effort": "high", "summary": "auto"})),
        ("prompt_cache_key", json!(id)),
    ] {
        assert_eq!(body[field], value, "`{field}`");
    }
    assert!(body["instructions"].as_str().unwrap().len() > 5_000);
}

#[test]
fn the_other_families_get_their_own_tool_forms_with_codex_shapes() {
    let (gpt5, _, _) = first_request(&["-m", "gpt-5.1", "-c", "tools.web_search=true"], false);
    assert_tools(
        "gpt-5.1",
        &gpt5,
        &[
            "shell_command",
            "apply_patch",
            "update_plan",
            "view_image",
            "web_search",
        ],
    );
    assert_freeform_apply_patch(&gpt5);
    assert_eq!(gpt5["reasoning"], json!({"summary": "auto"}));

    let (oss, _, _) = first_request(&["-m", "gpt-oss-120b"], false);
    assert_tools(
        "gpt-oss",
        &oss,
        &["shell_command", "apply_patch", "update_plan"],
    );
    let apply_patch = &oss["tools"][1];
    assert_eq!(
        (
            apply_patch["type"].as_str(),
            apply_patch["parameters"]["required"].clone()
        ),
        (Some("function"), json!(["input"]))
    );

    // A model deputy does not know: the generic set, no reasoning fields, the web search
    // when it is turned on.
    let (generic, id, _) = first_request(&["-c", "web_search=\"live\""], false);
    assert_tools(
        "generic",
        &generic,
        &[
            "shell",
            "shell_command",
            "apply_patch",
            "update_plan",
            "web_search",
        ],
    );
    // A model known to have no hosted search does not get it.
    let (gpt4, _, _) = first_request(&["-m", "gpt-4", "-c", "web_search=\"live\""], false);
    assert_tools(
        "gpt-4",
        &gpt4,
        &["shell", "shell_command", "apply_patch", "update_plan"],
    );
    assert_eq!(generic.get("reasoning"), None);
    assert_eq!(generic.get("include"), None);
    assert_eq!(generic["prompt_cache_key"], id.as_str());
}

#[test]
fn on_chat_the_same_tools_are_functions_with_the_same_schemas_and_no_web_search() {
    let (body, _, events) = first_request(
        &[
            "-m",
            "gpt-5-codex",
            "-c",
            "web_search=\"live\"",
            "-c",
            "model_reasoning_effort=\"low\"",
        ],
        true,
    );
    let names: BTreeSet<String> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(tool_name)
        .collect();
    assert_eq!(
        names,
        [
            "apply_patch",
            "exec_command",
            "request_user_input",
            "update_plan",
            "view_image",
            "write_stdin"
        ]
        .map(String::from)
        .into()
    );
    let codex = codex_tools();
    for tool in body["tools"].as_array().unwrap() {
        assert_eq!(tool["type"], "function");
        if let Some(reference) = codex.iter().find(|c| tool_name(c) == tool_name(tool)) {
            assert_eq!(
                shape(&tool["function"]["parameters"]),
                shape(&reference["parameters"]),
                "`{}`",
                tool_name(tool)
            );
        }
    }
    assert_eq!(body["reasoning_effort"], "low");
    assert_eq!(body.get("prompt_cache_key"), None);
    let warnings: Vec<Value> = super::json_lines(&events)
        .into_iter()
        .filter(|event| event["type"] == "warning")
        .collect();
    assert_eq!(warnings.len(), 1, "{events}");
    assert!(
        warnings[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("web search is offered on Responses providers only"),
        "{warnings:?}"
    );
}

#[test]
fn the_patch_grammar_sent_to_the_model_accepts_patches_and_refuses_other_text() {
    let python = deputy_test_support::python_with_lark().unwrap_or_else(|e| panic!("{e}"));
    let (body, _, _) = first_request(&["-m", "gpt-5-codex"], false);
    let tool = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|tool| tool["name"] == "apply_patch")
        .unwrap();
    let grammar = tool["format"]["definition"].as_str().unwrap();
    // The worked example the instructions teach, as the model reads it.
    let instructions = body["instructions"].as_str().unwrap();
    let start = instructions
        .find("*** Begin Patch\n*** Update File")
        .unwrap();
    let end = start + instructions[start..].find("*** End Patch").unwrap();
    let example = format!("{}*** End Patch\n", &instructions[start..end]);
    let accepted = [
        example.as_str(),
        "*** Begin Patch\n*** Update File: a.rs\n*** Move to: b.rs\n@@\n-old\n+new\n*** End of File\n*** End Patch\n",
        "*** Begin Patch\n*** Delete File: gone.txt\n*** End Patch",
    ];
    let refused = [
        "fix the bug",
        "*** Begin Patch\n*** Add File: x\n+never closed\n",
        "*** Begin Patch\n*** End Patch\n",
    ];
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("patch.lark"), grammar).unwrap();
    let cases = json!({"accepted": accepted, "refused": refused});
    std::fs::write(dir.path().join("cases.json"), cases.to_string()).unwrap();
    let script = "import json, sys\nfrom lark import Lark\n\
        g = open(sys.argv[1]).read()\n\
        cases = json.load(open(sys.argv[2]))\n\
        for algo in ('lalr', 'earley'):\n\
        \x20   p = Lark(g, start='start', parser=algo)\n\
        \x20   for text in cases['accepted']:\n\
        \x20       p.parse(text)\n\
        \x20   for text in cases['refused']:\n\
        \x20       try:\n\
        \x20           p.parse(text)\n\
        \x20       except Exception:\n\
        \x20           continue\n\
        \x20       sys.exit(algo + ' accepted: ' + repr(text))\n\
        print('ok')\n";
    let run = std::process::Command::new(python)
        .arg("-c")
        .arg(script)
        .arg(dir.path().join("patch.lark"))
        .arg(dir.path().join("cases.json"))
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&run.stdout), "ok\n");
}
