//! The shared Node installation of the MCP TypeScript SDK.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::process::Command;
use std::thread;

use deputy_test_support::{MCP_TS_SDK_VERSION, NodeMcpSdk};

#[test]
fn concurrent_callers_share_one_installation_whose_scripts_import_the_pinned_sdk() {
    let callers: Vec<_> = (0..2).map(|_| thread::spawn(NodeMcpSdk::install)).collect();
    let installs: Vec<_> = callers
        .into_iter()
        .filter_map(|caller| caller.join().ok())
        .collect();
    assert_eq!(installs.len(), 2);
    let sdk = match &installs[0] {
        Ok(sdk) => sdk.clone(),
        Err(err) => panic!("installing the TypeScript SDK failed: {err}"),
    };
    assert_eq!(
        installs[1]
            .as_ref()
            .map(|other| other.dir().to_path_buf())
            .ok(),
        Some(sdk.dir().to_path_buf())
    );
    assert!(
        sdk.dir().ends_with("target/test-node"),
        "{}",
        sdk.dir().display()
    );

    let source = tempfile::tempdir().expect("temporary directory");
    let script = source.path().join("sdk_version_probe.mjs");
    std::fs::write(
        &script,
        "import { Client } from '@modelcontextprotocol/sdk/client/index.js';\n\
         import { readFileSync } from 'node:fs';\n\
         const manifest = new URL('./node_modules/@modelcontextprotocol/sdk/package.json', import.meta.url);\n\
         const sdk = JSON.parse(readFileSync(manifest, 'utf8'));\n\
         console.log(typeof Client === 'function' ? sdk.version : 'no Client');\n",
    )
    .expect("write the probe");
    let placed = sdk
        .place_script(&script)
        .unwrap_or_else(|err| panic!("{err}"));
    let output = Command::new("node")
        .arg(&placed)
        .output()
        .expect("run node");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        MCP_TS_SDK_VERSION
    );
}
