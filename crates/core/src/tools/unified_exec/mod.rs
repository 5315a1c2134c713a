//! Unified exec: `exec_command` starts a command that may outlive the call (on a
//! pseudo-terminal when the model asks for `tty`) and returns what it printed within
//! `yield_time_ms`, with a session id while it still runs; `write_stdin` writes to a
//! session (or just polls it) and returns what it printed since, and its exit code once
//! it ended.
//!
//! A session is a command like any other: the same approval decision, sandbox, launcher,
//! `workdir` rule and environment as `shell` (the decision is `shell::permit`, the start
//! is `crate::exec::start`). What differs is only its lifetime: it belongs to the thread
//! ([`store::Sessions`] in the thread's tool state), at most 16 at a time, all stopped
//! when a turn is interrupted, when the thread closes, and — through the launcher's
//! parent-death signal — when deputy dies.

mod process;
mod store;

use std::sync::Arc;
use std::time::{Duration, Instant};

use deputy_protocol::{
    CommandExecutionStatus, CommandOutputDeltaEvent, ExecOutputStream, ThreadEventMsg, ThreadItem,
};
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::json;

use super::patch;
use super::registry::{ToolCall, ToolHandler, ToolOutput};
use super::shell::{self, Permit, ShellRequest};
use super::spec::SandboxPermissions;
use crate::client::ToolSpec;
use crate::context::{Session, TurnContext, TurnStop};
use crate::exec::truncate_middle;
use crate::sandboxing;
use process::{Process, Read};
pub(crate) use store::Sessions;

use super::names;

/// How long `exec_command` waits for output when the model does not say.
const EXEC_YIELD_DEFAULT: Duration = Duration::from_secs(10);
/// How long `write_stdin` waits for output when the model does not say.
const WRITE_YIELD_DEFAULT: Duration = Duration::from_millis(250);
/// The shortest and longest wait a call may ask for.
const YIELD_MIN: Duration = Duration::from_millis(50);
const YIELD_MAX: Duration = Duration::from_secs(30);
/// Bytes per token assumed for `max_output_tokens`.
const BYTES_PER_TOKEN: usize = 4;

/// Stops every unified-exec session of the thread (on interrupt and on shutdown).
pub(crate) fn stop_sessions(session: &Session) {
    session.tool_state.get::<Sessions>().stop_all();
}

/// Arguments of `exec_command`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExecCommandArgs {
    cmd: String,
    #[serde(default)]
    workdir: Option<String>,
    #[serde(default)]
    shell: Option<String>,
    #[serde(default)]
    login: Option<bool>,
    #[serde(default)]
    tty: Option<bool>,
    #[serde(default)]
    yield_time_ms: Option<f64>,
    #[serde(default)]
    max_output_tokens: Option<f64>,
    #[serde(default)]
    sandbox_permissions: Option<SandboxPermissions>,
    #[serde(default)]
    justification: Option<String>,
    /// Accepted for compatibility; deputy has no command-prefix rules.
    #[serde(default)]
    #[allow(dead_code, reason = "accepted as Codex's models send it; unused")]
    prefix_rule: Option<Vec<String>>,
}

/// Arguments of `write_stdin`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteStdinArgs {
    session_id: f64,
    #[serde(default)]
    chars: Option<String>,
    #[serde(default)]
    yield_time_ms: Option<f64>,
    #[serde(default)]
    max_output_tokens: Option<f64>,
}

const EXEC_COMMAND_DESCRIPTION: &str = "Runs a command in a shell (`bash -lc` unless `shell` or `login` say otherwise) and returns its output after at most `yield_time_ms` (default 10000). \
If the command is still running then, the result carries a `session_id`: call `write_stdin` with it to send input, or with empty `chars` to wait for more output. \
Set `tty: true` for programs that need a terminal (interactive interpreters, pagers, prompts). Always set `workdir` instead of using `cd`. \
Commands run under the same sandbox and approval rules as every command; set `sandbox_permissions` to \"require_escalated\" with a one-sentence `justification` to ask to run outside it.";
const WRITE_STDIN_DESCRIPTION: &str = "Writes `chars` to the input of a command started by `exec_command` (empty `chars` only waits) and returns the output it printed since the last call, after at most `yield_time_ms` (default 250), with its exit code once it has ended.";

/// The `exec_command` handler.
pub(crate) struct ExecCommand;

/// The `write_stdin` handler.
pub(crate) struct WriteStdin;

impl ToolHandler for ExecCommand {
    fn spec(&self) -> ToolSpec {
        ToolSpec::function(
            names::EXEC_COMMAND,
            EXEC_COMMAND_DESCRIPTION,
            json!({
                "type": "object",
                "properties": {
                    "cmd": {"type": "string", "description": "The shell command to run."},
                    "justification": {"type": "string", "description": "Only with sandbox_permissions \"require_escalated\": why the command must run outside the sandbox."},
                    "login": {"type": "boolean", "description": "Run the shell as a login shell (-l); default true."},
                    "max_output_tokens": {"type": "number", "description": "Cut the returned output to about this many tokens."},
                    "prefix_rule": {"type": "array", "items": {"type": "string"}, "description": "Accepted and ignored."},
                    "sandbox_permissions": {"type": "string", "description": "\"use_default\" (default) or \"require_escalated\"."},
                    "shell": {"type": "string", "description": "The shell to run `cmd` with; default bash."},
                    "tty": {"type": "boolean", "description": "Run on a pseudo-terminal; default false."},
                    "workdir": {"type": "string", "description": "The working directory, relative to the session's."},
                    "yield_time_ms": {"type": "number", "description": "How long to wait for output before returning."}
                },
                "required": ["cmd"],
                "additionalProperties": false
            }),
        )
    }

    fn handle<'a>(
        &'a self,
        ctx: &'a TurnContext,
        call: ToolCall,
    ) -> BoxFuture<'a, Result<ToolOutput, TurnStop>> {
        Box::pin(async move {
            match call.arguments::<ExecCommandArgs>() {
                Ok(args) => exec_command(ctx, &call.call_id, args)
                    .await
                    .map(ToolOutput::from),
                Err(message) => Ok(message.into()),
            }
        })
    }
}

impl ToolHandler for WriteStdin {
    fn spec(&self) -> ToolSpec {
        ToolSpec::function(
            names::WRITE_STDIN,
            WRITE_STDIN_DESCRIPTION,
            json!({
                "type": "object",
                "properties": {
                    "chars": {"type": "string", "description": "Bytes to write to the command's input; empty to only wait for output."},
                    "max_output_tokens": {"type": "number", "description": "Cut the returned output to about this many tokens."},
                    "session_id": {"type": "number", "description": "The session_id `exec_command` returned."},
                    "yield_time_ms": {"type": "number", "description": "How long to wait for output before returning."}
                },
                "required": ["session_id"],
                "additionalProperties": false
            }),
        )
    }

    fn handle<'a>(
        &'a self,
        ctx: &'a TurnContext,
        call: ToolCall,
    ) -> BoxFuture<'a, Result<ToolOutput, TurnStop>> {
        Box::pin(async move {
            Ok(match call.arguments::<WriteStdinArgs>() {
                Ok(args) => write_stdin(ctx, args).await.into(),
                Err(message) => message.into(),
            })
        })
    }
}

async fn exec_command(
    ctx: &TurnContext,
    call_id: &str,
    args: ExecCommandArgs,
) -> Result<String, TurnStop> {
    let cwd = match args.workdir.as_deref().filter(|w| !w.is_empty()) {
        Some(dir) => ctx.config.cwd.join(dir),
        None => ctx.config.cwd.clone(),
    };
    let shell = args
        .shell
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| "bash".to_string());
    let flag = if args.login.unwrap_or(true) {
        "-lc"
    } else {
        "-c"
    };
    let argv = vec![shell, flag.to_string(), args.cmd];
    // A patch sent as a command is applied as a patch, as through `shell`.
    if let Some(extracted) = deputy_apply_patch::extract_patch_from_argv(&argv) {
        let cwd = extracted.workdir.map_or(cwd.clone(), |dir| cwd.join(dir));
        return patch::apply(ctx, call_id, &extracted.patch, cwd).await;
    }
    let justification = args.justification.filter(|j| !j.trim().is_empty());
    let escalation = (args.sandbox_permissions == Some(SandboxPermissions::RequireEscalated))
        .then(|| justification.clone().unwrap_or_default());
    let req = ShellRequest {
        call_id,
        argv,
        cwd,
        timeout: YIELD_MAX,
        escalation,
        justification,
    };
    let (item, sandboxed) = match shell::permit(ctx, &req).await? {
        Permit::Run { item, sandboxed } => (item, sandboxed),
        Permit::Refused(text) => return Ok(text),
    };
    let mut item = item.0;
    item.started = true;
    let config = &ctx.config;
    // The timeout is not applied: a session runs until it ends or is stopped (see the module doc).
    let exec_req = sandboxing::exec_request(config, sandboxed, &req.cwd, &req.argv, YIELD_MAX);
    let began = Instant::now();
    let process = match exec_req
        .map_err(crate::exec::ExecError::SandboxUnavailable)
        .and_then(|exec_req| Process::spawn(&exec_req, args.tty.unwrap_or(false)))
    {
        Ok(process) => Arc::new(process),
        Err(err) => {
            let text = format!("Process could not start: {err}");
            item.status = CommandExecutionStatus::Failed;
            item.exit_code = Some(-1);
            item.stderr = err.to_string();
            item.aggregated_output = err.to_string();
            item.duration = Some(Duration::ZERO);
            item.formatted_output = text.clone();
            ctx.item_updated(ThreadItem::CommandExecution(Box::new(item.clone())));
            ctx.item_completed(ThreadItem::CommandExecution(Box::new(item)));
            return Ok(text);
        }
    };
    let sessions = ctx.session.tool_state.get::<Sessions>();
    let (session_id, closed) = sessions.insert(process.clone());
    item.process_id = Some(session_id.to_string());
    ctx.item_updated(ThreadItem::CommandExecution(Box::new(item.clone())));
    let (item_id, delta_call_id) = (item.id.clone(), item.call_id.clone());
    let yield_time = wait_time(args.yield_time_ms, EXEC_YIELD_DEFAULT);
    let read = process
        .read(yield_time, &ctx.cancel, |chunk| {
            ctx.emit(ThreadEventMsg::CommandOutputDelta(
                CommandOutputDeltaEvent {
                    item_id: item_id.clone(),
                    call_id: delta_call_id.clone(),
                    stream: ExecOutputStream::Stdout,
                    chunk: chunk.to_vec(),
                },
            ));
        })
        .await;
    if ctx.cancel.is_cancelled() && read.exit_code.is_none() {
        sessions.remove(session_id);
        process.terminate().await;
        return Ok("aborted: the command was interrupted".to_string());
    }
    let mut notes = Vec::new();
    if let Some(closed) = closed {
        notes.push(format!(
            "Session {closed} (the oldest idle one) was closed: at most {} sessions may run at once.",
            store::MAX_SESSIONS
        ));
    }
    let limit = output_limit(args.max_output_tokens, config.tool_output_token_limit);
    let text = report(began, session_id, &read, limit, &notes);
    item.aggregated_output = read.text.clone();
    item.stdout = read.text.clone();
    item.duration = Some(began.elapsed());
    item.formatted_output = text.clone();
    match read.exit_code {
        Some(code) => {
            sessions.remove(session_id);
            item.exit_code = Some(code);
            item.status = if code == 0 {
                CommandExecutionStatus::Completed
            } else {
                CommandExecutionStatus::Failed
            };
        }
        // Still running: this call's part is done; later output reaches the model
        // through `write_stdin`.
        None => item.status = CommandExecutionStatus::Completed,
    }
    ctx.item_completed(ThreadItem::CommandExecution(Box::new(item)));
    Ok(text)
}

async fn write_stdin(ctx: &TurnContext, args: WriteStdinArgs) -> String {
    let sessions = ctx.session.tool_state.get::<Sessions>();
    let Some(session_id) = session_id(args.session_id) else {
        return format!(
            "Unknown session_id {}: not a session number.",
            args.session_id
        );
    };
    let Some(process) = sessions.get(session_id) else {
        return format!(
            "Unknown session_id {session_id}: no such session is running (it ended and its exit was reported, it was closed, or it never existed)."
        );
    };
    let began = Instant::now();
    let mut notes = Vec::new();
    let chars = args.chars.unwrap_or_default();
    if !chars.is_empty() && process.write(&chars).await.is_err() {
        notes.push("The input could not be written: the process no longer reads it.".to_string());
    }
    let yield_time = wait_time(args.yield_time_ms, WRITE_YIELD_DEFAULT);
    let read = process.read(yield_time, &ctx.cancel, |_| {}).await;
    if read.exit_code.is_some() {
        sessions.remove(session_id);
    }
    let limit = output_limit(args.max_output_tokens, ctx.config.tool_output_token_limit);
    report(began, session_id, &read, limit, &notes)
}

/// The model's text for one read of a session.
fn report(began: Instant, session_id: u64, read: &Read, limit: usize, notes: &[String]) -> String {
    let mut text = format!("Wall time: {:.1} seconds\n", began.elapsed().as_secs_f64());
    match read.exit_code {
        Some(code) => text.push_str(&format!("Process exited with code {code}\n")),
        None => text.push_str(&format!("Process running with session ID {session_id}\n")),
    }
    for note in notes {
        text.push_str(note);
        text.push('\n');
    }
    if read.dropped > 0 {
        text.push_str(&format!(
            "{} bytes of output were dropped: more arrived between two reads than is kept.\n",
            read.dropped
        ));
    }
    let (body, _) = truncate_middle(&read.text, limit.saturating_mul(BYTES_PER_TOKEN));
    text.push_str("Output:\n");
    text.push_str(&body);
    text
}

/// The wait a call asked for, within bounds; the default when it gave none (or nonsense).
fn wait_time(asked: Option<f64>, default: Duration) -> Duration {
    asked
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
        .map_or(default, |ms| Duration::from_millis(ms as u64))
        .clamp(YIELD_MIN, YIELD_MAX)
}

/// The output budget in tokens: what the call asked for, never above the configured limit.
fn output_limit(asked: Option<f64>, configured: usize) -> usize {
    asked
        .filter(|t| t.is_finite() && *t >= 1.0)
        .map_or(configured, |t| (t as usize).min(configured))
}

/// A session number as the model wrote it (JSON numbers may be floats).
fn session_id(raw: f64) -> Option<u64> {
    (raw.is_finite() && raw >= 0.0 && raw.fract() == 0.0 && raw <= u64::MAX as f64)
        .then_some(raw as u64)
}
