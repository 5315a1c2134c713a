//! Questions asked of the client: the driver's [`Approver`] for the app-server. A
//! question goes out as a server request in order with the thread's notifications
//! ([`Approver::put`]), its answer is read by the question's kind ([`Approver::ask`]), and
//! once the driver's router settles it — the client answered, another door did, or its
//! turn or thread ended — the client is told with `serverRequest/resolved`
//! ([`Approver::settled`]). The open questions themselves are the router's to keep.

use std::future::Future;

use deputy_core::command_safety::escape_command_for_display;
use deputy_core::driver::{Approver, Asked};
use deputy_protocol::{
    self as engine, ApprovalDecision as Decision, FormAction, McpToolCallApprovalRequest, Question,
    Reply,
};
use serde::de::DeserializeOwned;
use tokio::sync::oneshot;

use crate::outgoing::{ClientReply, Outgoing};
use crate::protocol::{
    ApprovalDecision, CommandExecutionRequestApprovalParams,
    CommandExecutionRequestApprovalResponse, FileChangeRequestApprovalParams,
    FileChangeRequestApprovalResponse, McpElicitationMode, McpElicitationObjectType,
    McpElicitationSchema, McpServerElicitationAction, McpServerElicitationRequestParams,
    McpServerElicitationRequestResponse, RequestId, ServerNotification, ServerRequest,
    ServerRequestResolvedNotification, ToolRequestUserInputOption, ToolRequestUserInputParams,
    ToolRequestUserInputQuestion, ToolRequestUserInputResponse,
};
use crate::translate::command_actions;

/// Asks a thread's questions of the client.
pub(crate) struct ClientApprover {
    outgoing: Outgoing,
}

impl ClientApprover {
    /// An approver sending its requests through `outgoing`.
    pub(crate) fn new(outgoing: Outgoing) -> Self {
        Self { outgoing }
    }
}

/// A question sent to the client and not yet settled.
pub(crate) struct Sent {
    thread_id: String,
    request_id: RequestId,
    /// Where the answer arrives; taken by whoever awaits it.
    reply: Option<oneshot::Receiver<ClientReply>>,
}

impl Approver for ClientApprover {
    type Kept = Sent;

    async fn put(&self, asked: &Asked) -> Sent {
        let (request_id, reply) = self.outgoing.request(server_request(asked)).await;
        Sent {
            thread_id: asked.thread_id.clone(),
            request_id,
            reply: Some(reply),
        }
    }

    fn ask(&self, asked: Asked, sent: &mut Sent) -> impl Future<Output = Reply> + Send + 'static {
        let reply = sent.reply.take();
        async move {
            let Some(reply) = reply else {
                return Reply::denied("the question could not be sent to the client");
            };
            match reply.await {
                Ok(Ok(result)) => read_answer(&asked.question, result),
                Ok(Err(error)) => Reply::denied(format!(
                    "the client answered with an error ({})",
                    error.message
                )),
                Err(_) => Reply::denied("the client left before answering"),
            }
        }
    }

    async fn settled(&self, sent: Sent) {
        self.outgoing.withdraw(&sent.request_id);
        self.outgoing
            .notify(ServerNotification::ServerRequestResolved(
                ServerRequestResolvedNotification {
                    thread_id: sent.thread_id,
                    request_id: sent.request_id,
                },
            ))
            .await;
    }
}

/// The server request that asks `asked`.
pub(crate) fn server_request(asked: &Asked) -> ServerRequest {
    let (thread_id, turn_id, item_id) = (
        asked.thread_id.clone(),
        asked.turn_id.clone(),
        asked.item_id.clone(),
    );
    match &asked.question {
        Question::Exec(q) => {
            ServerRequest::CommandExecutionRequestApproval(CommandExecutionRequestApprovalParams {
                thread_id,
                turn_id,
                item_id,
                reason: q.reason.clone(),
                command: Some(escape_command_for_display(&q.command)),
                cwd: Some(q.cwd.clone()),
                command_actions: Some(command_actions(&q.parsed_cmd)),
                available_decisions: Some(ApprovalDecision::ALL.to_vec()),
            })
        }
        Question::Patch(q) => {
            ServerRequest::FileChangeRequestApproval(FileChangeRequestApprovalParams {
                thread_id,
                turn_id,
                item_id,
                reason: q.reason.clone(),
                grant_root: q.grant_root.clone(),
            })
        }
        Question::McpToolCall(q) => {
            ServerRequest::McpServerElicitationRequest(McpServerElicitationRequestParams {
                thread_id,
                turn_id: Some(turn_id),
                server_name: q.server.clone(),
                mode: McpElicitationMode::Form,
                message: mcp_tool_question(q),
                requested_schema: McpElicitationSchema {
                    schema_uri: None,
                    kind: McpElicitationObjectType::Object,
                    properties: Default::default(),
                    required: None,
                },
                meta: Some(serde_json::json!({
                    "codex_approval_kind": "mcp_tool_call",
                    "tool": q.tool,
                    "arguments": q.arguments,
                })),
            })
        }
        // The server's own form, relayed as it asked it.
        Question::McpElicitation(q) => {
            ServerRequest::McpServerElicitationRequest(McpServerElicitationRequestParams {
                thread_id,
                turn_id: Some(turn_id),
                server_name: q.server.clone(),
                mode: McpElicitationMode::Form,
                message: q.message.clone(),
                requested_schema: McpElicitationSchema {
                    schema_uri: schema_part(&q.requested_schema, "$schema"),
                    kind: McpElicitationObjectType::Object,
                    properties: schema_part(&q.requested_schema, "properties").unwrap_or_default(),
                    required: schema_part(&q.requested_schema, "required"),
                },
                meta: None,
            })
        }
        Question::UserInput(q) => ServerRequest::ToolRequestUserInput(ToolRequestUserInputParams {
            thread_id,
            turn_id,
            item_id,
            questions: q
                .questions
                .iter()
                .map(|question| ToolRequestUserInputQuestion {
                    id: question.id.clone(),
                    header: question.header.clone(),
                    question: question.question.clone(),
                    is_other: true,
                    is_secret: false,
                    options: (!question.options.is_empty()).then(|| {
                        question
                            .options
                            .iter()
                            .map(|option| ToolRequestUserInputOption {
                                label: option.label.clone(),
                                description: option.description.clone(),
                            })
                            .collect()
                    }),
                })
                .collect(),
        }),
    }
}

/// The member `key` of a server's form schema, when it has the type Codex's schema gives it
/// (anything else is left out rather than sent malformed).
fn schema_part<T: serde::de::DeserializeOwned>(schema: &serde_json::Value, key: &str) -> Option<T> {
    schema
        .get(key)
        .and_then(|part| serde_json::from_value(part.clone()).ok())
}

/// The question for an MCP tool call (wire text: the client escapes what it shows).
fn mcp_tool_question(q: &McpToolCallApprovalRequest) -> String {
    let mut message = format!(
        "Allow the agent to call the tool `{}` of the MCP server `{}`?",
        q.tool, q.server
    );
    if let Some(arguments) = &q.arguments {
        message.push_str(&format!("\narguments: {arguments}"));
    }
    if let Some(reason) = &q.reason {
        message.push_str(&format!("\nreason: {reason}"));
    }
    message
}

/// The engine's reply for the client's answer to `question`, read as that question's
/// answer type; an answer that cannot be read declines.
fn read_answer(question: &Question, result: serde_json::Value) -> Reply {
    fn read<T: DeserializeOwned>(result: serde_json::Value) -> Result<T, Reply> {
        serde_json::from_value(result)
            .map_err(|err| Reply::denied(format!("the client's answer could not be read ({err})")))
    }
    let decision = match question {
        Question::Exec(_) => read::<CommandExecutionRequestApprovalResponse>(result)
            .map(|answer| engine_decision(answer.decision)),
        Question::Patch(_) => read::<FileChangeRequestApprovalResponse>(result)
            .map(|answer| engine_decision(answer.decision)),
        Question::McpToolCall(_) => {
            read::<McpServerElicitationRequestResponse>(result).map(|answer| match answer.action {
                McpServerElicitationAction::Accept => Decision::Approved,
                McpServerElicitationAction::Decline => Decision::Denied,
                McpServerElicitationAction::Cancel => Decision::Abort,
            })
        }
        Question::McpElicitation(_) => {
            return read::<McpServerElicitationRequestResponse>(result).map_or_else(
                |refused| refused,
                |answer| Reply::Form {
                    action: match answer.action {
                        McpServerElicitationAction::Accept => FormAction::Accept,
                        McpServerElicitationAction::Decline => FormAction::Decline,
                        McpServerElicitationAction::Cancel => FormAction::Cancel,
                    },
                    content: answer.content,
                },
            );
        }
        Question::UserInput(_) => {
            return read::<ToolRequestUserInputResponse>(result).map_or_else(
                |refused| refused,
                |response| {
                    let answers: std::collections::BTreeMap<String, String> = response
                        .answers
                        .into_iter()
                        .filter(|(_, answer)| !answer.answers.is_empty())
                        .map(|(id, answer)| (id, answer.answers.join(", ")))
                        .collect();
                    if answers.is_empty() {
                        Reply::denied("the user answered none of the questions")
                    } else {
                        Reply::Answers { answers }
                    }
                },
            );
        }
    };
    decision.map_or_else(|refused| refused, Reply::decided)
}

/// The engine's decision for the client's.
pub(crate) fn engine_decision(decision: ApprovalDecision) -> engine::ApprovalDecision {
    match decision {
        ApprovalDecision::Accept => Decision::Approved,
        ApprovalDecision::AcceptForSession => Decision::ApprovedForSession,
        ApprovalDecision::Decline => Decision::Denied,
        ApprovalDecision::Cancel => Decision::Abort,
    }
}

#[cfg(test)]
mod tests {
    use deputy_protocol::{ApplyPatchApprovalRequestEvent, ExecApprovalRequestEvent};
    use serde_json::json;

    use super::*;
    use crate::protocol::JsonRpcError;

    fn exec() -> Question {
        Question::Exec(ExecApprovalRequestEvent {
            call_id: "c".into(),
            turn_id: "u".into(),
            command: vec!["true".into()],
            cwd: "/".into(),
            reason: None,
            parsed_cmd: Vec::new(),
        })
    }

    fn patch() -> Question {
        Question::Patch(ApplyPatchApprovalRequestEvent {
            call_id: "c".into(),
            turn_id: "u".into(),
            changes: Default::default(),
            reason: None,
            grant_root: None,
        })
    }

    fn mcp_tool_call() -> Question {
        Question::McpToolCall(McpToolCallApprovalRequest {
            call_id: "c".into(),
            turn_id: "u".into(),
            server: "docs".into(),
            tool: "search".into(),
            arguments: Some(json!({"q": "x"})),
            reason: None,
        })
    }

    fn asked(question: Question) -> Asked {
        Asked {
            thread_id: "t".into(),
            turn_id: "u".into(),
            event_id: "e".into(),
            item_id: "i".into(),
            question,
        }
    }

    async fn answer_to(question: Question, reply: ClientReply) -> Reply {
        let (queue, _lines) = deputy_jsonrpc::OutputQueue::new(crate::LIMITS.queue);
        let outgoing = Outgoing::new(queue);
        let approver = ClientApprover::new(outgoing);
        let (tx, rx) = oneshot::channel();
        let mut sent = Sent {
            thread_id: "t".into(),
            request_id: RequestId::Integer(0),
            reply: Some(rx),
        };
        let asking = approver.ask(asked(question), &mut sent);
        tx.send(reply).unwrap();
        asking.await
    }

    #[tokio::test]
    async fn each_decision_maps_to_the_engine_decision_for_commands_and_patches() {
        for question in [exec(), patch()] {
            for (decision, expected) in [
                ("accept", Decision::Approved),
                ("acceptForSession", Decision::ApprovedForSession),
                ("decline", Decision::Denied),
                ("cancel", Decision::Abort),
            ] {
                let reply = answer_to(question.clone(), Ok(json!({"decision": decision}))).await;
                assert_eq!(reply, Reply::decided(expected), "{decision}");
            }
        }
    }

    #[tokio::test]
    async fn an_mcp_tool_call_is_asked_as_an_elicitation_form_and_its_action_is_the_answer() {
        let ServerRequest::McpServerElicitationRequest(params) =
            server_request(&asked(mcp_tool_call()))
        else {
            panic!("not an MCP elicitation");
        };
        assert_eq!(params.server_name, "docs");
        assert_eq!(params.turn_id.as_deref(), Some("u"));
        assert!(params.message.contains("`search`"), "{}", params.message);
        assert!(
            params.message.contains(r#"{"q":"x"}"#),
            "{}",
            params.message
        );
        assert_eq!(
            params.meta.unwrap()["codex_approval_kind"],
            json!("mcp_tool_call")
        );
        for (action, expected) in [
            ("accept", Decision::Approved),
            ("decline", Decision::Denied),
            ("cancel", Decision::Abort),
        ] {
            let reply = answer_to(mcp_tool_call(), Ok(json!({"action": action}))).await;
            assert_eq!(reply, Reply::decided(expected), "{action}");
        }
    }

    #[tokio::test]
    async fn an_answer_of_another_kind_of_question_is_not_read_as_a_yes() {
        // A command answer to a tool-call question, and the other way round.
        for (question, answer) in [
            (mcp_tool_call(), json!({"decision": "accept"})),
            (exec(), json!({"action": "accept"})),
            (patch(), json!({"action": "accept"})),
        ] {
            let reply = answer_to(question, Ok(answer.clone())).await;
            assert_eq!(reply.decision(), Decision::Denied, "{answer}");
        }
    }

    #[tokio::test]
    async fn an_unreadable_answer_or_an_error_declines_with_a_reason() {
        for reply in [
            Ok(json!({"decision": "maybe"})),
            Ok(json!("yes")),
            Ok(json!({"decision": "approved"})),
            Err(JsonRpcError::internal("no")),
        ] {
            let (decision, reason) = answer_to(exec(), reply.clone()).await.into_decision();
            assert_eq!(decision, Decision::Denied, "{reply:?}");
            assert!(reason.is_some(), "{reply:?}");
        }
    }

    fn user_input() -> Question {
        Question::UserInput(engine::UserInputRequest {
            call_id: "c".into(),
            turn_id: "u".into(),
            questions: vec![
                engine::UserInputQuestion {
                    id: "db".into(),
                    header: "Database".into(),
                    question: "Which one?".into(),
                    options: vec![engine::UserInputOption {
                        label: "sqlite".into(),
                        description: "a file".into(),
                    }],
                },
                engine::UserInputQuestion {
                    id: "name".into(),
                    header: "Name".into(),
                    question: "What name?".into(),
                    options: Vec::new(),
                },
            ],
        })
    }

    #[tokio::test]
    async fn questions_to_the_user_are_asked_as_request_user_input_and_answers_read_back() {
        let ServerRequest::ToolRequestUserInput(params) = server_request(&asked(user_input()))
        else {
            panic!("not a user input request");
        };
        assert_eq!(params.questions.len(), 2);
        assert_eq!(params.questions[0].options.as_ref().map(Vec::len), Some(1));
        assert_eq!(params.questions[1].options, None);
        let reply = answer_to(
            user_input(),
            Ok(json!({"answers": {"db": {"answers": ["sqlite"]}, "name": {"answers": []}}})),
        )
        .await;
        assert_eq!(
            reply,
            Reply::Answers {
                answers: [("db".to_string(), "sqlite".to_string())].into()
            }
        );
        for unanswered in [json!({"answers": {}}), json!({"decision": "accept"})] {
            let reply = answer_to(user_input(), Ok(unanswered.clone())).await;
            assert!(matches!(reply, Reply::Decision { .. }), "{unanswered}");
        }
    }
}
