//! The tools the model can call, and the dispatch from a function call to its handler.

mod patch;
mod shell;
mod spec;

use std::path::PathBuf;

use deputy_protocol::UpdatePlanArgs;
use serde::de::DeserializeOwned;

pub(crate) use patch::finish_interrupted as finish_interrupted_patch;
pub use spec::{
    ApplyPatchArgs, CommandOptions, SandboxPermissions, ShellArgs, ShellCommandArgs, names,
    tool_specs,
};

use crate::context::{TurnContext, TurnStop};

/// Runs one function call and returns the text the model reads back.
/// Only an `abort` approval stops the turn; every other failure is output.
pub(crate) async fn handle_call(
    ctx: &TurnContext,
    call_id: &str,
    name: &str,
    arguments: &str,
) -> Result<String, TurnStop> {
    match name {
        names::SHELL => match parse::<ShellArgs>(arguments) {
            Ok(args) => run_shell_or_patch(ctx, call_id, args.command, args.options).await,
            Err(message) => Ok(message),
        },
        names::SHELL_COMMAND => match parse::<ShellCommandArgs>(arguments) {
            Ok(args) => {
                let argv = vec!["bash".to_string(), "-lc".to_string(), args.command];
                run_shell_or_patch(ctx, call_id, argv, args.options).await
            }
            Err(message) => Ok(message),
        },
        names::APPLY_PATCH => match parse::<ApplyPatchArgs>(arguments) {
            Ok(args) => patch::apply(ctx, call_id, &args.input, ctx.config.cwd.clone()).await,
            Err(message) => Ok(message),
        },
        names::UPDATE_PLAN => match parse::<UpdatePlanArgs>(arguments) {
            Ok(args) => {
                ctx.update_plan(args);
                Ok("Plan updated".to_string())
            }
            Err(message) => Ok(message),
        },
        other => Ok(format!(
            "unsupported call: `{other}` is not a tool here; available tools: {}, {}, {}, {}",
            names::SHELL,
            names::SHELL_COMMAND,
            names::APPLY_PATCH,
            names::UPDATE_PLAN
        )),
    }
}

/// A shell call whose command is really `apply_patch` is handled as a patch.
async fn run_shell_or_patch(
    ctx: &TurnContext,
    call_id: &str,
    argv: Vec<String>,
    options: CommandOptions,
) -> Result<String, TurnStop> {
    let cwd = resolve_workdir(ctx, options.workdir.as_deref());
    if let Some(extracted) = deputy_apply_patch::extract_patch_from_argv(&argv) {
        let cwd = match extracted.workdir {
            Some(dir) => cwd.join(dir),
            None => cwd,
        };
        return patch::apply(ctx, call_id, &extracted.patch, cwd).await;
    }
    let justification = options.justification.filter(|j| !j.trim().is_empty());
    let escalation = (options.sandbox_permissions == Some(SandboxPermissions::RequireEscalated))
        .then(|| justification.clone().unwrap_or_default());
    let timeout = options.timeout_ms.map_or(
        crate::exec::DEFAULT_TIMEOUT,
        std::time::Duration::from_millis,
    );
    shell::run(
        ctx,
        shell::ShellRequest {
            call_id,
            argv,
            cwd,
            timeout,
            escalation,
            justification,
        },
    )
    .await
}

fn resolve_workdir(ctx: &TurnContext, workdir: Option<&str>) -> PathBuf {
    let cwd = &ctx.config.cwd;
    match workdir.filter(|w| !w.is_empty()) {
        Some(dir) => cwd.join(dir),
        None => cwd.clone(),
    }
}

fn parse<T: DeserializeOwned>(arguments: &str) -> Result<T, String> {
    serde_json::from_str(arguments).map_err(|e| {
        format!("failed to parse function arguments: {e}; arguments were: {arguments}")
    })
}
