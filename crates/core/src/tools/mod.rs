//! The tools the model can call: the per-turn registry, deputy's own tools, and the
//! turn's cumulative diff.

mod builtin;
mod diff;
mod patch;
pub mod patch_journal;
mod registry;
mod shell;
mod spec;

pub(crate) use diff::TurnDiffTracker;
pub(crate) use patch::{PatchInFlight, finish_interrupted as finish_interrupted_patch};
pub(crate) use registry::{
    ThreadTools, ToolCall, ToolHandler, ToolPayload, ToolRegistry, ToolRegistryError, ToolState,
};
pub use spec::{
    ApplyPatchArgs, CommandOptions, SandboxPermissions, ShellArgs, ShellCommandArgs, names,
};
