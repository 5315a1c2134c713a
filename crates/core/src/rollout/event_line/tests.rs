use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use deputy_protocol::{CommandExecutionStatus, ItemEvent, ThreadEvent, ThreadEventMsg, ThreadItem};
use pretty_assertions::assert_eq;

use super::*;
use crate::rollout::tests::{id_at, meta};
use crate::rollout::{RolloutItem, RolloutRecorder, load_rollout, read_events, read_rollout};

fn completed(
    seq: u64,
    stdout: &str,
    stderr: &str,
    aggregated: &str,
    formatted: &str,
) -> ThreadEvent {
    ThreadEvent {
        seq,
        thread_id: "t".into(),
        turn_id: Some("1".into()),
        submission_id: "1".into(),
        msg: ThreadEventMsg::ItemCompleted(ItemEvent {
            item: ThreadItem::CommandExecution(Box::new(CommandExecutionItem {
                id: format!("item-{seq}"),
                call_id: format!("call-{seq}"),
                command: vec!["bash".into(), "-lc".into(), "make".into()],
                cwd: "/w".into(),
                parsed_cmd: Vec::new(),
                status: CommandExecutionStatus::Completed,
                started: true,
                exit_code: Some(0),
                stdout: stdout.into(),
                stderr: stderr.into(),
                aggregated_output: aggregated.into(),
                duration: Some(Duration::from_millis(200)),
                formatted_output: formatted.into(),
                process_id: None,
            })),
        }),
    }
}

fn decoded(line: &str) -> ThreadEvent {
    decode_event_line(line.trim_end().as_bytes(), None).expect("decode")
}

#[test]
fn a_commands_output_is_written_once_and_read_back_whole() {
    let out = "built \"deputy\" in 2.1s\n\tno warnings — ok\n";
    let formatted = format!("Exit code: 0\nWall time: 0.2 seconds\nOutput:\n{out}");
    let event = completed(7, out, "", out, &formatted);
    let line = encode_event_line(&event);
    assert_eq!(line.matches("no warnings").count(), 1, "{line}");
    assert!(
        line.trim_end()
            .ends_with(r#","elided":{"stdout":true,"formatted_output":true}}"#),
        "{line}"
    );
    assert_eq!(decoded(&line), event);
    assert_eq!(line_kind(line.as_bytes()), LineKind::Event(7));

    // Output on stderr alone is kept once the same way.
    let event = completed(8, "", out, out, &formatted);
    let line = encode_event_line(&event);
    assert_eq!(line.matches("no warnings").count(), 1, "{line}");
    assert_eq!(decoded(&line), event);
}

#[test]
fn fields_that_do_not_repeat_the_output_are_kept_as_they_are() {
    // Both streams, and a formatted output cut in the middle: nothing repeats it whole.
    let event = completed(
        3,
        "out\n",
        "err\n",
        "out\nerr\n",
        "Exit code: 1\nOutput:\nou…r\n",
    );
    let line = encode_event_line(&event);
    assert!(!line.contains("elided"), "{line}");
    assert_eq!(line.matches("out\\n").count(), 2, "{line}");
    assert_eq!(decoded(&line), event);

    // No output at all: nothing to leave out.
    let event = completed(4, "", "", "", "Exit code: 0\nOutput:\n");
    let line = encode_event_line(&event);
    assert!(!line.contains("elided"), "{line}");
    assert_eq!(decoded(&line), event);
}

#[test]
fn a_line_written_before_outputs_were_kept_once_reads_as_it_was() {
    let event = completed(5, "a\n", "", "a\n", "Exit code: 0\nOutput:\na\n");
    let old = format!(
        r#"{{"timestamp":"2025-03-04T05:06:07.000Z","type":"event","payload":{}}}"#,
        serde_json::to_string(&event).expect("encode")
    );
    assert_eq!(decoded(&old), event);
}

#[test]
fn a_large_output_is_cut_once_and_read_back_as_cut() {
    let out = format!("{}tail\n", "line of output\n".repeat(10_000));
    let formatted = format!("Exit code: 0\nOutput:\n{out}");
    let event = completed(9, &out, "", &out, &formatted);
    let line = encode_event_line(&event);
    assert!(
        line.len() < PERSISTED_FIELD_BYTES * 5 / 4,
        "{} bytes",
        line.len()
    );
    let ThreadEventMsg::ItemCompleted(ItemEvent {
        item: ThreadItem::CommandExecution(cmd),
    }) = decoded(&line).msg
    else {
        panic!("not a command");
    };
    assert!(cmd.aggregated_output.ends_with("tail\n"));
    assert!(cmd.aggregated_output.contains("bytes truncated"));
    assert!(cmd.aggregated_output.len() <= PERSISTED_FIELD_BYTES + 64);
    assert_eq!(cmd.stdout, cmd.aggregated_output);
    assert_eq!(
        cmd.formatted_output,
        format!("Exit code: 0\nOutput:\n{}", cmd.aggregated_output)
    );
}

#[tokio::test]
async fn every_reader_of_a_rollout_restores_the_output() {
    let home = tempfile::tempdir().expect("tempdir");
    let id = id_at(1_741_064_768);
    let recorder =
        RolloutRecorder::create(home.path(), &meta(&id, Path::new("/w")), &[]).expect("create");
    let out = "src/lib.rs:1: fn main() {}\n";
    let event = completed(1, out, "", out, &format!("Exit code: 0\nOutput:\n{out}"));
    recorder.record_event(&event);
    recorder.sync().await.expect("sync");
    let on_disk = std::fs::read_to_string(recorder.path()).expect("read");
    assert_eq!(on_disk.matches("fn main").count(), 1, "{on_disk}");

    assert_eq!(
        read_events(recorder.path(), 0, u64::MAX).expect("events"),
        std::slice::from_ref(&event)
    );
    let records = read_rollout(recorder.path()).expect("records").items;
    assert_eq!(records.last(), Some(&RolloutItem::Event(event)));
    assert_eq!(load_rollout(recorder.path()).expect("load").last_seq, 1);
}

#[test]
fn a_large_diff_is_cut_and_other_events_are_written_as_they_are() {
    let diff = format!("--- a\n+++ b\n{}", "+added line\n".repeat(20_000));
    let event = ThreadEvent {
        msg: ThreadEventMsg::TurnDiff(deputy_protocol::TurnDiffEvent {
            unified_diff: diff.clone(),
        }),
        ..completed(2, "", "", "", "")
    };
    let ThreadEventMsg::TurnDiff(read) = decoded(&encode_event_line(&event)).msg else {
        panic!("not a diff");
    };
    assert!(read.unified_diff.len() < PERSISTED_FIELD_BYTES + 64);
    assert!(read.unified_diff.starts_with("--- a\n+++ b\n+added line\n"));
    assert!(read.unified_diff.contains("bytes truncated"));

    let small = ThreadEvent {
        msg: ThreadEventMsg::TurnDiff(deputy_protocol::TurnDiffEvent {
            unified_diff: diff[..100].to_string(),
        }),
        ..event
    };
    let line = encode_event_line(&small);
    assert!(!line.contains("elided"), "{line}");
    assert_eq!(decoded(&line), small);
}

/// `line` as another JSON writer might put it: the same object, spaced, keys sorted.
fn respaced(line: &str) -> String {
    let value: serde_json::Value = serde_json::from_str(line).unwrap();
    let pretty = serde_json::to_string_pretty(&sorted(value)).unwrap();
    let one_line: Vec<&str> = pretty.lines().map(str::trim).collect();
    one_line.join(" ") + "\n"
}

/// `value` with every object's keys in order (whether or not serde_json keeps insertion order).
fn sorted(value: serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => {
            let mut entries: Vec<_> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            entries.into_iter().map(|(k, v)| (k, sorted(v))).collect()
        }
        serde_json::Value::Array(items) => items.into_iter().map(sorted).collect(),
        other => other,
    }
}

#[test]
fn a_line_written_by_another_json_writer_is_still_read_whole() {
    let out = "built\n";
    let event = completed(7, out, "", out, &format!("Output:\n{out}"));
    let line = respaced(&encode_event_line(&event));
    assert!(line.starts_with("{ \"elided\": { "), "{line}");
    assert_eq!(line_kind(line.as_bytes()), LineKind::Unknown);
    match decode_any_line(line.as_bytes()).unwrap() {
        RolloutItem::Event(decoded) => assert_eq!(decoded, event),
        other => panic!("{other:?}"),
    }
    let other = r#"{"timestamp":"2025-01-01T00:00:00.000Z","type":"turn_context","payload":{}}"#;
    assert_eq!(line_kind(other.as_bytes()), LineKind::Other);
    // Keys sorted, as `jq -S` leaves them: the first "type" is the item's, not the line's.
    let sorted = serde_json::to_string(&sorted(serde_json::from_str(&line).unwrap())).unwrap();
    assert!(sorted.starts_with(r#"{"elided":"#), "{sorted}");
    let item = r#"{"payload":{"content":[{"text":"hi","type":"input_text"}],"role":"user","type":"message"},"timestamp":"2025-01-01T00:00:00.000Z","type":"response_item"}"#;
    for line in [sorted.as_str(), item] {
        assert_eq!(line_kind(line.as_bytes()), LineKind::Unknown, "{line}");
        assert_eq!(line_type(line.as_bytes()), None, "{line}");
    }
}

#[test]
fn consecutive_event_lines_decode_as_they_do_one_by_one() {
    let out = "line \"one\"\nline two\n";
    let formatted = format!("Exit code: 0\nOutput:\n{out}");
    let line = |seq| encode_event_line(&completed(seq, out, "", out, &formatted));
    let whole = line(3);
    let lines = [
        line(1),
        // Torn where a value begins: the next line would read as that value.
        format!("{}\n", &whole[..whole.find(r#""msg":"#).expect("msg") + 6]),
        line(2),
        // Torn inside a string.
        format!("{}\n", &whole[..whole.len() / 2]),
        // Two objects on one line, and one with something after it.
        format!("{}{}", line(4).trim_end(), line(5)),
        format!("{} x\n", line(6).trim_end()),
        // Blanks after the object are fine.
        format!("{} \t\r\n", line(7).trim_end()),
        line(8),
        line(9),
    ];
    let one_by_one: Vec<ThreadEvent> = lines
        .iter()
        .filter_map(|line| decode_event_line(line.trim_end_matches('\n').as_bytes(), None).ok())
        .collect();
    assert_eq!(
        one_by_one.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [1, 2, 7, 8, 9]
    );
    let mut together = Vec::new();
    decode_event_lines(lines.concat().as_bytes(), &mut together);
    assert_eq!(together, one_by_one);
    assert!(
        together
            .windows(2)
            .all(|w| Arc::ptr_eq(&w[0].thread_id, &w[1].thread_id)),
        "consecutive events share their ids"
    );

    // Event 8's line with a byte that is not UTF-8 in its text.
    let mut bytes = lines[..7].concat().into_bytes();
    let mut eight = line(8).into_bytes();
    let text = eight.windows(5).position(|w| w == b"line ").expect("text");
    eight[text] = 0xff;
    bytes.extend(eight);
    bytes.extend(line(9).into_bytes());
    let mut together = Vec::new();
    decode_event_lines(&bytes, &mut together);
    assert_eq!(
        together.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [1, 2, 7, 9]
    );
}
