//! The shared Python 3.12 environment with the app-server SDKs.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::process::Command;
use std::thread;

use deputy_test_support::python312_with_app_server_sdks;

#[test]
fn concurrent_callers_share_one_venv_with_the_pinned_sdks() {
    let callers: Vec<_> = (0..2)
        .map(|_| thread::spawn(python312_with_app_server_sdks))
        .collect();
    let pythons: Vec<_> = callers
        .into_iter()
        .filter_map(|caller| caller.join().ok())
        .collect();

    assert_eq!(pythons.len(), 2);
    let python = match &pythons[0] {
        Ok(python) => python.clone(),
        Err(err) => panic!("python312_with_app_server_sdks failed: {err}"),
    };
    assert_eq!(pythons[1].as_ref().ok(), Some(&python));
    assert!(
        python.ends_with("target/test-venv-312/bin/python"),
        "{}",
        python.display()
    );
    let script = "import sys, importlib.metadata as m\n\
                  import codex_agent_sdk, codex_app_server_sdk, codex_python_sdk\n\
                  print(sys.version_info >= (3, 12), m.version('codex-python-sdk-unofficial'), \
                  m.version('codex-app-server-sdk'), m.version('codex-python-sdk'))";
    let output = Command::new(&python).args(["-c", script]).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "True 0.128.0 0.4.1 0.2.1",
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
