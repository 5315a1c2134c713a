//! The request dispatcher: the handshake, then each client request in arrival order,
//! turned into calls on the engine's [`ThreadManager`] and [`Thread`]s. A thread the
//! client uses gets a [`Follower`] that reports its events.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use deputy_core::config::{ConfigLayers, ConfigOverrides, configured_models, json_to_toml};
use deputy_core::rollout::{
    self, CreationQuery, RolloutError, SessionSummary, archive_rollout, find_rollout,
    list_by_creation, read_events, session_summary,
};
use deputy_core::{ResumeError, Thread, ThreadManager};
use deputy_protocol::{self as engine, InputItem, ThreadEvent, TurnOverrides};
use serde_json::Value;

use crate::follower::{Command, Follower};
use crate::history::turns_from_events;
use crate::outgoing::Outgoing;
use crate::protocol::{
    ClientMethod, ClientNotification, ClientRequest, InitializeParams, InitializeResponse,
    JsonRpcError, Model, ModelListParams, ModelListResponse, RequestId, RequestParseError,
    ReviewStartParams, SandboxPolicy, ServerNotification, SessionSource, Thread as WireThread,
    ThreadArchiveParams, ThreadArchiveResponse, ThreadArchivedNotification,
    ThreadCompactStartParams, ThreadListParams, ThreadListResponse, ThreadReadParams,
    ThreadReadResponse, ThreadResumeParams, ThreadStartParams, ThreadStartResponse,
    ThreadStartedNotification, ThreadStatus, Turn, TurnInterruptParams, TurnStartParams, UserInput,
    error_codes, methods,
};

/// `thread/list` page size when the client gives none, and the most it may ask for.
const DEFAULT_PAGE: u32 = 25;
const MAX_PAGE: u32 = 200;

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

/// One client's session with the engine.
pub(crate) struct Server {
    manager: Arc<ThreadManager>,
    layers: Arc<ConfigLayers>,
    outgoing: Outgoing,
    followers: HashMap<String, Follower>,
    initialized: bool,
}

type Reply<M> = Result<<M as ClientMethod>::Response, JsonRpcError>;

impl Server {
    /// A server starting threads from `layers` (home, `-c` overrides).
    pub(crate) fn new(
        manager: Arc<ThreadManager>,
        layers: ConfigLayers,
        outgoing: Outgoing,
    ) -> Self {
        Self {
            manager,
            layers: Arc::new(layers),
            outgoing,
            followers: HashMap::new(),
            initialized: false,
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
            ClientRequest::ThreadCompactStart(ThreadCompactStartParams { thread_id }) => {
                let reply = Err(not_available(
                    methods::ThreadCompactStart::METHOD,
                    &format!("compacting thread {thread_id} on request is not built yet"),
                ));
                self.reply::<methods::ThreadCompactStart>(id, reply).await;
            }
            ClientRequest::TurnStart(params) => self.turn_start(id, params).await,
            ClientRequest::TurnInterrupt(params) => self.turn_interrupt(id, params).await,
            ClientRequest::ReviewStart(ReviewStartParams { thread_id, .. }) => {
                let reply = Err(not_available(
                    methods::ReviewStart::METHOD,
                    &format!("review mode is not built yet (thread {thread_id})"),
                ));
                self.reply::<methods::ReviewStart>(id, reply).await;
            }
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

    async fn thread_start(&mut self, id: RequestId, params: ThreadStartParams) {
        let ThreadStartParams {
            model,
            model_provider,
            cwd,
            approval_policy,
            sandbox,
            config,
            base_instructions,
            developer_instructions,
        } = params;
        let layers = self.layers_with(
            config,
            model_provider,
            ConfigOverrides {
                model,
                cwd: cwd.map(PathBuf::from),
                approval_policy,
                sandbox_mode: sandbox,
                base_instructions,
                developer_instructions,
                ..ConfigOverrides::default()
            },
        );
        let started = async {
            let config = layers
                .map_err(JsonRpcError::invalid_params)?
                .load()
                .map_err(|e| {
                    JsonRpcError::invalid_params(format!("cannot load the configuration: {e}"))
                })?;
            let thread = self
                .manager
                .start_thread(config)
                .map_err(|e| JsonRpcError::internal(e.to_string()))?;
            let response = self.settings_response(&thread, Vec::new()).await?;
            Ok::<_, JsonRpcError>((thread, response))
        }
        .await;
        match started {
            Ok((thread, response)) => {
                let wire = response.thread.clone();
                self.outgoing
                    .respond::<methods::ThreadStart>(id, &response)
                    .await;
                self.outgoing
                    .notify(ServerNotification::ThreadStarted(
                        ThreadStartedNotification { thread: wire },
                    ))
                    .await;
                // From the start: the thread's configuration warnings are reported too.
                self.follow(&thread, 0);
            }
            Err(error) => self.outgoing.error(Some(id), error).await,
        }
    }

    async fn thread_resume(&mut self, id: RequestId, params: ThreadResumeParams) {
        let ThreadResumeParams {
            thread_id,
            model,
            model_provider,
            cwd,
            approval_policy,
            sandbox,
            config,
            base_instructions,
            developer_instructions,
        } = params;
        let layers = self.layers_with(
            config,
            model_provider,
            ConfigOverrides {
                model,
                cwd: cwd.map(PathBuf::from),
                approval_policy,
                sandbox_mode: sandbox,
                base_instructions,
                developer_instructions,
                ..ConfigOverrides::default()
            },
        );
        let resumed = async {
            let layers = layers.map_err(JsonRpcError::invalid_params)?;
            let (thread, resumed_after) = self.load(&thread_id, layers).await?;
            let events = live_events(&thread).await;
            let running = thread.active_turn();
            let turns = turns_from_events(events.iter().map(Arc::as_ref), running.as_deref());
            let response = self.settings_response(&thread, turns).await?;
            Ok::<_, JsonRpcError>((thread, resumed_after, response))
        }
        .await;
        match resumed {
            Ok((thread, resumed_after, response)) => {
                self.outgoing
                    .respond::<methods::ThreadResume>(id, &response)
                    .await;
                self.follow(&thread, resumed_after.unwrap_or_else(|| thread.last_seq()));
            }
            Err(error) => self.outgoing.error(Some(id), error).await,
        }
    }

    async fn thread_list(&self, params: ThreadListParams) -> Reply<methods::ThreadList> {
        let home = self.layers.deputy_home.clone();
        let limit = params.limit.unwrap_or(DEFAULT_PAGE).clamp(1, MAX_PAGE) as usize;
        let page = blocking(move || {
            let cwd = params.cwd.map(PathBuf::from);
            list_by_creation(
                &home,
                CreationQuery {
                    archived: params.archived.unwrap_or(false),
                    cwd: cwd.as_deref(),
                    before: params.cursor.as_deref(),
                    limit,
                },
            )
        })
        .await?
        .map_err(|e| JsonRpcError::internal(e.to_string()))?;
        // The cursor is the last thread's id: the next page lists those created before it.
        let next_cursor = page
            .more
            .then(|| page.sessions.last().map(|s| s.id.clone()))
            .flatten();
        Ok(ThreadListResponse {
            data: page
                .sessions
                .into_iter()
                .map(|summary| {
                    let status = self.status_of(&summary.id);
                    wire_thread(summary, status, Vec::new())
                })
                .collect(),
            next_cursor,
        })
    }

    async fn thread_read(&self, params: ThreadReadParams) -> Reply<methods::ThreadRead> {
        let ThreadReadParams {
            thread_id,
            include_turns,
        } = params;
        let home = self.layers.deputy_home.clone();
        let lookup = thread_id.clone();
        let path = blocking(move || find_rollout(&home, &lookup))
            .await?
            .map_err(|e| not_found_or_internal(&thread_id, e))?;
        let summary_path = path.clone();
        let summary = blocking(move || session_summary(&summary_path))
            .await?
            .map_err(|e| JsonRpcError::internal(e.to_string()))?;
        let live = self.manager.get(&summary.id);
        let turns = match (&live, include_turns) {
            (_, false) => Vec::new(),
            (Some(thread), true) => {
                let events = live_events(thread).await;
                let running = thread.active_turn();
                turns_from_events(events.iter().map(Arc::as_ref), running.as_deref())
            }
            (None, true) => {
                let events = blocking(move || read_events(&path, 0, u64::MAX))
                    .await?
                    .map_err(|e| JsonRpcError::internal(e.to_string()))?;
                turns_from_events(&events, None)
            }
        };
        let status = self.status_of(&summary.id);
        Ok(ThreadReadResponse {
            thread: wire_thread(summary, status, turns),
        })
    }

    async fn thread_archive(&mut self, id: RequestId, params: ThreadArchiveParams) {
        let ThreadArchiveParams { thread_id } = params;
        // This process lets go of it first: its turn stops and its rollout is closed.
        let canonical = self
            .manager
            .get(&thread_id)
            .map_or_else(|| thread_id.clone(), |t| t.id().to_string());
        self.manager.close_thread(&canonical).await;
        if let Some(follower) = self.followers.remove(&canonical) {
            follower.finish(std::time::Duration::from_secs(1)).await;
        }
        let home = self.layers.deputy_home.clone();
        let lookup = thread_id.clone();
        let archived = match blocking(move || archive_rollout(&home, &lookup)).await {
            Ok(Ok(_)) => Ok(ThreadArchiveResponse {}),
            Ok(Err(err)) => Err(not_found_or_internal(&thread_id, err)),
            Err(err) => Err(err),
        };
        let done = archived.is_ok();
        self.reply::<methods::ThreadArchive>(id, archived).await;
        if done {
            self.outgoing
                .notify(ServerNotification::ThreadArchived(
                    ThreadArchivedNotification {
                        thread_id: canonical,
                    },
                ))
                .await;
        }
    }

    async fn turn_start(&mut self, id: RequestId, params: TurnStartParams) {
        let TurnStartParams {
            thread_id,
            input,
            cwd,
            approval_policy,
            sandbox_policy,
            model,
        } = params;
        let prepared = async {
            let items = input_items(input)?;
            let sandbox_policy = sandbox_policy.map(engine_sandbox_policy).transpose()?;
            let overrides = TurnOverrides {
                cwd,
                model,
                approval_policy,
                sandbox_policy,
            };
            let overrides = (overrides != TurnOverrides::default()).then_some(overrides);
            let (thread, _) = self.load(&thread_id, (*self.layers).clone()).await?;
            if let Some(overrides) = &overrides {
                // Refused now rather than failing the turn later.
                thread.config().with_overrides(overrides).map_err(|e| {
                    JsonRpcError::invalid_params(format!("the turn's settings cannot apply: {e}"))
                })?;
            }
            Ok::<_, JsonRpcError>((thread, items, overrides))
        }
        .await;
        let (thread, items, overrides) = match prepared {
            Ok(prepared) => prepared,
            Err(error) => return self.outgoing.error(Some(id), error).await,
        };
        self.command(
            &thread,
            Command::StartTurn {
                id,
                items,
                overrides,
            },
        )
        .await;
    }

    async fn turn_interrupt(&mut self, id: RequestId, params: TurnInterruptParams) {
        let TurnInterruptParams { thread_id, turn_id } = params;
        let Some(thread) = self.manager.get(&thread_id) else {
            // Not loaded here: no turn of it can be running.
            let home = self.layers.deputy_home.clone();
            let lookup = thread_id.clone();
            let error = match blocking(move || find_rollout(&home, &lookup)).await {
                Ok(Ok(_)) => JsonRpcError::invalid_request(format!(
                    "turn {turn_id} is not running on thread {thread_id}"
                )),
                Ok(Err(err)) => not_found_or_internal(&thread_id, err),
                Err(err) => err,
            };
            return self.outgoing.error(Some(id), error).await;
        };
        self.command(&thread, Command::Interrupt { id, turn_id })
            .await;
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
        let manager = self.manager.clone();
        let id = thread_id.to_string();
        // Reading a rollout is file I/O, and waits on a thread being unloaded.
        blocking(move || manager.get_or_resume(&id, &layers))
            .await?
            .map_err(|err| match err {
                ResumeError::NotFound(_) => thread_not_found(thread_id),
                ResumeError::Locked => JsonRpcError::invalid_request(format!(
                    "thread {thread_id} is open in another process"
                )),
                other => JsonRpcError::internal(other.to_string()),
            })
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
            let (Command::StartTurn { id, .. } | Command::Interrupt { id, .. }) = command;
            self.outgoing
                .error(
                    Some(id),
                    JsonRpcError::invalid_request("the thread has shut down; resume it"),
                )
                .await;
        }
    }

    /// The `thread/start` and `thread/resume` result for a live thread.
    async fn settings_response(
        &self,
        thread: &Thread,
        turns: Vec<Turn>,
    ) -> Result<ThreadStartResponse, JsonRpcError> {
        let home = self.layers.deputy_home.clone();
        let id = thread.id().to_string();
        let summary = blocking(move || find_rollout(&home, &id).and_then(|p| session_summary(&p)))
            .await?
            .map_err(|e| JsonRpcError::internal(e.to_string()))?;
        let config = thread.config();
        let status = self.status_of(thread.id());
        Ok(ThreadStartResponse {
            thread: wire_thread(summary, status, turns),
            model: config.model.clone(),
            model_provider: config.model_provider_id.clone(),
            cwd: config.cwd.clone(),
            approval_policy: config.approval_policy,
            sandbox: wire_sandbox_policy(config.sandbox_policy()),
        })
    }

    fn status_of(&self, thread_id: &str) -> ThreadStatus {
        match self.manager.get(thread_id) {
            None => ThreadStatus::NotLoaded,
            Some(thread) if thread.is_busy() => ThreadStatus::Active {
                active_flags: Vec::new(),
            },
            Some(_) => ThreadStatus::Idle,
        }
    }

    /// The server's layers with a request's settings on top.
    fn layers_with(
        &self,
        config: Option<std::collections::BTreeMap<String, Value>>,
        model_provider: Option<String>,
        overrides: ConfigOverrides,
    ) -> Result<ConfigLayers, String> {
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

/// Every event of `thread` so far (replayed from memory and its rollout), deltas included.
async fn live_events(thread: &Thread) -> Vec<Arc<ThreadEvent>> {
    let last = thread.last_seq();
    let mut events = thread.subscribe(0);
    let mut out: Vec<Arc<ThreadEvent>> = Vec::new();
    while out.last().map_or(0, |e| e.seq) < last {
        match events.next().await {
            Some(Ok(event)) => out.push(event),
            Some(Err(_lagged)) => events = events.resubscribe(),
            None => break,
        }
    }
    out
}

/// A listing's summary of a thread in the wire shape.
fn wire_thread(summary: SessionSummary, status: ThreadStatus, turns: Vec<Turn>) -> WireThread {
    let secs = |t: std::time::SystemTime| {
        t.duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
    };
    WireThread {
        id: summary.id,
        forked_from_id: None,
        preview: summary.first_prompt_preview,
        ephemeral: false,
        model_provider: summary.model_provider,
        created_at: secs(summary.created),
        updated_at: secs(summary.updated),
        status,
        path: Some(summary.path),
        cwd: summary.cwd,
        cli_version: summary.cli_version,
        source: match summary.source {
            rollout::SessionSource::AppServer => SessionSource::AppServer,
            rollout::SessionSource::Exec => SessionSource::Exec,
            rollout::SessionSource::Mcp => SessionSource::Custom("mcp".into()),
            rollout::SessionSource::Review => SessionSource::Custom("review".into()),
        },
        agent_nickname: None,
        agent_role: None,
        git_info: None,
        name: None,
        turns,
    }
}

fn input_items(input: Vec<UserInput>) -> Result<Vec<InputItem>, JsonRpcError> {
    if input.is_empty() {
        return Err(JsonRpcError::invalid_params("`input` is empty"));
    }
    input
        .into_iter()
        .map(|part| match part {
            UserInput::Text { text, .. } => Ok(InputItem::Text { text }),
            UserInput::Image { .. } | UserInput::LocalImage { .. } => {
                Err(JsonRpcError::invalid_params("only text input is supported"))
            }
        })
        .collect()
}

fn engine_sandbox_policy(policy: SandboxPolicy) -> Result<engine::SandboxPolicy, JsonRpcError> {
    Ok(match policy {
        SandboxPolicy::DangerFullAccess => engine::SandboxPolicy::DangerFullAccess,
        SandboxPolicy::ReadOnly { network_access } => {
            engine::SandboxPolicy::ReadOnly { network_access }
        }
        SandboxPolicy::WorkspaceWrite {
            writable_roots,
            network_access,
            exclude_tmpdir_env_var,
            exclude_slash_tmp,
        } => engine::SandboxPolicy::WorkspaceWrite {
            writable_roots,
            network_access,
            exclude_tmpdir_env_var,
            exclude_slash_tmp,
        },
        SandboxPolicy::ExternalSandbox { .. } => {
            return Err(JsonRpcError::invalid_params(
                "sandboxPolicy externalSandbox is not supported",
            ));
        }
    })
}

fn wire_sandbox_policy(policy: engine::SandboxPolicy) -> SandboxPolicy {
    match policy {
        engine::SandboxPolicy::DangerFullAccess => SandboxPolicy::DangerFullAccess,
        engine::SandboxPolicy::ReadOnly { network_access } => {
            SandboxPolicy::ReadOnly { network_access }
        }
        engine::SandboxPolicy::WorkspaceWrite {
            writable_roots,
            network_access,
            exclude_tmpdir_env_var,
            exclude_slash_tmp,
        } => SandboxPolicy::WorkspaceWrite {
            writable_roots,
            network_access,
            exclude_tmpdir_env_var,
            exclude_slash_tmp,
        },
    }
}

fn thread_not_found(thread_id: &str) -> JsonRpcError {
    JsonRpcError::invalid_request(format!("thread not found: {thread_id}"))
}

fn not_found_or_internal(thread_id: &str, err: RolloutError) -> JsonRpcError {
    match err {
        RolloutError::NotFound(_) => thread_not_found(thread_id),
        RolloutError::Locked => {
            JsonRpcError::invalid_request(format!("thread {thread_id} is open in another process"))
        }
        other => JsonRpcError::internal(other.to_string()),
    }
}

fn not_available(method: &str, why: &str) -> JsonRpcError {
    JsonRpcError {
        code: error_codes::NOT_AVAILABLE,
        message: format!("{method} is not available yet: {why}"),
        data: Some(serde_json::json!({"method": method})),
    }
}

/// Runs blocking work (file I/O) off the async workers.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, JsonRpcError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| JsonRpcError::internal(format!("the work failed: {e}")))
}
