//! `deputy-sandbox-exec`: deputy's command launcher as a program of its own, built and
//! installed beside `deputy`. deputy runs every command through a launcher that supervises
//! it and, in the confined modes, confines it (see `deputy_sandbox`); this binary holds that
//! launcher and nothing else, so the dynamic loader and the kernel have far less to map and
//! relocate at each command than when deputy re-executes itself, which it still does when
//! this file is missing.

#![cfg_attr(not(test), no_main)]

/// The process's entry point, called by the C runtime in place of std's, as in `deputy`:
/// std's start-up reads /proc/self/maps, time every command would pay. A panic ends the
/// process with status 101.
#[cfg_attr(not(test), unsafe(no_mangle))]
#[cfg_attr(
    test,
    allow(dead_code, reason = "the test harness has its own entry point")
)]
extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    deputy_sandbox::process_start::run(|| -> i32 { deputy_sandbox::standalone_launcher_main() })
}
