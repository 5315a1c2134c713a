//! Which program launches commands, the argv that runs a command through it, and its
//! parsing on the other side.
//!
//! Format: `LAUNCHER [--build ID] --mode MODE --cwd DIR --parent-pid PID [--writable-root DIR]...
//! [--network] [--allow-unix-sockets] [--private-tmp DIR] [--without-namespaces] -- CMD ARGS...`.
//! [`wrap_command`] always gives `--build` ([`LAUNCHER_BUILD`]); a launcher whose own differs
//! refuses, so a stand-alone launcher left from another build never runs a command.
//! `--without-namespaces` is never produced by [`wrap_command`]: it forces the supervision
//! used where the kernel has no namespaces, so that tests can exercise it anywhere.
//! Paths travel as raw `OsString`s so non-UTF-8 names survive; every path must be absolute,
//! so that `--cwd` is only where the command starts, never what its roots are relative to.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::policy::{SandboxMode, SandboxPolicy};

/// The hidden subcommand through which deputy re-executes itself to run a command; the
/// stand-alone launcher takes the same arguments, this one first.
pub const LAUNCHER_SUBCOMMAND: &str = "__sandbox-exec";

/// The file name of deputy's stand-alone launcher, built and installed beside `deputy`: the
/// launcher without the rest of deputy, a fiftieth of its code, which adds about 0.3 ms less
/// to every command (`deputy-bench`'s launcher workload: 1.10 → 0.78 ms).
pub const LAUNCHER_BINARY: &str = "deputy-sandbox-exec";

/// The identity of the launcher code in this build: a hash of `deputy-sandbox`'s sources, its
/// manifest and the lockfile (`build.rs`). Binaries built from the same sources agree.
pub const LAUNCHER_BUILD: &str = env!("DEPUTY_LAUNCHER_BUILD");

/// The program that launches commands for the process whose executable is `exe`: the
/// stand-alone launcher in the same directory when there is one, else `exe` itself
/// (which must hand [`LAUNCHER_SUBCOMMAND`] to `launcher_main`). A stand-alone launcher
/// with other launcher code (another build) refuses every command: see [`LAUNCHER_BUILD`].
pub fn launcher_for(exe: &Path) -> PathBuf {
    let beside = exe.with_file_name(LAUNCHER_BINARY);
    match std::fs::metadata(&beside) {
        Ok(meta) if is_executable_file(&meta) => beside,
        _ => exe.to_path_buf(),
    }
}

fn is_executable_file(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.is_file() && meta.permissions().mode() & 0o111 != 0
}

/// The launcher of this process ([`launcher_for`] its own executable), opened once and held
/// open for the life of the process, named by the path that executes exactly the file opened:
/// `/proc/self/fd/N`, which resolves in the child that execs it (a child holds its parent's
/// descriptors until its exec closes them). A file renamed over the launcher or over deputy
/// afterwards — by a command allowed to write where deputy's binaries lie, or by a rebuild of
/// deputy — is never what a command starts under: every command runs under the binaries
/// deputy started with. `None` when this process's executable cannot be opened (no `/proc`):
/// then nothing runs confined.
pub fn own_launcher() -> Option<PathBuf> {
    static PINNED: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    PINNED.get_or_init(|| pin_own_launcher().ok()).clone()
}

#[cfg(target_os = "linux")]
fn pin_own_launcher() -> std::io::Result<PathBuf> {
    use std::os::fd::{IntoRawFd, OwnedFd};
    use std::os::unix::fs::OpenOptionsExt;
    // O_PATH: held only to be executed, so a launcher without read permission still works.
    let open = |path: &Path| {
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_CLOEXEC)
            .open(path)
    };
    let own = std::env::current_exe()?;
    let beside = open(&own.with_file_name(LAUNCHER_BINARY))
        .ok()
        .filter(|file| file.metadata().is_ok_and(|meta| is_executable_file(&meta)));
    let file = match beside {
        Some(file) => file,
        // The file this process was started from, whatever its path names now.
        None => open(Path::new("/proc/self/exe"))?,
    };
    // Never closed: commands start under it for as long as this process runs.
    let fd = OwnedFd::from(file).into_raw_fd();
    Ok(PathBuf::from(format!("/proc/self/fd/{fd}")))
}

#[cfg(not(target_os = "linux"))]
fn pin_own_launcher() -> std::io::Result<PathBuf> {
    Ok(launcher_for(&std::env::current_exe()?))
}

/// The argv that runs `argv` in `cwd` under `policy`, supervised by `launcher_exe` (see
/// [`launcher_for`]) whose parent must be this process.
///
/// Every mode goes through the launcher: confined modes to be confined, `FullAccess` to be
/// supervised (its own session, killed with everything it started when it ends or deputy dies).
pub fn wrap_command(
    launcher_exe: &Path,
    policy: &SandboxPolicy,
    cwd: &Path,
    argv: &[String],
) -> Vec<OsString> {
    let mut wrapped: Vec<OsString> = vec![
        launcher_exe.into(),
        LAUNCHER_SUBCOMMAND.into(),
        "--build".into(),
        LAUNCHER_BUILD.into(),
        "--mode".into(),
        policy.mode.as_str().into(),
        "--cwd".into(),
        cwd.into(),
        "--parent-pid".into(),
        std::process::id().to_string().into(),
    ];
    for root in &policy.writable_roots {
        wrapped.push("--writable-root".into());
        wrapped.push(root.into());
    }
    if policy.network_access {
        wrapped.push("--network".into());
    }
    if policy.allow_unix_sockets {
        wrapped.push("--allow-unix-sockets".into());
    }
    if let Some(dir) = &policy.private_tmp {
        wrapped.push("--private-tmp".into());
        wrapped.push(dir.into());
    }
    wrapped.push("--".into());
    wrapped.extend(argv.iter().map(OsString::from));
    wrapped
}

/// Why the launcher's own arguments could not be understood.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum LaunchArgsError {
    /// A flag that this launcher does not know.
    #[error("unknown launcher flag {0:?}")]
    UnknownFlag(OsString),
    /// A flag given without the value it needs.
    #[error("launcher flag {0} needs a value")]
    MissingValue(&'static str),
    /// `--mode` named no known mode.
    #[error("unknown sandbox mode {0:?}")]
    UnknownMode(OsString),
    /// `--parent-pid` was not a process id.
    #[error("invalid parent pid {0:?}")]
    InvalidPid(OsString),
    /// A path flag was given a relative path.
    #[error("launcher flag {flag} needs an absolute path, got {path:?}")]
    RelativePath {
        /// The flag.
        flag: &'static str,
        /// The path given.
        path: PathBuf,
    },
    /// `--mode`, `--cwd` or `--parent-pid` was not given.
    #[error("launcher flag {0} is required")]
    Required(&'static str),
    /// Nothing after `--`.
    #[error("no command to run")]
    NoCommand,
    /// `--build` named other launcher code than this launcher's.
    #[error(
        "this launcher's code (build {LAUNCHER_BUILD}) is not that of the deputy that started it \
         (build {0:?}): build and install deputy and {LAUNCHER_BINARY} together \
         (`cargo build --release -p deputy-cli`, `cargo install --path crates/cli`)"
    )]
    OtherBuild(OsString),
}

/// What the launcher was asked to do: the policy, where to run, and the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchRequest {
    /// The confinement to apply.
    pub policy: SandboxPolicy,
    /// The directory the command starts in (absolute); it grants nothing.
    pub cwd: PathBuf,
    /// The process that spawned the launcher; the launcher gives up if that is no longer its
    /// parent, and the command dies with it.
    pub parent_pid: u32,
    /// The command and its arguments; never empty.
    pub argv: Vec<OsString>,
    /// Whether to try namespaces at all (`false` only for `--without-namespaces`).
    pub use_namespaces: bool,
}

/// Parses the arguments that follow [`LAUNCHER_SUBCOMMAND`].
pub fn parse_launch_args(
    args: impl IntoIterator<Item = OsString>,
) -> Result<LaunchRequest, LaunchArgsError> {
    let mut args = args.into_iter();
    let mut mode = None;
    let mut cwd = None;
    let mut parent_pid = None;
    let mut roots = Vec::new();
    let mut network = false;
    let mut unix_sockets = false;
    let mut private_tmp = None;
    let mut use_namespaces = true;
    loop {
        let Some(flag) = args.next() else {
            return Err(LaunchArgsError::NoCommand);
        };
        match flag.to_str() {
            Some("--") => break,
            Some("--network") => network = true,
            Some("--allow-unix-sockets") => unix_sockets = true,
            Some("--without-namespaces") => use_namespaces = false,
            Some("--build") => {
                let value = args
                    .next()
                    .ok_or(LaunchArgsError::MissingValue("--build"))?;
                if value != LAUNCHER_BUILD {
                    return Err(LaunchArgsError::OtherBuild(value));
                }
            }
            Some("--mode") => {
                let value = args.next().ok_or(LaunchArgsError::MissingValue("--mode"))?;
                let parsed = value.to_str().and_then(SandboxMode::parse);
                mode = Some(parsed.ok_or(LaunchArgsError::UnknownMode(value))?);
            }
            Some("--parent-pid") => {
                let value = args
                    .next()
                    .ok_or(LaunchArgsError::MissingValue("--parent-pid"))?;
                let parsed = value.to_str().and_then(|v| v.parse::<u32>().ok());
                parent_pid = Some(
                    parsed
                        .filter(|pid| *pid > 0)
                        .ok_or(LaunchArgsError::InvalidPid(value))?,
                );
            }
            Some("--cwd") => cwd = Some(absolute_path("--cwd", args.next())?),
            Some("--writable-root") => roots.push(absolute_path("--writable-root", args.next())?),
            Some("--private-tmp") => {
                private_tmp = Some(absolute_path("--private-tmp", args.next())?);
            }
            _ => return Err(LaunchArgsError::UnknownFlag(flag)),
        }
    }
    let argv: Vec<OsString> = args.collect();
    if argv.is_empty() || argv[0].is_empty() {
        return Err(LaunchArgsError::NoCommand);
    }
    let policy = SandboxPolicy {
        mode: mode.ok_or(LaunchArgsError::Required("--mode"))?,
        writable_roots: roots,
        network_access: network,
        allow_unix_sockets: unix_sockets,
        private_tmp,
    };
    Ok(LaunchRequest {
        policy,
        cwd: cwd.ok_or(LaunchArgsError::Required("--cwd"))?,
        parent_pid: parent_pid.ok_or(LaunchArgsError::Required("--parent-pid"))?,
        argv,
        use_namespaces,
    })
}

/// The value of a path flag, which must be absolute.
fn absolute_path(flag: &'static str, value: Option<OsString>) -> Result<PathBuf, LaunchArgsError> {
    let path = PathBuf::from(value.ok_or(LaunchArgsError::MissingValue(flag))?);
    if path.is_absolute() {
        Ok(path)
    } else {
        Err(LaunchArgsError::RelativePath { flag, path })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::TmpRoots;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn workspace_write_round_trips_through_the_launcher_flags() {
        let policy = SandboxPolicy {
            mode: SandboxMode::WorkspaceWrite,
            writable_roots: vec!["/w".into(), "/tmp".into()],
            network_access: true,
            allow_unix_sockets: true,
            private_tmp: Some("/home/u/.deputy/tmp/t1".into()),
        };
        let argv = strings(&["bash", "-c", "echo -- --mode"]);
        let wrapped = wrap_command(Path::new("/bin/deputy"), &policy, Path::new("/w"), &argv);
        assert_eq!(wrapped[0], OsString::from("/bin/deputy"));
        assert_eq!(wrapped[1], OsString::from(LAUNCHER_SUBCOMMAND));
        let request = parse_launch_args(wrapped.into_iter().skip(2)).expect("parse");
        assert_eq!(request.policy, policy);
        assert_eq!(request.cwd, PathBuf::from("/w"));
        assert_eq!(request.parent_pid, std::process::id());
        assert!(request.use_namespaces);
        assert_eq!(
            request.argv,
            argv.iter().map(OsString::from).collect::<Vec<_>>()
        );
    }

    #[test]
    fn read_only_without_network_round_trips() {
        let policy = SandboxPolicy::read_only();
        let wrapped = wrap_command(
            Path::new("deputy"),
            &policy,
            Path::new("/x"),
            &strings(&["ls"]),
        );
        assert!(!wrapped.contains(&OsString::from("--network")));
        assert!(!wrapped.contains(&OsString::from("--allow-unix-sockets")));
        let request = parse_launch_args(wrapped.into_iter().skip(2)).expect("parse");
        assert_eq!(request.policy, policy);
    }

    #[test]
    fn full_access_is_supervised_by_the_launcher_too() {
        let argv = strings(&["rm", "-rf", "build"]);
        let wrapped = wrap_command(
            Path::new("deputy"),
            &SandboxPolicy::full_access(),
            Path::new("/x"),
            &argv,
        );
        assert_eq!(wrapped[1], OsString::from(LAUNCHER_SUBCOMMAND));
        let request = parse_launch_args(wrapped.into_iter().skip(2)).expect("parse");
        assert_eq!(request.policy, SandboxPolicy::full_access());
        assert_eq!(
            request.argv,
            argv.iter().map(OsString::from).collect::<Vec<_>>()
        );
    }

    #[test]
    fn roots_stay_those_of_the_policy_whatever_the_cwd() {
        let policy = SandboxPolicy::workspace_write(
            Path::new("/proj"),
            ["out".into()],
            false,
            TmpRoots::NONE,
        );
        let wrapped = wrap_command(Path::new("d"), &policy, Path::new("/"), &strings(&["true"]));
        let request = parse_launch_args(wrapped.into_iter().skip(2)).expect("parse");
        assert_eq!(request.cwd, PathBuf::from("/"));
        assert_eq!(
            request.policy.writable_roots,
            vec![PathBuf::from("/proj"), PathBuf::from("/proj/out")]
        );
    }

    #[test]
    fn the_launch_names_this_build_and_a_launcher_of_another_refuses_it() {
        let policy = SandboxPolicy::read_only();
        let wrapped = wrap_command(
            Path::new("/bin/deputy"),
            &policy,
            Path::new("/"),
            &["ls".to_string()],
        );
        assert_eq!(
            wrapped[2..4],
            ["--build", LAUNCHER_BUILD].map(OsString::from)
        );
        assert!(parse_launch_args(wrapped.iter().skip(2).cloned()).is_ok());
        let mut other = wrapped;
        other[3] = "0123456789abcdef".into();
        assert_eq!(
            parse_launch_args(other.into_iter().skip(2)),
            Err(LaunchArgsError::OtherBuild("0123456789abcdef".into()))
        );
        // Run by hand (tests, the bench), without `--build`: checked as before.
        let by_hand = [
            "--mode",
            "read-only",
            "--cwd",
            "/",
            "--parent-pid",
            "1",
            "--",
            "ls",
        ];
        assert!(parse_launch_args(by_hand.iter().map(OsString::from)).is_ok());
    }

    #[test]
    fn bad_launcher_arguments_are_reported_not_run() {
        let parse = |items: &[&str]| parse_launch_args(items.iter().map(OsString::from));
        let ok = ["--mode", "read-only", "--cwd", "/", "--parent-pid", "1"];
        let with = |extra: &[&'static str]| -> Vec<&'static str> {
            ok.iter().copied().chain(extra.iter().copied()).collect()
        };
        assert_eq!(parse(&with(&["--"])), Err(LaunchArgsError::NoCommand));
        assert!(parse(&with(&["--", "ls"])).is_ok());
        let forced = parse(&with(&["--without-namespaces", "--", "ls"])).expect("parse");
        assert!(!forced.use_namespaces);
        assert_eq!(
            parse(&["--mode", "sideways", "--cwd", "/", "--", "ls"]),
            Err(LaunchArgsError::UnknownMode("sideways".into()))
        );
        assert_eq!(
            parse(&["--cwd", "/", "--parent-pid", "1", "--", "ls"]),
            Err(LaunchArgsError::Required("--mode"))
        );
        assert_eq!(
            parse(&["--mode", "read-only", "--parent-pid", "1", "--", "ls"]),
            Err(LaunchArgsError::Required("--cwd"))
        );
        assert_eq!(
            parse(&["--mode", "read-only", "--cwd", "/", "--", "ls"]),
            Err(LaunchArgsError::Required("--parent-pid"))
        );
        assert_eq!(
            parse(&["--parent-pid", "0"]),
            Err(LaunchArgsError::InvalidPid("0".into()))
        );
        assert_eq!(
            parse(&["--parent-pid", "-3"]),
            Err(LaunchArgsError::InvalidPid("-3".into()))
        );
        assert_eq!(
            parse(&with(&["--writable-root", "rel", "--", "ls"])),
            Err(LaunchArgsError::RelativePath {
                flag: "--writable-root",
                path: "rel".into()
            })
        );
        assert_eq!(
            parse(&["--cwd", "."]),
            Err(LaunchArgsError::RelativePath {
                flag: "--cwd",
                path: ".".into()
            })
        );
        assert_eq!(
            parse(&with(&["--private-tmp", "t", "--", "ls"])),
            Err(LaunchArgsError::RelativePath {
                flag: "--private-tmp",
                path: "t".into()
            })
        );
        assert_eq!(
            parse(&["--frobnicate"]),
            Err(LaunchArgsError::UnknownFlag("--frobnicate".into()))
        );
        assert_eq!(
            parse(&["--mode"]),
            Err(LaunchArgsError::MissingValue("--mode"))
        );
        assert_eq!(parse(&[]), Err(LaunchArgsError::NoCommand));
    }
}
