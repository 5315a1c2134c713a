//! Waiting for a user's reply: one pending question per tool call, and what the user
//! approved for the rest of the session.

// Runs on the async runtime: no blocking std calls (see clippy.toml).
#![cfg_attr(not(test), warn(clippy::disallowed_methods))]

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Mutex;

use deputy_protocol::{Reply, SandboxMode};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::sync::lock;

/// What a session-wide command approval covers: the same argv, run in the same directory,
/// under the same sandbox mode. The same argv elsewhere (another `workdir`) is a different
/// request and asks again.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CommandApproval {
    /// The argv as the model asked for it.
    pub argv: Vec<String>,
    /// Where it runs.
    pub cwd: PathBuf,
    /// The session's sandbox mode when it was approved.
    pub sandbox_mode: SandboxMode,
}

/// Pending approval requests of one thread and its session-wide approvals.
///
/// The gate itself waits as long as it takes: the approval timeout is the front-door
/// driver's, started when the question actually reaches someone (see `crate::driver`).
#[derive(Debug, Default)]
pub struct ApprovalGate {
    pending: Mutex<HashMap<String, oneshot::Sender<Reply>>>,
    approved_commands: Mutex<HashSet<CommandApproval>>,
    approved_files: Mutex<HashSet<PathBuf>>,
}

impl ApprovalGate {
    /// A gate with nothing pending or approved.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a question under `call_id`; await the returned [`PendingApproval`]
    /// after the question has been published.
    pub fn register(&self, call_id: &str) -> PendingApproval {
        let (tx, rx) = oneshot::channel();
        lock(&self.pending).insert(call_id.to_string(), tx);
        PendingApproval { rx }
    }

    /// Delivers a reply; false when nothing waits under that id (late or unknown).
    pub fn resolve(&self, call_id: &str, reply: Reply) -> bool {
        match lock(&self.pending).remove(call_id) {
            Some(tx) => tx.send(reply).is_ok(),
            None => false,
        }
    }

    /// Forgets requests nobody answered (the turn that asked has ended).
    pub fn clear_pending(&self) {
        lock(&self.pending).clear();
    }

    /// Whether any command with this argv was approved for the session, wherever it ran:
    /// when none was, [`Self::command_approved_for_session`] cannot be true, and its
    /// directory need not be resolved.
    pub fn argv_approved_for_session(&self, argv: &[String]) -> bool {
        lock(&self.approved_commands)
            .iter()
            .any(|approved| approved.argv == argv)
    }

    /// Whether this command was approved for the session.
    pub fn command_approved_for_session(&self, command: &CommandApproval) -> bool {
        lock(&self.approved_commands).contains(command)
    }

    /// Remembers a command approved for the session.
    pub fn approve_command_for_session(&self, command: CommandApproval) {
        lock(&self.approved_commands).insert(command);
    }

    /// Whether every one of these files was approved for the session.
    pub fn files_approved_for_session<'a>(
        &self,
        mut files: impl Iterator<Item = &'a PathBuf>,
    ) -> bool {
        let approved = lock(&self.approved_files);
        files.all(|f| approved.contains(f))
    }

    /// Remembers files approved for the session.
    pub fn approve_files_for_session(&self, files: impl IntoIterator<Item = PathBuf>) {
        lock(&self.approved_files).extend(files);
    }
}

/// An approval being waited for.
#[derive(Debug)]
pub struct PendingApproval {
    rx: oneshot::Receiver<Reply>,
}

impl PendingApproval {
    /// Waits for the reply.
    ///
    /// Once `cancel` fires this never resolves: the turn's owner stops the turn and
    /// drops the wait, reporting an interruption. Answering `Abort` here instead would
    /// race that owner and could report the client's interrupt as the user's `abort`.
    pub async fn wait(self, cancel: &CancellationToken) -> Reply {
        tokio::select! {
            reply = self.rx => reply.unwrap_or_else(|_| {
                Reply::denied("the approval request was dropped before it was answered")
            }),
            () = cancel.cancelled() => std::future::pending().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use deputy_protocol::ApprovalDecision;

    use super::*;

    #[tokio::test]
    async fn answer_reaches_the_waiter() {
        let gate = ApprovalGate::new();
        let pending = gate.register("c1");
        let approved = Reply::decided(ApprovalDecision::Approved);
        assert!(gate.resolve("c1", approved.clone()));
        let reply = pending.wait(&CancellationToken::new()).await;
        assert_eq!(reply, approved);
        assert!(!gate.resolve("c1", approved));
    }

    #[tokio::test]
    async fn cancellation_leaves_the_ending_to_the_turn() {
        let gate = ApprovalGate::new();
        let cancel = CancellationToken::new();
        cancel.cancel();
        let wait = gate.register("c1").wait(&cancel);
        // Neither an abort nor any other answer is made up.
        let outcome = tokio::time::timeout(Duration::from_millis(200), wait).await;
        assert!(outcome.is_err(), "the wait answered {outcome:?}");
    }

    fn command(argv: &[&str], cwd: &str, sandbox_mode: SandboxMode) -> CommandApproval {
        CommandApproval {
            argv: argv.iter().map(|a| a.to_string()).collect(),
            cwd: PathBuf::from(cwd),
            sandbox_mode,
        }
    }

    #[test]
    fn session_approvals_match_argv_cwd_and_sandbox_mode_and_all_files() {
        let gate = ApprovalGate::new();
        let ws = SandboxMode::WorkspaceWrite;
        let argv = |words: &[&str]| words.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        assert!(!gate.argv_approved_for_session(&argv(&["touch", "a"])));
        gate.approve_command_for_session(command(&["touch", "a"], "/w", ws));
        assert!(gate.argv_approved_for_session(&argv(&["touch", "a"])));
        assert!(!gate.argv_approved_for_session(&argv(&["touch", "b"])));
        assert!(gate.command_approved_for_session(&command(&["touch", "a"], "/w", ws)));
        assert!(!gate.command_approved_for_session(&command(&["touch", "b"], "/w", ws)));
        assert!(!gate.command_approved_for_session(&command(&["touch", "a"], "/", ws)));
        assert!(!gate.command_approved_for_session(&command(
            &["touch", "a"],
            "/w",
            SandboxMode::ReadOnly
        )));
        gate.approve_files_for_session([PathBuf::from("/w/a")]);
        assert!(gate.files_approved_for_session([PathBuf::from("/w/a")].iter()));
        assert!(
            !gate.files_approved_for_session([PathBuf::from("/w/a"), PathBuf::from("/w/b")].iter())
        );
    }
}
