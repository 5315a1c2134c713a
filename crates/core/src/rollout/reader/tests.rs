use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use deputy_protocol::{ItemEvent, ResponseItem, ThreadEvent, ThreadEventMsg, ThreadItem};
use pretty_assertions::assert_eq;

use super::{Chunk, EventIndex, EventReplay, read_events};
use crate::rollout::encode_event_line;
use crate::rollout::tests::{empty_rollout, id_at, one_turn, replayed, user_message};

#[tokio::test]
async fn a_large_rollout_replayed_in_chunks_gives_every_event_once_in_order() {
    let home = tempfile::tempdir().expect("tempdir");
    let recorder = one_turn(home.path(), &id_at(1_741_064_768)).await;
    let first = read_events(recorder.path(), 0, u64::MAX).expect("read events");
    let start = first.last().map_or(1, |e| e.seq + 1);
    // Well past the size that is decoded in slices, with lines of other kinds between.
    let text = "x".repeat(4096);
    let mut seq = start;
    while std::fs::metadata(recorder.path()).expect("stat").len() < 12 << 20 {
        for _ in 0..256 {
            recorder.record_event(&user_message(seq, format!("{seq} {text}")));
            seq += 1;
        }
        recorder.record_items([&ResponseItem::assistant_text("between")]);
        recorder.flush().await.expect("flush");
    }
    let all = read_events(recorder.path(), 0, u64::MAX).expect("read events");
    let window = read_events(recorder.path(), start + 10, seq - 10).expect("read events");
    assert_eq!(window.first().map(|e| e.seq), Some(start + 11));
    assert_eq!(window.last().map(|e| e.seq), Some(seq - 11));
    for decoders in 1..=4 {
        for chunk_bytes in [64 << 10, 1 << 20, 5 << 20] {
            let replay = replayed(
                recorder.path(),
                &EventIndex::default(),
                (0, u64::MAX),
                decoders,
                chunk_bytes,
            )
            .await;
            assert_eq!(replay, all, "{decoders} threads, chunks of {chunk_bytes}");
        }
    }
    assert_eq!(
        replayed(
            recorder.path(),
            &EventIndex::default(),
            (start + 10, seq - 10),
            3,
            100_000
        )
        .await,
        window
    );
    let seqs: Vec<u64> = all.iter().map(|e| e.seq).collect();
    let expected: Vec<u64> = first.iter().map(|e| e.seq).chain(start..seq).collect();
    assert_eq!(seqs, expected);
}

#[tokio::test]
async fn lines_longer_than_a_chunk_and_a_torn_end_are_replayed_alike() {
    let home = tempfile::tempdir().expect("tempdir");
    let recorder = empty_rollout(home.path(), 1_741_064_768);
    // Lines from a few bytes to well over a read chunk, some parts ending inside them —
    // event lines, and between them other lines, which are skipped without being kept.
    let lengths = [10, 3 << 20, 5, 1 << 20, 70_000, 0, 2 << 20, 17];
    let between = [4 << 20, 7, 1 << 20, 100, 3 << 20, 70_000, 5, 2 << 20];
    for ((seq, len), other) in (1..).zip(lengths).zip(between) {
        recorder.record_event(&user_message(seq, "y".repeat(len)));
        recorder.record_items([&ResponseItem::assistant_text("z".repeat(other))]);
    }
    recorder.sync().await.expect("sync");
    let path = recorder.path().to_path_buf();
    drop(recorder);
    let torn = encode_event_line(&user_message(99, "cut short".into()));
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("open");
    std::io::Write::write_all(&mut file, &torn.as_bytes()[..torn.len() / 2]).expect("tear");

    let expected: Vec<(u64, usize)> = (1..).zip(lengths).collect();
    let lengths_of = |events: Vec<ThreadEvent>| -> Vec<(u64, usize)> {
        events
            .iter()
            .map(|e| match &e.msg {
                ThreadEventMsg::ItemCompleted(ItemEvent {
                    item: ThreadItem::UserMessage(m),
                }) => (e.seq, m.text.len()),
                other => panic!("unexpected {other:?}"),
            })
            .collect()
    };
    assert_eq!(
        lengths_of(read_events(&path, 0, u64::MAX).expect("read")),
        expected
    );
    for decoders in 1..=4 {
        for chunk_bytes in [999, 70_000, 1 << 20, 3 << 20, 64 << 20] {
            let events = replayed(
                &path,
                &EventIndex::default(),
                (0, u64::MAX),
                decoders,
                chunk_bytes,
            )
            .await;
            assert_eq!(
                lengths_of(events),
                expected,
                "{decoders} threads, chunks of {chunk_bytes}"
            );
        }
    }
}

#[tokio::test]
async fn a_replay_reads_the_file_about_once() {
    let home = tempfile::tempdir().expect("tempdir");
    let recorder = empty_rollout(home.path(), 1_741_064_773);
    // Event lines and longer history lines in turn: many parts end inside a line of each.
    for seq in 1..=1500 {
        recorder.record_event(&user_message(seq, "e".repeat(700)));
        recorder.record_items([&ResponseItem::assistant_text("h".repeat(2500))]);
    }
    recorder.close().await.expect("close");
    let len = std::fs::metadata(recorder.path()).expect("stat").len();

    // The parts are decoded here, one after the other.
    let part_bytes = 64 << 10;
    let file = std::fs::File::open(recorder.path()).expect("open");
    let before = read_so_far();
    let mut events = 0;
    for start in (0..len).step_by(part_bytes) {
        let part = super::Part {
            start,
            end: start + part_bytes as u64,
            after: 0,
            before: u64::MAX,
        };
        events += part.decode(&file, &mut Vec::new()).expect("decode").len();
    }
    let read = read_so_far() - before;
    assert_eq!(events, 1500);
    assert!(
        read < len + len / 4,
        "{read} bytes read to replay a file of {len}"
    );
}

#[tokio::test]
async fn an_indexed_replay_reads_the_event_lines_and_not_the_long_lines_between() {
    let home = tempfile::tempdir().expect("tempdir");
    let recorder = empty_rollout(home.path(), 1_741_064_774);
    // A few event lines, then a long history line (a large command output), in turn.
    let mut seq = 0;
    for _ in 0..40 {
        for _ in 0..3 {
            seq += 1;
            recorder.record_event(&user_message(seq, "e".repeat(700)));
        }
        recorder.record_items([&ResponseItem::assistant_text("h".repeat(100_000))]);
    }
    recorder.close().await.expect("close");
    let index = recorder.event_index();
    let len = std::fs::metadata(recorder.path()).expect("stat").len();
    let event_bytes: u64 = index.runs().iter().map(|run| run.end - run.start).sum();
    assert!(
        event_bytes * 30 < len,
        "{event_bytes} of {len} bytes are events"
    );

    let file = std::fs::File::open(recorder.path()).expect("open");
    let before = read_so_far();
    let mut events = Vec::new();
    for chunk in index.chunks(len, 64 << 10) {
        let Chunk::Runs { runs, bytes } = chunk else {
            panic!("the index covers the file: {chunk:?}");
        };
        let part = super::Part {
            start: bytes.start,
            end: bytes.end,
            after: 0,
            before: u64::MAX,
        };
        events.extend(
            part.decode_runs(&file, &index.runs()[runs], &mut Vec::new())
                .expect("decode"),
        );
    }
    let read = read_so_far() - before;
    assert_eq!(
        events,
        read_events(recorder.path(), 0, u64::MAX).expect("read")
    );
    assert_eq!(events.len(), 120);
    assert!(
        read < event_bytes + event_bytes / 4,
        "{read} bytes read for {event_bytes} bytes of event lines"
    );
}

/// Bytes read by this thread so far.
fn read_so_far() -> u64 {
    let io = std::fs::read_to_string("/proc/thread-self/io").expect("task io accounting");
    io.lines()
        .find_map(|line| line.strip_prefix("rchar: "))
        .and_then(|n| n.parse().ok())
        .expect("rchar")
}

/// A rollout of `count` events of about 1 KB (about sixteen to a chunk of 64 KiB).
async fn kilobyte_events(home: &Path, count: u64) -> std::path::PathBuf {
    let recorder = empty_rollout(home, 1_741_064_771);
    let text = "w".repeat(1000);
    for seq in 1..=count {
        recorder.record_event(&user_message(seq, text.clone()));
    }
    recorder.close().await.expect("close");
    recorder.path().to_path_buf()
}

/// A runtime of its own, whose only other threads will be a replay's decoders, ending as
/// soon as they are idle; and how many threads of it stopped. Shut down in the background,
/// not dropped: dropping waits for a decoder that might never stop.
fn watched_runtime() -> (tokio::runtime::Runtime, Arc<AtomicUsize>) {
    let stopped = Arc::new(AtomicUsize::new(0));
    let counter = stopped.clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_keep_alive(Duration::from_millis(1))
        .on_thread_stop(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        })
        .build()
        .expect("runtime");
    (runtime, stopped)
}

/// Whether two threads stopped within 20 s.
async fn two_stopped(stopped: &AtomicUsize) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while stopped.load(Ordering::SeqCst) < 2 {
        if std::time::Instant::now() > deadline {
            return false;
        }
        tokio::task::yield_now().await;
    }
    true
}

#[test]
fn dropping_a_replay_stops_its_threads() {
    let home = tempfile::tempdir().expect("tempdir");
    let path = block_on_new_runtime(kilobyte_events(home.path(), 3000));
    let (runtime, stopped) = watched_runtime();
    let stopped_in_time = runtime.block_on(async {
        // Each decoder soon waits with its chunks ready.
        let mut replay = two_decoders(&path);
        let first = replay.next().await.expect("an event").expect("decoded");
        assert_eq!(first.seq, 1);
        drop(replay);
        two_stopped(&stopped).await
    });
    runtime.shutdown_background();
    assert!(
        stopped_in_time,
        "a decoder of a dropped replay is still running"
    );
}

#[test]
fn a_replay_read_to_its_last_event_holds_no_thread() {
    let home = tempfile::tempdir().expect("tempdir");
    let path = block_on_new_runtime(kilobyte_events(home.path(), 3000));
    let (runtime, stopped) = watched_runtime();
    let stopped_in_time = runtime.block_on(async {
        let mut replay = two_decoders(&path);
        // Read up to the last event and no further, as a subscriber reading up to a
        // point does, and kept.
        let mut seq = 0;
        while seq < 3000 {
            seq = replay.next().await.expect("an event").expect("decoded").seq;
        }
        let stopped = two_stopped(&stopped).await;
        drop(replay);
        stopped
    });
    runtime.shutdown_background();
    assert!(
        stopped_in_time,
        "a replay kept after its last event holds its decoding threads"
    );
}

#[tokio::test]
async fn a_chunk_handed_out_goes_back_to_the_thread_that_decoded_it() {
    let home = tempfile::tempdir().expect("tempdir");
    let path = kilobyte_events(home.path(), 1000).await;

    let mut replay = two_decoders(&path);
    let first = replay.next().await.expect("an event").expect("decoded");
    assert_eq!(first.seq, 1);
    assert_eq!(
        Arc::strong_count(&first),
        2,
        "the replay holds its chunk while handing it out"
    );
    // Past the first chunk: it went back to its decoder, which let go of it.
    let mut seq = 1;
    while seq < 200 {
        seq = replay.next().await.expect("an event").expect("decoded").seq;
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while Arc::strong_count(&first) > 1 {
        assert!(
            std::time::Instant::now() < deadline,
            "the decoder never let go of a chunk handed out"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(first.seq, 1, "the event outlives the chunk for its holder");
}

/// A replay of all of `path`, line by line, by two threads in chunks of 64 KiB.
fn two_decoders(path: &Path) -> EventReplay {
    let len = std::fs::metadata(path).expect("stat").len();
    EventReplay::start_with(
        path,
        &EventIndex::default(),
        len,
        (0, u64::MAX),
        2,
        64 << 10,
    )
}

fn block_on_new_runtime<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(future)
}

#[tokio::test]
async fn replayed_events_of_one_thread_share_their_ids() {
    let home = tempfile::tempdir().expect("tempdir");
    let recorder = one_turn(home.path(), &id_at(1_741_064_768)).await;
    let start = read_events(recorder.path(), 0, u64::MAX)
        .expect("read events")
        .last()
        .map_or(1, |e| e.seq + 1);
    let mut other_turn = user_message(start + 2, "other turn".into());
    other_turn.turn_id = Some("another-turn".into());
    for event in [
        user_message(start, "one".into()),
        user_message(start + 1, "two".into()),
        other_turn,
    ] {
        recorder.record_event(&event);
    }
    recorder.flush().await.expect("flush");
    let events = read_events(recorder.path(), start - 1, u64::MAX).expect("read events");
    let [one, two, three] = &events[..] else {
        panic!("expected three events, got {events:?}");
    };
    assert!(Arc::ptr_eq(&one.thread_id, &two.thread_id));
    assert!(Arc::ptr_eq(&two.thread_id, &three.thread_id));
    assert!(Arc::ptr_eq(&one.submission_id, &two.submission_id));
    let turn = |event: &ThreadEvent| event.turn_id.clone().expect("a turn id");
    assert!(Arc::ptr_eq(&turn(one), &turn(two)));
    assert_eq!(three.turn_id.as_deref(), Some("another-turn"));
}
