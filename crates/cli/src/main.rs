//! The `deputy` binary: parses arguments and wires the front doors to the engine.

mod sandbox_cmd;

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use deputy_core::ThreadManager;
use deputy_core::config::{ConfigLayers, ConfigOverrides, deputy_home, parse_cli_override};
use deputy_protocol::{AskForApproval, SandboxMode};

/// deputy: a coding agent you drive over MCP or from the command line.
#[derive(Debug, Parser)]
#[command(name = "deputy", version, about)]
struct Cli {
    /// Override a config.toml value: `-c key=value` (dotted key; value parsed as TOML, else a string).
    #[arg(short = 'c', long = "config", global = true, value_name = "KEY=VALUE")]
    config_overrides: Vec<String>,

    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one task headless: progress on stderr, final message on stdout.
    Exec(ExecArgs),
    /// Serve the `codex` and `codex-reply` tools over MCP on stdio.
    McpServer,
    /// Run a command under deputy's sandbox, to check what it allows.
    Sandbox(SandboxArgs),
}

#[derive(Debug, Args)]
struct ExecArgs {
    /// Print every event as one JSON line on stdout.
    #[arg(long)]
    json: bool,
    /// Working directory of the session.
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// Model to use.
    #[arg(short = 'm', long)]
    model: Option<String>,
    /// Config profile to use.
    #[arg(short = 'p', long)]
    profile: Option<String>,
    /// Sandbox mode: read-only, workspace-write or danger-full-access.
    #[arg(short = 's', long = "sandbox", value_parser = parse_kebab::<SandboxMode>)]
    sandbox: Option<SandboxMode>,
    /// Approval policy: untrusted, on-failure, on-request or never.
    #[arg(short = 'a', long = "ask-for-approval", value_parser = parse_kebab::<AskForApproval>)]
    approval: Option<AskForApproval>,
    /// The task. `-` or nothing reads it from stdin.
    prompt: Option<String>,
}

#[derive(Debug, Args)]
struct SandboxArgs {
    /// Sandbox mode: read-only, workspace-write or danger-full-access.
    #[arg(short = 's', long = "sandbox", default_value = "workspace-write", value_parser = parse_kebab::<SandboxMode>)]
    sandbox: SandboxMode,
    /// Working directory (the workspace root for workspace-write).
    #[arg(short = 'C', long = "cd", value_name = "DIR")]
    cwd: Option<PathBuf>,
    /// Another directory the command may write in (repeatable).
    #[arg(long = "writable-root", value_name = "DIR")]
    writable_roots: Vec<PathBuf>,
    /// Allow network access.
    #[arg(long)]
    network: bool,
    /// The command and its arguments.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

/// Parses a kebab-case enum value the way config.toml spells it.
fn parse_kebab<T: serde::de::DeserializeOwned>(value: &str) -> Result<T, String> {
    serde_json::from_value(serde_json::Value::String(value.to_string())).map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    // The sandbox launcher must run before any thread or runtime exists:
    // Landlock and seccomp apply to the calling thread and what it execs.
    if std::env::args_os().nth(1).as_deref()
        == Some(OsStr::new(deputy_sandbox::LAUNCHER_SUBCOMMAND))
    {
        deputy_sandbox::launcher_main(std::env::args_os().skip(2));
    }
    let cli = Cli::parse();
    init_logging();
    match run(cli) {
        Ok(code) => ExitCode::from(code.clamp(0, 255) as u8),
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
}

fn run(cli: Cli) -> anyhow::Result<i32> {
    let cli_overrides = cli
        .config_overrides
        .iter()
        .map(|raw| parse_cli_override(raw))
        .collect::<Result<Vec<_>, _>>()?;
    let layers = ConfigLayers {
        deputy_home: deputy_home(),
        cli_overrides,
        ..ConfigLayers::default()
    };
    match cli.command {
        Command::Exec(args) => run_exec(layers, args),
        Command::McpServer => {
            runtime()?.block_on(deputy_mcp_server::run_stdio_server(layers, launcher()))
        }
        Command::Sandbox(args) => sandbox_cmd::run_sandbox_command(
            args.sandbox,
            args.cwd,
            args.writable_roots,
            args.network,
            args.command,
        ),
    }
}

fn run_exec(mut layers: ConfigLayers, args: ExecArgs) -> anyhow::Result<i32> {
    let prompt = match args.prompt.as_deref() {
        Some(p) if p != "-" => p.to_string(),
        _ => std::io::read_to_string(std::io::stdin()).context("reading the prompt from stdin")?,
    };
    if prompt.trim().is_empty() {
        anyhow::bail!("no prompt given: pass the task as an argument or on stdin");
    }
    layers.overrides = ConfigOverrides {
        model: args.model,
        profile: args.profile,
        cwd: args.cwd,
        approval_policy: args.approval,
        sandbox_mode: args.sandbox,
        ..ConfigOverrides::default()
    };
    let config = layers.load()?;
    runtime()?.block_on(async {
        log_sandbox_support();
        let manager = ThreadManager::new(launcher());
        deputy_exec::run_exec(
            &manager,
            config,
            deputy_exec::ExecOptions {
                prompt,
                json: args.json,
            },
        )
        .await
    })
}

/// deputy re-executes itself to confine commands.
fn launcher() -> Option<PathBuf> {
    std::env::current_exe().ok()
}

fn log_sandbox_support() {
    match deputy_sandbox::probe() {
        Ok(support) => tracing::info!("sandbox: {support}"),
        Err(why) => tracing::warn!("sandbox unavailable, sandboxed commands will not run: {why}"),
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}
