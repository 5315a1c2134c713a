//! The signals that ask deputy to stop (SIGTERM, SIGHUP, SIGINT), caught so that a front
//! door can stop its turns, kill their commands and close its sessions before exiting
//! with `128 + signal`, instead of dying and leaving its commands running.

use anyhow::Context;
use tokio::signal::unix::{Signal, SignalKind, signal};

/// Handlers for the terminating signals, installed for the rest of the process.
pub struct TerminationSignals {
    term: Signal,
    hup: Signal,
    int: Signal,
}

impl TerminationSignals {
    /// Installs the handlers; from now on these signals no longer end the process by
    /// themselves. Must be called within the tokio runtime, before any command starts.
    pub fn install() -> anyhow::Result<Self> {
        let install = |kind: SignalKind| signal(kind).context("installing a signal handler");
        Ok(Self {
            term: install(SignalKind::terminate())?,
            hup: install(SignalKind::hangup())?,
            int: install(SignalKind::interrupt())?,
        })
    }

    /// Resolves with the number of the first terminating signal received.
    pub async fn received(mut self) -> i32 {
        tokio::select! {
            _ = self.term.recv() => libc::SIGTERM,
            _ = self.hup.recv() => libc::SIGHUP,
            _ = self.int.recv() => libc::SIGINT,
        }
    }
}
