//! Waiting on processes the tests start: a pid a command wrote down, a process that must stop.

use std::path::Path;
use std::time::{Duration, Instant};

/// How often the waits below look again.
const POLL: Duration = Duration::from_millis(10);

/// Calls `probe` until it finds something or `within` has passed; `None` at the deadline.
pub fn poll_until<T>(within: Duration, mut probe: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + within;
    loop {
        if let Some(found) = probe() {
            return Some(found);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(POLL);
    }
}

/// The pid a command wrote to `path`, waiting up to `within` for it; fails the test otherwise.
pub fn wait_for_pid(path: &Path, within: Duration) -> i32 {
    poll_until(within, || {
        std::fs::read_to_string(path).ok()?.trim().parse().ok()
    })
    .unwrap_or_else(|| panic!("{} held no pid within {within:?}", path.display()))
}

/// Whether process `pid` is still running (a zombie awaiting its reaper is not).
pub fn is_running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        // The state follows the parenthesised command name, which may itself hold spaces.
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

/// Waits up to `within` for process `pid` to stop (a SIGKILL completes asynchronously);
/// returns whether it did.
pub fn stops_within(pid: i32, within: Duration) -> bool {
    poll_until(within, || (!is_running(pid)).then_some(())).is_some()
}
