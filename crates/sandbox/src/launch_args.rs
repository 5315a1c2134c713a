//! The argv that re-executes deputy as the launcher, and its parsing on the other side.
//!
//! Format: `LAUNCHER --mode MODE --cwd DIR [--writable-root DIR]... [--network] -- CMD ARGS...`.
//! Paths travel as raw `OsString`s so non-UTF-8 names survive.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::policy::{SandboxMode, SandboxPolicy};

/// The hidden subcommand through which deputy re-executes itself to confine a command.
pub const LAUNCHER_SUBCOMMAND: &str = "__sandbox-exec";

/// The argv that runs `argv` in `cwd` under `policy`.
///
/// For a confined policy this is `[launcher_exe, LAUNCHER_SUBCOMMAND, flags…, "--", argv…]`;
/// for `FullAccess` it is `argv` unchanged (the caller sets the working directory itself).
pub fn wrap_command(
    launcher_exe: &Path,
    policy: &SandboxPolicy,
    cwd: &Path,
    argv: &[String],
) -> Vec<OsString> {
    if !policy.is_confined() {
        return argv.iter().map(OsString::from).collect();
    }
    let mut wrapped: Vec<OsString> = vec![
        launcher_exe.into(),
        LAUNCHER_SUBCOMMAND.into(),
        "--mode".into(),
        policy.mode.as_str().into(),
        "--cwd".into(),
        cwd.into(),
    ];
    for root in &policy.writable_roots {
        wrapped.push("--writable-root".into());
        wrapped.push(cwd.join(root).into());
    }
    if policy.network_access {
        wrapped.push("--network".into());
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
    /// `--mode` or `--cwd` was not given.
    #[error("launcher flag {0} is required")]
    Required(&'static str),
    /// Nothing after `--`.
    #[error("no command to run")]
    NoCommand,
}

/// What the launcher was asked to do: the policy, where to run, and the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchRequest {
    /// The confinement to apply.
    pub policy: SandboxPolicy,
    /// The directory the command runs in.
    pub cwd: PathBuf,
    /// The command and its arguments; never empty.
    pub argv: Vec<OsString>,
}

/// Parses the arguments that follow [`LAUNCHER_SUBCOMMAND`].
pub fn parse_launch_args(
    args: impl IntoIterator<Item = OsString>,
) -> Result<LaunchRequest, LaunchArgsError> {
    let mut args = args.into_iter();
    let mut mode = None;
    let mut cwd = None;
    let mut roots = Vec::new();
    let mut network = false;
    loop {
        let Some(flag) = args.next() else {
            return Err(LaunchArgsError::NoCommand);
        };
        match flag.to_str() {
            Some("--") => break,
            Some("--network") => network = true,
            Some("--mode") => {
                let value = args.next().ok_or(LaunchArgsError::MissingValue("--mode"))?;
                let parsed = value.to_str().and_then(SandboxMode::parse);
                mode = Some(parsed.ok_or(LaunchArgsError::UnknownMode(value))?);
            }
            Some("--cwd") => {
                cwd = Some(PathBuf::from(
                    args.next().ok_or(LaunchArgsError::MissingValue("--cwd"))?,
                ));
            }
            Some("--writable-root") => roots.push(PathBuf::from(
                args.next()
                    .ok_or(LaunchArgsError::MissingValue("--writable-root"))?,
            )),
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
    };
    Ok(LaunchRequest {
        policy,
        cwd: cwd.ok_or(LaunchArgsError::Required("--cwd"))?,
        argv,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn workspace_write_round_trips_through_the_launcher_flags() {
        let policy = SandboxPolicy {
            mode: SandboxMode::WorkspaceWrite,
            writable_roots: vec!["/w".into(), "/tmp".into()],
            network_access: true,
        };
        let argv = strings(&["bash", "-c", "echo -- --mode"]);
        let wrapped = wrap_command(Path::new("/bin/deputy"), &policy, Path::new("/w"), &argv);
        assert_eq!(wrapped[0], OsString::from("/bin/deputy"));
        assert_eq!(wrapped[1], OsString::from(LAUNCHER_SUBCOMMAND));
        let request = parse_launch_args(wrapped.into_iter().skip(2)).expect("parse");
        assert_eq!(request.policy, policy);
        assert_eq!(request.cwd, PathBuf::from("/w"));
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
        let request = parse_launch_args(wrapped.into_iter().skip(2)).expect("parse");
        assert_eq!(request.policy, policy);
    }

    #[test]
    fn full_access_is_the_bare_command() {
        let argv = strings(&["rm", "-rf", "build"]);
        let wrapped = wrap_command(
            Path::new("deputy"),
            &SandboxPolicy::full_access(),
            Path::new("/x"),
            &argv,
        );
        assert_eq!(wrapped, argv.iter().map(OsString::from).collect::<Vec<_>>());
    }

    #[test]
    fn relative_writable_roots_are_made_absolute_against_cwd() {
        let mut policy = SandboxPolicy::read_only();
        policy.mode = SandboxMode::WorkspaceWrite;
        policy.writable_roots = vec!["out".into()];
        let wrapped = wrap_command(
            Path::new("d"),
            &policy,
            Path::new("/proj"),
            &strings(&["true"]),
        );
        let request = parse_launch_args(wrapped.into_iter().skip(2)).expect("parse");
        assert_eq!(
            request.policy.writable_roots,
            vec![PathBuf::from("/proj/out")]
        );
    }

    #[test]
    fn bad_launcher_arguments_are_reported_not_run() {
        let parse = |items: &[&str]| parse_launch_args(items.iter().map(OsString::from));
        assert_eq!(
            parse(&["--mode", "read-only", "--cwd", "/", "--"]),
            Err(LaunchArgsError::NoCommand)
        );
        assert_eq!(
            parse(&["--mode", "sideways", "--cwd", "/", "--", "ls"]),
            Err(LaunchArgsError::UnknownMode("sideways".into()))
        );
        assert_eq!(
            parse(&["--cwd", "/", "--", "ls"]),
            Err(LaunchArgsError::Required("--mode"))
        );
        assert_eq!(
            parse(&["--mode", "read-only", "--", "ls"]),
            Err(LaunchArgsError::Required("--cwd"))
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
