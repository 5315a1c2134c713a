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

use std::ffi::OsString;

pub use escaped::{OwnChild, OwnChildren, adopt_orphans, kill_escaped};
pub use probe::{probe, probed};
pub use supervisor::refuse;

use crate::launch_args::parse_launch_args;

/// Entry point of the hidden launcher subcommand; see [`crate::launcher_main`].
pub fn launcher_main(args: impl Iterator<Item = OsString>) -> ! {
    match parse_launch_args(args) {
        Ok(request) => supervisor::run(request),
        Err(err) => supervisor::refuse(&err),
    }
}
