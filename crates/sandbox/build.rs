//! The identity of the launcher code this crate compiles to (`LAUNCHER_BUILD`): a hash of the
//! crate's sources, its manifest and the workspace's lockfile. deputy passes it to the launcher
//! it starts, which refuses to run a command for a deputy whose launcher code differs from its
//! own: the stand-alone launcher beside `deputy` is a separate binary, and a build of one
//! without the other would otherwise run stale confinement code.

use std::hash::Hasher;
use std::path::{Path, PathBuf};

fn main() {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let mut files = vec![dir.join("Cargo.toml")];
    collect(&dir.join("src"), &mut files);
    let lockfile = dir.join("../../Cargo.lock");
    if lockfile.is_file() {
        files.push(lockfile);
    }
    files.sort();
    // FNV-1a: fixed, so the same sources give the same identity in every build script run.
    let mut hash = Fnv(0xcbf2_9ce4_8422_2325);
    for file in &files {
        let relative = file.strip_prefix(&dir).unwrap_or(file);
        hash.write(relative.to_string_lossy().as_bytes());
        hash.write(&std::fs::read(file).unwrap_or_default());
        println!("cargo:rerun-if-changed={}", file.display());
    }
    println!("cargo:rerun-if-changed={}", dir.join("src").display());
    println!(
        "cargo:rustc-env=DEPUTY_LAUNCHER_BUILD={:016x}",
        hash.finish()
    );
}

/// Every file under `dir`.
fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(&path, files);
        } else {
            files.push(path);
        }
    }
}

struct Fnv(u64);

impl Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0 ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
        }
        // Separates one field from the next.
        self.0 = (self.0 ^ 0xff).wrapping_mul(0x0100_0000_01b3);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}
