//! Pushing input into a terminal with `ioctl(TIOCSTI)`, and a pseudo-terminal to try it
//! on: shared by the terminal-injection batteries of `deputy sandbox`, `shell` and
//! `exec_command`.

use std::process::{Command, Output, Stdio};

use crate::sandbox_cli::python;

/// Pushes `yes\n` into the terminal through `/dev/tty` and through the terminal's path
/// (`$INJECT_TTY`), one byte per `TIOCSTI`, and prints what happened.
pub const INJECT: &str = r#"
import fcntl, os, termios
for path in ("/dev/tty", os.environ["INJECT_TTY"]):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOCTTY)
        for byte in b"yes\n":
            fcntl.ioctl(fd, termios.TIOCSTI, bytes([byte]))
        print(path, "injected", flush=True)
    except OSError as e:
        print(path, e.strerror, flush=True)
"#;

/// Runs argv[1:] on a raw-mode pseudo-terminal that is its controlling terminal, then prints
/// on stdout the bytes waiting in the terminal's input (`queued=b'…'`), which an injection
/// would have put there, and the terminal's output on stderr.
pub const PTY_RUN: &str = r#"
import fcntl, os, pty, select, struct, subprocess, sys, termios, time, tty
master, slave = pty.openpty()
tty.setraw(slave)
env = dict(os.environ, INJECT_TTY=os.ttyname(slave))
child = subprocess.Popen(sys.argv[1:], stdin=slave, stdout=slave, stderr=slave, env=env,
    start_new_session=True, preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
transcript, deadline = b"", time.time() + 60
while time.time() < deadline:
    ready, _, _ = select.select([master], [], [], 0.1)
    if ready:
        transcript += os.read(master, 4096)
    elif child.poll() is not None:
        break
else:
    child.kill()
child.wait()
queued = struct.unpack("i", fcntl.ioctl(slave, termios.FIONREAD, b"\0" * 4))[0]
pending = os.read(slave, queued) if queued else b""
print(f"queued={pending!r}")
sys.stderr.buffer.write(transcript)
"#;

/// Whether python3 can drive a pseudo-terminal here.
pub fn has_pty() -> bool {
    let available = Command::new(python())
        .args(["-c", "import pty, select, subprocess, termios"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !available {
        eprintln!("skipping: python3 with the pty module is not available to drive a terminal");
    }
    available
}

/// Runs `argv` under [`PTY_RUN`].
pub fn on_pty(argv: &[&str]) -> Output {
    Command::new(python())
        .args(["-c", PTY_RUN])
        .args(argv)
        .env_remove("TMPDIR")
        .output()
        .expect("run the pty driver")
}
