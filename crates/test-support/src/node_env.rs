//! Node with the official MCP TypeScript SDK and OpenAI's Codex TypeScript SDK
//! (`@openai/codex-sdk`), for interoperability tests.
//!
//! Both SDKs and everything they depend on are pinned by `node/package-lock.json` and
//! installed with `npm ci` into `<workspace>/target/test-node` the first time a test
//! asks; later runs find them there. Optional dependencies are left out: the Codex SDK's
//! only ones are Codex's own native binaries, which the tests replace with deputy
//! (`codexPathOverride`).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::tool_setup::{lock_exclusive, run, workspace_root};

/// The MCP TypeScript SDK release the interoperability tests are written against.
pub const MCP_TS_SDK_VERSION: &str = "1.32.2";

/// The `@openai/codex-sdk` release the `deputy exec` interoperability tests are written against.
pub const CODEX_TS_SDK_VERSION: &str = "0.163.0";

/// The manifest and lockfile installed, kept beside this crate's sources.
const PACKAGE_JSON: &str = include_str!("../node/package.json");
const PACKAGE_LOCK: &str = include_str!("../node/package-lock.json");

/// Where each SDK's `package.json` lands inside the installation, with its version.
const SDK_MANIFESTS: [(&str, &str); 2] = [
    (
        "node_modules/@modelcontextprotocol/sdk/package.json",
        MCP_TS_SDK_VERSION,
    ),
    (
        "node_modules/@openai/codex-sdk/package.json",
        CODEX_TS_SDK_VERSION,
    ),
];

/// A copy of the lockfile written once `npm ci` succeeded with it: an installation
/// cut short never passes for a finished one.
const INSTALLED_MARKER: &str = "installed-package-lock.json";

/// A directory holding the TypeScript SDKs, where client scripts run.
#[derive(Debug, Clone)]
pub struct NodeMcpSdk {
    dir: PathBuf,
}

impl NodeMcpSdk {
    /// `<workspace>/target/test-node`, installing the SDKs there if needed.
    ///
    /// Safe to call from many test threads and processes at once: installation happens
    /// under an exclusive lock on `target/test-node.lock`, and an installation of the
    /// pinned lockfile is used as it is.
    pub fn install() -> Result<Self, String> {
        let target = workspace_root()?.join("target");
        let sdk = Self {
            dir: target.join("test-node"),
        };
        if sdk.is_installed() {
            return Ok(sdk);
        }
        fs::create_dir_all(&sdk.dir)
            .map_err(|err| format!("could not create {}: {err}", sdk.dir.display()))?;
        let lock_path = target.join("test-node.lock");
        let _lock = lock_exclusive(&lock_path)
            .map_err(|err| format!("could not lock {}: {err}", lock_path.display()))?;
        // Another process may have finished the installation while this one waited.
        if sdk.is_installed() {
            return Ok(sdk);
        }
        for (name, text) in [
            ("package.json", PACKAGE_JSON),
            ("package-lock.json", PACKAGE_LOCK),
        ] {
            let path = sdk.dir.join(name);
            fs::write(&path, text)
                .map_err(|err| format!("could not write {}: {err}", path.display()))?;
        }
        let mut install = Command::new("npm");
        install
            .args([
                "ci",
                "--omit=optional",
                "--no-audit",
                "--no-fund",
                "--loglevel=error",
            ])
            .current_dir(&sdk.dir);
        run(install, "npm ci")?;
        let marker = sdk.dir.join(INSTALLED_MARKER);
        fs::write(&marker, PACKAGE_LOCK)
            .map_err(|err| format!("could not write {}: {err}", marker.display()))?;
        if sdk.is_installed() {
            Ok(sdk)
        } else {
            Err(format!(
                "{} does not hold @modelcontextprotocol/sdk {MCP_TS_SDK_VERSION} and \
                 @openai/codex-sdk {CODEX_TS_SDK_VERSION} even after npm ci",
                sdk.dir.display()
            ))
        }
    }

    /// The installation directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Copies `script` into the installation, where its `import`s of the SDK resolve
    /// (ES modules look for `node_modules` beside the script, not in `NODE_PATH`), and
    /// returns the copy's path to run with `node`.
    pub fn place_script(&self, script: &Path) -> Result<PathBuf, String> {
        let name = script
            .file_name()
            .ok_or_else(|| format!("{} names no file", script.display()))?;
        let text = fs::read(script)
            .map_err(|err| format!("could not read {}: {err}", script.display()))?;
        let placed = self.dir.join(name);
        // Written aside and renamed, so a test running the script never sees half of it;
        // the aside name is unique to this call, as tests place scripts from many threads.
        static PLACED: AtomicUsize = AtomicUsize::new(0);
        let partial = self.dir.join(format!(
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

    /// Whether the pinned lockfile is installed and both SDKs are there.
    fn is_installed(&self) -> bool {
        let lock_matches = fs::read_to_string(self.dir.join(INSTALLED_MARKER))
            .is_ok_and(|installed| installed == PACKAGE_LOCK);
        let version = |manifest: &str| {
            fs::read_to_string(self.dir.join(manifest))
                .ok()
                .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
                .and_then(|manifest| manifest["version"].as_str().map(str::to_string))
        };
        lock_matches
            && SDK_MANIFESTS
                .iter()
                .all(|(manifest, wanted)| version(manifest).as_deref() == Some(*wanted))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manifest_pins_the_version_the_tests_are_written_against() {
        let manifest: serde_json::Value = serde_json::from_str(PACKAGE_JSON).unwrap();
        let lock: serde_json::Value = serde_json::from_str(PACKAGE_LOCK).unwrap();
        for (package, version) in [
            ("@modelcontextprotocol/sdk", MCP_TS_SDK_VERSION),
            ("@openai/codex-sdk", CODEX_TS_SDK_VERSION),
        ] {
            assert_eq!(manifest["dependencies"][package], version);
            assert_eq!(
                lock["packages"][format!("node_modules/{package}")]["version"],
                version
            );
        }
    }
}
