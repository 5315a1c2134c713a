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

use std::io::Write;
use std::sync::Arc;

use deputy_core::config::Config;
use deputy_core::{Thread, ThreadManager};
use deputy_protocol::{Event, EventMsg, Op, SessionConfiguredEvent};

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
    let warnings = config.warnings.clone();
    let (thread, configured) = manager.start_thread(config)?;
    run_turn_on(thread, configured, warnings, options).await
}

/// Runs one turn on an existing thread (new or resumed); see [`run_exec`].
pub async fn run_turn_on(
    thread: Arc<Thread>,
    configured: SessionConfiguredEvent,
    warnings: Vec<String>,
    options: ExecOptions,
) -> anyhow::Result<i32> {
    let mut out = Output::new(options.json);
    out.event(&Event {
        id: String::new(),
        msg: EventMsg::SessionConfigured(configured),
    });
    for message in warnings {
        out.event(&Event {
            id: String::new(),
            msg: EventMsg::Warning(deputy_protocol::WarningEvent { message }),
        });
    }
    let mut events = thread.start_turn("1".to_string(), options.prompt)?;
    let interrupt = {
        let thread = thread.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                let _ = thread.submit(Op::Interrupt);
            }
        })
    };
    let mut exit_code = 1;
    // Questions run beside the event loop, so an approval that expires or a
    // turn that ends (Ctrl-C) is never stuck behind an unanswered prompt.
    let mut question: Option<tokio::task::JoinHandle<()>> = None;
    while let Some(event) = events.next().await {
        out.event(&event);
        match &event.msg {
            EventMsg::ExecApprovalRequest(req) => {
                let (thread, req) = (thread.clone(), req.clone());
                replace_question(&mut question, async move {
                    let (decision, reason) = approval_prompt::ask_exec(&req).await;
                    let id = req.call_id;
                    let _ = thread.submit(Op::ExecApproval {
                        id,
                        decision,
                        reason,
                    });
                });
            }
            EventMsg::ApplyPatchApprovalRequest(req) => {
                let (thread, req) = (thread.clone(), req.clone());
                replace_question(&mut question, async move {
                    let (decision, reason) = approval_prompt::ask_patch(&req).await;
                    let id = req.call_id;
                    let _ = thread.submit(Op::PatchApproval {
                        id,
                        decision,
                        reason,
                    });
                });
            }
            EventMsg::TaskComplete(done) => {
                exit_code = 0;
                out.final_message(done.last_agent_message.as_deref());
            }
            EventMsg::TurnAborted(_) => exit_code = 130,
            _ => {}
        }
    }
    interrupt.abort();
    if let Some(question) = question {
        question.abort();
    }
    let _ = thread.submit(Op::Shutdown);
    thread.closed().await;
    Ok(exit_code)
}

/// Starts asking a new question; one still open belongs to a request the
/// engine no longer waits for (it asks one at a time), so it is dropped.
fn replace_question(
    slot: &mut Option<tokio::task::JoinHandle<()>>,
    ask: impl std::future::Future<Output = ()> + Send + 'static,
) {
    if let Some(stale) = slot.replace(tokio::spawn(ask)) {
        stale.abort();
    }
}

/// Where events go: JSON lines on stdout, or the human view on stderr.
struct Output {
    json: bool,
    human: HumanRenderer,
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
