//! How a review starts git: confined, and with every program the repository can name
//! switched off.
//!
//! A review reads a repository whose `.git/config` and `.gitattributes` whoever wrote the
//! repository controls; a command under `workspace-write` can even create them (`git init`
//! where there was no `.git`, then a config). Configuration can make git run programs: a
//! filter driver named by an attribute runs on every diff of the worktree, `gpg.program` on
//! every log of a signed commit, `core.fsmonitor` on every index refresh. Two layers keep
//! them from running as the user, each enough for what it covers:
//!
//! - Every call runs in the read-only sandbox without network, whatever the session's own
//!   mode. Where that sandbox cannot be had the review fails; it never runs git unconfined.
//! - Every call switches off what starts programs: each filter driver defined in any
//!   configuration gets an empty `clean`/`smudge`/`process` (attributes still apply, so
//!   `binary`, `-diff` and line endings keep their meaning), external diff and textconv are
//!   off by flag, and [`FIXED_CONFIG`] turns off fsmonitor, hooks, signature checks, the
//!   pager, fetching and submodule recursion. git's environment is an allowlist, so nothing
//!   like `GIT_EXTERNAL_DIFF` or `GIT_SSH_COMMAND` comes in from deputy's own.
//!
//! The overrides travel as `GIT_CONFIG_COUNT`/`GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n`, not as
//! `-c name=value`, because a driver name may itself contain `=`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use super::git::ReviewGitError;

/// Configuration every call gets, read after the repository's own so that it wins.
const FIXED_CONFIG: &[(&str, &str)] = &[
    ("core.fsmonitor", "false"),
    ("core.hooksPath", "/dev/null"),
    ("core.pager", "cat"),
    ("core.quotePath", "off"),
    ("core.sshCommand", "false"),
    ("credential.helper", ""),
    ("gpg.program", "false"),
    ("gpg.openpgp.program", "false"),
    ("gpg.x509.program", "false"),
    ("gpg.ssh.program", "false"),
    ("log.showSignature", "false"),
    ("protocol.allow", "never"),
    ("submodule.recurse", "false"),
];

/// Environment every call gets.
const FIXED_ENV: &[(&str, &str)] = &[
    ("GIT_TERMINAL_PROMPT", "0"),
    // Reading never takes the index lock (which a read-only sandbox would refuse anyway).
    ("GIT_OPTIONAL_LOCKS", "0"),
    ("GIT_NO_LAZY_FETCH", "1"),
    ("GIT_PAGER", "cat"),
];

/// deputy's own variables git may see: where it finds the user's configuration and the
/// repository, and the locale.
const INHERITED_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "XDG_CONFIG_HOME",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TZ",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_NOSYSTEM",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_COMMON_DIR",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
];

/// The settings of a filter driver that name programs, blanked for every driver found.
const FILTER_PROGRAMS: &[&str] = &["clean", "smudge", "process"];

/// The exit status of the launcher when it refused to run the command.
const SANDBOX_REFUSED: i32 = deputy_sandbox::SANDBOX_UNAVAILABLE_EXIT_CODE;

/// How the calls are started.
#[derive(Debug, Clone)]
enum Confinement {
    /// Through the sandbox launcher (deputy's own executable), when there is one.
    Sandbox(Option<PathBuf>),
    /// Unconfined, so that tests see the second layer alone.
    #[cfg(test)]
    None,
}

/// Starts a review's git commands.
#[derive(Debug, Clone)]
pub(super) struct Git {
    confinement: Confinement,
    /// Command-scope configuration: [`FIXED_CONFIG`], then the blanked filter drivers.
    config: Vec<(String, String)>,
}

impl Git {
    /// Calls confined by the launcher `launcher` (none: every call fails).
    pub(super) fn confined(launcher: Option<PathBuf>) -> Self {
        Self::new(Confinement::Sandbox(launcher))
    }

    /// Calls with the neutralising configuration only.
    #[cfg(test)]
    pub(super) fn unconfined() -> Self {
        Self::new(Confinement::None)
    }

    fn new(confinement: Confinement) -> Self {
        let config = FIXED_CONFIG
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect();
        Self {
            confinement,
            config,
        }
    }

    /// Blanks every filter driver that a configuration visible from `dir` defines.
    pub(super) async fn blank_filter_drivers(&mut self, dir: &Path) -> Result<(), ReviewGitError> {
        let args = [
            "config",
            "--null",
            "--name-only",
            "--get-regexp",
            r"^filter\.",
        ];
        let out = self.output(dir, &git_argv(&args)).await?;
        match out.status.code() {
            Some(0) => {}
            // No such key.
            Some(1) => return Ok(()),
            _ => return Err(failure(&args, &out)),
        }
        let names = String::from_utf8_lossy(&out.stdout).into_owned();
        for driver in filter_drivers(&names) {
            for program in FILTER_PROGRAMS {
                self.config
                    .push((format!("filter.{driver}.{program}"), String::new()));
            }
            // A required filter that does not run would fail the diff.
            self.config
                .push((format!("filter.{driver}.required"), "false".to_string()));
        }
        Ok(())
    }

    /// Runs `git ARGS` in `dir` and returns its stdout, or an error with its stderr.
    pub(super) async fn run(&self, dir: &Path, args: &[&str]) -> Result<String, ReviewGitError> {
        let out = self.output(dir, &git_argv(args)).await?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(failure(args, &out))
        }
    }

    /// Runs `argv` (git, or a shell running git) in `dir` with the neutralising environment,
    /// confined; the sandbox refusing is an error, any other exit status is the caller's.
    pub(super) async fn output(
        &self,
        dir: &Path,
        argv: &[String],
    ) -> Result<Output, ReviewGitError> {
        let argv: Vec<OsString> = match &self.confinement {
            Confinement::Sandbox(launcher) => {
                crate::sandboxing::confine_read_only(launcher.as_deref(), dir, argv)
                    .map_err(ReviewGitError::Sandbox)?
            }
            #[cfg(test)]
            Confinement::None => argv.iter().map(OsString::from).collect(),
        };
        let (program, args) = argv.split_first().ok_or_else(|| ReviewGitError::Git {
            args: String::new(),
            message: "nothing to run".to_string(),
        })?;
        let mut command = tokio::process::Command::new(program);
        command
            .args(args)
            .current_dir(dir)
            .env_clear()
            .envs(
                INHERITED_ENV
                    .iter()
                    .filter_map(|name| Some((*name, std::env::var_os(name)?))),
            )
            .envs(FIXED_ENV.iter().copied())
            .env("GIT_CONFIG_COUNT", self.config.len().to_string())
            .stdin(Stdio::null())
            // A review dropped on cancellation takes its git with it.
            .kill_on_drop(true);
        for (index, (key, value)) in self.config.iter().enumerate() {
            command
                .env(format!("GIT_CONFIG_KEY_{index}"), key)
                .env(format!("GIT_CONFIG_VALUE_{index}"), value);
        }
        let out = command.output().await.map_err(|e| ReviewGitError::Git {
            args: args_text(&argv),
            message: e.to_string(),
        })?;
        if matches!(self.confinement, Confinement::Sandbox(_))
            && out.status.code() == Some(SANDBOX_REFUSED)
        {
            return Err(ReviewGitError::Sandbox(
                String::from_utf8_lossy(&out.stderr).trim().to_string(),
            ));
        }
        Ok(out)
    }
}

/// `git` with `args`: no pager, and for the subcommands that print diffs or commits, the
/// flags that keep external diff, textconv, submodule diffs and signature checks off.
pub(super) fn git_argv(args: &[&str]) -> Vec<String> {
    let (subcommand, rest) = args.split_first().unwrap_or((&"", &[]));
    let extra: &[&str] = match *subcommand {
        "diff" | "show" => &[
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--ignore-submodules=dirty",
            "--submodule=short",
        ],
        _ => &[],
    };
    let signatures: &[&str] = match *subcommand {
        "log" | "show" => &["--no-show-signature"],
        _ => &[],
    };
    ["git", "--no-pager", subcommand]
        .iter()
        .chain(extra)
        .chain(signatures)
        .chain(rest)
        .map(|arg| arg.to_string())
        .collect()
}

/// The driver names in `git config --null --name-only` output of `filter.*` keys
/// (`filter.<driver>.<key>`; the driver may contain dots), each once.
fn filter_drivers(names: &str) -> Vec<&str> {
    let mut drivers: Vec<&str> = Vec::new();
    for name in names.split('\0') {
        let driver = name
            .strip_prefix("filter.")
            .and_then(|rest| rest.rsplit_once('.'))
            .map(|(driver, _key)| driver);
        if let Some(driver) = driver
            && !drivers.contains(&driver)
        {
            drivers.push(driver);
        }
    }
    drivers
}

/// The error for a git call that failed.
pub(super) fn failure(args: &[&str], out: &Output) -> ReviewGitError {
    ReviewGitError::Git {
        args: args.join(" "),
        message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
    }
}

fn args_text(argv: &[OsString]) -> String {
    argv.iter()
        .map(|arg| arg.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_names_keep_their_dots_and_equals_signs() {
        let names = "filter.lfs.clean\0filter.lfs.process\0filter.a.b=c.smudge\0filter.clean\0";
        assert_eq!(filter_drivers(names), ["lfs", "a.b=c"]);
    }

    #[test]
    fn diffs_and_logs_get_the_flags_that_keep_programs_off() {
        let show = git_argv(&["show", "--format=", "abc"]);
        for flag in [
            "--no-pager",
            "--no-ext-diff",
            "--no-textconv",
            "--no-show-signature",
        ] {
            assert!(show.iter().any(|arg| arg == flag), "{flag}: {show:?}");
        }
        assert_eq!(show.last().map(String::as_str), Some("abc"));
        let log = git_argv(&["log", "-1"]);
        assert_eq!(
            log,
            ["git", "--no-pager", "log", "--no-show-signature", "-1"]
        );
    }
}
