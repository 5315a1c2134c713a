//! The conversation tools (seed 003): create, send, stream with catch-up, pause, list.
//! The first three tests are seed 003's own `stream_conversation.rs` scenarios.

use std::path::{Path, PathBuf};
use std::time::Duration;

use deputy_test_support::processes::{is_running, stops_within};
use deputy_test_support::{McpSession, MockResponse, StdioClient};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use crate::harness::{
    DEPUTY, EXIT_WAIT, Mcp, SLEEP_30, WAIT, shell, text_of, thread_of, wait_for_pid,
};

const INITIAL_STATE: &str = "notifications/initial_state";

/// The contract's bound on how fast a cancelled send stops its commands.
const CANCEL_BOUND: Duration = Duration::from_secs(1);

/// A server whose client answers approval questions.
fn eliciting() -> Mcp {
    let mcp = Mcp::spawn();
    McpSession::initialize(&mcp.client, json!({"elicitation": {}}));
    mcp
}

/// Polls `probe` until it finds something, failing the test after [`WAIT`].
fn wait_until<T>(what: &str, probe: impl FnMut() -> Option<T>) -> T {
    deputy_test_support::processes::poll_until(WAIT, probe)
        .unwrap_or_else(|| panic!("{what}: not within {WAIT:?}"))
}

/// `conversationCreate` with `args`; returns the conversation id.
fn create(mcp: &Mcp, args: Value) -> String {
    let result = mcp.result(mcp.call("conversationCreate", args));
    assert_eq!(result.get("isError"), None, "{result}");
    assert_eq!(
        result["structuredContent"]["model"], "mock-model",
        "{result}"
    );
    result["structuredContent"]["conversation_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no conversation_id in {result}"))
        .to_string()
}

/// `conversationSendMessage` without waiting for its result; returns the request id.
fn send_call(mcp: &Mcp, conversation_id: &str, text: &str) -> i64 {
    mcp.call(
        "conversationSendMessage",
        json!({"conversation_id": conversation_id, "content": [{"type": "text", "text": text}]}),
    )
}

/// `conversationSendMessage`, checking it answers `{status: "ok"}`; returns the request id.
fn send(mcp: &Mcp, conversation_id: &str, text: &str) -> i64 {
    let id = send_call(mcp, conversation_id, text);
    let result = mcp.result(id);
    assert_eq!(
        result["structuredContent"],
        json!({"status": "ok"}),
        "{result}"
    );
    id
}

/// A connected `conversationStream`.
struct Stream {
    /// Its request id.
    id: i64,
    /// Where its `initial_state` is in the message log.
    at: usize,
    /// The `initial_state` params.
    state: Value,
}

impl Stream {
    /// The `msg` of every event of the snapshot.
    fn events(&self) -> Vec<Value> {
        self.state["initial_state"]["events"]
            .as_array()
            .unwrap_or_else(|| panic!("no events array in {}", self.state))
            .iter()
            .map(|event| {
                assert_eq!(event.as_object().map(|o| o.len()), Some(1), "{event}");
                event["msg"].clone()
            })
            .collect()
    }

    /// The type of every event of the snapshot.
    fn types(&self) -> Vec<String> {
        self.events().iter().map(type_of).collect()
    }
}

fn type_of(msg: &Value) -> String {
    msg["type"].as_str().unwrap_or_default().to_string()
}

/// Opens a stream: its result must be `{}`, followed by the conversation's `initial_state`.
fn connect(mcp: &Mcp, conversation_id: &str) -> Stream {
    let id = mcp.call(
        "conversationStream",
        json!({"conversation_id": conversation_id}),
    );
    let result = mcp.result(id);
    assert_eq!(result["structuredContent"], json!({}), "{result}");
    assert_eq!(result.get("isError"), None, "{result}");
    let answered = mcp
        .position(|m| m["id"] == json!(id) && m.get("result").is_some())
        .expect("the result was read");
    let (at, state) = wait_until("initial_state after the stream's result", || {
        mcp.client
            .messages()
            .into_iter()
            .enumerate()
            .skip(answered + 1)
            .find(|(_, m)| {
                m["method"] == INITIAL_STATE
                    && m["params"]["_meta"]["conversationId"] == conversation_id
            })
            .map(|(at, m)| (at, m["params"].clone()))
    });
    Stream { id, at, state }
}

/// Cancels request `id`.
fn cancel(mcp: &Mcp, id: i64) {
    mcp.client
        .notify("notifications/cancelled", json!({"requestId": id}));
}

/// Every live event notification named `kind`, in order (their params).
fn live(mcp: &Mcp, kind: &str) -> Vec<Value> {
    mcp.client
        .notifications(kind)
        .into_iter()
        .map(|m| m["params"].clone())
        .collect()
}

/// Waits until `count` live `kind` notifications have arrived; returns them.
fn wait_live(mcp: &Mcp, kind: &str, count: usize) -> Vec<Value> {
    wait_until(&format!("{count} live `{kind}`"), || {
        let seen = live(mcp, kind);
        (seen.len() >= count).then_some(seen)
    })
}

/// The rollout of conversation `id` under the server's home.
fn rollout(home: &Path, id: &str) -> Option<PathBuf> {
    fn walk(dir: &Path, suffix: &str) -> Option<PathBuf> {
        for entry in std::fs::read_dir(dir).ok()?.flatten() {
            let path = entry.path();
            if path.is_dir() {
                if let Some(found) = walk(&path, suffix) {
                    return Some(found);
                }
            } else if path.to_string_lossy().ends_with(suffix) {
                return Some(path);
            }
        }
        None
    }
    walk(&home.join("sessions"), &format!("-{id}.jsonl"))
}

/// Waits until the rollout of conversation `id` records `turns` ended turns: each
/// turn's end is on disk before anyone is told of it, so this is how a test knows
/// turns finished while nobody was streaming.
fn wait_turns_ended(mcp: &Mcp, id: &str, turns: usize) {
    wait_until(&format!("{turns} turn(s) ended on disk"), || {
        let text = std::fs::read_to_string(rollout(mcp.home.path(), id)?).ok()?;
        let ended = text
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .filter(|line| {
                line["type"] == "event"
                    && ["turn_complete", "turn_aborted", "turn_failed"]
                        .contains(&line["payload"]["msg"]["type"].as_str().unwrap_or_default())
            })
            .count();
        (ended >= turns).then_some(())
    });
}

/// The `(type, text)` of the snapshot's message and turn events, as seed 003 compares them.
fn story(stream: &Stream) -> Vec<(String, String)> {
    stream
        .events()
        .iter()
        .filter_map(|msg| {
            let kind = type_of(msg);
            let text = match kind.as_str() {
                "task_started" => "",
                "user_message" | "agent_message" => msg["message"].as_str()?,
                "task_complete" => msg["last_agent_message"].as_str()?,
                _ => return None,
            };
            Some((kind, text.to_string()))
        })
        .collect()
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(kind, text)| (kind.to_string(), text.to_string()))
        .collect()
}

/// The elicitation asking about tool call `call_id` that came after message `after`.
fn wait_question(mcp: &Mcp, call_id: &str, after: usize) -> (usize, Value) {
    wait_until(&format!("a question about {call_id}"), || {
        mcp.client
            .messages()
            .into_iter()
            .enumerate()
            .skip(after + 1)
            .find(|(_, m)| {
                m["method"] == "elicitation/create" && m["params"]["codex_call_id"] == call_id
            })
    })
}

#[test]
fn connect_then_send_receives_initial_state_and_live_events() {
    let mcp = Mcp::start();
    let conversation = create(&mcp, json!({"prompt": ""}));

    let stream = connect(&mcp, &conversation);
    // Exactly what seed 003 asserts: a fresh conversation has no events yet (its
    // configuration was `conversationCreate`'s answer).
    assert_eq!(
        stream.state,
        json!({
            "_meta": {"conversationId": conversation},
            "initial_state": {"events": []},
        })
    );

    mcp.model.push(MockResponse::text_turn("Done"));
    send(&mcp, &conversation, "Hello there");
    assert_eq!(
        wait_live(&mcp, "agent_message", 1),
        [json!({"msg": {"type": "agent_message", "message": "Done"}})]
    );
    let completed = wait_live(&mcp, "task_complete", 1);
    assert_eq!(completed[0]["msg"]["last_agent_message"], "Done");
    let user = live(&mcp, "user_message");
    assert_eq!(user[0]["msg"]["message"], "Hello there");
    // The stream's request never gets a second answer.
    let answers = mcp
        .client
        .messages()
        .iter()
        .filter(|m| m["id"] == json!(stream.id) && m.get("method").is_none())
        .count();
    assert_eq!(answers, 1);
}

#[test]
fn send_then_connect_receives_the_finished_turn_in_initial_state() {
    let mcp = Mcp::start();
    let conversation = create(&mcp, json!({"prompt": ""}));
    mcp.model.push(MockResponse::text_turn("Done"));
    send(&mcp, &conversation, "Hello world");
    wait_turns_ended(&mcp, &conversation, 1);

    let stream = connect(&mcp, &conversation);
    assert_eq!(
        story(&stream),
        pairs(&[
            ("task_started", ""),
            ("user_message", "Hello world"),
            ("agent_message", "Done"),
            ("task_complete", "Done"),
        ])
    );
    assert_eq!(stream.types()[0], "task_started");
    // The completed message makes its deltas redundant.
    assert!(
        !stream.types().iter().any(|t| t.ends_with("_delta")),
        "{:?}",
        stream.types()
    );
    assert!(live(&mcp, "agent_message").is_empty());
}

#[test]
fn cancel_stream_then_reconnect_catches_up_on_what_happened_meanwhile() {
    let mcp = Mcp::start();
    let conversation = create(&mcp, json!({"prompt": ""}));
    let first = connect(&mcp, &conversation);

    mcp.model.push(MockResponse::text_turn("Done 1"));
    send(&mcp, &conversation, "Hello M1");
    wait_live(&mcp, "agent_message", 1);
    wait_live(&mcp, "task_complete", 1);

    cancel(&mcp, first.id);
    mcp.model.push(MockResponse::text_turn("Done 2"));
    send(&mcp, &conversation, "Hello M2");
    wait_turns_ended(&mcp, &conversation, 2);

    let second = connect(&mcp, &conversation);
    assert_eq!(
        story(&second),
        pairs(&[
            ("task_started", ""),
            ("user_message", "Hello M1"),
            ("agent_message", "Done 1"),
            ("task_complete", "Done 1"),
            ("task_started", ""),
            ("user_message", "Hello M2"),
            ("agent_message", "Done 2"),
            ("task_complete", "Done 2"),
        ])
    );
    // Nothing of M2 was delivered live to the paused stream.
    assert_eq!(live(&mcp, "agent_message").len(), 1);
    assert_eq!(live(&mcp, "task_complete").len(), 1);
    assert!(second.at > first.at);
}

#[test]
fn an_approval_raised_while_nobody_streams_is_asked_right_after_the_next_initial_state() {
    let mcp = eliciting();
    // The approval timeout runs from the question being asked, not from it being raised.
    let conversation = create(
        &mcp,
        json!({"prompt": "", "approval_policy": "untrusted", "config": {"approval_timeout_sec": 1}}),
    );
    mcp.model.push(shell("call-touch", "touch approved.txt"));
    mcp.model.push(MockResponse::text_turn("touched"));
    send(&mcp, &conversation, "touch it");
    mcp.model.wait_for_requests(1, WAIT).unwrap();
    // Longer than the approval timeout: were it counting already, the command would be denied.
    std::thread::sleep(Duration::from_millis(1500));

    // Streams opened before the question was raised are paused again; once one's
    // snapshot holds the question, that stream must ask it.
    let stream = wait_until("a snapshot holding the approval request", || {
        let stream = connect(&mcp, &conversation);
        if stream.types().iter().any(|t| t == "exec_approval_request") {
            return Some(stream);
        }
        cancel(&mcp, stream.id);
        None
    });
    assert!(
        !stream.types().iter().any(|t| t == "exec_command_end"),
        "{:?}",
        stream.types()
    );
    let (_, question) = wait_question(&mcp, "call-touch", stream.at);
    assert_eq!(
        question["params"]["codex_mcp_tool_call_id"],
        stream.id.to_string()
    );
    assert_eq!(question["params"]["threadId"], conversation);
    mcp.client
        .respond(question["id"].clone(), json!({"decision": "approved"}));

    let ended = wait_live(&mcp, "task_complete", 1);
    assert_eq!(ended[0]["msg"]["last_agent_message"], "touched");
    assert!(mcp.home.workspace().join("approved.txt").exists());
    let end = wait_live(&mcp, "exec_command_end", 1);
    assert_eq!(end[0]["msg"]["exit_code"], 0);
}

#[test]
fn cancelling_a_send_after_its_result_interrupts_its_turn_and_kills_the_command() {
    let mcp = Mcp::start();
    let conversation = create(&mcp, json!({"prompt": ""}));
    mcp.model.push(shell("call-sleep", SLEEP_30));
    let sent = send(&mcp, &conversation, "sleep");
    let pid = wait_for_pid(&mcp.home.workspace().join("sleep.pid"));
    assert!(is_running(pid));

    cancel(&mcp, sent);
    assert!(
        stops_within(pid, CANCEL_BOUND),
        "the command survived the cancellation"
    );
    wait_turns_ended(&mcp, &conversation, 1);

    // The conversation goes on.
    mcp.model.push(MockResponse::text_turn("awake again"));
    send(&mcp, &conversation, "go on");
    wait_turns_ended(&mcp, &conversation, 2);
    let stream = connect(&mcp, &conversation);
    let ends: Vec<String> = stream
        .types()
        .into_iter()
        .filter(|t| t == "turn_aborted" || t == "task_complete")
        .collect();
    assert_eq!(ends, ["turn_aborted", "task_complete"]);
    let aborted = stream
        .events()
        .into_iter()
        .find(|m| m["type"] == "turn_aborted")
        .unwrap();
    assert_eq!(aborted["reason"], "interrupted");
}

#[test]
fn a_message_sent_while_a_turn_runs_is_queued_behind_it() {
    let mcp = Mcp::start();
    mcp.model.push(shell("call-sleep", SLEEP_30));
    let created = mcp.call("conversationCreate", json!({"prompt": "sleep first"}));
    let conversation = mcp.result(created)["structuredContent"]["conversation_id"]
        .as_str()
        .unwrap()
        .to_string();
    let pid = wait_for_pid(&mcp.home.workspace().join("sleep.pid"));

    mcp.model.push(MockResponse::text_turn("second"));
    send(&mcp, &conversation, "then this");
    assert!(is_running(pid), "the running turn must not be disturbed");
    assert_eq!(mcp.model.request_count(), 1);

    // Cancelling the create interrupts the first turn; the queued one then runs.
    cancel(&mcp, created);
    assert!(stops_within(pid, CANCEL_BOUND));
    wait_turns_ended(&mcp, &conversation, 2);
    let stream = connect(&mcp, &conversation);
    assert_eq!(
        story(&stream)
            .into_iter()
            .filter(|(kind, _)| kind != "task_started")
            .collect::<Vec<_>>(),
        pairs(&[
            ("user_message", "sleep first"),
            ("user_message", "then this"),
            ("agent_message", "second"),
            ("task_complete", "second"),
        ])
    );
}

#[test]
fn two_streams_each_get_everything_and_the_first_answer_withdraws_the_other_question() {
    let mcp = eliciting();
    let conversation = create(&mcp, json!({"prompt": "", "approval_policy": "untrusted"}));
    let one = connect(&mcp, &conversation);
    let two = connect(&mcp, &conversation);
    mcp.model.push(shell("call-touch", "touch both.txt"));
    mcp.model.push(MockResponse::text_turn("touched"));
    send(&mcp, &conversation, "touch it");

    let questions = wait_until("a question from each stream", || {
        let asked: Vec<Value> = mcp
            .client
            .messages()
            .into_iter()
            .filter(|m| m["method"] == "elicitation/create")
            .collect();
        (asked.len() >= 2).then_some(asked)
    });
    let askers: Vec<&Value> = questions
        .iter()
        .map(|q| &q["params"]["codex_mcp_tool_call_id"])
        .collect();
    assert!(askers.contains(&&json!(one.id.to_string())), "{askers:?}");
    assert!(askers.contains(&&json!(two.id.to_string())), "{askers:?}");
    mcp.client
        .respond(questions[0]["id"].clone(), json!({"decision": "approved"}));

    let withdrawn = questions[1]["id"].clone();
    mcp.client
        .wait_for(
            |m| m["method"] == "notifications/cancelled" && m["params"]["requestId"] == withdrawn,
            WAIT,
        )
        .unwrap_or_else(|err| panic!("the second question was not withdrawn: {err}"));
    let ended = wait_live(&mcp, "task_complete", 2);
    assert_eq!(ended[0], ended[1]);
    for kind in [
        "task_started",
        "user_message",
        "exec_approval_request",
        "exec_command_end",
    ] {
        assert_eq!(live(&mcp, kind).len(), 2, "`{kind}` reaches both streams");
    }
    assert!(mcp.home.workspace().join("both.txt").exists());
}

#[test]
fn a_five_megabyte_output_gives_a_bounded_initial_state_that_keeps_its_end() {
    let mcp = Mcp::start();
    let conversation = create(&mcp, json!({"prompt": ""}));
    mcp.model.push(shell(
        "call-big",
        "head -c 5000000 /dev/zero | tr '\\0' x; echo END",
    ));
    mcp.model.push(MockResponse::text_turn("big"));
    send(&mcp, &conversation, "print a lot");
    wait_turns_ended(&mcp, &conversation, 1);

    let stream = connect(&mcp, &conversation);
    let message = mcp.client.messages()[stream.at].to_string();
    assert!(
        message.len() < 2 * 1024 * 1024,
        "initial_state is {} bytes",
        message.len()
    );
    let end = stream
        .events()
        .into_iter()
        .find(|m| m["type"] == "exec_command_end")
        .expect("exec_command_end is kept");
    let output = end["aggregated_output"].as_str().unwrap();
    assert!(output.len() <= 64 * 1024, "{}", output.len());
    assert!(output.starts_with("xxxx"));
    assert!(output.trim_end().ends_with("END"), "the tail is kept");
    assert!(output.contains("bytes truncated"), "the cut is noted");
    assert_eq!(story(&stream).last().unwrap().1, "big");
}

/// Replaces the server by a new process on the same home.
fn restart(mcp: &mut Mcp) {
    mcp.client.close_stdin();
    let status = mcp.client.wait_exit(EXIT_WAIT).expect("the server exits");
    assert!(status.success(), "{status:?}");
    let mut command = mcp.home.command(DEPUTY);
    command.arg("mcp-server").env("HOME", mcp.home.path());
    mcp.client = StdioClient::spawn(command);
    McpSession::initialize(&mcp.client, json!({}));
}

#[test]
fn after_a_restart_an_old_conversation_is_listed_streamed_and_continued() {
    let mut mcp = Mcp::start();
    mcp.model.push(MockResponse::text_turn("first answer"));
    let conversation = create(&mcp, json!({"prompt": "  first\n question  "}));
    wait_turns_ended(&mcp, &conversation, 1);
    restart(&mut mcp);

    let listed = mcp.result(mcp.call("conversationsList", json!({})));
    assert_eq!(
        listed["structuredContent"],
        json!({"conversations": [{"conversation_id": conversation, "title": "first question"}]})
    );

    let stream = connect(&mcp, &conversation);
    assert_eq!(
        story(&stream),
        pairs(&[
            ("task_started", ""),
            ("user_message", "  first\n question  "),
            ("agent_message", "first answer"),
            ("task_complete", "first answer"),
        ])
    );
    // Neither when created nor when this process resumed it does the thread's
    // announcement enter the stream.
    assert!(
        !stream.types().iter().any(|t| t == "session_configured"),
        "{:?}",
        stream.types()
    );

    mcp.model.push(MockResponse::text_turn("second answer"));
    send(&mcp, &conversation, "and now?");
    let answer = wait_live(&mcp, "agent_message", 1);
    assert_eq!(answer[0]["msg"]["message"], "second answer");
    let said: Vec<String> = crate::harness::messages(&mcp.model.requests()[1])
        .into_iter()
        .map(|(_, text)| text)
        .collect();
    assert!(
        said.iter().any(|t| t.contains("first answer")),
        "the saved history goes to the model: {said:?}"
    );
}

#[test]
fn codex_threads_and_conversations_are_the_same_thing() {
    let mcp = Mcp::start();
    mcp.model.push(MockResponse::text_turn("from codex"));
    let thread = thread_of(&mcp.result(mcp.call("codex", json!({"prompt": "hi"}))));

    let stream = connect(&mcp, &thread);
    assert_eq!(
        story(&stream)[2],
        ("agent_message".into(), "from codex".into())
    );
    mcp.model.push(MockResponse::text_turn("from a send"));
    send(&mcp, &thread, "more");
    wait_live(&mcp, "task_complete", 1);

    let conversation = create(&mcp, json!({"prompt": ""}));
    mcp.model.push(MockResponse::text_turn("from codex-reply"));
    let reply = mcp.result(mcp.call(
        "codex-reply",
        json!({"threadId": conversation, "prompt": "hello"}),
    ));
    assert_eq!(text_of(&reply), "from codex-reply");
    assert_eq!(thread_of(&reply), conversation);
}

#[test]
fn conversations_are_listed_newest_first_in_pages() {
    let mcp = Mcp::start();
    let mut made = Vec::new();
    for n in 1..=3 {
        mcp.model.push(MockResponse::text_turn("ok"));
        let id = create(&mcp, json!({"prompt": format!("task {n}")}));
        wait_turns_ended(&mcp, &id, 1);
        made.push(id);
    }
    let empty = create(&mcp, json!({"prompt": ""}));

    let first = mcp.result(mcp.call("conversationsList", json!({"limit": 2})));
    let cursor = made[1].clone();
    assert_eq!(
        first["structuredContent"],
        json!({
            "conversations": [
                {"conversation_id": empty, "title": ""},
                {"conversation_id": made[2], "title": "task 3"},
            ],
            "next_cursor": made[2],
        })
    );
    let next = first["structuredContent"]["next_cursor"].clone();
    let second = mcp.result(mcp.call("conversationsList", json!({"limit": 2, "cursor": next})));
    assert_eq!(
        second["structuredContent"],
        json!({
            "conversations": [
                {"conversation_id": cursor, "title": "task 2"},
                {"conversation_id": made[0], "title": "task 1"},
            ],
        })
    );
}

#[test]
fn bad_ids_and_arguments_are_tool_errors_and_the_server_keeps_serving() {
    let mcp = Mcp::start();
    let unknown = "01890a5d-ac96-774b-bcce-b302099a8057";
    let cases = [
        (
            "conversationStream",
            json!({"conversation_id": "nope"}),
            "Failed to parse thread_id `nope`: not a UUID",
        ),
        (
            "conversationSendMessage",
            json!({"conversation_id": unknown, "content": [{"type": "text", "text": "hi"}]}),
            "Conversation not found",
        ),
        (
            "conversationStream",
            json!({"conversation_id": unknown}),
            "Conversation not found",
        ),
        (
            "conversationSendMessage",
            json!({"conversation_id": unknown, "content": "hi"}),
            "Invalid arguments for `conversationSendMessage`",
        ),
        (
            "conversationSendMessage",
            json!({"conversation_id": unknown, "content": []}),
            "`content` holds no message",
        ),
        (
            "conversationCreate",
            json!({}),
            "Invalid arguments for `conversationCreate`",
        ),
        (
            "conversationsList",
            json!({"cursor": "page-2"}),
            "Invalid cursor `page-2`",
        ),
    ];
    for (tool, args, expected) in cases {
        let result = mcp.result(mcp.call(tool, args.clone()));
        assert_eq!(result["isError"], true, "{tool} {args}: {result}");
        assert!(
            text_of(&result).starts_with(expected),
            "{tool} {args}: {result}"
        );
    }
    assert!(mcp.client.notifications(INITIAL_STATE).is_empty());
    let listed = mcp.result(mcp.call("conversationsList", json!({})));
    assert_eq!(listed["structuredContent"], json!({"conversations": []}));
}

#[test]
fn a_conversation_open_in_another_process_is_refused_by_name() {
    let mcp = Mcp::start();
    let conversation = create(&mcp, json!({"prompt": ""}));

    let mut command = mcp.home.command(DEPUTY);
    command.arg("mcp-server").env("HOME", mcp.home.path());
    let other = StdioClient::spawn(command);
    McpSession::initialize(&other, json!({}));
    let id = other.request(
        "tools/call",
        json!({"name": "conversationStream", "arguments": {"conversation_id": conversation}}),
    );
    let response = other.wait_response(id, WAIT).unwrap();
    let result = &response["result"];
    assert_eq!(result["isError"], true, "{result}");
    assert!(
        text_of(result).contains("open in another process"),
        "{result}"
    );
    assert!(text_of(result).contains(&conversation), "{result}");

    // Both servers keep serving.
    let listed = other.wait_response(
        other.request(
            "tools/call",
            json!({"name": "conversationsList", "arguments": {}}),
        ),
        WAIT,
    );
    assert!(listed.is_ok(), "{listed:?}");
    connect(&mcp, &conversation);
    other.close_stdin();
    assert!(other.wait_exit(EXIT_WAIT).is_some());
}

#[test]
fn image_parts_of_a_message_reach_the_model_and_a_malformed_one_is_refused() {
    const PNG: &[u8] =
        b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";
    const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJ";
    let mcp = Mcp::start();
    std::fs::write(mcp.home.workspace().join("shot.png"), PNG).unwrap();
    let conversation = create(&mcp, json!({"prompt": ""}));
    let refused = mcp.result(mcp.call(
        "conversationSendMessage",
        json!({"conversation_id": conversation, "content": [{"type": "image"}]}),
    ));
    assert_eq!(refused["isError"], true, "{refused}");
    assert!(text_of(&refused).contains("image_url"), "{refused}");

    mcp.model
        .push(MockResponse::text_turn("Same picture twice."));
    let sent = mcp.result(mcp.call(
        "conversationSendMessage",
        json!({"conversation_id": conversation, "content": [
            {"type": "text", "text": "compare"},
            {"type": "image", "path": "shot.png"},
            {"type": "image", "data": PNG_BASE64, "mimeType": "image/png"},
        ]}),
    ));
    assert_eq!(sent["structuredContent"], json!({"status": "ok"}), "{sent}");
    wait_turns_ended(&mcp, &conversation, 1);
    let requests = mcp.model.requests();
    assert_eq!(requests.len(), 1);
    let url = format!("data:image/png;base64,{PNG_BASE64}");
    assert_eq!(
        requests[0].body["input"]
            .as_array()
            .unwrap()
            .last()
            .unwrap(),
        &json!({"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "compare"},
            {"type": "input_image", "image_url": url},
            {"type": "input_image", "image_url": url},
        ]})
    );
}
