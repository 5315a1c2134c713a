//! Cold start: spawn, `initialize` answered, `tools/list` answered, exit.

use std::time::Duration;

use super::{EXIT_TIMEOUT, Outcome, Workload, model::Model};
use crate::report::{Goal, Sample};
use crate::server::ServerProcess;
use crate::target::{Home, Target};

const TIMEOUT: Duration = Duration::from_secs(30);

/// Spawns a server in a fresh home and lists its tools.
pub struct ColdStart;

impl Workload for ColdStart {
    fn run(&mut self, target: &Target) -> anyhow::Result<Outcome> {
        // No model request is made; the config only needs a valid provider URL.
        let model = Model::text_only()?;
        let home = Home::new(&model.server.base_url())?;
        let server = ServerProcess::spawn(home.command(target))?;
        let initialized = server.initialize(TIMEOUT)?;
        let listed = server.call("tools/list", serde_json::json!({}), TIMEOUT)?;
        let tools = listed.message["result"]["tools"]
            .as_array()
            .map_or(0, Vec::len);
        if tools < 2 {
            anyhow::bail!("tools/list offered {tools} tool(s): {}", listed.message);
        }
        let spawned = server.spawned_at;
        // Exiting frees memory; it does not grow it.
        let peak = server.peak_rss_kib()?;
        let exit = server.finish(EXIT_TIMEOUT)?;
        Ok(Outcome::Measured(vec![
            Sample::ms("to initialize", Goal::None, initialized.at - spawned),
            Sample::ms("to tools/list", Goal::AtMost(2.0), listed.at - spawned),
            Sample::ms("to exit", Goal::None, exit.exited_at - spawned),
            Sample::mib("peak RSS", Goal::AtMost(6.0), peak),
            Sample::ms("CPU", Goal::None, exit.cpu),
        ]))
    }
}
