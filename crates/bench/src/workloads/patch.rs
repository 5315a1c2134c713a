//! Patch: a 200-hunk patch on a 50,000-line file, in-process and through a `codex` call.

use std::fs;
use std::time::Instant;

use anyhow::Context;

use super::model::{ANSWER_OK, Model, marker};
use super::{EXIT_TIMEOUT, Outcome, Workload, codex_call, start};
use crate::patch_gen::{GeneratedPatch, generate};
use crate::report::{Goal, Sample};
use crate::target::{Home, Kind, Target};

/// Lines of the patched file.
pub const LINES: usize = 50_000;
/// Changes in the patch.
pub const HUNKS: usize = 200;
const FILE: &str = "big.txt";

/// Generates the patch once and applies it on every run.
#[derive(Default)]
pub struct Patch {
    generated: Option<GeneratedPatch>,
}

impl Workload for Patch {
    fn run(&mut self, target: &Target) -> anyhow::Result<Outcome> {
        let generated = self
            .generated
            .get_or_insert_with(|| generate(FILE, LINES, HUNKS))
            .clone();
        let mut samples = Vec::new();
        // The library is deputy's; Codex's equivalent is only reachable end to end.
        if target.kind == Kind::Deputy {
            samples.extend(in_process(&generated)?);
        }
        samples.extend(end_to_end(target, &generated)?);
        Ok(Outcome::Measured(samples))
    }
}

fn in_process(generated: &GeneratedPatch) -> anyhow::Result<Vec<Sample>> {
    let dir = tempfile::tempdir()?;
    fs::write(dir.path().join(FILE), &generated.original)?;
    let start = Instant::now();
    let parsed = deputy_apply_patch::parse_patch(&generated.patch)?;
    let planned_at = Instant::now();
    let changes = deputy_apply_patch::plan_patch(&parsed, dir.path())?;
    let applied_at = Instant::now();
    let targets = deputy_apply_patch::WriteTargets::resolved_now(&changes)?;
    deputy_apply_patch::apply_planned(&changes, &targets)?;
    let done = Instant::now();
    let after = fs::read_to_string(dir.path().join(FILE))?;
    if after != generated.expected {
        anyhow::bail!("the in-process patch produced different content");
    }
    // plan_patch renders the file's unified diff; the engine renders another for the
    // turn's cumulative diff, so this share counts twice end to end.
    let diff_start = Instant::now();
    let diff = deputy_apply_patch::unified_diff(&generated.original, &generated.expected);
    let diff_time = diff_start.elapsed();
    if diff.matches("@@ -").count() != HUNKS {
        anyhow::bail!("the unified diff does not have {HUNKS} hunks");
    }
    Ok(vec![
        Sample::ms(
            "in-process parse+plan+apply",
            Goal::AtMost(50.0),
            done - start,
        ),
        Sample::ms(
            "in-process plan (incl. diff)",
            Goal::None,
            applied_at - planned_at,
        ),
        Sample::ms("in-process apply", Goal::None, done - applied_at),
        Sample::ms("in-process unified diff alone", Goal::None, diff_time),
    ])
}

fn end_to_end(target: &Target, generated: &GeneratedPatch) -> anyhow::Result<Vec<Sample>> {
    let script = format!("apply_patch <<'EOF'\n{}EOF\n", generated.patch);
    let model = Model::one_command(move |_| script.clone(), "Success")?;
    let home = Home::new(&model.server.base_url())?;
    let file = home.workspace().join(FILE);
    fs::write(&file, &generated.original)?;
    let server = start(target, &home)?;
    let label = marker(0);
    let (sent, reply, _) = codex_call(&server, &format!("patch it {label}"), ANSWER_OK)?;
    server.finish(EXIT_TIMEOUT)?;
    let after = fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    if after != generated.expected {
        anyhow::bail!("the patched file differs from the expected content");
    }
    let model_time = model.time_of(&[label]).remove(0);
    let latency = reply.at - sent;
    Ok(vec![
        Sample::ms("codex call latency", Goal::None, latency),
        Sample::ms(
            "codex call - model time",
            Goal::AtMost(50.0),
            latency.saturating_sub(model_time.total),
        ),
    ])
}
