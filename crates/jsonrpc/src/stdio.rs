//! The process's stdin and stdout as the async streams of a stdio front door.
//!
//! When one is a pipe or a Unix stream socket (what MCP, ACP and app-server clients hand
//! a server they start) it is driven non-blocking by the runtime's reactor: reading a
//! request or writing a message is a system call on the task that does it, not a trip to
//! a blocking thread and back, and a quiet server holds no thread waiting on its stdin.
//! Anything else (a terminal, a file, `/dev/null`) goes through tokio's own stdio, which
//! does each read and write on a blocking thread.
//!
//! Non-blocking mode belongs to the open file, not to the descriptor, so it is only set
//! on a file that no other standard descriptor shares (stderr writes must never fail with
//! `EAGAIN`; a socket that is both stdin and stdout would be switched back under the half
//! still in use), and it is cleared again when the stream is dropped, for whoever holds
//! the file after deputy. deputy's children never inherit stdin or stdout: every command
//! and server it starts gets pipes or `/dev/null` of its own.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::UnixStream;
use tokio::net::unix::pipe;

/// Standard input, for reading a front door's messages.
pub fn stdin() -> Pin<Box<dyn AsyncRead + Send>> {
    let driven: Option<Pin<Box<dyn AsyncRead + Send>>> = match for_reactor(libc::STDIN_FILENO) {
        Some((Kind::Pipe, fd)) => pipe::Receiver::from_owned_fd(fd)
            .ok()
            .map(|pipe| Box::pin(Restoring(pipe)) as _),
        Some((Kind::UnixStream, fd)) => {
            unix_stream(fd).map(|stream| Box::pin(Restoring(stream)) as _)
        }
        None => None,
    };
    driven.unwrap_or_else(|| Box::pin(tokio::io::stdin()))
}

/// Standard output, for writing a front door's messages.
pub fn stdout() -> Pin<Box<dyn AsyncWrite + Send>> {
    let driven: Option<Pin<Box<dyn AsyncWrite + Send>>> = match for_reactor(libc::STDOUT_FILENO) {
        Some((Kind::Pipe, fd)) => pipe::Sender::from_owned_fd(fd)
            .ok()
            .map(|pipe| Box::pin(Restoring(pipe)) as _),
        Some((Kind::UnixStream, fd)) => {
            unix_stream(fd).map(|stream| Box::pin(Restoring(stream)) as _)
        }
        None => None,
    };
    driven.unwrap_or_else(|| Box::pin(tokio::io::stdout()))
}

/// What a standard descriptor is, when the reactor can drive it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Pipe,
    UnixStream,
}

/// What standard descriptor `fd` is and a close-on-exec copy of it, when the reactor can
/// drive it: `None` when it is neither a pipe nor a Unix stream socket, or when another
/// standard descriptor shares its file.
fn for_reactor(fd: RawFd) -> Option<(Kind, OwnedFd)> {
    let own = stat(fd)?;
    let kind = match own.st_mode & libc::S_IFMT {
        libc::S_IFIFO => Kind::Pipe,
        libc::S_IFSOCK
            if socket_option(fd, libc::SO_DOMAIN) == Some(libc::AF_UNIX)
                && socket_option(fd, libc::SO_TYPE) == Some(libc::SOCK_STREAM) =>
        {
            Kind::UnixStream
        }
        _ => return None,
    };
    let shared = [libc::STDIN_FILENO, libc::STDOUT_FILENO, libc::STDERR_FILENO]
        .into_iter()
        .filter(|other| *other != fd)
        .filter_map(stat)
        .any(|other| other.st_dev == own.st_dev && other.st_ino == own.st_ino);
    if shared {
        return None;
    }
    // SAFETY: `fd` is open (it was just stat'ed) and only borrowed for the copy.
    let copy = unsafe { BorrowedFd::borrow_raw(fd) }
        .try_clone_to_owned()
        .ok()?;
    Some((kind, copy))
}

fn stat(fd: RawFd) -> Option<libc::stat> {
    // SAFETY: `fstat` only writes the struct it is given; an all-zero `stat` is valid.
    unsafe {
        let mut stat: libc::stat = std::mem::zeroed();
        (libc::fstat(fd, &mut stat) == 0).then_some(stat)
    }
}

fn socket_option(fd: RawFd, option: libc::c_int) -> Option<libc::c_int> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `value` and `len` describe a buffer of the size `getsockopt` is told.
    let done = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            option,
            std::ptr::from_mut(&mut value).cast(),
            &mut len,
        )
    };
    (done == 0).then_some(value)
}

fn unix_stream(fd: OwnedFd) -> Option<UnixStream> {
    let stream = std::os::unix::net::UnixStream::from(fd);
    stream.set_nonblocking(true).ok()?;
    UnixStream::from_std(stream).ok()
}

/// A standard stream driven by the reactor; its file is put back in blocking mode when
/// it is dropped.
struct Restoring<T: AsRawFd>(T);

impl<T: AsRawFd> Drop for Restoring<T> {
    fn drop(&mut self) {
        let fd = self.0.as_raw_fd();
        // SAFETY: `fd` is open until `self.0` drops, after this.
        unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            if flags >= 0 {
                libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
            }
        }
    }
}

impl<T: AsRawFd + AsyncRead + Unpin> AsyncRead for Restoring<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<T: AsRawFd + AsyncWrite + Unpin> AsyncWrite for Restoring<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}
