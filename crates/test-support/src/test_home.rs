//! A throwaway `DEPUTY_HOME` wired to a mock model server, and commands that use it.

use std::ffi::OsStr;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

/// A temporary `DEPUTY_HOME` whose `config.toml` points at a mock model server, with a
/// `workspace/` directory for the agent to work in. Everything is deleted on drop.
#[derive(Debug)]
pub struct TestHome {
    dir: TempDir,
    workspace: PathBuf,
}

impl TestHome {
    /// A mock model that asks to run `command` through `shell_command` (as call `call_id`)
    /// and then says `then_says`, and a home configured for it.
    pub fn asked_to_run(
        call_id: &str,
        command: &str,
        then_says: &str,
    ) -> (crate::MockModelServer, Self) {
        let model = crate::MockModelServer::start();
        model.push_all([
            crate::MockResponse::function_call_turn(
                call_id,
                "shell_command",
                serde_json::json!({"command": command}),
            ),
            crate::MockResponse::text_turn(then_says),
        ]);
        let home = Self::new(&model.base_url());
        (model, home)
    }

    /// A home whose config is [`TestHome::default_config`] for `mock_base_url`.
    ///
    /// # Panics
    /// When the temporary directory or its files cannot be created.
    pub fn new(mock_base_url: &str) -> Self {
        match Self::try_new(mock_base_url) {
            Ok(home) => home,
            Err(err) => panic!("could not create a test DEPUTY_HOME: {err}"),
        }
    }

    /// Like [`TestHome::new`], reporting I/O failures.
    pub fn try_new(mock_base_url: &str) -> io::Result<Self> {
        let dir = tempfile::Builder::new().prefix("deputy-home-").tempdir()?;
        let workspace = dir.path().join("workspace");
        fs::create_dir(&workspace)?;
        fs::write(
            dir.path().join("config.toml"),
            Self::default_config(mock_base_url),
        )?;
        Ok(Self { dir, workspace })
    }

    /// The config every test home starts with: the `mock` provider at `mock_base_url`
    /// (Responses wire API, no retries), no approvals and no sandbox.
    ///
    /// It ends inside `[model_providers.mock]`, so keys appended after it belong to that
    /// provider; prepend top-level keys to this text and use [`TestHome::write_config`].
    pub fn default_config(mock_base_url: &str) -> String {
        format!(
            "model = \"mock-model\"\n\
             model_provider = \"mock\"\n\
             approval_policy = \"never\"\n\
             sandbox_mode = \"danger-full-access\"\n\
             [model_providers.mock]\n\
             name = \"Mock\"\n\
             base_url = {}\n\
             wire_api = \"responses\"\n\
             request_max_retries = 0\n\
             stream_max_retries = 0\n",
            toml_string(mock_base_url)
        )
    }

    /// The home directory, to pass as `DEPUTY_HOME`.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The `workspace/` directory inside the home; commands start there.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The path of `config.toml`.
    pub fn config_path(&self) -> PathBuf {
        self.dir.path().join("config.toml")
    }

    /// Appends `text` to `config.toml` on a line of its own.
    ///
    /// Keys land in the last table of the file (`[model_providers.mock]` by default).
    ///
    /// # Panics
    /// When the file cannot be written.
    pub fn append_config(&self, text: &str) {
        let path = self.config_path();
        let result = fs::read(&path).and_then(|existing| {
            let mut file = OpenOptions::new().append(true).open(&path)?;
            if !existing.is_empty() && !existing.ends_with(b"\n") {
                file.write_all(b"\n")?;
            }
            file.write_all(text.as_bytes())?;
            if !text.ends_with('\n') {
                file.write_all(b"\n")?;
            }
            Ok(())
        });
        if let Err(err) = result {
            panic!("could not append to {}: {err}", path.display());
        }
    }

    /// Replaces `config.toml` with `text`.
    ///
    /// # Panics
    /// When the file cannot be written.
    pub fn write_config(&self, text: &str) {
        let path = self.config_path();
        if let Err(err) = fs::write(&path, text) {
            panic!("could not write {}: {err}", path.display());
        }
    }

    /// A command running `bin` against this home, in the workspace directory.
    ///
    /// It sets `DEPUTY_HOME`, a private `HOME` (`<home>/home`) and `RUST_LOG=warn` (override with `.env("RUST_LOG", ..)`)
    /// and removes `OPENAI_API_KEY` and any other inherited `DEPUTY_*` variable, so the
    /// developer's own environment cannot leak into a test.
    pub fn command(&self, bin: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new(bin);
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().starts_with("DEPUTY_") {
                cmd.env_remove(&name);
            }
        }
        // A HOME of its own keeps login shells (`bash -lc`) away from the
        // user's profile, whose side effects (version managers, locks) would
        // make tests slow or flaky.
        let home = self.dir.path().join("home");
        let _ = std::fs::create_dir_all(&home);
        cmd.env_remove("OPENAI_API_KEY")
            .env("HOME", &home)
            .env("DEPUTY_HOME", self.dir.path())
            .env("RUST_LOG", "warn")
            .current_dir(&self.workspace);
        cmd
    }
}

/// `text` as a TOML basic string, quotes included.
fn toml_string(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for ch in text.chars() {
        match ch {
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            '\n' => quoted.push_str("\\n"),
            '\r' => quoted.push_str("\\r"),
            '\t' => quoted.push_str("\\t"),
            ch if ch.is_control() => quoted.push_str(&format!("\\u{:04X}", u32::from(ch))),
            ch => quoted.push(ch),
        }
    }
    quoted.push('"');
    quoted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_config_holds_the_mock_provider_url() {
        let config = TestHome::default_config("http://127.0.0.1:4242/v1");
        assert!(config.contains("[model_providers.mock]\n"));
        assert!(config.contains("base_url = \"http://127.0.0.1:4242/v1\"\n"));
        assert!(config.starts_with("model = \"mock-model\"\nmodel_provider = \"mock\"\n"));
    }

    #[test]
    fn toml_string_escapes_quotes_backslashes_and_controls() {
        assert_eq!(toml_string(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(toml_string("x\ny\u{1}"), "\"x\\ny\\u0001\"");
    }
}
