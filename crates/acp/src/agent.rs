//! The agent's answers to the client's requests: the handshake, authentication, session
//! lifecycle, prompts, cancellation, modes and the model choice. Requests are handled in
//! arrival order (the SDK refuses all but `initialize` until it was answered); a prompt
//! and a load run in tasks of their own, so that a `session/cancel` (or anything else)
//! is read while they run.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    self as acp, AgentCapabilities, AuthMethod, AuthMethodAgent, AuthenticateRequest,
    AuthenticateResponse, AvailableCommandsUpdate, CancelNotification, CurrentModeUpdate,
    Implementation, InitializeRequest, InitializeResponse, LoadSessionRequest, LoadSessionResponse,
    McpCapabilities, McpServer, NewSessionRequest, NewSessionResponse, Notice, NoticeSeverity,
    PromptRequest, PromptResponse, SessionConfigOptionValue, SessionId, SessionUpdate,
    SetSessionConfigOptionRequest, SetSessionConfigOptionResponse, SetSessionModeRequest,
    SetSessionModeResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error, ErrorCode};
use deputy_core::config::{Config, ConfigLayers, configured_models};
use deputy_core::{ResumeError, Thread, ThreadManager};

use crate::client_servers::client_servers;
use crate::history;
use crate::input::{available_commands, prompt_capabilities, prompt_work};
use crate::modes::{current_mode, is_model_option, mode_overrides, mode_state, model_option};
use crate::prompt::{UpdateSender, run_prompt};
use crate::sessions::{Session, Sessions};

/// The id of the one authentication method offered when the API key is missing.
const ENV_AUTH_METHOD: &str = "env-var";

/// One client's agent: the engine's threads as ACP sessions.
pub(crate) struct AcpAgent {
    manager: Arc<ThreadManager>,
    layers: ConfigLayers,
    sessions: Sessions,
    /// Whether the client said at `initialize` that it fills in forms
    /// (`elicitation.form`): MCP servers' forms are then relayed to it.
    forms: AtomicBool,
}

type Reply = Result<(), Error>;

impl AcpAgent {
    /// An agent starting threads on `manager` with `layers` (home, `-c` overrides).
    pub(crate) fn new(manager: Arc<ThreadManager>, layers: ConfigLayers) -> Self {
        Self {
            manager,
            layers,
            sessions: Sessions::default(),
            forms: AtomicBool::new(false),
        }
    }

    /// `initialize`: protocol version 1 (the only one this agent speaks, whatever the
    /// client asks for) and what the agent can do.
    pub(crate) fn initialize(
        &self,
        request: InitializeRequest,
        responder: Responder<InitializeResponse>,
    ) -> Reply {
        tracing::debug!(requested = %request.protocol_version, "initialize");
        let forms = request
            .client_capabilities
            .elicitation
            .as_ref()
            .is_some_and(|elicitation| elicitation.form.is_some());
        self.forms.store(forms, Ordering::Relaxed);
        let auth_methods = match self.layers.load() {
            Ok(config) => missing_key(&config)
                .map(|(var, _)| {
                    vec![AuthMethod::Agent(
                        AuthMethodAgent::new(ENV_AUTH_METHOD, format!("Set {var}")).description(
                            format!(
                                "deputy reads the model provider's API key from the environment \
                                 variable {var}: set it in the environment deputy is started \
                                 with, then start a new session"
                            ),
                        ),
                    )]
                })
                .unwrap_or_default(),
            Err(err) => return responder.respond_with_error(config_error(&err.to_string())),
        };
        let capabilities = AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(prompt_capabilities())
            // The client's servers join the session's configured ones (`client_servers`).
            .mcp_capabilities(McpCapabilities::new().http(true).sse(false));
        responder.respond(
            InitializeResponse::new(ProtocolVersion::V1)
                .agent_capabilities(capabilities)
                .auth_methods(auth_methods)
                .agent_info(
                    Implementation::new("deputy", env!("CARGO_PKG_VERSION")).title("deputy"),
                ),
        )
    }

    /// `authenticate`: nothing to do when the key is there; otherwise says which
    /// environment variable is missing (deputy cannot set its own environment).
    pub(crate) fn authenticate(
        &self,
        request: AuthenticateRequest,
        responder: Responder<AuthenticateResponse>,
    ) -> Reply {
        if request.method_id.0.as_ref() != ENV_AUTH_METHOD {
            return responder.respond_with_error(Error::new(
                ErrorCode::INVALID_PARAMS,
                format!(
                    "unknown authentication method `{}`; deputy offers `{ENV_AUTH_METHOD}` only",
                    request.method_id
                ),
            ));
        }
        match self
            .config(None, &[])
            .and_then(|config| key_present(&config))
        {
            Ok(()) => responder.respond(AuthenticateResponse::new()),
            Err(error) => responder.respond_with_error(error),
        }
    }

    /// `session/new`: a new thread in `cwd`.
    pub(crate) async fn new_session(
        &self,
        request: NewSessionRequest,
        responder: Responder<NewSessionResponse>,
        client: ConnectionTo<Client>,
    ) -> Reply {
        let started = async {
            let config = self.config(Some(&request.cwd), &request.mcp_servers)?;
            key_present(&config)?;
            let manager = self.manager.clone();
            blocking(move || manager.start_thread(config))
                .await?
                .map_err(|err| Error::new(ErrorCode::INTERNAL_ERROR, err.to_string()))
        }
        .await;
        let thread = match started {
            Ok(thread) => thread,
            Err(error) => return responder.respond_with_error(error),
        };
        let session = self.open(thread);
        let (modes, options) = self.session_state(&session);
        responder.respond(
            NewSessionResponse::new(session.id.clone())
                .modes(modes)
                .config_options(options),
        )?;
        let updates = UpdateSender::new(session.id.clone(), client);
        announce(&updates, &request.mcp_servers);
        Ok(())
    }

    /// `session/load`: the thread resumed from its rollout, its history replayed as
    /// updates, then the answer. Runs in a task of its own.
    pub(crate) fn load_session(
        self: &Arc<Self>,
        request: LoadSessionRequest,
        responder: Responder<LoadSessionResponse>,
        client: ConnectionTo<Client>,
    ) -> Reply {
        if self
            .sessions
            .get(&request.session_id)
            .is_some_and(|session| session.is_prompting())
        {
            return responder.respond_with_error(busy(&request.session_id));
        }
        let agent = self.clone();
        tokio::spawn(async move {
            let loaded = agent.load(&request).await;
            let (session, through) = match loaded {
                Ok(loaded) => loaded,
                Err(error) => {
                    let _ = responder.respond_with_error(error);
                    return;
                }
            };
            let updates = UpdateSender::new(session.id.clone(), client);
            history::replay(&session.thread, through, &updates).await;
            let (modes, options) = agent.session_state(&session);
            if responder
                .respond(
                    LoadSessionResponse::new()
                        .modes(modes)
                        .config_options(options),
                )
                .is_ok()
            {
                announce(&updates, &request.mcp_servers);
            }
        });
        Ok(())
    }

    /// The thread of `request`, live or resumed, registered as a session, with the seq of
    /// the last event its history replay covers.
    async fn load(&self, request: &LoadSessionRequest) -> Result<(Arc<Session>, u64), Error> {
        let mut layers = self.layers.clone();
        layers.overrides.cwd = Some(checked_cwd(&request.cwd)?);
        layers
            .call_overrides
            .extend(client_servers(&request.mcp_servers).overrides);
        key_present(
            &layers
                .load()
                .map_err(|err| config_error(&err.to_string()))?,
        )?;
        let manager = self.manager.clone();
        let id = request.session_id.0.to_string();
        let (thread, resumed_after) = blocking(move || manager.get_or_resume(&id, &layers))
            .await?
            .map_err(|err| match err {
                ResumeError::NotFound(_) => {
                    acp::Error::session_not_found(request.session_id.clone()).into()
                }
                other => Error::new(ErrorCode::INTERNAL_ERROR, other.to_string()),
            })?;
        let through = resumed_after.unwrap_or_else(|| thread.last_seq());
        Ok((self.open(thread), through))
    }

    /// `session/prompt`: refused at once when it cannot run; otherwise run in a task,
    /// answered with its stop reason when the turn ends.
    pub(crate) fn prompt(
        &self,
        request: PromptRequest,
        responder: Responder<PromptResponse>,
        client: ConnectionTo<Client>,
    ) -> Reply {
        let session = match self.session(&request.session_id) {
            Ok(session) => session,
            Err(error) => return responder.respond_with_error(error),
        };
        let work = match prompt_work(&request.prompt) {
            Ok(work) => work,
            Err(bad) => {
                return responder
                    .respond_with_error(Error::new(ErrorCode::INVALID_PARAMS, bad.to_string()));
            }
        };
        let Ok(cancel) = session.begin_prompt() else {
            return responder.respond_with_error(busy(&session.id));
        };
        let forms = self.forms.load(Ordering::Relaxed);
        tokio::spawn(async move {
            let result = run_prompt(&session, work, &cancel, client, forms).await;
            // Over before it is answered: the client may prompt again at once.
            session.end_prompt();
            let _ = responder.respond_with_result(result);
        });
        Ok(())
    }

    /// `session/cancel`: stops the session's prompt (its commands are killed, its open
    /// questions withdrawn); the prompt then answers `cancelled`.
    pub(crate) fn cancel(&self, notification: &CancelNotification) -> Reply {
        match self.sessions.get(&notification.session_id) {
            Some(session) => session.cancel(),
            None => tracing::warn!(
                session = %notification.session_id,
                "session/cancel for a session this connection does not have"
            ),
        }
        Ok(())
    }

    /// `session/set_mode`: the mode's policies apply from the next prompt on.
    pub(crate) fn set_mode(
        &self,
        request: SetSessionModeRequest,
        responder: Responder<SetSessionModeResponse>,
        client: ConnectionTo<Client>,
    ) -> Reply {
        let session = match self.session(&request.session_id) {
            Ok(session) => session,
            Err(error) => return responder.respond_with_error(error),
        };
        let Some(settings) = mode_overrides(&request.mode_id, &session.thread.config()) else {
            return responder.respond_with_error(Error::new(
                ErrorCode::INVALID_PARAMS,
                format!(
                    "unknown mode `{}`; the session's modes are listed in its `modes`",
                    request.mode_id
                ),
            ));
        };
        session.set_mode(request.mode_id.clone(), settings);
        responder.respond(SetSessionModeResponse::new())?;
        UpdateSender::new(session.id.clone(), client).send(SessionUpdate::CurrentModeUpdate(
            CurrentModeUpdate::new(request.mode_id),
        ));
        Ok(())
    }

    /// `session/set_config_option`: the model (from the configured ones), from the next
    /// prompt on.
    pub(crate) fn set_config_option(
        &self,
        request: SetSessionConfigOptionRequest,
        responder: Responder<SetSessionConfigOptionResponse>,
    ) -> Reply {
        let session = match self.session(&request.session_id) {
            Ok(session) => session,
            Err(error) => return responder.respond_with_error(error),
        };
        if !is_model_option(&request.config_id) {
            return responder.respond_with_error(Error::new(
                ErrorCode::INVALID_PARAMS,
                format!("unknown config option `{}`", request.config_id),
            ));
        }
        let models = self.models(&session.model());
        let chosen = match &request.value {
            SessionConfigOptionValue::ValueId { value } => {
                models.iter().find(|m| m.as_str() == value.0.as_ref())
            }
            _ => None,
        };
        let Some(model) = chosen else {
            return responder.respond_with_error(Error::new(
                ErrorCode::INVALID_PARAMS,
                format!(
                    "the model must be one of the configured models: {}",
                    models.join(", ")
                ),
            ));
        };
        session.set_model(model.clone());
        responder.respond(SetSessionConfigOptionResponse::new(vec![model_option(
            &models, model,
        )]))
    }

    /// Registers `thread` as a session, in the mode and with the model its settings say.
    fn open(&self, thread: Arc<Thread>) -> Arc<Session> {
        let config = thread.config();
        let session = Arc::new(Session::new(
            thread,
            current_mode(&config),
            config.model.clone(),
        ));
        self.sessions.insert(session.clone());
        session
    }

    /// A session's modes and config options, as `session/new` and `session/load` give them.
    fn session_state(
        &self,
        session: &Session,
    ) -> (acp::SessionModeState, Vec<acp::SessionConfigOption>) {
        let config = session.thread.config();
        let model = session.model();
        let options = vec![model_option(&self.models(&model), &model)];
        (mode_state(&config, &session.mode()), options)
    }

    /// The models a session may switch to: the configured ones, and `current`.
    fn models(&self, current: &str) -> Vec<String> {
        let mut models: Vec<String> = configured_models(&self.layers)
            .map(|models| models.into_iter().map(|m| m.model).collect())
            .unwrap_or_default();
        if !models.iter().any(|m| m == current) {
            models.insert(0, current.to_string());
        }
        models
    }

    /// The session `id`.
    fn session(&self, id: &SessionId) -> Result<Arc<Session>, Error> {
        self.sessions
            .get(id)
            .ok_or_else(|| acp::Error::session_not_found(id.clone()).into())
    }

    /// The configuration, in `cwd` when given, with the client's MCP servers.
    fn config(&self, cwd: Option<&Path>, servers: &[McpServer]) -> Result<Config, Error> {
        let mut layers = self.layers.clone();
        if let Some(cwd) = cwd {
            layers.overrides.cwd = Some(checked_cwd(cwd)?);
        }
        layers
            .call_overrides
            .extend(client_servers(servers).overrides);
        layers.load().map_err(|err| config_error(&err.to_string()))
    }
}

/// What a new or loaded session is told after its answer: the slash commands, and which
/// of the client's MCP servers cannot be used.
fn announce(updates: &UpdateSender, mcp_servers: &[McpServer]) {
    updates.send(SessionUpdate::AvailableCommandsUpdate(
        AvailableCommandsUpdate::new(available_commands()),
    ));
    let refused = client_servers(mcp_servers).refused;
    if !refused.is_empty() {
        tracing::warn!(?refused, "some of the client's MCP servers are not used");
        updates.send(SessionUpdate::Notice(
            Notice::new(
                NoticeSeverity::Warning,
                "deputy cannot use some of the client's MCP servers",
            )
            .description(refused.join("\n")),
        ));
    }
}

/// A session's working directory: absolute and an existing directory.
fn checked_cwd(cwd: &Path) -> Result<PathBuf, Error> {
    if !cwd.is_absolute() {
        return Err(Error::new(
            ErrorCode::INVALID_PARAMS,
            format!("cwd `{}` must be an absolute path", cwd.display()),
        ));
    }
    if !cwd.is_dir() {
        return Err(Error::new(
            ErrorCode::INVALID_PARAMS,
            format!("cwd `{}` is not a directory", cwd.display()),
        ));
    }
    Ok(cwd.to_path_buf())
}

/// The environment variable the model provider's key should be in, and why it is
/// unusable, when it is.
fn missing_key(config: &Config) -> Option<(String, String)> {
    let why = config.model_provider.api_key().err()?;
    let var = config.model_provider.env_key.clone().unwrap_or_default();
    Some((var, why))
}

fn key_present(config: &Config) -> Result<(), Error> {
    match missing_key(config) {
        None => Ok(()),
        Some((var, why)) => Err(Error::new(
            ErrorCode::AUTH_REQUIRED,
            format!(
                "no API key: {why}. Set {var} in the environment deputy is started with \
                 (in Zed: `env` of the agent server's settings)"
            ),
        )),
    }
}

fn config_error(message: &str) -> Error {
    Error::new(
        ErrorCode::INVALID_PARAMS,
        format!("the configuration does not load: {message}"),
    )
}

fn busy(id: &SessionId) -> Error {
    Error::new(
        ErrorCode::INVALID_REQUEST,
        format!("session {id} is already running a prompt; cancel it or wait for its answer"),
    )
}

/// Runs blocking work (a rollout's file I/O) off the runtime's threads.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Error> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|err| Error::new(ErrorCode::INTERNAL_ERROR, err.to_string()))
}
