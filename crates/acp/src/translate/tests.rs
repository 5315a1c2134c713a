use std::time::Duration;

use deputy_protocol::{
    AgentMessageItem, CommandExecutionItem, FileChangeItem, ItemDeltaEvent, ItemEvent,
    UserMessageItem,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::*;

fn event(msg: ThreadEventMsg) -> ThreadEvent {
    ThreadEvent {
        seq: 1,
        thread_id: "t".into(),
        turn_id: Some("u".into()),
        submission_id: "s".into(),
        msg,
    }
}

fn wire(updates: Vec<SessionUpdate>) -> Vec<Value> {
    updates
        .into_iter()
        .map(|u| serde_json::to_value(u).unwrap())
        .collect()
}

fn agent_message(text: &str) -> ThreadItem {
    ThreadItem::AgentMessage(AgentMessageItem {
        id: "m".into(),
        text: text.into(),
    })
}

#[test]
fn a_message_is_sent_once_whether_or_not_it_streamed() {
    let mut mapper = UpdateMapper::live();
    let delta = event(ThreadEventMsg::AgentMessageDelta(ItemDeltaEvent {
        item_id: "m".into(),
        delta: "Hel".into(),
    }));
    let done = event(ThreadEventMsg::ItemCompleted(ItemEvent {
        item: agent_message("Hello"),
    }));
    let chunk = |text: &str| json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}});
    assert_eq!(wire(mapper.map(&delta)), [chunk("Hel")]);
    assert_eq!(wire(mapper.map(&done)), [chunk("lo")], "only the rest");
    // Replayed from a rollout, which keeps no deltas: the whole text.
    assert_eq!(wire(UpdateMapper::replay().map(&done)), [chunk("Hello")]);
}

#[test]
fn user_messages_are_told_only_when_replaying() {
    let user = event(ThreadEventMsg::ItemCompleted(ItemEvent {
        item: ThreadItem::UserMessage(UserMessageItem {
            id: "u".into(),
            text: "hi".into(),
        }),
    }));
    assert_eq!(wire(UpdateMapper::live().map(&user)), Vec::<Value>::new());
    assert_eq!(
        wire(UpdateMapper::replay().map(&user)),
        [json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}})]
    );
}

#[test]
fn a_declined_command_fails_with_what_the_model_was_told() {
    let mut cmd = CommandExecutionItem::asked(
        "c".into(),
        "call".into(),
        vec!["bash".into(), "-lc".into(), "cat a.txt".into()],
        "/w".into(),
        vec![ParsedCommand::Read {
            cmd: "cat a.txt".into(),
            name: "a.txt".into(),
            path: "a.txt".into(),
        }],
    );
    let started = wire(
        UpdateMapper::live().map(&event(ThreadEventMsg::ItemStarted(ItemEvent {
            item: ThreadItem::CommandExecution(Box::new(cmd.clone())),
        }))),
    );
    assert_eq!(started[0]["title"], "cat a.txt");
    assert_eq!(started[0]["kind"], "read");
    assert_eq!(started[0]["locations"], json!([{"path": "/w/a.txt"}]));
    cmd.status = CommandExecutionStatus::Declined;
    cmd.formatted_output = "the user declined".into();
    cmd.duration = Some(Duration::ZERO);
    let done = wire(
        UpdateMapper::live().map(&event(ThreadEventMsg::ItemCompleted(ItemEvent {
            item: ThreadItem::CommandExecution(Box::new(cmd)),
        }))),
    );
    assert_eq!(done[0]["status"], "failed");
    assert_eq!(
        done[0]["content"][0]["content"]["text"],
        "the user declined"
    );
}

#[test]
fn a_patch_is_an_edit_with_a_diff_per_file() {
    let changes = BTreeMap::from([
        (
            PathBuf::from("/w/new.txt"),
            FileChange::Add {
                content: "new\n".into(),
            },
        ),
        (
            PathBuf::from("/w/old.txt"),
            FileChange::Delete {
                content: "old\n".into(),
            },
        ),
        (
            PathBuf::from("/w/lib.rs"),
            FileChange::Update {
                unified_diff: "--- a/lib.rs\n+++ b/lib.rs\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n@@ -9,2 +9,2 @@\n x\n-y\n+Y\n\\ No newline at end of file\n".into(),
                move_path: Some("/w/main.rs".into()),
            },
        ),
    ]);
    let item = ThreadItem::FileChange(Box::new(FileChangeItem {
        id: "p".into(),
        call_id: "call".into(),
        changes,
        status: PatchApplyStatus::InProgress,
        started: false,
        auto_approved: false,
        stdout: String::new(),
        stderr: String::new(),
    }));
    let started =
        wire(UpdateMapper::live().map(&event(ThreadEventMsg::ItemStarted(ItemEvent { item }))));
    let call = &started[0];
    assert_eq!(call["kind"], "edit");
    assert_eq!(
        call["title"],
        "Add new.txt; edit lib.rs → main.rs; delete old.txt"
    );
    assert_eq!(
        call["locations"],
        json!([{"path": "/w/main.rs"}, {"path": "/w/new.txt"}, {"path": "/w/old.txt"}])
    );
    assert_eq!(
        call["content"],
        json!([
            {"type": "diff", "path": "/w/main.rs", "oldText": "a\nb\nc\nx\ny\n", "newText": "a\nB\nc\nx\nY\n"},
            {"type": "diff", "path": "/w/new.txt", "newText": "new\n"},
            {"type": "diff", "path": "/w/old.txt", "oldText": "old\n", "newText": ""},
        ])
    );
}

#[test]
fn running_output_is_sent_as_its_bounded_tail() {
    let mut mapper = UpdateMapper::live();
    let big = "x".repeat(LIVE_OUTPUT_BYTES) + "end";
    let delta = event(ThreadEventMsg::CommandOutputDelta(
        deputy_protocol::CommandOutputDeltaEvent {
            item_id: "c".into(),
            call_id: "call".into(),
            stream: deputy_protocol::ExecOutputStream::Stdout,
            chunk: big.into_bytes(),
        },
    ));
    let sent = wire(mapper.map(&delta));
    let text = sent[0]["content"][0]["content"]["text"].as_str().unwrap();
    assert_eq!(text.len(), LIVE_OUTPUT_BYTES);
    assert!(text.ends_with("end"));
}
