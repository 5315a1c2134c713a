//! The request dispatcher: the handshake, then each client request in arrival order,
//! turned into calls on the engine's [`ThreadManager`] and [`Thread`]s (`threads.rs`:
//! `thread/*`; `turns.rs`: `turn/*` and `review/start`). A thread the client uses gets a [`Follower`] that
//! reports its events.

mod loading;
mod threads;
mod turns;

use std::collections::HashMap;
use std::sync::Arc;

use deputy_core::config::{ConfigLayers, ConfigOverrides, configured_models, json_to_toml};
use deputy_core::project_doc::load_project_docs;
use deputy_core::rollout::{RolloutError, find_rollout, one_line_preview, session_head};
use deputy_core::{ResumeError, Thread, ThreadManager};
use deputy_protocol::{ItemEvent, ThreadEvent, ThreadEventMsg, ThreadItem};
use serde_json::Value;

use crate::follower::{Command, Follower};
use crate::outgoing::Outgoing;
use crate::protocol::{
    ApprovalsReviewer, ClientMethod, ClientNotification, ClientRequest, InitializeParams,
    InitializeResponse, InputModality, JsonRpcError, Model, ModelListParams, ModelListResponse,
    ReasoningEffort, ReasoningEffortOption, RequestId, RequestParseError, ThreadStartResponse,
    ThreadStatus, Turn, error_codes, methods,
};
use crate::shapes::{permission_profile, wire_sandbox_policy, wire_thread};

/// A message from the client that the dispatcher handles, in order.
#[derive(Debug)]
pub(crate) enum Inbound {
    /// A request.
    Request {
        /// Its id.
        id: RequestId,
        /// The method.
        method: String,
        /// The params, untyped.
        params: Option<Value>,
    },
    /// A notification.
    Notification {
        /// The method.
        method: String,
    },
    /// A line that is no message: answered with an error, in turn with the others.
    Reject {
        /// The request's id, when one could be read.
        id: Option<RequestId>,
        /// The error.
        error: JsonRpcError,
    },
}

pub(crate) use loading::LoadedSender;

/// One client's session with the engine.
pub(crate) struct Server {
    manager: Arc<ThreadManager>,
    layers: Arc<ConfigLayers>,
    outgoing: Outgoing,
    followers: HashMap<String, Follower>,
    initialized: bool,
    /// Requests held back while their thread loads in the background.
    waiting: loading::Waiting,
    /// Where background loads report (see `loading.rs`).
    loaded: LoadedSender,
}

pub(super) type Reply<M> = Result<<M as ClientMethod>::Response, JsonRpcError>;

impl Server {
    /// A server starting threads from `layers` (home, `-c` overrides).
    pub(crate) fn new(
        manager: Arc<ThreadManager>,
        layers: Arc<ConfigLayers>,
        outgoing: Outgoing,
        loaded: LoadedSender,
    ) -> Self {
        Self {
            manager,
            layers,
            outgoing,
            followers: HashMap::new(),
            initialized: false,
            waiting: loading::Waiting::new(),
            loaded,
        }
    }

    /// Handles one message to completion (a turn only to its start).
    pub(crate) async fn handle(&mut self, inbound: Inbound) {
        match inbound {
            Inbound::Request { id, method, params } => self.request(id, &method, params).await,
            Inbound::Notification { method } => match ClientNotification::parse(&method) {
                Some(ClientNotification::Initialized) => {}
                None => tracing::debug!(method, "ignoring an unknown notification"),
            },
            Inbound::Reject { id, error } => self.outgoing.error(id, error).await,
        }
    }

    /// Waits up to `grace` in all for the followers to report their threads' ends.
    pub(crate) async fn finish(self, grace: std::time::Duration) {
        let deadline = tokio::time::Instant::now() + grace;
        for (_, follower) in self.followers {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            follower.finish(left).await;
        }
    }

    async fn request(&mut self, id: RequestId, method: &str, params: Option<Value>) {
        if !self.initialized && method != methods::Initialize::METHOD {
            self.outgoing
                .error(Some(id), JsonRpcError::invalid_request("Not initialized"))
                .await;
            return;
        }
        let request = match ClientRequest::parse(method, params) {
            Ok(request) => request,
            Err(err) => {
                let code = match err {
                    RequestParseError::UnknownMethod(_) => error_codes::METHOD_NOT_FOUND,
                    RequestParseError::InvalidParams { .. } => error_codes::INVALID_PARAMS,
                };
                self.outgoing
                    .error(Some(id), JsonRpcError::new(code, err.to_string()))
                    .await;
                return;
            }
        };
        self.route(id, request).await;
    }

    /// Handles one parsed request to completion (a turn only to its start).
    async fn dispatch(&mut self, id: RequestId, request: ClientRequest) {
        match request {
            ClientRequest::Initialize(params) => {
                let reply = self.initialize(params);
                self.reply::<methods::Initialize>(id, reply).await;
            }
            ClientRequest::ThreadStart(params) => self.thread_start(id, params).await,
            ClientRequest::ThreadResume(params) => self.thread_resume(id, params).await,
            ClientRequest::ThreadList(params) => {
                let reply = self.thread_list(params).await;
                self.reply::<methods::ThreadList>(id, reply).await;
            }
            ClientRequest::ThreadRead(params) => {
                let reply = self.thread_read(params).await;
                self.reply::<methods::ThreadRead>(id, reply).await;
            }
            ClientRequest::ThreadArchive(params) => self.thread_archive(id, params).await,
            ClientRequest::ThreadCompactStart(params) => {
                self.thread_compact_start(id, params).await
            }
            ClientRequest::TurnStart(params) => self.turn_start(id, params).await,
            ClientRequest::TurnInterrupt(params) => self.turn_interrupt(id, params).await,
            ClientRequest::ReviewStart(params) => self.review_start(id, params).await,
            ClientRequest::ModelList(params) => {
                let reply = self.model_list(params);
                self.reply::<methods::ModelList>(id, reply).await;
            }
        }
    }

    async fn reply<M: ClientMethod>(&self, id: RequestId, reply: Reply<M>) {
        match reply {
            Ok(result) => self.outgoing.respond::<M>(id, &result).await,
            Err(error) => self.outgoing.error(Some(id), error).await,
        }
    }

    fn initialize(&mut self, params: InitializeParams) -> Reply<methods::Initialize> {
        if self.initialized {
            return Err(JsonRpcError::invalid_request("Already initialized"));
        }
        self.initialized = true;
        if let Some(methods) = params
            .capabilities
            .and_then(|c| c.opt_out_notification_methods)
        {
            self.outgoing.opt_out(methods);
        }
        let client = &params.client_info;
        Ok(InitializeResponse {
            user_agent: format!(
                "deputy/{} ({}; {}) ({}; {})",
                env!("CARGO_PKG_VERSION"),
                std::env::consts::OS,
                std::env::consts::ARCH,
                client.name,
                client.version
            ),
            codex_home: self.layers.deputy_home.clone(),
            platform_family: std::env::consts::FAMILY.to_string(),
            platform_os: std::env::consts::OS.to_string(),
        })
    }

    fn model_list(&self, params: ModelListParams) -> Reply<methods::ModelList> {
        let models = configured_models(&self.layers)
            .map_err(|e| JsonRpcError::internal(format!("cannot load the configuration: {e}")))?;
        let start = match params.cursor.as_deref() {
            None => 0,
            Some(cursor) => cursor
                .parse::<usize>()
                .map_err(|_| JsonRpcError::invalid_params(format!("invalid cursor `{cursor}`")))?,
        };
        let limit = params.limit.map_or(usize::MAX, |l| l.max(1) as usize);
        let data: Vec<Model> = models
            .iter()
            .skip(start)
            .take(limit)
            .map(|m| Model {
                id: m.model.clone(),
                model: m.model.clone(),
                display_name: m.model.clone(),
                description: match (m.is_default, m.profiles.as_slice()) {
                    (true, []) => "the configured model".to_string(),
                    (true, profiles) => {
                        format!("the configured model; also profile {}", profiles.join(", "))
                    }
                    (false, profiles) => format!("the model of profile {}", profiles.join(", ")),
                },
                hidden: false,
                is_default: m.is_default,
                // deputy has no per-model table of efforts: it offers the common three and
                // leaves the provider's own default (medium) in force.
                default_reasoning_effort: ReasoningEffort::Medium,
                supported_reasoning_efforts: reasoning_efforts(),
                input_modalities: vec![InputModality::Text],
            })
            .collect();
        let end = start.saturating_add(data.len());
        Ok(ModelListResponse {
            data,
            next_cursor: (end < models.len()).then(|| end.to_string()),
        })
    }

    /// The live thread `thread_id`, else loaded from its rollout with `layers`; with the
    /// seq before its new `session_configured` when this call loaded it.
    async fn load(
        &self,
        thread_id: &str,
        layers: ConfigLayers,
    ) -> Result<(Arc<Thread>, Option<u64>), JsonRpcError> {
        load(&self.manager, thread_id, layers).await
    }

    /// Starts following `thread` after `after_seq` unless a follower already does.
    fn follow(&mut self, thread: &Arc<Thread>, after_seq: u64) {
        let alive = self
            .followers
            .get(thread.id())
            .is_some_and(Follower::is_alive);
        if !alive {
            let follower = Follower::spawn(thread.clone(), after_seq, self.outgoing.clone());
            self.followers.insert(thread.id().to_string(), follower);
        }
    }

    /// Hands `command` to `thread`'s follower, starting one if needed.
    async fn command(&mut self, thread: &Arc<Thread>, command: Command) {
        self.follow(thread, thread.last_seq());
        let sent = match self.followers.get(thread.id()) {
            Some(follower) => follower.send(command).await,
            None => Err(command),
        };
        if let Err(command) = sent {
            let id = command.request_id();
            self.outgoing
                .error(
                    Some(id),
                    JsonRpcError::invalid_request("the thread has shut down; resume it"),
                )
                .await;
        }
    }

    fn status_of(&self, thread_id: &str) -> ThreadStatus {
        status_of(&self.manager, thread_id)
    }

    /// The server's layers with a request's settings on top.
    fn layers_with(
        &self,
        settings: crate::protocol::ThreadSettings,
    ) -> Result<ConfigLayers, String> {
        let crate::protocol::ThreadSettings {
            model,
            model_provider,
            cwd,
            approval_policy,
            sandbox,
            config,
            base_instructions,
            developer_instructions,
        } = settings;
        let overrides = ConfigOverrides {
            model,
            cwd: cwd.map(std::path::PathBuf::from),
            approval_policy,
            sandbox_mode: sandbox,
            base_instructions,
            developer_instructions,
            ..ConfigOverrides::default()
        };
        let mut layers = (*self.layers).clone();
        for (key, value) in config.into_iter().flatten() {
            if let Some(value) = json_to_toml(&value) {
                layers.call_overrides.push((key, value));
            }
        }
        if let Some(provider) = model_provider {
            let value = json_to_toml(&Value::String(provider))
                .ok_or_else(|| "invalid modelProvider".to_string())?;
            layers.call_overrides.push(("model_provider".into(), value));
        }
        layers.overrides = overrides;
        Ok(layers)
    }
}

/// The efforts `model/list` offers for every model.
fn reasoning_efforts() -> Vec<ReasoningEffortOption> {
    [
        (ReasoningEffort::Low, "Quicker answers, lighter reasoning"),
        (
            ReasoningEffort::Medium,
            "The provider's default balance of speed and depth",
        ),
        (ReasoningEffort::High, "Deeper reasoning for hard problems"),
    ]
    .into_iter()
    .map(|(reasoning_effort, description)| ReasoningEffortOption {
        reasoning_effort,
        description: description.to_string(),
    })
    .collect()
}

/// The live thread `thread_id`, else loaded from its rollout with `layers`; with the seq
/// before its new `session_configured` when this call loaded it.
pub(super) async fn load(
    manager: &Arc<ThreadManager>,
    thread_id: &str,
    layers: ConfigLayers,
) -> Result<(Arc<Thread>, Option<u64>), JsonRpcError> {
    if let Some(thread) = manager.get(thread_id) {
        return Ok((thread, None));
    }
    manager
        .open(thread_id, &layers)
        .await
        .map_err(|err| load_error(thread_id, err))
}

/// How a thread that cannot be loaded is reported.
pub(super) fn load_error(thread_id: &str, err: ResumeError) -> JsonRpcError {
    match err {
        ResumeError::NotFound(_) => thread_not_found(thread_id),
        ResumeError::Locked => {
            JsonRpcError::invalid_request(format!("thread {thread_id} is open in another process"))
        }
        other => JsonRpcError::internal(other.to_string()),
    }
}

/// The `thread/start` and `thread/resume` result for a live thread, whose first prompt
/// (from its events, already read) is `preview`: only the first line of its rollout is read.
pub(super) async fn settings_response(
    manager: &ThreadManager,
    home: std::path::PathBuf,
    thread: &Thread,
    turns: Vec<Turn>,
    preview: Option<String>,
) -> Result<ThreadStartResponse, JsonRpcError> {
    let id = thread.id().to_string();
    let mut summary = blocking(move || find_rollout(&home, &id).and_then(|p| session_head(&p)))
        .await?
        .map_err(|e| JsonRpcError::internal(e.to_string()))?;
    summary.first_prompt_preview = preview.unwrap_or_default();
    let config = thread.config();
    // The files are read again (off the runtime, never blocking on a special file):
    // the thread keeps their text, not their names.
    let instruction_sources = load_project_docs(&config).await.sources;
    let profile_config = config.clone();
    let permission_profile =
        blocking(move || permission_profile(&profile_config.sandbox_policy(), &profile_config.cwd))
            .await?;
    let status = status_of(manager, thread.id());
    Ok(ThreadStartResponse {
        thread: wire_thread(summary, status, turns),
        model: config.model.clone(),
        model_provider: config.model_provider_id.clone(),
        cwd: config.cwd.clone(),
        approval_policy: config.approval_policy,
        approvals_reviewer: ApprovalsReviewer::User,
        sandbox: wire_sandbox_policy(config.sandbox_policy()),
        permission_profile: Some(permission_profile),
        // The configured effort, as sent to the model; one the wire enum lacks is null.
        reasoning_effort: config
            .model_reasoning_effort
            .as_deref()
            .and_then(|effort| serde_json::from_value(effort.into()).ok()),
        service_tier: None,
        instruction_sources,
    })
}

/// The first prompt among `events`, as listings show it.
pub(super) fn first_prompt<'a>(
    events: impl IntoIterator<Item = &'a ThreadEvent>,
) -> Option<String> {
    events.into_iter().find_map(|event| match &event.msg {
        ThreadEventMsg::ItemCompleted(ItemEvent {
            item: ThreadItem::UserMessage(message),
        }) => Some(one_line_preview(&message.text)),
        _ => None,
    })
}

fn status_of(manager: &ThreadManager, thread_id: &str) -> ThreadStatus {
    match manager.get(thread_id) {
        None => ThreadStatus::NotLoaded,
        Some(thread) if thread.is_busy() => ThreadStatus::Active {
            active_flags: Vec::new(),
        },
        Some(_) => ThreadStatus::Idle,
    }
}

pub(super) fn thread_not_found(thread_id: &str) -> JsonRpcError {
    JsonRpcError::invalid_request(format!("thread not found: {thread_id}"))
}

pub(super) fn not_found_or_internal(thread_id: &str, err: RolloutError) -> JsonRpcError {
    match err {
        RolloutError::NotFound(_) => thread_not_found(thread_id),
        RolloutError::Locked => {
            JsonRpcError::invalid_request(format!("thread {thread_id} is open in another process"))
        }
        other => JsonRpcError::internal(other.to_string()),
    }
}

pub(super) fn not_available(method: &str, why: &str) -> JsonRpcError {
    JsonRpcError {
        code: error_codes::NOT_AVAILABLE,
        message: format!("{method} is not available yet: {why}"),
        data: Some(serde_json::json!({"method": method})),
    }
}

/// Runs blocking work (file I/O) off the async workers.
pub(super) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, JsonRpcError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| JsonRpcError::internal(format!("the work failed: {e}")))
}
