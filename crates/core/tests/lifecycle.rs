//! A thread's life: turns queue behind each other, interrupts name their turn, idle
//! threads are unloaded and come back from disk with their whole event log.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::sync::Arc;
use std::time::Duration;

use deputy_core::config::ConfigLayers;
use deputy_core::rollout::SessionSource;
use deputy_core::{Thread, ThreadManager};
use deputy_protocol::{InputItem, ThreadEvent, ThreadEventMsg, TurnAbortReason};
use deputy_test_support::{MockModelServer, MockResponse, TestHome};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(30);

fn layers(home: &TestHome) -> ConfigLayers {
    let mut layers = ConfigLayers::new(home.path().to_path_buf());
    layers.overrides.cwd = Some(home.workspace().to_path_buf());
    layers
}

fn text(text: &str) -> Vec<InputItem> {
    vec![InputItem::Text { text: text.into() }]
}

/// Reads `thread`'s log after `after` until `stop` holds for an event; returns what was read.
async fn read_until(
    thread: &Thread,
    after: u64,
    stop: impl Fn(&ThreadEvent) -> bool,
) -> Vec<Arc<ThreadEvent>> {
    let mut events = thread.subscribe(after);
    let mut seen = Vec::new();
    let read = async {
        while let Some(event) = events.next().await {
            let done = stop(&event);
            seen.push(event);
            if done {
                return;
            }
        }
    };
    tokio::time::timeout(WAIT, read)
        .await
        .expect("the awaited event came");
    seen
}

fn ends(turn_id: &str) -> impl Fn(&ThreadEvent) -> bool + '_ {
    move |event| event.turn_id.as_deref() == Some(turn_id) && event.msg.ends_turn()
}

/// A model turn that runs `sleep 30`.
fn sleeping() -> MockResponse {
    MockResponse::function_call_turn(
        "call-sleep",
        "shell",
        json!({"command": ["sleep", "30"], "timeout_ms": 60_000}),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_sent_while_another_runs_waits_for_it_then_runs() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    server.push_all([
        MockResponse::text_turn("first"),
        MockResponse::text_turn("second"),
    ]);
    let manager = ThreadManager::new(None, SessionSource::Exec);
    let thread = manager
        .start(layers(&home).load().expect("config"))
        .await
        .expect("start");

    let first = thread.submit_turn("a".into(), text("one")).expect("submit");
    let second = thread.submit_turn("b".into(), text("two")).expect("submit");
    assert_ne!(first, second, "every turn gets its own id");
    let events = read_until(&thread, 0, ends(&second)).await;

    let turn_events: Vec<(&str, &str)> = events
        .iter()
        .filter_map(|e| match &e.msg {
            ThreadEventMsg::TurnStarted(_) => Some((e.turn_id.as_deref()?, "started")),
            ThreadEventMsg::TurnComplete(_) => Some((e.turn_id.as_deref()?, "complete")),
            _ => None,
        })
        .collect();
    assert_eq!(
        turn_events,
        [
            (first.as_str(), "started"),
            (first.as_str(), "complete"),
            (second.as_str(), "started"),
            (second.as_str(), "complete")
        ]
    );
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=seqs.len() as u64).collect::<Vec<_>>());
    manager.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_names_its_turn_and_a_stale_one_changes_nothing() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    server.push_all([
        MockResponse::text_turn("done quickly"),
        sleeping(),
        MockResponse::text_turn("after the sleep"),
        MockResponse::text_turn("third"),
    ]);
    let manager = ThreadManager::new(None, SessionSource::Exec);
    let thread = manager
        .start(layers(&home).load().expect("config"))
        .await
        .expect("start");

    let quick = thread.submit_turn("a".into(), text("one")).expect("submit");
    read_until(&thread, 0, ends(&quick)).await;
    let slow = thread.submit_turn("b".into(), text("two")).expect("submit");
    let queued = thread
        .submit_turn("c".into(), text("three"))
        .expect("submit");
    let before = thread.last_seq();
    read_until(&thread, before, |e| {
        matches!(&e.msg, ThreadEventMsg::ItemUpdated(_)) && e.turn_id.as_deref() == Some(&slow)
    })
    .await;

    // The finished turn's interrupt is stale: the sleeping turn goes on.
    thread.interrupt(&quick).expect("interrupt");
    // The queued turn's interrupt ends it without running it.
    thread.interrupt(&queued).expect("interrupt");
    let events = read_until(&thread, before, ends(&queued)).await;
    let aborted = events.last().expect("an end");
    assert_eq!(aborted.turn_id.as_deref(), Some(queued.as_str()));
    assert!(matches!(
        &aborted.msg,
        ThreadEventMsg::TurnAborted(a) if a.reason == TurnAbortReason::Interrupted
    ));
    assert!(
        !events
            .iter()
            .any(|e| e.turn_id.as_deref() == Some(queued.as_str())
                && matches!(e.msg, ThreadEventMsg::TurnStarted(_)))
    );
    assert_eq!(thread.active_turn().as_deref(), Some(slow.as_str()));

    thread.interrupt(&slow).expect("interrupt");
    let events = read_until(&thread, before, ends(&slow)).await;
    assert!(matches!(
        &events.last().expect("an end").msg,
        ThreadEventMsg::TurnAborted(_)
    ));
    assert_eq!(thread.active_turn(), None);
    assert!(!thread.is_busy());
    // Three model requests: the quick turn, the sleeping turn, nothing for the queued one.
    assert_eq!(server.request_count(), 2);
    manager.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_thread_is_unloaded_and_comes_back_from_disk_with_its_whole_log() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    home.write_config(&format!(
        "thread_idle_unload_sec = 1\n{}",
        TestHome::default_config(&server.base_url())
    ));
    server.push_all([
        MockResponse::function_call_turn(
            "call-echo",
            "shell",
            json!({"command": ["echo", "hello"]}),
        ),
        MockResponse::text_turn("said hello"),
    ]);
    let layers = layers(&home);
    let manager = ThreadManager::new(None, SessionSource::Exec);
    let thread = manager
        .start(layers.load().expect("config"))
        .await
        .expect("start");
    let id = thread.id().to_string();
    let turn = thread
        .submit_turn("a".into(), text("say hello"))
        .expect("submit");
    let live = read_until(&thread, 0, ends(&turn)).await;
    drop(thread);

    // Unloaded once idle: the loop stops and the manager forgets it.
    let gone = async {
        while manager.get(&id).is_some() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    tokio::time::timeout(WAIT, gone)
        .await
        .expect("the idle thread was unloaded");

    let (resumed, before) = manager.open(&id, &layers).await.expect("resume");
    let before = before.expect("resumed from disk");
    let replayed = read_until(&resumed, 0, |e| e.seq > before).await;
    // Everything but the streaming deltas comes back, numbered as it was; then the
    // unload's `shutdown_complete` and the resumed thread's new `session_configured`.
    let kept: Vec<&ThreadEvent> = live
        .iter()
        .map(Arc::as_ref)
        .filter(|e| !e.msg.is_delta())
        .collect();
    let (old, new) = replayed.split_at(kept.len());
    assert_eq!(old.iter().map(Arc::as_ref).collect::<Vec<_>>(), kept);
    assert_eq!(new.len(), 2, "{new:?}");
    assert!(matches!(new[0].msg, ThreadEventMsg::ShutdownComplete));
    assert_eq!(new[0].seq, before);
    assert!(matches!(new[1].msg, ThreadEventMsg::SessionConfigured(_)));
    assert_eq!(new[1].seq, before + 1);
    manager.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_thread_stops_and_resumes_on_next_use() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    let layers = layers(&home);
    let manager = ThreadManager::new(None, SessionSource::Exec);
    let thread = manager
        .start(layers.load().expect("config"))
        .await
        .expect("start");
    let id = thread.id().to_string();
    let mut events = thread.subscribe(thread.last_seq());
    assert!(manager.close_thread(&id).await);
    assert!(manager.get(&id).is_none());
    // The subscriber hears the thread stop, then the log ends.
    let last = events.next().await.expect("an event");
    assert!(matches!(last.msg, ThreadEventMsg::ShutdownComplete));
    assert!(events.next().await.is_none());
    assert!(thread.submit_turn("x".into(), text("hi")).is_err());
    assert!(!manager.close_thread(&id).await);

    let (again, resumed) = manager.open(&id, &layers).await.expect("resume");
    assert!(resumed.is_some());
    assert!(!Arc::ptr_eq(&again, &thread));
    manager.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turns_overrides_stay_for_later_turns_and_across_a_restart() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    std::fs::create_dir(home.workspace().join("sub")).expect("mkdir");
    server.push_all([
        MockResponse::text_turn("one"),
        MockResponse::text_turn("two"),
        MockResponse::text_turn("three"),
        MockResponse::text_turn("four"),
    ]);
    let layers = layers(&home);
    let manager = ThreadManager::new(None, SessionSource::Exec);
    let thread = manager
        .start(layers.load().expect("config"))
        .await
        .expect("start");
    let id = thread.id().to_string();
    let one = thread.submit_turn("1".into(), text("one")).expect("submit");
    read_until(&thread, 0, ends(&one)).await;
    let overrides = deputy_protocol::TurnOverrides {
        cwd: Some("sub".into()),
        model: Some("other-model".into()),
        approval_policy: Some(deputy_protocol::AskForApproval::Untrusted),
        sandbox_policy: None,
    };
    let two = thread
        .submit_input(
            "2".into(),
            deputy_core::TurnInput {
                items: text("two"),
                overrides: Some(overrides),
                output_schema: None,
            },
        )
        .expect("submit");
    read_until(&thread, 0, ends(&two)).await;
    let three = thread
        .submit_turn("3".into(), text("three"))
        .expect("submit");
    read_until(&thread, 0, ends(&three)).await;
    manager.shutdown_all().await;
    drop(thread);

    // Resumed by a caller that names no settings of its own.
    let again = ThreadManager::new(None, SessionSource::Exec);
    let plain = ConfigLayers::new(home.path().to_path_buf());
    let (resumed, _) = again.open(&id, &plain).await.expect("resume");
    let config = resumed.config();
    assert_eq!(config.model, "other-model");
    assert_eq!(
        config.approval_policy,
        deputy_protocol::AskForApproval::Untrusted
    );
    assert!(config.cwd.ends_with("sub"), "{}", config.cwd.display());
    let four = resumed
        .submit_turn("4".into(), text("four"))
        .expect("submit");
    read_until(&resumed, 0, ends(&four)).await;
    again.shutdown_all().await;

    let models: Vec<String> = server
        .requests()
        .iter()
        .map(|r| r.body["model"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        models,
        ["mock-model", "other-model", "other-model", "other-model"]
    );
}
