//! What the engine asks a person before it goes on, and the reply.
//!
//! Every question a turn waits on is a [`Question`]: the engine publishes it as a
//! `QuestionAsked` event about one item, each front door's approver matches it
//! exhaustively and asks in its own way, and the answer comes back as one op,
//! `Op::Answer`, carrying a [`Reply`]. A new kind of question is a new variant here:
//! every door then fails to compile until it says how it asks it.

use serde::{Deserialize, Serialize};

use crate::{ApplyPatchApprovalRequestEvent, ApprovalDecision, ExecApprovalRequestEvent};

/// A question a turn waits on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Question {
    /// May this command run?
    Exec(ExecApprovalRequestEvent),
    /// May this patch be applied?
    Patch(ApplyPatchApprovalRequestEvent),
    /// May this tool of an MCP server be called?
    McpToolCall(McpToolCallApprovalRequest),
    /// An MCP server deputy uses asks the user to fill in a form (its elicitation);
    /// answered with [`Reply::Form`].
    McpElicitation(McpElicitationRequest),
    /// The model's own questions to the user (`request_user_input`); answered with
    /// [`Reply::Answers`], or not at all (any decision means no answer).
    UserInput(UserInputRequest),
}

impl Question {
    /// The model's tool call id the turn waits on; `Op::Answer` names it.
    pub fn call_id(&self) -> &str {
        match self {
            Self::Exec(q) => &q.call_id,
            Self::Patch(q) => &q.call_id,
            Self::McpToolCall(q) => &q.call_id,
            Self::McpElicitation(q) => &q.call_id,
            Self::UserInput(q) => &q.call_id,
        }
    }

    /// The turn asking.
    pub fn turn_id(&self) -> &str {
        match self {
            Self::Exec(q) => &q.turn_id,
            Self::Patch(q) => &q.turn_id,
            Self::McpToolCall(q) => &q.turn_id,
            Self::McpElicitation(q) => &q.turn_id,
            Self::UserInput(q) => &q.turn_id,
        }
    }

    /// What is asked about, in a few words ("command", "patch", …), for messages.
    pub fn subject(&self) -> &'static str {
        match self {
            Self::Exec(_) => "command",
            Self::Patch(_) => "patch",
            Self::McpToolCall(_) => "MCP tool call",
            Self::McpElicitation(_) => "MCP server's question",
            Self::UserInput(_) => "question to the user",
        }
    }
}

/// Whether a tool of an MCP server may be called (MCP servers run outside the sandbox).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpToolCallApprovalRequest {
    /// The model's tool call id.
    pub call_id: String,
    /// The turn's id.
    pub turn_id: String,
    /// The server, as named in the configuration.
    pub server: String,
    /// The tool.
    pub tool: String,
    /// The arguments the model passes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<serde_json::Value>,
    /// Why approval is needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A form an MCP server asks the user to fill in, while one of its tools runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpElicitationRequest {
    /// The model's call of the server's tool during which it asks.
    pub call_id: String,
    /// The turn's id.
    pub turn_id: String,
    /// The server, as named in the configuration.
    pub server: String,
    /// What the server says to the user.
    pub message: String,
    /// The JSON Schema of the answer it wants (flat object of primitive fields).
    pub requested_schema: serde_json::Value,
}

/// What the user did with a form.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FormAction {
    /// Filled it in and sent it.
    Accept,
    /// Refused to answer.
    Decline,
    /// Dismissed it without choosing.
    Cancel,
}

/// Questions the model asks the user, each answered by choosing an option or in words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserInputRequest {
    /// The model's tool call id.
    pub call_id: String,
    /// The turn's id.
    pub turn_id: String,
    /// The questions, in order.
    pub questions: Vec<UserInputQuestion>,
}

/// One question of a [`UserInputRequest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserInputQuestion {
    /// Names the question in the answers.
    pub id: String,
    /// A short title.
    pub header: String,
    /// The question itself.
    pub question: String,
    /// The choices offered (none: a free answer).
    #[serde(default)]
    pub options: Vec<UserInputOption>,
}

/// One choice of a [`UserInputQuestion`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserInputOption {
    /// What the user picks; the answer when picked.
    pub label: String,
    /// What picking it means.
    #[serde(default)]
    pub description: String,
}

/// The answer to a [`Question`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Reply {
    /// A decision: the user's, or one the front door or the driver made for them, with
    /// the reason when nobody actually decided (a timeout, a client unable to ask…).
    Decision {
        /// The decision.
        decision: ApprovalDecision,
        /// Why it was decided without the user, if so.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// The answer to a form ([`Question::McpElicitation`]).
    Form {
        /// What the user did with it.
        action: FormAction,
        /// The values, when accepted.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<serde_json::Value>,
    },
    /// The user's answers to a [`Question::UserInput`], by question id.
    Answers {
        /// Question id → the answer (an option's label, or the user's words).
        answers: std::collections::BTreeMap<String, String>,
    },
}

impl Reply {
    /// The user's own decision.
    pub fn decided(decision: ApprovalDecision) -> Self {
        Self::Decision {
            decision,
            reason: None,
        }
    }

    /// A refusal made for the user, saying why.
    pub fn denied(reason: impl Into<String>) -> Self {
        Self::Decision {
            decision: ApprovalDecision::Denied,
            reason: Some(reason.into()),
        }
    }

    /// The decision this reply stands for (a form sent counts as approved, one refused
    /// as denied, one dismissed as abort; answers stand for consent).
    pub fn decision(&self) -> ApprovalDecision {
        match self {
            Self::Decision { decision, .. } => *decision,
            Self::Form { action, .. } => match action {
                FormAction::Accept => ApprovalDecision::Approved,
                FormAction::Decline => ApprovalDecision::Denied,
                FormAction::Cancel => ApprovalDecision::Abort,
            },
            Self::Answers { .. } => ApprovalDecision::Approved,
        }
    }

    /// The reply as an approval: its decision and why nobody decided, if so. Answers
    /// where a decision was asked for decide nothing: they deny.
    pub fn into_decision(self) -> (ApprovalDecision, Option<String>) {
        match self {
            Self::Decision { decision, reason } => (decision, reason),
            Self::Form { .. } => (self.decision(), None),
            Self::Answers { .. } => (
                ApprovalDecision::Denied,
                Some("the reply answered questions instead of deciding".to_string()),
            ),
        }
    }

    /// This reply as the answer to a form: a decision made instead (a timeout, a door
    /// that cannot show forms) declines it, or dismisses it when the turn is to stop;
    /// answers to other questions decline it.
    pub fn into_form(self) -> (FormAction, Option<serde_json::Value>) {
        match self {
            Self::Form { action, content } => (action, content),
            Self::Answers { .. } => (FormAction::Decline, None),
            Self::Decision { decision, .. } => match decision {
                ApprovalDecision::Approved | ApprovalDecision::ApprovedForSession => {
                    (FormAction::Accept, None)
                }
                ApprovalDecision::Denied | ApprovalDecision::TimedOut => {
                    (FormAction::Decline, None)
                }
                ApprovalDecision::Abort => (FormAction::Cancel, None),
            },
        }
    }
}
