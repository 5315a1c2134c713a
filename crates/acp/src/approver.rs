//! Approvals asked of the client: the driver's [`Approver`] for ACP, which sends
//! `session/request_permission` with the options `allow_once`, `allow_always` (approved
//! for the rest of the session) and `reject_once`, and reads the answer. An MCP server's
//! form goes to a client that fills in forms as `elicitation/create` (form mode, scoped to
//! the session and the MCP call's tool call), and its answer goes back to the server.
//!
//! The driver drops the question once it is no longer wanted (answered elsewhere, the
//! turn ended or was cancelled, the approval timeout passed); dropping the pending
//! request makes the SDK send `$/cancel_request` for it.

use std::future::Future;
use std::pin::Pin;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CreateElicitationRequest, ElicitationAction, ElicitationFormMode, ElicitationSchema,
    ElicitationSessionScope, PermissionOption, PermissionOptionKind, RequestPermissionOutcome,
    RequestPermissionRequest, SessionId, ToolCallId,
};
use deputy_core::driver::{Approver, Asked};
use deputy_protocol::{ApprovalDecision, FormAction, McpElicitationRequest, Question, Reply};

use crate::translate::permission_tool_call;

/// The options offered, with the decision each stands for.
const OPTIONS: [(&str, &str, PermissionOptionKind, ApprovalDecision); 3] = [
    (
        "allow_once",
        "Allow once",
        PermissionOptionKind::AllowOnce,
        ApprovalDecision::Approved,
    ),
    (
        "allow_always",
        "Allow for this session",
        PermissionOptionKind::AllowAlways,
        ApprovalDecision::ApprovedForSession,
    ),
    (
        "reject_once",
        "Reject",
        PermissionOptionKind::RejectOnce,
        ApprovalDecision::Denied,
    ),
];

/// Asks the client of one session.
pub(crate) struct ClientApprover {
    session_id: SessionId,
    client: ConnectionTo<Client>,
    /// Whether the client fills in forms (it said so at `initialize`).
    forms: bool,
}

impl ClientApprover {
    /// An approver asking `client` about session `session_id`'s requests, and relaying
    /// MCP servers' forms to it when it fills in `forms`.
    pub(crate) fn new(session_id: SessionId, client: ConnectionTo<Client>, forms: bool) -> Self {
        Self {
            session_id,
            client,
            forms,
        }
    }

    /// Sends `form` as `elicitation/create` and waits for the answer; a form ACP's schema
    /// cannot carry is declined unsent.
    fn ask_form(
        &self,
        form: &McpElicitationRequest,
        tool_call_id: &str,
    ) -> Pin<Box<dyn Future<Output = Reply> + Send + 'static>> {
        let schema = match serde_json::from_value::<ElicitationSchema>(
            form.requested_schema.clone(),
        ) {
            Ok(schema) => schema,
            Err(err) => {
                tracing::warn!(%err, server = %form.server, "a form ACP cannot carry is declined");
                return Box::pin(std::future::ready(form_reply(FormAction::Decline, None)));
            }
        };
        let scope = ElicitationSessionScope::new(self.session_id.clone())
            .tool_call_id(ToolCallId::new(tool_call_id.to_string()));
        let request = CreateElicitationRequest::new(
            ElicitationFormMode::new(scope, schema),
            form.message.clone(),
        );
        let pending = self.client.send_request(request).block_task();
        Box::pin(async move {
            match pending.await {
                Ok(response) => match response.action {
                    ElicitationAction::Accept(accepted) => form_reply(
                        FormAction::Accept,
                        accepted
                            .content
                            .and_then(|content| serde_json::to_value(content).ok()),
                    ),
                    ElicitationAction::Cancel => form_reply(FormAction::Cancel, None),
                    // Declined, or an action this version does not know: not an answer.
                    _ => form_reply(FormAction::Decline, None),
                },
                Err(error) => {
                    tracing::warn!(message = %error.message, "the client answered a form with an error");
                    form_reply(FormAction::Decline, None)
                }
            }
        })
    }
}

fn form_reply(action: FormAction, content: Option<serde_json::Value>) -> Reply {
    Reply::Form { action, content }
}

impl Approver for ClientApprover {
    type Kept = ();

    async fn put(&self, _asked: &Asked) {}

    /// Every kind of question is a permission request about a tool call
    /// (`permission_tool_call` shows each kind its own way), except an MCP server's form,
    /// sent as a form to a client that fills them in (declined unasked otherwise), and the
    /// model's own questions, which ACP cannot ask.
    fn ask(&self, asked: Asked, _kept: &mut ()) -> impl Future<Output = Reply> + Send + 'static {
        if let Question::McpElicitation(form) = &asked.question
            && self.forms
        {
            return self.ask_form(form, &asked.item_id);
        }
        let options = OPTIONS
            .iter()
            .map(|(id, name, kind, _)| PermissionOption::new(*id, *name, *kind))
            .collect();
        // The model's own questions go unanswered, and so do forms for a client that does
        // not fill them in (a refusal declines a form).
        let request = match &asked.question {
            Question::McpElicitation(_) | Question::UserInput(_) => None,
            Question::Exec(_) | Question::Patch(_) | Question::McpToolCall(_) => {
                Some(RequestPermissionRequest::new(
                    self.session_id.clone(),
                    permission_tool_call(&asked),
                    options,
                ))
            }
        };
        let pending = request.map(|request| self.client.send_request(request).block_task());
        Box::pin(async move {
            let Some(pending) = pending else {
                return Reply::denied("an ACP client cannot be asked questions or shown forms");
            };
            match pending.await {
                Ok(response) => decision(&response.outcome),
                Err(error) => Reply::denied(format!(
                    "the client answered the permission request with an error ({})",
                    error.message
                )),
            }
        })
    }

    // Dropping the pending request withdraws it (`$/cancel_request`).
    async fn settled(&self, _kept: ()) {}
}

/// The engine's decision for the client's outcome: an option it offered, else denied.
fn decision(outcome: &RequestPermissionOutcome) -> Reply {
    match outcome {
        RequestPermissionOutcome::Selected(selected) => {
            match OPTIONS
                .iter()
                .find(|(id, ..)| *id == &*selected.option_id.0)
            {
                Some((.., decision)) => Reply::decided(*decision),
                None => Reply::denied(format!(
                    "the client chose `{}`, which was not offered",
                    selected.option_id
                )),
            }
        }
        RequestPermissionOutcome::Cancelled => {
            Reply::denied("the client cancelled the permission request")
        }
        // A newer outcome this version does not know: not a yes.
        _ => Reply::denied("the client's answer is not one this agent knows"),
    }
}

#[cfg(test)]
mod tests {
    use agent_client_protocol::v1::schema::SelectedPermissionOutcome;

    use super::*;

    fn selected(option: &str) -> RequestPermissionOutcome {
        RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(option.to_string()))
    }

    #[test]
    fn each_offered_option_maps_to_its_decision() {
        for (option, expected) in [
            ("allow_once", ApprovalDecision::Approved),
            ("allow_always", ApprovalDecision::ApprovedForSession),
            ("reject_once", ApprovalDecision::Denied),
        ] {
            assert_eq!(decision(&selected(option)).decision(), expected, "{option}");
        }
    }

    #[test]
    fn a_cancelled_or_unknown_answer_declines_with_a_reason() {
        for outcome in [
            RequestPermissionOutcome::Cancelled,
            selected("allow_forever"),
        ] {
            let (decision, reason) = decision(&outcome).into_decision();
            assert_eq!(decision, ApprovalDecision::Denied, "{outcome:?}");
            assert!(reason.is_some(), "{outcome:?}");
        }
    }
}
