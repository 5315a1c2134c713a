//! Approvals asked of the client: the driver's [`Approver`] for ACP, which sends
//! `session/request_permission` with the options `allow_once`, `allow_always` (approved
//! for the rest of the session) and `reject_once`, and reads the answer.
//!
//! The driver drops the question once it is no longer wanted (answered elsewhere, the
//! turn ended or was cancelled, the approval timeout passed); dropping the pending
//! request makes the SDK send `$/cancel_request` for it.

use std::future::Future;

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    PermissionOption, PermissionOptionKind, RequestPermissionOutcome, RequestPermissionRequest,
    SessionId,
};
use deputy_core::driver::{Approver, Asked};
use deputy_protocol::{ApprovalDecision, Question, Reply};

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
}

impl ClientApprover {
    /// An approver asking `client` about session `session_id`'s requests.
    pub(crate) fn new(session_id: SessionId, client: ConnectionTo<Client>) -> Self {
        Self { session_id, client }
    }
}

impl Approver for ClientApprover {
    type Kept = ();

    async fn put(&self, _asked: &Asked) {}

    /// Every kind of question is a permission request about a tool call
    /// (`permission_tool_call` shows each kind its own way), except an MCP server's form:
    /// ACP has no forms, so it is declined unasked.
    fn ask(&self, asked: Asked, _kept: &mut ()) -> impl Future<Output = Reply> + Send + 'static {
        let options = OPTIONS
            .iter()
            .map(|(id, name, kind, _)| PermissionOption::new(*id, *name, *kind))
            .collect();
        // ACP asks permissions, not questions: the model's own questions and MCP servers'
        // forms go unanswered (a refusal declines a form).
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
        async move {
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
        }
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
