//! Compaction that cannot happen or does not help: the turn ends with an error (or is
//! stopped), never loops, and the history stays as it was.

use deputy_protocol::{ContextCompactionStatus, EventMsg, ThreadEventMsg, codex_events};
use deputy_test_support::{MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::compaction::too_long;
use crate::{
    compaction_items, completed_with, home_with, manager, read_turn, run_turn, start, transcript,
    turn_end,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_history_too_long_even_compacted_fails_the_turn_instead_of_looping() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::text_turn("first done"),
        too_long(),
        MockResponse::text_turn("SUMMARY"),
        too_long(),
        MockResponse::text_turn("never asked for"),
    ]);
    let home = home_with(&server, "");
    let manager = manager();
    let thread = start(&manager, &home, home.workspace()).await;

    completed_with(&run_turn(&thread, "first").await);
    let events = run_turn(&thread, "second").await;

    let ThreadEventMsg::TurnFailed(error) = turn_end(&events) else {
        panic!("the turn failed: {:?}", turn_end(&events));
    };
    assert!(
        error.message.contains("context window") && error.message.contains("even after compacting"),
        "{}",
        error.message
    );
    // The turn is over: one compaction, one retry, nothing more.
    assert_eq!(server.request_count(), 4);
    assert_eq!(server.pending_responses(), 1);
    manager.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_summary_request_ends_the_turn_with_a_clear_error_and_the_thread_stays_usable() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::text_turn("first done"),
        too_long(),
        MockResponse::status(500, json!({"error": {"message": "summarizer down"}})),
        MockResponse::text_turn("recovered"),
    ]);
    let home = home_with(&server, "");
    let manager = manager();
    let thread = start(&manager, &home, home.workspace()).await;

    completed_with(&run_turn(&thread, "first").await);
    let events = run_turn(&thread, "second").await;

    let ThreadEventMsg::TurnFailed(error) = turn_end(&events) else {
        panic!("the turn failed: {:?}", turn_end(&events));
    };
    assert!(
        error
            .message
            .starts_with("cannot compact the conversation:")
            && error.message.contains("summarizer down"),
        "{}",
        error.message
    );
    assert_eq!(server.request_count(), 3);
    // The compaction item is closed as failed, and Codex clients hear of no compaction.
    let items = compaction_items(&events);
    assert_eq!(items.len(), 2, "{items:?}");
    assert_eq!(items[1].2, ContextCompactionStatus::Failed);
    let codex: Vec<EventMsg> = events
        .iter()
        .flat_map(|e| codex_events(e))
        .map(|e| e.msg)
        .collect();
    assert!(
        !codex
            .iter()
            .any(|msg| matches!(msg, EventMsg::ContextCompacted(_))),
        "{codex:?}"
    );
    assert_eq!(
        completed_with(&run_turn(&thread, "third").await),
        "recovered"
    );
    manager.shutdown_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_compaction_leaves_the_history_as_it_was() {
    let server = MockModelServer::start();
    server.push_all([
        MockResponse::text_turn("first done"),
        MockResponse::text_turn("never delivered").delay_before(std::time::Duration::from_secs(60)),
        MockResponse::text_turn("second done"),
    ]);
    let home = home_with(&server, "");
    let manager = manager();
    let thread = start(&manager, &home, home.workspace()).await;
    completed_with(&run_turn(&thread, "first").await);

    let after = thread.last_seq();
    let turn_id = thread.submit_compact("compact".into()).expect("submit");
    let mut events = thread.subscribe(after);
    // Once the summary is being written, stop the turn.
    loop {
        let event = tokio::time::timeout(crate::WAIT, events.next())
            .await
            .expect("events in time")
            .unwrap();
        if let ThreadEventMsg::ItemStarted(item) = &event.msg
            && matches!(item.item, deputy_protocol::ThreadItem::ContextCompaction(_))
        {
            break;
        }
    }
    server.wait_for_requests(2, crate::WAIT).unwrap();
    thread.interrupt(&turn_id).unwrap();
    let events = read_turn(&thread, after, &turn_id).await;

    assert!(
        matches!(turn_end(&events), ThreadEventMsg::TurnAborted(_)),
        "{:?}",
        turn_end(&events)
    );
    let items = compaction_items(&events);
    assert_eq!(
        items.last().map(|i| i.2),
        Some(ContextCompactionStatus::Failed)
    );
    assert_eq!(
        completed_with(&run_turn(&thread, "second").await),
        "second done"
    );
    let next = transcript(&server.requests()[2]);
    assert_eq!(
        next[1..],
        [
            "user: first".to_string(),
            "assistant: first done".to_string(),
            "user: second".to_string(),
        ]
    );
    manager.shutdown_all().await;
}
