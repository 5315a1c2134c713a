//! The same guarantees over MCP: `codex-reply` with a thread id from an earlier (or
//! killed) `deputy mcp-server` process resumes it; a thread live in one server is
//! refused to another.

use deputy_test_support::{McpSession, MockModelServer, MockResponse, StdioClient, TestHome};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{SOON, UNFINISHED, assistant, input, requests, start_session, user, wait_for_file};

/// An initialized `deputy mcp-server` on `home`.
fn server(home: &TestHome) -> StdioClient {
    let mut command = home.command(super::common::DEPUTY);
    // Keep the developer's login profile out of `bash -lc`.
    command.arg("mcp-server").env("HOME", home.path());
    let client = StdioClient::spawn(command);
    McpSession::initialize(&client, json!({}));
    client
}

/// Sends `tools/call` and returns the request id.
fn call(client: &StdioClient, tool: &str, arguments: Value) -> i64 {
    client.request("tools/call", json!({"name": tool, "arguments": arguments}))
}

/// The result of tool call `id`.
fn result(client: &StdioClient, id: i64) -> Value {
    let response = client
        .wait_response(id, SOON)
        .unwrap_or_else(|err| panic!("{err}"));
    response["result"].clone()
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

/// Closes stdin and waits for a clean exit.
fn stop(client: &StdioClient) {
    client.close_stdin();
    let status = client.wait_exit(SOON).expect("the server exits");
    assert!(status.success(), "server exit: {status:?}");
}

fn reply(thread_id: &str, prompt: &str) -> Value {
    json!({"threadId": thread_id, "prompt": prompt})
}

#[test]
fn codex_reply_after_a_server_restart_continues_with_the_saved_history() {
    let model = MockModelServer::start();
    let home = TestHome::new(&model.base_url());
    model.push_all([
        MockResponse::function_call_turn("call-1", "shell", json!({"command": ["echo", "hi"]})),
        MockResponse::text_turn("It printed hi."),
        MockResponse::text_turn("Bye."),
    ]);
    let first = server(&home);
    let started = result(&first, call(&first, "codex", json!({"prompt": "run echo"})));
    let thread_id = started["structuredContent"]["threadId"]
        .as_str()
        .expect("threadId")
        .to_string();
    stop(&first);

    let second = server(&home);
    let replied = result(
        &second,
        call(&second, "codex-reply", reply(&thread_id, "thanks")),
    );
    assert_eq!(
        replied,
        json!({"content": [{"type": "text", "text": "Bye."}],
               "structuredContent": {"threadId": thread_id, "content": "Bye."}})
    );
    // The resumed session announces itself like a new one, with the saved settings.
    let configured = second
        .notifications("codex/event")
        .into_iter()
        .find(|n| n["params"]["msg"]["type"] == "session_configured")
        .expect("session_configured for the resumed thread");
    assert_eq!(
        configured["params"]["msg"]["session_id"],
        thread_id.as_str()
    );
    assert_eq!(
        configured["params"]["_meta"]["threadId"],
        thread_id.as_str()
    );
    assert!(
        configured["params"]["msg"]["rollout_path"]
            .as_str()
            .is_some()
    );
    stop(&second);

    let requests = requests(&model, 3);
    let mut expected = input(&requests[1]);
    assert_eq!(expected[1], user("run echo"));
    assert_eq!(expected[2]["type"], "function_call");
    assert_eq!(expected[3]["type"], "function_call_output");
    expected.push(assistant("It printed hi."));
    expected.push(user("thanks"));
    assert_eq!(input(&requests[2]), expected);
}

#[test]
fn a_thread_resumed_by_one_server_is_refused_to_another_until_it_exits() {
    let model = MockModelServer::start();
    let home = TestHome::new(&model.base_url());
    model.push_all([
        MockResponse::text_turn("Ready."),
        MockResponse::function_call_turn(
            "call-wait",
            "shell",
            json!({"command": ["bash", "-c", "touch started; while [ ! -e release ]; do sleep 0.05; done"]}),
        ),
        MockResponse::text_turn("Released."),
        MockResponse::text_turn("Mine now."),
    ]);
    let (thread_id, _) = start_session(&home, "hello");

    let holder = server(&home);
    let running = call(
        &holder,
        "codex-reply",
        reply(&thread_id, "wait for release"),
    );
    wait_for_file(&home.workspace().join("started"));
    let other = server(&home);
    let refused = result(
        &other,
        call(&other, "codex-reply", reply(&thread_id, "me too")),
    );
    assert_eq!(
        refused,
        json!({"content": [{"type": "text", "text": "thread is open in another process"}],
               "structuredContent": {"threadId": thread_id,
                                     "content": "thread is open in another process"},
               "isError": true})
    );

    std::fs::write(home.workspace().join("release"), "").expect("release");
    assert_eq!(text(&result(&holder, running)), "Released.");
    stop(&holder);
    let taken = result(
        &other,
        call(&other, "codex-reply", reply(&thread_id, "now?")),
    );
    assert_eq!(text(&taken), "Mine now.");
    stop(&other);
    let requests = requests(&model, 4);
    let mut expected = input(&requests[2]);
    expected.extend([assistant("Released."), user("now?")]);
    assert_eq!(input(&requests[3]), expected);
}

#[test]
fn a_server_killed_mid_command_leaves_a_thread_a_new_server_resumes() {
    let model = MockModelServer::start();
    let home = TestHome::new(&model.base_url());
    let sleep_args = json!({"command": ["bash", "-c",
        "echo $$ > sleeper.pid.tmp && mv sleeper.pid.tmp sleeper.pid && exec sleep 30"]});
    model.push_all([
        MockResponse::text_turn("Ready."),
        MockResponse::function_call_turn("call-sleep", "shell", sleep_args.clone()),
        MockResponse::text_turn("Recovered."),
    ]);
    let first = server(&home);
    let started = result(&first, call(&first, "codex", json!({"prompt": "hello"})));
    let thread_id = started["structuredContent"]["threadId"]
        .as_str()
        .expect("threadId")
        .to_string();
    let _running = call(&first, "codex-reply", reply(&thread_id, "sleep a while"));
    let pid_file = home.workspace().join("sleeper.pid");
    wait_for_file(&pid_file);
    let server_pid = libc::pid_t::try_from(first.pid()).expect("pid");
    // SAFETY: sending a signal has no memory effects.
    unsafe { libc::kill(server_pid, libc::SIGKILL) };
    assert!(first.wait_exit(SOON).is_some(), "the killed server is gone");
    if let Ok(pid) = std::fs::read_to_string(&pid_file)
        .unwrap_or_default()
        .trim()
        .parse::<libc::pid_t>()
    {
        // SAFETY: as above; the orphaned command must not outlive the test.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }

    let second = server(&home);
    let replied = result(
        &second,
        call(&second, "codex-reply", reply(&thread_id, "status?")),
    );
    assert_eq!(text(&replied), "Recovered.");
    assert!(replied.get("isError").is_none(), "{replied}");
    stop(&second);

    let requests = requests(&model, 3);
    let mut expected = input(&requests[1]);
    assert_eq!(expected.last(), Some(&user("sleep a while")));
    assert_eq!(expected[expected.len() - 2], assistant("Ready."));
    expected.extend([
        json!({"type": "function_call", "name": "shell", "call_id": "call-sleep",
               "arguments": sleep_args.to_string()}),
        json!({"type": "function_call_output", "call_id": "call-sleep", "output": UNFINISHED}),
        user("status?"),
    ]);
    assert_eq!(input(&requests[2]), expected);
}
