//! What the model is told besides the user's words and its family's system
//! instructions (`model_family.rs`).

// Runs on the async runtime: no blocking std calls (see clippy.toml).
#![cfg_attr(not(test), warn(clippy::disallowed_methods))]

use deputy_protocol::{AskForApproval, ResponseItem, SandboxMode};

use crate::config::Config;
use crate::project_doc;

/// The AGENTS.md instructions message for a new thread, when there are any, and warnings
/// about files that were skipped or cut, for the user. Read off the async runtime.
pub(crate) async fn project_instructions(config: &Config) -> (Option<ResponseItem>, Vec<String>) {
    let docs = project_doc::load_project_docs(config).await;
    (docs.message(&config.cwd), docs.warnings)
}

/// Whether `item` belongs to a thread's initial context (developer and system
/// messages, the AGENTS.md instructions) rather than to its conversation.
pub(crate) fn is_initial_context(item: &ResponseItem) -> bool {
    match item {
        ResponseItem::Message { role, .. } => {
            role == "developer" || role == "system" || project_doc::is_user_instructions(item)
        }
        _ => false,
    }
}

/// What a new thread's history starts with: the developer messages (the environment and
/// permissions, then the caller's `developer-instructions`). The AGENTS.md instructions
/// follow them once read, by the thread itself ([`project_instructions`]), so that starting
/// a thread never waits on the project's files.
pub(crate) fn initial_context(config: &Config) -> Vec<ResponseItem> {
    let mut items = vec![ResponseItem::developer_text(environment_context(config))];
    if let Some(text) = config
        .developer_instructions
        .as_ref()
        .filter(|t| !t.trim().is_empty())
    {
        items.push(ResponseItem::developer_text(text.clone()));
    }
    items
}

/// The `<environment_context>` the model is told: cwd, sandbox, network, approvals.
pub(crate) fn environment_context(config: &Config) -> String {
    let sandbox = match config.sandbox_mode {
        SandboxMode::ReadOnly => "commands may read files but not write them",
        SandboxMode::WorkspaceWrite => {
            "commands may write inside the working directory and temporary directories only"
        }
        SandboxMode::DangerFullAccess => "commands run without restrictions",
    };
    let network = if config.sandbox_mode == SandboxMode::DangerFullAccess
        || config.sandbox_workspace_write.network_access
    {
        "enabled"
    } else {
        "disabled"
    };
    let approvals = match config.approval_policy {
        AskForApproval::Untrusted => {
            "only known read-only commands run without the user's approval; anything else waits for it"
        }
        AskForApproval::OnFailure => {
            "commands run in the sandbox; if one fails because of it, the user is asked whether to re-run it outside"
        }
        AskForApproval::OnRequest => {
            "commands run in the sandbox; to run one outside it, set `sandbox_permissions` to \"require_escalated\" with a `justification`, and the user decides"
        }
        AskForApproval::Never => {
            "the user is never asked; work within the sandbox and report what you could not do"
        }
    };
    format!(
        "<environment_context>\n  cwd: {}\n  `sandbox_mode` is `{}`: {sandbox}\n  network access: {network}\n  `approval_policy` is `{}`: {approvals}\n</environment_context>",
        config.cwd.display(),
        config.sandbox_mode.as_str(),
        config.approval_policy.as_str(),
    )
}
