//! Directories outside every writable root a sandboxed command gets.

use std::path::{Path, PathBuf};

use tempfile::TempDir;

/// A fresh directory that no sandbox mode makes writable: under the cargo
/// target directory, or under `/var/tmp` when the checkout itself lives in
/// `/tmp` (which `workspace-write` leaves writable).
pub fn outside_dir() -> TempDir {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let base = if target.starts_with("/tmp") {
        let base = PathBuf::from("/var/tmp/deputy-sandbox-tests");
        std::fs::create_dir_all(&base).expect("create /var/tmp/deputy-sandbox-tests");
        base
    } else {
        target.to_path_buf()
    };
    tempfile::tempdir_in(base).expect("tempdir outside the writable roots")
}
