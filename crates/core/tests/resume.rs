//! Threads resumed from their rollout: same history, same settings, one owner at a time.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::io::Write as _;
use std::sync::Arc;
use std::time::Duration;

use deputy_core::config::ConfigLayers;
use deputy_core::rollout::{SessionSource, find_rollout};
use deputy_core::{ResumeError, Thread, ThreadManager};
use deputy_protocol::{SessionConfiguredEvent, ThreadEventMsg};
use deputy_test_support::{MockModelServer, MockResponse, SseEvent, TestHome, responses};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn layers(home: &TestHome) -> ConfigLayers {
    let mut layers = ConfigLayers::new(home.path().to_path_buf());
    layers.overrides.cwd = Some(home.workspace().to_path_buf());
    layers
}

/// Runs one turn to its end and returns the turn-ending event.
async fn turn(thread: &Arc<Thread>, sub_id: &str, prompt: &str) -> ThreadEventMsg {
    let mut events = thread
        .start_turn(sub_id.to_string(), prompt.to_string())
        .expect("start turn");
    let mut last = None;
    while let Some(event) = events.next().await {
        last = Some(event.msg.clone());
    }
    last.expect("the turn ended with an event")
}

fn new_manager() -> ThreadManager {
    ThreadManager::new(None, SessionSource::Mcp)
}

/// The `session_configured` event a thread's log holds after `after_seq`.
async fn configured_event(thread: &Thread, after_seq: u64) -> SessionConfiguredEvent {
    let mut events = thread.subscribe(after_seq);
    loop {
        let event = events
            .next()
            .await
            .expect("the log has a session_configured");
        if let ThreadEventMsg::SessionConfigured(configured) = &event.msg {
            return SessionConfiguredEvent::clone(configured);
        }
    }
}

/// A hosted tool's call, an item deputy keeps without interpreting it.
fn web_search_call() -> Value {
    json!({"type": "web_search_call", "status": "completed",
           "action": {"type": "search", "query": "deputy plans"}})
}

fn plan_turn() -> [MockResponse; 2] {
    let mut searched = web_search_call();
    searched["id"] = json!("ws_1");
    [
        MockResponse::function_call_turn(
            "call-1",
            "update_plan",
            json!({"plan": [{"step": "look", "status": "completed"}]}),
        ),
        MockResponse::sse(vec![
            responses::created("r2"),
            SseEvent::new("response.output_item.done", json!({"item": searched})),
            responses::message("m2", "Planned."),
            responses::completed("r2"),
        ]),
    ]
}

fn body(server: &MockModelServer, n: usize) -> Value {
    server.requests()[n].body.clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_thread_sends_the_model_what_an_uninterrupted_one_would() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    let layers = layers(&home);

    // Control: both turns on one live thread.
    server.push_all(plan_turn());
    server.push(MockResponse::text_turn("Bye."));
    let manager = new_manager();
    let thread = manager
        .start(layers.load().expect("config"))
        .await
        .expect("start");
    assert!(matches!(
        turn(&thread, "1", "make a plan").await,
        ThreadEventMsg::TurnComplete(_)
    ));
    assert!(matches!(
        turn(&thread, "2", "thanks").await,
        ThreadEventMsg::TurnComplete(_)
    ));
    manager.shutdown_all().await;

    // Restart: turn 1, every thread shut down, turn 2 on a new manager.
    server.push_all(plan_turn());
    server.push(MockResponse::text_turn("Bye."));
    let first = new_manager();
    let thread = first
        .start(layers.load().expect("config"))
        .await
        .expect("start");
    let configured = configured_event(&thread, 0).await;
    let id = thread.id().to_string();
    assert_eq!(
        configured.rollout_path.as_deref(),
        Some(find_rollout(home.path(), &id).expect("rollout").as_path())
    );
    assert!(matches!(
        turn(&thread, "1", "make a plan").await,
        ThreadEventMsg::TurnComplete(_)
    ));
    first.shutdown_all().await;
    drop((thread, first));

    let second = new_manager();
    let (resumed, before) = second.open(&id, &layers).await.expect("resume");
    let configured = configured_event(&resumed, before.expect("resumed from disk")).await;
    assert_eq!(configured.session_id, id);
    assert_eq!(configured.history_entry_count, 6);
    assert!(matches!(
        turn(&resumed, "2", "thanks").await,
        ThreadEventMsg::TurnComplete(_)
    ));

    // The same request, but for the thread id each thread's requests carry as their
    // cache key.
    let mut control = body(&server, 2);
    let mut after_restart = body(&server, 5);
    assert_eq!(after_restart["prompt_cache_key"], id.as_str());
    assert_eq!(body(&server, 3)["prompt_cache_key"], id.as_str());
    for request in [&mut control, &mut after_restart] {
        request
            .as_object_mut()
            .expect("a body")
            .remove("prompt_cache_key");
    }
    assert_eq!(after_restart, control);

    // And that is turn 1's last request plus its answer (the hosted tool's call kept as
    // the model sent it, without its id) plus the new prompt.
    let mut expected = body(&server, 4)["input"].as_array().expect("input").clone();
    expected.push(web_search_call());
    expected.push(json!({"type": "message", "role": "assistant",
                         "content": [{"type": "output_text", "text": "Planned."}]}));
    expected.push(json!({"type": "message", "role": "user",
                         "content": [{"type": "input_text", "text": "thanks"}]}));
    assert_eq!(after_restart["input"], Value::Array(expected));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn saved_settings_win_over_config_toml_but_not_over_per_call_ones() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    let layers = layers(&home);
    server.push(MockResponse::text_turn("one"));
    let manager = new_manager();
    let thread = manager
        .start(layers.load().expect("config"))
        .await
        .expect("start");
    turn(&thread, "1", "hi").await;
    let id = thread.id().to_string();
    manager.shutdown_all().await;

    home.write_config(
        &TestHome::default_config(&server.base_url())
            .replace("mock-model", "changed-model")
            .replace("\"never\"", "\"untrusted\""),
    );
    let mut elsewhere = ConfigLayers::new(home.path().to_path_buf());
    elsewhere.cli_overrides = vec![("model".into(), "cli-model".into())];
    let second = new_manager();
    let (resumed, before) = second.open(&id, &elsewhere).await.expect("resume");
    let configured = configured_event(&resumed, before.expect("resumed from disk")).await;
    assert_eq!(configured.model, "mock-model");
    assert_eq!(configured.approval_policy.as_str(), "never");
    assert_eq!(
        configured.cwd,
        home.workspace().canonicalize().expect("cwd")
    );
    second.shutdown_all().await;
    drop(resumed);

    elsewhere.overrides.model = Some("per-call-model".into());
    let third = new_manager();
    let (resumed, before) = third.open(&id, &elsewhere).await.expect("resume");
    assert_eq!(
        configured_event(&resumed, before.expect("resumed from disk"))
            .await
            .model,
        "per-call-model"
    );
    third.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_live_in_one_manager_is_locked_for_another_and_shared_by_its_own() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    let layers = layers(&home);
    let manager = new_manager();
    let thread = manager
        .start(layers.load().expect("config"))
        .await
        .expect("start");

    let (same, resumed_after) = manager.open(thread.id(), &layers).await.expect("live");
    assert!(Arc::ptr_eq(&same, &thread));
    assert!(
        resumed_after.is_none(),
        "a live thread is not configured again"
    );

    let other = new_manager();
    let err = other.open(thread.id(), &layers).await.expect_err("locked");
    assert!(matches!(err, ResumeError::Locked));
    assert_eq!(err.to_string(), "thread is open in another process");
    assert!(!err.is_not_found());
    manager.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_thread_is_not_found() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    let manager = new_manager();
    let id = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";
    let err = manager.open(id, &layers(&home)).await.expect_err("missing");
    assert!(err.is_not_found());
    assert_eq!(
        err.to_string(),
        format!("Session not found for thread_id: {id}")
    );
}

/// Opening a thread reads its rollout on the blocking pool, never on the runtime: with a
/// rollout that cannot be read yet (a FIFO nobody writes, standing in for a stalled disk),
/// another task of a one-thread runtime still runs while the open waits.
#[test]
fn opening_a_thread_waits_for_its_rollout_off_the_runtime() {
    let server = MockModelServer::start();
    let home = TestHome::new(&server.base_url());
    let id = uuid::Uuid::now_v7().to_string();
    // A rollout renamed by hand within its day directory is still found, and read.
    let expected = deputy_core::rollout::rollout_path(home.path(), &id).expect("a UUIDv7");
    let day = expected.parent().expect("a day directory");
    std::fs::create_dir_all(day).expect("mkdir");
    let fifo = day.join(format!("rollout-stalled-{id}.jsonl"));
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success(), "mkfifo {}", fifo.display());

    let (ran_meanwhile, meanwhile) = std::sync::mpsc::channel::<()>();
    let (opened, done) = std::sync::mpsc::channel::<()>();
    // The disk "recovers" once the runtime has shown it still runs, or after a while
    // when it does not, so that a blocked runtime fails this test instead of hanging it.
    let disk = std::thread::spawn(move || {
        let unblocked = meanwhile.recv_timeout(Duration::from_secs(5)).is_ok();
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&fifo)
            .expect("open the FIFO");
        file.write_all(b"not a session\n").expect("write");
        // Held open (a writer keeps the reader from seeing the end) until the open is over.
        let _ = done.recv_timeout(Duration::from_secs(30));
        unblocked
    });

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let result = runtime.block_on(async {
        let manager = new_manager();
        let layers = layers(&home);
        let (started, has_started) = tokio::sync::oneshot::channel();
        let opening = tokio::spawn(async move {
            let _ = started.send(());
            manager.open(&id, &layers).await.map(|_| ())
        });
        has_started.await.expect("the open began");
        // Runs only if the open let go of the runtime's one thread.
        let _ = ran_meanwhile.send(());
        let result = opening.await.expect("the open task");
        let _ = opened.send(());
        result
    });
    assert!(
        disk.join().expect("the disk thread"),
        "the runtime was blocked while the rollout could not be read"
    );
    // A FIFO is no rollout: a clear error, not a thread.
    let err = result.expect_err("a FIFO cannot be resumed");
    assert!(matches!(err, ResumeError::Io(_)), "{err:?}");
}
