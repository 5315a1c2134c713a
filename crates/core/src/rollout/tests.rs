use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use deputy_protocol::{
    AgentMessageItem, AskForApproval, ItemDeltaEvent, ItemEvent, ResponseItem, SandboxMode,
    SandboxPolicy, TaskCompleteEvent, ThreadEvent, ThreadEventMsg, ThreadItem, UserMessageItem,
};
use pretty_assertions::assert_eq;
use uuid::{NoContext, Timestamp, Uuid};

use super::*;

pub(crate) fn id_at(secs: u64) -> String {
    Uuid::new_v7(Timestamp::from_unix(NoContext, secs, 0)).to_string()
}

pub(crate) fn meta(id: &str, cwd: &Path) -> SessionMeta {
    SessionMeta {
        id: id.to_string(),
        timestamp: "2025-03-04T05:06:07.000Z".into(),
        cwd: cwd.to_path_buf(),
        model: "mock-model".into(),
        model_provider: "mock".into(),
        approval_policy: AskForApproval::Never,
        sandbox_mode: SandboxMode::WorkspaceWrite,
        sandbox_workspace_write: SandboxWorkspaceWrite {
            writable_roots: vec![PathBuf::from("/extra")],
            network_access: true,
            ..SandboxWorkspaceWrite::default()
        },
        base_instructions: Some("be brief".into()),
        developer_instructions: None,
        compact_prompt: None,
        include_plan_tool: false,
        cli_version: "0.1.0".into(),
        source: SessionSource::Exec,
        parent_thread_id: None,
    }
}

fn context(turn_id: &str) -> TurnContextRecord {
    TurnContextRecord {
        turn_id: turn_id.into(),
        cwd: "/w".into(),
        model: "mock-model".into(),
        approval_policy: AskForApproval::Never,
        sandbox_policy: SandboxPolicy::DangerFullAccess,
    }
}

fn event(seq: u64, msg: ThreadEventMsg) -> ThreadEvent {
    ThreadEvent {
        seq,
        thread_id: "t".into(),
        turn_id: Some("1".into()),
        submission_id: "1".into(),
        msg,
    }
}

pub(crate) fn user_message(seq: u64, text: String) -> ThreadEvent {
    event(
        seq,
        ThreadEventMsg::ItemCompleted(ItemEvent {
            item: ThreadItem::UserMessage(UserMessageItem {
                id: format!("item-{seq}"),
                text,
            }),
        }),
    )
}

fn call(call_id: &str) -> ResponseItem {
    ResponseItem::FunctionCall {
        id: None,
        name: "shell".into(),
        namespace: None,
        arguments: r#"{"command":["ls"]}"#.into(),
        call_id: call_id.into(),
    }
}

fn output(call_id: &str, text: &str) -> ResponseItem {
    ResponseItem::FunctionCallOutput {
        call_id: call_id.into(),
        output: text.into(),
    }
}

/// The recorder of a new rollout under `home` without history, for a thread created at
/// `secs`.
pub(crate) fn empty_rollout(home: &Path, secs: u64) -> RolloutRecorder {
    RolloutRecorder::create(home, &meta(&id_at(secs), Path::new("/w")), &[]).expect("create")
}

/// Every event an [`EventReplay`] of `path` by `index` with `decoders` threads and chunks
/// of `chunk_bytes` hands over, in order.
pub(crate) async fn replayed(
    path: &Path,
    index: &event_index::EventIndex,
    range: (u64, u64),
    decoders: usize,
    chunk_bytes: u64,
) -> Vec<ThreadEvent> {
    let len = std::fs::metadata(path).expect("stat").len();
    let mut replay = EventReplay::start_with(path, index, len, range, decoders, chunk_bytes);
    let mut events = Vec::new();
    while let Some(event) = replay.next().await {
        events.push(ThreadEvent::clone(&event.expect("event")));
    }
    events
}

/// A rollout with one finished turn that ran one command.
pub(crate) async fn one_turn(home: &Path, id: &str) -> RolloutRecorder {
    let recorder = RolloutRecorder::create(
        home,
        &meta(id, Path::new("/w")),
        &[ResponseItem::developer_text("env")],
    )
    .expect("create");
    recorder.record_turn_context(context("1"));
    recorder.record_event(&user_message(1, "list files".into()));
    recorder.record_items([&ResponseItem::user_text("list files")]);
    recorder.record_items([&call("c1"), &output("c1", "a.txt")]);
    recorder.record_items([&ResponseItem::assistant_text("one file")]);
    recorder.record_event(&event(
        2,
        ThreadEventMsg::TurnComplete(TaskCompleteEvent {
            turn_id: "1".into(),
            last_agent_message: Some("one file".into()),
            completed_at: None,
            duration_ms: None,
        }),
    ));
    recorder.sync().await.expect("sync");
    recorder
}

#[test]
fn rollout_path_is_dated_by_the_thread_id_in_utc() {
    // 2025-03-04T05:06:07Z
    let id = id_at(1_741_064_767);
    let path = rollout_path(Path::new("/h"), &id).expect("v7 id");
    assert_eq!(
        path,
        PathBuf::from(format!(
            "/h/sessions/2025/03/04/rollout-2025-03-04T05-06-07-{id}.jsonl"
        ))
    );
}

#[test]
fn ids_that_are_not_uuid_v7_are_not_found_and_never_reach_a_path() {
    let home = tempfile::tempdir().expect("tempdir");
    for id in [
        "../../etc/passwd",
        "",
        "6ba7b810-9dad-11d1-80b4-00c04fd430c8",
    ] {
        let err = find_rollout(home.path(), id).expect_err("not found");
        assert_eq!(
            err.to_string(),
            format!("Session not found for thread_id: {id}")
        );
    }
}

#[tokio::test]
async fn records_read_back_as_the_same_history_and_turns() {
    let home = tempfile::tempdir().expect("tempdir");
    let id = id_at(1_741_064_767);
    let recorder = one_turn(home.path(), &id).await;
    let path = find_rollout(home.path(), &id.to_uppercase()).expect("found by id");
    assert_eq!(path, recorder.path());
    let session = load_rollout(&path).expect("load");
    assert_eq!(session.meta, meta(&id, Path::new("/w")));
    assert_eq!(
        session.history,
        vec![
            ResponseItem::developer_text("env"),
            ResponseItem::user_text("list files"),
            call("c1"),
            output("c1", "a.txt"),
            ResponseItem::assistant_text("one file"),
        ]
    );
    assert_eq!(session.turns, 1);
    assert!(session.closed_calls.is_empty());
    assert!(session.warnings.is_empty(), "{:?}", session.warnings);
}

#[tokio::test]
async fn each_line_carries_a_utc_timestamp_a_type_and_a_payload() {
    let home = tempfile::tempdir().expect("tempdir");
    let recorder = one_turn(home.path(), &id_at(1_741_064_767)).await;
    let text = std::fs::read_to_string(recorder.path()).expect("read");
    let kinds: Vec<String> = text
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).expect("json line");
            let mut keys: Vec<&str> = value
                .as_object()
                .expect("object")
                .keys()
                .map(String::as_str)
                .collect();
            // In file order where serde_json keeps it (`preserve_order`), sorted otherwise.
            keys.sort_unstable();
            assert_eq!(keys, ["payload", "timestamp", "type"]);
            let ts = value["timestamp"].as_str().expect("timestamp");
            assert!(
                ts.len() == 24 && ts.ends_with('Z') && ts.as_bytes()[10] == b'T',
                "{ts}"
            );
            value["type"].as_str().expect("type").to_string()
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "session_meta",
            "response_item",
            "turn_context",
            "event",
            "response_item",
            "response_item",
            "response_item",
            "response_item",
            "event"
        ]
    );
    assert!(text.starts_with(r#"{"timestamp":""#));
    assert!(text.contains(r#""type":"session_meta","payload":{"id":""#));
    assert!(text.contains(r#""source":"exec""#));
}

#[tokio::test]
async fn streaming_deltas_are_not_persisted() {
    let home = tempfile::tempdir().expect("tempdir");
    let recorder = one_turn(home.path(), &id_at(1_741_064_767)).await;
    let before = std::fs::metadata(recorder.path()).expect("stat").len();
    recorder.record_event(&event(
        3,
        ThreadEventMsg::AgentMessageDelta(ItemDeltaEvent {
            item_id: "m".into(),
            delta: "x".into(),
        }),
    ));
    recorder.record_event(&event(
        4,
        ThreadEventMsg::ItemCompleted(ItemEvent {
            item: ThreadItem::AgentMessage(AgentMessageItem {
                id: "m".into(),
                text: "whole".into(),
            }),
        }),
    ));
    recorder.sync().await.expect("sync");
    let text = std::fs::read_to_string(recorder.path()).expect("read");
    assert!(!text.contains("agent_message_delta"));
    let added = &text[before as usize..];
    assert_eq!(added.lines().count(), 1);
    assert!(added.contains(r#""type":"agent_message","id":"m","text":"whole""#));
    let read = read_events(recorder.path(), 0, u64::MAX).expect("read events");
    assert_eq!(read.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 4]);
}

#[tokio::test]
async fn the_file_grows_by_exactly_each_appended_line() {
    let home = tempfile::tempdir().expect("tempdir");
    let recorder = one_turn(home.path(), &id_at(1_741_064_767)).await;
    let mut len = std::fs::metadata(recorder.path()).expect("stat").len();
    for n in 0..50 {
        let item = ResponseItem::assistant_text("x".repeat(n * 10));
        recorder.record_items([&item]);
        recorder.flush().await.expect("flush");
        let line = encode_line(&RolloutItem::ResponseItem(item));
        let now = std::fs::metadata(recorder.path()).expect("stat").len();
        assert_eq!(now - len, line.len() as u64, "append {n}");
        len = now;
    }
}

#[tokio::test]
async fn a_second_open_of_a_live_rollout_is_refused_until_the_first_closes() {
    let home = tempfile::tempdir().expect("tempdir");
    let recorder = one_turn(home.path(), &id_at(1_741_064_767)).await;
    let path = recorder.path().to_path_buf();
    let err = RolloutRecorder::resume(&path, Vec::new).expect_err("locked");
    assert!(matches!(err, RolloutError::Locked));
    assert_eq!(err.to_string(), "thread is open in another process");
    drop(recorder);
    // The writer task closes the file once its queue is drained.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        match RolloutRecorder::resume(&path, Vec::new) {
            Ok(_) => break,
            Err(RolloutError::Locked) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Err(err) => panic!("resume after close: {err}"),
        }
    }
}

#[tokio::test]
async fn a_torn_last_line_is_skipped_with_a_warning_and_cut_off_on_resume() {
    let home = tempfile::tempdir().expect("tempdir");
    let recorder = one_turn(home.path(), &id_at(1_741_064_767)).await;
    let path = recorder.path().to_path_buf();
    drop(recorder);
    let intact = std::fs::read(&path).expect("read");
    let mut torn = intact.clone();
    torn.extend_from_slice(br#"{"timestamp":"2025-03-04T05:06:09.000Z","type":"response_item","payload":{"type":"mess"#);
    std::fs::write(&path, &torn).expect("write");

    let loaded = load_rollout(&path).expect("load");
    assert_eq!(loaded.history.len(), 5);
    assert_eq!(loaded.warnings.len(), 1);
    assert!(
        loaded.warnings[0].contains("torn last line"),
        "{:?}",
        loaded.warnings
    );

    let (resumed, session) = reopen(&path).await;
    assert_eq!(session.history, loaded.history);
    resumed.record_items([&ResponseItem::user_text("next")]);
    resumed.sync().await.expect("sync");
    let text = std::fs::read(&path).expect("read");
    assert_eq!(&text[..intact.len()], &intact[..]);
    let again = load_rollout(&path).expect("load again");
    assert!(again.warnings.is_empty(), "{:?}", again.warnings);
    assert_eq!(again.history.last(), Some(&ResponseItem::user_text("next")));
}

#[tokio::test]
async fn resuming_counts_events_by_seq_and_still_finds_a_torn_last_event() {
    let home = tempfile::tempdir().expect("tempdir");
    let recorder = one_turn(home.path(), &id_at(1_741_064_767)).await;
    let path = recorder.path().to_path_buf();
    drop(recorder);
    let intact = std::fs::read(&path).expect("read");
    assert_eq!(load_rollout(&path).expect("load").last_seq, 2);

    let next = encode_event_line(&user_message(3, "one more".into()));
    let mut torn = intact.clone();
    torn.extend_from_slice(&next.as_bytes()[..next.len() / 2]);
    std::fs::write(&path, &torn).expect("write");
    let loaded = load_rollout(&path).expect("load");
    assert_eq!(loaded.last_seq, 2, "a torn event does not count");
    assert!(
        loaded.warnings.len() == 1 && loaded.warnings[0].contains("torn last line"),
        "{:?}",
        loaded.warnings
    );
    assert_eq!(loaded.tail, reader::Tail::Torn(intact.len() as u64));

    let mut whole = intact;
    whole.extend_from_slice(next.trim_end().as_bytes());
    std::fs::write(&path, &whole).expect("write");
    let loaded = load_rollout(&path).expect("load");
    assert_eq!(loaded.last_seq, 3);
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    assert_eq!(loaded.tail, reader::Tail::MissingNewline);
}

#[tokio::test]
async fn a_whole_last_line_without_newline_is_kept_and_continued_on_a_new_line() {
    let home = tempfile::tempdir().expect("tempdir");
    let recorder = one_turn(home.path(), &id_at(1_741_064_767)).await;
    let path = recorder.path().to_path_buf();
    drop(recorder);
    let mut text = std::fs::read(&path).expect("read");
    assert_eq!(text.pop(), Some(b'\n'));
    std::fs::write(&path, &text).expect("write");
    let (resumed, _) = reopen(&path).await;
    resumed.record_items([&ResponseItem::user_text("next")]);
    resumed.sync().await.expect("sync");
    let again = load_rollout(&path).expect("load");
    assert!(again.warnings.is_empty(), "{:?}", again.warnings);
    assert_eq!(again.history.len(), 6);
}

#[test]
fn an_unreadable_middle_line_is_skipped_with_a_warning() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("rollout.jsonl");
    let lines = [
        encode_line(&RolloutItem::SessionMeta(meta(&id_at(1), Path::new("/w")))),
        "{not json at all\n".to_string(),
        r#"{"timestamp":"t","type":"compacted","payload":{}}"#.to_string() + "\n",
        encode_line(&RolloutItem::ResponseItem(ResponseItem::user_text("hi"))),
    ];
    std::fs::write(&path, lines.concat()).expect("write");
    let session = load_rollout(&path).expect("load");
    assert_eq!(session.history, vec![ResponseItem::user_text("hi")]);
    assert_eq!(session.warnings.len(), 2, "{:?}", session.warnings);
    assert!(session.warnings[0].contains("line 2"));
    assert!(session.warnings[1].contains("line 3"));
}

#[test]
fn a_rollout_without_session_meta_is_corrupt() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("rollout.jsonl");
    std::fs::write(&path, "garbage\n").expect("write");
    let err = load_rollout(&path).expect_err("corrupt");
    assert!(matches!(err, RolloutError::Corrupt { .. }), "{err}");
    assert!(err.to_string().contains("no readable session_meta"));
}

#[tokio::test]
async fn calls_left_unanswered_by_a_crash_get_an_output_once() {
    let home = tempfile::tempdir().expect("tempdir");
    let recorder = one_turn(home.path(), &id_at(1_741_064_767)).await;
    recorder.record_turn_context(context("2"));
    recorder.record_items([&ResponseItem::user_text("sleep"), &call("c2")]);
    recorder.sync().await.expect("sync");
    let path = recorder.path().to_path_buf();
    drop(recorder);

    let (resumed, session) = reopen(&path).await;
    let closing = output("c2", reader::UNFINISHED_CALL_OUTPUT);
    assert_eq!(session.closed_calls, vec![closing.clone()]);
    assert_eq!(session.history.last(), Some(&closing));
    assert_eq!(session.turns, 2);
    drop(resumed);

    let reloaded = load_rollout(&path).expect("reload");
    assert!(reloaded.closed_calls.is_empty());
    assert_eq!(reloaded.history, session.history);
}

#[tokio::test]
async fn sessions_are_listed_newest_first_with_preview_turns_and_cwd_filter() {
    let home = tempfile::tempdir().expect("tempdir");
    let work = tempfile::tempdir().expect("tempdir");
    let cwd = work.path().canonicalize().expect("canonical");
    let mut made = Vec::new();
    for (n, secs) in [1_700_000_000u64, 1_710_000_000, 1_720_000_000]
        .iter()
        .enumerate()
    {
        let id = id_at(*secs);
        let dir = if n == 1 {
            Path::new("/elsewhere")
        } else {
            cwd.as_path()
        };
        let recorder = RolloutRecorder::create(home.path(), &meta(&id, dir), &[]).expect("create");
        for turn in 0..=n {
            recorder.record_turn_context(context(&turn.to_string()));
            recorder.record_event(&user_message(
                turn as u64 + 1,
                format!("prompt {n}.{turn}\nwith a second line {}", "y".repeat(80)),
            ));
        }
        recorder.sync().await.expect("sync");
        // Make the oldest id the most recently updated.
        let mtime = SystemTime::UNIX_EPOCH + Duration::from_secs(2_000_000_000 - secs);
        std::fs::File::options()
            .write(true)
            .open(recorder.path())
            .and_then(|f| f.set_modified(mtime))
            .expect("set mtime");
        made.push((id, recorder.path().to_path_buf()));
    }

    let all = list_sessions(home.path(), None, 10).expect("list");
    let ids: Vec<&str> = all.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, [&made[0].0, &made[1].0, &made[2].0]);
    assert_eq!(all[0].path, made[0].1);
    assert_eq!(all[2].turns, 3);
    assert_eq!(
        all[0].first_prompt_preview,
        format!("prompt 0.0 with a second line {}…", "y".repeat(30))
    );
    assert_eq!(all[0].first_prompt_preview.chars().count(), 61);

    let here = list_sessions(home.path(), Some(&cwd), 10).expect("list cwd");
    let ids: Vec<&str> = here.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, [&made[0].0, &made[2].0]);
    assert_eq!(list_sessions(home.path(), None, 1).expect("limit").len(), 1);
    let empty = tempfile::tempdir().expect("tempdir");
    assert!(
        list_sessions(empty.path(), None, 10)
            .expect("empty")
            .is_empty()
    );
}

#[tokio::test]
async fn sessions_listed_by_creation_page_newest_first_whatever_was_written_last() {
    let home = tempfile::tempdir().expect("tempdir");
    let mut ids = Vec::new();
    for secs in [1_700_000_000u64, 1_710_000_000, 1_720_000_000] {
        let id = id_at(secs);
        let recorder =
            RolloutRecorder::create(home.path(), &meta(&id, Path::new("/w")), &[]).expect("create");
        recorder.record_event(&user_message(1, format!("  about\n{secs}  ")));
        recorder.sync().await.expect("sync");
        // The oldest is the most recently written: creation order must win.
        let mtime = SystemTime::UNIX_EPOCH + Duration::from_secs(2_000_000_000 - secs);
        std::fs::File::options()
            .write(true)
            .open(recorder.path())
            .and_then(|f| f.set_modified(mtime))
            .expect("set mtime");
        ids.push(id);
    }
    ids.reverse();

    let first = list_sessions_by_creation(home.path(), None, 2).expect("first page");
    let listed: Vec<&str> = first.sessions.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(listed, [&ids[0], &ids[1]]);
    assert!(first.more);
    assert_eq!(first.sessions[0].first_prompt_preview, "about 1720000000");

    let cursor = ids[1].to_uppercase();
    let second = list_sessions_by_creation(home.path(), Some(&cursor), 2).expect("second page");
    let listed: Vec<&str> = second.sessions.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(listed, [&ids[2]]);
    assert!(!second.more);

    let all = list_sessions_by_creation(home.path(), None, 3).expect("all");
    assert_eq!(all.sessions.len(), 3);
    assert!(!all.more);
}

#[tokio::test]
async fn an_archived_thread_leaves_listings_and_lookups_but_keeps_its_file() {
    let home = tempfile::tempdir().expect("tempdir");
    let id = id_at(1_700_000_000);
    let recorder = one_turn(home.path(), &id).await;
    let before = std::fs::read(recorder.path()).expect("read");

    assert!(matches!(
        archive_rollout(home.path(), &id),
        Err(RolloutError::Locked)
    ));
    recorder.close().await.expect("close");
    let archived = archive_rollout(home.path(), &id).expect("archive");

    assert_eq!(
        archived.parent(),
        Some(archived_sessions_dir(home.path()).as_path())
    );
    assert_eq!(std::fs::read(&archived).expect("read archived"), before);
    assert!(matches!(
        find_rollout(home.path(), &id),
        Err(RolloutError::NotFound(_))
    ));
    assert!(
        list_sessions(home.path(), None, 10)
            .expect("list")
            .is_empty()
    );
    let live = list_sessions_by_creation(home.path(), None, 10).expect("list live");
    assert!(live.sessions.is_empty());
    let gone = list_by_creation(
        home.path(),
        CreationQuery {
            archived: true,
            limit: 10,
            ..CreationQuery::default()
        },
    )
    .expect("list archived");
    assert_eq!(gone.sessions.len(), 1);
    assert_eq!(gone.sessions[0].id, id);
    assert_eq!(gone.sessions[0].source, SessionSource::Exec);
    assert_eq!(gone.sessions[0].model_provider, "mock");
    let created = gone.sessions[0]
        .created
        .duration_since(SystemTime::UNIX_EPOCH)
        .expect("after the epoch");
    assert_eq!(created.as_secs(), 1_700_000_000);
    assert!(matches!(
        archive_rollout(home.path(), &id),
        Err(RolloutError::NotFound(_))
    ));
}

#[tokio::test]
async fn a_listing_by_creation_can_keep_to_one_working_directory() {
    let home = tempfile::tempdir().expect("tempdir");
    let mut ids = Vec::new();
    for (secs, cwd) in [
        (1_700_000_000u64, "/a"),
        (1_710_000_000, "/b"),
        (1_720_000_000, "/a"),
    ] {
        let id = id_at(secs);
        let recorder =
            RolloutRecorder::create(home.path(), &meta(&id, Path::new(cwd)), &[]).expect("create");
        recorder.close().await.expect("close");
        ids.push(id);
    }
    let page = |before: Option<&str>| {
        list_by_creation(
            home.path(),
            CreationQuery {
                cwd: Some(Path::new("/a")),
                before,
                limit: 1,
                ..CreationQuery::default()
            },
        )
        .expect("list")
    };
    let first = page(None);
    assert_eq!(first.sessions[0].id, ids[2]);
    assert!(first.more, "another session in /a remains");
    let second = page(Some(&ids[2]));
    assert_eq!(second.sessions[0].id, ids[0]);
    assert!(!second.more, "only a session elsewhere remains");
}

/// Resumes `path`, waiting for an earlier recorder of it to close.
pub(crate) async fn reopen(path: &Path) -> (RolloutRecorder, ResumedSession) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        match RolloutRecorder::resume(path, Vec::new) {
            Ok(pair) => return pair,
            Err(RolloutError::Locked) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Err(err) => panic!("resume: {err}"),
        }
    }
}
