//! `deputy sandbox`: run any command under the same confinement the agent's commands get.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, bail};
use deputy_protocol::SandboxMode;
use deputy_sandbox::{SandboxPolicy, wrap_command};

/// Runs `argv` in `cwd` (default: the current directory) confined by `mode`, with inherited
/// stdio, and returns its exit code (128 + signal number when a signal killed it).
pub fn run_sandbox_command(
    mode: SandboxMode,
    cwd: Option<PathBuf>,
    writable_roots: Vec<PathBuf>,
    network_access: bool,
    argv: Vec<String>,
) -> anyhow::Result<i32> {
    if argv.is_empty() {
        bail!("no command given: use `deputy sandbox [OPTIONS] -- COMMAND [ARGS...]`");
    }
    let here = std::env::current_dir().context("cannot read the current directory")?;
    let cwd = match cwd {
        Some(dir) => here.join(dir),
        None => here,
    };
    let cwd = std::fs::canonicalize(&cwd)
        .with_context(|| format!("cannot use {} as working directory", cwd.display()))?;
    let policy = match mode {
        SandboxMode::ReadOnly => SandboxPolicy::read_only().with_network_access(network_access),
        SandboxMode::WorkspaceWrite => {
            SandboxPolicy::workspace_write(&cwd, writable_roots, network_access, true)
        }
        SandboxMode::DangerFullAccess => SandboxPolicy::full_access(),
    };
    let launcher = std::env::current_exe().context("cannot locate the deputy executable")?;
    let wrapped = wrap_command(&launcher, &policy, &cwd, &argv);
    let (program, args) = wrapped
        .split_first()
        .context("the sandbox produced an empty command")?;
    let status = Command::new(program)
        .args(args)
        .current_dir(&cwd)
        .status()
        .with_context(|| format!("cannot start {}", program.to_string_lossy()))?;
    Ok(exit_code(status))
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => 128 + signal,
        (None, None) => 1,
    }
}
