//! The zygote's loop (see [`crate::zygote`]): receive a request, fork, answer; reap, answer.
//! Single-threaded, so that each forked child may run any code, as a freshly executed
//! launcher would.

use std::ffi::OsString;
use std::io::{Read, Seek};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{SigSet, SigmaskHow, Signal, sigprocmask};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{ForkResult, Pid, fork, getpid, setpgid};

use super::supervisor::{die_with_parent, refuse, refuse_in_child};
use crate::launch_args::{LAUNCHER_BUILD, parse_launch_args};
use crate::zygote::{Reply, decode_request, receive_request};

/// Runs the zygote for the arguments after [`crate::zygote::ZYGOTE_FLAG`]: `FD --build ID
/// --parent-pid PID`. Exits when deputy closes its end of the socket.
pub fn serve(mut args: impl Iterator<Item = OsString>) -> ! {
    let number = |value: Option<OsString>| value.and_then(|v| v.to_str()?.parse::<i32>().ok());
    let fd = number(args.next()).filter(|fd| *fd > 2);
    let build_ok = args.next().as_deref() == Some("--build".as_ref())
        && args.next().as_deref() == Some(LAUNCHER_BUILD.as_ref());
    let parent = (args.next().as_deref() == Some("--parent-pid".as_ref()))
        .then(|| number(args.next()))
        .flatten()
        .and_then(|pid| u32::try_from(pid).ok());
    let (Some(fd), true, Some(parent), None) = (fd, build_ok, parent, args.next()) else {
        refuse(&"the zygote needs FD --build ID --parent-pid PID, of this build");
    };
    die_with_parent(Signal::SIGKILL, parent);
    // SAFETY: F_GETFD only reads the descriptor's flags.
    if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
        refuse(&format!("descriptor {fd} is not open"));
    }
    // SAFETY: deputy handed this descriptor over for the zygote alone; it is open (checked).
    let socket = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: FD_CLOEXEC only marks the descriptor; no command keeps it.
    unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    let mut exits = SigSet::empty();
    exits.add(Signal::SIGCHLD);
    if let Err(err) = exits.thread_block() {
        refuse(&format!("cannot block SIGCHLD: {err}"));
    }
    let reaped = match SignalFd::with_flags(&exits, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
    {
        Ok(fd) => fd,
        Err(err) => refuse(&format!("cannot wait for children: {err}")),
    };
    let me = getpid();
    answer(socket.as_fd(), Reply::Ready);
    loop {
        let mut fds = [
            PollFd::new(socket.as_fd(), PollFlags::POLLIN),
            PollFd::new(reaped.as_fd(), PollFlags::POLLIN),
        ];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) | Err(nix::errno::Errno::EINTR) => {}
            Err(err) => refuse(&format!("cannot wait for requests: {err}")),
        }
        let request = fds[0].any().unwrap_or(true);
        let exited = fds[1].any().unwrap_or(true);
        if exited {
            while let Ok(Some(_)) = reaped.read_signal() {}
            reap(socket.as_fd());
        }
        if request {
            match receive_request(socket.as_fd()) {
                Ok(Some((id, Some(fds)))) => start(socket.as_fd(), &reaped, me, id, fds),
                Ok(Some((id, None))) => answer(
                    socket.as_fd(),
                    Reply::NotStarted {
                        id,
                        errno: libc::EINVAL,
                    },
                ),
                // Deputy closed its end (or cannot be read from): nothing more will come.
                // The supervisors still running die with the zygote (their parent-death
                // signal) and take their commands with them.
                Ok(None) | Err(_) => std::process::exit(0),
            }
        }
    }
}

/// Sends `reply`; exits if deputy is gone (no one is left to tell).
fn answer(socket: BorrowedFd<'_>, reply: Reply) {
    let bytes = reply.encode();
    loop {
        // SAFETY: the kernel reads `bytes.len()` bytes of the live local array.
        let sent = unsafe {
            libc::send(
                socket.as_raw_fd(),
                bytes.as_ptr().cast(),
                bytes.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        if sent == -1 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        if sent != bytes.len() as isize {
            std::process::exit(0);
        }
        return;
    }
}

/// Reaps every child that has ended, reporting each.
fn reap(socket: BorrowedFd<'_>) {
    loop {
        let (pid, status) = match waitpid(None::<Pid>, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, code)) => (pid, (code & 0xff) << 8),
            Ok(WaitStatus::Signaled(pid, signal, core)) => {
                (pid, signal as i32 | if core { 0x80 } else { 0 })
            }
            Ok(WaitStatus::StillAlive) | Err(nix::errno::Errno::ECHILD) => return,
            Ok(_) | Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return,
        };
        if let Ok(pid) = u32::try_from(pid.as_raw()) {
            answer(socket, Reply::Exited { pid, status });
        }
    }
}

/// Forks the supervisor of request `id` and reports it.
fn start(socket: BorrowedFd<'_>, reaped: &SignalFd, me: Pid, id: u64, fds: [OwnedFd; 3]) {
    // SAFETY: the zygote is single-threaded, so the child may run any code.
    match unsafe { fork() } {
        Ok(ForkResult::Child) => run_child(socket, reaped, me, fds),
        Ok(ForkResult::Parent { child }) => {
            // The child does the same first thing; whichever runs first, the group exists
            // before deputy learns the pid and may signal it.
            let _ = setpgid(child, child);
            drop(fds);
            if let Ok(pid) = u32::try_from(child.as_raw()) {
                answer(socket, Reply::Started { id, pid });
            }
        }
        Err(err) => answer(
            socket,
            Reply::NotStarted {
                id,
                errno: err as i32,
            },
        ),
    }
}

/// In the forked child: becomes what an executed launcher would be, then supervises.
fn run_child(socket: BorrowedFd<'_>, reaped: &SignalFd, zygote: Pid, fds: [OwnedFd; 3]) -> ! {
    let _ = setpgid(Pid::from_raw(0), Pid::from_raw(0));
    // SAFETY: closing the zygote's own descriptors, which this process never uses again.
    unsafe {
        libc::close(socket.as_raw_fd());
        libc::close(reaped.as_raw_fd());
    }
    let _ = sigprocmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None);
    let [stdout, stderr, request] = fds;
    let mut bytes = Vec::new();
    // From its start: deputy wrote it through the same open file, leaving the offset at
    // its end.
    let mut file = std::fs::File::from(request);
    let read = file
        .seek(std::io::SeekFrom::Start(0))
        .and_then(|_| file.read_to_end(&mut bytes));
    drop(file);
    let null = std::fs::File::open("/dev/null");
    for (from, to) in [(stdout.as_raw_fd(), 1), (stderr.as_raw_fd(), 2)] {
        // SAFETY: dup2 only installs an open descriptor at `to`.
        if unsafe { libc::dup2(from, to) } == -1 {
            refuse_in_child(&"cannot pass the command its output");
        }
    }
    drop((stdout, stderr));
    match &null {
        // SAFETY: as above.
        Ok(null) if unsafe { libc::dup2(null.as_raw_fd(), 0) } != -1 => {}
        _ => refuse_in_child(&"cannot open /dev/null for the command's input"),
    }
    drop(null);
    let request = match read.ok().and_then(|_| decode_request(&bytes)) {
        Some(request) => request,
        None => refuse_in_child(&"the zygote received a malformed request"),
    };
    if let Err(err) = std::env::set_current_dir(&request.cwd) {
        refuse_in_child(&format!("cannot enter {}: {err}", request.cwd.display()));
    }
    // SAFETY: this process is single-threaded (a fork of the single-threaded zygote), so
    // nothing reads the environment while it changes.
    unsafe {
        libc::clearenv();
        // A variable without a name cannot be set (`set_var` would panic): it is left out,
        // as the standard library leaves it out of an environment it reads.
        for (key, value) in request.env.iter().filter(|(key, _)| !key.is_empty()) {
            std::env::set_var(key, value);
        }
    }
    match parse_launch_args(request.args) {
        // The supervisor's parent is the zygote, which dies with deputy: it must die with
        // the zygote, so the chain reaches from deputy to the command.
        Ok(mut launch) => {
            launch.parent_pid = zygote.as_raw().unsigned_abs();
            super::supervisor::run(launch)
        }
        Err(err) => refuse_in_child(&err),
    }
}
