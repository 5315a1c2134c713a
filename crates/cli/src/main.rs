//! The `deputy` binary: parses arguments and wires the front doors to the engine.
//!
//! It starts at its own C `main` rather than std's ([`main`] says why).

// The test harness brings its own entry point.
#![cfg_attr(not(test), no_main)]

mod debug_cmd;
mod features;
mod listen_cmd;
mod mcp_cmd;
mod process_start;
mod review_cmd;
mod sandbox_cmd;
mod sessions_cmd;
mod signals;

use std::ffi::OsStr;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use deputy_core::ThreadManager;
use deputy_core::config::{ConfigLayers, ConfigOverrides, deputy_home, parse_cli_override};
use deputy_core::rollout::{SessionSource, ThreadIdError, list_sessions, resolve_thread_id};
use deputy_protocol::{AskForApproval, SandboxMode};

use signals::TerminationSignals;

/// deputy: a coding agent that reads, edits and runs code in your project, in a sandbox.
///
/// Give it a task from the terminal with `deputy exec "fix the failing test"` (progress
/// on stderr, the answer on stdout), or serve it to an MCP client with
/// `deputy mcp-server`. Settings live in ~/.deputy/config.toml (or $DEPUTY_HOME);
/// sessions are saved there and can be resumed with `deputy exec resume`.
#[derive(Debug, Parser)]
#[command(name = "deputy", version)]
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
    /// Serve deputy over MCP on stdio (or Streamable HTTP with `--listen`): `codex`,
    /// `codex-reply`, `review` and the conversation tools.
    McpServer(McpServerArgs),
    /// Manage the MCP servers whose tools the model is offered (`[mcp_servers]`).
    #[command(subcommand)]
    Mcp(mcp_cmd::McpCommand),
    /// Serve Codex's app-server v2 protocol (threads, turns, items) on stdio.
    AppServer(AppServerArgs),
    /// Serve deputy to an editor over the Agent Client Protocol (v1) on stdio.
    Acp,
    /// Run a command under deputy's sandbox, to check what it allows.
    Sandbox(SandboxArgs),
    /// List saved sessions or show one.
    #[command(subcommand)]
    Sessions(SessionsCommand),
    /// Review a change in a git repository: findings on stdout, most urgent first.
    Review(review_cmd::ReviewArgs),
    /// Show what deputy would do without doing it.
    #[command(subcommand)]
    Debug(debug_cmd::DebugCommand),
}

#[derive(Debug, Args)]
struct ExecArgs {
    #[command(subcommand)]
    command: Option<ExecSubcommand>,
    #[command(flatten)]
    flags: ExecFlags,
    /// The task. `-` or nothing reads it from stdin.
    prompt: Option<String>,
}

/// Options of `deputy exec` and `deputy exec resume`.
#[derive(Debug, Args)]
struct ExecFlags {
    /// Print the run as `codex exec --json` JSONL on stdout (thread.started, turn.started,
    /// item.started|updated|completed, turn.completed|turn.failed) instead of the live view.
    #[arg(global = true, long, alias = "experimental-json")]
    json: bool,
    /// Print every engine event as a Codex `EventMsg` JSON line on stdout (what
    /// `codex/event` carries over MCP) instead of the live view.
    #[arg(global = true, long, conflicts_with = "json")]
    json_events: bool,
    /// Working directory of the session.
    #[arg(
        global = true,
        short = 'C',
        long = "cd",
        visible_alias = "cwd",
        value_name = "DIR"
    )]
    cwd: Option<PathBuf>,
    /// Model to use.
    #[arg(global = true, short = 'm', long)]
    model: Option<String>,
    /// Config profile to use.
    #[arg(global = true, short = 'p', long)]
    profile: Option<String>,
    /// Sandbox mode: read-only (the default), workspace-write or danger-full-access.
    #[arg(global = true, short = 's', long = "sandbox", value_parser = parse_kebab::<SandboxMode>)]
    sandbox: Option<SandboxMode>,
    /// Approval policy: untrusted, on-failure, on-request (the default) or never.
    #[arg(global = true, short = 'a', long = "ask-for-approval", value_parser = parse_kebab::<AskForApproval>)]
    approval: Option<AskForApproval>,
    /// Let deputy edit the working directory and ask before anything else:
    /// `-s workspace-write -a on-request`.
    #[arg(global = true, long, conflicts_with_all = ["sandbox", "approval"])]
    full_auto: bool,
    /// Another directory the sandbox lets commands and patches write in (repeatable).
    #[arg(global = true, long = "add-dir", value_name = "DIR")]
    add_dir: Vec<PathBuf>,
    /// An image to send with the task (repeatable, or comma-separated): PNG, JPEG, GIF or
    /// WebP, at most 10 MiB.
    #[arg(
        global = true,
        short = 'i',
        long = "image",
        value_name = "FILE",
        value_delimiter = ','
    )]
    images: Vec<PathBuf>,
    /// A JSON Schema file the final answer must follow (sent to the model as a strict
    /// structured-output format).
    #[arg(global = true, long, value_name = "FILE")]
    output_schema: Option<PathBuf>,
    /// Also write the final answer to FILE.
    #[arg(
        global = true,
        short = 'o',
        long = "output-last-message",
        value_name = "FILE"
    )]
    output_last_message: Option<PathBuf>,
    /// Accepted for Codex compatibility: deputy needs no git repository.
    #[arg(global = true, long)]
    skip_git_repo_check: bool,
    #[command(flatten)]
    codex_only: CodexOnlyFlags,
}

/// Flags of `codex exec` that change nothing here, accepted (with a note on stderr) so
/// that programs written for Codex, such as its TypeScript SDK, run unchanged.
#[derive(Debug, Args)]
struct CodexOnlyFlags {
    #[arg(global = true, long, hide = true, value_name = "SOURCE")]
    thread_source: Option<String>,
    #[arg(global = true, long, hide = true, value_name = "PROGRAM")]
    cyber_access_program: Option<String>,
    #[arg(global = true, long, hide = true, value_name = "WHEN")]
    color: Option<String>,
    #[arg(global = true, long, hide = true)]
    progress_cursor: bool,
}

impl CodexOnlyFlags {
    /// Says on stderr which were given and are ignored.
    fn warn(&self) {
        let given = [
            ("--thread-source", self.thread_source.is_some()),
            (
                "--cyber-access-program",
                self.cyber_access_program.is_some(),
            ),
            ("--color", self.color.is_some()),
            ("--progress-cursor", self.progress_cursor),
        ];
        for (flag, _) in given.iter().filter(|(_, given)| *given) {
            let _ = writeln!(
                std::io::stderr(),
                "deputy: ignoring {flag} (a Codex option deputy has no use for)"
            );
        }
    }
}

#[derive(Debug, Args)]
struct McpServerArgs {
    /// Serve MCP over Streamable HTTP at `http://HOST:PORT/mcp` instead of stdio.
    #[arg(long, value_name = "HOST:PORT", value_parser = listen_cmd::parse_http_listen)]
    listen: Option<std::net::SocketAddr>,
    #[command(flatten)]
    access: listen_cmd::AccessArgs,
    /// Close an HTTP session after this many seconds without a message either way.
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    session_idle_timeout: u64,
}

#[derive(Debug, Args)]
struct AppServerArgs {
    #[command(subcommand)]
    command: Option<AppServerCommand>,
    /// Where to serve: `stdio://` (the default) or `ws://IP:PORT` (one JSON-RPC message
    /// per WebSocket text frame).
    #[arg(long, value_name = "URL", default_value = "stdio://")]
    listen: deputy_app_server::ListenAddress,
    #[command(flatten)]
    access: listen_cmd::AccessArgs,
    /// Turn a Codex feature on (repeatable); one deputy lacks is ignored with a warning.
    #[arg(long, value_name = "FEATURE")]
    enable: Vec<String>,
    /// Turn a Codex feature off (repeatable); one deputy cannot turn off is ignored with a warning.
    #[arg(long, value_name = "FEATURE")]
    disable: Vec<String>,
}

#[derive(Debug, Subcommand)]
enum AppServerCommand {
    /// Write the protocol's JSON Schema (one file per type, plus a bundle) into DIR.
    GenerateJsonSchema {
        /// The directory to write into (created if missing).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
enum ExecSubcommand {
    /// Run the next turn of a saved session.
    Resume(ResumeArgs),
}

#[derive(Debug, Args)]
struct ResumeArgs {
    /// Resume the most recently updated session (in the `-C` directory, when given).
    #[arg(long)]
    last: bool,
    /// The session's thread id, or a unique start of it (omit it with `--last`).
    session_id: Option<String>,
    /// The prompt. `-` or nothing reads it from stdin.
    prompt: Option<String>,
}

#[derive(Debug, Subcommand)]
enum SessionsCommand {
    /// List saved sessions, most recently updated first, one tab-separated line
    /// each: thread id, updated (UTC), cwd, first prompt, turns.
    List {
        /// Only sessions whose working directory is DIR.
        #[arg(short = 'C', long = "cd", visible_alias = "cwd", value_name = "DIR")]
        cwd: Option<PathBuf>,
        /// Show at most N sessions.
        #[arg(long, value_name = "N", default_value_t = 20)]
        limit: usize,
    },
    /// Print a session's conversation as text.
    Show {
        /// The session's thread id, or a unique start of it.
        id: String,
    },
    /// Roll back (or complete) patches a killed session left half-applied, and cut off a
    /// torn last line — what resuming the session would do — for one session or, without
    /// an id, every session that needs it.
    Repair {
        /// The session's thread id, or a unique start of it.
        id: Option<String>,
    },
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
    /// Allow Unix sockets (connections to local daemons whose sockets are visible).
    #[arg(long)]
    allow_unix_sockets: bool,
    /// The command and its arguments.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

/// Parses a kebab-case enum value the way config.toml spells it.
fn parse_kebab<T: serde::de::DeserializeOwned>(value: &str) -> Result<T, String> {
    serde_json::from_value(serde_json::Value::String(value.to_string())).map_err(|e| e.to_string())
}

/// The process's entry point, called by the C runtime in place of std's.
///
/// std's start-up finds the main thread's stack by reading and parsing /proc/self/maps, to
/// report a stack overflow by name: a tenth of a millisecond of every start, paid by the
/// server and, through the sandbox launcher, by every command (`deputy-bench`: cold start
/// and launcher). The rest of std's start-up, and a panic's status 101, are
/// [`deputy_sandbox::process_start::run`]'s. Arguments come from glibc as they do for std. A
/// stack overflow is still a crash, with SIGSEGV instead of a message.
#[cfg_attr(not(test), unsafe(no_mangle))]
#[cfg_attr(
    test,
    allow(dead_code, reason = "the test harness has its own entry point")
)]
extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    deputy_sandbox::process_start::run(deputy_main)
}

fn deputy_main() -> i32 {
    // The sandbox launcher must run before any thread or runtime exists:
    // Landlock and seccomp apply to the calling thread and what it execs.
    if std::env::args_os().nth(1).as_deref()
        == Some(OsStr::new(deputy_sandbox::LAUNCHER_SUBCOMMAND))
    {
        deputy_sandbox::launcher_main(std::env::args_os().skip(2));
    }
    process_start::keep_large_buffers_out_of_the_heap();
    let result = if plain_mcp_server() {
        init_logging();
        run_mcp_stdio(config_layers(Vec::new()))
    } else {
        let cli = Cli::parse();
        init_logging();
        run(cli)
    };
    match result {
        Ok(code) => code.clamp(0, 255),
        Err(err) => {
            // A closed stderr must not turn an error into a panic.
            let _ = writeln!(std::io::stderr(), "error: {}", one_line(&err));
            1
        }
    }
}

/// `err` and its causes on one line, each cause left out when what comes before already
/// says it (errors that quote their cause would otherwise repeat it).
fn one_line(err: &anyhow::Error) -> String {
    let mut line = err.to_string();
    for cause in err.chain().skip(1) {
        let cause = cause.to_string();
        if !line.contains(&cause) {
            line.push_str(": ");
            line.push_str(&cause);
        }
    }
    line
}

fn init_logging() {
    let subscriber = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        // With stderr closed (`deputy exec … 2>&1 | head`), logging must fail quietly.
        .log_internal_errors(false);
    // Without RUST_LOG a plain level does: building an `EnvFilter` compiles its directive
    // matchers, code and pages every start-up would pay for a filter nobody asked for.
    match tracing_subscriber::EnvFilter::try_from_default_env() {
        Ok(filter) => subscriber.with_env_filter(filter).init(),
        Err(_) => subscriber.with_max_level(tracing::Level::WARN).init(),
    }
}

/// Whether the command line is exactly `deputy mcp-server`, as MCP clients start it:
/// then there is nothing to parse, and building clap's description of every subcommand
/// and flag (a fifth of a millisecond, and its pages) is left out of the server's start.
/// Anything else, `--help` and `-c` included, goes through clap.
fn plain_mcp_server() -> bool {
    let mut args = std::env::args_os().skip(1);
    args.next().as_deref() == Some(OsStr::new("mcp-server")) && args.next().is_none()
}

/// The configuration layers of a command: `~/.deputy/config.toml` under `-c` overrides.
fn config_layers(cli_overrides: Vec<(String, toml::Value)>) -> ConfigLayers {
    ConfigLayers {
        deputy_home: deputy_home(),
        cli_overrides,
        ..ConfigLayers::default()
    }
}

fn run(cli: Cli) -> anyhow::Result<i32> {
    let cli_overrides = cli
        .config_overrides
        .iter()
        .map(|raw| parse_cli_override(raw))
        .collect::<Result<Vec<_>, _>>()?;
    let layers = config_layers(cli_overrides);
    match cli.command {
        Command::Exec(args) => run_exec(layers, args),
        Command::McpServer(McpServerArgs {
            listen: Some(addr),
            access,
            session_idle_timeout,
        }) => run_to_end(server_runtime()?, async {
            listen_cmd::run_mcp_http(addr, &access, session_idle_timeout, layers, launcher()).await
        }),
        Command::McpServer(McpServerArgs { listen: None, .. }) => run_mcp_stdio(layers),
        Command::AppServer(AppServerArgs {
            command: Some(AppServerCommand::GenerateJsonSchema { out }),
            ..
        }) => {
            deputy_app_server::write_json_schema(&out)?;
            Ok(0)
        }
        Command::AppServer(AppServerArgs {
            command: None,
            listen,
            access,
            enable,
            disable,
        }) => {
            for warning in features::check_feature_flags(&enable, &disable)
                .map_err(|why| anyhow::anyhow!("{why}"))?
            {
                // A closed stderr must not stop the server.
                let _ = writeln!(std::io::stderr(), "warning: {warning}");
            }
            run_to_end(server_runtime()?, async {
                match listen {
                    deputy_app_server::ListenAddress::WebSocket(addr) => {
                        listen_cmd::run_app_server_ws(addr, &access, layers, launcher()).await
                    }
                    deputy_app_server::ListenAddress::Stdio => {
                        let signals = TerminationSignals::install()?;
                        Ok(deputy_app_server::run_stdio_server(
                            layers,
                            launcher(),
                            signals.received(),
                        )
                        .await?)
                    }
                }
            })
        }
        Command::Acp => run_to_end(server_runtime()?, async {
            let signals = TerminationSignals::install()?;
            Ok(deputy_acp::run_stdio_agent(layers, launcher(), signals.received()).await?)
        }),
        Command::Sandbox(args) => sandbox_cmd::run_sandbox_command(sandbox_cmd::SandboxRequest {
            mode: args.sandbox,
            cwd: args.cwd,
            writable_roots: args.writable_roots,
            network_access: args.network,
            allow_unix_sockets: args.allow_unix_sockets,
            argv: args.command,
        }),
        Command::Sessions(SessionsCommand::List { cwd, limit }) => {
            sessions_cmd::list(&layers.deputy_home, cwd.as_deref(), limit)
        }
        Command::Sessions(SessionsCommand::Show { id }) => {
            sessions_cmd::show(&layers.deputy_home, &id)
        }
        Command::Sessions(SessionsCommand::Repair { id }) => {
            sessions_cmd::repair(&layers.deputy_home, id.as_deref())
        }
        Command::Review(args) => review_cmd::run(layers, args),
        Command::Debug(command) => debug_cmd::run(layers, command),
        Command::Mcp(command) => mcp_cmd::run(&layers.deputy_home, command),
    }
}

/// `deputy mcp-server` on stdio.
fn run_mcp_stdio(layers: ConfigLayers) -> anyhow::Result<i32> {
    run_to_end(server_runtime()?, async {
        let signals = TerminationSignals::install()?;
        deputy_mcp_server::run_stdio_server(layers, launcher(), signals.received()).await
    })
}

fn run_exec(mut layers: ConfigLayers, args: ExecArgs) -> anyhow::Result<i32> {
    if let Some(ExecSubcommand::Resume(resume)) = args.command {
        if args.prompt.is_some() {
            anyhow::bail!("give the prompt after `resume`: `deputy exec resume ID PROMPT`");
        }
        return run_exec_resume(layers, args.flags, resume);
    }
    let prompt = read_prompt(args.prompt)?;
    let options = exec_options(&args.flags, prompt)?;
    layers.overrides = overrides(args.flags)?;
    let config = layers.load()?;
    run_to_end(runtime()?, async {
        let signals = TerminationSignals::install()?;
        let manager = ThreadManager::new(launcher(), SessionSource::Exec);
        deputy_exec::run_exec(&manager, config, options, signals.received()).await
    })
}

fn run_exec_resume(
    mut layers: ConfigLayers,
    flags: ExecFlags,
    args: ResumeArgs,
) -> anyhow::Result<i32> {
    let (id, prompt) = match (args.last, args.session_id, args.prompt) {
        (true, Some(_), Some(_)) => {
            anyhow::bail!("with --last, give only the prompt: `deputy exec resume --last PROMPT`")
        }
        (true, prompt, None) | (true, None, prompt) => {
            let cwd = flags.cwd.as_deref();
            let newest = list_sessions(&layers.deputy_home, cwd, 1)?;
            let Some(session) = newest.into_iter().next() else {
                match cwd {
                    Some(dir) => anyhow::bail!("no saved session in {}", dir.display()),
                    None => anyhow::bail!("no saved session to resume"),
                }
            };
            (session.id, prompt)
        }
        (false, Some(id), prompt) => {
            let resolved = resolve_thread_id(&layers.deputy_home, &id).map_err(|err| {
                match (&err, &prompt) {
                    // `deputy exec resume "fix it"`: a prompt where the id goes.
                    (ThreadIdError::Malformed(_) | ThreadIdError::NotFound(_), None) => {
                        anyhow::anyhow!(
                            "{err}\n`deputy exec resume` takes the session first, then the prompt: \
                             `deputy exec resume ID PROMPT` (ids: `deputy sessions list`), \
                             or `deputy exec resume --last PROMPT` for the newest session"
                        )
                    }
                    _ => err.into(),
                }
            })?;
            (resolved, prompt)
        }
        (false, None, _) => {
            anyhow::bail!(
                "which session? pass its thread id (see `deputy sessions list`), or --last for the newest"
            )
        }
    };
    let prompt = read_prompt(prompt)?;
    let options = exec_options(&flags, prompt)?;
    layers.overrides = overrides(flags)?;
    run_to_end(runtime()?, async {
        let signals = TerminationSignals::install()?;
        let manager = ThreadManager::new(launcher(), SessionSource::Exec);
        let (thread, resumed_after) = manager.open(&id, &layers).await?;
        if options.output == deputy_exec::OutputMode::Human {
            let _ = writeln!(std::io::stderr(), "deputy: resuming session {id}");
        }
        deputy_exec::run_turn_on(thread, resumed_after, options, signals.received()).await
    })
}

/// What `deputy exec` is asked to do besides its settings; reads `--output-schema`.
fn exec_options(flags: &ExecFlags, prompt: String) -> anyhow::Result<deputy_exec::ExecOptions> {
    flags.codex_only.warn();
    let output_schema = match &flags.output_schema {
        None => None,
        Some(path) => Some(read_output_schema(path)?),
    };
    Ok(deputy_exec::ExecOptions {
        prompt,
        images: flags.images.clone(),
        output_schema,
        last_message_file: flags.output_last_message.clone(),
        output: output_mode(flags),
    })
}

/// The JSON Schema in `path`: a JSON object, or a clear error naming the file.
fn read_output_schema(path: &Path) -> anyhow::Result<serde_json::Value> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--output-schema: cannot read {}", path.display()))?;
    let schema: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("--output-schema: {} is not JSON", path.display()))?;
    if !schema.is_object() {
        anyhow::bail!(
            "--output-schema: {} holds no JSON Schema object",
            path.display()
        );
    }
    Ok(schema)
}

fn output_mode(flags: &ExecFlags) -> deputy_exec::OutputMode {
    if flags.json {
        deputy_exec::OutputMode::Json
    } else if flags.json_events {
        deputy_exec::OutputMode::JsonEvents
    } else {
        deputy_exec::OutputMode::Human
    }
}

/// The prompt argument, or stdin when it is `-` or missing.
fn read_prompt(arg: Option<String>) -> anyhow::Result<String> {
    let prompt = match arg.as_deref() {
        Some(p) if p != "-" => p.to_string(),
        _ => {
            let stdin = std::io::stdin();
            if stdin.is_terminal() {
                let _ = writeln!(
                    std::io::stderr(),
                    "Reading the task from stdin (end it with Ctrl-D; or pass it as an argument)…"
                );
            }
            std::io::read_to_string(stdin).context("reading the prompt from stdin")?
        }
    };
    if prompt.trim().is_empty() {
        anyhow::bail!("no prompt given: pass the task as an argument or on stdin");
    }
    Ok(prompt)
}

fn overrides(flags: ExecFlags) -> anyhow::Result<ConfigOverrides> {
    let (sandbox_mode, approval_policy) = if flags.full_auto {
        (
            Some(SandboxMode::WorkspaceWrite),
            Some(AskForApproval::OnRequest),
        )
    } else {
        (flags.sandbox, flags.approval)
    };
    let additional_writable_roots = flags
        .add_dir
        .iter()
        .map(|dir| {
            dir.canonicalize()
                .ok()
                .filter(|dir| dir.is_dir())
                .with_context(|| format!("--add-dir {}: no such directory", dir.display()))
        })
        .collect::<anyhow::Result<_>>()?;
    Ok(ConfigOverrides {
        model: flags.model,
        profile: flags.profile,
        cwd: flags.cwd,
        approval_policy,
        sandbox_mode,
        additional_writable_roots,
        ..ConfigOverrides::default()
    })
}

/// The program that supervises and confines each command: the stand-alone launcher beside
/// this binary, else this binary re-executed; held open from the first call on, so that no
/// file put in their place later runs in their stead (`deputy_sandbox::own_launcher`).
pub(crate) fn launcher() -> Option<PathBuf> {
    deputy_sandbox::own_launcher()
}

/// The MCP server's runtime: one thread. Its work is mostly relaying messages and waiting
/// on the model and on commands; measured with `deputy-bench`, one thread starts faster,
/// answers sooner and uses less memory than a worker pool on small machines.
fn server_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// How long deputy waits at exit for its commands' zygote to end (it takes well under a
/// millisecond; the bound only keeps a stuck one from holding deputy up).
const ZYGOTE_EXIT_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Runs a front door to its end, then leaves without waiting for blocked reads of stdin:
/// after a signal, nobody will close it. The commands' zygote is ended and waited for, so
/// that the CPU time of what it ran is counted in deputy's.
fn run_to_end(
    runtime: tokio::runtime::Runtime,
    front_door: impl std::future::Future<Output = anyhow::Result<i32>>,
) -> anyhow::Result<i32> {
    deputy_core::start_sandbox_probe();
    let result = runtime.block_on(front_door);
    runtime.shutdown_background();
    deputy_core::exec::stop_zygotes(ZYGOTE_EXIT_WAIT);
    deputy_core::wait_for_sandbox_probe();
    result
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}
