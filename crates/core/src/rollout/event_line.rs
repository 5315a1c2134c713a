//! The on-disk form of an event line, written by the recorder and read back by the reader:
//!
//! `{"timestamp":"…","type":"event","payload":<ThreadEvent>,"elided":{…}}`
//!
//! A finished command's output is kept once: its `stdout` or `stderr` is left out when
//! it equals the `aggregated_output`, and its `formatted_output` keeps only what comes
//! before the `aggregated_output` it ends with. `elided` (absent when nothing was left
//! out, and in files written before it existed) says which, and [`decode_event_line`]
//! puts them back, so a reader gets the event as it was published. What remains of a
//! large text field is then cut to [`PERSISTED_FIELD_BYTES`] head and tail.

use deputy_protocol::{
    CommandExecutionItem, ItemEvent, ThreadEvent, ThreadEventMsg, ThreadEventRead, ThreadItem,
    TurnDiffEvent,
};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

use super::{RolloutItem, now_timestamp};

/// Bytes of each large text field (command output, diffs) an event keeps on disk;
/// the middle of a longer one is cut out with a note, as in conversation snapshots.
pub const PERSISTED_FIELD_BYTES: usize = 64 * 1024;

/// Which of a command's text fields an event line shortened because they repeat its
/// `aggregated_output`.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Elided {
    /// `stdout` is left out: it is the `aggregated_output`.
    #[serde(default, skip_serializing_if = "is_false")]
    stdout: bool,
    /// `stderr` is left out: it is the `aggregated_output`.
    #[serde(default, skip_serializing_if = "is_false")]
    stderr: bool,
    /// `formatted_output` holds only its head: the `aggregated_output` follows it.
    #[serde(default, skip_serializing_if = "is_false")]
    formatted_output: bool,
}

fn is_false(flag: &bool) -> bool {
    !flag
}

impl Elided {
    fn is_empty(self) -> bool {
        self == Self::default()
    }

    /// What of `cmd` repeats its `aggregated_output`.
    fn repeats_in(cmd: &CommandExecutionItem) -> Self {
        let output = cmd.aggregated_output.as_str();
        if output.is_empty() {
            return Self::default();
        }
        Self {
            stdout: cmd.stdout == output,
            stderr: cmd.stderr == output,
            formatted_output: cmd.formatted_output.ends_with(output),
        }
    }

    /// Puts back into `cmd` what `self` says was left out.
    fn restore(self, cmd: &mut CommandExecutionItem) {
        if self.stdout {
            cmd.stdout.clone_from(&cmd.aggregated_output);
        }
        if self.stderr {
            cmd.stderr.clone_from(&cmd.aggregated_output);
        }
        if self.formatted_output {
            cmd.formatted_output.push_str(&cmd.aggregated_output);
        }
    }
}

fn is_big(text: &str) -> bool {
    text.len() > PERSISTED_FIELD_BYTES
}

/// `text`, cut to [`PERSISTED_FIELD_BYTES`] head and tail when longer.
fn cut(text: &str) -> String {
    if is_big(text) {
        crate::exec::truncate_middle(text, PERSISTED_FIELD_BYTES).0
    } else {
        text.to_string()
    }
}

/// The on-disk form of a finished command: what repeats its output left out, large
/// fields cut, never copying a large field whole. `None` when it is written as it is.
fn command_on_disk(cmd: &CommandExecutionItem) -> Option<(CommandExecutionItem, Elided)> {
    let elided = Elided::repeats_in(cmd);
    let texts = [
        &cmd.stdout,
        &cmd.stderr,
        &cmd.aggregated_output,
        &cmd.formatted_output,
    ];
    if elided.is_empty() && !texts.iter().any(|text| is_big(text)) {
        return None;
    }
    let unless = |left_out: bool, text: &str| if left_out { String::new() } else { cut(text) };
    let formatted = if elided.formatted_output {
        let head = cmd.formatted_output.len() - cmd.aggregated_output.len();
        &cmd.formatted_output[..head]
    } else {
        &cmd.formatted_output
    };
    let on_disk = CommandExecutionItem {
        id: cmd.id.clone(),
        call_id: cmd.call_id.clone(),
        command: cmd.command.clone(),
        cwd: cmd.cwd.clone(),
        parsed_cmd: cmd.parsed_cmd.clone(),
        status: cmd.status,
        started: cmd.started,
        exit_code: cmd.exit_code,
        stdout: unless(elided.stdout, &cmd.stdout),
        stderr: unless(elided.stderr, &cmd.stderr),
        aggregated_output: cut(&cmd.aggregated_output),
        duration: cmd.duration,
        formatted_output: cut(formatted),
        process_id: cmd.process_id.clone(),
    };
    Some((on_disk, elided))
}

/// `event` as its line holds it, and what of it the line leaves out.
fn on_disk(event: &ThreadEvent) -> (Cow<'_, ThreadEvent>, Option<Elided>) {
    let with = |msg: ThreadEventMsg| {
        Cow::Owned(ThreadEvent {
            seq: event.seq,
            thread_id: event.thread_id.clone(),
            turn_id: event.turn_id.clone(),
            submission_id: event.submission_id.clone(),
            msg,
        })
    };
    match &event.msg {
        ThreadEventMsg::ItemCompleted(ItemEvent {
            item: ThreadItem::CommandExecution(cmd),
        }) => match command_on_disk(cmd) {
            Some((cmd, elided)) => (
                with(ThreadEventMsg::ItemCompleted(ItemEvent {
                    item: ThreadItem::CommandExecution(Box::new(cmd)),
                })),
                (!elided.is_empty()).then_some(elided),
            ),
            None => (Cow::Borrowed(event), None),
        },
        ThreadEventMsg::TurnDiff(diff) if is_big(&diff.unified_diff) => (
            with(ThreadEventMsg::TurnDiff(TurnDiffEvent {
                unified_diff: cut(&diff.unified_diff),
            })),
            None,
        ),
        _ => (Cow::Borrowed(event), None),
    }
}

/// The `event` line of `event` in its on-disk form, newline included, stamped with the
/// current time.
pub fn encode_event_line(event: &ThreadEvent) -> String {
    #[derive(Serialize)]
    struct Line<'a> {
        timestamp: &'a str,
        #[serde(rename = "type")]
        kind: &'static str,
        payload: &'a ThreadEvent,
        #[serde(skip_serializing_if = "Option::is_none")]
        elided: Option<Elided>,
    }
    let timestamp = now_timestamp();
    let (payload, elided) = on_disk(event);
    // Plain data with string keys: serializing cannot fail.
    let mut line = serde_json::to_string(&Line {
        timestamp: &timestamp,
        kind: "event",
        payload: &payload,
        elided,
    })
    .unwrap_or_default();
    line.push('\n');
    line
}

/// An `event` line as read, its ids still borrowed from it.
#[derive(Deserialize)]
struct EventLine<'a> {
    #[serde(borrow)]
    payload: ThreadEventRead<'a>,
    #[serde(default)]
    elided: Elided,
}

impl EventLine<'_> {
    /// The event as it was published, holding the ids of `previous` (the event before
    /// it, usually of the same turn) that are equal to its own: the events of one thread
    /// share them in memory as they do when published.
    fn published(self, previous: Option<&ThreadEvent>) -> ThreadEvent {
        let mut event = self.payload.sharing_ids_of(previous);
        if let ThreadEventMsg::ItemCompleted(ItemEvent {
            item: ThreadItem::CommandExecution(cmd),
        }) = &mut event.msg
        {
            self.elided.restore(cmd);
        }
        event
    }
}

/// The event of an `event` line, as it was published (see [`EventLine::published`]).
pub(crate) fn decode_event_line(
    line: &[u8],
    previous: Option<&ThreadEvent>,
) -> serde_json::Result<ThreadEvent> {
    // Checked as UTF-8 once, rather than string by string.
    let line = std::str::from_utf8(line).map_err(serde::de::Error::custom)?;
    let line: EventLine = serde_json::from_str(line)?;
    Ok(line.published(previous))
}

/// Appends to `events` the events of `lines`, consecutive `event` lines each ending with
/// a newline, as [`decode_event_line`] would one by one — a line that cannot be read is
/// skipped — but with one decoder, whose buffer for unescaping strings then grows once
/// rather than line by line (a tenth of the decoding time of a long replay).
pub(crate) fn decode_event_lines(lines: &[u8], events: &mut Vec<ThreadEvent>) {
    let Ok(mut rest) = std::str::from_utf8(lines) else {
        // Some line is not UTF-8: only it is lost.
        for line in lines.split(|&b| b == b'\n').filter(|line| !line.is_empty()) {
            events.extend(decode_event_line(line, events.last()).ok());
        }
        return;
    };
    while !rest.is_empty() {
        let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<EventLine>();
        let resume_at = loop {
            let start = stream.byte_offset();
            match stream.next() {
                None => return,
                // A line holds one object, ending the line (as with `decode_event_line`).
                Some(Ok(line)) if ends_line(&rest[stream.byte_offset()..]) => {
                    events.push(line.published(events.last()));
                }
                // Skipped from where the value began: its line, not those it ran into.
                Some(_) => break start,
            }
        };
        rest = rest[resume_at..]
            .trim_start()
            .split_once('\n')
            .map_or("", |(_, after)| after);
    }
}

/// Whether `after` (what follows a value) is blanks up to the end of the line.
fn ends_line(after: &str) -> bool {
    let blank = after.trim_start_matches([' ', '\t', '\r']);
    blank.is_empty() || blank.starts_with('\n')
}

/// What the first bytes of a rollout line say it is, as deputy writes it:
/// `{"timestamp":"…","type":"event","payload":{"seq":N,…`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineKind {
    /// An `event` line with this `seq`.
    Event(u64),
    /// A line of another type.
    Other,
    /// Written some other way (reformatted, keys reordered): only parsing it tells.
    Unknown,
}

/// Bytes at the start of a line that say what it is, as deputy writes lines.
pub(crate) const LINE_HEAD: usize = 96;

/// The record type a rollout line gives where deputy writes it, right after the timestamp
/// that opens the line, and the bytes that follow it; `None` when the line does not start
/// that way (another program wrote it, or reordered its keys: a `"type"` further on may be
/// a nested object's).
fn type_and_rest(line: &[u8]) -> Option<(&str, &[u8])> {
    const START: &[u8] = br#"{"timestamp":""#;
    const TYPE: &[u8] = br#"","type":""#;
    let head = &line[..line.len().min(LINE_HEAD)];
    let rest = head.strip_prefix(START)?;
    // A timestamp holds no escapes: its first quote ends it.
    let rest = rest[memchr::memchr(b'"', rest)?..].strip_prefix(TYPE)?;
    let end = memchr::memchr(b'"', rest)?;
    let kind = std::str::from_utf8(&rest[..end]).ok()?;
    Some((kind, &line[head.len() - rest.len() + end + 1..]))
}

/// The record type the first bytes of a rollout line give, where deputy writes it (right
/// after the timestamp); `None` when it is not there.
pub(crate) fn line_type(line: &[u8]) -> Option<&str> {
    type_and_rest(line).map(|(kind, _)| kind)
}

/// The kind of a rollout line, from its first bytes alone (see [`LineKind`]).
pub(crate) fn line_kind(line: &[u8]) -> LineKind {
    const SEQ: &[u8] = br#","payload":{"seq":"#;
    match type_and_rest(line) {
        Some(("event", rest)) => {
            let Some(rest) = rest.strip_prefix(SEQ) else {
                return LineKind::Unknown;
            };
            let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
            std::str::from_utf8(&rest[..digits])
                .ok()
                .and_then(|seq| seq.parse().ok())
                .map_or(LineKind::Unknown, LineKind::Event)
        }
        Some(_) => LineKind::Other,
        None => LineKind::Unknown,
    }
}

/// A rollout line of any kind, decoded as a whole — the slow way, for lines whose first
/// bytes do not say what they are ([`LineKind::Unknown`]); an event comes out as it was
/// published, as from [`decode_event_line`].
pub(crate) fn decode_any_line(line: &[u8]) -> serde_json::Result<RolloutItem> {
    #[derive(Deserialize)]
    struct Line {
        #[serde(flatten)]
        item: RolloutItem,
        #[serde(default)]
        elided: Elided,
    }
    let Line { mut item, elided } = serde_json::from_slice(line)?;
    if let RolloutItem::Event(ThreadEvent {
        msg:
            ThreadEventMsg::ItemCompleted(ItemEvent {
                item: ThreadItem::CommandExecution(cmd),
            }),
        ..
    }) = &mut item
    {
        elided.restore(cmd);
    }
    Ok(item)
}

#[cfg(test)]
mod tests;
