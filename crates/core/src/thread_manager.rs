//! The registry of live threads: creating them, resuming them from disk,
//! finding them, shutting them down.

// Runs on the async runtime: no blocking std calls (see clippy.toml).
#![cfg_attr(not(test), warn(clippy::disallowed_methods))]

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use deputy_protocol::{Op, SessionConfiguredEvent, ThreadEventMsg, TurnOverrides, WarningEvent};

use crate::client::{ModelClient, ModelError};
use crate::config::{Config, ConfigError, ConfigLayers};
use crate::instructions;
use crate::patch_journal::recover_thread_patches;
use crate::private_tmp::PrivateTmpSlot;
use crate::rollout::{self, RolloutError, RolloutRecorder, SessionMeta, SessionSource};
use crate::submission_loop::{spawn_new_thread, spawn_thread};
use crate::sync::lock;
use crate::thread::{Thread, ThreadStart};

/// Why a thread could not be started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The model client could not be built from the configuration.
    #[error("cannot set up the model client: {0}")]
    Model(#[from] ModelError),
    /// The session's rollout file could not be created.
    #[error("cannot create the session file: {0}")]
    Rollout(#[from] RolloutError),
    /// The setup work stopped before it finished (it panicked, or the runtime is stopping).
    #[error("cannot start the session: {0}")]
    Stopped(#[source] tokio::task::JoinError),
}

/// Why a thread could not be resumed from its rollout.
#[derive(Debug, thiserror::Error)]
pub enum ResumeError {
    /// No live thread and no rollout has this id.
    #[error("Session not found for thread_id: {0}")]
    NotFound(String),
    /// Another process has the thread open.
    #[error("thread is open in another process")]
    Locked,
    /// The rollout exists but holds no usable session.
    #[error("cannot resume the session: {0}")]
    Corrupt(#[source] RolloutError),
    /// The rollout could not be read or written.
    #[error("cannot resume the session: {0}")]
    Io(#[source] RolloutError),
    /// The saved configuration, with the caller's, does not load any more.
    #[error("cannot resume the session: its configuration does not load: {0}")]
    Config(#[from] ConfigError),
    /// The model client could not be built from the configuration.
    #[error("cannot resume the session: cannot set up the model client: {0}")]
    Model(#[from] ModelError),
    /// The loading work stopped before it finished (it panicked, or the runtime is stopping).
    #[error("cannot resume the session: {0}")]
    Stopped(#[source] tokio::task::JoinError),
}

impl ResumeError {
    /// Whether the thread simply does not exist (as opposed to failing to load).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound(_))
    }
}

impl From<RolloutError> for ResumeError {
    fn from(err: RolloutError) -> Self {
        match err {
            RolloutError::NotFound(id) => Self::NotFound(id),
            RolloutError::Locked => Self::Locked,
            err @ RolloutError::Corrupt { .. } => Self::Corrupt(err),
            err @ RolloutError::Io { .. } => Self::Io(err),
        }
    }
}

/// Owns every live thread of a process.
#[derive(Debug)]
pub struct ThreadManager {
    threads: Arc<Mutex<HashMap<String, Arc<Thread>>>>,
    /// Threads being unloaded: gone from `threads`, their rollout not yet released.
    unloading: Arc<Mutex<HashSet<String>>>,
    /// Held while resuming, so that two callers resuming one thread get one thread.
    resuming: tokio::sync::Mutex<()>,
    sandbox_launcher: Option<PathBuf>,
    source: SessionSource,
    unloader: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl ThreadManager {
    /// A manager whose threads confine commands by re-executing `sandbox_launcher`
    /// (deputy's own binary; `None` means sandboxed commands cannot run) and whose
    /// sessions are recorded as started by `source` (the front door).
    pub fn new(sandbox_launcher: Option<PathBuf>, source: SessionSource) -> Self {
        Self {
            threads: Arc::default(),
            unloading: Arc::default(),
            resuming: tokio::sync::Mutex::default(),
            sandbox_launcher,
            source,
            unloader: Mutex::default(),
        }
    }

    /// Starts a new thread: builds its model client and creates its rollout off the
    /// async runtime, then spawns it. Its log opens with `session_configured` and the
    /// configuration's warnings; its AGENTS.md instructions and MCP servers are loaded by
    /// the thread itself before its first turn. Must be called within a tokio runtime.
    ///
    /// The configuration is boxed before anything waits: a start waits for one of the
    /// blocking pool's places, and a thousand calls at once would otherwise each hold it
    /// in every future of the way there (800 B a copy).
    pub fn start(
        &self,
        config: Config,
    ) -> impl Future<Output = Result<Arc<Thread>, StartError>> + Send + '_ {
        self.start_boxed(Box::new(config))
    }

    async fn start_boxed(&self, mut config: Box<Config>) -> Result<Arc<Thread>, StartError> {
        config.sandbox_launcher = self.sandbox_launcher.clone();
        let source = self.source;
        let (start, configured) = off_runtime(move || prepare_start(*config, source))
            .await
            .map_err(StartError::Stopped)??;
        let id = start.id.clone();
        let thread = spawn_new_thread(start, |thread| announce(thread, configured));
        self.insert(id, thread.clone());
        Ok(thread)
    }

    /// The live thread `id`, else that thread resumed from its rollout under
    /// `layers.deputy_home`, with the seq before its new `session_configured` when this
    /// call resumed it. A resumed thread has the saved history exactly, and the saved
    /// cwd, model, provider, policies and instructions wherever `layers.overrides` leaves
    /// them unset (above config.toml and `-c`, below per-call settings); its log continues
    /// the saved one with a new `session_configured`. The rollout is read off the async
    /// runtime. Fails with [`ResumeError::Locked`] when another process has the thread
    /// open; a thread this manager is just unloading is waited for (briefly) instead.
    /// Must be called within a tokio runtime.
    pub async fn open(
        &self,
        id: &str,
        layers: &ConfigLayers,
    ) -> Result<(Arc<Thread>, Option<u64>), ResumeError> {
        const UNLOAD_WAIT: Duration = Duration::from_secs(5);
        let canonical = uuid::Uuid::parse_str(id)
            .map(|u| u.hyphenated().to_string())
            .unwrap_or_else(|_| id.to_string());
        let _resuming = self.resuming.lock().await;
        if let Some(thread) = self.get(&canonical) {
            return Ok((thread, None));
        }
        let deadline = Instant::now() + UNLOAD_WAIT;
        let (start, configured, before) = loop {
            let (id, layers) = (id.to_string(), layers.clone());
            let launcher = self.sandbox_launcher.clone();
            match off_runtime(move || prepare_resume(&id, &layers, launcher))
                .await
                .map_err(ResumeError::Stopped)?
            {
                // Still held by this process's own unloading thread: it is about to let go.
                Err(ResumeError::Locked)
                    if lock(&self.unloading).contains(&canonical) && Instant::now() < deadline =>
                {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                other => break other?,
            }
        };
        let id = start.id.clone();
        let thread = spawn_thread(start);
        announce(&thread, configured);
        self.insert(id, thread.clone());
        Ok((thread, Some(before)))
    }

    /// The live thread with this id.
    pub fn get(&self, id: &str) -> Option<Arc<Thread>> {
        lock(&self.threads).get(id).cloned()
    }

    /// Shuts thread `id` down (interrupting its turn) and forgets it; its history
    /// stays on disk and a later [`ThreadManager::open`] loads it again.
    /// Returns whether it was live.
    pub async fn close_thread(&self, id: &str) -> bool {
        let thread = lock(&self.threads).remove(id);
        match thread {
            Some(thread) => {
                let _ = thread.submit(Op::Shutdown);
                thread.closed().await;
                true
            }
            None => false,
        }
    }

    /// Shuts every thread down: running turns are interrupted and their commands killed.
    /// Returns when every thread's loop has stopped.
    pub async fn shutdown_all(&self) {
        let threads: Vec<Arc<Thread>> = lock(&self.threads).drain().map(|(_, t)| t).collect();
        for thread in &threads {
            let _ = thread.submit(Op::Shutdown);
        }
        for thread in &threads {
            thread.closed().await;
        }
        if let Some(unloader) = lock(&self.unloader).take() {
            unloader.abort();
        }
    }

    fn insert(&self, id: String, thread: Arc<Thread>) {
        lock(&self.threads).insert(id, thread);
        let mut unloader = lock(&self.unloader);
        if unloader.is_none() {
            *unloader = Some(tokio::spawn(unload_idle_threads(
                Arc::downgrade(&self.threads),
                self.unloading.clone(),
            )));
        }
    }
}

/// Runs `work` (file I/O, locks) on tokio's blocking pool, so that it never holds up
/// the async runtime; the pool's threads can still spawn tasks. At most 8 at once.
async fn off_runtime<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, tokio::task::JoinError> {
    static STARTING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(8);
    crate::sync::spawn_blocking_in(&STARTING, work).await
}

/// The file work of [`ThreadManager::start`]: the model client (whose first build reads
/// the system's certificates) and the new rollout, created and locked. Blocking.
fn prepare_start(
    mut config: Config,
    source: SessionSource,
) -> Result<(ThreadStart, SessionConfiguredEvent), StartError> {
    let client = ModelClient::new(config.model_provider.clone(), config.model.clone())?;
    let id = uuid::Uuid::now_v7().to_string();
    config.sandbox_private_tmp = Some(Arc::new(PrivateTmpSlot::new(&id)));
    // The AGENTS.md instructions are added by the thread before its first turn.
    let history = instructions::initial_context(&config);
    let meta = SessionMeta::new(&id, &config, source);
    let recorder = RolloutRecorder::create(&config.deputy_home, &meta, &history)?;
    let configured = configured_event(&id, &config, 0, recorder.path());
    let start = ThreadStart {
        id,
        config: Arc::new(config),
        client,
        history,
        rollout: Some(recorder),
        next_seq: 1,
    };
    Ok((start, configured))
}

/// The file work of [`ThreadManager::open`] for a thread that is not live: its rollout
/// found, locked and read (interrupted patches recovered), the configuration loaded with
/// the saved settings; with the seq before the new `session_configured`. Blocking.
fn prepare_resume(
    id: &str,
    layers: &ConfigLayers,
    sandbox_launcher: Option<PathBuf>,
) -> Result<(ThreadStart, SessionConfiguredEvent, u64), ResumeError> {
    let path = rollout::find_rollout(&layers.deputy_home, id)?;
    let home = &layers.deputy_home;
    let (recorder, session) = RolloutRecorder::resume(&path, || {
        let canonical = uuid::Uuid::parse_str(id)
            .map_or_else(|_| id.to_string(), |u| u.hyphenated().to_string());
        recover_thread_patches(home, &canonical)
    })?;
    let mut config = saved_layers(layers, &session.meta).load()?;
    // What the last turn ran with wins over how the thread started (turn overrides
    // persist), but not over what this caller asks for now.
    if let Some(context) = &session.last_turn_context {
        let explicit = &layers.overrides;
        let overrides = TurnOverrides {
            cwd: explicit.cwd.is_none().then(|| context.cwd.clone()),
            model: explicit.model.is_none().then(|| context.model.clone()),
            approval_policy: explicit
                .approval_policy
                .is_none()
                .then_some(context.approval_policy),
            sandbox_policy: explicit
                .sandbox_mode
                .is_none()
                .then(|| context.sandbox_policy.clone()),
        };
        // A saved cwd that is gone keeps the thread's original settings.
        if let Ok(updated) = config.with_overrides(&overrides) {
            config = updated;
        }
        // Roots added for this run (`--add-dir`) come on top of the saved ones.
        for root in &explicit.additional_writable_roots {
            let roots = &mut config.sandbox_workspace_write.writable_roots;
            if !roots.contains(root) {
                roots.push(root.clone());
            }
        }
    }
    for warning in &session.warnings {
        tracing::warn!("{warning}");
    }
    config.warnings.extend(session.warnings);
    config.sandbox_launcher = sandbox_launcher;
    let client = ModelClient::new(config.model_provider.clone(), config.model.clone())?;
    let id = session.meta.id;
    config.sandbox_private_tmp = Some(Arc::new(PrivateTmpSlot::new(&id)));
    let configured = configured_event(&id, &config, session.history.len(), &path);
    let start = ThreadStart {
        id,
        config: Arc::new(config),
        client,
        history: session.history,
        rollout: Some(recorder),
        next_seq: session.last_seq + 1,
    };
    Ok((start, configured, session.last_seq))
}

/// Publishes what a thread opens with: `session_configured`, then the configuration's warnings.
fn announce(thread: &Thread, configured: SessionConfiguredEvent) {
    let log = thread.log();
    log.publish(
        None,
        "",
        ThreadEventMsg::SessionConfigured(Box::new(configured)),
    );
    for message in &thread.config().warnings {
        log.publish(
            None,
            "",
            ThreadEventMsg::Warning(WarningEvent {
                message: message.clone(),
            }),
        );
    }
}

/// Unloads threads idle for longer than their `thread_idle_unload_sec` (nothing
/// running, nobody subscribed), until the manager is gone.
async fn unload_idle_threads(
    threads: std::sync::Weak<Mutex<HashMap<String, Arc<Thread>>>>,
    unloading: Arc<Mutex<HashSet<String>>>,
) {
    const LONGEST_NAP: Duration = Duration::from_secs(60);
    const SHORTEST_NAP: Duration = Duration::from_millis(50);
    loop {
        let Some(threads) = threads.upgrade() else {
            return;
        };
        let now = Instant::now();
        let mut idle = Vec::new();
        let mut nap = LONGEST_NAP;
        lock(&threads).retain(|id, thread| {
            let limit = thread.config().thread_idle_unload;
            let quiet = now.saturating_duration_since(thread.log().last_activity());
            if thread.is_idle() && quiet >= limit {
                // Marked before it leaves the map, so a resume in between waits for it.
                lock(&unloading).insert(id.clone());
                idle.push(thread.clone());
                return false;
            }
            nap = nap.min(limit.saturating_sub(quiet));
            true
        });
        drop(threads);
        for thread in idle {
            tracing::debug!(thread = thread.id(), "unloading idle thread");
            let _ = thread.submit(Op::Shutdown);
            thread.closed().await;
            lock(&unloading).remove(thread.id());
        }
        tokio::time::sleep(nap.max(SHORTEST_NAP)).await;
    }
}

fn configured_event(
    id: &str,
    config: &Config,
    history_entry_count: usize,
    rollout_path: &std::path::Path,
) -> SessionConfiguredEvent {
    SessionConfiguredEvent {
        session_id: id.to_string(),
        model: config.model.clone(),
        model_provider_id: config.model_provider_id.clone(),
        approval_policy: config.approval_policy,
        sandbox_policy: config.sandbox_policy(),
        cwd: config.cwd.clone(),
        history_log_id: 0,
        history_entry_count,
        rollout_path: Some(rollout_path.to_path_buf()),
    }
}

/// The caller's layers with the session's saved settings slotted in: as the
/// last `-c` overrides (so per-call `config` entries and typed overrides still
/// win), and the cwd wherever the caller gave none.
fn saved_layers(layers: &ConfigLayers, meta: &SessionMeta) -> ConfigLayers {
    use toml::Value;
    let mut layers = layers.clone();
    let text = |s: &str| Value::String(s.to_string());
    let ws = &meta.sandbox_workspace_write;
    let workspace_write: toml::Table = [
        (
            "writable_roots",
            Value::Array(
                ws.writable_roots
                    .iter()
                    .map(|root| text(&root.to_string_lossy()))
                    .collect(),
            ),
        ),
        ("network_access", Value::Boolean(ws.network_access)),
        (
            "exclude_tmpdir_env_var",
            Value::Boolean(ws.exclude_tmpdir_env_var),
        ),
        ("exclude_slash_tmp", Value::Boolean(ws.exclude_slash_tmp)),
        ("allow_unix_sockets", Value::Boolean(ws.allow_unix_sockets)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let mut saved = vec![
        ("model", text(&meta.model)),
        ("model_provider", text(&meta.model_provider)),
        ("approval_policy", text(meta.approval_policy.as_str())),
        ("sandbox_mode", text(meta.sandbox_mode.as_str())),
        ("sandbox_workspace_write", Value::Table(workspace_write)),
        ("include_plan_tool", Value::Boolean(meta.include_plan_tool)),
    ];
    if let Some(base) = &meta.base_instructions {
        saved.push(("base_instructions", text(base)));
    }
    if let Some(developer) = &meta.developer_instructions {
        saved.push(("developer_instructions", text(developer)));
    }
    if let Some(prompt) = &meta.compact_prompt {
        saved.push(("compact_prompt", text(prompt)));
    }
    layers
        .cli_overrides
        .extend(saved.into_iter().map(|(k, v)| (k.to_string(), v)));
    layers.overrides.cwd.get_or_insert_with(|| meta.cwd.clone());
    layers
}
