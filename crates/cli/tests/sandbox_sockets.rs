//! Escape battery for Unix sockets: a confined command cannot drive a local daemon (tmux,
//! ssh-agent, docker, D-Bus) through its pathname socket unless
//! `sandbox_workspace_write.allow_unix_sockets` (`--allow-unix-sockets`) says so, and even
//! then not one in the real `/tmp`, which its private `/tmp` hides.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

#[path = "common/outside.rs"]
mod outside;
#[macro_use]
#[path = "common/sandbox_cli.rs"]
mod sandbox_cli;

use std::io::{ErrorKind, Read};
use std::os::unix::net::UnixListener;
use std::path::Path;

use sandbox_cli::*;

/// A Python script that connects to the Unix socket at `path` and sends `hello`.
fn connect_script(path: &Path) -> String {
    format!(
        "import socket; s = socket.socket(socket.AF_UNIX); s.connect('{}'); s.sendall(b'hello')",
        path.display()
    )
}

/// Asserts nothing connected to `listener`.
fn assert_no_connection(listener: &UnixListener, what: &str) {
    listener.set_nonblocking(true).unwrap();
    let accepted = listener.accept().map(|_| ()).map_err(|e| e.kind());
    assert_eq!(
        accepted,
        Err(ErrorKind::WouldBlock),
        "{what}: a connection got through"
    );
}

/// Accepts the queued connection on `listener` and returns what was sent.
fn received(listener: &UnixListener) -> Vec<u8> {
    listener.set_nonblocking(true).unwrap();
    let (mut stream, _) = listener.accept().expect("the connection is queued");
    stream.set_nonblocking(false).unwrap();
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).unwrap();
    bytes
}

#[test]
fn a_pathname_socket_outside_cannot_be_connected_from_a_confined_mode() {
    require_sandbox!();
    let (_ws, ws) = workspace();
    let daemon = outside::outside_dir();
    let socket_path = daemon.path().join("daemon.sock");
    let listener = UnixListener::bind(&socket_path).unwrap();
    for mode in CONFINED_MODES {
        for extra in [&[][..], &["--network"][..]] {
            let output = python_script(mode, &ws, extra, &connect_script(&socket_path));
            assert_refused(&output, "Operation not permitted");
            assert_no_connection(&listener, &format!("{mode} {extra:?}"));
        }
    }
}

#[test]
fn a_socket_in_the_workspace_connects_only_when_unix_sockets_are_allowed() {
    require_sandbox!();
    let (_ws, ws) = workspace();
    let socket_path = ws.join("agent.sock");
    let listener = UnixListener::bind(&socket_path).unwrap();
    let script = connect_script(&socket_path);
    for mode in CONFINED_MODES {
        let refused = python_script(mode, &ws, &[], &script);
        assert_refused(&refused, "Operation not permitted");
        assert_no_connection(&listener, mode);
        let allowed = python_script(mode, &ws, &["--allow-unix-sockets"], &script);
        assert!(allowed.status.success(), "{mode}: {}", stderr(&allowed));
        assert_eq!(received(&listener), b"hello", "{mode}");
    }
}

#[test]
fn a_socket_in_the_real_tmp_stays_hidden_even_when_unix_sockets_are_allowed() {
    require_namespaces!();
    let (_ws, ws) = workspace();
    let real_tmp = tempfile::tempdir_in("/tmp").expect("tempdir in /tmp");
    let socket_path = real_tmp.path().join("tmux-like.sock");
    let listener = UnixListener::bind(&socket_path).unwrap();
    for mode in CONFINED_MODES {
        let output = python_script(
            mode,
            &ws,
            &["--allow-unix-sockets"],
            &connect_script(&socket_path),
        );
        assert_refused(&output, "No such file or directory");
        assert_no_connection(&listener, mode);
    }
}

#[test]
fn a_stream_socket_pair_works_and_cannot_reach_a_named_socket() {
    require_sandbox!();
    let (_ws, ws) = workspace();
    let daemon = outside::outside_dir();
    let stream_path = daemon.path().join("stream.sock");
    let stream_listener = UnixListener::bind(&stream_path).unwrap();
    let dgram_path = daemon.path().join("dgram.sock");
    let dgram = std::os::unix::net::UnixDatagram::bind(&dgram_path).unwrap();
    // A connected pair passes data; it cannot be redirected to a named socket: connect()
    // fails (EISCONN; EPROTOTYPE for a seqpacket pair meeting a stream socket), and sendto()
    // fails for a stream pair and ignores the address for a seqpacket one (the bytes go to
    // its peer). A datagram pair, which could sendto() any
    // named datagram socket, is refused outright.
    let script = format!(
        r#"
import errno, socket
for kind in (socket.SOCK_STREAM, socket.SOCK_SEQPACKET):
    a, b = socket.socketpair(socket.AF_UNIX, kind)
    a.sendall(b"x")
    assert b.recv(1) == b"x"
    for attempt in (lambda: b.connect("{stream}"), lambda: a.sendto(b"y", "{dgram}")):
        try:
            attempt()
            print("sent")
        except OSError as e:
            print(errno.errorcode[e.errno])
for kind in (socket.SOCK_DGRAM, socket.SOCK_RAW, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC):
    try:
        socket.socketpair(socket.AF_UNIX, kind)
        print("dgram pair made")
    except OSError as e:
        print(errno.errorcode[e.errno])
"#,
        stream = stream_path.display(),
        dgram = dgram_path.display()
    );
    for mode in CONFINED_MODES {
        let output = python_script(mode, &ws, &[], &script);
        assert!(output.status.success(), "{mode}: {}", stderr(&output));
        assert_eq!(
            stdout(&output),
            "EISCONN\nEISCONN\nEPROTOTYPE\nsent\nEPERM\nEPERM\nEPERM\n",
            "{mode}"
        );
        assert_no_connection(&stream_listener, mode);
        dgram.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 8];
        let got = dgram.recv(&mut buf).map_err(|e| e.kind());
        assert_eq!(
            got,
            Err(ErrorKind::WouldBlock),
            "{mode}: a datagram got through"
        );
    }
}
