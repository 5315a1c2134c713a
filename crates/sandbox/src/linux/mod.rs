//! Linux enforcement: the launcher that supervises one command, and confines it in the
//! confined modes.

mod confine;
mod descendants;
mod escaped;
mod filesystem;
mod mount_guard;
mod namespaced;
mod namespaces;
mod privileges;
mod probe;
mod subreaper;
mod supervisor;
mod syscall_filter;
mod terminal_guard;
mod zygote;

use std::ffi::OsString;

pub use escaped::{OwnChild, OwnChildren, adopt_orphans, kill_escaped};
pub use probe::{probe, probed};
pub use supervisor::refuse;

use crate::launch_args::parse_launch_args;

/// The launcher's process name (`comm`, at most 15 bytes).
const LAUNCHER_NAME: &std::ffi::CStr = c"deputy-sandbox";

/// Entry point of the hidden launcher subcommand; see [`crate::launcher_main`].
pub fn launcher_main(args: impl Iterator<Item = OsString>) -> ! {
    // Started as `/proc/self/fd/N` (see `own_launcher`), the kernel would name it `N` in
    // process listings; a name that says what it is instead. Only cosmetic, so unchecked.
    let _ = nix::sys::prctl::set_name(LAUNCHER_NAME);
    let mut args = args.peekable();
    if args
        .peek()
        .is_some_and(|first| first == crate::zygote::ZYGOTE_FLAG)
    {
        args.next();
        zygote::serve(args);
    }
    match parse_launch_args(args) {
        Ok(request) => supervisor::run(request),
        Err(err) => supervisor::refuse(&err),
    }
}
