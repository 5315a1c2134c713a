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
mod form;
pub mod jsonl;
mod live_view;
mod spinner;

use std::future::Future;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use anstream::ColorChoice;
use anyhow::Context as _;
use deputy_core::config::Config;
use deputy_core::display::escape_text;
use deputy_core::driver::{Approver, Asked, TurnObserver, TurnOutcome, TurnRequest, drive_turn};
use deputy_core::{Thread, ThreadManager, TurnInput};
use deputy_protocol::{
    AskForApproval, InputItem, Op, Question, Reply, SandboxMode, ThreadEvent, ThreadEventMsg,
    TurnOverrides, codex_events,
};
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
#[derive(Debug, Clone, Default)]
pub struct ExecOptions {
    /// The task.
    pub prompt: String,
    /// Image files sent with the task (`--image`).
    pub images: Vec<PathBuf>,
    /// The JSON Schema the final answer must follow (`--output-schema`).
    pub output_schema: Option<serde_json::Value>,
    /// Where the final answer is also written (`--output-last-message`).
    pub last_message_file: Option<PathBuf>,
    /// What to print.
    pub output: OutputMode,
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
    config.check_api_key()?;
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
    if let Err(err) = thread.config().check_api_key() {
        close(&thread).await;
        return Err(err.into());
    }
    let spinner = match options.output {
        OutputMode::Human => Spinner::for_stderr(),
        OutputMode::Json | OutputMode::JsonEvents => Spinner::default(),
    };
    let mut out = Output::new(options.output, spinner.clone());
    let cancel = CancellationToken::new();
    // Images first, then the words about them, as Codex sends them.
    let mut items: Vec<InputItem> = options
        .images
        .into_iter()
        .map(|path| InputItem::LocalImage { path })
        .collect();
    items.push(InputItem::Text {
        text: options.prompt,
    });
    let request = TurnRequest {
        submission_id: "exec".to_string(),
        input: TurnInput {
            items,
            overrides: unattended_overrides(&thread.config()),
            output_schema: options.output_schema,
        },
        replay_after,
    };
    let approver = Arc::new(TerminalApprover {
        spinner,
        cwd: thread.config().cwd.clone(),
    });
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
    let written = match (&options.last_message_file, &outcome) {
        (Some(path), Some(TurnOutcome::Completed { last_agent_message })) => {
            write_last_message(path, last_agent_message.as_deref().unwrap_or_default())
        }
        _ => Ok(()),
    };
    close(&thread).await;
    if let Some(signal) = signal {
        let _ = writeln!(
            std::io::stderr(),
            "deputy: stopped by {}; continue with `deputy exec resume {} PROMPT`",
            signal_name(signal),
            thread.id()
        );
        return Ok(128 + signal);
    }
    written?;
    Ok(match outcome {
        Some(TurnOutcome::Completed { .. }) => 0,
        Some(TurnOutcome::Aborted(_)) => 130,
        Some(TurnOutcome::Failed(_) | TurnOutcome::ThreadStopped) | None => 1,
    })
}

/// With nobody at a terminal to answer, approval questions would all be refused. As
/// Codex does, such a run uses approval policy `never` instead: commands stay in the
/// sandbox and what would need approval is refused up front. Without a sandbox
/// (`danger-full-access`) the questions stay, and are refused.
fn unattended_overrides(config: &Config) -> Option<TurnOverrides> {
    if approval_prompt::can_ask()
        || config.approval_policy == AskForApproval::Never
        || config.sandbox_mode == SandboxMode::DangerFullAccess
    {
        return None;
    }
    let _ = writeln!(
        std::io::stderr(),
        "deputy: no terminal to ask for approval on: running with approval policy `never` \
         (commands stay in the {} sandbox; what needs approval is refused)",
        config.sandbox_mode.as_str()
    );
    Some(TurnOverrides {
        approval_policy: Some(AskForApproval::Never),
        ..TurnOverrides::default()
    })
}

/// Writes the final answer to `path` (`--output-last-message`).
fn write_last_message(path: &Path, message: &str) -> anyhow::Result<()> {
    std::fs::write(path, message)
        .with_context(|| format!("writing the last message to {}", path.display()))
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
    /// The session's working directory: paths under it are shown relative to it.
    cwd: PathBuf,
}

impl Approver for TerminalApprover {
    type Kept = ();

    async fn put(&self, _asked: &Asked) {}

    fn ask(&self, asked: Asked, _kept: &mut ()) -> impl Future<Output = Reply> + Send + 'static {
        // The question owns what it asks: it outlives this call, not the approver.
        let question = asked.question;
        let spinner = self.spinner.clone();
        let cwd = self.cwd.clone();
        async move {
            let _paused = spinner.pause();
            match &question {
                Question::Exec(req) => approval_prompt::ask_exec(req).await,
                Question::Patch(req) => approval_prompt::ask_patch(req, Some(&cwd)).await,
                Question::McpToolCall(req) => approval_prompt::ask_mcp_tool_call(req).await,
                Question::McpElicitation(req) => approval_prompt::ask_form(req).await,
                Question::UserInput(req) => approval_prompt::ask_user_input(req).await,
            }
        }
    }

    // A question no longer wanted is dropped with its prompt.
    async fn settled(&self, _kept: ()) {}
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
                // The configuration's warnings are the user's to read, not error items a
                // client reading the stream takes for failures.
                if let ThreadEventMsg::Warning(warning) = &event.msg
                    && event.turn_id.is_none()
                {
                    let _ = writeln!(std::io::stderr(), "deputy: warning: {}", warning.message);
                }
                for line in self.jsonl.map(event) {
                    print_json_line(&line);
                }
            }
            OutputMode::JsonEvents => {
                for codex in codex_events(event) {
                    print_json_line(&codex.msg);
                }
            }
        }
    }

    async fn wake(&mut self) {
        // Only a spinner on a terminal needs waking up.
        if self.mode != OutputMode::Human || !self.spinner.is_enabled() {
            return std::future::pending().await;
        }
        self.ticks.tick().await;
    }

    async fn tick(&mut self) {
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
