//! deputy's JSON-RPC plumbing, shared by its front doors (the app-server, ACP and the
//! MCP server's own transports): bounded message transports — newline-delimited on
//! stdio, one message per WebSocket text frame — an outgoing queue that pairs the
//! peer's replies with the requests they answer, envelopes written with or without the
//! `"jsonrpc"` field, and who may connect to a listening server.
//!
//! Invariants: no message is held past its transport's limit (a longer one is
//! discarded as it streams, its edges kept so that it can be answered); every queue is
//! bounded; nothing here knows a protocol's methods.

// Code here runs on the async runtime: no blocking std calls (see clippy.toml); test
// code may block (its fixtures are files).
#![cfg_attr(not(test), warn(clippy::disallowed_methods))]

pub mod access;
mod frame;
mod line_reader;
mod message;
pub mod outgoing;
mod output;
pub mod oversize;
#[cfg(test)]
mod random_input;
pub mod stdio;
pub mod transport;
pub mod websocket;

pub use frame::{Collector, Frame, KEPT_EDGE_BYTES, Oversize};
pub use line_reader::LineReader;
pub use message::*;
pub use output::start_line_writer;
pub use output::{OutputClosed, OutputQueue, Place, QueueBounds, QueueReceiver, Queued};
