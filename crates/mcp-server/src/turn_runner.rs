//! Runs one turn for one `tools/call` through the engine's driver: forwards every
//! event as `codex/event`, asks approval questions as elicitations, reports
//! progress, and turns the turn's outcome into the call's result.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use deputy_core::command_safety::escape_command_for_display;
use deputy_core::display::escape_line;
use deputy_core::driver::{
    Approver, Asked, DrivenTurn, TurnObserver, TurnOutcome, TurnRequest, drive_turn,
};
use deputy_core::{Thread, ThreadError, TurnInput};
use deputy_protocol::{
    Event, FileChange, InputItem, McpToolCallApprovalRequest, Question, Reply, ThreadEvent,
    UserInputRequest, codex_events,
};
use rmcp::model::{
    CallToolResponse, CallToolResult, CancelledNotificationParam, ClientResult, ContentBlock,
    ProgressToken, RequestId,
};
use rmcp::service::PeerRequestOptions;
use rmcp::{Peer, RoleServer};
use tokio_util::sync::CancellationToken;

use crate::log_tags::{LogTag, LogTags};
use crate::mrtr::MrtrCall;
use crate::progress::ProgressReporter;
use crate::wire::{
    self, ApprovalDetails, ApprovalElicitation, ApprovalElicitationParams, ApprovalReply,
    CodexEvent, CodexEventParams, EventMeta,
};

/// One `tools/call` being served.
pub(crate) struct CallContext {
    pub(crate) peer: Peer<RoleServer>,
    pub(crate) request_id: RequestId,
    pub(crate) progress_token: Option<ProgressToken>,
    pub(crate) cancelled: CancellationToken,
    /// Cancelled once the client has disconnected.
    pub(crate) client_gone: CancellationToken,
    /// Set when the call's protocol (2026-07-28 and later) forbids server-to-client
    /// requests: its questions are asked as Multi Round-Trip Requests.
    pub(crate) mrtr: Option<MrtrCall>,
    /// Where the `codex/event`s sent are told which log event each came from (HTTP:
    /// resumable streams replay them from the thread's log).
    pub(crate) log_tags: Option<Arc<LogTags>>,
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

    /// The request id as Codex writes it in ids (`codex_mcp_tool_call_id`, submission ids).
    pub(crate) fn request_id_string(&self) -> String {
        match self.request_id_value() {
            serde_json::Value::String(s) => s,
            other => other.to_string(),
        }
    }

    /// Sends one event as `codex/event`: the `part`-th Codex event made from the log
    /// event `from`.
    pub(crate) async fn forward(&self, from: &ThreadEvent, part: usize, event: Event) {
        let params = CodexEventParams {
            meta: EventMeta {
                request_id: self.request_id_value(),
                thread_id: from.thread_id.to_string(),
            },
            id: event.id,
            msg: event.msg,
        };
        let notification = wire::notification::<CodexEvent>(&params);
        let request_key = params.meta.request_id.to_string();
        // Freed before the send: the notification holds a copy, and a command's end carries
        // its captured output.
        drop(params);
        if let Some(tags) = &self.log_tags {
            let kind = wire::event_kind(&notification).unwrap_or_default();
            let tag = LogTag {
                seq: from.seq,
                part,
                kind,
            };
            tags.put(&from.thread_id, &request_key, tag);
        }
        let sent = unless_client_gone(&self.client_gone, self.peer.send_notification(notification));
        let delivered = match sent.await {
            Some(Ok(())) => true,
            Some(Err(err)) => {
                tracing::debug!("codex/event not delivered: {err}");
                false
            }
            None => false,
        };
        if !delivered && let Some(tags) = &self.log_tags {
            tags.withdraw(&from.thread_id, &request_key);
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

/// Runs a turn with `prompt` on `thread` and returns the call's result. With
/// `replay_after`, the thread's events after that seq that came before the turn
/// (a new or resumed thread's `session_configured`) are forwarded first.
pub(crate) async fn run_turn(
    call: &CallContext,
    thread: &Arc<Thread>,
    prompt: String,
    replay_after: Option<u64>,
) -> CallToolResponse {
    if let Some(mrtr) = &call.mrtr {
        // Boxed: the round-trip path's state would otherwise be part of every call's.
        return match Box::pin(mrtr.start(call, thread, prompt, replay_after)).await {
            Ok(response) => response,
            Err(err) => tool_result(Some(thread.id()), err.message.into_owned(), true).into(),
        };
    }
    let mut observer = McpTurn::new(call, thread.config().progress_interval);
    let approver = Arc::new(ElicitationApprover::new(
        call.peer.clone(),
        call.request_id_string(),
        thread.config().cwd.clone(),
    ));
    let request = TurnRequest {
        submission_id: call.request_id_string(),
        input: TurnInput {
            items: vec![InputItem::Text { text: prompt }],
            ..TurnInput::default()
        },
        replay_after,
    };
    let driven = drive_turn(thread, request, approver, &mut observer, &call.cancelled).await;
    outcome_result(thread.id(), driven).into()
}

/// The call's result for how its turn on thread `thread_id` ended.
pub(crate) fn outcome_result(
    thread_id: &str,
    driven: Result<DrivenTurn, ThreadError>,
) -> CallToolResult {
    let (text, is_error) = match driven.map(|turn| turn.outcome) {
        Ok(TurnOutcome::Completed { last_agent_message }) => {
            (last_agent_message.unwrap_or_default(), false)
        }
        Ok(TurnOutcome::Failed(message)) => (message, true),
        Ok(TurnOutcome::Aborted(reason)) => {
            let reason = serde_json::to_value(reason)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default();
            (format!("turn aborted ({reason})"), true)
        }
        Ok(TurnOutcome::ThreadStopped) => ("the thread stopped unexpectedly".to_string(), true),
        Err(err) => (err.to_string(), true),
    };
    tool_result(Some(thread_id), text, is_error)
}

/// One call's view of its turn: every event as `codex/event`, and progress.
pub(crate) struct McpTurn<'a> {
    call: &'a CallContext,
    progress: ProgressReporter,
    ticker: tokio::time::Interval,
}

impl<'a> McpTurn<'a> {
    /// The view of `call`: progress on its token, if it has one, at least every
    /// `heartbeat` while the turn runs (`progress_interval_ms`).
    pub(crate) fn new(call: &'a CallContext, heartbeat: Duration) -> Self {
        Self {
            call,
            progress: ProgressReporter::new(
                call.peer.clone(),
                call.progress_token.clone(),
                call.client_gone.clone(),
            ),
            ticker: tokio::time::interval_at(tokio::time::Instant::now() + heartbeat, heartbeat),
        }
    }
}

impl TurnObserver for McpTurn<'_> {
    async fn deliver(&mut self, event: &ThreadEvent) {
        for (part, codex) in codex_events(event).into_iter().enumerate() {
            self.progress.on_event(&codex.msg).await;
            self.call.forward(event, part, codex).await;
        }
    }

    async fn wake(&mut self) {
        self.ticker.tick().await;
    }

    async fn tick(&mut self) {
        self.progress.tick().await;
    }
}

/// Asks approval questions as `elicitation/create` on the call's connection.
pub(crate) struct ElicitationApprover {
    peer: Peer<RoleServer>,
    tool_call_id: String,
    /// The session's working directory: paths under it are shown relative to it.
    cwd: PathBuf,
}

impl ElicitationApprover {
    /// Asks on `peer` for the request `tool_call_id`, about a thread working in `cwd`.
    pub(crate) fn new(peer: Peer<RoleServer>, tool_call_id: String, cwd: PathBuf) -> Self {
        Self {
            peer,
            tool_call_id,
            cwd,
        }
    }
}

impl Approver for ElicitationApprover {
    type Kept = ();

    async fn put(&self, _asked: &Asked) {}

    fn ask(&self, asked: Asked, _kept: &mut ()) -> impl Future<Output = Reply> + Send + 'static {
        let peer = self.peer.clone();
        let expected = Expected::of(&asked.question);
        let params = elicitation_params(asked, self.tool_call_id.clone(), &self.cwd);
        async move {
            let reply = match elicit(&peer, &params).await {
                Answer::Given(reply) => reply,
                Answer::None(why) => return Reply::denied(why),
            };
            expected.read(&reply)
        }
    }

    // Dropping the elicitation's wait withdraws it (`notifications/cancelled`).
    async fn settled(&self, _kept: ()) {}
}

/// Why an approval was decided without asking the user.
pub(crate) const NO_ELICITATION: &str =
    "the MCP client does not support elicitation, so the user could not be asked";

/// The elicitation for a question: Codex's fields beside the standard ones.
pub(crate) fn elicitation_params(
    asked: Asked,
    tool_call_id: String,
    cwd: &Path,
) -> ApprovalElicitationParams {
    let call_id = asked.call_id().to_string();
    let mut requested_schema = wire::decision_schema();
    let (message, elicitation, details) = match asked.question {
        Question::Exec(req) => {
            let command = escape_command_for_display(&req.command);
            (
                format!(
                    "Allow the agent to run `{command}` in `{}`?",
                    escape_line(&req.cwd.to_string_lossy())
                ),
                "exec-approval",
                ApprovalDetails::Exec {
                    codex_command: req.command,
                    codex_cwd: req.cwd,
                    codex_parsed_cmd: req.parsed_cmd,
                    codex_reason: req.reason,
                },
            )
        }
        Question::Patch(req) => {
            let message = patch_question(&req.changes, cwd, req.reason.as_deref());
            (
                message,
                "patch-approval",
                ApprovalDetails::Patch {
                    codex_reason: req.reason,
                    codex_grant_root: req.grant_root,
                    codex_changes: req.changes,
                },
            )
        }
        Question::McpToolCall(req) => (
            mcp_tool_question(&req),
            "mcp-tool-call-approval",
            ApprovalDetails::McpToolCall {
                codex_mcp_server: req.server,
                codex_mcp_tool: req.tool,
                codex_mcp_arguments: req.arguments,
                codex_reason: req.reason,
            },
        ),
        Question::McpElicitation(req) => {
            requested_schema = req.requested_schema;
            (
                format!(
                    "The MCP server `{}` asks: {}",
                    escape_line(&req.server),
                    escape_line(&req.message)
                ),
                "mcp-server-elicitation",
                ApprovalDetails::McpElicitation {
                    codex_mcp_server: req.server,
                },
            )
        }
        Question::UserInput(req) => {
            requested_schema = crate::user_input::schema(&req);
            (
                crate::user_input::message(&req),
                "request-user-input",
                ApprovalDetails::UserInput {},
            )
        }
    };
    ApprovalElicitationParams {
        message,
        requested_schema,
        thread_id: asked.thread_id,
        codex_elicitation: elicitation,
        codex_mcp_tool_call_id: tool_call_id,
        codex_event_id: asked.event_id,
        codex_call_id: call_id,
        details,
    }
}

/// Most characters of an MCP tool call's arguments a question shows.
const SHOWN_ARGUMENTS: usize = 200;

/// The question for an MCP tool call, naming the server, the tool and its arguments.
fn mcp_tool_question(req: &McpToolCallApprovalRequest) -> String {
    let mut message = format!(
        "Allow the agent to call the tool `{}` of the MCP server `{}`?",
        escape_line(&req.tool),
        escape_line(&req.server)
    );
    if let Some(arguments) = &req.arguments {
        let text = arguments.to_string();
        let shown: String = text.chars().take(SHOWN_ARGUMENTS).collect();
        let more = if shown.len() < text.len() { " …" } else { "" };
        message.push_str(&format!("\narguments: {}{more}", escape_line(&shown)));
    }
    if let Some(reason) = &req.reason {
        message.push_str(&format!("\nreason: {}", escape_line(reason)));
    }
    message
}

/// Files a patch question names before it only counts the rest.
const NAMED_FILES: usize = 5;

/// The question for a patch, naming what it changes: SDK clients show only `message`.
fn patch_question(
    changes: &BTreeMap<PathBuf, FileChange>,
    cwd: &Path,
    reason: Option<&str>,
) -> String {
    let shown = |path: &Path| {
        let shown = path
            .strip_prefix(cwd)
            .ok()
            .filter(|rel| !rel.as_os_str().is_empty())
            .unwrap_or(path);
        escape_line(&shown.to_string_lossy()).into_owned()
    };
    let mut groups: [(&str, Vec<String>); 4] = [
        ("added", Vec::new()),
        ("modified", Vec::new()),
        ("deleted", Vec::new()),
        ("moved", Vec::new()),
    ];
    for (path, change) in changes {
        let (group, name) = match change {
            FileChange::Add { .. } => (0, shown(path)),
            FileChange::Update {
                move_path: Some(to),
                ..
            } => (3, format!("{} → {}", shown(path), shown(to))),
            FileChange::Update {
                move_path: None, ..
            } => (1, shown(path)),
            FileChange::Delete { .. } => (2, shown(path)),
        };
        groups[group].1.push(name);
    }
    let count = changes.len();
    let mut message = match count {
        1 => "Allow the agent to change 1 file?".to_string(),
        n => format!("Allow the agent to change {n} files?"),
    };
    let mut named = 0;
    for (label, names) in &groups {
        let take: Vec<&str> = names
            .iter()
            .take(NAMED_FILES - named)
            .map(String::as_str)
            .collect();
        if !take.is_empty() {
            named += take.len();
            message.push_str(&format!("\n{label}: {}", take.join(", ")));
        }
    }
    if count > named {
        message.push_str(&format!("\n… and {} more", count - named));
    }
    if let Some(reason) = reason {
        message.push_str(&format!("\nreason: {}", escape_line(reason)));
    }
    message
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

/// What an elicitation's answer is read as, by the kind of question it asks.
#[derive(Debug)]
pub(crate) enum Expected {
    /// An approval's decision.
    Decision,
    /// An MCP server's form, filled in.
    Form,
    /// The model's questions to the user, answered in words.
    Answers(UserInputRequest),
}

impl Expected {
    /// How the answer to `question` reads: an approval's answer is a decision, a server's
    /// form is relayed as filled in, and the model's own questions are answered in words.
    pub(crate) fn of(question: &Question) -> Self {
        match question {
            Question::Exec(_) | Question::Patch(_) | Question::McpToolCall(_) => Self::Decision,
            Question::McpElicitation(_) => Self::Form,
            Question::UserInput(request) => Self::Answers(request.clone()),
        }
    }

    /// The client's answer as the engine's reply; anything unreadable is a denial
    /// saying why.
    pub(crate) fn read(&self, reply: &serde_json::Value) -> Reply {
        match self {
            Self::Decision => match wire::parse_approval_reply(reply) {
                ApprovalReply::Decided(decision) => Reply::decided(decision),
                ApprovalReply::Malformed(why) => Reply::denied(why),
            },
            Self::Form => wire::parse_form_reply(reply),
            Self::Answers(request) => crate::user_input::read_reply(request, reply),
        }
    }
}

/// The client's answer to an elicitation, or why there is none.
enum Answer {
    Given(serde_json::Value),
    None(String),
}

/// Sends the elicitation and returns the answer. No answer is a denial with the reason
/// spelled out; the driver's approval timeout covers a client that never answers
/// (dropping this withdraws the question).
async fn elicit(peer: &Peer<RoleServer>, params: &ApprovalElicitationParams) -> Answer {
    let supports_elicitation = peer
        .peer_info()
        .is_some_and(|info| info.capabilities.elicitation.is_some());
    if !supports_elicitation {
        return Answer::None(NO_ELICITATION.into());
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
            let response = handle.await_response().await;
            withdraw.id = None;
            response
        }
        Err(err) => Err(err),
    };
    let reply = match response {
        Ok(ClientResult::CustomResult(custom)) => custom.0,
        Ok(ClientResult::ElicitResult(result)) => serde_json::to_value(result).unwrap_or_default(),
        Ok(other) => serde_json::to_value(other).unwrap_or_default(),
        Err(err) => {
            return Answer::None(format!(
                "the client answered the approval request with an error: {err}"
            ));
        }
    };
    Answer::Given(reply)
}
