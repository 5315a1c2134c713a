//! `deputy sandbox`: run any command under the same confinement the agent's commands get.

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, bail};
use deputy_protocol::SandboxMode;
use deputy_sandbox::{PrivateTmp, SandboxPolicy, TmpRoots, wrap_command};

/// What `deputy sandbox` was asked to run, and how.
pub struct SandboxRequest {
    /// The sandbox mode.
    pub mode: SandboxMode,
    /// The working directory (default: the current directory), also the workspace root.
    pub cwd: Option<PathBuf>,
    /// More directories writable in workspace-write.
    pub writable_roots: Vec<PathBuf>,
    /// Whether network sockets are allowed.
    pub network_access: bool,
    /// Whether Unix sockets are allowed.
    pub allow_unix_sockets: bool,
    /// The command and its arguments.
    pub argv: Vec<String>,
}

/// Runs the request's command with inherited stdio and returns its exit code (128 + signal
/// number when a signal killed it).
pub fn run_sandbox_command(request: SandboxRequest) -> anyhow::Result<i32> {
    if request.argv.is_empty() {
        bail!("no command given: use `deputy sandbox [OPTIONS] -- COMMAND [ARGS...]`");
    }
    let here = std::env::current_dir().context("cannot read the current directory")?;
    let cwd = match request.cwd {
        Some(dir) => here.join(dir),
        None => here,
    };
    let cwd = std::fs::canonicalize(&cwd)
        .with_context(|| format!("cannot use {} as working directory", cwd.display()))?;
    let policy = match request.mode {
        SandboxMode::ReadOnly => SandboxPolicy::read_only(),
        SandboxMode::WorkspaceWrite => {
            SandboxPolicy::workspace_write(&cwd, request.writable_roots, false, TmpRoots::BOTH)
        }
        SandboxMode::DangerFullAccess => SandboxPolicy::full_access(),
    };
    let mut policy = policy;
    // A private /tmp for this one run, removed when it ends (kept alive until then).
    let mut private_tmp = None;
    if policy.is_confined() {
        policy = policy
            .with_network_access(request.network_access)
            .with_unix_sockets(request.allow_unix_sockets);
        if let Ok(support) = deputy_sandbox::probe()
            && let Some(limits) = support.namespace_limitations()
        {
            let _ = writeln!(std::io::stderr(), "deputy sandbox: note: {limits}");
        }
        let tmp = PrivateTmp::create(&run_name()).context("preparing the private /tmp")?;
        policy = policy.with_private_tmp(Some(tmp.path().to_path_buf()));
        private_tmp = Some(tmp);
    }
    let launcher = crate::launcher().context("cannot locate the deputy executable")?;
    let wrapped = wrap_command(&launcher, &policy, &cwd, &request.argv);
    let (program, args) = wrapped
        .split_first()
        .context("the sandbox produced an empty command")?;
    let status = Command::new(program)
        .args(args)
        .current_dir(&cwd)
        .status()
        .with_context(|| format!("cannot start {}", program.to_string_lossy()))?;
    drop(private_tmp);
    Ok(exit_code(status))
}

/// A name for this run's private /tmp that no other run uses.
fn run_name() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("sandbox-{}-{nanos}", std::process::id())
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(signal)) => 128 + signal,
        (None, None) => 1,
    }
}
