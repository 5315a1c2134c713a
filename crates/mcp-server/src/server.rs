//! The MCP handler: handshake, tool listing, and dispatch of the tools.

mod conversations;
mod snapshot;

use std::borrow::Cow;
use std::sync::Arc;

use deputy_core::config::ConfigLayers;
use deputy_core::{Thread, ThreadError, ThreadManager};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelledNotificationParam,
    Implementation, ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use tokio_util::sync::CancellationToken;

use crate::log_tags::LogTags;
use crate::mrtr::{Mrtr, MrtrCall};
use crate::review_tool::{self, REVIEW_TOOL};
use crate::tool_catalogue::{
    CODEX_REPLY_TOOL, CODEX_TOOL, CONVERSATION_CREATE_TOOL, CONVERSATION_SEND_MESSAGE_TOOL,
    CONVERSATION_STREAM_TOOL, CONVERSATIONS_LIST_TOOL, CodexReplyParam, CodexToolCallParam, tools,
};
use crate::turn_runner::{CallContext, run_turn, tool_result};
use conversations::Conversations;
pub(crate) use snapshot::{Opened, read_snapshot, tag_snapshot};

/// deputy's MCP server: the engine behind the `codex` and `codex-reply` tools and the
/// conversation tools.
#[derive(Clone)]
pub struct DeputyServer {
    manager: Arc<ThreadManager>,
    layers: Arc<ConfigLayers>,
    client_gone: CancellationToken,
    conversations: Arc<Conversations>,
    /// Calls paused between round trips (2026-07-28).
    mrtr: Arc<Mrtr>,
    /// Whether an unknown tool is a JSON-RPC error, as the MCP specification has it
    /// (HTTP), rather than an `isError` result, as Codex answers on stdio.
    unknown_tool_is_protocol_error: bool,
    /// Set when the events sent are stored for resumption (HTTP): where each came from.
    log_tags: Option<Arc<LogTags>>,
}

impl DeputyServer {
    /// A server starting threads with these config layers (home, `-c` overrides).
    /// `client_gone` is cancelled when the client disconnects; from then on running
    /// calls stop sending it events and just finish.
    pub fn new(
        manager: Arc<ThreadManager>,
        layers: Arc<ConfigLayers>,
        client_gone: CancellationToken,
    ) -> Self {
        let conversations = Arc::new(Conversations::new(
            manager.clone(),
            layers.clone(),
            client_gone.clone(),
        ));
        let mrtr = Arc::new(Mrtr::new(layers.deputy_home.clone()));
        Self {
            manager,
            layers,
            client_gone,
            conversations,
            mrtr,
            unknown_tool_is_protocol_error: false,
            log_tags: None,
        }
    }

    /// The same server, holding its paused calls in `mrtr` (shared by every session
    /// and request of a listener, so that a retry finds its call wherever it arrives).
    pub(crate) fn sharing_paused_calls(mut self, mrtr: Arc<Mrtr>) -> Self {
        self.mrtr = mrtr;
        self
    }

    /// The same server, answering a call of an unknown tool with -32602 as the MCP
    /// specification says (the HTTP door, which has no Codex clients to follow).
    pub(crate) fn with_spec_unknown_tool_errors(mut self) -> Self {
        self.unknown_tool_is_protocol_error = true;
        self
    }

    /// The same server, telling `tags` which log event each `codex/event` it sends
    /// came from (the HTTP door, whose streams are resumed from the thread's log).
    pub(crate) fn tagging_events(mut self, tags: Arc<LogTags>) -> Self {
        self.log_tags = Some(tags);
        self
    }

    async fn call_codex(&self, call: &CallContext, args: serde_json::Value) -> CallToolResponse {
        // Not boxed: the start holds less than the turn that follows (see `future_sizes`).
        match self.start_codex_thread(args).await {
            // From the start of the log: `session_configured` and any configuration warnings.
            Ok((thread, prompt)) => run_turn(call, &thread, prompt, Some(0)).await,
            Err(refused) => refused.into(),
        }
    }

    /// The thread a `codex` call with `args` starts, and its prompt; or the call's result
    /// when the arguments, the configuration or the start fail.
    async fn start_codex_thread(
        &self,
        args: serde_json::Value,
    ) -> Result<(Arc<Thread>, String), CallToolResult> {
        // What is built here is dropped before the start is waited for: a thousand calls
        // at once wait, and each would hold its arguments, layers and configuration.
        let (starting, prompt) = {
            let params: CodexToolCallParam = serde_json::from_value(args).map_err(|err| {
                tool_result(None, format!("Invalid arguments for `codex`: {err}"), true)
            })?;
            let mut layers = (*self.layers).clone();
            params.apply_to(&mut layers);
            let config = layers.load().map_err(|err| {
                tool_result(None, format!("Failed to load configuration: {err}"), true)
            })?;
            // Refused before a session exists, in the words `deputy exec` uses.
            config
                .check_api_key()
                .map_err(|err| tool_result(None, err.to_string(), true))?;
            (self.manager.start(config), params.prompt)
        };
        let thread = starting
            .await
            .map_err(|err| tool_result(None, format!("Failed to start session: {err}"), true))?;
        Ok((thread, prompt))
    }

    async fn call_codex_reply(
        &self,
        call: &CallContext,
        args: serde_json::Value,
    ) -> CallToolResponse {
        let params: CodexReplyParam = match serde_json::from_value(args) {
            Ok(params) => params,
            Err(err) => {
                return tool_result(
                    None,
                    format!("Invalid arguments for `codex-reply`: {err}"),
                    true,
                )
                .into();
            }
        };
        let Some(id) = params.thread_id.or(params.conversation_id) else {
            return tool_result(
                None,
                "Failed to parse thread_id: either threadId or conversationId must be provided"
                    .into(),
                true,
            )
            .into();
        };
        if let Err(err) = deputy_core::rollout::parse_thread_id(&id) {
            return tool_result(None, err.to_string(), true).into();
        }
        // A thread from an earlier server process is resumed from its rollout.
        let (thread, resumed_after) = match self.manager.open(&id, &self.layers).await {
            Ok(found) => found,
            Err(err) => return tool_result(Some(&id), err.to_string(), true).into(),
        };
        // A turn per call: a thread whose turn is still running is busy, not queued behind.
        if thread.is_busy() {
            return tool_result(Some(&id), ThreadError::Busy.to_string(), true).into();
        }
        // A thread resumed by this call announces itself again (`session_configured`).
        run_turn(call, &thread, params.prompt, resumed_after).await
    }
}

/// A request rmcp could not type. For a standard method that means its params
/// were malformed, which deserves -32602 rather than "method not found".
fn unhandled_request(method: &str) -> McpError {
    use rmcp::model::{
        CallToolRequestMethod, CompleteRequestMethod, ConstString, GetPromptRequestMethod,
        InitializeResultMethod, ListPromptsRequestMethod, ListResourceTemplatesRequestMethod,
        ListResourcesRequestMethod, ListToolsRequestMethod, PingRequestMethod,
        ReadResourceRequestMethod, SetLevelRequestMethod,
    };
    let standard = [
        InitializeResultMethod::VALUE,
        PingRequestMethod::VALUE,
        ListToolsRequestMethod::VALUE,
        CallToolRequestMethod::VALUE,
        ListResourcesRequestMethod::VALUE,
        ListResourceTemplatesRequestMethod::VALUE,
        ReadResourceRequestMethod::VALUE,
        ListPromptsRequestMethod::VALUE,
        GetPromptRequestMethod::VALUE,
        CompleteRequestMethod::VALUE,
        SetLevelRequestMethod::VALUE,
    ];
    if standard.contains(&method) {
        McpError::invalid_params(
            format!("invalid params for {method}"),
            Some(serde_json::json!({"method": method})),
        )
    } else {
        method_not_found(method)
    }
}

fn method_not_found(method: &str) -> McpError {
    McpError::new(
        rmcp::model::ErrorCode::METHOD_NOT_FOUND,
        format!("method not found: {method}"),
        Some(serde_json::json!({"method": method})),
    )
}

impl ServerHandler for DeputyServer {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info =
            Implementation::new("deputy", env!("CARGO_PKG_VERSION")).with_title("deputy");
        info.instructions = Some(
            "Call `codex` with a task to start a coding session; continue it with `codex-reply` and the returned threadId. `review` reviews the changes in a git repository. The conversation tools (`conversationCreate`, `conversationSendMessage`, `conversationStream`, `conversationsList`) run a session in the background and stream it.".into(),
        );
        info
    }

    /// Every revision up to 2026-07-28, which forbids server→client requests: its
    /// clients get approvals as Multi Round-Trip Requests (`mrtr`).
    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Cow::Borrowed(ProtocolVersion::known_up_to(&ProtocolVersion::V_2026_07_28))
    }

    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, McpError> {
        Err(unhandled_request(&request.method))
    }

    // Logging is not offered; answer clearly instead of leaving the client waiting.
    #[allow(deprecated)]
    async fn set_level(
        &self,
        _request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        Err(method_not_found("logging/setLevel"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let round_trips = context
            .protocol_version()
            .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28);
        let mrtr = round_trips.then(|| MrtrCall {
            mrtr: self.mrtr.clone(),
            tool: request.name.to_string(),
            can_elicit: context
                .client_capabilities()
                .is_some_and(|capabilities| capabilities.elicitation.is_some()),
        });
        let call = CallContext {
            peer: context.peer.clone(),
            request_id: context.id.clone(),
            progress_token: context.meta.get_progress_token(),
            cancelled: context.ct.clone(),
            client_gone: self.client_gone.clone(),
            mrtr,
            log_tags: self.log_tags.clone(),
        };
        if let Some(sealed) = &request.request_state {
            let Some(mrtr) = &call.mrtr else {
                return Err(McpError::invalid_params(
                    "requestState continues a call of protocol 2026-07-28 or later; this request names an earlier one",
                    None,
                ));
            };
            return Box::pin(mrtr.resume(&call, sealed, request.input_responses)).await;
        }
        let args = serde_json::Value::Object(request.arguments.unwrap_or_default());
        // Each tool's future is boxed: a call running for minutes then holds its own tool's
        // state, not room for the largest of them (rmcp keeps every call in a task).
        let result: CallToolResponse = match request.name.as_ref() {
            CODEX_TOOL => Box::pin(self.call_codex(&call, args)).await,
            CODEX_REPLY_TOOL => Box::pin(self.call_codex_reply(&call, args)).await,
            REVIEW_TOOL => Box::pin(review_tool::call_review(
                &self.manager,
                &self.layers,
                &call,
                args,
            ))
            .await
            .into(),
            CONVERSATION_CREATE_TOOL => Box::pin(self.conversations.create(&call, args))
                .await
                .into(),
            CONVERSATION_SEND_MESSAGE_TOOL => {
                Box::pin(self.conversations.send_message(&call, args))
                    .await
                    .into()
            }
            CONVERSATION_STREAM_TOOL => Box::pin(self.conversations.stream(&call, args)).await,
            CONVERSATIONS_LIST_TOOL => Box::pin(self.conversations.list(args)).await.into(),
            other if self.unknown_tool_is_protocol_error => {
                return Err(McpError::invalid_params(
                    format!("Unknown tool '{other}'"),
                    Some(serde_json::json!({"tool": other})),
                ));
            }
            other => tool_result(None, format!("Unknown tool '{other}'"), true).into(),
        };
        Ok(result)
    }

    /// rmcp cancels calls still running; the conversation tools also keep work going
    /// after their result (a queued turn, a stream), which this stops.
    async fn on_cancelled(
        &self,
        notification: CancelledNotificationParam,
        _context: NotificationContext<RoleServer>,
    ) {
        if let Some(request_id) = &notification.request_id {
            self.conversations.cancelled(request_id);
        }
    }
}

#[cfg(test)]
mod future_sizes {
    //! rmcp runs each `tools/call` in a task of its own that lives as long as the call: a
    //! `codex` call waiting minutes for its turn keeps its future's size that long, once
    //! per call in flight. Each container here must stay smaller than what it boxes.

    use std::mem::size_of;

    use deputy_core::driver::{TurnObserver, TurnRequest, drive_turn};
    use deputy_core::{Thread, ThreadManager};
    use deputy_protocol::ThreadEvent;
    use rmcp::model::CallToolRequestParams;

    use super::*;
    use crate::mrtr::MrtrCall;
    use crate::turn_runner::{CallContext, ElicitationApprover, McpTurn};

    /// The size of the future `f` returns, from its type alone.
    fn output_size<Args, F: FutureFn<Args>>(_: &F) -> usize {
        size_of::<F::Output>()
    }

    trait FutureFn<Args> {
        type Output;
    }

    macro_rules! future_fn {
        ($($arg:ident),*) => {
            impl<F, Fut, $($arg),*> FutureFn<($($arg,)*)> for F
            where
                F: Fn($($arg),*) -> Fut,
            {
                type Output = Fut;
            }
        };
    }
    future_fn!(A);
    future_fn!(A, B);
    future_fn!(A, B, C);
    future_fn!(A, B, C, D);
    future_fn!(A, B, C, D, E);

    #[test]
    fn a_running_call_holds_its_tool_s_future_boxed() {
        let call_tool = output_size::<
            (
                &DeputyServer,
                CallToolRequestParams,
                RequestContext<RoleServer>,
            ),
            _,
        >(&<DeputyServer as ServerHandler>::call_tool);
        let call_codex = output_size::<(&DeputyServer, &CallContext, serde_json::Value), _>(
            &DeputyServer::call_codex,
        );
        let start_codex_thread =
            output_size::<(&DeputyServer, serde_json::Value), _>(&DeputyServer::start_codex_thread);
        let start =
            output_size::<(&ThreadManager, deputy_core::config::Config), _>(&ThreadManager::start);
        let run_turn =
            output_size::<(&CallContext, &Arc<Thread>, String, Option<u64>), _>(&run_turn);
        let mrtr_start = output_size::<
            (&MrtrCall, &CallContext, &Arc<Thread>, String, Option<u64>),
            _,
        >(&MrtrCall::start);
        assert!(
            call_tool < call_codex,
            "call_tool {call_tool} B holds call_codex {call_codex} B"
        );
        // A call waiting for its thread's start holds less than its turn will: its
        // arguments and configuration are built and dropped (or boxed) before the wait.
        assert!(
            start < size_of::<deputy_core::config::Config>(),
            "a thread's start {start} B holds its configuration unboxed"
        );
        assert!(
            start_codex_thread < run_turn,
            "a codex call's start {start_codex_thread} B outweighs its turn {run_turn} B"
        );
        assert!(
            run_turn < mrtr_start,
            "run_turn {run_turn} B holds mrtr's {mrtr_start} B"
        );
    }

    #[test]
    fn a_waiting_turn_holds_no_delivery() {
        let drive = output_size::<
            (
                &Arc<Thread>,
                TurnRequest,
                Arc<ElicitationApprover>,
                &mut McpTurn<'_>,
                &CancellationToken,
            ),
            _,
        >(&drive_turn::<ElicitationApprover, McpTurn<'_>>);
        let deliver = output_size::<(&mut McpTurn<'_>, &ThreadEvent), _>(
            &<McpTurn<'_> as TurnObserver>::deliver,
        );
        let tick = output_size::<(&mut McpTurn<'_>,), _>(&<McpTurn<'_> as TurnObserver>::tick);
        assert!(
            drive < deliver,
            "drive_turn {drive} B holds a delivery {deliver} B"
        );
        assert!(drive < tick, "drive_turn {drive} B holds a tick {tick} B");
    }
}
