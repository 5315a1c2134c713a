//! Runs one turn for one `tools/call`: forwards every event as `codex/event`,
//! turns approval requests into elicitations, reports progress, honours
//! cancellation, and produces the call's result.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use deputy_core::Thread;
use deputy_protocol::{
    ApplyPatchApprovalRequestEvent, Event, EventMsg, ExecApprovalRequestEvent, Op, ReviewDecision,
};
use rmcp::model::{
    CallToolResult, CancelledNotificationParam, ClientResult, ContentBlock, ProgressToken,
    RequestId,
};
use rmcp::service::PeerRequestOptions;
use rmcp::{Peer, RoleServer};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::progress::ProgressReporter;
use crate::wire::{
    self, ApprovalDetails, ApprovalElicitation, ApprovalElicitationParams, ApprovalReply,
    CodexEvent, CodexEventParams, EventMeta,
};

/// How often a running turn reports progress when nothing else happens.
const PROGRESS_INTERVAL: Duration = Duration::from_secs(5);

/// One `tools/call` being served.
pub(crate) struct CallContext {
    pub(crate) peer: Peer<RoleServer>,
    pub(crate) request_id: RequestId,
    pub(crate) progress_token: Option<ProgressToken>,
    pub(crate) cancelled: CancellationToken,
    /// Cancelled once the client has disconnected.
    pub(crate) client_gone: CancellationToken,
}

/// Runs `send` unless the client has gone. Once stdin is closed rmcp stops
/// delivering messages, and a send would wait for it until rmcp's own shutdown
/// timeout — holding up this call's end and with it the server's exit.
pub(crate) async fn unless_client_gone<T>(
    client_gone: &CancellationToken,
    send: impl Future<Output = T>,
) -> Option<T> {
    tokio::select! {
        biased;
        () = client_gone.cancelled() => None,
        sent = send => Some(sent),
    }
}

impl CallContext {
    fn request_id_value(&self) -> serde_json::Value {
        serde_json::to_value(&self.request_id).unwrap_or(serde_json::Value::Null)
    }

    fn request_id_string(&self) -> String {
        match self.request_id_value() {
            serde_json::Value::String(s) => s,
            other => other.to_string(),
        }
    }

    /// Sends one event as `codex/event`.
    pub(crate) async fn forward(&self, thread_id: &str, event: Event) {
        let params = CodexEventParams {
            meta: EventMeta {
                request_id: self.request_id_value(),
                thread_id: thread_id.to_string(),
            },
            id: event.id,
            msg: event.msg,
        };
        let send = self
            .peer
            .send_notification(wire::notification::<CodexEvent>(&params));
        if let Some(Err(err)) = unless_client_gone(&self.client_gone, send).await {
            tracing::debug!("codex/event not delivered: {err}");
        }
    }
}

/// A tool result in the shape both tools share.
pub(crate) fn tool_result(thread_id: Option<&str>, text: String, is_error: bool) -> CallToolResult {
    let mut result = if is_error {
        CallToolResult::error(vec![ContentBlock::text(text.clone())])
    } else {
        CallToolResult::success(vec![ContentBlock::text(text.clone())])
    };
    result.structured_content =
        thread_id.map(|id| serde_json::json!({"threadId": id, "content": text}));
    // Codex omits `isError` on success; clients compare results with its shape.
    if !is_error {
        result.is_error = None;
    }
    result
}

/// Runs a turn with `prompt` on `thread` and returns the call's result.
pub(crate) async fn run_turn(
    call: &CallContext,
    thread: &Arc<Thread>,
    prompt: String,
) -> CallToolResult {
    let thread_id = thread.id().to_string();
    let mut events = match thread.start_turn(call.request_id_string(), prompt) {
        Ok(events) => events,
        Err(err) => return tool_result(Some(&thread_id), err.to_string(), true),
    };
    let mut progress = ProgressReporter::new(
        call.peer.clone(),
        call.progress_token.clone(),
        call.client_gone.clone(),
    );
    let mut ticker = tokio::time::interval_at(
        tokio::time::Instant::now() + PROGRESS_INTERVAL,
        PROGRESS_INTERVAL,
    );
    let mut approvals = JoinSet::new();
    let mut interrupted = false;
    let (result, end_event) = loop {
        tokio::select! {
            event = events.next() => {
                let Some(event) = event else {
                    let text = "the thread stopped unexpectedly".to_string();
                    break (tool_result(Some(&thread_id), text, true), None);
                };
                progress.on_event(&event.msg).await;
                if let Some(result) = turn_result(&thread_id, &event.msg) {
                    break (result, Some(event));
                }
                match &event.msg {
                    EventMsg::ExecApprovalRequest(req) => {
                        approvals.spawn(ask_exec(call.peer.clone(), thread.clone(), call.request_id_string(), event.id.clone(), req.clone()));
                    }
                    EventMsg::ApplyPatchApprovalRequest(req) => {
                        approvals.spawn(ask_patch(call.peer.clone(), thread.clone(), call.request_id_string(), event.id.clone(), req.clone()));
                    }
                    _ => {}
                }
                call.forward(&thread_id, event).await;
            }
            () = call.cancelled.cancelled(), if !interrupted => {
                interrupted = true;
                let _ = thread.submit(Op::Interrupt);
            }
            _ = ticker.tick() => progress.tick().await,
        }
    };
    // Free the thread before anyone hears that the turn ended, so that a
    // `codex-reply` sent on seeing the end never finds it busy.
    drop(events);
    // Questions still open belong to a turn that is over.
    approvals.abort_all();
    if let Some(event) = end_event {
        call.forward(&thread_id, event).await;
    }
    result
}

/// The call's result when `msg` ends the turn.
fn turn_result(thread_id: &str, msg: &EventMsg) -> Option<CallToolResult> {
    let (text, is_error) = match msg {
        EventMsg::TaskComplete(done) => {
            (done.last_agent_message.clone().unwrap_or_default(), false)
        }
        EventMsg::Error(err) => (err.message.clone(), true),
        EventMsg::TurnAborted(aborted) => {
            let reason = serde_json::to_value(aborted.reason)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            (format!("turn aborted ({reason})"), true)
        }
        _ => return None,
    };
    Some(tool_result(Some(thread_id), text, is_error))
}

/// Why an approval was decided without asking the user.
const NO_ELICITATION: &str =
    "the MCP client does not support elicitation, so the user could not be asked";

async fn ask_exec(
    peer: Peer<RoleServer>,
    thread: Arc<Thread>,
    tool_call_id: String,
    event_id: String,
    req: ExecApprovalRequestEvent,
) {
    let command = shlex::try_join(req.command.iter().map(String::as_str))
        .unwrap_or_else(|_| req.command.join(" "));
    let params = ApprovalElicitationParams {
        message: format!(
            "Allow the agent to run `{command}` in `{}`?",
            req.cwd.display()
        ),
        requested_schema: wire::decision_schema(),
        thread_id: thread.id().to_string(),
        codex_elicitation: "exec-approval",
        codex_mcp_tool_call_id: tool_call_id,
        codex_event_id: event_id,
        codex_call_id: req.call_id.clone(),
        details: ApprovalDetails::Exec {
            codex_command: req.command,
            codex_cwd: req.cwd,
            codex_parsed_cmd: req.parsed_cmd,
            codex_reason: req.reason,
        },
    };
    let (decision, reason) = elicit(&peer, &params, thread.config().approval_timeout).await;
    let _ = thread.submit(Op::ExecApproval {
        id: req.call_id,
        decision,
        reason,
    });
}

async fn ask_patch(
    peer: Peer<RoleServer>,
    thread: Arc<Thread>,
    tool_call_id: String,
    event_id: String,
    req: ApplyPatchApprovalRequestEvent,
) {
    let mut message = String::new();
    if let Some(reason) = &req.reason {
        message.push_str(reason);
        message.push('\n');
    }
    message.push_str("Allow the agent to apply proposed code changes?");
    let params = ApprovalElicitationParams {
        message,
        requested_schema: wire::decision_schema(),
        thread_id: thread.id().to_string(),
        codex_elicitation: "patch-approval",
        codex_mcp_tool_call_id: tool_call_id,
        codex_event_id: event_id,
        codex_call_id: req.call_id.clone(),
        details: ApprovalDetails::Patch {
            codex_reason: req.reason,
            codex_grant_root: req.grant_root,
            codex_changes: req.changes,
        },
    };
    let (decision, reason) = elicit(&peer, &params, thread.config().approval_timeout).await;
    let _ = thread.submit(Op::PatchApproval {
        id: req.call_id,
        decision,
        reason,
    });
}

/// Sends `notifications/cancelled` for an elicitation nobody waits on any more.
struct WithdrawOnDrop {
    peer: Peer<RoleServer>,
    id: Option<RequestId>,
}

impl Drop for WithdrawOnDrop {
    fn drop(&mut self) {
        let (Some(id), Ok(runtime)) = (self.id.take(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let param = CancelledNotificationParam::new(
                Some(id),
                Some("the approval is no longer needed".into()),
            );
            let _ = peer.notify_cancelled(param).await;
        });
    }
}

/// Sends the elicitation and reads the decision. Anything but a clear answer
/// is a denial with the reason spelled out; the engine's approval timeout
/// covers a client that never answers.
async fn elicit(
    peer: &Peer<RoleServer>,
    params: &ApprovalElicitationParams,
    timeout: Duration,
) -> (ReviewDecision, Option<String>) {
    let supports_elicitation = peer
        .peer_info()
        .is_some_and(|info| info.capabilities.elicitation.is_some());
    if !supports_elicitation {
        return (ReviewDecision::Denied, Some(NO_ELICITATION.to_string()));
    }
    let sent = peer
        .send_cancellable_request(
            wire::request::<ApprovalElicitation>(params),
            PeerRequestOptions::no_options(),
        )
        .await;
    let response = match sent {
        Ok(handle) => {
            // If this wait is abandoned (the turn ended, or the engine stopped
            // waiting), the client is told so its question does not stay open.
            let mut withdraw = WithdrawOnDrop {
                peer: peer.clone(),
                id: Some(handle.id.clone()),
            };
            match tokio::time::timeout(timeout, handle.await_response()).await {
                Ok(response) => {
                    withdraw.id = None;
                    response
                }
                Err(_) => {
                    return (
                        ReviewDecision::TimedOut,
                        Some(format!(
                            "no answer to the approval request within {} s",
                            timeout.as_secs()
                        )),
                    );
                }
            }
        }
        Err(err) => Err(err),
    };
    let reply = match response {
        Ok(ClientResult::CustomResult(custom)) => custom.0,
        Ok(ClientResult::ElicitResult(result)) => serde_json::to_value(result).unwrap_or_default(),
        Ok(other) => serde_json::to_value(other).unwrap_or_default(),
        Err(err) => {
            return (
                ReviewDecision::Denied,
                Some(format!(
                    "the client answered the approval request with an error: {err}"
                )),
            );
        }
    };
    match wire::parse_approval_reply(&reply) {
        ApprovalReply::Decided(decision) => (decision, None),
        ApprovalReply::Malformed(why) => (ReviewDecision::Denied, Some(why)),
    }
}
