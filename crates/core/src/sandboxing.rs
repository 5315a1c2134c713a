//! The bridge from a thread's configuration to the sandbox crate.
//!
//! The policy comes from the session alone (its cwd, mode and `[sandbox_workspace_write]`),
//! never from the directory a command asks to run in: a `workdir` only says where the command
//! starts, so `"/"`, `".."` or a symlink out of the workspace widen nothing.

use std::ffi::OsString;
use std::path::Path;
use std::time::Duration;

use deputy_protocol::SandboxMode;
use deputy_sandbox::{SandboxPolicy, TmpRoots};

use crate::config::Config;
use crate::exec::ExecRequest;
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

/// The start-up sandbox probe's thread, until [`wait_for_sandbox_probe`] joins it.
static PROBE: std::sync::Mutex<Option<std::thread::JoinHandle<()>>> = std::sync::Mutex::new(None);

/// Starts the sandbox probe once per process, on a thread of its own, which logs what the
/// sandbox can do here. Front doors call it as they start, so that users see a missing
/// piece at once; the probe forks a child that tries to create namespaces (milliseconds of
/// kernel work), which no front door waits for before it answers. The first sandboxed
/// command finds the answer ready, or waits for the same probe.
pub fn start_sandbox_probe() {
    static STARTED: std::sync::Once = std::sync::Once::new();
    STARTED.call_once(|| {
        let spawned = std::thread::Builder::new()
            .name("sandbox-probe".into())
            .spawn(|| match deputy_sandbox::probe() {
                Ok(support) if support.namespaces => tracing::info!("sandbox: {support}"),
                Ok(support) => tracing::warn!("sandbox: {support}"),
                Err(why) => {
                    tracing::warn!("sandbox unavailable, sandboxed commands will not run: {why}")
                }
            });
        match spawned {
            Ok(handle) => *crate::sync::lock(&PROBE) = Some(handle),
            Err(err) => tracing::warn!("cannot probe the sandbox: {err}"),
        }
    });
}

/// Waits for the probe [`start_sandbox_probe`] started, if any, so that its log line is
/// not lost when the process exits: milliseconds at most (a child that only calls
/// `unshare`).
pub fn wait_for_sandbox_probe() {
    let probe = crate::sync::lock(&PROBE).take();
    if let Some(probe) = probe {
        // A panic there is not the caller's.
        let _ = probe.join();
    }
}

/// `Ok` when sandboxed commands can run here; else why not (fail closed). A probe still
/// running is waited for off the async runtime.
pub(crate) async fn availability(config: &Config) -> Result<(), String> {
    if config.sandbox_mode == SandboxMode::DangerFullAccess {
        return Ok(());
    }
    if config.sandbox_launcher.is_none() {
        return Err("no sandbox launcher is configured for this process".into());
    }
    let support = match deputy_sandbox::probed() {
        Some(known) => known,
        None => tokio::task::spawn_blocking(deputy_sandbox::probe)
            .await
            .map_err(|join| format!("the sandbox probe failed: {join}"))?,
    };
    support.map(|_| ()).map_err(|e| e.to_string())
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

/// The argv that runs `argv`, starting in `cwd`, in the read-only sandbox without network or
/// Unix sockets, whatever the thread's own mode: how deputy runs its own tools over content
/// the model may have written (a review's git). `Err` when the sandbox cannot be had here;
/// the caller must then not run `argv` at all.
pub(crate) fn confine_read_only(
    launcher: Option<&Path>,
    cwd: &Path,
    argv: &[String],
) -> Result<Vec<OsString>, String> {
    let launcher = launcher.ok_or("no sandbox launcher is configured for this process")?;
    deputy_sandbox::probe().map_err(|e| e.to_string())?;
    Ok(deputy_sandbox::wrap_command(
        launcher,
        &SandboxPolicy::read_only(),
        cwd,
        argv,
    ))
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

/// The request that runs the model's `argv`, starting in `cwd`: confined by the thread's
/// policy when `sandboxed` (`Err` as for [`confine`]), else [`unconfined`].
pub(crate) fn exec_request(
    config: &Config,
    sandboxed: bool,
    cwd: &Path,
    argv: &[String],
    timeout: Duration,
) -> Result<ExecRequest, String> {
    let argv = if sandboxed {
        confine(config, cwd, argv)?
    } else {
        unconfined(config, cwd, argv)
    };
    Ok(ExecRequest {
        argv,
        cwd: cwd.to_path_buf(),
        timeout,
        env: config.shell_environment_policy.environment(),
        // Both wrap the command in the launcher exactly when there is one.
        supervised: config.sandbox_launcher.is_some(),
    })
}

fn to_strings(argv: Vec<std::ffi::OsString>) -> Vec<String> {
    argv.into_iter()
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect()
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

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::config::ConfigLayers;

    /// A workspace-write config for a session in a fresh directory, with `settings` as the
    /// `[sandbox_workspace_write]` table.
    fn workspace_write(settings: &str) -> (tempfile::TempDir, Config) {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::write(
            home.join("config.toml"),
            format!("sandbox_mode = \"workspace-write\"\n[sandbox_workspace_write]\n{settings}"),
        )
        .unwrap();
        let mut layers = ConfigLayers::new(home);
        layers.overrides.cwd = Some(ws);
        let mut config = layers.load().unwrap();
        config.sandbox_launcher = Some(PathBuf::from("/usr/bin/deputy"));
        (dir, config)
    }

    fn has_slash_tmp(policy: &SandboxPolicy) -> bool {
        policy.writable_roots.contains(&PathBuf::from("/tmp"))
    }

    #[test]
    fn exclude_slash_tmp_and_exclude_tmpdir_act_independently() {
        let tmpdir_is_slash_tmp = std::env::var_os("TMPDIR").is_some_and(|d| d == "/tmp");
        let (_dir, only_tmp_excluded) = workspace_write("exclude_slash_tmp = true\n");
        assert_eq!(
            has_slash_tmp(&policy(&only_tmp_excluded)),
            tmpdir_is_slash_tmp
        );
        let (_dir, only_tmpdir_excluded) = workspace_write("exclude_tmpdir_env_var = true\n");
        let roots = policy(&only_tmpdir_excluded).writable_roots;
        assert!(roots.contains(&PathBuf::from("/tmp")));
        assert_eq!(roots.len(), 2, "{roots:?}");
        let (_dir, both) =
            workspace_write("exclude_slash_tmp = true\nexclude_tmpdir_env_var = true\n");
        assert_eq!(policy(&both).writable_roots, vec![both.cwd.clone()]);
    }

    #[test]
    fn unix_sockets_are_refused_unless_allowed() {
        let (_dir, config) = workspace_write("");
        assert!(policy(&config).unix_sockets_disabled());
        let (_dir, config) = workspace_write("allow_unix_sockets = true\n");
        assert!(!policy(&config).unix_sockets_disabled());
    }

    #[test]
    fn the_command_s_directory_grants_nothing() {
        let (_dir, config) =
            workspace_write("exclude_slash_tmp = true\nexclude_tmpdir_env_var = true\n");
        for workdir in ["/", "/etc", "/root"] {
            let argv = confine(&config, Path::new(workdir), &["true".to_string()]).unwrap();
            let request =
                deputy_sandbox::parse_launch_args(argv.iter().skip(2).map(OsString::from)).unwrap();
            assert_eq!(request.cwd, PathBuf::from(workdir));
            assert_eq!(request.policy.writable_roots, vec![config.cwd.clone()]);
        }
    }

    #[test]
    fn patches_do_not_write_the_real_tmp_unasked() {
        let (_dir, config) = workspace_write("");
        let roots = writable_roots(&config);
        assert!(!roots.allows(Path::new("/tmp/notes.txt")));
        assert!(roots.allows(&config.cwd.join("notes.txt")));
    }

    #[test]
    fn unconfined_commands_are_still_supervised_by_the_launcher() {
        let (_dir, config) = workspace_write("");
        let argv = unconfined(&config, Path::new("/"), &["true".to_string()]);
        assert_eq!(argv[0], "/usr/bin/deputy");
        assert_eq!(argv[1], deputy_sandbox::LAUNCHER_SUBCOMMAND);
        let mut bare = config.clone();
        bare.sandbox_launcher = None;
        assert_eq!(
            unconfined(&bare, Path::new("/"), &["true".to_string()]),
            ["true"]
        );
    }
}
