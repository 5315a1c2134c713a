//! Approvals end to end: the real `deputy mcp-server` (and `deputy exec`) against a
//! scripted model, judged by the questions asked on the wire, what ran, what the files
//! look like afterwards and what the model was told.
//!
//! - `policy_table`: which commands ask and which run, per approval policy;
//! - `exec_approval`: the exec question's exact shape and every answer's effect;
//! - `patch`: the patch question's exact changes and where patches apply unasked;
//! - `no_hang`: no capability, bad replies, timeouts, cancellation, other sessions;
//! - `terminal`: `deputy exec` with and without a terminal.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

mod common;

#[path = "approvals/exec_approval.rs"]
mod exec_approval;
#[path = "approvals/harness.rs"]
mod harness;
#[path = "approvals/no_hang.rs"]
mod no_hang;
#[path = "approvals/patch.rs"]
mod patch;
#[path = "approvals/policy_table.rs"]
mod policy_table;
#[path = "approvals/terminal.rs"]
mod terminal;
