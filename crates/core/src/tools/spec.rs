//! The built-in tools' names, descriptions and argument types; the types generate
//! the tools' JSON schemas.

use std::any::TypeId;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::client::{FunctionTool, ToolSpec};
use crate::sync::SharedByKey;

/// Arguments of `shell`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ShellArgs {
    /// The command to execute, as an argv array.
    pub command: Vec<String>,
    /// Where and how to run it.
    #[serde(flatten)]
    pub options: CommandOptions,
}

/// Arguments of `shell_command`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ShellCommandArgs {
    /// The shell script to execute with `bash -lc`.
    pub command: String,
    /// Where and how to run it.
    #[serde(flatten)]
    pub options: CommandOptions,
}

/// The arguments both command tools share.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct CommandOptions {
    /// The working directory to execute the command in.
    #[serde(default)]
    pub workdir: Option<String>,
    /// The timeout for the command in milliseconds.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Sandbox permissions for the command. Set to "require_escalated" to request running without sandbox restrictions; defaults to "use_default".
    #[serde(default)]
    pub sandbox_permissions: Option<SandboxPermissions>,
    /// Only set if sandbox_permissions is "require_escalated": one sentence explaining why the command needs to run outside the sandbox.
    #[serde(default)]
    pub justification: Option<String>,
}

/// Arguments of `apply_patch`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ApplyPatchArgs {
    /// The entire patch, from `*** Begin Patch` to `*** End Patch`.
    pub input: String,
}

/// Whether a command asks to leave the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SandboxPermissions {
    /// Run under the session's sandbox.
    #[default]
    UseDefault,
    /// Ask the user to run it without the sandbox.
    RequireEscalated,
}

/// Names of the tools, defined once.
pub mod names {
    /// argv-based command runner.
    pub const SHELL: &str = "shell";
    /// Script-based command runner.
    pub const SHELL_COMMAND: &str = "shell_command";
    /// File editing.
    pub const APPLY_PATCH: &str = "apply_patch";
    /// Plan tracking.
    pub const UPDATE_PLAN: &str = "update_plan";
    /// Attaches an image file to the conversation.
    pub const VIEW_IMAGE: &str = "view_image";
    /// The provider's hosted web search (a tool type, not a function name).
    pub const WEB_SEARCH: &str = "web_search";
    /// Starts a command that may outlive the call (unified exec).
    pub const EXEC_COMMAND: &str = "exec_command";
    /// Writes to (or polls) a command `exec_command` started.
    pub const WRITE_STDIN: &str = "write_stdin";
    /// The model's questions to the user.
    pub const REQUEST_USER_INPUT: &str = "request_user_input";
}

pub(super) const SHELL_DESCRIPTION: &str = "Runs a command given as an argv array and returns its exit code, wall time and output. \
Wrap shell syntax (pipes, redirection, globs) as [\"bash\", \"-lc\", \"<script>\"]. \
Always set `workdir` instead of using `cd`. Output is truncated in the middle when long.";
pub(super) const SHELL_COMMAND_DESCRIPTION: &str = "Runs a shell script with `bash -lc` and returns its exit code, wall time and output. \
Always set `workdir` instead of using `cd`. Output is truncated in the middle when long.";
pub(super) const APPLY_PATCH_DESCRIPTION: &str = r#"Edits files with a patch. The patch is plain text:

*** Begin Patch
*** Add File: path/new.txt
+first line of the new file
*** Update File: path/existing.py
*** Move to: path/renamed.py        (optional)
@@ def some_function():             (optional line to locate the change)
 unchanged context line
-line to remove
+line to add
*** Delete File: path/obsolete.txt
*** End Patch

Paths are relative to the working directory. Give about three lines of unchanged context around each change; use `@@` lines to disambiguate. A patch that does not apply changes nothing."#;
pub(super) const UPDATE_PLAN_DESCRIPTION: &str = "Records the task plan: a list of steps, each pending, in_progress or completed, with at most one in_progress. \
Call it when the plan changes; the user sees it.";
pub(super) const APPLY_PATCH_FREEFORM_DESCRIPTION: &str = "Edits files. The input is the patch itself as plain text \
(not JSON), from `*** Begin Patch` to `*** End Patch`, as the instructions describe. A patch applies whole or not at all.";

/// `update_plan`'s parameters, written out so that every model family gets the same
/// shape Codex offers (plain `string` types, closed objects).
pub(super) fn update_plan_parameters() -> serde_json::Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "explanation": {"type": "string", "description": "Why the plan changed, when it did."},
            "plan": {
                "type": "array",
                "description": "The whole plan, in order.",
                "items": {
                    "type": "object",
                    "properties": {
                        "step": {"type": "string", "description": "What the step achieves."},
                        "status": {"type": "string", "description": "One of: pending, in_progress, completed."},
                    },
                    "required": ["step", "status"],
                    "additionalProperties": false,
                },
            },
        },
        "required": ["plan"],
        "additionalProperties": false,
    })
}

/// A function tool whose parameters are the JSON Schema of `T`, inlined. Each schema is
/// generated once per process: every turn builds its registry, and generating the schemas
/// (and a copy of them per session) was a visible part of a thousand concurrent sessions'
/// CPU and memory.
pub(super) fn function_spec<T: JsonSchema + 'static>(name: &str, description: &str) -> ToolSpec {
    static SCHEMAS: SharedByKey<TypeId, Value> = SharedByKey::new();
    let parameters = SCHEMAS.get_or_make(TypeId::of::<T>(), |_| Arc::new(schema_of::<T>()));
    ToolSpec::Function(FunctionTool {
        name: name.to_string(),
        description: description.to_string(),
        parameters,
    })
}

/// The JSON Schema of `T` as a tool's parameters: inlined, without the root's metadata.
fn schema_of<T: JsonSchema>() -> Value {
    let settings = schemars::generate::SchemaSettings::draft07().with(|s| {
        s.inline_subschemas = true;
    });
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut parameters = schema.to_value();
    if let Some(object) = parameters.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
        object.remove("description");
        object.remove("definitions");
    }
    parameters
}

#[cfg(test)]
mod tests {
    use super::*;
    use deputy_protocol::UpdatePlanArgs;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn function(spec: ToolSpec) -> FunctionTool {
        match spec {
            ToolSpec::Function(tool) => tool,
            other => panic!("not a function: {other:?}"),
        }
    }

    #[test]
    fn every_turn_offers_the_schema_made_once_for_the_process() {
        let first = function(function_spec::<ShellArgs>(names::SHELL, SHELL_DESCRIPTION));
        let again = function(function_spec::<ShellArgs>(names::SHELL, SHELL_DESCRIPTION));
        assert!(Arc::ptr_eq(&first.parameters, &again.parameters));
        assert_eq!(*first.parameters, schema_of::<ShellArgs>());
        let patch = function(function_spec::<ApplyPatchArgs>(
            names::APPLY_PATCH,
            "Applies a patch.",
        ));
        assert_ne!(*first.parameters, *patch.parameters);
        assert_eq!(patch.description, "Applies a patch.");
    }

    #[test]
    fn shell_schema_matches_codex_argument_shape() {
        let shell = function(function_spec::<ShellArgs>(names::SHELL, SHELL_DESCRIPTION));
        let props = shell.parameters["properties"].as_object().unwrap();
        let mut keys: Vec<&str> = props.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "command",
                "justification",
                "sandbox_permissions",
                "timeout_ms",
                "workdir"
            ]
        );
        assert_eq!(shell.parameters["required"], json!(["command"]));
        assert_eq!(props["command"]["type"], json!("array"));
    }

    #[test]
    fn plan_tool_has_status_enum_inlined() {
        let plan = function(function_spec::<UpdatePlanArgs>(
            names::UPDATE_PLAN,
            UPDATE_PLAN_DESCRIPTION,
        ));
        let text = plan.parameters.to_string();
        assert!(
            text.contains("in_progress") && text.contains("completed"),
            "{text}"
        );
        assert!(!text.contains("$ref"), "schemas must be inlined: {text}");
    }
}
