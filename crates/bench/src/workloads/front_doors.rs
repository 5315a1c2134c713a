//! The other stdio front doors' start: `app-server` and `acp` spawned, their `initialize`
//! answered, stdin closed, exit. Start-up work is shared by every front door; this shows
//! that what was cut for the MCP server's cold start left the others no slower.

use std::time::Duration;

use anyhow::Context;
use serde_json::{Value, json};

use super::{EXIT_TIMEOUT, Outcome, Workload, model::Model};
use crate::report::{Goal, Sample};
use crate::server::ServerProcess;
use crate::target::{Home, Kind, Target};

const TIMEOUT: Duration = Duration::from_secs(30);

/// Starts each front door once per run, in a fresh home.
pub struct FrontDoors;

/// A front door other than `mcp-server`, and the names of its figures.
struct Door {
    subcommand: &'static str,
    /// Codex CLI 0.125 has it too (it has `app-server`, not `acp`).
    in_codex: bool,
    /// The `initialize` request's params.
    params: fn() -> Value,
    to_initialize: &'static str,
    peak_rss: &'static str,
    cpu: &'static str,
}

const DOORS: [Door; 2] = [
    Door {
        subcommand: "app-server",
        in_codex: true,
        params: || json!({"clientInfo": {"name": "deputy-bench", "version": "0"}}),
        to_initialize: "app-server to initialize",
        peak_rss: "app-server peak RSS",
        cpu: "app-server CPU",
    },
    Door {
        subcommand: "acp",
        in_codex: false,
        params: || json!({"protocolVersion": 1, "clientCapabilities": {}}),
        to_initialize: "acp to initialize",
        peak_rss: "acp peak RSS",
        cpu: "acp CPU",
    },
];

impl Workload for FrontDoors {
    fn run(&mut self, target: &Target) -> anyhow::Result<Outcome> {
        // No model request is made; the config only needs a valid provider URL.
        let model = Model::text_only()?;
        let home = Home::new(&model.server.base_url())?;
        let mut samples = Vec::new();
        for door in DOORS
            .iter()
            .filter(|door| target.kind == Kind::Deputy || door.in_codex)
        {
            let server = ServerProcess::spawn(home.command_for(target, door.subcommand))?;
            let initialized = server
                .call("initialize", (door.params)(), TIMEOUT)
                .with_context(|| format!("{} initialize", door.subcommand))?;
            let spawned = server.spawned_at;
            let peak = server.peak_rss_kib()?;
            let exit = server.finish(EXIT_TIMEOUT)?;
            samples.extend([
                Sample::ms(door.to_initialize, Goal::None, initialized.at - spawned),
                Sample::mib(door.peak_rss, Goal::None, peak),
                Sample::ms(door.cpu, Goal::None, exit.cpu),
            ]);
        }
        Ok(Outcome::Measured(samples))
    }
}
