//! The shared Python environment with the MCP SDK.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::process::Command;
use std::thread;

use deputy_test_support::python_with_mcp;

#[test]
fn concurrent_callers_share_one_venv_with_the_pinned_mcp_sdk() {
    let callers: Vec<_> = (0..2).map(|_| thread::spawn(python_with_mcp)).collect();
    let pythons: Vec<_> = callers
        .into_iter()
        .filter_map(|caller| caller.join().ok())
        .collect();

    assert_eq!(pythons.len(), 2);
    let python = match &pythons[0] {
        Ok(python) => python.clone(),
        Err(err) => panic!("python_with_mcp failed: {err}"),
    };
    assert_eq!(pythons[1].as_ref().ok(), Some(&python));
    assert!(
        python.ends_with("target/test-venv/bin/python"),
        "{}",
        python.display()
    );
    let version = Command::new(&python)
        .args([
            "-c",
            "import importlib.metadata as m; print(m.version('mcp'))",
        ])
        .output()
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned())
        .unwrap_or_default();
    assert_eq!(version, "2.3.0");
}
