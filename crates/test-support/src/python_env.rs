//! A Python virtual environment with the official MCP SDK, for interoperability tests.

use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

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

/// The nearest ancestor of this crate holding `Cargo.lock`: the workspace root.
fn workspace_root() -> Result<PathBuf, String> {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .ancestors()
        .find(|dir| dir.join("Cargo.lock").is_file())
        .map(Path::to_path_buf)
        .ok_or_else(|| format!("no Cargo.lock above {}", manifest_dir.display()))
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

/// Runs `cmd` to completion, turning a failure into text with its output.
fn run(mut cmd: Command, what: &str) -> Result<(), String> {
    let output = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|err| format!("{what} could not start: {err}"))?;
    if output.status.success() {
        return Ok(());
    }
    Err(format!(
        "{what} failed ({}):\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    ))
}

/// Opens `path` and holds an exclusive `flock` on it until the returned file is dropped.
fn lock_exclusive(path: &Path) -> io::Result<File> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)?;
    loop {
        // SAFETY: the descriptor belongs to `file`, which stays open while it is used here.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } == 0 {
            return Ok(file);
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}
