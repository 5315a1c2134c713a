//! Codex-compatible custom MCP messages, each method name defined once and
//! tied to its params type.

use std::collections::BTreeMap;
use std::path::PathBuf;

use deputy_protocol::{ApprovalDecision, EventMsg, FileChange, FormAction, ParsedCommand, Reply};
use rmcp::model::{CustomNotification, CustomRequest, ServerNotification, ServerRequest};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A server→client message outside the MCP spec, with its method and params type.
pub(crate) trait CustomMethod {
    /// The JSON-RPC method name.
    const METHOD: &'static str;
    /// The params object.
    type Params: Serialize;
}

/// `codex/event`: one engine event, tagged with the originating request and thread.
pub(crate) struct CodexEvent;

impl CustomMethod for CodexEvent {
    const METHOD: &'static str = "codex/event";
    type Params = CodexEventParams;
}

/// `elicitation/create` with Codex's extra approval fields beside the standard ones.
pub(crate) struct ApprovalElicitation;

impl CustomMethod for ApprovalElicitation {
    const METHOD: &'static str = "elicitation/create";
    type Params = ApprovalElicitationParams;
}

/// `notifications/initial_state`: everything a conversation has reported so far, the
/// first message of a `conversationStream`.
pub(crate) struct InitialState;

impl CustomMethod for InitialState {
    const METHOD: &'static str = "notifications/initial_state";
    type Params = InitialStateParams;
}

/// Builds the notification for a custom method.
pub(crate) fn notification<M: CustomMethod>(params: &M::Params) -> ServerNotification {
    ServerNotification::CustomNotification(CustomNotification::new(
        M::METHOD,
        serde_json::to_value(params).ok(),
    ))
}

/// The `msg.type` of a `codex/event` notification.
pub(crate) fn event_kind(notification: &ServerNotification) -> Option<String> {
    let ServerNotification::CustomNotification(custom) = notification else {
        return None;
    };
    (custom.method == CodexEvent::METHOD)
        .then(|| {
            custom.params.as_ref()?["msg"]["type"]
                .as_str()
                .map(str::to_string)
        })
        .flatten()
}

/// Of a `codex/event` notification: its thread, its request id and its `msg.type`.
pub(crate) fn codex_event_origin(
    notification: &ServerNotification,
) -> Option<(String, Value, String)> {
    let kind = event_kind(notification)?;
    let ServerNotification::CustomNotification(custom) = notification else {
        return None;
    };
    let meta = &custom.params.as_ref()?["_meta"];
    let thread = meta["threadId"].as_str()?.to_string();
    let request = meta.get("requestId")?.clone();
    Some((thread, request, kind))
}

/// The conversation of a `notifications/initial_state` notification.
pub(crate) fn initial_state_conversation(notification: &ServerNotification) -> Option<String> {
    let ServerNotification::CustomNotification(custom) = notification else {
        return None;
    };
    if custom.method != InitialState::METHOD {
        return None;
    }
    let meta = &custom.params.as_ref()?["_meta"];
    meta["conversationId"].as_str().map(str::to_string)
}

/// Builds the request for a custom method.
pub(crate) fn request<M: CustomMethod>(params: &M::Params) -> ServerRequest {
    ServerRequest::CustomRequest(CustomRequest::new(
        M::METHOD,
        serde_json::to_value(params).ok(),
    ))
}

/// One live event of a conversation stream: the notification's method is the event's
/// own type (`agent_message`, `task_complete`, …), as seed 003's clients read them.
pub(crate) fn conversation_event(msg: &EventMsg) -> Option<ServerNotification> {
    let params = serde_json::to_value(ConversationEventParams { msg })
        .inspect_err(|err| tracing::warn!("cannot serialize an event: {err}"))
        .ok()?;
    // The method is serde's tag of the event, so it can never disagree with `msg.type`.
    let method = params["msg"]["type"].as_str()?.to_string();
    Some(ServerNotification::CustomNotification(
        CustomNotification::new(method, Some(params)),
    ))
}

/// Params of a live conversation event, and one entry of `initial_state`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ConversationEventParams<M> {
    /// The event.
    pub(crate) msg: M,
}

/// Params of `notifications/initial_state`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct InitialStateParams {
    /// Which conversation the state is of.
    #[serde(rename = "_meta")]
    pub(crate) meta: ConversationMeta,
    /// The state.
    pub(crate) initial_state: InitialStatePayload,
}

/// `_meta` of `notifications/initial_state`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ConversationMeta {
    /// The conversation (thread) id.
    #[serde(rename = "conversationId")]
    pub(crate) conversation_id: String,
}

/// The conversation so far.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct InitialStatePayload {
    /// Every event since the conversation was created, in order.
    pub(crate) events: Vec<ConversationEventParams<EventMsg>>,
}

/// Params of `codex/event`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CodexEventParams {
    /// Which call and thread the event belongs to.
    #[serde(rename = "_meta")]
    pub(crate) meta: EventMeta,
    /// The engine event id (the submission id).
    pub(crate) id: String,
    /// The event itself.
    pub(crate) msg: EventMsg,
}

/// `_meta` of `codex/event`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct EventMeta {
    /// The `tools/call` request id, as the client sent it.
    #[serde(rename = "requestId")]
    pub(crate) request_id: Value,
    /// The thread id.
    #[serde(rename = "threadId")]
    pub(crate) thread_id: String,
}

/// Params of an approval `elicitation/create`: the standard `message` and
/// `requestedSchema`, then Codex's fields.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct ApprovalElicitationParams {
    pub(crate) message: String,
    #[serde(rename = "requestedSchema")]
    pub(crate) requested_schema: Value,
    #[serde(rename = "threadId")]
    pub(crate) thread_id: String,
    pub(crate) codex_elicitation: &'static str,
    pub(crate) codex_mcp_tool_call_id: String,
    pub(crate) codex_event_id: String,
    pub(crate) codex_call_id: String,
    #[serde(flatten)]
    pub(crate) details: ApprovalDetails,
}

/// What is being approved.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub(crate) enum ApprovalDetails {
    /// A command.
    Exec {
        codex_command: Vec<String>,
        codex_cwd: PathBuf,
        codex_parsed_cmd: Vec<ParsedCommand>,
        #[serde(skip_serializing_if = "Option::is_none")]
        codex_reason: Option<String>,
    },
    /// A patch.
    Patch {
        #[serde(skip_serializing_if = "Option::is_none")]
        codex_reason: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        codex_grant_root: Option<PathBuf>,
        codex_changes: BTreeMap<PathBuf, FileChange>,
    },
    /// The model's questions to the user (the form is the schema; nothing to add).
    UserInput {},
    /// A tool call to an MCP server.
    McpToolCall {
        codex_mcp_server: String,
        codex_mcp_tool: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        codex_mcp_arguments: Option<Value>,
        #[serde(skip_serializing_if = "Option::is_none")]
        codex_reason: Option<String>,
    },
    /// A form an MCP server deputy uses asks the user to fill in (relayed as it asked it).
    McpElicitation { codex_mcp_server: String },
}

/// Reads the client's answer to a relayed form: MCP's `{action, content}`.
pub(crate) fn parse_form_reply(reply: &Value) -> Reply {
    #[derive(Deserialize)]
    struct Form {
        action: FormAction,
        #[serde(default)]
        content: Option<Value>,
    }
    match serde_json::from_value::<Form>(reply.clone()) {
        Ok(Form { action, content }) => Reply::Form { action, content },
        Err(_) => Reply::Form {
            action: FormAction::Decline,
            content: None,
        },
    }
}

/// The schema offered to the client: one `decision` enum.
pub(crate) fn decision_schema() -> Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "decision": {
                "type": "string",
                "title": "Decision",
                "enum": ["approved", "approved_for_session", "denied", "abort"],
                "description": "approved: run it once; approved_for_session: also allow it again this session; denied: skip it and continue; abort: stop the turn"
            }
        },
        "required": ["decision"]
    })
}

/// How a client's reply to an approval elicitation was understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ApprovalReply {
    /// A decision the user made.
    Decided(ApprovalDecision),
    /// The reply could not be understood; the action is denied for this reason.
    Malformed(String),
}

/// Reads either reply form: Codex's `{decision}` or MCP's `{action, content}`.
pub(crate) fn parse_approval_reply(reply: &Value) -> ApprovalReply {
    #[derive(Deserialize)]
    struct CodexForm {
        decision: ApprovalDecision,
    }
    if let Ok(CodexForm { decision }) = serde_json::from_value(reply.clone()) {
        return ApprovalReply::Decided(decision);
    }
    match reply.get("action").and_then(Value::as_str) {
        Some("accept") => match reply.get("content").and_then(|c| c.get("decision")) {
            None | Some(Value::Null) => ApprovalReply::Decided(ApprovalDecision::Approved),
            Some(decision) => match serde_json::from_value(decision.clone()) {
                Ok(decision) => ApprovalReply::Decided(decision),
                Err(_) => ApprovalReply::Malformed(format!(
                    "the client accepted with an unknown decision {decision}"
                )),
            },
        },
        Some("decline") => ApprovalReply::Decided(ApprovalDecision::Denied),
        Some("cancel") => ApprovalReply::Decided(ApprovalDecision::Abort),
        _ => ApprovalReply::Malformed(format!(
            "the client's reply was neither {{\"decision\": …}} nor {{\"action\": …}}: {reply}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn both_reply_forms_map_to_decisions() {
        use ApprovalDecision::*;
        let cases = [
            (json!({"decision": "approved"}), Approved),
            (
                json!({"decision": "approved_for_session"}),
                ApprovedForSession,
            ),
            (json!({"decision": "denied"}), Denied),
            (json!({"decision": "abort"}), Abort),
            (
                json!({"action": "accept", "content": {"decision": "approved_for_session"}}),
                ApprovedForSession,
            ),
            (json!({"action": "accept", "content": {}}), Approved),
            (json!({"action": "accept"}), Approved),
            (json!({"action": "decline"}), Denied),
            (json!({"action": "cancel"}), Abort),
        ];
        for (reply, expected) in cases {
            assert_eq!(
                parse_approval_reply(&reply),
                ApprovalReply::Decided(expected),
                "{reply}"
            );
        }
    }

    #[test]
    fn malformed_replies_are_reported_not_guessed() {
        for reply in [
            json!({}),
            json!({"decision": "maybe"}),
            json!("yes"),
            json!({"action": "accept", "content": {"decision": 3}}),
        ] {
            assert!(
                matches!(parse_approval_reply(&reply), ApprovalReply::Malformed(_)),
                "{reply}"
            );
        }
    }

    #[test]
    fn a_conversation_event_is_sent_under_its_own_type_with_msg_only() {
        let msg = EventMsg::AgentMessage(deputy_protocol::AgentMessageEvent {
            message: "Done".into(),
        });
        let ServerNotification::CustomNotification(note) = conversation_event(&msg).unwrap() else {
            panic!("a custom notification")
        };
        assert_eq!(note.method, "agent_message");
        assert_eq!(
            note.params,
            Some(json!({"msg": {"type": "agent_message", "message": "Done"}}))
        );
    }

    #[test]
    fn initial_state_serializes_as_seed_003_reads_it() {
        let params = InitialStateParams {
            meta: ConversationMeta {
                conversation_id: "c".into(),
            },
            initial_state: InitialStatePayload {
                events: vec![ConversationEventParams {
                    msg: EventMsg::ShutdownComplete,
                }],
            },
        };
        assert_eq!(
            serde_json::to_value(&params).unwrap(),
            json!({"_meta": {"conversationId": "c"},
                   "initial_state": {"events": [{"msg": {"type": "shutdown_complete"}}]}})
        );
    }

    #[test]
    fn codex_event_serializes_with_meta_id_and_msg() {
        let params = CodexEventParams {
            meta: EventMeta {
                request_id: json!(3),
                thread_id: "t".into(),
            },
            id: "3".into(),
            msg: EventMsg::ShutdownComplete,
        };
        assert_eq!(
            serde_json::to_value(&params).unwrap(),
            json!({"_meta": {"requestId": 3, "threadId": "t"}, "id": "3", "msg": {"type": "shutdown_complete"}})
        );
    }
}
