//! `deputy mcp-server` as an MCP client sees it: the real binary on stdio, a scripted
//! model behind it, judged by the JSON-RPC messages it prints, the processes it leaves
//! and the requests the model receives.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

#[path = "mcp/harness.rs"]
mod harness;

#[path = "mcp/cancellation.rs"]
mod cancellation;
#[path = "mcp/concurrency.rs"]
mod concurrency;
#[path = "mcp/conversations.rs"]
mod conversations;
#[path = "mcp/errors.rs"]
mod errors;
#[path = "mcp/handshake.rs"]
mod handshake;
#[path = "mcp/server_requests.rs"]
mod server_requests;
#[path = "mcp/tools_list.rs"]
mod tools_list;
#[path = "mcp/transport.rs"]
mod transport;
#[path = "mcp/turns.rs"]
mod turns;
