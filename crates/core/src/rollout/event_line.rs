//! The on-disk form of an event line, written by the recorder and read back by the reader:
//!
//! `{"timestamp":"…","type":"event","payload":<ThreadEvent>,"elided":{…}}`
//!
//! A command's output is kept once: its `stdout` or `stderr` is left out when it
//! equals the `aggregated_output`, and its `formatted_output` keeps only what comes
//! before the `aggregated_output` it ends with. `elided` (absent when nothing was left
//! out, and in files written before it existed) says which, and [`decode_event_line`]
//! puts them back, so a reader gets the event as it was published. What remains of a
//! large text field is then cut to [`PERSISTED_FIELD_BYTES`] head and tail.

use std::borrow::Cow;
use std::sync::LazyLock;

use memchr::memmem;

use deputy_protocol::{CommandExecutionItem, ItemEvent, ThreadEvent, ThreadEventMsg, ThreadItem};
use serde::{Deserialize, Serialize};

use super::now_timestamp;

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

    /// Leaves out of `cmd` what `self` names.
    fn remove(self, cmd: &mut CommandExecutionItem) {
        if self.stdout {
            cmd.stdout.clear();
        }
        if self.stderr {
            cmd.stderr.clear();
        }
        if self.formatted_output {
            let head = cmd.formatted_output.len() - cmd.aggregated_output.len();
            cmd.formatted_output.truncate(head);
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

/// The command an item event carries, if it carries one.
fn command_in(msg: &ThreadEventMsg) -> Option<&CommandExecutionItem> {
    match msg {
        ThreadEventMsg::ItemStarted(ItemEvent {
            item: ThreadItem::CommandExecution(cmd),
        })
        | ThreadEventMsg::ItemUpdated(ItemEvent {
            item: ThreadItem::CommandExecution(cmd),
        })
        | ThreadEventMsg::ItemCompleted(ItemEvent {
            item: ThreadItem::CommandExecution(cmd),
        }) => Some(cmd),
        _ => None,
    }
}

/// [`command_in`], to change.
fn command_of(msg: &mut ThreadEventMsg) -> Option<&mut CommandExecutionItem> {
    match msg {
        ThreadEventMsg::ItemStarted(ItemEvent {
            item: ThreadItem::CommandExecution(cmd),
        })
        | ThreadEventMsg::ItemUpdated(ItemEvent {
            item: ThreadItem::CommandExecution(cmd),
        })
        | ThreadEventMsg::ItemCompleted(ItemEvent {
            item: ThreadItem::CommandExecution(cmd),
        }) => Some(cmd),
        _ => None,
    }
}

/// `event` with its large text fields cut to [`PERSISTED_FIELD_BYTES`] head and tail.
pub fn trimmed_for_disk(event: &ThreadEvent) -> Cow<'_, ThreadEvent> {
    let big = |text: &str| text.len() > PERSISTED_FIELD_BYTES;
    let trim = |text: &mut String| {
        if big(text) {
            *text = crate::exec::truncate_middle(text, PERSISTED_FIELD_BYTES).0;
        }
    };
    let needs_trim = match &event.msg {
        ThreadEventMsg::TurnDiff(diff) => big(&diff.unified_diff),
        msg => command_in(msg).is_some_and(|cmd| {
            big(&cmd.stdout)
                || big(&cmd.stderr)
                || big(&cmd.aggregated_output)
                || big(&cmd.formatted_output)
        }),
    };
    if !needs_trim {
        return Cow::Borrowed(event);
    }
    let mut event = event.clone();
    match &mut event.msg {
        ThreadEventMsg::TurnDiff(diff) => trim(&mut diff.unified_diff),
        msg => {
            if let Some(cmd) = command_of(msg) {
                for field in [
                    &mut cmd.stdout,
                    &mut cmd.stderr,
                    &mut cmd.aggregated_output,
                    &mut cmd.formatted_output,
                ] {
                    trim(field);
                }
            }
        }
    }
    Cow::Owned(event)
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
    // Left out before cutting, so that what remains is cut once.
    let elided = command_in(&event.msg)
        .map(Elided::repeats_in)
        .filter(|elided| !elided.is_empty());
    let mut whole = Cow::Borrowed(event);
    if let Some(elided) = elided
        && let Some(cmd) = command_of(&mut whole.to_mut().msg)
    {
        elided.remove(cmd);
    }
    let payload = trimmed_for_disk(&whole);
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

/// The event of an `event` line, as it was published.
pub(crate) fn decode_event_line(line: &[u8]) -> serde_json::Result<ThreadEvent> {
    #[derive(Deserialize)]
    struct Line {
        payload: ThreadEvent,
        #[serde(default)]
        elided: Elided,
    }
    let Line {
        mut payload,
        elided,
    } = serde_json::from_slice(line)?;
    if !elided.is_empty()
        && let Some(cmd) = command_of(&mut payload.msg)
    {
        elided.restore(cmd);
    }
    Ok(payload)
}

/// The `seq` of an `event` line, read from its first bytes; `None` for other lines.
pub(crate) fn event_line_seq(line: &[u8]) -> Option<u64> {
    const MARKER: &[u8] = br#""type":"event","payload":{"seq":"#;
    static FINDER: LazyLock<memmem::Finder<'static>> =
        LazyLock::new(|| memmem::Finder::new(MARKER));
    // `{"timestamp":"YYYY-MM-DDThh:mm:ss.mmmZ",` comes first; look a little past it.
    let head = &line[..line.len().min(96)];
    let at = FINDER.find(head)? + MARKER.len();
    let digits = line[at..].iter().take_while(|b| b.is_ascii_digit()).count();
    std::str::from_utf8(&line[at..at + digits])
        .ok()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests;
