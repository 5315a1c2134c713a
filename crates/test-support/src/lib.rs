//! Test doubles for deputy's whole-process tests and benchmarks.
//!
//! - [`MockModelServer`] stands in for the model: a real HTTP server on `127.0.0.1` that
//!   answers `POST /v1/responses` (Responses API) and `POST /v1/chat/completions`
//!   (Chat Completions) with scripted streaming bodies, served in order from one queue,
//!   and records every request. Scripts can also fail: error statuses, dropped
//!   connections, stalled streams and slow ones. [`responses`] and [`chat`] build the
//!   events and chunks, [`MockResponse`] the whole answers.
//! - [`StdioClient`] drives a child process (usually `deputy mcp-server`) over
//!   newline-delimited JSON-RPC on its stdin and stdout, keeps every message it prints,
//!   and explains failed waits with the recent messages and the child's stderr.
//!   [`McpSession`] performs the MCP handshake; [`BackgroundWrite`] feeds a child that
//!   may stop reading without blocking the test, and [`ProcessMemory`] reads its memory.
//! - [`TestHome`] is a temporary `DEPUTY_HOME` configured to use the mock server, and
//!   [`python_with_mcp`] provides a Python with the official MCP SDK,
//!   [`python312_with_app_server_sdks`] a Python 3.12 with the Python clients of Codex's
//!   app-server, and [`NodeMcpSdk`] a Node installation of the MCP TypeScript SDK and of
//!   OpenAI's Codex TypeScript SDK, for interoperability tests; [`NodeAcp`] the ACP
//!   TypeScript SDK and Zed's `codex-acp` adapter; [`NodeMcpServers`] the reference MCP
//!   servers (`server-everything`, `server-filesystem`) deputy's MCP client is tested against.
//! - [`HostileRepository`] is a git repository whose configuration runs programs that
//!   leave marks outside it, for the tests that prove none of them runs unconfined.
//! - [`random_input`] feeds the parsers' property tests: mutated samples, random JSON, a
//!   case count (`PROPTEST_CASES`) and a watchdog against hangs.
//!
//! ```no_run
//! use std::time::Duration;
//! use deputy_test_support::{McpSession, MockModelServer, MockResponse, StdioClient, TestHome};
//! use serde_json::json;
//!
//! let server = MockModelServer::start();
//! server.push(MockResponse::text_turn("Done."));
//! let home = TestHome::new(&server.base_url());
//! let mut cmd = home.command("target/debug/deputy");
//! cmd.arg("mcp-server");
//! let client = StdioClient::spawn(cmd);
//! McpSession::initialize(&client, json!({}));
//! let id = client.request("tools/call", json!({"name": "codex", "arguments": {"prompt": "hi"}}));
//! let response = client.wait_response(id, Duration::from_secs(30)).unwrap();
//! assert_eq!(response["result"]["structuredContent"]["content"], "Done.");
//! assert_eq!(server.requests()[0].path, "/v1/responses");
//! ```

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test doubles: a failed setup is a failed test"
)]

mod bounded_run;
mod hostile_repository;
mod listening;
mod mock_server;
mod node_env;
mod process_memory;
pub mod processes;
mod python_env;
mod python_sdks;
pub mod random_input;
mod sandbox_required;
mod stdio_client;
mod test_home;
mod tool_setup;

pub use bounded_run::run_with_deadline;
pub use hostile_repository::HostileRepository;
pub use listening::ListeningServer;
pub use mock_server::{MockModelServer, MockResponse, RecordedRequest, SseEvent, chat, responses};
pub use node_env::{
    ACP_TS_SDK_VERSION, CODEX_TS_SDK_VERSION, MCP_CONFORMANCE_NEXT_VERSION,
    MCP_CONFORMANCE_VERSION, MCP_REFERENCE_SERVERS_VERSION, MCP_TS_CLIENT_VERSION,
    MCP_TS_SDK_VERSION, NODE22_VERSION, NodeAcp, NodeMcpSdk, NodeMcpServers, NodeNetwork,
};
pub use process_memory::ProcessMemory;
pub use python_env::{LARK_REQUIREMENT, MCP_SDK_REQUIREMENT, python_with_lark, python_with_mcp};
pub use python_sdks::{APP_SERVER_SDK_REQUIREMENTS, PYTHON312_VAR, python312_with_app_server_sdks};
pub use sandbox_required::{REQUIRE_SANDBOX_VAR, sandbox_required, skip_without_sandbox};
pub use stdio_client::{BackgroundWrite, McpSession, StdioClient};
pub use test_home::TestHome;
