//! The engine's own events: one numbered log per thread, in terms of items.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::tagged::Text;
use crate::{
    ApplyPatchApprovalRequestEvent, ApprovalDecision, ErrorEvent, ExecApprovalRequestEvent,
    ExecOutputStream, McpToolCallApprovalRequest, Question, SessionConfiguredEvent,
    StreamErrorEvent, TaskCompleteEvent, TaskStartedEvent, ThreadItem, TokenCountEvent,
    TurnAbortedEvent, TurnDiffEvent, UserInputRequest, WarningEvent,
};

/// One entry of a thread's event log.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThreadEvent {
    /// Position in the thread's log: starts at 1, increases by one per event, never reused,
    /// continued across restarts.
    pub seq: u64,
    /// The thread. The ids are shared: every event of a log holds the same thread id, and
    /// consecutive ones the same turn and submission ids.
    pub thread_id: Arc<str>,
    /// The turn it belongs to; `None` for thread-level events (`session_configured`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<Arc<str>>,
    /// The id of the submission that caused it (`""` for thread-level events); Codex's `Event.id`.
    pub submission_id: Arc<str>,
    /// What happened.
    pub msg: ThreadEventMsg,
}

impl<'de> Deserialize<'de> for ThreadEvent {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        ThreadEventRead::deserialize(deserializer).map(|read| read.sharing_ids_of(None))
    }
}

/// A [`ThreadEvent`] as read, its ids still borrowed from the input where they can be:
/// decoding a run of events of one log, each shares the ids it has in common with the
/// one before ([`ThreadEventRead::sharing_ids_of`]) instead of allocating its own.
#[derive(Debug, Deserialize)]
pub struct ThreadEventRead<'a> {
    seq: u64,
    #[serde(borrow)]
    thread_id: Text<'a>,
    #[serde(default, borrow)]
    turn_id: Option<Text<'a>>,
    #[serde(default, borrow)]
    submission_id: Option<Text<'a>>,
    msg: ThreadEventMsg,
}

impl ThreadEventRead<'_> {
    /// The event, holding `previous`'s ids where they are equal to its own.
    pub fn sharing_ids_of(self, previous: Option<&ThreadEvent>) -> ThreadEvent {
        fn shared(text: &str, previous: Option<&Arc<str>>) -> Arc<str> {
            match previous {
                Some(id) if **id == *text => id.clone(),
                _ => Arc::from(text),
            }
        }
        ThreadEvent {
            seq: self.seq,
            thread_id: shared(&self.thread_id.0, previous.map(|p| &p.thread_id)),
            turn_id: self
                .turn_id
                .map(|turn| shared(&turn.0, previous.and_then(|p| p.turn_id.as_ref()))),
            submission_id: shared(
                self.submission_id.as_ref().map_or("", |id| &id.0),
                previous.map(|p| &p.submission_id),
            ),
            msg: self.msg,
        }
    }
}

/// Everything a thread reports.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ThreadEventMsg {
    /// The thread is configured: the first event of a thread, and again whenever it is resumed.
    SessionConfigured(Box<SessionConfiguredEvent>),
    /// A turn began.
    TurnStarted(TaskStartedEvent),
    /// An item began.
    ItemStarted(ItemEvent),
    /// An item changed state: a command's process started, a patch began applying, the plan changed.
    ItemUpdated(ItemEvent),
    /// An item is finished; this is its final form.
    ItemCompleted(ItemEvent),
    /// A piece of an agent message item's text as it streams.
    AgentMessageDelta(ItemDeltaEvent),
    /// A piece of a reasoning item's text as it streams.
    ReasoningDelta(ItemDeltaEvent),
    /// A chunk of a running command's output.
    CommandOutputDelta(CommandOutputDeltaEvent),
    /// A question was answered (by the user, or by the driver for them).
    ApprovalResolved(ApprovalResolvedEvent),
    /// The turn's cumulative diff changed.
    TurnDiff(TurnDiffEvent),
    /// Token usage after a model response.
    TokenCount(Box<TokenCountEvent>),
    /// The model stream failed and is being retried.
    StreamError(StreamErrorEvent),
    /// Something non-fatal the user should know.
    Warning(WarningEvent),
    /// The turn finished.
    TurnComplete(TaskCompleteEvent),
    /// The turn was stopped before it finished.
    TurnAborted(TurnAbortedEvent),
    /// The turn failed.
    TurnFailed(ErrorEvent),
    /// The thread has stopped.
    ShutdownComplete,
    /// An MCP server of the thread is starting, started or failed to.
    McpStartupUpdate(crate::McpStartupUpdateEvent),
    /// Every MCP server of the thread has started or failed.
    McpStartupComplete(crate::McpStartupCompleteEvent),
    /// The turn waits for the user's answer to a question about one of its items. Written
    /// under the question kind's own tag (`exec_approval_request`, `patch_approval_request`,
    /// `mcp_tool_call_approval_request`), as the rollouts have always had them.
    #[serde(untagged)]
    QuestionAsked(Box<QuestionAsked>),
}

crate::tagged::tag_first_deserialize!(ThreadEventMsg, "a thread event: an object with a `type`", {
    "session_configured" => SessionConfigured(Box<SessionConfiguredEvent>),
    "turn_started" => TurnStarted(TaskStartedEvent),
    "item_started" => ItemStarted(ItemEvent),
    "item_updated" => ItemUpdated(ItemEvent),
    "item_completed" => ItemCompleted(ItemEvent),
    "agent_message_delta" => AgentMessageDelta(ItemDeltaEvent),
    "reasoning_delta" => ReasoningDelta(ItemDeltaEvent),
    "command_output_delta" => CommandOutputDelta(CommandOutputDeltaEvent),
    "exec_approval_request" => QuestionAsked(ExecApprovalRequest as QuestionAsked),
    "patch_approval_request" => QuestionAsked(PatchApprovalRequest as QuestionAsked),
    "mcp_tool_call_approval_request" => QuestionAsked(McpToolCallApproval as QuestionAsked),
    "mcp_elicitation_request" => QuestionAsked(McpElicitation as QuestionAsked),
    "user_input_request" => QuestionAsked(UserInput as QuestionAsked),
    "approval_resolved" => ApprovalResolved(ApprovalResolvedEvent),
    "turn_diff" => TurnDiff(TurnDiffEvent),
    "token_count" => TokenCount(Box<TokenCountEvent>),
    "stream_error" => StreamError(StreamErrorEvent),
    "warning" => Warning(WarningEvent),
    "turn_complete" => TurnComplete(TaskCompleteEvent),
    "turn_aborted" => TurnAborted(TurnAbortedEvent),
    "turn_failed" => TurnFailed(ErrorEvent),
    "shutdown_complete" => ShutdownComplete,
    "mcp_startup_update" => McpStartupUpdate(crate::McpStartupUpdateEvent),
    "mcp_startup_complete" => McpStartupComplete(crate::McpStartupCompleteEvent),
});

impl ThreadEventMsg {
    /// Whether this event ends a turn.
    pub fn ends_turn(&self) -> bool {
        matches!(
            self,
            Self::TurnComplete(_) | Self::TurnAborted(_) | Self::TurnFailed(_)
        )
    }

    /// Whether this is a streaming delta, whose content its completed item repeats.
    pub fn is_delta(&self) -> bool {
        matches!(
            self,
            Self::AgentMessageDelta(_) | Self::ReasoningDelta(_) | Self::CommandOutputDelta(_)
        )
    }
}

/// Payload of `item_started`, `item_updated` and `item_completed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemEvent {
    /// The item as it now stands.
    pub item: ThreadItem,
}

/// Payload of text deltas.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ItemDeltaEvent {
    /// The item the text belongs to.
    pub item_id: String,
    /// The new text.
    pub delta: String,
}

/// Payload of `command_output_delta`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandOutputDeltaEvent {
    /// The command item.
    pub item_id: String,
    /// The model's tool call id.
    pub call_id: String,
    /// Which stream.
    pub stream: ExecOutputStream,
    /// Raw bytes, base64 on the wire.
    #[serde(with = "crate::events::base64_bytes")]
    pub chunk: Vec<u8>,
}

/// Payload of `QuestionAsked`: the question and the item it is about.
#[derive(Debug, Clone, PartialEq)]
pub struct QuestionAsked {
    /// The item waiting for the answer (a command, a file change, a tool call).
    pub item_id: String,
    /// What is asked.
    pub question: Question,
}

impl Serialize for QuestionAsked {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        /// The disk and wire form: the kind's tag, the item, then the question's fields.
        #[derive(Serialize)]
        #[serde(tag = "type", rename_all = "snake_case")]
        #[allow(
            clippy::enum_variant_names,
            reason = "the variant names are the tags the rollouts have always had"
        )]
        enum Written<'a> {
            ExecApprovalRequest {
                item_id: &'a str,
                #[serde(flatten)]
                request: &'a ExecApprovalRequestEvent,
            },
            PatchApprovalRequest {
                item_id: &'a str,
                #[serde(flatten)]
                request: &'a ApplyPatchApprovalRequestEvent,
            },
            McpToolCallApprovalRequest {
                item_id: &'a str,
                #[serde(flatten)]
                request: &'a McpToolCallApprovalRequest,
            },
            McpElicitationRequest {
                item_id: &'a str,
                #[serde(flatten)]
                request: &'a crate::McpElicitationRequest,
            },
            UserInputRequest {
                item_id: &'a str,
                #[serde(flatten)]
                request: &'a UserInputRequest,
            },
        }
        let item_id = &self.item_id;
        match &self.question {
            Question::Exec(request) => Written::ExecApprovalRequest { item_id, request },
            Question::Patch(request) => Written::PatchApprovalRequest { item_id, request },
            Question::McpToolCall(request) => {
                Written::McpToolCallApprovalRequest { item_id, request }
            }
            Question::McpElicitation(request) => {
                Written::McpElicitationRequest { item_id, request }
            }
            Question::UserInput(request) => Written::UserInputRequest { item_id, request },
        }
        .serialize(serializer)
    }
}

/// How `exec_approval_request` reads.
#[derive(Deserialize)]
struct ExecApprovalRequest {
    item_id: String,
    #[serde(flatten)]
    request: ExecApprovalRequestEvent,
}

impl From<ExecApprovalRequest> for QuestionAsked {
    fn from(read: ExecApprovalRequest) -> Self {
        Self {
            item_id: read.item_id,
            question: Question::Exec(read.request),
        }
    }
}

/// How `patch_approval_request` reads.
#[derive(Deserialize)]
struct PatchApprovalRequest {
    item_id: String,
    #[serde(flatten)]
    request: ApplyPatchApprovalRequestEvent,
}

impl From<PatchApprovalRequest> for QuestionAsked {
    fn from(read: PatchApprovalRequest) -> Self {
        Self {
            item_id: read.item_id,
            question: Question::Patch(read.request),
        }
    }
}

/// How `mcp_tool_call_approval_request` reads.
#[derive(Deserialize)]
struct McpToolCallApproval {
    item_id: String,
    #[serde(flatten)]
    request: McpToolCallApprovalRequest,
}

impl From<McpToolCallApproval> for QuestionAsked {
    fn from(read: McpToolCallApproval) -> Self {
        Self {
            item_id: read.item_id,
            question: Question::McpToolCall(read.request),
        }
    }
}

/// How `mcp_elicitation_request` reads.
#[derive(Deserialize)]
struct McpElicitation {
    item_id: String,
    #[serde(flatten)]
    request: crate::McpElicitationRequest,
}

impl From<McpElicitation> for QuestionAsked {
    fn from(read: McpElicitation) -> Self {
        Self {
            item_id: read.item_id,
            question: Question::McpElicitation(read.request),
        }
    }
}

/// How `user_input_request` reads.
#[derive(Deserialize)]
struct UserInput {
    item_id: String,
    #[serde(flatten)]
    request: UserInputRequest,
}

impl From<UserInput> for QuestionAsked {
    fn from(read: UserInput) -> Self {
        Self {
            item_id: read.item_id,
            question: Question::UserInput(read.request),
        }
    }
}

/// Payload of `approval_resolved`: the answer to a `QuestionAsked`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalResolvedEvent {
    /// The item the request was about.
    pub item_id: String,
    /// The request's `call_id`.
    pub call_id: String,
    /// The answer.
    pub decision: ApprovalDecision,
}
