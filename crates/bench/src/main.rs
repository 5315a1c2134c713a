//! `deputy-bench`: measures what deputy's MCP server adds between a client and the model,
//! optionally next to Codex's `codex mcp-server`, against the same mock model.
//!
//! ```text
//! cargo build --release -p deputy-cli
//! cargo run --release -p deputy-bench -- [--deputy PATH] [--before PATH] [--codex PATH] [--workload NAME]… [--runs N]
//! ```
//!
//! Each workload drives the release binary over stdio (see `workloads/`); every figure is
//! printed as min / median / max over the runs, with the target it has to meet.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark run: a failed step aborts the measurement"
)]

mod patch_gen;
mod report;
mod server;
mod target;
mod workloads;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;

use report::{Column, Results};
use target::{Kind, Target};
use workloads::{NAMES, Outcome};

/// Benchmarks `deputy mcp-server` (and optionally `codex mcp-server`) over stdio.
#[derive(Debug, Parser)]
#[command(name = "deputy-bench")]
struct Args {
    /// The deputy binary [default: `deputy` next to this binary, i.e. target/release/deputy].
    #[arg(long, value_name = "PATH")]
    deputy: Option<PathBuf>,
    /// An earlier deputy binary to measure the same way, for before/after columns.
    #[arg(long, value_name = "PATH")]
    before: Option<PathBuf>,
    /// A Codex CLI binary to measure the same way, for comparison.
    #[arg(long, value_name = "PATH")]
    codex: Option<PathBuf>,
    /// Run only this workload (repeatable).
    #[arg(long = "workload", value_name = "NAME", value_parser = clap::builder::PossibleValuesParser::new(NAMES))]
    workloads: Vec<String>,
    /// How many times each workload runs per server.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let outcome = run(args);
    target::delete_finished_homes();
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(2),
        Err(err) => {
            eprintln!("deputy-bench: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs everything and prints the tables; `Ok(false)` when some run failed.
fn run(args: Args) -> anyhow::Result<bool> {
    let deputy_path = match args.deputy {
        Some(path) => path,
        None => default_deputy()?,
    };
    let mut targets = Vec::new();
    if let Some(path) = args.before {
        targets.push(Target {
            before: true,
            ..checked(Kind::Deputy, path)?
        });
    }
    targets.push(checked(Kind::Deputy, deputy_path)?);
    if let Some(path) = args.codex {
        targets.push(checked(Kind::Codex, path)?);
    }
    let names: Vec<&str> = if args.workloads.is_empty() {
        NAMES.to_vec()
    } else {
        NAMES
            .iter()
            .copied()
            .filter(|name| args.workloads.iter().any(|w| w == name))
            .collect()
    };

    println!(
        "deputy-bench: {} run(s) per workload, {}",
        args.runs,
        machine()
    );
    for target in &targets {
        println!(
            "  {}: {} ({})",
            Column::of(target).name(),
            target.path.display(),
            target.version()
        );
    }
    let mut results = Results::default();
    let mut all_ok = true;
    for name in &names {
        // One instance per target, so that state kept between runs is per binary.
        let mut instances: Vec<_> = targets
            .iter()
            .map(|_| workloads::create(name))
            .collect::<Option<Vec<_>>>()
            .with_context(|| format!("unknown workload {name}"))?;
        for run in 1..=args.runs {
            // Alternating servers within each round spreads machine noise over both.
            for (target, workload) in targets.iter().zip(instances.iter_mut()) {
                let column = Column::of(target);
                eprintln!("[{name}] {} run {run}/{}", column.name(), args.runs);
                match workload.run(target) {
                    Ok(Outcome::Measured(samples)) => results.add(name, column, &samples),
                    Ok(Outcome::Unsupported(why)) => results.note(name, column.name(), &why),
                    Err(err) => {
                        all_ok = false;
                        eprintln!("[{name}] {} run {run} failed: {err:#}", column.name());
                        results.note(name, column.name(), &format!("FAILED: {err:#}"));
                    }
                }
            }
        }
    }
    println!();
    println!("Results (min / median / max over {} run(s))", args.runs);
    println!();
    print!("{}", results.results_table());
    if targets.len() > 1 {
        println!();
        println!("Comparison (medians)");
        println!();
        print!("{}", results.comparison_table());
    }
    Ok(all_ok)
}

/// `deputy` next to this executable: `cargo run --release -p deputy-bench` lives in
/// target/release, where `cargo build --release -p deputy-cli` puts deputy.
fn default_deputy() -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe().context("locating deputy-bench")?;
    let dir = exe
        .parent()
        .context("deputy-bench has no parent directory")?;
    Ok(dir.join("deputy"))
}

fn checked(kind: Kind, path: PathBuf) -> anyhow::Result<Target> {
    if !path.is_file() {
        let hint = match kind {
            Kind::Deputy => " (build it with `cargo build --release -p deputy-cli`)",
            Kind::Codex => " (scripts/bench-vs-codex.sh installs it)",
        };
        anyhow::bail!("{kind} binary {} not found{hint}", path.display());
    }
    Ok(Target {
        kind,
        path,
        before: false,
    })
}

/// CPU count and kernel, for reading the figures later.
fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, usize::from);
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!("{cpus} CPU(s), Linux {}", kernel.trim())
}
