//! Approvals as Multi Round-Trip Requests (2026-07-28, SEP-2322): the one place where a
//! question of the engine becomes an elicitation input request, and the client's input
//! response becomes the engine's answer. Protocols before 2026-07-28 ask the same
//! question as a server-to-client `elicitation/create` (`turn_runner`).
//!
//! The question waits for the paused call's retry: [`MrtrApprover::ask`] hands it to
//! whoever is attached to the call and waits for the reply. The driver's approval
//! timeout wraps that wait, so a retry that never comes is a declined approval.

use std::future::Future;
use std::path::PathBuf;

use deputy_core::driver::{Approver, Asked as Question};
use deputy_protocol::Reply;
use rmcp::model::InputRequest;
use serde_json::{Map, Value, json};
use tokio::sync::{mpsc, oneshot};

use crate::turn_runner::Expected;
use crate::turn_runner::{NO_ELICITATION, elicitation_params};
use crate::wire::ApprovalElicitationParams;

/// One question handed to the attached call.
#[derive(Debug)]
pub(super) struct Asked {
    /// The elicitation, as `elicitation/create` would ask it.
    pub(super) params: ApprovalElicitationParams,
    /// Where the answer goes.
    pub(super) answer: oneshot::Sender<Reply>,
    /// What the answer reads as (a decision, a form, the model's questions answered).
    pub(super) expected: Expected,
}

/// The driver's [`Approver`] for a call paused between round trips.
pub(super) struct MrtrApprover {
    pub(super) questions: mpsc::Sender<Asked>,
    /// The first request's id, as Codex writes it (`codex_mcp_tool_call_id`).
    pub(super) tool_call_id: String,
    /// The session's working directory: paths under it are shown relative to it.
    pub(super) cwd: PathBuf,
    /// Whether the client declared the elicitation capability.
    pub(super) can_elicit: bool,
}

impl Approver for MrtrApprover {
    type Kept = ();

    async fn put(&self, _asked: &Question) {}

    fn ask(
        &self,
        question: Question,
        _kept: &mut (),
    ) -> impl Future<Output = Reply> + Send + 'static {
        let asked = self.can_elicit.then(|| {
            let expected = Expected::of(&question.question);
            let params = elicitation_params(question, self.tool_call_id.clone(), &self.cwd);
            let (answer, answered) = oneshot::channel();
            (
                Asked {
                    params,
                    answer,
                    expected,
                },
                answered,
            )
        });
        let questions = self.questions.clone();
        async move {
            let Some((asked, answered)) = asked else {
                return Reply::denied(NO_ELICITATION);
            };
            if questions.send(asked).await.is_err() {
                return Reply::denied("the call asking this question has ended");
            }
            answered
                .await
                .unwrap_or_else(|_| Reply::denied("the call asking this question has ended"))
        }
    }

    // A question no longer wanted is dropped with the paused call's bookkeeping.
    async fn settled(&self, _kept: ()) {}
}

/// The client's input response to one question, as the engine's answer: read as the
/// same question's answer to `elicitation/create` would be.
pub(super) fn answer_from_reply(reply: &Value, expected: &Expected) -> Reply {
    expected.read(reply)
}

/// The input request for a question: the standard form elicitation (`message`,
/// `requestedSchema`), with Codex's fields (`threadId`, `codex_*`) in its `_meta`,
/// since a form's params have no room for others.
pub(super) fn input_request(params: &ApprovalElicitationParams) -> Option<InputRequest> {
    let Value::Object(mut fields) = serde_json::to_value(params).ok()? else {
        return None;
    };
    let message = fields.remove("message")?;
    let schema = fields.remove("requestedSchema")?;
    let meta: Map<String, Value> = fields;
    let request = json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": schema,
            "_meta": meta,
        },
    });
    serde_json::from_value(request)
        .inspect_err(|err| tracing::error!("cannot build an input request: {err}"))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{self, ApprovalDetails};
    use deputy_protocol::ApprovalDecision;
    use deputy_protocol::UserInputRequest;

    #[test]
    fn a_question_is_a_form_elicitation_with_codex_fields_in_its_meta() {
        let params = ApprovalElicitationParams {
            message: "Allow the agent to run `ls` in `/w`?".into(),
            requested_schema: wire::decision_schema(),
            thread_id: "t".into(),
            codex_elicitation: "exec-approval",
            codex_mcp_tool_call_id: "1".into(),
            codex_event_id: "1".into(),
            codex_call_id: "c".into(),
            details: ApprovalDetails::Exec {
                codex_command: vec!["ls".into()],
                codex_cwd: "/w".into(),
                codex_parsed_cmd: Vec::new(),
                codex_reason: None,
            },
        };
        let request = serde_json::to_value(input_request(&params).unwrap()).unwrap();
        assert_eq!(request["method"], "elicitation/create");
        assert_eq!(request["params"]["message"], params.message);
        assert_eq!(
            request["params"]["requestedSchema"]["required"],
            json!(["decision"])
        );
        let meta = &request["params"]["_meta"];
        assert_eq!(meta["threadId"], "t");
        assert_eq!(meta["codex_elicitation"], "exec-approval");
        assert_eq!(meta["codex_command"], json!(["ls"]));
    }

    #[test]
    fn replies_in_either_form_become_answers() {
        let approve = answer_from_reply(
            &json!({"action": "accept", "content": {"decision": "approved"}}),
            &Expected::Decision,
        );
        assert_eq!(approve.decision(), ApprovalDecision::Approved);
        assert_eq!(
            answer_from_reply(&json!({"action": "decline"}), &Expected::Decision).decision(),
            ApprovalDecision::Denied
        );
        assert_eq!(
            answer_from_reply(&json!({"decision": "abort"}), &Expected::Decision).decision(),
            ApprovalDecision::Abort
        );
        let junk = answer_from_reply(&json!(5), &Expected::Decision);
        assert_eq!(junk.decision(), ApprovalDecision::Denied);
        assert!(matches!(
            junk,
            Reply::Decision {
                reason: Some(_),
                ..
            }
        ));
    }

    #[test]
    fn a_form_answering_the_model_s_questions_becomes_its_answers() {
        let request = UserInputRequest {
            call_id: "c".into(),
            turn_id: "u".into(),
            questions: vec![deputy_protocol::UserInputQuestion {
                id: "db".into(),
                header: "Database".into(),
                question: "Which?".into(),
                options: Vec::new(),
            }],
        };
        let reply = json!({"action": "accept", "content": {"db": "sqlite"}});
        assert_eq!(
            answer_from_reply(&reply, &Expected::Answers(request.clone())),
            Reply::Answers {
                answers: [("db".to_string(), "sqlite".to_string())].into()
            }
        );
        // Read as an approval, the same form would only have said "approved".
        assert_eq!(
            answer_from_reply(&reply, &Expected::Decision).decision(),
            ApprovalDecision::Approved
        );
    }

    #[test]
    fn a_server_s_form_relayed_through_a_round_trip_comes_back_filled_in() {
        let reply = json!({"action": "accept", "content": {"name": "Ada"}});
        assert_eq!(
            answer_from_reply(&reply, &Expected::Form),
            Reply::Form {
                action: deputy_protocol::FormAction::Accept,
                content: Some(json!({"name": "Ada"})),
            }
        );
    }
}
