//! Engine and session data in the protocol's shapes (and back): a thread's summary,
//! sandbox policies, user input, review targets. Events have their own translation
//! (`translate`).

use deputy_core::rollout::{self, SessionSummary};
use deputy_protocol::{self as engine, InputItem};

use std::path::Path;

use crate::protocol::{
    FileSystemAccessMode, FileSystemPath, FileSystemPermissions, FileSystemSandboxEntry,
    FileSystemSpecialPath, JsonRpcError, NetworkPermissions, PermissionProfile, ReviewTarget,
    SandboxPolicy, SessionSource, Thread as WireThread, ThreadStatus, Turn, UserInput,
};

/// A listing's summary of a thread in the wire shape.
pub(crate) fn wire_thread(
    summary: SessionSummary,
    status: ThreadStatus,
    turns: Vec<Turn>,
) -> WireThread {
    let secs = |t: std::time::SystemTime| {
        t.duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
    };
    WireThread {
        id: summary.id,
        forked_from_id: None,
        preview: summary.first_prompt_preview,
        ephemeral: false,
        model_provider: summary.model_provider,
        created_at: secs(summary.created),
        updated_at: secs(summary.updated),
        status,
        path: Some(summary.path),
        cwd: summary.cwd,
        cli_version: summary.cli_version,
        source: match summary.source {
            rollout::SessionSource::AppServer => SessionSource::AppServer,
            rollout::SessionSource::Exec => SessionSource::Exec,
            rollout::SessionSource::Mcp => SessionSource::Custom("mcp".into()),
            rollout::SessionSource::Review => SessionSource::Custom("review".into()),
            rollout::SessionSource::Acp => SessionSource::Custom("acp".into()),
        },
        agent_nickname: None,
        agent_role: None,
        git_info: None,
        name: None,
        turns,
    }
}

pub(crate) fn input_items(input: Vec<UserInput>) -> Result<Vec<InputItem>, JsonRpcError> {
    if input.is_empty() {
        return Err(JsonRpcError::invalid_params("`input` is empty"));
    }
    input
        .into_iter()
        .map(|part| match part {
            UserInput::Text { text, .. } => Ok(InputItem::Text { text }),
            UserInput::Image { url } => Ok(InputItem::Image { url }),
            UserInput::LocalImage { path } => Ok(InputItem::LocalImage { path }),
        })
        .collect()
}

pub(crate) fn engine_sandbox_policy(
    policy: SandboxPolicy,
) -> Result<engine::SandboxPolicy, JsonRpcError> {
    Ok(match policy {
        SandboxPolicy::DangerFullAccess => engine::SandboxPolicy::DangerFullAccess,
        SandboxPolicy::ReadOnly { network_access } => {
            engine::SandboxPolicy::ReadOnly { network_access }
        }
        SandboxPolicy::WorkspaceWrite {
            writable_roots,
            network_access,
            exclude_tmpdir_env_var,
            exclude_slash_tmp,
        } => engine::SandboxPolicy::WorkspaceWrite {
            writable_roots,
            network_access,
            exclude_tmpdir_env_var,
            exclude_slash_tmp,
        },
        SandboxPolicy::ExternalSandbox { .. } => {
            return Err(JsonRpcError::invalid_params(
                "sandboxPolicy externalSandbox is not supported",
            ));
        }
    })
}

pub(crate) fn wire_sandbox_policy(policy: engine::SandboxPolicy) -> SandboxPolicy {
    match policy {
        engine::SandboxPolicy::DangerFullAccess => SandboxPolicy::DangerFullAccess,
        engine::SandboxPolicy::ReadOnly { network_access } => {
            SandboxPolicy::ReadOnly { network_access }
        }
        engine::SandboxPolicy::WorkspaceWrite {
            writable_roots,
            network_access,
            exclude_tmpdir_env_var,
            exclude_slash_tmp,
        } => SandboxPolicy::WorkspaceWrite {
            writable_roots,
            network_access,
            exclude_tmpdir_env_var,
            exclude_slash_tmp,
        },
    }
}

/// What the sandbox lets a thread in `cwd` under `policy` do, entry by entry: read
/// everywhere; write in the cwd, the temporary directories and the extra roots, except
/// their `.git`, which the sandbox keeps read-only. Reads the disk (which `.git` exist).
#[allow(
    clippy::disallowed_methods,
    reason = "blocking: its one caller (`settings_response`) runs it in spawn_blocking"
)]
pub(crate) fn permission_profile(policy: &engine::SandboxPolicy, cwd: &Path) -> PermissionProfile {
    let entry = |path, access| FileSystemSandboxEntry { path, access };
    let special = |value| FileSystemPath::Special { value };
    let (network, writable) = match policy {
        engine::SandboxPolicy::DangerFullAccess => return PermissionProfile::Disabled,
        engine::SandboxPolicy::ReadOnly { network_access } => (*network_access, None),
        engine::SandboxPolicy::WorkspaceWrite {
            writable_roots,
            network_access,
            exclude_tmpdir_env_var,
            exclude_slash_tmp,
        } => (
            *network_access,
            Some((writable_roots, *exclude_tmpdir_env_var, *exclude_slash_tmp)),
        ),
    };
    let mut entries = vec![entry(
        special(FileSystemSpecialPath::Root),
        FileSystemAccessMode::Read,
    )];
    if let Some((roots, exclude_tmpdir, exclude_slash_tmp)) = writable {
        let write = FileSystemAccessMode::Write;
        entries.push(entry(
            special(FileSystemSpecialPath::CurrentWorkingDirectory),
            write,
        ));
        if !exclude_slash_tmp {
            entries.push(entry(special(FileSystemSpecialPath::SlashTmp), write));
        }
        if !exclude_tmpdir {
            entries.push(entry(special(FileSystemSpecialPath::Tmpdir), write));
        }
        for root in roots {
            entries.push(entry(FileSystemPath::Path { path: root.clone() }, write));
        }
        for root in std::iter::once(cwd).chain(roots.iter().map(|r| r.as_path())) {
            let git = root.join(".git");
            if std::fs::symlink_metadata(&git).is_ok() {
                entries.push(entry(
                    FileSystemPath::Path { path: git },
                    FileSystemAccessMode::Read,
                ));
            }
        }
    }
    PermissionProfile::Managed {
        file_system: FileSystemPermissions::Restricted { entries },
        network: NetworkPermissions { enabled: network },
    }
}

/// The engine's review request for a `review/start` target.
pub(crate) fn review_request(target: ReviewTarget) -> engine::ReviewRequest {
    let target = match target {
        ReviewTarget::UncommittedChanges => engine::ReviewTarget::UncommittedChanges,
        ReviewTarget::BaseBranch { branch } => engine::ReviewTarget::BaseBranch { branch },
        ReviewTarget::Commit { sha, title } => engine::ReviewTarget::Commit { sha, title },
        ReviewTarget::Custom { instructions } => engine::ReviewTarget::Custom { instructions },
    };
    engine::ReviewRequest {
        user_facing_hint: target.hint(),
        target,
        prompt: None,
        model: None,
    }
}
