//! A Python virtual environment with the official MCP SDK, for interoperability tests, and
//! with `lark`, to check the patch grammar deputy sends the model.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::tool_setup::{lock_exclusive, run, workspace_root};

/// The MCP SDK release the interoperability tests are written against.
pub const MCP_SDK_REQUIREMENT: &str = "mcp==2.3.0";

/// The Lark parser release the grammar test uses (the format OpenAI's grammars are written in).
pub const LARK_REQUIREMENT: &str = "lark==1.3.1";

/// The python of `<workspace>/target/test-venv`, creating it with the MCP SDK if needed.
///
/// Safe to call from many test threads and processes at once: creation happens under an
/// exclusive lock on `target/test-venv.lock`, and an environment where `import mcp`
/// already works is used as it is.
pub fn python_with_mcp() -> Result<PathBuf, String> {
    python_with("mcp", MCP_SDK_REQUIREMENT)
}

/// The python of `<workspace>/target/test-venv`, with `lark` installed if needed (as for
/// [`python_with_mcp`]).
pub fn python_with_lark() -> Result<PathBuf, String> {
    python_with("lark", LARK_REQUIREMENT)
}

/// The python of `<workspace>/target/test-venv` once `import module` works in it,
/// installing `requirement` under the lock when it does not.
fn python_with(module: &str, requirement: &str) -> Result<PathBuf, String> {
    let root = workspace_root()?;
    let target = root.join("target");
    let venv = target.join("test-venv");
    let python = venv.join("bin").join("python");
    if imports(&python, module) {
        return Ok(python);
    }
    fs::create_dir_all(&target)
        .map_err(|err| format!("could not create {}: {err}", target.display()))?;
    let lock_path = target.join("test-venv.lock");
    let _lock = lock_exclusive(&lock_path)
        .map_err(|err| format!("could not lock {}: {err}", lock_path.display()))?;
    // Another process may have finished the environment while this one waited.
    if imports(&python, module) {
        return Ok(python);
    }
    if !python.exists() {
        let mut create = Command::new("python3");
        create.arg("-m").arg("venv").arg(&venv);
        run(create, "python3 -m venv")?;
    }
    let mut install = Command::new(&python);
    install.args(["-m", "pip", "install", "--quiet", requirement]);
    run(install, "pip install")?;
    if imports(&python, module) {
        Ok(python)
    } else {
        Err(format!(
            "{} cannot import {module} even after installing {requirement}",
            python.display()
        ))
    }
}

/// Whether `python` exists and can `import module`.
fn imports(python: &Path, module: &str) -> bool {
    python.exists()
        && Command::new(python)
            .args(["-c", &format!("import {module}")])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
}
