//! A Python virtual environment with the official MCP SDK, for interoperability tests.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::tool_setup::{lock_exclusive, run, workspace_root};

/// The MCP SDK release the interoperability tests are written against.
pub const MCP_SDK_REQUIREMENT: &str = "mcp==2.3.0";

/// The python of `<workspace>/target/test-venv`, creating it with the MCP SDK if needed.
///
/// Safe to call from many test threads and processes at once: creation happens under an
/// exclusive lock on `target/test-venv.lock`, and an environment where `import mcp`
/// already works is used as it is.
pub fn python_with_mcp() -> Result<PathBuf, String> {
    let root = workspace_root()?;
    let target = root.join("target");
    let venv = target.join("test-venv");
    let python = venv.join("bin").join("python");
    if imports_mcp(&python) {
        return Ok(python);
    }
    fs::create_dir_all(&target)
        .map_err(|err| format!("could not create {}: {err}", target.display()))?;
    let lock_path = target.join("test-venv.lock");
    let _lock = lock_exclusive(&lock_path)
        .map_err(|err| format!("could not lock {}: {err}", lock_path.display()))?;
    // Another process may have finished the environment while this one waited.
    if imports_mcp(&python) {
        return Ok(python);
    }
    if !python.exists() {
        let mut create = Command::new("python3");
        create.arg("-m").arg("venv").arg(&venv);
        run(create, "python3 -m venv")?;
    }
    let mut install = Command::new(&python);
    install.args(["-m", "pip", "install", "--quiet", MCP_SDK_REQUIREMENT]);
    run(install, "pip install")?;
    if imports_mcp(&python) {
        Ok(python)
    } else {
        Err(format!(
            "{} cannot import mcp even after installing {MCP_SDK_REQUIREMENT}",
            python.display()
        ))
    }
}

/// Whether `python` exists and can `import mcp`.
fn imports_mcp(python: &Path) -> bool {
    python.exists()
        && Command::new(python)
            .args(["-c", "import mcp"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
}
