//! The command tools: decide (run, ask, refuse), confine, run, report.

use std::path::PathBuf;
use std::time::Duration;

use deputy_protocol::{
    ApprovalDecision, CommandExecutionItem, CommandExecutionStatus, CommandOutputDeltaEvent,
    ExecApprovalRequestEvent, Question, ThreadEventMsg, ThreadItem,
};

use crate::approval::CommandApproval;
use crate::command_safety::{known_safety, parse_command};
use crate::context::{TurnContext, TurnStop, new_item_id};
use crate::exec::{ExecError, format_exec_output, run_command};
use crate::safety::{ExecAssessment, ExecRequestFacts, assess_exec, offer_unsandboxed_retry};
use crate::sandboxing;

/// A command the model asked for.
pub(super) struct ShellRequest<'a> {
    pub(super) call_id: &'a str,
    pub(super) argv: Vec<String>,
    pub(super) cwd: PathBuf,
    pub(super) timeout: Duration,
    /// `Some(justification)` when the model asked to leave the sandbox.
    pub(super) escalation: Option<String>,
    /// Why the model says it needs the command, when it said (shown whenever the user is asked).
    pub(super) justification: Option<String>,
}

/// Whether a command may run, once its policies (and the user, when they ask) have spoken.
pub(super) enum Permit {
    /// Run it, in the sandbox or not; the item is still open.
    Run {
        /// The command's item, asked for and not yet started.
        item: Box<CommandItem>,
        /// Whether the sandbox confines it.
        sandboxed: bool,
    },
    /// Not run: the item was completed as declined; this is the model's text.
    Refused(String),
}

/// Decides whether `req` runs (asking the user when the policy says so), opening its item.
pub(super) async fn permit(ctx: &TurnContext, req: &ShellRequest<'_>) -> Result<Permit, TurnStop> {
    let config = &ctx.config;
    let sandbox = sandboxing::availability(config).await;
    let item = CommandItem::new(ctx, req);
    let approvals = &ctx.session.approvals;
    // The directory is resolved (off the runtime) only when this argv was approved somewhere.
    let approved_for_session = approvals.argv_approved_for_session(&req.argv)
        && approvals.command_approved_for_session(&session_approval(config, req).await);
    let assessment = assess_exec(ExecRequestFacts {
        policy: config.approval_policy,
        mode: config.sandbox_mode,
        known_safe: known_safety(&req.argv),
        escalation: req.escalation.as_deref(),
        approved_for_session,
        sandbox_available: sandbox.as_ref().map(|_| ()).map_err(String::as_str),
    });
    match assessment {
        ExecAssessment::Reject(reason) => {
            item.declined(ctx, &reason);
            Ok(Permit::Refused(reason))
        }
        ExecAssessment::Run { sandboxed } => Ok(Permit::Run {
            item: Box::new(item),
            sandboxed,
        }),
        ExecAssessment::Ask { reason } => {
            if let Some(refusal) = ask(ctx, req, &item, reason).await? {
                item.declined(ctx, &refusal);
                return Ok(Permit::Refused(refusal));
            }
            Ok(Permit::Run {
                item: Box::new(item),
                sandboxed: false,
            })
        }
    }
}

/// Runs a command under the session's policies and returns the model's text.
pub(super) async fn run(ctx: &TurnContext, req: ShellRequest<'_>) -> Result<String, TurnStop> {
    let config = &ctx.config;
    let (item, sandboxed) = match permit(ctx, &req).await? {
        Permit::Run { item, sandboxed } => (*item, sandboxed),
        Permit::Refused(text) => return Ok(text),
    };
    let outcome = execute(ctx, &req, item, sandboxed).await;
    let Some(failure) = outcome.sandbox_failure.filter(|_| sandboxed) else {
        return Ok(outcome.text);
    };
    let with_note = format!(
        "{}\n\nNote: this failure looks like a sandbox denial ({failure}); the command ran under sandbox_mode `{}`.",
        outcome.text.trim_end(),
        config.sandbox_mode.as_str()
    );
    if !offer_unsandboxed_retry(config.approval_policy, true) {
        return Ok(with_note);
    }
    // The re-run is a new command item: the first one has completed (failed).
    let item = CommandItem::new(ctx, &req);
    let reason =
        format!("the command failed in the sandbox ({failure}); run it again without the sandbox?");
    if let Some(refusal) = ask(ctx, &req, &item, Some(reason)).await? {
        item.declined(ctx, &refusal);
        return Ok(format!("{with_note}\n{refusal}"));
    }
    Ok(execute(ctx, &req, item, false).await.text)
}

/// The command's item, started when the model asks and completed when it is settled.
pub(super) struct CommandItem(pub(super) CommandExecutionItem);

impl CommandItem {
    fn new(ctx: &TurnContext, req: &ShellRequest<'_>) -> Self {
        let item = CommandExecutionItem::asked(
            new_item_id(),
            req.call_id.to_string(),
            req.argv.clone(),
            req.cwd.clone(),
            parse_command(&req.argv),
        );
        ctx.item_started(ThreadItem::CommandExecution(Box::new(item.clone())));
        Self(item)
    }

    /// Completes the item as not run, with what the model is told.
    fn declined(mut self, ctx: &TurnContext, told: &str) {
        self.0.status = CommandExecutionStatus::Declined;
        self.0.formatted_output = told.to_string();
        ctx.item_completed(ThreadItem::CommandExecution(Box::new(self.0)));
    }
}

/// Asks the user. `Ok(None)` = approved; `Ok(Some(text))` = refused, `text` for the model.
async fn ask(
    ctx: &TurnContext,
    req: &ShellRequest<'_>,
    item: &CommandItem,
    reason: Option<String>,
) -> Result<Option<String>, TurnStop> {
    // The model's own words reach the user whenever it gave them, beside deputy's reason.
    let reason = match (reason, &req.justification) {
        (Some(reason), Some(justification)) if reason != *justification => {
            Some(format!("{justification} ({reason})"))
        }
        (reason, justification) => reason.or_else(|| justification.clone()),
    };
    let question = Question::Exec(ExecApprovalRequestEvent {
        call_id: req.call_id.to_string(),
        turn_id: ctx.turn_id.clone(),
        command: req.argv.clone(),
        cwd: req.cwd.clone(),
        reason,
        parsed_cmd: item.0.parsed_cmd.clone(),
    });
    let (decision, reason) = ctx.ask(&item.0.id, question).await.into_decision();
    match decision {
        ApprovalDecision::Approved => Ok(None),
        ApprovalDecision::ApprovedForSession => {
            ctx.session
                .approvals
                .approve_command_for_session(session_approval(&ctx.config, req).await);
            Ok(None)
        }
        ApprovalDecision::Abort => {
            // Not run, by the user's choice: declined, like a plain "no", before the turn ends.
            CommandItem(item.0.clone()).declined(
                ctx,
                "aborted: the user stopped the turn instead of running this command",
            );
            Err(TurnStop::Aborted)
        }
        ApprovalDecision::Denied | ApprovalDecision::TimedOut => Ok(Some(match reason {
            Some(reason) => format!("The command was not run: approval was denied ({reason})."),
            None => "The user declined to run this command. Do not retry it; continue without it or ask the user.".to_string(),
        })),
    }
}

/// What an `approved_for_session` answer to this request covers.
async fn session_approval(
    config: &crate::config::Config,
    req: &ShellRequest<'_>,
) -> CommandApproval {
    CommandApproval {
        argv: req.argv.clone(),
        // The same directory reached through another spelling (`sub/..`, a symlink) is the same place.
        cwd: tokio::fs::canonicalize(&req.cwd)
            .await
            .unwrap_or_else(|_| req.cwd.clone()),
        sandbox_mode: config.sandbox_mode,
    }
}

struct Outcome {
    text: String,
    /// Why the failure looks like the sandbox's doing, if it does.
    sandbox_failure: Option<String>,
}

/// Runs the command, reporting its item as started, its output, and its end.
async fn execute(
    ctx: &TurnContext,
    req: &ShellRequest<'_>,
    item: CommandItem,
    sandboxed: bool,
) -> Outcome {
    let config = &ctx.config;
    let mut item = item.0;
    item.started = true;
    ctx.item_updated(ThreadItem::CommandExecution(Box::new(item.clone())));
    let result = match sandboxing::exec_request(config, sandboxed, &req.cwd, &req.argv, req.timeout)
    {
        Ok(exec_req) => {
            let (item_id, call_id) = (item.id.clone(), item.call_id.clone());
            run_command(&exec_req, &ctx.cancel, |stream, chunk| {
                ctx.emit(ThreadEventMsg::CommandOutputDelta(
                    CommandOutputDeltaEvent {
                        item_id: item_id.clone(),
                        call_id: call_id.clone(),
                        stream,
                        chunk: chunk.to_vec(),
                    },
                ));
            })
            .await
        }
        Err(why) => Err(ExecError::SandboxUnavailable(why)),
    };
    let sandbox_failure = match result {
        Ok(output) => {
            let text = format_exec_output(&output, config.tool_output_token_limit);
            let aggregated = output.aggregated.to_text();
            let sandbox_failure = (sandboxed
                && deputy_sandbox::looks_like_sandbox_denial(output.exit_code, &aggregated))
            .then(|| sandboxing::denial_summary(output.exit_code, &aggregated));
            item.status = if output.exit_code == 0 {
                CommandExecutionStatus::Completed
            } else {
                CommandExecutionStatus::Failed
            };
            item.exit_code = Some(output.exit_code);
            item.stdout = output.stdout.to_text();
            item.stderr = output.stderr.to_text();
            item.aggregated_output = aggregated;
            item.duration = Some(output.duration);
            item.formatted_output = text;
            sandbox_failure
        }
        Err(err) => {
            item.formatted_output = match &err {
                ExecError::Cancelled => "aborted: the command was interrupted".to_string(),
                other => format!("Exit code: -1\nWall time: 0.0 seconds\nOutput:\n{other}"),
            };
            item.status = CommandExecutionStatus::Failed;
            item.exit_code = Some(-1);
            item.stderr = err.to_string();
            item.aggregated_output = err.to_string();
            item.duration = Some(Duration::ZERO);
            None
        }
    };
    let text = item.formatted_output.clone();
    ctx.item_completed(ThreadItem::CommandExecution(Box::new(item)));
    Outcome {
        text,
        sandbox_failure,
    }
}
