//! What installing a test tool into `target/` needs: the workspace root, a lock
//! that serializes installers across test processes, and commands run to the end.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The nearest ancestor of this crate holding `Cargo.lock`: the workspace root.
pub(crate) fn workspace_root() -> Result<PathBuf, String> {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest_dir
        .ancestors()
        .find(|dir| dir.join("Cargo.lock").is_file())
        .map(Path::to_path_buf)
        .ok_or_else(|| format!("no Cargo.lock above {}", manifest_dir.display()))
}

/// Runs `cmd` to completion, turning a failure into text with its output.
pub(crate) fn run(mut cmd: Command, what: &str) -> Result<(), String> {
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
pub(crate) fn lock_exclusive(path: &Path) -> io::Result<File> {
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
