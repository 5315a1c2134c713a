//! A turn's start, kept so that the event ending it says when it ended and how long it
//! ran, as Codex's turn events do (`started_at`, `completed_at`, `duration_ms`).

// Runs on the async runtime: no blocking std calls (see clippy.toml).
#![cfg_attr(not(test), warn(clippy::disallowed_methods))]

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use deputy_protocol::{
    CodexErrorInfo, ErrorEvent, TaskCompleteEvent, ThreadEventMsg, TurnAbortReason,
    TurnAbortedEvent,
};

/// When a turn started, if it did.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TurnClock {
    started: Option<Instant>,
}

impl TurnClock {
    /// A turn starting now; returns its clock and its start time (Unix seconds).
    pub(crate) fn start() -> (Self, i64) {
        let clock = Self {
            started: Some(Instant::now()),
        };
        (clock, unix_now())
    }

    /// A turn that ends without having started (queued, or refused before it began).
    pub(crate) fn never_started() -> Self {
        Self { started: None }
    }

    /// `task_complete` for turn `turn_id`.
    pub(crate) fn completed(
        &self,
        turn_id: &str,
        last_agent_message: Option<String>,
    ) -> ThreadEventMsg {
        ThreadEventMsg::TurnComplete(TaskCompleteEvent {
            turn_id: turn_id.to_string(),
            last_agent_message,
            completed_at: Some(unix_now()),
            duration_ms: self.duration_ms(),
        })
    }

    /// `turn_aborted` for turn `turn_id`.
    pub(crate) fn aborted(&self, turn_id: &str, reason: TurnAbortReason) -> ThreadEventMsg {
        ThreadEventMsg::TurnAborted(TurnAbortedEvent {
            turn_id: turn_id.to_string(),
            reason,
            completed_at: Some(unix_now()),
            duration_ms: self.duration_ms(),
        })
    }

    /// `turn_failed` saying `message`, classified as `info`.
    pub(crate) fn failed(
        &self,
        message: impl Into<String>,
        info: CodexErrorInfo,
    ) -> ThreadEventMsg {
        ThreadEventMsg::TurnFailed(ErrorEvent {
            message: message.into(),
            codex_error_info: Some(info),
            completed_at: Some(unix_now()),
            duration_ms: self.duration_ms(),
        })
    }

    fn duration_ms(&self) -> Option<i64> {
        self.started
            .map(|started| i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX))
    }
}

/// Now, in Unix seconds.
fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}
