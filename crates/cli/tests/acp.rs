//! `deputy acp` as an editor sees it: the real binary driven by the official ACP
//! TypeScript SDK's client, a scripted model behind it, judged by the messages the
//! client receives, the files and processes left behind and the requests the model got.
//! The same client script also runs against Zed's `codex-acp` adapter.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

#[path = "acp/harness.rs"]
mod harness;

#[path = "acp/client_servers.rs"]
mod client_servers;
#[path = "acp/codex_acp.rs"]
mod codex_acp;
#[path = "acp/commands.rs"]
mod commands;
#[path = "acp/errors.rs"]
mod errors;
#[path = "acp/forms.rs"]
mod forms;
#[path = "acp/permissions.rs"]
mod permissions;
#[path = "acp/prompts.rs"]
mod prompts;
#[path = "acp/sessions.rs"]
mod sessions;
