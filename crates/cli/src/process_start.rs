//! What the process sets up before anything else runs, the binary having its own C `main`
//! (see `main.rs`), beyond what std's start-up would
//! (`deputy_sandbox::process_start::run`).

/// Makes every allocation above 128 KiB a mapping of its own, returned to the kernel when
/// freed. glibc starts there but raises the threshold as large blocks are freed, after
/// which they come from the heap and their pages stay resident: a command printing 100 MB
/// (its 1 MiB captures, the event carrying them to the client) left megabytes behind.
pub(crate) fn keep_large_buffers_out_of_the_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only tunes the allocator; it is called before any other thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}

/// C's `pow`, defined here so that the binary does not load `libm.so` for it: the only
/// function of libm the program uses (through `f64::powf`, in tokio's scheduler statistics
/// and indicatif's rate estimate). Loading one more library is about 0.06 ms of every
/// start (`perf stat` of a C program with and without it), paid by the server and, through
/// the sandbox launcher, by every command. The linker resolves `pow` to this definition and
/// drops libm (it links with `--as-needed`); the `libm` crate is musl's implementation.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[unsafe(no_mangle)]
pub extern "C" fn pow(base: f64, exponent: f64) -> f64 {
    libm::pow(base, exponent)
}

#[cfg(test)]
mod tests {
    /// The unwinder is linked into the binaries of this package (`build.rs`) rather than
    /// loaded: a panic must still unwind to `catch_unwind`, which `main` relies on for its
    /// exit status and the runtime for a task's panic. A broken unwinder aborts the test.
    #[test]
    fn a_panic_unwinds_with_the_linked_unwinder() {
        let caught = std::panic::catch_unwind(|| panic!("a test panic"));
        assert!(caught.is_err());
        if cfg!(static_unwinder) {
            let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
            assert!(
                maps.contains("libc.so") && !maps.contains("libgcc_s"),
                "libgcc_s is still loaded:\n{maps}"
            );
        }
    }

    /// `f64::powf` reaches the `pow` defined in this crate, which answers as C's does,
    /// and libm is not loaded for it.
    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn powf_is_answered_without_loading_libm() {
        // Through a black box, so that the compiler cannot fold the calls away.
        let powf = |base: f64, exponent: f64| std::hint::black_box(base).powf(exponent);
        assert_eq!(powf(2.0, 10.0), 1024.0);
        assert_eq!(powf(0.5, -3.0), 8.0);
        assert!((powf(10.0, 0.5) - 10f64.sqrt()).abs() < 1e-15);
        assert!(powf(-8.0, 0.5).is_nan());
        assert_eq!(powf(0.0, -1.0), f64::INFINITY);
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
        assert!(
            maps.contains("libc.so") && !maps.contains("libm.so"),
            "libm is still loaded:\n{maps}"
        );
    }
}
