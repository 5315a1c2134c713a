//! The tools the model can call: the per-turn registry and deputy's own tools.

// Runs on the async runtime: no blocking std calls (see clippy.toml).
#![cfg_attr(not(test), warn(clippy::disallowed_methods))]

mod builtin;
mod patch;
mod registry;
mod request_user_input;
mod shell;
mod spec;
mod unified_exec;
mod view_image;

pub(crate) use patch::finish_interrupted as finish_interrupted_patch;
pub(crate) use registry::{
    ThreadTools, ToolCall, ToolHandler, ToolPayload, ToolRegistry, ToolRegistryError,
};
pub use spec::{
    ApplyPatchArgs, CommandOptions, SandboxPermissions, ShellArgs, ShellCommandArgs, names,
};
pub(crate) use unified_exec::stop_sessions as stop_unified_exec;
