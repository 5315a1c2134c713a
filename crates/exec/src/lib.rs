//! `deputy exec`: run one task headless.
//!
//! Three ways to show a turn, one per [`OutputMode`]:
//! - the live view on stderr (model text, each command and its exit status, patches,
//!   plans, a spinner on a terminal) with the final answer alone on stdout;
//! - `--json`: the JSONL of `codex exec --json` on stdout ([`jsonl`]);
//! - `--json-events`: every engine event as the Codex `EventMsg` JSON that
//!   `codex/event` carries, one per line on stdout.
//!
//! A terminating signal interrupts the turn (its commands are killed), closes the
//! thread (its rollout is synced) and ends the run with `128 + signal`.
//!
//! Architecture invariant: no agent logic here — this crate turns events into text and
//! answers approval requests from the terminal.

mod approval_prompt;
pub mod jsonl;
mod live_view;
mod spinner;

use std::future::Future;
use std::io::{IsTerminal, Write};
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use anstream::ColorChoice;
use deputy_core::approval::Answer;
use deputy_core::config::Config;
use deputy_core::display::escape_text;
use deputy_core::driver::{
    ApprovalKind, ApprovalRequest, Approver, TurnObserver, TurnOutcome, TurnRequest, drive_turn,
};
use deputy_core::{Thread, ThreadManager};
use deputy_protocol::{InputItem, Op, ThreadEvent, legacy_events};
use tokio_util::sync::CancellationToken;

use crate::jsonl::JsonlMapper;
use crate::live_view::LiveView;
use crate::spinner::Spinner;

/// How long an interrupted turn gets to end (its commands killed) before the thread is
/// shut down regardless.
const INTERRUPT_GRACE: Duration = Duration::from_secs(5);

/// What `deputy exec` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputMode {
    /// The live view on stderr, the final answer on stdout.
    #[default]
    Human,
    /// `codex exec --json` JSONL on stdout.
    Json,
    /// Every event as a Codex `EventMsg` JSON line on stdout.
    JsonEvents,
}

/// What `deputy exec` was asked to do.
#[derive(Debug, Clone)]
pub struct ExecOptions {
    /// The task.
    pub prompt: String,
    /// What to print.
    pub output: OutputMode,
}

/// Checks that the model provider's API key is there before anything is created, and
/// says how to provide one (or do without) when it is not.
pub fn check_api_key(config: &Config) -> anyhow::Result<()> {
    let provider = &config.model_provider;
    if provider.api_key().is_ok() {
        return Ok(());
    }
    let var = provider.env_key.as_deref().unwrap_or_default();
    let config_path = config.deputy_home.join("config.toml");
    anyhow::bail!(
        "no API key: model provider `{id}` reads it from the environment variable {var}, which is not set (or empty).\n\
         Either set it:\n\
         \n    export {var}=...\n\n\
         or use a model server that needs no key, with a [model_providers] entry in {path}, \
         for example a local Ollama:\n\
         \n    model = \"qwen2.5-coder\"\
         \n    model_provider = \"ollama\"\
         \n\
         \n    [model_providers.ollama]\
         \n    name = \"Ollama\"\
         \n    base_url = \"http://localhost:11434/v1\"\
         \n    wire_api = \"chat\"",
        id = config.model_provider_id,
        path = config_path.display(),
    )
}

/// Runs one turn on a new thread and returns the process exit code: 0 when the turn
/// completed, 1 when it failed, 130 when it was stopped, `128 + n` when `stop` resolved
/// with signal `n` first. The API key is checked before the session is created.
pub async fn run_exec(
    manager: &ThreadManager,
    config: Config,
    options: ExecOptions,
    stop: impl Future<Output = i32>,
) -> anyhow::Result<i32> {
    check_api_key(&config)?;
    let thread = manager.start_thread(config)?;
    // From the start of the log: `session_configured` and any configuration warnings.
    run_turn_on(thread, Some(0), options, stop).await
}

/// Runs one turn on an existing thread (new or resumed) and returns the exit code
/// (see [`run_exec`]). The thread's events after `replay_after` that came before the
/// turn are shown too (a resumed thread's `session_configured`).
pub async fn run_turn_on(
    thread: Arc<Thread>,
    replay_after: Option<u64>,
    options: ExecOptions,
    stop: impl Future<Output = i32>,
) -> anyhow::Result<i32> {
    if let Err(err) = check_api_key(&thread.config()) {
        close(&thread).await;
        return Err(err);
    }
    let spinner = match options.output {
        OutputMode::Human => Spinner::for_stderr(),
        OutputMode::Json | OutputMode::JsonEvents => Spinner::default(),
    };
    let mut out = Output::new(options.output, spinner.clone());
    let cancel = CancellationToken::new();
    let request = TurnRequest {
        submission_id: "exec".to_string(),
        items: vec![InputItem::Text {
            text: options.prompt,
        }],
        replay_after,
    };
    let approver = Arc::new(TerminalApprover { spinner });
    let (driven, signal) = {
        let mut driven = pin!(drive_turn(&thread, request, approver, &mut out, &cancel));
        tokio::select! {
            driven = &mut driven => (Some(driven), None),
            signal = stop => {
                cancel.cancel();
                // The turn ends once its commands are killed; a thread that does not
                // answer is shut down all the same.
                let driven = tokio::time::timeout(INTERRUPT_GRACE, &mut driven).await.ok();
                (driven, Some(signal))
            }
        }
    };
    let outcome = match driven {
        Some(driven) => Some(driven?.outcome),
        None => None,
    };
    out.finish(outcome.as_ref());
    close(&thread).await;
    if let Some(signal) = signal {
        let _ = writeln!(
            std::io::stderr(),
            "deputy: stopped by {}",
            signal_name(signal)
        );
        return Ok(128 + signal);
    }
    Ok(match outcome {
        Some(TurnOutcome::Completed { .. }) => 0,
        Some(TurnOutcome::Aborted(_)) => 130,
        Some(TurnOutcome::Failed(_) | TurnOutcome::ThreadStopped) | None => 1,
    })
}

/// Shuts the thread down and waits until its rollout is closed.
async fn close(thread: &Thread) {
    let _ = thread.submit(Op::Shutdown);
    thread.closed().await;
}

fn signal_name(signal: i32) -> String {
    match signal {
        libc::SIGHUP => "SIGHUP".into(),
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        other => format!("signal {other}"),
    }
}

/// Asks approval questions on the terminal (or denies them without one), with the
/// spinner out of the way while a question is open.
struct TerminalApprover {
    spinner: Spinner,
}

impl Approver for TerminalApprover {
    fn ask(&self, request: ApprovalRequest) -> impl Future<Output = Answer> + Send + 'static {
        // The question owns its request: it outlives this call, not the approver.
        let kind = request.kind;
        let spinner = self.spinner.clone();
        async move {
            let _paused = spinner.pause();
            let (decision, reason) = match &kind {
                ApprovalKind::Exec(req) => approval_prompt::ask_exec(req).await,
                ApprovalKind::Patch(req) => approval_prompt::ask_patch(req).await,
            };
            Answer { decision, reason }
        }
    }
}

/// Where a turn's events go.
struct Output {
    mode: OutputMode,
    live: LiveView,
    jsonl: JsonlMapper,
    spinner: Spinner,
    /// Colour on stderr: on a terminal unless `NO_COLOR` (or `CLICOLOR=0`, `TERM=dumb`).
    color: ColorChoice,
    ticks: tokio::time::Interval,
}

impl TurnObserver for Output {
    async fn deliver(&mut self, event: &ThreadEvent) {
        match self.mode {
            OutputMode::Human => {
                let text = self.live.render(event);
                if !text.is_empty() {
                    let color = self.color;
                    self.spinner.suspend(|| {
                        // A closed stderr must not stop the run.
                        let mut stderr = anstream::AutoStream::new(std::io::stderr(), color);
                        let _ = stderr.write_all(text.as_bytes());
                        let _ = stderr.flush();
                    });
                }
            }
            OutputMode::Json => {
                for line in self.jsonl.map(event) {
                    print_json_line(&line);
                }
            }
            OutputMode::JsonEvents => {
                for legacy in legacy_events(event) {
                    print_json_line(&legacy.msg);
                }
            }
        }
    }

    async fn tick(&mut self) {
        // Only a spinner on a terminal needs waking up.
        if self.mode != OutputMode::Human || !self.spinner.is_enabled() {
            return std::future::pending().await;
        }
        self.ticks.tick().await;
        self.spinner.tick();
    }
}

impl Output {
    fn new(mode: OutputMode, spinner: Spinner) -> Self {
        let color = anstream::AutoStream::choice(&std::io::stderr());
        // The spinner's colours follow the same choice.
        console::set_colors_enabled_stderr(color != ColorChoice::Never);
        let mut ticks = tokio::time::interval(spinner::TICK);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        Self {
            mode,
            live: LiveView::new(spinner.clone()),
            jsonl: JsonlMapper::default(),
            spinner,
            color,
            ticks,
        }
    }

    /// After the turn: the spinner goes, the final answer goes to stdout — on a terminal
    /// with its control and bidirectional characters escaped (its lines and tabs kept), to
    /// a pipe or a file exactly as the model wrote it.
    fn finish(&mut self, outcome: Option<&TurnOutcome>) {
        self.spinner.clear();
        if self.mode != OutputMode::Human {
            return;
        }
        if let Some(TurnOutcome::Completed { last_agent_message }) = outcome {
            let answer = last_agent_message.as_deref().unwrap_or_default();
            let mut stdout = std::io::stdout().lock();
            let answer = if stdout.is_terminal() {
                escape_text(answer)
            } else {
                answer.into()
            };
            let _ = writeln!(stdout, "{answer}");
            let _ = stdout.flush();
        }
    }
}

fn print_json_line(value: &impl serde::Serialize) {
    if let Ok(line) = serde_json::to_string(value) {
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, "{line}");
        let _ = stdout.flush();
    }
}
