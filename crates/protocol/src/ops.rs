//! What a front door can ask of a thread.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::{AskForApproval, Reply, ReviewRequest, SandboxPolicy};

/// An op with the id its events will carry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Submission {
    /// Echoed as `Event::id` on the events this op causes.
    pub id: String,
    /// What to do.
    pub op: Op,
}

/// A request to a running thread.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Op {
    /// Start a turn with this user input (queued behind a turn still running).
    /// `Thread::start_turn` builds it, minting the turn id.
    UserInput {
        /// The new turn's id (a UUIDv7 minted by the engine's thread handle).
        turn_id: String,
        /// The input parts.
        items: Vec<InputItem>,
        /// Settings this turn changes, for itself and every later turn.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        overrides: Option<TurnOverrides>,
        /// A JSON Schema the turn's final answer must follow (this turn only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output_schema: Option<serde_json::Value>,
    },
    /// Run a review as turn `turn_id` (queued like any turn): an isolated reviewer
    /// with its own history looks at the target and reports findings.
    /// `Thread::submit_review` builds it, minting the turn id.
    Review {
        /// The review turn's id.
        turn_id: String,
        /// What to review.
        request: ReviewRequest,
    },
    /// Compact the history now, as a turn of its own (`/compact`): the model summarizes
    /// the conversation and the summary replaces it. `Thread::submit_compact` builds it.
    Compact {
        /// The compaction turn's id (minted by the engine's thread handle).
        turn_id: String,
    },
    /// Stop turn `turn_id` (running: kill its commands; queued: drop it) and emit
    /// `turn_aborted`; a turn that already ended makes this a no-op.
    Interrupt {
        /// The turn to stop.
        turn_id: String,
    },
    /// Answer the question (`question_asked`) a turn waits on.
    Answer {
        /// The question's `call_id`.
        id: String,
        /// The answer.
        reply: Reply,
    },
    /// End the thread: interrupt any turn and stop.
    Shutdown,
}

/// Settings a turn changes for itself and every later turn of its thread.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnOverrides {
    /// Working directory (absolute, or relative to the current one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<PathBuf>,
    /// Model name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Approval policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_policy: Option<AskForApproval>,
    /// Sandbox policy (mode, writable roots, network).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox_policy: Option<SandboxPolicy>,
}

/// One part of user input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum InputItem {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image file on this machine, read when the turn starts and sent to the model.
    LocalImage {
        /// The file (absolute, or relative to the thread's working directory).
        path: PathBuf,
    },
    /// An image given by URL: a `data:image/…;base64,` URL or an `http(s)` address the
    /// model server fetches itself.
    Image {
        /// The image's URL.
        url: String,
    },
}

/// A user's decision about an approval request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// Run it this once.
    Approved,
    /// Run it, and the same thing again this session without asking.
    ApprovedForSession,
    /// Do not run it; the turn goes on.
    #[default]
    Denied,
    /// Do not run it; the turn ends.
    Abort,
    /// Nobody answered in time; treated as denied.
    TimedOut,
}
