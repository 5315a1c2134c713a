//! One unified-exec process: started through the same path as every command (its own
//! session, the launcher supervising it, counted as deputy's own child), its standard
//! streams on pipes or on a pseudo-terminal deputy owns, its output gathered by a task of
//! its own until the model reads it, and stopped — group, leftovers and all — when asked or
//! when dropped.

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use nix::fcntl::OFlag;
use nix::pty::{Winsize, grantpt, posix_openpt, ptsname_r, unlockpt};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::sync::{Mutex as AsyncMutex, watch};
use tokio_util::sync::CancellationToken;

use crate::exec::{ExecError, ExecRequest, Started, kill_escaped, start};
use crate::sync::lock;

/// Output kept between two reads by the model; what comes beyond it is counted, not kept.
const PENDING_CAP_BYTES: usize = 1024 * 1024;
/// How long output still arriving after the process exited is awaited.
const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// What the gatherer task and the readers share.
#[derive(Default)]
struct Gathered {
    /// Output not yet read by the model, in arrival order.
    pending: Vec<u8>,
    /// Bytes dropped since the last read because `pending` was full.
    dropped: usize,
    /// The exit code once the process ended and its output was drained.
    exit_code: Option<i32>,
}

/// What one read of a process returns.
pub(super) struct Read {
    /// New output, lossily decoded.
    pub(super) text: String,
    /// Bytes that did not fit between two reads.
    pub(super) dropped: usize,
    /// The exit code, once the process has ended.
    pub(super) exit_code: Option<i32>,
}

/// A running (or finished, not yet reported) process.
pub(super) struct Process {
    gathered: Arc<Mutex<Gathered>>,
    /// Bumped at every change of `gathered`.
    changed: watch::Receiver<u64>,
    stdin: AsyncMutex<Option<Box<dyn tokio::io::AsyncWrite + Send + Unpin>>>,
    /// Stops the process; the gatherer task does the stopping.
    stop: CancellationToken,
    /// Ends when the gatherer has stopped the process and reaped it.
    done: watch::Receiver<bool>,
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Process {
    /// Starts `req`, on a pseudo-terminal when `tty`. Must be called on a thread that lives
    /// as long as deputy (a tokio worker): see `crate::exec`.
    pub(super) fn spawn(req: &ExecRequest, tty: bool) -> Result<Self, ExecError> {
        let (started, stdin, readers) = if tty {
            let (master, slave) = open_pty()?;
            let copy = || slave.try_clone().map_err(ExecError::Io);
            let (stdin, stdout, stderr) = (copy()?, copy()?, copy()?);
            let started = start(req, |command| {
                command
                    .stdin(Stdio::from(stdin))
                    .stdout(Stdio::from(stdout))
                    .stderr(Stdio::from(stderr));
            })?;
            // Only the process holds the terminal now: its end of output is the master's EOF.
            drop(slave);
            // The master does not block and is polled by the runtime like a pipe: a file
            // would hold a blocking-pool thread in every read, for as long as the process
            // stays quiet.
            let write =
                pipe::Sender::from_owned_fd_unchecked(master.try_clone().map_err(ExecError::Io)?)
                    .map_err(ExecError::Io)?;
            let read = pipe::Receiver::from_owned_fd_unchecked(master).map_err(ExecError::Io)?;
            let stdin: Box<dyn tokio::io::AsyncWrite + Send + Unpin> = Box::new(write);
            let readers: Vec<Box<dyn AsyncRead + Send + Unpin>> = vec![Box::new(read)];
            (started, stdin, readers)
        } else {
            let mut started = start(req, |command| {
                command
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped());
            })?;
            let piped =
                |name| ExecError::Io(std::io::Error::other(format!("{name} was not piped")));
            let stdin = started.child.stdin.take().ok_or_else(|| piped("stdin"))?;
            let stdout = started.child.stdout.take().ok_or_else(|| piped("stdout"))?;
            let stderr = started.child.stderr.take().ok_or_else(|| piped("stderr"))?;
            let stdin: Box<dyn tokio::io::AsyncWrite + Send + Unpin> = Box::new(stdin);
            let readers: Vec<Box<dyn AsyncRead + Send + Unpin>> =
                vec![Box::new(stdout), Box::new(stderr)];
            (started, stdin, readers)
        };
        let gathered = Arc::new(Mutex::new(Gathered::default()));
        let (changed_tx, changed) = watch::channel(0u64);
        let (done_tx, done) = watch::channel(false);
        let stop = CancellationToken::new();
        tokio::spawn(gather(
            started,
            readers,
            gathered.clone(),
            changed_tx,
            stop.clone(),
            done_tx,
        ));
        Ok(Self {
            gathered,
            changed,
            stdin: AsyncMutex::new(Some(stdin)),
            stop,
            done,
        })
    }

    /// Writes `chars` to the process's input; `Err` when it no longer reads it.
    pub(super) async fn write(&self, chars: &str) -> std::io::Result<()> {
        let mut stdin = self.stdin.lock().await;
        let Some(writer) = stdin.as_mut() else {
            return Err(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        };
        let written = async {
            writer.write_all(chars.as_bytes()).await?;
            writer.flush().await
        }
        .await;
        if written.is_err() {
            *stdin = None;
        }
        written
    }

    /// Waits until the process ended or `yield_time` passed (or `cancel` fired), calling
    /// `on_output` with output as it arrives, then takes what arrived since the last read.
    pub(super) async fn read(
        &self,
        yield_time: Duration,
        cancel: &CancellationToken,
        mut on_output: impl FnMut(&[u8]),
    ) -> Read {
        let mut changed = self.changed.clone();
        let deadline = tokio::time::Instant::now() + yield_time;
        let mut shown = lock(&self.gathered).pending.len();
        loop {
            {
                let gathered = lock(&self.gathered);
                if gathered.pending.len() > shown {
                    on_output(&gathered.pending[shown..]);
                    shown = gathered.pending.len();
                }
                if gathered.exit_code.is_some() {
                    break;
                }
            }
            tokio::select! {
                res = changed.changed() => if res.is_err() { break },
                () = tokio::time::sleep_until(deadline) => break,
                () = cancel.cancelled() => break,
            }
        }
        let mut gathered = lock(&self.gathered);
        if gathered.pending.len() > shown {
            on_output(&gathered.pending[shown..]);
        }
        let pending = std::mem::take(&mut gathered.pending);
        Read {
            text: String::from_utf8_lossy(&pending).into_owned(),
            dropped: std::mem::take(&mut gathered.dropped),
            exit_code: gathered.exit_code,
        }
    }

    /// Whether the process has ended.
    pub(super) fn exited(&self) -> bool {
        lock(&self.gathered).exit_code.is_some()
    }

    /// Stops the process and waits until it and its group are gone.
    pub(super) async fn terminate(&self) {
        self.stop.cancel();
        let mut done = self.done.clone();
        let _ = done.wait_for(|done| *done).await;
    }
}

/// The gatherer: reads output until EOF, reaps the process, and stops it when told.
async fn gather(
    mut started: Started,
    readers: Vec<Box<dyn AsyncRead + Send + Unpin>>,
    gathered: Arc<Mutex<Gathered>>,
    changed: watch::Sender<u64>,
    stop: CancellationToken,
    done: watch::Sender<bool>,
) {
    let push = {
        let gathered = gathered.clone();
        let changed = changed.clone();
        move |bytes: &[u8]| {
            let mut g = lock(&gathered);
            let room = PENDING_CAP_BYTES.saturating_sub(g.pending.len());
            let kept = bytes.len().min(room);
            g.pending.extend_from_slice(&bytes[..kept]);
            g.dropped += bytes.len() - kept;
            drop(g);
            changed.send_modify(|n| *n += 1);
        }
    };
    let (eof_tx, mut eof_rx) = tokio::sync::mpsc::channel::<()>(readers.len().max(1));
    let open = readers.len();
    let mut pumps = tokio::task::JoinSet::new();
    for mut reader in readers {
        let push = push.clone();
        let eof_tx = eof_tx.clone();
        pumps.spawn(async move {
            let mut buf = vec![0u8; 16 * 1024];
            // A terminal whose last holder closed reads as EIO: the end, like EOF.
            while let Ok(n @ 1..) = reader.read(&mut buf).await {
                push(&buf[..n]);
            }
            let _ = eof_tx.send(()).await;
        });
    }
    drop(eof_tx);
    let mut closed = 0;
    let mut status = None;
    let mut drain_until: Option<tokio::time::Instant> = None;
    let exit_code = loop {
        if let Some(code) = status.filter(|_| closed >= open) {
            break code;
        }
        let drain = async {
            match drain_until {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            eof = eof_rx.recv() => match eof {
                Some(()) => closed += 1,
                None => closed = open,
            },
            exit = started.child.wait(), if status.is_none() => {
                // Whatever it left behind in its group dies with it, as for every command.
                started.group.kill();
                kill_escaped().await;
                status = Some(exit.map_or(-1, exit_code_of));
                drain_until = Some(tokio::time::Instant::now() + DRAIN_GRACE);
            }
            () = drain, if status.is_some() => closed = open,
            () = stop.cancelled(), if status.is_none() => {
                let exit = started.group.stop(&mut started.child).await;
                kill_escaped().await;
                status = Some(exit.map_or(-1, exit_code_of));
                drain_until = Some(tokio::time::Instant::now() + DRAIN_GRACE);
            }
        }
    };
    pumps.abort_all();
    lock(&gathered).exit_code = Some(exit_code);
    changed.send_modify(|n| *n += 1);
    drop(started);
    let _ = done.send(true);
}

fn exit_code_of(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|sig| 128 + sig))
        .unwrap_or(-1)
}

/// A new pseudo-terminal: its master (non-blocking) and its slave, both close-on-exec from
/// the start (no other command started meanwhile can inherit either), sized 80×24.
#[allow(
    clippy::disallowed_methods,
    reason = "opens a pty slave (a device that does not block), next to the fork that must stay on this thread"
)]
fn open_pty() -> Result<(OwnedFd, OwnedFd), ExecError> {
    let io = |e: nix::Error| ExecError::Io(std::io::Error::from(e));
    let flags = OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK;
    let master = posix_openpt(flags).map_err(io)?;
    grantpt(&master).map_err(io)?;
    unlockpt(&master).map_err(io)?;
    let name = ptsname_r(&master).map_err(io)?;
    let slave: OwnedFd = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY | libc::O_CLOEXEC)
        .open(&name)
        .map_err(ExecError::Io)?
        .into();
    let size = Winsize {
        ws_row: 24,
        ws_col: 80,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCSWINSZ reads one `winsize` from the pointer, which outlives the call.
    unsafe {
        libc::ioctl(slave.as_raw_fd(), libc::TIOCSWINSZ, &size);
    }
    let master = OwnedFd::from(master);
    Ok((master, slave))
}
