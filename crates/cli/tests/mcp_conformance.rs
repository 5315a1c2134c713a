//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, on the Node
//! 22 it needs) against `deputy mcp-server --listen`: every server scenario that applies
//! to a server without resources, prompts, logging or the suite's fixture tools (the
//! README lists the others and why), in the pinned release and in the newer one that
//! adds 2026-07-28 scenarios.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::time::Duration;

use deputy_test_support::{
    ListeningServer, MCP_CONFORMANCE_NEXT_VERSION, MCP_CONFORMANCE_VERSION, MockModelServer,
    NodeNetwork, TestHome, run_with_deadline,
};

/// The binary under test.
const DEPUTY: &str = env!("CARGO_BIN_EXE_deputy");

/// Longest one scenario may run (the suite's own timeout is 30 s).
const SCENARIO_DEADLINE: Duration = Duration::from_secs(90);

/// Runs each of `scenarios` of the suite at `entry` against a fresh listening server;
/// panics listing every scenario that did not pass in full.
fn run_suite(entry: fn(&NodeNetwork) -> std::path::PathBuf, release: &str, scenarios: &[&str]) {
    let node = NodeNetwork::install().unwrap_or_else(|err| panic!("no conformance suite: {err}"));
    let model = MockModelServer::start();
    let home = TestHome::new(&model.base_url());
    let mut command = home.command(DEPUTY);
    command.args(["mcp-server", "--listen", "127.0.0.1:0"]);
    let server = ListeningServer::start(command).unwrap_or_else(|err| panic!("{err}"));
    let mut failed = Vec::new();
    for scenario in scenarios {
        let mut run = home.command(node.node());
        run.arg(entry(&node))
            .args(["server", "--url", server.url(), "--scenario", scenario])
            .current_dir(home.path())
            .env("NO_COLOR", "1");
        let output =
            run_with_deadline(run, SCENARIO_DEADLINE).unwrap_or_else(|err| panic!("{err}"));
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let passed_all = stdout
            .lines()
            .chain(stderr.lines())
            .any(|line| line.contains("Passed: ") && line.contains(", 0 failed"));
        if !output.status.success() || !passed_all {
            failed.push(format!(
                "{scenario} ({}):\n{stdout}\n{stderr}",
                output.status
            ));
        }
    }
    assert!(
        failed.is_empty(),
        "conformance {release}: {} of {} scenarios failed:\n{}\n--- server ---\n{}",
        failed.len(),
        scenarios.len(),
        failed.join("\n"),
        server.stderr()
    );
}

#[test]
fn the_applicable_scenarios_of_the_pinned_conformance_suite_pass() {
    run_suite(
        NodeNetwork::conformance,
        MCP_CONFORMANCE_VERSION,
        &[
            "server-initialize",
            "ping",
            "tools-list",
            "dns-rebinding-protection",
            "server-sse-polling",
            "server-sse-multiple-streams",
        ],
    );
}

#[test]
fn the_applicable_scenarios_of_the_newer_suite_pass_in_both_eras() {
    run_suite(
        NodeNetwork::conformance_next,
        MCP_CONFORMANCE_NEXT_VERSION,
        &[
            "server-initialize",
            "server-session-lifecycle",
            "ping",
            "tools-list",
            "dns-rebinding-protection",
            "server-sse-polling",
            "server-sse-multiple-streams",
            "http-header-validation",
            "caching",
        ],
    );
}
