//! Starting supervised commands through a zygote (see `deputy_sandbox::zygote`): the launcher
//! started once per launcher program, which forks a supervisor per command instead of deputy
//! executing the launcher anew.
//!
//! A thread of its own (it never ends, so the zygote's parent-death signal only fires when
//! deputy dies) starts the zygote and reads its replies, handing each to whoever waits:
//! the pid to the caller of [`start`], the exit status to the [`Forked`] of that pid. A
//! caller that stopped waiting before its pid came leaves a command nobody watches: that one
//! is stopped as a dropped command is (its group guard). When the zygote cannot be started,
//! or falls behind, or was started and then died, commands are started by executing the
//! launcher, as without a zygote: nothing is started twice, since a request is only ever
//! sent once and a failed send delivered nothing.

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use deputy_sandbox::zygote::{Reply, encode_request, receive_reply, send_request, zygote_args};
use tokio::sync::oneshot;

use super::{ExecError, ExecRequest, ProcessGroupGuard};
use crate::sync::lock;

/// A supervisor the zygote forked: the leader of its own process group.
#[derive(Debug)]
pub(crate) struct Forked {
    pid: u32,
    exit: oneshot::Receiver<i32>,
    status: Option<ExitStatus>,
}

impl Forked {
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// Waits for the supervisor's exit status. Cancel-safe, and answers again once known.
    pub(crate) async fn wait(&mut self) -> io::Result<ExitStatus> {
        if let Some(status) = self.status {
            return Ok(status);
        }
        let raw = (&mut self.exit).await.map_err(|_| {
            io::Error::other(
                "the process that started the command exited before the command ended \
                 (the command was stopped with it)",
            )
        })?;
        let status = ExitStatus::from_raw(raw);
        self.status = Some(status);
        Ok(status)
    }
}

/// Starts `req` through the zygote of its launcher, its output going to `stdout` and
/// `stderr`. `None` when the zygote cannot take it (not a launcher command, no zygote, or
/// one that is gone or behind): nothing was started, and the caller starts it the usual way.
pub(crate) async fn start(
    req: &ExecRequest,
    stdout: BorrowedFd<'_>,
    stderr: BorrowedFd<'_>,
) -> Option<Result<Forked, ExecError>> {
    let launcher = launcher_of(req)?;
    // What escapes a supervisor comes to deputy through the zygote, as it does from a
    // launcher deputy started itself.
    super::adopt_orphans();
    let zygote = Zygote::of(launcher)?;
    let request = encode_request(
        req.argv[2..].iter().map(|arg| arg.as_bytes()),
        req.env.iter().map(|(k, v)| (k.as_bytes(), v.as_bytes())),
        &req.cwd,
    )?;
    let request = memory_file(&request).ok()?;
    let (started_tx, started) = oneshot::channel();
    let (exit_tx, exit) = oneshot::channel();
    let id = zygote.next_id.fetch_add(1, Ordering::Relaxed);
    {
        let mut waiting = lock(&zygote.waiting);
        if waiting.gone {
            return None;
        }
        waiting.starts.insert(id, (started_tx, exit_tx));
        if send_request(zygote.socket.as_fd(), id, stdout, stderr, request.as_fd()).is_err() {
            // Not sent (the zygote is behind, or gone): nothing was started.
            waiting.starts.remove(&id);
            return None;
        }
    }
    let program = req.argv.first().cloned().unwrap_or_default();
    Some(match started.await {
        Ok(Outcome::Started(pid)) => Ok(Forked {
            pid,
            exit,
            status: None,
        }),
        Ok(Outcome::Unread) => return None,
        Ok(Outcome::NotStarted(errno)) => Err(ExecError::Spawn {
            program,
            source: io::Error::from_raw_os_error(errno),
        }),
        Err(_) => Err(ExecError::Spawn {
            program,
            source: io::Error::other("the process that starts commands exited"),
        }),
    })
}

/// The launcher `req` runs under, when it is one the zygote can stand in for.
fn launcher_of(req: &ExecRequest) -> Option<&Path> {
    match req.argv.as_slice() {
        [launcher, subcommand, ..]
            if req.supervised && subcommand == deputy_sandbox::LAUNCHER_SUBCOMMAND =>
        {
            Some(Path::new(launcher))
        }
        _ => None,
    }
}

/// A memory file holding `bytes`, read by the zygote's child from its start.
fn memory_file(bytes: &[u8]) -> io::Result<OwnedFd> {
    use std::io::Write;
    let fd =
        nix::sys::memfd::memfd_create(c"deputy-command", nix::sys::memfd::MFdFlags::MFD_CLOEXEC)?;
    let mut file = std::fs::File::from(fd);
    file.write_all(bytes)?;
    Ok(OwnedFd::from(file))
}

/// One launcher's zygote, as this process sees it.
struct Zygote {
    launcher: PathBuf,
    /// Deputy's end of the socket pair.
    socket: OwnedFd,
    next_id: AtomicU64,
    waiting: Mutex<Waiting>,
    /// Signalled once the zygote has been waited for (or was never started).
    reaped: Condvar,
}

/// What became of a request.
#[derive(Debug)]
enum Outcome {
    /// It runs as this pid.
    Started(u32),
    /// Fork failed with this errno (or the request was malformed).
    NotStarted(i32),
    /// The zygote ended before it read any request: this one was never started.
    Unread,
}

/// Who waits for what became of a request, and for its exit status.
type Waiters = (oneshot::Sender<Outcome>, oneshot::Sender<i32>);

#[derive(Default)]
struct Waiting {
    /// Requests sent and not answered yet.
    starts: HashMap<u64, Waiters>,
    /// Supervisors running: who waits for their exit status.
    exits: HashMap<u32, oneshot::Sender<i32>>,
    /// The zygote said it reads requests.
    ready: bool,
    /// The zygote could not be started or has ended: no request is sent any more.
    gone: bool,
    /// Deputy is exiting and ended the zygote itself.
    stopping: bool,
    /// The zygote was never started, or has ended and been waited for.
    reaped: bool,
}

/// Every launcher's zygote in this process (deputy has one launcher; tests may have more).
static ZYGOTES: Mutex<Vec<Arc<Zygote>>> = Mutex::new(Vec::new());

impl Zygote {
    /// The zygote of `launcher`, started on first use; `None` if it could not be.
    fn of(launcher: &Path) -> Option<Arc<Self>> {
        let mut zygotes = lock(&ZYGOTES);
        if let Some(zygote) = zygotes.iter().find(|z| z.launcher == launcher) {
            return Some(zygote.clone());
        }
        let (ours, theirs) = nix::sys::socket::socketpair(
            nix::sys::socket::AddressFamily::Unix,
            nix::sys::socket::SockType::SeqPacket,
            None,
            nix::sys::socket::SockFlag::SOCK_CLOEXEC,
        )
        .ok()?;
        let zygote = Arc::new(Self {
            launcher: launcher.to_path_buf(),
            socket: ours,
            next_id: AtomicU64::new(0),
            waiting: Mutex::default(),
            reaped: Condvar::new(),
        });
        let serving = zygote.clone();
        std::thread::Builder::new()
            .name("deputy-zygote".into())
            .spawn(move || serving.serve(theirs))
            .ok()?;
        zygotes.push(zygote.clone());
        Some(zygote)
    }

    /// On the zygote's own thread: starts it, then hands out its replies until it ends.
    #[allow(
        clippy::disallowed_methods,
        reason = "on the zygote's own thread, never the runtime's: it waits for the zygote"
    )]
    fn serve(&self, theirs: OwnedFd) {
        let mut child = match self.spawn(&theirs) {
            Ok(child) => child,
            Err(err) => {
                tracing::warn!(
                    "cannot start {} as a zygote, starting each command anew: {err}",
                    self.launcher.display()
                );
                self.end();
                self.mark_reaped();
                return;
            }
        };
        drop(theirs);
        loop {
            match receive_reply(self.socket.as_fd()) {
                Ok(Some(reply)) => self.hand_out(reply),
                Ok(None) => break,
                Err(err) => {
                    tracing::warn!("the zygote's replies cannot be read: {err}");
                    break;
                }
            }
        }
        let orphans = self.end();
        let status = child.wait();
        self.mark_reaped();
        if !lock(&self.waiting).stopping {
            tracing::warn!("the zygote ended ({status:?}); commands are started anew from now on");
        }
        // The supervisors it was running died with it (their parent-death signal) and
        // came to deputy, the subreaper: waited for here, they leave no zombies behind.
        for pid in orphans {
            if let Ok(pid) = i32::try_from(pid) {
                let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None);
            }
        }
    }

    fn mark_reaped(&self) {
        lock(&self.waiting).reaped = true;
        self.reaped.notify_all();
    }

    fn spawn(&self, theirs: &OwnedFd) -> io::Result<std::process::Child> {
        use std::os::unix::process::CommandExt;
        let fd = theirs.as_raw_fd();
        let mut command = std::process::Command::new(&self.launcher);
        command
            .args(zygote_args(fd, std::process::id()))
            .env_clear()
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            // Signals for deputy's process group (a terminal's Ctrl-C) are not the zygote's:
            // it ends when deputy does.
            .process_group(0);
        // SAFETY: the closure runs in the forked child before exec and only calls fcntl(2),
        // which is async-signal-safe: the zygote's end of the pair stays open across exec.
        unsafe {
            command.pre_exec(move || {
                if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        command.spawn()
    }

    /// Gives `reply` to whoever waits for it.
    fn hand_out(&self, reply: Reply) {
        let mut waiting = lock(&self.waiting);
        match reply {
            Reply::Ready => waiting.ready = true,
            Reply::Started { id, pid } => {
                let Some((started, exit)) = waiting.starts.remove(&id) else {
                    return;
                };
                waiting.exits.insert(pid, exit);
                if started.send(Outcome::Started(pid)).is_err() {
                    // Its caller stopped waiting: nobody will stop the command but its guard.
                    drop(ProcessGroupGuard(i32::try_from(pid).ok()));
                }
            }
            Reply::NotStarted { id, errno } => {
                if let Some((started, _)) = waiting.starts.remove(&id) {
                    let _ = started.send(Outcome::NotStarted(errno));
                }
            }
            Reply::Exited { pid, status } => {
                if let Some(exit) = waiting.exits.remove(&pid) {
                    let _ = exit.send(status);
                }
            }
        }
    }

    /// No more requests; everyone waiting learns the zygote is gone: those it never read
    /// are started the usual way; the others (perhaps forked, never reported) fail.
    /// Returns the supervisors it had started and not reported ended.
    fn end(&self) -> Vec<u32> {
        let mut waiting = lock(&self.waiting);
        waiting.gone = true;
        let unread = !waiting.ready;
        for (_, (started, _)) in waiting.starts.drain() {
            if unread {
                let _ = started.send(Outcome::Unread);
            }
        }
        waiting.exits.drain().map(|(pid, _)| pid).collect()
    }
}

/// Ends every zygote, for deputy's exit, and waits up to `within` until each has been
/// waited for: then its CPU time, and that of the supervisors it waited for, is counted
/// in deputy's own (`getrusage`'s children), as when deputy executed each launcher itself,
/// instead of being lost with a zygote killed by its parent-death signal. A command still
/// running ends with its zygote; a later command is started the usual way.
#[allow(
    clippy::disallowed_methods,
    reason = "called once the runtime is shut down, to wait a bounded time at exit"
)]
pub fn stop_zygotes(within: Duration) {
    let deadline = Instant::now() + within;
    let zygotes = lock(&ZYGOTES).clone();
    for zygote in &zygotes {
        lock(&zygote.waiting).stopping = true;
        // The zygote reads the end of its requests and exits; the thread serving it reads
        // the end of its replies and waits for it.
        let _ =
            nix::sys::socket::shutdown(zygote.socket.as_raw_fd(), nix::sys::socket::Shutdown::Both);
    }
    for zygote in &zygotes {
        let mut waiting = lock(&zygote.waiting);
        while !waiting.reaped {
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return;
            };
            waiting = zygote
                .reaped
                .wait_timeout(waiting, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}
