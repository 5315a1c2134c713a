//! A thread's private `/tmp` directory, kept in its configuration.

use std::path::PathBuf;
use std::sync::Mutex;

use deputy_sandbox::PrivateTmp;

use crate::sync::lock;

/// A thread's private `/tmp`: created when its first confined command runs, kept for the
/// thread's other commands, removed when the thread's configuration is dropped.
#[derive(Debug)]
pub(crate) struct PrivateTmpSlot {
    name: String,
    dir: Mutex<Option<PrivateTmp>>,
}

impl PrivateTmpSlot {
    /// A slot for the thread `thread_id`; nothing is created yet.
    pub(crate) fn new(thread_id: &str) -> Self {
        Self {
            name: thread_id.to_string(),
            dir: Mutex::new(None),
        }
    }

    /// The directory, when a command has already created it.
    pub(crate) fn existing(&self) -> Option<PathBuf> {
        lock(&self.dir)
            .as_ref()
            .map(|existing| existing.path().to_path_buf())
    }

    /// The directory, created (mode 0700) on first use.
    pub(crate) fn path(&self) -> Result<PathBuf, String> {
        let mut dir = lock(&self.dir);
        if let Some(existing) = dir.as_ref() {
            return Ok(existing.path().to_path_buf());
        }
        let created = PrivateTmp::create(&self.name)
            .map_err(|e| format!("cannot prepare the command's private /tmp: {e}"))?;
        let path = created.path().to_path_buf();
        *dir = Some(created);
        Ok(path)
    }
}
