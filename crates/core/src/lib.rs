//! deputy's agent engine.
//!
//! A [`ThreadManager`] starts [`Thread`]s from a [`config::Config`]. A front
//! door submits ops to a thread and subscribes to its event log; the engine talks
//! to the model, runs tools under the approval and sandbox policies, and reports
//! everything as numbered [`deputy_protocol::ThreadEvent`]s about items. Front doors
//! run turns through [`driver::drive_turn`], which routes approvals to their
//! [`driver::Approver`].
//!
//! Architecture invariant: this crate knows nothing of MCP, JSON-RPC or stdio.

pub mod approval;
mod base_instructions;
pub mod client;
pub mod command_safety;
pub mod compact;
pub mod config;
mod context;
pub mod context_window;
pub mod display;
pub mod driver;
pub mod event_log;
pub mod exec;
pub mod exec_env;
mod instructions;
mod mcp;
pub mod model_family;
pub mod patch_journal;
mod private_tmp;
pub mod project_doc;
pub mod request;
pub mod review;
pub mod rollout;
pub mod safety;
mod sampling;
mod sandboxing;
mod submission_loop;
mod sync;
mod thread;
mod thread_manager;
pub mod tools;
mod turn;
mod turn_clock;
mod turn_diff;
pub mod turn_history;
mod untrusted_file;
pub mod user_input;

pub use event_log::{Lagged, Subscription};
pub use sandboxing::{start_sandbox_probe, wait_for_sandbox_probe};
pub use thread::{Thread, ThreadError, TurnEvents, TurnInput};
pub use thread_manager::{ResumeError, StartError, ThreadManager};
