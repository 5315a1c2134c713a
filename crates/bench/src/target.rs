//! The servers under measurement and the throwaway homes they run in.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, PoisonError};

use anyhow::Context;
use deputy_test_support::TestHome;
use tempfile::TempDir;

/// Which implementation a binary is; they differ only in where they read their config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `deputy mcp-server`, configured through `DEPUTY_HOME`.
    Deputy,
    /// `codex mcp-server`, configured through `CODEX_HOME`.
    Codex,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Deputy => "deputy",
            Kind::Codex => "codex",
        })
    }
}

/// A server binary to benchmark.
#[derive(Debug, Clone)]
pub struct Target {
    /// Which implementation it is.
    pub kind: Kind,
    /// The executable, run as `<path> mcp-server`.
    pub path: PathBuf,
    /// An earlier deputy build, measured for a before/after column (`--before`).
    pub before: bool,
}

impl Target {
    /// The first line of `<path> --version`, for the report header.
    pub fn version(&self) -> String {
        Command::new(&self.path)
            .arg("--version")
            .output()
            .ok()
            .and_then(|out| String::from_utf8(out.stdout).ok())
            .and_then(|text| text.lines().next().map(str::to_owned))
            .unwrap_or_else(|| "unknown version".to_owned())
    }
}

/// A temporary home (`DEPUTY_HOME` or `CODEX_HOME`) whose `config.toml` points at the mock
/// model server, with a `workspace/` the server starts in. Deleted when the bench ends
/// ([`delete_finished_homes`]), not when its run does: see [`FINISHED`].
#[derive(Debug)]
pub struct Home {
    /// Always `Some` until dropped.
    dir: Option<TempDir>,
    workspace: PathBuf,
}

/// The homes of finished runs. On a filesystem that creates files slowly right after many
/// were deleted (ext4 without a journal passes over every inode freed in the last minute,
/// six while its inode table is not yet written back, when it picks one for a new file:
/// after one 1,000-session run's files were deleted, the next run's 1,000 creations took
/// 0.6 s of CPU instead of 15 ms), deleting a
/// run's home at its end taxes the next run, whichever server it measures, with a cost of
/// the bench's own making. So homes are kept until every run is over.
static FINISHED: Mutex<Vec<TempDir>> = Mutex::new(Vec::new());

/// Deletes the homes of the runs so far (call once every run is over).
pub fn delete_finished_homes() {
    let finished = std::mem::take(&mut *FINISHED.lock().unwrap_or_else(PoisonError::into_inner));
    drop(finished);
}

impl Drop for Home {
    fn drop(&mut self) {
        if let Some(dir) = self.dir.take() {
            FINISHED
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(dir);
        }
    }
}

impl Home {
    /// A home using the mock at `mock_base_url`: no approvals, no sandbox, no retries.
    pub fn new(mock_base_url: &str) -> anyhow::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("deputy-bench-home-")
            .tempdir()
            .context("creating a temporary home")?;
        let workspace = dir.path().join("workspace");
        fs::create_dir(&workspace).context("creating the workspace")?;
        fs::write(dir.path().join("config.toml"), config_text(mock_base_url))
            .context("writing config.toml")?;
        Ok(Self {
            dir: Some(dir),
            workspace,
        })
    }

    /// The home directory.
    pub fn path(&self) -> &Path {
        self.dir.as_ref().map_or(Path::new(""), TempDir::path)
    }

    /// Where the server runs and its commands start.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// `<target> mcp-server` with this home and a clean environment for it.
    pub fn command(&self, target: &Target) -> Command {
        self.command_for(target, "mcp-server")
    }

    /// `<target> <subcommand>` (a stdio front door) with this home and a clean
    /// environment for it.
    pub fn command_for(&self, target: &Target, subcommand: &str) -> Command {
        let mut cmd = Command::new(&target.path);
        cmd.arg(subcommand);
        for (name, _) in std::env::vars_os() {
            let name_text = name.to_string_lossy();
            if name_text.starts_with("DEPUTY_") || name_text.starts_with("CODEX_") {
                cmd.env_remove(&name);
            }
        }
        let home_var = match target.kind {
            Kind::Deputy => "DEPUTY_HOME",
            Kind::Codex => "CODEX_HOME",
        };
        cmd.env_remove("OPENAI_API_KEY")
            .env(home_var, self.path())
            // Login shells (`bash -lc`) read ~/.profile and ~/.bashrc; a developer's startup
            // files (pyenv, nvm…) can cost hundreds of milliseconds per command and would
            // drown what the servers themselves do.
            .env("HOME", self.path())
            // The same log level for both: logging is part of neither's hot path.
            .env("RUST_LOG", "warn")
            .current_dir(&self.workspace);
        cmd
    }
}

/// The config both servers read: the same keys mean the same thing in both.
pub fn config_text(mock_base_url: &str) -> String {
    TestHome::default_config(mock_base_url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_selects_the_mock_provider_without_approvals_or_sandbox() {
        let text = config_text("http://127.0.0.1:9/v1");
        for line in [
            "model_provider = \"mock\"",
            "approval_policy = \"never\"",
            "sandbox_mode = \"danger-full-access\"",
            "[model_providers.mock]",
            "base_url = \"http://127.0.0.1:9/v1\"",
            "wire_api = \"responses\"",
            "request_max_retries = 0",
            "stream_max_retries = 0",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "missing {line:?} in\n{text}"
            );
        }
    }

    #[test]
    fn command_points_the_right_home_variable_at_the_home() {
        let home = Home::new("http://127.0.0.1:9/v1").expect("home");
        for (kind, var) in [(Kind::Deputy, "DEPUTY_HOME"), (Kind::Codex, "CODEX_HOME")] {
            let target = Target {
                kind,
                path: PathBuf::from("/bin/true"),
                before: false,
            };
            let cmd = home.command(&target);
            let value = cmd
                .get_envs()
                .find(|(name, _)| *name == var)
                .and_then(|(_, value)| value);
            assert_eq!(value, Some(home.path().as_os_str()));
            assert_eq!(cmd.get_current_dir(), Some(home.workspace()));
            let args: Vec<_> = cmd.get_args().collect();
            assert_eq!(args, ["mcp-server"]);
        }
    }
}
