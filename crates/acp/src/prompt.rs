//! One `session/prompt`: its work run through the engine's driver, the turn's events
//! sent as `session/update`s, its questions asked with `session/request_permission`,
//! and its end mapped to a stop reason.

use std::sync::Arc;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    PromptResponse, SessionId, SessionNotification, SessionUpdate, StopReason,
};
use agent_client_protocol::{Client, Error, ErrorCode};
use deputy_core::TurnInput;
use deputy_core::driver::{
    ReviewTurnRequest, TurnObserver, TurnOutcome, TurnRequest, drive_compact, drive_review,
    drive_turn,
};
use deputy_protocol::ThreadEvent;
use tokio_util::sync::CancellationToken;

use crate::approver::ClientApprover;
use crate::input::PromptWork;
use crate::sessions::Session;
use crate::translate::UpdateMapper;

/// The submission id of the turns this front door starts (Codex's event id).
const SUBMISSION_ID: &str = "acp";

/// Sends one session's updates to the client.
pub(crate) struct UpdateSender {
    session_id: SessionId,
    client: ConnectionTo<Client>,
}

impl UpdateSender {
    /// A sender of `session_id`'s updates to `client`.
    pub(crate) fn new(session_id: SessionId, client: ConnectionTo<Client>) -> Self {
        Self { session_id, client }
    }

    /// Sends `update`; a client that is gone is noticed by the connection, not here.
    pub(crate) fn send(&self, update: SessionUpdate) {
        let notification = SessionNotification::new(self.session_id.clone(), update);
        if let Err(err) = self.client.send_notification(notification) {
            tracing::debug!("could not send a session update: {err}");
        }
    }
}

/// What the driver hands a prompt's events to.
struct PromptObserver {
    updates: UpdateSender,
    mapper: UpdateMapper,
}

impl TurnObserver for PromptObserver {
    async fn deliver(&mut self, event: &ThreadEvent) {
        for update in self.mapper.map(event) {
            self.updates.send(update);
        }
    }
}

/// Runs `work` on `session` until its turn ends (or `cancel` stops it) and says why it
/// stopped; MCP servers' forms are relayed to the client when it fills in `forms`.
pub(crate) async fn run_prompt(
    session: &Session,
    work: PromptWork,
    cancel: &CancellationToken,
    client: ConnectionTo<Client>,
    forms: bool,
) -> Result<PromptResponse, Error> {
    let thread = &session.thread;
    let mut observer = PromptObserver {
        updates: UpdateSender::new(session.id.clone(), client.clone()),
        mapper: UpdateMapper::live(),
    };
    let driven = match work {
        PromptWork::Turn(items) => {
            let approver = Arc::new(ClientApprover::new(session.id.clone(), client, forms));
            let request = TurnRequest {
                submission_id: SUBMISSION_ID.to_string(),
                input: TurnInput {
                    items,
                    overrides: session.take_overrides(),
                    output_schema: None,
                },
                replay_after: None,
            };
            drive_turn(thread, request, approver, &mut observer, cancel).await
        }
        PromptWork::Review(request) => {
            let request = ReviewTurnRequest {
                submission_id: SUBMISSION_ID.to_string(),
                request,
                replay_after: None,
            };
            drive_review(thread, request, &mut observer, cancel)
                .await
                .map(|review| review.turn)
        }
        PromptWork::Compact => {
            drive_compact(
                thread,
                SUBMISSION_ID.to_string(),
                None,
                &mut observer,
                cancel,
            )
            .await
        }
    }
    .map_err(|err| Error::new(ErrorCode::INTERNAL_ERROR, err.to_string()))?;
    stop_reason(driven.outcome).map(PromptResponse::new)
}

/// The stop reason of a turn that ended as `outcome`; a failed turn is an error.
///
/// The engine reports no typed "output limit reached" or "refused" end (a response cut
/// short fails the turn with the provider's reason), so `max_tokens` and `refusal` are
/// never answered.
fn stop_reason(outcome: TurnOutcome) -> Result<StopReason, Error> {
    match outcome {
        TurnOutcome::Completed { .. } => Ok(StopReason::EndTurn),
        TurnOutcome::Aborted(_) => Ok(StopReason::Cancelled),
        TurnOutcome::Failed(message) => Err(Error::new(
            ErrorCode::INTERNAL_ERROR,
            format!("the turn failed: {message}"),
        )),
        TurnOutcome::ThreadStopped => Err(Error::new(
            ErrorCode::INTERNAL_ERROR,
            "the session stopped before the turn ended (deputy is shutting down)",
        )),
    }
}
