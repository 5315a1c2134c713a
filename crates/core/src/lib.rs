//! deputy's agent engine.
//!
//! A [`ThreadManager`] starts [`Thread`]s from a [`config::Config`]. A front
//! door submits ops to a thread and reads its events; the engine talks to the
//! model, runs tools under the approval and sandbox policies, and reports
//! everything as [`deputy_protocol::EventMsg`]s.
//!
//! Architecture invariant: this crate knows nothing of MCP, JSON-RPC or stdio.

pub mod approval;
pub mod client;
pub mod command_safety;
pub mod config;
mod event_sink;
pub mod exec;
pub mod exec_env;
mod instructions;
pub mod rollout;
pub mod safety;
mod sandboxing;
mod thread;
mod thread_manager;
pub mod tools;
mod turn;

pub use thread::{Thread, ThreadError, TurnEvents};
pub use thread_manager::{ResumeError, StartError, ThreadManager};
