//! The registry of live threads: creating them, finding them, shutting them down.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use deputy_protocol::{Op, SessionConfiguredEvent};

use crate::client::{ModelClient, ModelError};
use crate::config::Config;
use crate::instructions;
use crate::thread::{Thread, lock, spawn_thread};

/// Why a thread could not be started.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The model client could not be built from the configuration.
    #[error("cannot set up the model client: {0}")]
    Model(#[from] ModelError),
}

/// Owns every live thread of a process.
#[derive(Debug)]
pub struct ThreadManager {
    threads: Mutex<HashMap<String, Arc<Thread>>>,
    sandbox_launcher: Option<PathBuf>,
}

impl ThreadManager {
    /// A manager whose threads confine commands by re-executing `sandbox_launcher`
    /// (deputy's own binary); `None` means sandboxed commands cannot run.
    pub fn new(sandbox_launcher: Option<PathBuf>) -> Self {
        Self {
            threads: Mutex::default(),
            sandbox_launcher,
        }
    }

    /// Starts a new thread. Must be called within a tokio runtime.
    pub fn start_thread(
        &self,
        mut config: Config,
    ) -> Result<(Arc<Thread>, SessionConfiguredEvent), StartError> {
        config.sandbox_launcher = self.sandbox_launcher.clone();
        let client = ModelClient::new(config.model_provider.clone(), config.model.clone())?;
        let id = uuid::Uuid::now_v7().to_string();
        let history = instructions::initial_developer_messages(&config);
        let configured = SessionConfiguredEvent {
            session_id: id.clone(),
            model: config.model.clone(),
            model_provider_id: config.model_provider_id.clone(),
            approval_policy: config.approval_policy,
            sandbox_policy: config.sandbox_policy(),
            cwd: config.cwd.clone(),
            history_log_id: 0,
            history_entry_count: 0,
            rollout_path: None,
        };
        let thread = spawn_thread(id.clone(), Arc::new(config), client, history);
        lock(&self.threads).insert(id, thread.clone());
        Ok((thread, configured))
    }

    /// The live thread with this id.
    pub fn get(&self, id: &str) -> Option<Arc<Thread>> {
        lock(&self.threads).get(id).cloned()
    }

    /// Ids of every live thread.
    pub fn thread_ids(&self) -> Vec<String> {
        lock(&self.threads).keys().cloned().collect()
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
    }
}
