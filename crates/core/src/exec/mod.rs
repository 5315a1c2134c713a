//! Running one command as a real process: its own session, streamed output, a capped
//! capture, a timeout that stops the whole group.
//!
//! The command is normally deputy's launcher supervising the real one (see `deputy-sandbox`):
//! stopping it means SIGTERM to its group first, which lets a supervisor without a PID
//! namespace kill the tree it adopted, then SIGKILL after a grace period.
//!
//! [`run_command`] must run on a thread that lives as long as deputy (the main thread, or a
//! tokio worker of a multi-thread runtime), never in `spawn_blocking` or after
//! `block_in_place`: the launcher dies when the thread that spawned it exits (its
//! parent-death signal follows that thread), and blocking-pool threads exit when idle.

// Runs on the async runtime: no blocking std calls (see clippy.toml).
#![cfg_attr(not(test), warn(clippy::disallowed_methods))]

mod capture;
mod format;
mod zygote;

use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use deputy_protocol::ExecOutputStream;
use deputy_sandbox::OwnChildren;
use tokio::io::AsyncReadExt;
use tokio::process::Command;
use tokio_util::sync::CancellationToken;

pub use capture::HeadTailBuffer;
pub use format::{format_exec_output, truncate_middle};
pub use zygote::stop_zygotes;

/// Bytes kept of each stream (and of the interleaved output) per command.
pub const CAPTURE_CAP_BYTES: usize = 1024 * 1024;
/// Bytes of live output streamed as deltas per command; the rest is only captured.
pub const DELTA_CAP_BYTES: usize = 1024 * 1024;
/// Timeout when the model gives none.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Exit code reported when the command was killed at its timeout (as `timeout(1)` does).
pub const TIMEOUT_EXIT_CODE: i32 = 124;
/// How long output still arriving after the command exited is awaited.
const DRAIN_GRACE: Duration = Duration::from_millis(500);
/// How long a stopped command's group gets after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// One command to run.
#[derive(Debug, Clone)]
pub struct ExecRequest {
    /// The program and its arguments (already wrapped by the sandbox, if any).
    pub argv: Vec<String>,
    /// Working directory.
    pub cwd: PathBuf,
    /// Stop the process group after this long.
    pub timeout: Duration,
    /// The command's whole environment (nothing else is inherited from deputy).
    pub env: crate::exec_env::Environment,
    /// `argv[0]` is deputy's launcher, which gives the command a session of its own. Only
    /// then is it started without a fork (see [`start`]); any other command gets its session
    /// in a forked child before exec.
    pub supervised: bool,
}

/// How a command ended.
#[derive(Debug, Clone)]
pub struct ExecOutput {
    /// Exit code; 124 on timeout, 128+N when killed by signal N.
    pub exit_code: i32,
    /// Captured stdout (head and tail kept).
    pub stdout: HeadTailBuffer,
    /// Captured stderr (head and tail kept).
    pub stderr: HeadTailBuffer,
    /// Both streams in arrival order (head and tail kept).
    pub aggregated: HeadTailBuffer,
    /// Wall time.
    pub duration: Duration,
    /// Whether the timeout fired.
    pub timed_out: bool,
}

/// Why a command could not run to an exit status.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The program could not be started.
    #[error("failed to start `{program}`: {source}")]
    Spawn {
        /// argv[0].
        program: String,
        /// Why.
        source: std::io::Error,
    },
    /// Waiting on the process failed.
    #[error("failed while running the command: {0}")]
    Io(#[from] std::io::Error),
    /// The command was cancelled (turn interrupted); its process group was killed.
    #[error("command interrupted")]
    Cancelled,
    /// argv was empty.
    #[error("empty command")]
    EmptyCommand,
    /// The working directory is missing; spawning would blame the program instead.
    #[error("working directory `{}` does not exist or is not a directory", .0.display())]
    MissingWorkdir(PathBuf),
    /// The command had to be sandboxed and the sandbox cannot run here.
    #[error("the sandbox is unavailable ({0}); the command was not run")]
    SandboxUnavailable(String),
}

/// The command's process group (its session's only group when it starts). Dropped while
/// armed (cancelled turn, dropped future), it stops the group: SIGTERM now, SIGKILL after
/// [`STOP_GRACE`] from a detached thread, so that an abandoned command leaves nothing running.
pub(crate) struct ProcessGroupGuard(Option<i32>);

impl ProcessGroupGuard {
    fn signal(&self, signal: libc::c_int) {
        if let Some(pgid) = self.0 {
            // SAFETY: killpg only sends a signal; pgid is the child's own group.
            unsafe {
                libc::killpg(pgid, signal);
            }
        }
    }

    /// SIGKILLs the group and disarms the guard.
    pub(crate) fn kill(&mut self) {
        self.signal(libc::SIGKILL);
        self.0 = None;
    }

    /// SIGTERMs the group, waits up to [`STOP_GRACE`] for the leader, then SIGKILLs the group.
    pub(crate) async fn stop(
        &mut self,
        leader: &mut impl Leads,
    ) -> std::io::Result<std::process::ExitStatus> {
        self.signal(libc::SIGTERM);
        let status = match tokio::time::timeout(STOP_GRACE, leader.wait()).await {
            Ok(status) => status,
            Err(_) => {
                self.signal(libc::SIGKILL);
                leader.wait().await
            }
        };
        self.kill();
        status
    }
}

impl Drop for ProcessGroupGuard {
    #[allow(
        clippy::disallowed_methods,
        reason = "the grace period is slept on a thread of its own, never on the runtime"
    )]
    fn drop(&mut self) {
        let Some(pgid) = self.0.take() else {
            return;
        };
        // SAFETY: killpg only sends a signal; pgid is the child's own group.
        unsafe {
            libc::killpg(pgid, libc::SIGTERM);
        }
        let backstop = std::thread::Builder::new()
            .name("deputy-stop-command".into())
            .spawn(move || {
                std::thread::sleep(STOP_GRACE);
                // SAFETY: as above; ESRCH once the group is gone.
                unsafe {
                    libc::killpg(pgid, libc::SIGKILL);
                }
                deputy_sandbox::kill_escaped(&OWN_CHILDREN);
            });
        if backstop.is_err() {
            // SAFETY: as above.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
    }
}

/// A command started as every command is: in a process group of its own (the command itself
/// in a session of its own), with only the environment it was given, counted as deputy's
/// own child (not an escaped one) while this lives, and its group stopped when this is
/// dropped before it was waited for.
pub(crate) struct Started {
    /// The process (usually the launcher supervising the command).
    pub(crate) child: tokio::process::Child,
    /// Its process group, stopped on drop unless killed or stopped already.
    pub(crate) group: ProcessGroupGuard,
    _own: deputy_sandbox::OwnChild<'static>,
}

/// `req`'s program and arguments, if it can be started at all.
#[allow(
    clippy::disallowed_methods,
    reason = "a stat before the fork: a command must be spawned from a long-lived runtime thread (see the module docs)"
)]
fn runnable(req: &ExecRequest) -> Result<(&String, &[String]), ExecError> {
    let (program, args) = req.argv.split_first().ok_or(ExecError::EmptyCommand)?;
    if !req.cwd.is_dir() {
        return Err(ExecError::MissingWorkdir(req.cwd.clone()));
    }
    Ok((program, args))
}

/// The process leading a command's group: started by deputy (counted as its own child), or
/// forked by the zygote.
enum Leader {
    Spawned {
        child: tokio::process::Child,
        _own: deputy_sandbox::OwnChild<'static>,
    },
    Forked(zygote::Forked),
}

/// A process whose exit can be awaited: the leader of a command's group.
pub(crate) trait Leads {
    /// Waits for the exit status; cancel-safe.
    async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus>;
}

impl Leads for tokio::process::Child {
    async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        tokio::process::Child::wait(self).await
    }
}

impl Leads for Leader {
    async fn wait(&mut self) -> std::io::Result<std::process::ExitStatus> {
        match self {
            Self::Spawned { child, .. } => child.wait().await,
            Self::Forked(forked) => forked.wait().await,
        }
    }
}

impl Leader {
    /// Starts `req` with its output to `stdout` and `stderr` and no input: through the
    /// launcher's zygote when it can take it, else as [`start`] does.
    async fn start(
        req: &ExecRequest,
        stdout: OwnedFd,
        stderr: OwnedFd,
    ) -> Result<(Self, ProcessGroupGuard), ExecError> {
        let (program, args) = runnable(req)?;
        if let Some(forked) = zygote::start(req, stdout.as_fd(), stderr.as_fd()).await {
            let forked = forked?;
            let group = ProcessGroupGuard(i32::try_from(forked.pid()).ok());
            return Ok((Self::Forked(forked), group));
        }
        let Started { child, group, _own } = spawn(req, program, args, |command| {
            command
                .stdin(Stdio::null())
                .stdout(Stdio::from(stdout))
                .stderr(Stdio::from(stderr));
        })?;
        Ok((Self::Spawned { child, _own }, group))
    }
}

/// A pipe whose ends are closed on exec: the read end for deputy, the write end for a
/// command (which gets it as one of its standard streams).
fn output_pipe() -> Result<(tokio::net::unix::pipe::Receiver, OwnedFd), ExecError> {
    let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)
        .map_err(|err| ExecError::Io(err.into()))?;
    Ok((
        tokio::net::unix::pipe::Receiver::from_owned_fd(read)?,
        write,
    ))
}

/// Starts `req` with the standard streams `stdio` sets up. Must be called on a thread that
/// lives as long as deputy (see the module's documentation).
pub(crate) fn start(
    req: &ExecRequest,
    stdio: impl FnOnce(&mut Command),
) -> Result<Started, ExecError> {
    let (program, args) = runnable(req)?;
    spawn(req, program, args, stdio)
}

/// [`start`], once [`runnable`] has given `req`'s program and arguments.
fn spawn(
    req: &ExecRequest,
    program: &String,
    args: &[String],
    stdio: impl FnOnce(&mut Command),
) -> Result<Started, ExecError> {
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(&req.cwd)
        .env_clear()
        .envs(req.env.iter().map(|(k, v)| (k, v)))
        // Stopping goes through the group guard: SIGTERM first, so a supervisor can clean up.
        .kill_on_drop(false);
    stdio(&mut command);
    if req.supervised {
        // A process group of its own is all the launcher needs (the group guard signals it;
        // the launcher puts the command in a session of its own). Without a pre-exec closure
        // the standard library spawns with posix_spawn, a vfork-style clone that shares
        // deputy's memory until the exec, instead of fork, which copies deputy's page tables
        // (a cost that grows with deputy's memory, paid on every command) and then
        // write-protects every page deputy touches next.
        command.process_group(0);
    } else {
        // SAFETY: the closure runs in the forked child before exec and only calls setsid(2),
        // which is async-signal-safe.
        unsafe {
            // A session of its own: no controlling terminal (nothing it runs can reach the
            // user's terminal through /dev/tty or be stopped by its job control), and a
            // process group whose id is its pid, for the guard.
            command.pre_exec(|| {
                if libc::setsid() == -1 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    adopt_orphans();
    let (child, own) = OWN_CHILDREN
        .start(|| command.spawn(), tokio::process::Child::id)
        .map_err(|source| ExecError::Spawn {
            program: program.clone(),
            source,
        })?;
    let group = ProcessGroupGuard(child.id().map(|pid| pid as i32));
    Ok(Started {
        child,
        group,
        _own: own,
    })
}

/// Where a stream's output is read into: small at first, since most commands print little
/// and a thousand of them may be running at once, and as large as a pipe's buffer after a
/// read that filled it, so that a flood is read in few calls.
struct ReadBuffer(Vec<u8>);

impl ReadBuffer {
    const FIRST: usize = 4 * 1024;
    const MAX: usize = 64 * 1024;

    fn new() -> Self {
        Self(vec![0; Self::FIRST])
    }

    /// The `n` bytes a read put at the start; the buffer grows if they filled it. The
    /// bytes are copied out before the next read, so growing never loses any.
    fn filled(&mut self, n: usize) -> &[u8] {
        if n == self.0.len() && n < Self::MAX {
            let mut larger = vec![0; Self::MAX];
            larger[..n].copy_from_slice(&self.0[..n]);
            self.0 = larger;
        }
        &self.0[..n]
    }
}

/// Runs `req`, calling `on_output` with each chunk (up to [`DELTA_CAP_BYTES`]).
/// Cancelling `cancel` stops the process group and returns [`ExecError::Cancelled`].
pub async fn run_command(
    req: &ExecRequest,
    cancel: &CancellationToken,
    mut on_output: impl FnMut(ExecOutputStream, &[u8]),
) -> Result<ExecOutput, ExecError> {
    let (mut stdout, stdout_end) = output_pipe()?;
    let (mut stderr, stderr_end) = output_pipe()?;
    // Only the command holds the write ends from here on: its exit closes the pipes.
    let (mut leader, mut group) = Leader::start(req, stdout_end, stderr_end).await?;
    let (leader, group) = (&mut leader, &mut group);
    let start = Instant::now();

    let mut out = Captured::default();
    let (mut out_buf, mut err_buf) = (ReadBuffer::new(), ReadBuffer::new());
    let (mut out_open, mut err_open) = (true, true);
    let deadline = tokio::time::sleep(req.timeout);
    tokio::pin!(deadline);
    let mut timed_out = false;
    let mut status = None;
    let mut drain_deadline: Option<tokio::time::Instant> = None;

    loop {
        if status.is_some() && !out_open && !err_open {
            break;
        }
        let drain_sleep = async {
            match drain_deadline {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            n = stdout.read(&mut out_buf.0), if out_open => match n {
                Ok(0) | Err(_) => out_open = false,
                Ok(n) => out.push(ExecOutputStream::Stdout, out_buf.filled(n), &mut on_output),
            },
            n = stderr.read(&mut err_buf.0), if err_open => match n {
                Ok(0) | Err(_) => err_open = false,
                Ok(n) => out.push(ExecOutputStream::Stderr, err_buf.filled(n), &mut on_output),
            },
            exit = leader.wait(), if status.is_none() => {
                status = Some(exit?);
                // Whatever the command left behind in its group dies with it, so a
                // background child holding the pipes open cannot stall the turn.
                group.kill();
                kill_escaped().await;
                drain_deadline = Some(tokio::time::Instant::now() + DRAIN_GRACE);
            }
            () = &mut deadline, if status.is_none() => {
                timed_out = true;
                status = Some(group.stop(leader).await?);
                kill_escaped().await;
                drain_deadline = Some(tokio::time::Instant::now() + DRAIN_GRACE);
            }
            () = drain_sleep => break,
            () = cancel.cancelled() => {
                let _ = group.stop(leader).await;
                kill_escaped().await;
                return Err(ExecError::Cancelled);
            }
        }
    }

    // The loop only ends once the child exited (or by returning).
    let Some(status) = status else {
        return Err(ExecError::Io(std::io::Error::other(
            "the command's exit status was lost",
        )));
    };
    let exit_code = if timed_out {
        TIMEOUT_EXIT_CODE
    } else {
        exit_code_of(status)
    };
    Ok(ExecOutput {
        exit_code,
        stdout: out.stdout,
        stderr: out.stderr,
        aggregated: out.aggregated,
        duration: start.elapsed(),
        timed_out,
    })
}

/// The commands' launchers (or the commands themselves, where there is no launcher) this
/// process started and has not waited for yet: not escaped, though in sessions of their own.
pub(crate) static OWN_CHILDREN: OwnChildren = OwnChildren::new();

/// Makes deputy the child subreaper of its commands (once, before the first one starts): what
/// escapes a launcher — an unconfined command can kill its own — is re-parented to deputy
/// instead of init, and [`kill_escaped`] finds it.
pub(crate) fn adopt_orphans() {
    static ADOPTING: std::sync::Once = std::sync::Once::new();
    ADOPTING.call_once(|| {
        if let Err(err) = deputy_sandbox::adopt_orphans() {
            tracing::warn!("cannot adopt the processes commands leave behind: {err}");
        }
    });
}

/// Kills whatever escaped a launcher, now that a command has ended: the launcher of a
/// command that killed it is gone, and its leftovers are deputy's children.
///
/// One scan at a time, and none for a caller whom a scan started after it asked has already
/// served: a scan finds every escaped process, whichever command it came from. When a
/// thousand commands end together, their scans would otherwise each hold a blocking-pool
/// thread (tokio starts up to 512), and each scan reads a file per thread of deputy.
pub(crate) async fn kill_escaped() {
    static SCANS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());
    static STARTED: AtomicU64 = AtomicU64::new(0);
    let asked = STARTED.load(Ordering::Acquire);
    let turn = SCANS.lock().await;
    // Scans run only under the lock, which the scan itself holds (it finishes even if this
    // caller goes away): one started after `asked` was read has finished.
    if STARTED.load(Ordering::Acquire) > asked {
        return;
    }
    STARTED.fetch_add(1, Ordering::AcqRel);
    let killed = tokio::task::spawn_blocking(move || {
        let _turn = turn;
        deputy_sandbox::kill_escaped(&OWN_CHILDREN)
    })
    .await
    .unwrap_or_default();
    if killed > 0 {
        tracing::warn!("killed {killed} processes that outlived their command's launcher");
    }
}

fn exit_code_of(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|sig| 128 + sig))
        .unwrap_or(-1)
}

struct Captured {
    stdout: HeadTailBuffer,
    stderr: HeadTailBuffer,
    aggregated: HeadTailBuffer,
    streamed: usize,
}

impl Default for Captured {
    fn default() -> Self {
        Self {
            stdout: HeadTailBuffer::new(CAPTURE_CAP_BYTES),
            stderr: HeadTailBuffer::new(CAPTURE_CAP_BYTES),
            aggregated: HeadTailBuffer::new(CAPTURE_CAP_BYTES),
            streamed: 0,
        }
    }
}

impl Captured {
    fn push(
        &mut self,
        stream: ExecOutputStream,
        bytes: &[u8],
        on_output: &mut impl FnMut(ExecOutputStream, &[u8]),
    ) {
        match stream {
            ExecOutputStream::Stdout => self.stdout.push(bytes),
            ExecOutputStream::Stderr => self.stderr.push(bytes),
        }
        self.aggregated.push(bytes);
        let room = DELTA_CAP_BYTES.saturating_sub(self.streamed);
        if room > 0 {
            let chunk = &bytes[..bytes.len().min(room)];
            self.streamed += chunk.len();
            on_output(stream, chunk);
        }
    }
}

#[cfg(test)]
mod tests;
