//! `deputy debug …`: what deputy would do, shown without doing it.
//!
//! `deputy debug model-request [-m MODEL] [PROMPT]` prints, as JSON, the first request a
//! new session would send to the model — endpoint, headers, body with the tools and
//! instructions its family is given — with every value that may be a secret (header
//! values, query values, a password in the URL) replaced. Nothing is sent.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, Subcommand};
use deputy_core::config::{ConfigLayers, ConfigOverrides};

/// Subcommands of `deputy debug`.
#[derive(Debug, Subcommand)]
pub(crate) enum DebugCommand {
    /// Print the first request deputy would send to the model (secrets redacted; nothing
    /// is sent).
    ModelRequest(ModelRequestArgs),
}

/// Arguments of `deputy debug model-request`.
#[derive(Debug, Args)]
pub(crate) struct ModelRequestArgs {
    /// The model to show the request for (the configured one when left out).
    #[arg(short = 'm', long)]
    model: Option<String>,
    /// Config profile to use.
    #[arg(short = 'p', long)]
    profile: Option<String>,
    /// Working directory of the session (its AGENTS.md is read as a session's would be).
    #[arg(short = 'C', long = "cd", visible_alias = "cwd", value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// The user's message in the request.
    #[arg(default_value = "hello")]
    prompt: String,
}

/// Runs `deputy debug SUBCOMMAND`.
pub(crate) fn run(mut layers: ConfigLayers, command: DebugCommand) -> anyhow::Result<i32> {
    let DebugCommand::ModelRequest(args) = command;
    layers.overrides = ConfigOverrides {
        model: args.model,
        profile: args.profile,
        cwd: args.cwd,
        ..ConfigOverrides::default()
    };
    let config = layers.load()?;
    for warning in &config.warnings {
        eprintln!("warning: {warning}");
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let request = runtime.block_on(deputy_core::request::first_request(&config, &args.prompt))?;
    let text = serde_json::to_string_pretty(&request)?;
    let mut stdout = std::io::stdout().lock();
    match writeln!(stdout, "{text}").and_then(|()| stdout.flush()) {
        // A reader that stopped early (`| head`) wanted no more.
        Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => Err(err.into()),
        _ => Ok(0),
    }
}
