//! The launcher started once: a "zygote" that forks a supervisor for each command instead of
//! deputy executing the launcher anew, which saves every command the launcher's exec, its
//! C library's start-up and its teardown (about a third of a millisecond of CPU each).
//!
//! Started as `LAUNCHER __sandbox-exec --zygote FD --build ID --parent-pid PID`, with one end
//! of a `SOCK_SEQPACKET` socket pair at descriptor `FD`. It dies with deputy (SIGKILL from
//! the parent-death signal, which follows the deputy thread that started it and never exits),
//! stays in deputy's session, and is not a subreaper: what escapes a supervisor is still
//! re-parented to deputy. Each request is one message: an 8-byte request id and three
//! descriptors — the command's stdout and stderr, and a memory file holding the launcher's
//! arguments (those after `__sandbox-exec`), the environment and the working directory
//! ([`encode_request`]). The zygote forks; the child puts the descriptors at 1 and 2 (stdin is
//! `/dev/null`), gets a process group of its own, the environment and the directory, and
//! runs the very supervisor an executed launcher runs, with the zygote as the parent it
//! must outlive. The zygote answers [`Reply::Started`] (or [`Reply::NotStarted`]) at once
//! and [`Reply::Exited`] when it reaps the supervisor, on the same ordered stream, so a pid
//! is never confused with a later process of the same number.

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use nix::sys::socket::{ControlMessage, ControlMessageOwned, MsgFlags, recvmsg, sendmsg};

use crate::launch_args::{LAUNCHER_BUILD, LAUNCHER_SUBCOMMAND};

/// The flag, first after [`LAUNCHER_SUBCOMMAND`], that starts the launcher as a zygote.
pub const ZYGOTE_FLAG: &str = "--zygote";

/// The arguments that start `launcher` as the zygote of process `parent` (this one), its end
/// of the socket pair at `fd`.
pub fn zygote_args(fd: RawFd, parent: u32) -> Vec<OsString> {
    [
        LAUNCHER_SUBCOMMAND,
        ZYGOTE_FLAG,
        &fd.to_string(),
        "--build",
        LAUNCHER_BUILD,
        "--parent-pid",
        &parent.to_string(),
    ]
    .into_iter()
    .map(OsString::from)
    .collect()
}

/// What a zygote was asked to start: the launcher's arguments, the environment, the directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ForkRequest {
    /// The arguments after [`LAUNCHER_SUBCOMMAND`].
    pub args: Vec<OsString>,
    /// The supervisor's whole environment, which the command inherits.
    pub env: Vec<(OsString, OsString)>,
    /// The supervisor's working directory.
    pub cwd: PathBuf,
}

/// The bytes of a request's memory file: three sections — the arguments, the environment
/// (`KEY=VALUE`), the directory — each a little-endian `u32` count of NUL-terminated strings.
/// `None` when a string holds a NUL (no process could be given it).
pub fn encode_request<'a>(
    args: impl ExactSizeIterator<Item = &'a [u8]>,
    env: impl ExactSizeIterator<Item = (&'a [u8], &'a [u8])>,
    cwd: &Path,
) -> Option<Vec<u8>> {
    fn section<'b>(
        out: &mut Vec<u8>,
        count: usize,
        items: impl Iterator<Item = Vec<&'b [u8]>>,
    ) -> Option<()> {
        out.extend_from_slice(&u32::try_from(count).ok()?.to_le_bytes());
        for parts in items {
            for part in parts {
                if part.contains(&0) {
                    return None;
                }
                out.extend_from_slice(part);
            }
            out.push(0);
        }
        Some(())
    }
    let mut out = Vec::new();
    section(&mut out, args.len(), args.map(|arg| vec![arg]))?;
    section(
        &mut out,
        env.len(),
        env.map(|(key, value)| vec![key, b"=", value]),
    )?;
    section(
        &mut out,
        1,
        std::iter::once(vec![cwd.as_os_str().as_bytes()]),
    )?;
    Some(out)
}

/// Reads what [`encode_request`] wrote; `None` if the bytes are not that.
pub(crate) fn decode_request(bytes: &[u8]) -> Option<ForkRequest> {
    let mut rest = bytes;
    let mut section = || -> Option<Vec<Vec<u8>>> {
        let (count, after) = rest.split_first_chunk::<4>()?;
        rest = after;
        (0..u32::from_le_bytes(*count))
            .map(|_| {
                let end = rest.iter().position(|b| *b == 0)?;
                let item = rest[..end].to_vec();
                rest = &rest[end + 1..];
                Some(item)
            })
            .collect()
    };
    let args = section()?.into_iter().map(OsString::from_vec).collect();
    let env = section()?
        .into_iter()
        .map(|pair| {
            let eq = pair.iter().position(|b| *b == b'=')?;
            Some((
                OsString::from_vec(pair[..eq].to_vec()),
                OsString::from_vec(pair[eq + 1..].to_vec()),
            ))
        })
        .collect::<Option<_>>()?;
    let mut cwd = section()?;
    if cwd.len() != 1 || !rest.is_empty() {
        return None;
    }
    Some(ForkRequest {
        args,
        env,
        cwd: PathBuf::from(OsString::from_vec(cwd.remove(0))),
    })
}

/// One message from the zygote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// The zygote is set up and reads requests from now on (its first message): until it
    /// came, a request may have been left unread, never started.
    Ready,
    /// Request `id` runs as process `pid`, the leader of its own process group.
    Started {
        /// The request.
        id: u64,
        /// The supervisor's pid.
        pid: u32,
    },
    /// Request `id` was not started: fork failed with `errno`, or the request was malformed.
    NotStarted {
        /// The request.
        id: u64,
        /// Why.
        errno: i32,
    },
    /// Process `pid` ended with the raw wait status `status`.
    Exited {
        /// The supervisor's pid.
        pid: u32,
        /// As `waitpid` gives it.
        status: i32,
    },
}

impl Reply {
    /// Bytes of one reply on the wire.
    pub const LEN: usize = 16;

    /// The reply as sent: a kind byte, three unused bytes, a `u32`, a `u64` (little-endian).
    pub fn encode(self) -> [u8; Self::LEN] {
        let (kind, small, large) = match self {
            Self::Ready => (4, 0, 0),
            Self::Started { id, pid } => (1, pid, id),
            Self::NotStarted { id, errno } => (2, errno as u32, id),
            Self::Exited { pid, status } => (3, pid, u64::from(status as u32)),
        };
        let mut out = [0; Self::LEN];
        out[0] = kind;
        out[4..8].copy_from_slice(&small.to_le_bytes());
        out[8..].copy_from_slice(&large.to_le_bytes());
        out
    }

    /// The reply in `bytes`, if they are one.
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        let bytes: &[u8; Self::LEN] = bytes.try_into().ok()?;
        let small = u32::from_le_bytes(bytes[4..8].try_into().ok()?);
        let large = u64::from_le_bytes(bytes[8..].try_into().ok()?);
        match bytes[0] {
            1 => Some(Self::Started {
                id: large,
                pid: small,
            }),
            2 => Some(Self::NotStarted {
                id: large,
                errno: small as i32,
            }),
            3 => Some(Self::Exited {
                pid: small,
                status: u32::try_from(large).ok()? as i32,
            }),
            4 => Some(Self::Ready),
            _ => None,
        }
    }
}

/// Sends request `id` without waiting: `WouldBlock` when the zygote has fallen behind, and
/// then nothing was sent. The descriptors are duplicated into the zygote; the caller keeps
/// (and closes) its own.
pub fn send_request(
    socket: BorrowedFd<'_>,
    id: u64,
    stdout: BorrowedFd<'_>,
    stderr: BorrowedFd<'_>,
    request: BorrowedFd<'_>,
) -> io::Result<()> {
    let fds = [stdout.as_raw_fd(), stderr.as_raw_fd(), request.as_raw_fd()];
    let bytes = id.to_le_bytes();
    let iov = [io::IoSlice::new(&bytes)];
    sendmsg::<()>(
        socket.as_raw_fd(),
        &iov,
        &[ControlMessage::ScmRights(&fds)],
        MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL,
        None,
    )?;
    Ok(())
}

/// A request as the zygote receives it: its id and its three descriptors (stdout, stderr,
/// the memory file), or `None` for the descriptors if the message was not a whole request.
pub(crate) type Received = (u64, Option<[OwnedFd; 3]>);

/// Waits for the next request; `Ok(None)` when deputy closed its end.
pub(crate) fn receive_request(socket: BorrowedFd<'_>) -> io::Result<Option<Received>> {
    let mut bytes = [0u8; 8];
    let mut space = nix::cmsg_space!([RawFd; 3]);
    let (len, truncated, fds) = {
        let mut iov = [io::IoSliceMut::new(&mut bytes)];
        let msg = loop {
            match recvmsg::<()>(
                socket.as_raw_fd(),
                &mut iov,
                Some(&mut space),
                MsgFlags::MSG_CMSG_CLOEXEC,
            ) {
                Err(nix::errno::Errno::EINTR) => continue,
                other => break other?,
            }
        };
        let mut fds = Vec::new();
        for cmsg in msg.cmsgs()? {
            if let ControlMessageOwned::ScmRights(received) = cmsg {
                // SAFETY: the kernel just installed these descriptors in this process; nothing
                // else owns them.
                fds.extend(
                    received
                        .into_iter()
                        .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }),
                );
            }
        }
        let truncated = msg
            .flags
            .intersects(MsgFlags::MSG_TRUNC | MsgFlags::MSG_CTRUNC);
        (msg.bytes, truncated, fds)
    };
    if len == 0 && fds.is_empty() {
        return Ok(None);
    }
    let whole = len == bytes.len() && !truncated;
    // Anything but exactly three descriptors is dropped (closed) here.
    Ok(Some((
        u64::from_le_bytes(bytes),
        <[OwnedFd; 3]>::try_from(fds).ok().filter(|_| whole),
    )))
}

/// Waits for the zygote's next reply; `Ok(None)` when it is gone.
pub fn receive_reply(socket: BorrowedFd<'_>) -> io::Result<Option<Reply>> {
    let mut bytes = [0u8; Reply::LEN];
    loop {
        // SAFETY: the kernel writes at most `bytes.len()` bytes into the live local array.
        let len = unsafe {
            libc::recv(
                socket.as_raw_fd(),
                bytes.as_mut_ptr().cast(),
                bytes.len(),
                0,
            )
        };
        match len {
            0 => return Ok(None),
            -1 if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => continue,
            -1 => return Err(io::Error::last_os_error()),
            len => {
                return Reply::decode(&bytes[..len as usize])
                    .map(Some)
                    .ok_or_else(|| io::Error::other("the zygote sent a malformed reply"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_round_trips_through_its_bytes() {
        let args = [
            b"--mode".as_slice(),
            b"read-only",
            b"--",
            b"printf",
            b"a=b \xff",
        ];
        let env = [
            (b"PATH".as_slice(), b"/bin:/usr/bin".as_slice()),
            (b"EMPTY", b""),
            (b"X", b"1=2"),
        ];
        let bytes = encode_request(args.iter().copied(), env.iter().copied(), Path::new("/w d"))
            .expect("encodes");
        let request = decode_request(&bytes).expect("decodes");
        assert_eq!(
            request.args,
            args.iter()
                .map(|a| OsString::from_vec(a.to_vec()))
                .collect::<Vec<_>>()
        );
        assert_eq!(request.env[2], (OsString::from("X"), OsString::from("1=2")));
        assert_eq!(request.env[1], (OsString::from("EMPTY"), OsString::new()));
        assert_eq!(request.cwd, PathBuf::from("/w d"));
        // Cut anywhere, or with a byte added, it is not a request.
        for end in 0..bytes.len() {
            assert_eq!(decode_request(&bytes[..end]), None, "cut at {end}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(decode_request(&longer), None);
    }

    #[test]
    fn a_string_with_a_nul_is_not_encoded() {
        let args = [b"a\0b".as_slice()];
        assert_eq!(
            encode_request(args.iter().copied(), std::iter::empty(), Path::new("/")),
            None
        );
    }

    #[test]
    fn replies_round_trip() {
        for reply in [
            Reply::Ready,
            Reply::Started {
                id: u64::MAX,
                pid: 4_194_304,
            },
            Reply::NotStarted {
                id: 7,
                errno: libc::EAGAIN,
            },
            Reply::Exited {
                pid: 12,
                status: 0x0f00,
            },
            Reply::Exited {
                pid: 12,
                status: -1,
            },
        ] {
            assert_eq!(Reply::decode(&reply.encode()), Some(reply));
        }
        assert_eq!(Reply::decode(&[9; Reply::LEN]), None);
        assert_eq!(Reply::decode(&[1; 8]), None);
    }
}
