//! The bridge from a thread's configuration to the sandbox crate.

use std::path::Path;

use deputy_protocol::SandboxMode;
use deputy_sandbox::SandboxPolicy;

use crate::config::Config;
use crate::safety::WritableRoots;

/// The kernel policy for commands of this thread run in `cwd`.
pub(crate) fn policy(config: &Config, cwd: &Path) -> SandboxPolicy {
    let settings = &config.sandbox_workspace_write;
    match config.sandbox_mode {
        SandboxMode::DangerFullAccess => SandboxPolicy::full_access(),
        SandboxMode::ReadOnly => {
            SandboxPolicy::read_only().with_network_access(settings.network_access)
        }
        SandboxMode::WorkspaceWrite => SandboxPolicy::workspace_write(
            cwd,
            settings.writable_roots.iter().cloned(),
            settings.network_access,
            !(settings.exclude_slash_tmp && settings.exclude_tmpdir_env_var),
        ),
    }
}

/// Where patches may write without asking: exactly where sandboxed commands may.
pub(crate) fn writable_roots(config: &Config) -> WritableRoots {
    let policy = policy(config, &config.cwd);
    WritableRoots::new(
        policy.effective_writable_roots(),
        policy.protected_subpaths(),
    )
}

/// `Ok` when sandboxed commands can run here; else why not (fail closed).
pub(crate) fn availability(config: &Config) -> Result<(), String> {
    if config.sandbox_mode == SandboxMode::DangerFullAccess {
        return Ok(());
    }
    if config.sandbox_launcher.is_none() {
        return Err("no sandbox launcher is configured for this process".into());
    }
    deputy_sandbox::probe()
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// The argv that runs `argv` confined by the thread's policy; `Err` when
/// there is no launcher (nothing runs unconfined by accident).
pub(crate) fn confine(config: &Config, cwd: &Path, argv: &[String]) -> Result<Vec<String>, String> {
    let launcher = config
        .sandbox_launcher
        .as_ref()
        .ok_or("no sandbox launcher is configured for this process")?;
    Ok(
        deputy_sandbox::wrap_command(launcher, &policy(config, cwd), cwd, argv)
            .into_iter()
            .map(|arg| arg.to_string_lossy().into_owned())
            .collect(),
    )
}

/// A short reason why a failed command looks like a sandbox denial.
pub(crate) fn denial_summary(exit_code: i32, output: &str) -> String {
    if exit_code == deputy_sandbox::SANDBOX_UNAVAILABLE_EXIT_CODE {
        return "the sandbox could not be set up".into();
    }
    output
        .lines()
        .find(|line| {
            let l = line.to_ascii_lowercase();
            l.contains("permission denied")
                || l.contains("operation not permitted")
                || l.contains("read-only file system")
                || l.contains("network")
        })
        .map_or_else(
            || format!("exit code {exit_code}"),
            |line| line.trim().to_string(),
        )
}
