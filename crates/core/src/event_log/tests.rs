use std::sync::Arc;

use deputy_protocol::{ThreadEventMsg, WarningEvent};
use proptest::prelude::*;

use super::*;

fn warning(n: u64) -> ThreadEventMsg {
    ThreadEventMsg::Warning(WarningEvent {
        message: format!("event {n}"),
    })
}

fn log() -> Arc<EventLog> {
    Arc::new(EventLog::new("thread".into(), 1, None))
}

/// Everything a subscription yields until it would wait, as seqs.
fn drain_ready(sub: &mut Subscription) -> Vec<u64> {
    let mut seqs = Vec::new();
    loop {
        // Unconstrained: tokio's cooperative budget would otherwise report a ready
        // channel as pending after a hundred or so receives.
        let next = futures::FutureExt::now_or_never(tokio::task::unconstrained(sub.next_or_lag()));
        match next {
            Some(Some(Ok(event))) => seqs.push(event.seq),
            Some(Some(Err(lagged))) => panic!("unexpected lag: {lagged}"),
            Some(None) | None => return seqs,
        }
    }
}

/// One step of a random interleaving.
#[derive(Debug, Clone)]
enum Step {
    Publish(u8),
    Subscribe(u8),
    Read(u8),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        any::<u8>().prop_map(Step::Publish),
        any::<u8>().prop_map(Step::Subscribe),
        any::<u8>().prop_map(Step::Read),
    ]
}

proptest! {
    /// Subscribing at any point, from any earlier seq, with reads interleaved anyhow,
    /// yields every later event exactly once, in order: no gap and no duplicate where
    /// the replay hands over to the live stream.
    #[test]
    fn replay_then_live_has_no_gap_and_no_duplicate(steps in proptest::collection::vec(step(), 1..200)) {
        let log = log();
        let mut subs: Vec<(u64, Subscription, Vec<u64>)> = Vec::new();
        for step in steps {
            match step {
                Step::Publish(n) => {
                    for _ in 0..=(n % 4) {
                        let seq = log.last_seq() + 1;
                        log.publish(None, "", warning(seq));
                    }
                }
                Step::Subscribe(n) => {
                    let after = u64::from(n) % (log.last_seq() + 1);
                    let sub = log.subscribe(after);
                    subs.push((after, sub, Vec::new()));
                }
                Step::Read(n) => {
                    if !subs.is_empty() {
                        let i = usize::from(n) % subs.len();
                        let (_, sub, seen) = &mut subs[i];
                        seen.extend(drain_ready(sub));
                    }
                }
            }
        }
        let last = log.last_seq();
        for (after, mut sub, mut seen) in subs {
            seen.extend(drain_ready(&mut sub));
            let expected: Vec<u64> = (after + 1..=last).collect();
            prop_assert_eq!(seen, expected);
        }
    }
}

#[tokio::test]
async fn two_subscribers_see_the_same_sequence() {
    let log = log();
    log.publish(None, "", warning(1));
    let mut a = log.subscribe(0);
    let mut b = log.subscribe(0);
    for n in 2..=50 {
        log.publish(Some("turn"), "sub", warning(n));
    }
    log.close();
    let mut seen_a = Vec::new();
    while let Some(event) = a.next_or_lag().await {
        seen_a.push(event.expect("no lag"));
    }
    let mut seen_b = Vec::new();
    while let Some(event) = b.next_or_lag().await {
        seen_b.push(event.expect("no lag"));
    }
    assert_eq!(seen_a.len(), 50);
    assert_eq!(seen_a, seen_b);
}

#[tokio::test]
async fn a_stalled_subscriber_is_cut_off_with_its_position_and_others_get_everything() {
    let log = log();
    let mut stalled = log.subscribe(0);
    let mut reader = log.subscribe(0);
    let total = (SUBSCRIBER_BUFFER + 100) as u64;
    for n in 1..=total {
        // Publishing never waits, and the reader has each event the moment it is
        // published, before and after the stalled subscriber's buffer filled up: the
        // stalled one delays it by nothing at all, not even one step.
        log.publish(None, "", warning(n));
        assert_eq!(
            drain_ready(&mut reader),
            [n],
            "event {n} was not ready at once"
        );
    }

    let mut got = 0u64;
    let lag = loop {
        match stalled.next_or_lag().await {
            Some(Ok(_)) => got += 1,
            Some(Err(lagged)) => break lagged,
            None => panic!("the stalled subscriber ended without being told it lagged"),
        }
    };
    assert_eq!(got, SUBSCRIBER_BUFFER as u64);
    assert_eq!(lag.last_seq, SUBSCRIBER_BUFFER as u64);
    assert!(stalled.next_or_lag().await.is_none());

    // Subscribing again from where it stopped fills the gap exactly.
    let mut again = stalled.resubscribe();
    let rest = drain_ready(&mut again);
    assert!(
        rest == (SUBSCRIBER_BUFFER as u64 + 1..=total).collect::<Vec<_>>(),
        "the resubscription did not continue exactly after the lag"
    );
}

#[tokio::test]
async fn a_subscription_cut_off_for_lagging_subscribes_again_by_itself_and_misses_nothing() {
    let log = log();
    let mut stalled = log.subscribe(0);
    // Past its buffer, but within the window: no rollout holds what left the window here.
    let total = (SUBSCRIBER_BUFFER + 100) as u64;
    for n in 1..=total {
        log.publish(None, "", warning(n));
    }
    log.close();

    let mut seqs = Vec::new();
    while let Some(event) = stalled.next().await {
        assert_eq!(event.msg, warning(event.seq));
        seqs.push(event.seq);
    }

    assert!(
        seqs == (1..=total).collect::<Vec<_>>(),
        "a gap or a repeat after the lag"
    );
    assert_eq!(
        stalled.lags(),
        1,
        "it was cut off once, then read the rest back"
    );
}

#[tokio::test]
async fn a_replay_through_a_seq_stops_there() {
    let log = log();
    for n in 1..=10 {
        log.publish(None, "", warning(n));
    }
    let mut sub = log.subscribe(2);
    let mut seqs = Vec::new();
    while let Some(event) = sub.next_through(6).await {
        seqs.push(event.seq);
    }
    assert_eq!(seqs, [3, 4, 5, 6]);
    assert!(sub.next_through(6).await.is_none(), "and stays stopped");
}

#[tokio::test]
async fn the_window_is_bounded_and_closing_ends_subscriptions() {
    let log = log();
    for n in 1..=(WINDOW_EVENTS as u64 + 10) {
        log.publish(None, "", warning(n));
    }
    // Without a rollout, what fell out of the window is gone: replay starts at the window.
    let mut late = log.subscribe(0);
    let seqs = drain_ready(&mut late);
    assert_eq!(seqs.len(), WINDOW_EVENTS);
    assert_eq!(seqs[0], 11);
    log.close();
    assert!(late.next_or_lag().await.is_none());
}

#[tokio::test]
async fn a_live_log_replays_what_left_its_window_from_the_rollout_then_goes_live() {
    let home = tempfile::tempdir().expect("tempdir");
    let id = crate::rollout::tests::id_at(1_741_064_769);
    let meta = crate::rollout::tests::meta(&id, std::path::Path::new("/w"));
    let recorder = RolloutRecorder::create(home.path(), &meta, &[]).expect("create");
    let log = Arc::new(EventLog::new(id, 1, Some(recorder)));
    let published = WINDOW_EVENTS as u64 + 500;
    for n in 1..=published {
        log.publish(None, "", warning(n));
    }
    // From the start and from a quarter of the way in: the older part comes from the
    // file (nothing was flushed explicitly), the rest from the window, then live events.
    let starts = [0, published / 4];
    let mut subs: Vec<_> = starts.iter().map(|&after| log.subscribe(after)).collect();
    for (&after, sub) in starts.iter().zip(&mut subs) {
        let mut seqs = Vec::new();
        while seqs.len() < (published - after) as usize {
            let event = sub.next_or_lag().await.expect("open").expect("no lag");
            assert_eq!(
                event.msg,
                warning(event.seq),
                "event {} mixed up",
                event.seq
            );
            seqs.push(event.seq);
        }
        assert!(
            seqs == (after + 1..=published).collect::<Vec<_>>(),
            "replay after {after} had a gap or a repeat"
        );
    }
    log.publish(None, "", warning(published + 1));
    for sub in &mut subs {
        let live = sub.next_or_lag().await.expect("open").expect("no lag");
        assert_eq!(live.seq, published + 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_from_the_rollout_cancelled_at_any_point_loses_nothing() {
    let home = tempfile::tempdir().expect("tempdir");
    let id = crate::rollout::tests::id_at(1_741_064_770);
    let meta = crate::rollout::tests::meta(&id, std::path::Path::new("/w"));
    let recorder = RolloutRecorder::create(home.path(), &meta, &[]).expect("create");
    let log = Arc::new(EventLog::new(id, 1, Some(recorder)));
    // About 16 MiB: many chunks, decoded on more than one thread, most of it older
    // than the window.
    let text = "z".repeat(8 << 10);
    let big = |n: u64| {
        ThreadEventMsg::Warning(WarningEvent {
            message: format!("{n} {text}"),
        })
    };
    let published = 2000;
    for n in 1..=published {
        log.publish(None, "", big(n));
    }
    let mut sub = log.subscribe(0);
    let (mut seqs, mut cancelled) = (Vec::new(), 0);
    // A replay that lost events would wait for more forever: fail instead.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while seqs.len() < published as usize {
        assert!(
            std::time::Instant::now() < deadline,
            "stuck after {} events",
            seqs.len()
        );
        // Polled once and dropped when not ready: the replay is cancelled mid-way.
        match futures::FutureExt::now_or_never(sub.next_or_lag()) {
            Some(next) => {
                let event = next.expect("open").expect("no lag");
                assert_eq!(event.msg, big(event.seq), "event {} mixed up", event.seq);
                seqs.push(event.seq);
            }
            None => {
                cancelled += 1;
                tokio::task::yield_now().await;
            }
        }
    }
    assert!(cancelled > 0, "the replay was never caught waiting");
    assert!(
        seqs == (1..=published).collect::<Vec<_>>(),
        "a cancelled replay lost or repeated events"
    );
}

#[tokio::test]
async fn a_durable_publish_holds_later_events_until_it_is_delivered() {
    let log = log();
    let mut sub = log.subscribe(0);
    let durable = {
        let log = log.clone();
        tokio::spawn(async move {
            log.publish_durable(
                Some("t"),
                "",
                ThreadEventMsg::TurnFailed(deputy_protocol::ErrorEvent::new("end")),
            )
            .await
        })
    };
    let end_seq = durable.await.expect("durable publish");
    log.publish(None, "", warning(2));
    assert_eq!(drain_ready(&mut sub), vec![end_seq, end_seq + 1]);
}

#[tokio::test]
async fn the_active_turn_is_cleared_when_its_end_is_delivered() {
    let log = log();
    log.publish(
        Some("t1"),
        "s",
        ThreadEventMsg::TurnStarted(deputy_protocol::TaskStartedEvent {
            turn_id: "t1".into(),
            started_at: None,
            model_context_window: None,
        }),
    );
    assert_eq!(log.active_turn().as_deref(), Some("t1"));
    log.publish_durable(
        Some("t1"),
        "s",
        ThreadEventMsg::TurnComplete(deputy_protocol::TaskCompleteEvent {
            turn_id: "t1".into(),
            last_agent_message: None,
            completed_at: None,
            duration_ms: None,
        }),
    )
    .await;
    assert_eq!(log.active_turn(), None);
}
