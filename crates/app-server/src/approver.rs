//! Approvals asked of the client: the questions a thread's follower has sent, and the
//! [`Approver`] through which the driver's [`deputy_core::driver::ApprovalRouter`] awaits
//! their answers (under the approval timeout, withdrawn when no longer wanted).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Mutex, PoisonError};

use deputy_core::approval::Answer;
use deputy_core::driver::{ApprovalKind, ApprovalRequest, Approver};
use deputy_protocol::ApprovalDecision as Decision;
use tokio::sync::oneshot;

use crate::outgoing::ClientReply;
use crate::protocol::{
    ApprovalDecision, CommandExecutionRequestApprovalResponse, FileChangeRequestApprovalResponse,
    RequestId,
};

/// A question sent to the client and not yet settled.
#[derive(Debug)]
pub(crate) struct Question {
    /// The server request carrying it.
    pub(crate) request_id: RequestId,
    /// The turn asking.
    pub(crate) turn_id: String,
    /// Where the answer arrives; taken by whoever awaits it.
    reply: Option<oneshot::Receiver<ClientReply>>,
}

/// The open questions of one thread, by the model call id the engine waits on.
#[derive(Debug, Default)]
pub(crate) struct OpenQuestions(Mutex<HashMap<String, Question>>);

impl OpenQuestions {
    /// Records a question just sent as `request_id`, its answer arriving on `reply`.
    pub(crate) fn asked(
        &self,
        call_id: String,
        turn_id: String,
        request_id: RequestId,
        reply: oneshot::Receiver<ClientReply>,
    ) {
        self.lock().insert(
            call_id,
            Question {
                request_id,
                turn_id,
                reply: Some(reply),
            },
        );
    }

    /// Forgets the question about `call_id` and returns it.
    pub(crate) fn settle(&self, call_id: &str) -> Option<Question> {
        self.lock().remove(call_id)
    }

    /// Forgets the questions `turn_id` asked and returns them.
    pub(crate) fn settle_turn(&self, turn_id: &str) -> Vec<Question> {
        let mut open = self.lock();
        let calls: Vec<String> = open
            .iter()
            .filter(|(_, q)| q.turn_id == turn_id)
            .map(|(call, _)| call.clone())
            .collect();
        calls.iter().filter_map(|call| open.remove(call)).collect()
    }

    /// Forgets every question and returns them.
    pub(crate) fn settle_all(&self) -> Vec<Question> {
        self.lock().drain().map(|(_, q)| q).collect()
    }

    fn take_reply(&self, call_id: &str) -> Option<oneshot::Receiver<ClientReply>> {
        self.lock().get_mut(call_id).and_then(|q| q.reply.take())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Question>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Awaits the client's answer to the question its follower sent about a request.
pub(crate) struct ClientApprover {
    questions: std::sync::Arc<OpenQuestions>,
}

impl ClientApprover {
    /// An approver reading the answers to `questions`.
    pub(crate) fn new(questions: std::sync::Arc<OpenQuestions>) -> Self {
        Self { questions }
    }
}

impl Approver for ClientApprover {
    fn ask(&self, request: ApprovalRequest) -> impl Future<Output = Answer> + Send + 'static {
        let reply = self.questions.take_reply(request.call_id());
        let is_exec = matches!(request.kind, ApprovalKind::Exec(_));
        async move {
            let Some(reply) = reply else {
                return denied("the question could not be sent to the client");
            };
            match reply.await {
                Ok(Ok(result)) => {
                    let decision = if is_exec {
                        serde_json::from_value::<CommandExecutionRequestApprovalResponse>(result)
                            .map(|r| r.decision)
                    } else {
                        serde_json::from_value::<FileChangeRequestApprovalResponse>(result)
                            .map(|r| r.decision)
                    };
                    match decision {
                        Ok(decision) => Answer {
                            decision: engine_decision(decision),
                            reason: None,
                        },
                        Err(err) => {
                            denied(&format!("the client's answer could not be read ({err})"))
                        }
                    }
                }
                Ok(Err(error)) => denied(&format!(
                    "the client answered with an error ({})",
                    error.message
                )),
                Err(_) => denied("the client left before answering"),
            }
        }
    }
}

fn denied(reason: &str) -> Answer {
    Answer {
        decision: Decision::Denied,
        reason: Some(reason.to_string()),
    }
}

/// The engine's decision for the client's.
pub(crate) fn engine_decision(decision: ApprovalDecision) -> Decision {
    match decision {
        ApprovalDecision::Accept => Decision::Approved,
        ApprovalDecision::AcceptForSession => Decision::ApprovedForSession,
        ApprovalDecision::Decline => Decision::Denied,
        ApprovalDecision::Cancel => Decision::Abort,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::JsonRpcError;
    use deputy_protocol::ExecApprovalRequestEvent;
    use serde_json::json;
    use std::sync::Arc;

    fn exec_request(call_id: &str) -> ApprovalRequest {
        ApprovalRequest {
            thread_id: "t".into(),
            turn_id: "u".into(),
            event_id: "e".into(),
            item_id: "i".into(),
            kind: ApprovalKind::Exec(ExecApprovalRequestEvent {
                call_id: call_id.into(),
                turn_id: "u".into(),
                command: vec!["true".into()],
                cwd: "/".into(),
                reason: None,
                parsed_cmd: Vec::new(),
            }),
        }
    }

    async fn answer_to(reply: ClientReply) -> Answer {
        let questions = Arc::new(OpenQuestions::default());
        let (tx, rx) = oneshot::channel();
        questions.asked("c".into(), "u".into(), RequestId::Integer(0), rx);
        let asking = ClientApprover::new(questions).ask(exec_request("c"));
        tx.send(reply).unwrap();
        asking.await
    }

    #[tokio::test]
    async fn each_decision_maps_to_the_engine_decision() {
        for (decision, expected) in [
            ("accept", Decision::Approved),
            ("acceptForSession", Decision::ApprovedForSession),
            ("decline", Decision::Denied),
            ("cancel", Decision::Abort),
        ] {
            let answer = answer_to(Ok(json!({"decision": decision}))).await;
            assert_eq!(
                answer,
                Answer {
                    decision: expected,
                    reason: None
                },
                "{decision}"
            );
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
            let answer = answer_to(reply.clone()).await;
            assert_eq!(answer.decision, Decision::Denied, "{reply:?}");
            assert!(answer.reason.is_some(), "{reply:?}");
        }
    }
}
