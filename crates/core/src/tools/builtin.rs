//! deputy's own tools as handlers: the command tools, `apply_patch`, `update_plan`,
//! `view_image`, chosen by the model's family (`view_image` lives in a module of its own).

use std::path::PathBuf;
use std::sync::Arc;

use deputy_protocol::UpdatePlanArgs;
use futures::future::BoxFuture;

use super::registry::{ToolCall, ToolHandler, ToolOutput, ToolPayload};
use super::spec::{
    APPLY_PATCH_DESCRIPTION, APPLY_PATCH_FREEFORM_DESCRIPTION, ApplyPatchArgs, CommandOptions,
    SHELL_COMMAND_DESCRIPTION, SHELL_DESCRIPTION, SandboxPermissions, ShellArgs, ShellCommandArgs,
    UPDATE_PLAN_DESCRIPTION, function_spec, names, update_plan_parameters,
};
use super::view_image::ViewImage;
use super::{patch, shell};
use crate::client::{FreeformTool, Grammar, ToolSpec};
use crate::context::{TurnContext, TurnStop};
use crate::model_family::{ApplyPatchToolKind, ModelFamily, ShellToolKind};

/// The built-in tools a model of `family` is offered, in the order they are listed.
pub(crate) fn builtin_tools(family: &ModelFamily) -> Vec<Arc<dyn ToolHandler>> {
    let mut tools: Vec<Arc<dyn ToolHandler>> = Vec::new();
    match family.shell_tool {
        ShellToolKind::ShellAndShellCommand => {
            tools.push(Arc::new(Shell));
            tools.push(Arc::new(ShellCommand));
        }
        ShellToolKind::ShellCommand => tools.push(Arc::new(ShellCommand)),
        ShellToolKind::UnifiedExec => {
            tools.push(Arc::new(super::unified_exec::ExecCommand));
            tools.push(Arc::new(super::unified_exec::WriteStdin));
        }
    }
    tools.push(Arc::new(ApplyPatch(family.apply_patch_tool)));
    if family.plan_tool {
        tools.push(Arc::new(UpdatePlan));
    }
    if family.view_image_tool {
        tools.push(Arc::new(ViewImage));
    }
    if family.user_input_tool {
        tools.push(Arc::new(super::request_user_input::RequestUserInput));
    }
    tools
}

/// The `*** Begin Patch` format as a Lark grammar, for a freeform `apply_patch`: the
/// provider constrains the model's text to it.
const PATCH_GRAMMAR: &str = include_str!("patch_grammar.lark");

/// `shell`: a command as an argv.
struct Shell;

impl ToolHandler for Shell {
    fn spec(&self) -> ToolSpec {
        function_spec::<ShellArgs>(names::SHELL, SHELL_DESCRIPTION)
    }

    fn handle<'a>(
        &'a self,
        ctx: &'a TurnContext,
        call: ToolCall,
    ) -> BoxFuture<'a, Result<ToolOutput, TurnStop>> {
        Box::pin(async move {
            match call.arguments::<ShellArgs>() {
                Ok(args) => {
                    run_shell_or_patch(ctx, &call.call_id, args.command, args.options).await
                }
                Err(message) => Ok(message.into()),
            }
        })
    }
}

/// `shell_command`: a script run with `bash -lc`.
struct ShellCommand;

impl ToolHandler for ShellCommand {
    fn spec(&self) -> ToolSpec {
        function_spec::<ShellCommandArgs>(names::SHELL_COMMAND, SHELL_COMMAND_DESCRIPTION)
    }

    fn handle<'a>(
        &'a self,
        ctx: &'a TurnContext,
        call: ToolCall,
    ) -> BoxFuture<'a, Result<ToolOutput, TurnStop>> {
        Box::pin(async move {
            match call.arguments::<ShellCommandArgs>() {
                Ok(args) => {
                    let argv = vec!["bash".to_string(), "-lc".to_string(), args.command];
                    run_shell_or_patch(ctx, &call.call_id, argv, args.options).await
                }
                Err(message) => Ok(message.into()),
            }
        })
    }
}

/// `apply_patch`: takes the patch as the function's `input`, or as a freeform tool's text.
struct ApplyPatch(ApplyPatchToolKind);

impl ToolHandler for ApplyPatch {
    fn spec(&self) -> ToolSpec {
        match self.0 {
            ApplyPatchToolKind::Function => {
                function_spec::<ApplyPatchArgs>(names::APPLY_PATCH, APPLY_PATCH_DESCRIPTION)
            }
            ApplyPatchToolKind::Freeform => ToolSpec::Freeform(FreeformTool {
                name: names::APPLY_PATCH.to_string(),
                description: APPLY_PATCH_FREEFORM_DESCRIPTION.to_string(),
                grammar: Some(Grammar {
                    syntax: "lark".to_string(),
                    definition: PATCH_GRAMMAR.to_string(),
                }),
            }),
        }
    }

    fn handle<'a>(
        &'a self,
        ctx: &'a TurnContext,
        call: ToolCall,
    ) -> BoxFuture<'a, Result<ToolOutput, TurnStop>> {
        Box::pin(async move {
            let input = match &call.payload {
                ToolPayload::Freeform { input } => input.clone(),
                ToolPayload::Function { .. } => match call.arguments::<ApplyPatchArgs>() {
                    Ok(args) => args.input,
                    Err(message) => return Ok(message.into()),
                },
            };
            patch::apply(ctx, &call.call_id, &input, ctx.config.cwd.clone())
                .await
                .map(ToolOutput::from)
        })
    }
}

/// `update_plan`: the turn's plan.
struct UpdatePlan;

impl ToolHandler for UpdatePlan {
    fn spec(&self) -> ToolSpec {
        ToolSpec::function(
            names::UPDATE_PLAN,
            UPDATE_PLAN_DESCRIPTION,
            update_plan_parameters(),
        )
    }

    fn handle<'a>(
        &'a self,
        ctx: &'a TurnContext,
        call: ToolCall,
    ) -> BoxFuture<'a, Result<ToolOutput, TurnStop>> {
        Box::pin(async move {
            Ok(match call.arguments::<UpdatePlanArgs>() {
                Ok(args) => {
                    ctx.update_plan(args);
                    "Plan updated".into()
                }
                Err(message) => message.into(),
            })
        })
    }
}

/// A shell call whose command is really `apply_patch` is handled as a patch.
async fn run_shell_or_patch(
    ctx: &TurnContext,
    call_id: &str,
    argv: Vec<String>,
    options: CommandOptions,
) -> Result<ToolOutput, TurnStop> {
    let cwd = resolve_workdir(ctx, options.workdir.as_deref());
    if let Some(extracted) = deputy_apply_patch::extract_patch_from_argv(&argv) {
        let cwd = match extracted.workdir {
            Some(dir) => cwd.join(dir),
            None => cwd,
        };
        return patch::apply(ctx, call_id, &extracted.patch, cwd)
            .await
            .map(ToolOutput::from);
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
    .map(ToolOutput::from)
}

/// The directory a command's `workdir` names: relative to the turn's working directory.
pub(super) fn resolve_workdir(ctx: &TurnContext, workdir: Option<&str>) -> PathBuf {
    let cwd = &ctx.config.cwd;
    match workdir.filter(|w| !w.is_empty()) {
        Some(dir) => cwd.join(dir),
        None => cwd.clone(),
    }
}
