//! What a process with its own C `main` sets up before anything else runs: `deputy` and its
//! stand-alone launcher both skip std's start-up (see the `deputy` binary's `main`).

/// Runs `body` as std's start-up would run a `main`, then exits with its status: after
/// [`as_std_would`], with status 101 if it panics (`exit` flushes stdout). Must be called
/// from the C `main`, before any other thread exists.
pub fn run(body: impl FnOnce() -> i32 + std::panic::UnwindSafe) -> ! {
    as_std_would();
    let code = std::panic::catch_unwind(body).unwrap_or(101);
    std::process::exit(code)
}

/// What std's start-up does, but for finding the main thread's stack: closed standard
/// descriptors are opened on /dev/null (so that no file opened later becomes stdout), and
/// SIGPIPE is ignored (a closed pipe is an error, not death; commands get it back by
/// default). Must run before any other thread exists.
fn as_std_would() {
    open_closed_standard_descriptors();
    // SAFETY: no other thread exists yet; ignoring a signal installs no handler code.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

/// Opens /dev/null on each of descriptors 0, 1 and 2 that is closed; aborts if it cannot.
fn open_closed_standard_descriptors() {
    for fd in 0..3 {
        // SAFETY: F_GETFD only reads the descriptor's flags.
        if unsafe { libc::fcntl(fd, libc::F_GETFD) } == -1 {
            // SAFETY: a static NUL-terminated path; the lowest free descriptor is `fd`,
            // since the ones below it are open.
            let opened = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
            if opened != fd {
                std::process::abort();
            }
        }
    }
}
