//! `deputy app-server` as a Codex app-server client sees it: the real binary on stdio,
//! a scripted model behind it, judged by the messages it prints, the files and processes
//! it leaves and the requests the model receives.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

#[path = "app_server/harness.rs"]
mod harness;

#[path = "app_server/approvals.rs"]
mod approvals;
#[path = "app_server/beyond_text.rs"]
mod beyond_text;
#[path = "app_server/errors.rs"]
mod errors;
#[path = "app_server/handshake.rs"]
mod handshake;
#[path = "app_server/launch.rs"]
mod launch;
#[path = "app_server/python_sdks.rs"]
mod python_sdks;
#[path = "app_server/results.rs"]
mod results;
#[path = "app_server/review.rs"]
mod review;
#[path = "app_server/schema.rs"]
mod schema;
#[path = "app_server/threads.rs"]
mod threads;
#[path = "app_server/turns.rs"]
mod turns;
#[path = "app_server/websocket.rs"]
mod websocket;
