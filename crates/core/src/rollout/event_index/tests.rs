use std::io::Write;
use std::path::Path;

use deputy_protocol::{ResponseItem, ThreadEvent};
use pretty_assertions::assert_eq;

use super::MAX_RUN_BYTES;
use crate::rollout::event_line::{LineKind, line_kind};
use crate::rollout::reader::resumed_from_bytes;
use crate::rollout::tests::{empty_rollout, reopen, replayed, user_message};
use crate::rollout::{RolloutRecorder, read_events};

/// Writes runs of event lines of every length (some longer than an index entry may span,
/// some lines longer than that alone), with history items between some, flushed at
/// different points; returns the recorder and the last seq.
async fn mixed_rollout(home: &Path) -> (RolloutRecorder, u64) {
    let recorder = empty_rollout(home, 1_741_064_780);
    let mut seq = 0;
    let shapes = [
        (1, 10, true),
        (3, 100, false),
        (200, 1000, true),
        (2, 100_000, true),
        (1, 5, false),
        (70, 2000, true),
        (5, 300, true),
    ];
    for (events, text_len, history_after) in shapes {
        for _ in 0..events {
            seq += 1;
            recorder.record_event(&user_message(seq, "e".repeat(text_len)));
        }
        if history_after {
            recorder.record_items([&ResponseItem::assistant_text("h".repeat(text_len))]);
        }
        recorder.flush().await.expect("flush");
    }
    recorder.sync().await.expect("sync");
    (recorder, seq)
}

/// The seqs of `events`.
fn seqs(events: &[ThreadEvent]) -> Vec<u64> {
    events.iter().map(|e| e.seq).collect()
}

#[tokio::test]
async fn the_recorder_indexes_its_file_as_resuming_it_does_every_event_line_and_no_other() {
    let home = tempfile::tempdir().expect("tempdir");
    let (recorder, _) = mixed_rollout(home.path()).await;
    let kept = recorder.event_index();
    let bytes = std::fs::read(recorder.path()).expect("read");
    let resumed = resumed_from_bytes(&bytes, recorder.path()).expect("load");
    assert_eq!(kept, resumed.event_index);

    let mut offset = 0;
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        let range = offset..offset + line.len() as u64;
        let in_a_run = kept
            .runs()
            .iter()
            .any(|run| run.start <= range.start && range.end <= run.end);
        let is_event = matches!(line_kind(line), LineKind::Event(_));
        assert_eq!(in_a_run, is_event, "line at {offset}");
        let starts_a_run = kept.runs().iter().any(|run| run.start == range.start);
        let ends_a_run = kept.runs().iter().any(|run| run.end == range.end);
        let longer = is_event && line.len() as u64 > MAX_RUN_BYTES;
        assert!(
            !longer || (starts_a_run && ends_a_run),
            "a long line shares a run"
        );
        offset = range.end;
    }
    let one_line_or_short = |run: &std::ops::Range<u64>| {
        run.end - run.start <= MAX_RUN_BYTES
            || !bytes[run.start as usize..run.end as usize - 1].contains(&b'\n')
    };
    assert!(kept.runs().iter().all(one_line_or_short));
    // 200 lines of about 1 KB span more than one entry.
    assert!(kept.runs().len() > 7, "{} runs", kept.runs().len());
}

#[tokio::test]
async fn an_indexed_replay_gives_what_reading_every_line_gives() {
    let home = tempfile::tempdir().expect("tempdir");
    let (recorder, mut seq) = mixed_rollout(home.path()).await;
    let path = recorder.path().to_path_buf();
    recorder.close().await.expect("close");
    // Lines as another program might leave them: an event line with its keys reordered
    // (only decoding it tells what it is), a blank line, an unreadable event line, and a
    // last event line without its newline.
    let reordered = serde_json::json!({
        "payload": user_message(seq + 1, "reordered".into()),
        "type": "event",
        "timestamp": "2025-03-04T05:06:07.000Z",
    });
    let last = crate::rollout::encode_event_line(&user_message(seq + 3, "no newline".into()));
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("open");
    write!(
        file,
        "{reordered}\n\n{{\"timestamp\":\"x\",\"type\":\"event\",\"payload\":{{\"seq\":{},\"bro\n{}",
        seq + 2,
        last.trim_end()
    )
    .expect("append");
    drop(file);
    seq += 3;

    // Resumed (the index built by reading the file), then written on.
    let (recorder, session) = reopen(&path).await;
    assert_eq!(session.last_seq, seq);
    for _ in 0..40 {
        seq += 1;
        recorder.record_event(&user_message(seq, "after".repeat(seq as usize % 300)));
        if seq % 3 == 0 {
            recorder.record_items([&ResponseItem::assistant_text("between")]);
        }
    }
    recorder.flush().await.expect("flush");
    let index = recorder.event_index();

    let all = read_events(&path, 0, u64::MAX).expect("read");
    let expected: Vec<u64> = (1..=seq).filter(|&s| s != seq - 40 - 1).collect();
    assert_eq!(seqs(&all), expected, "the unreadable line alone is skipped");
    for decoders in 1..=3 {
        for chunk_bytes in [1, 1000, 64 << 10, 1 << 20] {
            let events = replayed(&path, &index, (0, u64::MAX), decoders, chunk_bytes).await;
            assert_eq!(events, all, "{decoders} threads, chunks of {chunk_bytes}");
        }
    }
    let window = read_events(&path, 150, seq - 20).expect("read");
    assert_eq!(
        replayed(&path, &index, (150, seq - 20), 2, 64 << 10).await,
        window
    );
    // What was written after the index was taken is read line by line.
    recorder.record_event(&user_message(seq + 1, "later".into()));
    recorder.flush().await.expect("flush");
    let later = replayed(&path, &index, (0, u64::MAX), 2, 64 << 10).await;
    assert_eq!(later.last().map(|e| e.seq), Some(seq + 1));
    assert_eq!(later.len(), all.len() + 1);
}

#[tokio::test]
async fn a_file_changed_behind_its_index_still_replays_every_event() {
    let home = tempfile::tempdir().expect("tempdir");
    let (recorder, _) = mixed_rollout(home.path()).await;
    let index = recorder.event_index();
    let path = recorder.path().to_path_buf();
    recorder.close().await.expect("close");
    let original = std::fs::read_to_string(&path).expect("read");

    // A history line early in the file made longer, then shorter: every later line moves.
    let history = original
        .lines()
        .find(|line| line.contains("\"response_item\""))
        .expect("a history line");
    for edited in [
        history.replace("\"h", "\"hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh"),
        history.replace("\"text\":\"h", "\"text\":\""),
    ] {
        assert_ne!(edited, history);
        std::fs::write(&path, original.replacen(history, &edited, 1)).expect("write");
        let all = read_events(&path, 0, u64::MAX).expect("read");
        for chunk_bytes in [1000, 64 << 10] {
            let events = replayed(&path, &index, (0, u64::MAX), 2, chunk_bytes).await;
            assert_eq!(seqs(&events), seqs(&all), "chunks of {chunk_bytes}");
        }
    }
    // Cut short: shorter than the index says.
    let cut = original.len() * 2 / 3;
    std::fs::write(&path, &original.as_bytes()[..cut]).expect("write");
    let all = read_events(&path, 0, u64::MAX).expect("read");
    assert!(!all.is_empty());
    let events = replayed(&path, &index, (0, u64::MAX), 2, 64 << 10).await;
    assert_eq!(seqs(&events), seqs(&all));
}

#[test]
fn runs_are_read_only_as_whole_lines_in_file_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("lines");
    // Two short lines far apart (each read on its own), a third right after the second.
    let far = "x".repeat(40_000);
    std::fs::write(&path, format!("a\n{far}\nbb\nccc\n")).expect("write");
    let file = std::fs::File::open(&path).expect("open");
    let b = 40_003..40_006;
    let c = 40_006..40_010;
    let read = |runs: &[std::ops::Range<u64>]| {
        let mut buf = Vec::new();
        super::read_runs(&file, runs, &mut buf)
            .expect("read")
            .map(|start| String::from_utf8(buf[start..].to_vec()).expect("utf-8"))
    };
    assert_eq!(
        read(&[0..2, b.clone(), c.clone()]).as_deref(),
        Some("a\nbb\nccc\n")
    );
    assert_eq!(read(std::slice::from_ref(&b)).as_deref(), Some("bb\n"));
    assert_eq!(read(&[b.clone(), 0..2]), None, "out of order");
    assert_eq!(read(&[0..2, b.clone(), b.clone()]), None, "read twice");
    let one = |run: std::ops::Range<u64>| read(std::slice::from_ref(&run));
    assert_eq!(one(1..2), None, "not a line's start");
    assert_eq!(one(0..1), None, "not a line's end");
    assert_eq!(one(c.start..c.end + 1), None, "past the file's end");
}
