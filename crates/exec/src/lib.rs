//! `deputy exec`: run one task headless.
//!
//! The human view goes to stderr (model text, each command and its exit
//! status, patches, a final token count); the final message goes to stdout.
//! With `--json`, stdout instead carries every event as one JSON line.
//!
//! Architecture invariant: no agent logic here — this crate turns events into
//! text and answers approval requests from the terminal.

mod approval_prompt;
mod render;

use std::future::Future;
use std::io::Write;
use std::sync::Arc;

use deputy_core::approval::Answer;
use deputy_core::config::Config;
use deputy_core::driver::{
    ApprovalKind, ApprovalRequest, Approver, TurnObserver, TurnOutcome, TurnRequest, drive_turn,
};
use deputy_core::{Thread, ThreadManager};
use deputy_protocol::{Event, InputItem, Op, ThreadEvent, legacy_events};
use tokio_util::sync::CancellationToken;

pub use render::HumanRenderer;

/// What `deputy exec` was asked to do.
#[derive(Debug, Clone)]
pub struct ExecOptions {
    /// The task.
    pub prompt: String,
    /// Print events as JSON lines instead of the human view.
    pub json: bool,
}

/// Runs one turn on a new thread and returns the process exit code:
/// 0 when the turn completed, 1 when it ended in an error, 130 when interrupted.
pub async fn run_exec(
    manager: &ThreadManager,
    config: Config,
    options: ExecOptions,
) -> anyhow::Result<i32> {
    let thread = manager.start_thread(config)?;
    // From the start of the log: `session_configured` and any configuration warnings.
    run_turn_on(thread, Some(0), options).await
}

/// Runs one turn on an existing thread (new or resumed) and returns the exit code
/// (see [`run_exec`]). The thread's events after `replay_after` that came before the
/// turn are shown too (a resumed thread's `session_configured`).
pub async fn run_turn_on(
    thread: Arc<Thread>,
    replay_after: Option<u64>,
    options: ExecOptions,
) -> anyhow::Result<i32> {
    let mut out = Output::new(options.json);
    let cancel = CancellationToken::new();
    let interrupt = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        })
    };
    let request = TurnRequest {
        submission_id: "exec".to_string(),
        items: vec![InputItem::Text {
            text: options.prompt,
        }],
        replay_after,
    };
    let driven = drive_turn(
        &thread,
        request,
        Arc::new(TerminalApprover),
        &mut out,
        &cancel,
    )
    .await;
    interrupt.abort();
    let exit_code = match driven?.outcome {
        TurnOutcome::Completed { last_agent_message } => {
            out.final_message(last_agent_message.as_deref());
            0
        }
        TurnOutcome::Aborted(_) => 130,
        TurnOutcome::Failed(_) | TurnOutcome::ThreadStopped => 1,
    };
    let _ = thread.submit(Op::Shutdown);
    thread.closed().await;
    Ok(exit_code)
}

/// Asks approval questions on the terminal (or denies them without one).
struct TerminalApprover;

impl Approver for TerminalApprover {
    fn ask(&self, request: ApprovalRequest) -> impl Future<Output = Answer> + Send + 'static {
        // The question owns its request: it outlives this call, not the approver.
        let kind = request.kind;
        async move {
            let (decision, reason) = match &kind {
                ApprovalKind::Exec(req) => approval_prompt::ask_exec(req).await,
                ApprovalKind::Patch(req) => approval_prompt::ask_patch(req).await,
            };
            Answer { decision, reason }
        }
    }
}

/// Where events go: JSON lines on stdout, or the human view on stderr.
struct Output {
    json: bool,
    human: HumanRenderer,
}

impl TurnObserver for Output {
    async fn deliver(&mut self, event: &ThreadEvent) {
        for legacy in legacy_events(event) {
            self.event(&legacy);
        }
    }
}

impl Output {
    fn new(json: bool) -> Self {
        Self {
            json,
            human: HumanRenderer::default(),
        }
    }

    fn event(&mut self, event: &Event) {
        if self.json {
            let mut stdout = std::io::stdout().lock();
            if let Ok(line) = serde_json::to_string(&event.msg) {
                let _ = writeln!(stdout, "{line}");
                let _ = stdout.flush();
            }
        } else {
            let mut stderr = std::io::stderr().lock();
            self.human.render(&event.msg, &mut stderr);
        }
    }

    fn final_message(&self, message: Option<&str>) {
        if !self.json {
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout, "{}", message.unwrap_or_default());
            let _ = stdout.flush();
        }
    }
}
