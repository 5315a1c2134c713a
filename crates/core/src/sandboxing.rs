//! The bridge from a thread's configuration to the sandbox crate.
//!
//! The policy comes from the session alone (its cwd, mode and `[sandbox_workspace_write]`),
//! never from the directory a command asks to run in: a `workdir` only says where the command
//! starts, so `"/"`, `".."` or a symlink out of the workspace widen nothing.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use deputy_protocol::SandboxMode;
use deputy_sandbox::{PrivateTmp, SandboxPolicy, TmpRoots};

use crate::config::Config;
use crate::safety::WritableRoots;

/// The kernel policy for every command of this thread, wherever it runs.
pub(crate) fn policy(config: &Config) -> SandboxPolicy {
    let settings = &config.sandbox_workspace_write;
    match config.sandbox_mode {
        SandboxMode::DangerFullAccess => SandboxPolicy::full_access(),
        SandboxMode::ReadOnly => SandboxPolicy::read_only()
            .with_network_access(settings.network_access)
            .with_unix_sockets(settings.allow_unix_sockets),
        SandboxMode::WorkspaceWrite => SandboxPolicy::workspace_write(
            &config.cwd,
            settings.writable_roots.iter().cloned(),
            settings.network_access,
            TmpRoots {
                slash_tmp: !settings.exclude_slash_tmp,
                tmpdir_env_var: !settings.exclude_tmpdir_env_var,
            },
        )
        .with_unix_sockets(settings.allow_unix_sockets),
    }
}

/// Where patches may write without asking: where sandboxed commands may, except `/tmp`
/// itself. Commands get a private `/tmp` (where namespaces allow), while deputy applies
/// patches to the real one, shared with every other user and daemon: a patch there asks (or
/// is refused under `never`) rather than land somewhere the commands do not even see.
/// Writable roots that merely live under `/tmp` (a workspace there) stay writable.
pub(crate) fn writable_roots(config: &Config) -> WritableRoots {
    let policy = policy(config);
    let roots = policy
        .effective_writable_roots()
        .into_iter()
        .filter(|root| root != Path::new("/tmp"))
        .collect();
    WritableRoots::new(roots, policy.protected_subpaths())
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

/// The argv that runs `argv`, starting in `cwd`, confined by the thread's policy; `Err` when
/// there is no launcher or no private `/tmp` (nothing runs unconfined by accident).
pub(crate) fn confine(config: &Config, cwd: &Path, argv: &[String]) -> Result<Vec<String>, String> {
    let launcher = config
        .sandbox_launcher
        .as_ref()
        .ok_or("no sandbox launcher is configured for this process")?;
    let mut policy = policy(config);
    if policy.is_confined()
        && let Some(slot) = &config.sandbox_private_tmp
    {
        policy = policy.with_private_tmp(Some(slot.path()?));
    }
    Ok(to_strings(deputy_sandbox::wrap_command(
        launcher, &policy, cwd, argv,
    )))
}

/// The argv that runs `argv` unconfined (danger-full-access, or approved to leave the
/// sandbox): still through the launcher when there is one, which gives it a session of its
/// own and kills whatever it leaves behind, when it ends or when deputy dies.
pub(crate) fn unconfined(config: &Config, cwd: &Path, argv: &[String]) -> Vec<String> {
    match &config.sandbox_launcher {
        Some(launcher) => to_strings(deputy_sandbox::wrap_command(
            launcher,
            &SandboxPolicy::full_access(),
            cwd,
            argv,
        )),
        None => argv.to_vec(),
    }
}

fn to_strings(argv: Vec<std::ffi::OsString>) -> Vec<String> {
    argv.into_iter()
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect()
}

/// A thread's private `/tmp`: created when its first confined command runs, kept for the
/// thread's other commands, removed when the thread's configuration is dropped.
#[derive(Debug)]
pub(crate) struct PrivateTmpSlot {
    name: String,
    dir: Mutex<Option<PrivateTmp>>,
}

impl PrivateTmpSlot {
    /// A slot for the thread `thread_id`; nothing is created yet.
    pub(crate) fn new(thread_id: &str) -> Self {
        Self {
            name: thread_id.to_string(),
            dir: Mutex::new(None),
        }
    }

    /// The directory, created (mode 0700) on first use.
    fn path(&self) -> Result<PathBuf, String> {
        let mut dir = self.dir.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(existing) = dir.as_ref() {
            return Ok(existing.path().to_path_buf());
        }
        let created = PrivateTmp::create(&self.name)
            .map_err(|e| format!("cannot prepare the command's private /tmp: {e}"))?;
        let path = created.path().to_path_buf();
        *dir = Some(created);
        Ok(path)
    }
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
