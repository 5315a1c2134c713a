//! The per-command supervisor on its own: what the launcher adds to every command.
//!
//! deputy runs each command as `LAUNCHER __sandbox-exec --mode … -- CMD`, the launcher being
//! the stand-alone `deputy-sandbox-exec` beside the binary when there is one, else deputy
//! itself (`deputy_sandbox::launcher_for`); this workload runs `/bin/true` through the same
//! launcher in `danger-full-access` (the supervisor without confinement: its own session,
//! orphans adopted and killed, death with its parent) and directly, alternating, and reports
//! the difference of the medians. Codex has no such step.

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use super::{Outcome, Workload};
use crate::report::{Goal, Sample, percentile};
use crate::target::{Kind, Target};

/// How many commands each way one run starts.
const COMMANDS: usize = 300;
/// The command: exists everywhere, does nothing.
const TRUE: &str = "/bin/true";

/// Times `COMMANDS` supervised and `COMMANDS` direct runs of `/bin/true`.
pub struct Launcher;

impl Workload for Launcher {
    fn run(&mut self, target: &Target) -> anyhow::Result<Outcome> {
        if target.kind == Kind::Codex {
            return Ok(Outcome::Unsupported(
                "codex runs commands without re-executing itself".into(),
            ));
        }
        let cwd = std::env::temp_dir();
        let parent = std::process::id().to_string();
        let launcher = deputy_sandbox::launcher_for(&target.path);
        let mut supervised = Vec::with_capacity(COMMANDS);
        let mut direct = Vec::with_capacity(COMMANDS);
        for _ in 0..COMMANDS {
            let mut wrapped = Command::new(&launcher);
            wrapped
                .arg(deputy_sandbox::LAUNCHER_SUBCOMMAND)
                .args(["--mode", "danger-full-access", "--cwd"])
                .arg(&cwd)
                .args(["--parent-pid", &parent, "--", TRUE]);
            supervised.push(time(&mut wrapped)?);
            direct.push(time(&mut Command::new(TRUE))?);
        }
        let median = |values: &[f64]| percentile(values, 0.5).unwrap_or(0.0);
        let extra = (median(&supervised) - median(&direct)).max(0.0);
        let ms = |value: f64| Duration::from_secs_f64(value / 1000.0);
        Ok(Outcome::Measured(vec![
            Sample::ms(
                "supervised /bin/true p50",
                Goal::None,
                ms(median(&supervised)),
            ),
            Sample::ms("direct /bin/true p50", Goal::None, ms(median(&direct))),
            Sample::ms("supervisor adds (p50)", Goal::None, ms(extra)),
        ]))
    }
}

/// Milliseconds from spawn to reaped, for a command that must succeed.
fn time(command: &mut Command) -> anyhow::Result<f64> {
    let started = Instant::now();
    let status = command
        .status()
        .with_context(|| format!("running {command:?}"))?;
    let took = started.elapsed();
    if !status.success() {
        bail!("{command:?} failed: {status}");
    }
    Ok(took.as_secs_f64() * 1000.0)
}
