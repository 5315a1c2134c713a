//! The connection's sessions: each is a deputy thread with the client's choices (mode,
//! model) and the prompt running on it. This registry is the one place that knows
//! which prompt runs where and how to cancel it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agent_client_protocol::v1::schema::{SessionId, SessionModeId};
use deputy_core::Thread;
use deputy_protocol::TurnOverrides;
use tokio_util::sync::CancellationToken;

/// One session: a thread and what the client chose for it.
#[derive(Debug)]
pub(crate) struct Session {
    /// The session id (the thread id).
    pub(crate) id: SessionId,
    /// The thread.
    pub(crate) thread: Arc<Thread>,
    state: Mutex<SessionState>,
}

#[derive(Debug)]
struct SessionState {
    mode: SessionModeId,
    model: String,
    /// Settings chosen since the last turn, applied by the next one.
    pending: Option<TurnOverrides>,
    /// Cancels the prompt running now.
    running: Option<CancellationToken>,
}

/// Why a prompt cannot start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Busy;

impl Session {
    /// A session on `thread`, in `mode`, using `model`.
    pub(crate) fn new(thread: Arc<Thread>, mode: SessionModeId, model: String) -> Self {
        Self {
            id: SessionId::new(thread.id()),
            thread,
            state: Mutex::new(SessionState {
                mode,
                model,
                pending: None,
                running: None,
            }),
        }
    }

    /// Marks a prompt as running and returns what cancels it, unless one already runs.
    pub(crate) fn begin_prompt(&self) -> Result<CancellationToken, Busy> {
        let mut state = self.lock();
        if state.running.is_some() || self.thread.is_busy() {
            return Err(Busy);
        }
        let cancel = CancellationToken::new();
        state.running = Some(cancel.clone());
        Ok(cancel)
    }

    /// The running prompt has ended.
    pub(crate) fn end_prompt(&self) {
        self.lock().running = None;
    }

    /// Whether a prompt runs now.
    pub(crate) fn is_prompting(&self) -> bool {
        self.lock().running.is_some()
    }

    /// Cancels the running prompt, if any.
    pub(crate) fn cancel(&self) {
        if let Some(running) = &self.lock().running {
            running.cancel();
        }
    }

    /// The current mode.
    pub(crate) fn mode(&self) -> SessionModeId {
        self.lock().mode.clone()
    }

    /// The current model.
    pub(crate) fn model(&self) -> String {
        self.lock().model.clone()
    }

    /// Switches to `mode`, whose settings the next turn applies.
    pub(crate) fn set_mode(&self, mode: SessionModeId, settings: TurnOverrides) {
        let mut state = self.lock();
        state.mode = mode;
        let pending = state.pending.get_or_insert_with(TurnOverrides::default);
        pending.approval_policy = settings.approval_policy;
        pending.sandbox_policy = settings.sandbox_policy;
    }

    /// Switches to `model` from the next turn on.
    pub(crate) fn set_model(&self, model: String) {
        let mut state = self.lock();
        state.model.clone_from(&model);
        state
            .pending
            .get_or_insert_with(TurnOverrides::default)
            .model = Some(model);
    }

    /// The settings the next turn must apply, handed over once.
    pub(crate) fn take_overrides(&self) -> Option<TurnOverrides> {
        self.lock().pending.take()
    }

    fn lock(&self) -> MutexGuard<'_, SessionState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The sessions of one connection, by id.
#[derive(Debug, Default)]
pub(crate) struct Sessions(Mutex<HashMap<SessionId, Arc<Session>>>);

impl Sessions {
    /// The session `id`.
    pub(crate) fn get(&self, id: &SessionId) -> Option<Arc<Session>> {
        self.lock().get(id).cloned()
    }

    /// Adds (or replaces, after a reload) a session.
    pub(crate) fn insert(&self, session: Arc<Session>) {
        self.lock().insert(session.id.clone(), session);
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<SessionId, Arc<Session>>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
