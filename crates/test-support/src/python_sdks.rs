//! A Python ≥ 3.12 virtual environment with the Python clients of Codex's app-server
//! (`codex-app-server-sdk`, `codex-python-sdk-unofficial`, `codex-python-sdk`), pinned by
//! `python/app-server-sdks.txt`, for interoperability tests.
//!
//! Those packages need Python 3.12 or newer, which the system `python3` may not be. The
//! interpreter is `$DEPUTY_TEST_PYTHON312` when set, else the first of `python3`,
//! `python3.14`, `python3.13`, `python3.12` on `PATH`, then pyenv's installed versions,
//! that is 3.12 or newer.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::tool_setup::{lock_exclusive, run, workspace_root};

/// The requirements installed, kept beside this crate's sources.
pub const APP_SERVER_SDK_REQUIREMENTS: &str = include_str!("../python/app-server-sdks.txt");

/// Names an interpreter to use instead of searching for one.
pub const PYTHON312_VAR: &str = "DEPUTY_TEST_PYTHON312";

/// A copy of the requirements written once `pip install` succeeded with them: an
/// installation cut short never passes for a finished one.
const INSTALLED_MARKER: &str = "installed-requirements.txt";

/// The python of `<workspace>/target/test-venv-312`, created with the app-server SDKs if
/// needed; an error saying how to provide Python 3.12 when none is found.
///
/// Safe to call from many test threads and processes at once: creation happens under
/// an exclusive lock on `target/test-venv-312.lock`.
pub fn python312_with_app_server_sdks() -> Result<PathBuf, String> {
    let target = workspace_root()?.join("target");
    let venv = target.join("test-venv-312");
    let python = venv.join("bin").join("python");
    if is_installed(&venv, &python) {
        return Ok(python);
    }
    fs::create_dir_all(&target)
        .map_err(|err| format!("could not create {}: {err}", target.display()))?;
    let lock_path = target.join("test-venv-312.lock");
    let _lock = lock_exclusive(&lock_path)
        .map_err(|err| format!("could not lock {}: {err}", lock_path.display()))?;
    if is_installed(&venv, &python) {
        return Ok(python);
    }
    if !python.exists() {
        let base = find_python312(std::env::var_os(PYTHON312_VAR))?;
        let mut create = Command::new(&base);
        create.arg("-m").arg("venv").arg(&venv);
        run(create, &format!("{} -m venv", base.display()))?;
    }
    let requirements = venv.join("requirements.txt");
    fs::write(&requirements, APP_SERVER_SDK_REQUIREMENTS)
        .map_err(|err| format!("could not write {}: {err}", requirements.display()))?;
    let mut install = Command::new(&python);
    install
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
        ])
        .arg(&requirements);
    run(install, "pip install (the app-server SDKs)")?;
    let marker = venv.join(INSTALLED_MARKER);
    fs::write(&marker, APP_SERVER_SDK_REQUIREMENTS)
        .map_err(|err| format!("could not write {}: {err}", marker.display()))?;
    Ok(python)
}

/// Whether the venv holds an installation of the current requirements.
fn is_installed(venv: &Path, python: &Path) -> bool {
    python.exists()
        && fs::read_to_string(venv.join(INSTALLED_MARKER))
            .is_ok_and(|installed| installed == APP_SERVER_SDK_REQUIREMENTS)
}

/// `explicit` (the value of [`PYTHON312_VAR`]) when given, else the first Python 3.12 or
/// newer found; or why there is none.
fn find_python312(explicit: Option<std::ffi::OsString>) -> Result<PathBuf, String> {
    if let Some(explicit) = explicit {
        let explicit = PathBuf::from(explicit);
        return if is_python312(&explicit) {
            Ok(explicit)
        } else {
            Err(format!(
                "${PYTHON312_VAR} is {}, which is not a Python 3.12 or newer",
                explicit.display()
            ))
        };
    }
    let on_path = ["python3", "python3.14", "python3.13", "python3.12"]
        .into_iter()
        .map(PathBuf::from);
    let pyenv_root = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".pyenv")));
    let mut pyenv: Vec<PathBuf> = pyenv_root
        .and_then(|root| fs::read_dir(root.join("versions")).ok())
        .into_iter()
        .flatten()
        .filter_map(|entry| Some(entry.ok()?.path().join("bin").join("python3")))
        .collect();
    // Newest first, by version number rather than by name.
    pyenv.sort_by_key(|path| std::cmp::Reverse(version_key(path)));
    on_path
        .chain(pyenv)
        .find(|candidate| is_python312(candidate))
        .ok_or_else(|| {
            format!(
                "the app-server SDK tests need Python 3.12 or newer and none was found \
                 (tried python3, python3.14, python3.13, python3.12 and pyenv's versions); \
                 install one (e.g. `pyenv install 3.12`) or set {PYTHON312_VAR}=/path/to/python3.12"
            )
        })
}

/// `(major, minor, patch)` of a pyenv interpreter path `…/versions/X.Y.Z/bin/python3`.
fn version_key(path: &Path) -> Vec<u32> {
    path.ancestors()
        .nth(2)
        .and_then(Path::file_name)
        .map(|name| {
            name.to_string_lossy()
                .split('.')
                .map(|part| part.parse().unwrap_or(0))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `python` runs and is 3.12 or newer.
fn is_python312(python: &Path) -> bool {
    Command::new(python)
        .args([
            "-c",
            "import sys, venv; sys.exit(0 if sys.version_info >= (3, 12) else 1)",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pyenv_versions_sort_by_number() {
        let mut paths = ["3.9.18", "3.12.1", "3.13.0", "3.10.13"]
            .map(|v| PathBuf::from(format!("/p/versions/{v}/bin/python3")))
            .to_vec();
        paths.sort_by_key(|path| std::cmp::Reverse(version_key(path)));
        let names: Vec<String> = paths
            .iter()
            .map(|p| {
                p.ancestors()
                    .nth(2)
                    .unwrap()
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        assert_eq!(names, ["3.13.0", "3.12.1", "3.10.13", "3.9.18"]);
    }

    #[test]
    fn an_explicit_interpreter_that_is_not_python_312_is_refused_by_name() {
        let err = find_python312(Some("/no/such/python3.12".into())).unwrap_err();
        assert_eq!(
            err,
            "$DEPUTY_TEST_PYTHON312 is /no/such/python3.12, which is not a Python 3.12 or newer"
        );
    }

    #[test]
    fn the_requirements_pin_every_package() {
        let pins: Vec<&str> = APP_SERVER_SDK_REQUIREMENTS
            .lines()
            .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
            .collect();
        assert!(pins.iter().all(|pin| pin.contains("==")), "{pins:?}");
        assert!(pins.contains(&"codex-python-sdk-unofficial==0.128.0"));
    }
}
