//! The command tools: decide (run, ask, refuse), confine, run, report.

use std::path::PathBuf;
use std::time::Duration;

use deputy_protocol::{
    EventMsg, ExecApprovalRequestEvent, ExecCommandBeginEvent, ExecCommandEndEvent,
    ExecCommandOutputDeltaEvent, ReviewDecision, WarningEvent,
};

use crate::command_safety::{is_known_safe_command, parse_command};
use crate::exec::{ExecError, ExecRequest, format_exec_output, run_command};
use crate::safety::{ExecAssessment, ExecRequestFacts, assess_exec, offer_unsandboxed_retry};
use crate::sandboxing;
use crate::turn::{TurnContext, TurnStop};

/// A command the model asked for.
pub(super) struct ShellRequest<'a> {
    pub(super) call_id: &'a str,
    pub(super) argv: Vec<String>,
    pub(super) cwd: PathBuf,
    pub(super) timeout: Duration,
    /// `Some(justification)` when the model asked to leave the sandbox.
    pub(super) escalation: Option<String>,
}

/// Runs a command under the session's policies and returns the model's text.
pub(super) async fn run(ctx: &TurnContext, req: ShellRequest<'_>) -> Result<String, TurnStop> {
    let config = &ctx.session.config;
    let sandbox = sandboxing::availability(config);
    let assessment = assess_exec(ExecRequestFacts {
        policy: config.approval_policy,
        mode: config.sandbox_mode,
        known_safe: is_known_safe_command(&req.argv),
        escalation: req.escalation.as_deref(),
        approved_for_session: ctx
            .session
            .approvals
            .command_approved_for_session(&req.argv),
        sandbox_available: sandbox.as_ref().map(|_| ()).map_err(String::as_str),
    });
    let sandboxed = match assessment {
        ExecAssessment::Reject(reason) => return Ok(reason),
        ExecAssessment::Run { sandboxed } => sandboxed,
        ExecAssessment::Ask { reason } => {
            if let Some(refusal) = ask(ctx, &req, reason).await? {
                return Ok(refusal);
            }
            false
        }
    };
    let outcome = execute(ctx, &req, sandboxed).await;
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
    let reason =
        format!("the command failed in the sandbox ({failure}); run it again without the sandbox?");
    if let Some(refusal) = ask(ctx, &req, Some(reason)).await? {
        return Ok(format!("{with_note}\n{refusal}"));
    }
    Ok(execute(ctx, &req, false).await.text)
}

/// Asks the user. `Ok(None)` = approved; `Ok(Some(text))` = refused, `text` for the model.
async fn ask(
    ctx: &TurnContext,
    req: &ShellRequest<'_>,
    reason: Option<String>,
) -> Result<Option<String>, TurnStop> {
    let pending = ctx.session.approvals.register(req.call_id);
    ctx.emit(EventMsg::ExecApprovalRequest(ExecApprovalRequestEvent {
        call_id: req.call_id.to_string(),
        turn_id: ctx.turn_id.clone(),
        command: req.argv.clone(),
        cwd: req.cwd.clone(),
        reason,
        parsed_cmd: parse_command(&req.argv),
    }));
    let answer = pending.wait(&ctx.cancel).await;
    match answer.decision {
        ReviewDecision::Approved => Ok(None),
        ReviewDecision::ApprovedForSession => {
            ctx.session
                .approvals
                .approve_command_for_session(req.argv.clone());
            Ok(None)
        }
        ReviewDecision::Abort => Err(TurnStop::Aborted),
        ReviewDecision::Denied | ReviewDecision::TimedOut => {
            let text = match answer.reason {
                Some(reason) => {
                    ctx.emit(EventMsg::Warning(WarningEvent {
                        message: format!("command not approved: {reason}"),
                    }));
                    format!("The command was not run: approval was denied ({reason}).")
                }
                None => "The user declined to run this command. Do not retry it; continue without it or ask the user.".to_string(),
            };
            Ok(Some(text))
        }
    }
}

struct Outcome {
    text: String,
    /// Why the failure looks like the sandbox's doing, if it does.
    sandbox_failure: Option<String>,
}

/// Runs the command with begin/delta/end events.
async fn execute(ctx: &TurnContext, req: &ShellRequest<'_>, sandboxed: bool) -> Outcome {
    let config = &ctx.session.config;
    ctx.emit(EventMsg::ExecCommandBegin(ExecCommandBeginEvent {
        call_id: req.call_id.to_string(),
        turn_id: ctx.turn_id.clone(),
        command: req.argv.clone(),
        cwd: req.cwd.clone(),
        parsed_cmd: parse_command(&req.argv),
    }));
    let argv = if sandboxed {
        sandboxing::confine(config, &req.cwd, &req.argv)
    } else {
        Ok(sandboxing::unconfined(config, &req.cwd, &req.argv))
    };
    let call_id = req.call_id.to_string();
    let result = match argv {
        Ok(argv) => {
            let exec_req = ExecRequest {
                argv,
                cwd: req.cwd.clone(),
                timeout: req.timeout,
                env: Vec::new(),
            };
            run_command(&exec_req, &ctx.cancel, |stream, chunk| {
                ctx.emit(EventMsg::ExecCommandOutputDelta(
                    ExecCommandOutputDeltaEvent {
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
    let (end, outcome) = match result {
        Ok(output) => {
            let text = format_exec_output(&output, config.tool_output_token_limit);
            let aggregated = output.aggregated.to_text();
            let sandbox_failure = (sandboxed
                && deputy_sandbox::looks_like_sandbox_denial(output.exit_code, &aggregated))
            .then(|| sandboxing::denial_summary(output.exit_code, &aggregated));
            let end = ExecCommandEndEvent {
                call_id: call_id.clone(),
                turn_id: ctx.turn_id.clone(),
                command: req.argv.clone(),
                cwd: req.cwd.clone(),
                stdout: output.stdout.to_text(),
                stderr: output.stderr.to_text(),
                aggregated_output: aggregated,
                exit_code: output.exit_code,
                duration: output.duration,
                formatted_output: text.clone(),
            };
            (
                end,
                Outcome {
                    text,
                    sandbox_failure,
                },
            )
        }
        Err(err) => {
            let text = match &err {
                ExecError::Cancelled => "aborted: the command was interrupted".to_string(),
                other => format!("Exit code: -1\nWall time: 0.0 seconds\nOutput:\n{other}"),
            };
            let end = ExecCommandEndEvent {
                call_id: call_id.clone(),
                turn_id: ctx.turn_id.clone(),
                command: req.argv.clone(),
                cwd: req.cwd.clone(),
                stdout: String::new(),
                stderr: err.to_string(),
                aggregated_output: err.to_string(),
                exit_code: -1,
                duration: Duration::ZERO,
                formatted_output: text.clone(),
            };
            (
                end,
                Outcome {
                    text,
                    sandbox_failure: None,
                },
            )
        }
    };
    ctx.emit(EventMsg::ExecCommandEnd(end));
    outcome
}
