//! Starting a stdio MCP server as a process deputy contains.
//!
//! MCP servers are the user's own programs and run outside the sandbox, but under the same
//! containment as commands: through deputy's launcher in `danger-full-access` mode (its
//! own session, the launcher dying with deputy on any signal and killing every process of
//! the server's tree when it goes), counted among deputy's own children so that the sweep
//! for processes that escaped a command's launcher spares it. Where there is no launcher
//! (deputy used as a library) the server is started directly in a session of its own.
//!
//! Like commands, servers must be spawned from a thread that lives as long as deputy (a
//! tokio task, never `spawn_blocking`): the launcher's parent-death signal follows the
//! thread that spawned it.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use deputy_sandbox::{OwnChild, SandboxPolicy};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command};

/// Variables every server gets from deputy's environment (as Codex passes them), besides
/// those its `env_vars` names: enough to find programs and a home, nothing secret.
const BASE_ENV_VARS: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TMPDIR",
    "TZ",
];
/// How long a server whose stdin was closed gets to exit before it is told to stop.
const EXIT_GRACE: Duration = Duration::from_millis(500);
/// How long a server told to stop (SIGTERM) gets before it is killed.
const TERM_GRACE: Duration = Duration::from_secs(2);

/// What a stdio server is started with.
pub(crate) struct StdioSpec<'a> {
    pub(crate) command: &'a str,
    pub(crate) args: &'a [String],
    pub(crate) env: &'a BTreeMap<String, String>,
    pub(crate) env_vars: &'a [String],
    pub(crate) cwd: Option<&'a Path>,
}

/// A started server: its stdio and its process.
pub(crate) struct Started {
    pub(crate) stdin: ChildStdin,
    pub(crate) stdout: ChildStdout,
    pub(crate) stderr: Option<ChildStderr>,
    pub(crate) process: ServerProcess,
}

/// A server's process (its launcher, where there is one). Stopping it — or dropping it —
/// stops the whole tree: the launcher kills everything the server started when it is told
/// to stop; without a launcher the server's session is signalled.
pub(crate) struct ServerProcess {
    child: Child,
    pid: Option<i32>,
    /// Whether `child` is deputy's launcher (else the server itself, leading its session).
    launched: bool,
    /// Counted among deputy's own children until it has been waited for.
    own: Option<OwnChild<'static>>,
}

impl ServerProcess {
    /// Waits a moment for the server to exit (its stdin is closed by then), then SIGTERM,
    /// then SIGKILL.
    pub(crate) async fn stop(&mut self) {
        if tokio::time::timeout(EXIT_GRACE, self.child.wait())
            .await
            .is_err()
        {
            self.signal(libc::SIGTERM);
            if tokio::time::timeout(TERM_GRACE, self.child.wait())
                .await
                .is_err()
            {
                self.signal(libc::SIGKILL);
                let _ = self.child.wait().await;
            }
        }
        self.pid = None;
        self.own = None;
    }

    fn signal(&self, signal: i32) {
        let Some(pid) = self.pid else { return };
        // SAFETY: kill/killpg only send a signal. The child has not been waited for while
        // `pid` is set, so the pid is still its own.
        unsafe {
            if self.launched {
                libc::kill(pid, signal);
            } else {
                libc::killpg(pid, signal);
            }
        }
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // Not stopped properly (deputy is going down): the launcher cleans up on SIGTERM.
        if self.pid.is_some() && matches!(self.child.try_wait(), Ok(None)) {
            self.signal(if self.launched {
                libc::SIGTERM
            } else {
                libc::SIGKILL
            });
        }
    }
}

/// Starts the server of `spec` through `launcher` (deputy's binary) when there is one.
#[allow(
    clippy::disallowed_methods,
    reason = "a stat before the fork: a server process must be spawned from a long-lived runtime thread"
)]
pub(crate) fn spawn(spec: &StdioSpec<'_>, launcher: Option<&Path>) -> Result<Started, String> {
    let cwd = match spec.cwd {
        Some(dir) if dir.is_absolute() => dir.to_path_buf(),
        Some(dir) => current_dir()?.join(dir),
        None => current_dir()?,
    };
    if !cwd.is_dir() {
        return Err(format!("its `cwd` {} is not a directory", cwd.display()));
    }
    let argv: Vec<String> = std::iter::once(spec.command.to_string())
        .chain(spec.args.iter().cloned())
        .collect();
    let argv: Vec<OsString> = match launcher {
        Some(launcher) => {
            deputy_sandbox::wrap_command(launcher, &SandboxPolicy::full_access(), &cwd, &argv)
        }
        None => argv.into_iter().map(OsString::from).collect(),
    };
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| "no command to run".to_string())?;
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(&cwd)
        .env_clear()
        .envs(environment(spec.env, spec.env_vars))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(false);
    // SAFETY: the closure runs in the forked child before exec and only calls setsid(2),
    // which is async-signal-safe.
    unsafe {
        // A session of its own: no controlling terminal, no job-control signals from the
        // user's terminal (a Ctrl-C meant for deputy), and a group the stop can signal.
        command.pre_exec(|| {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    crate::exec::adopt_orphans();
    let (mut child, own) = crate::exec::OWN_CHILDREN
        .start(|| command.spawn(), Child::id)
        .map_err(|err| {
            if err.kind() == std::io::ErrorKind::NotFound {
                format!("`{}` was not found", program.to_string_lossy())
            } else {
                format!("cannot start `{}`: {err}", spec.command)
            }
        })?;
    let pid = child.id().and_then(|pid| i32::try_from(pid).ok());
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err("its stdio was not piped".into());
    };
    let stderr = child.stderr.take();
    Ok(Started {
        stdin,
        stdout,
        stderr,
        process: ServerProcess {
            child,
            pid,
            launched: launcher.is_some(),
            own: Some(own),
        },
    })
}

/// The server's environment: the base variables and those `env_vars` names, as deputy has
/// them, then `env`.
fn environment(env: &BTreeMap<String, String>, env_vars: &[String]) -> Vec<(OsString, OsString)> {
    let mut vars: BTreeMap<OsString, OsString> = BASE_ENV_VARS
        .iter()
        .copied()
        .chain(env_vars.iter().map(String::as_str))
        .filter_map(|name| std::env::var_os(name).map(|value| (OsString::from(name), value)))
        .collect();
    vars.extend(
        env.iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v))),
    );
    vars.into_iter().collect()
}

fn current_dir() -> Result<PathBuf, String> {
    std::env::current_dir().map_err(|e| format!("cannot read deputy's working directory: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_is_the_base_the_named_and_the_set_variables_only() {
        // SAFETY: tests of this module are the only readers of these two variables.
        unsafe {
            std::env::set_var("DEPUTY_MCP_TEST_PASSED", "yes");
            std::env::set_var("DEPUTY_MCP_TEST_SECRET", "no");
        }
        let env = BTreeMap::from([("EXTRA".to_string(), "1".to_string())]);
        let vars = environment(&env, &["DEPUTY_MCP_TEST_PASSED".to_string()]);
        let get = |name: &str| {
            vars.iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.to_string_lossy().into_owned())
        };
        assert_eq!(get("DEPUTY_MCP_TEST_PASSED").as_deref(), Some("yes"));
        assert_eq!(get("EXTRA").as_deref(), Some("1"));
        assert_eq!(get("DEPUTY_MCP_TEST_SECRET"), None);
        assert_eq!(get("PATH"), std::env::var("PATH").ok());
    }
}
