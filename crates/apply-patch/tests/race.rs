//! Patches applied while another process swaps a directory for a symlink never write
//! outside their root: each one applies inside or fails, changing nothing.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use deputy_apply_patch::{
    ApplyError, PatchError, PlannedChange, WriteTarget, WriteTargets, apply_planned, parse_patch,
    plan_patch,
};
use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};

/// How many patches are applied under the swapping; bounded so the test ends in seconds.
const ATTEMPTS: usize = 300;

/// Adds, updates, deletes and moves (into a new directory), all inside `sub/`.
const PATCH: &str = "*** Begin Patch
*** Add File: sub/new.txt
+added
*** Update File: sub/keep.txt
@@
-keep
+kept
*** Delete File: sub/gone.txt
*** Update File: sub/from.txt
*** Move to: sub/deeper/to.txt
@@
-from
+moved
*** End Patch";

/// `sub/` before the patch; the outside directory holds the same files, so that a patch
/// planned through the swapped-in symlink still matches and would write there.
const UNCHANGED: &[(&str, &str)] = &[
    ("from.txt", "from\n"),
    ("gone.txt", "gone\n"),
    ("keep.txt", "keep\n"),
];
/// `sub/` after the patch applied.
const APPLIED: &[(&str, &str)] = &[
    ("deeper/", ""),
    ("deeper/to.txt", "moved\n"),
    ("keep.txt", "kept\n"),
    ("new.txt", "added\n"),
];

/// Every entry beneath `dir` without following symlinks: files with their bytes,
/// directories with a trailing `/`, symlinks with `-> target`.
fn snapshot(dir: &Path) -> BTreeMap<String, String> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.strip_prefix(base).unwrap().display().to_string();
            let kind = path.symlink_metadata().unwrap().file_type();
            if kind.is_symlink() {
                let target = fs::read_link(&path).unwrap();
                out.insert(format!("{name} -> {}", target.display()), String::new());
            } else if kind.is_dir() {
                out.insert(format!("{name}/"), String::new());
                walk(base, &path, out);
            } else {
                out.insert(
                    name,
                    String::from_utf8_lossy(&fs::read(&path).unwrap()).into_owned(),
                );
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn expected(files: &[(&str, &str)]) -> BTreeMap<String, String> {
    files
        .iter()
        .map(|(name, text)| (name.to_string(), text.to_string()))
        .collect()
}

/// Empties `dir` and writes the `UNCHANGED` files into it.
fn reset(dir: &Path) {
    fs::remove_dir_all(dir).unwrap();
    fs::create_dir(dir).unwrap();
    for (name, text) in UNCHANGED {
        fs::write(dir.join(name), text).unwrap();
    }
}

/// Swaps `a` and `b` atomically (one is the real `sub/`, the other the symlink out).
fn exchange(a: &Path, b: &Path) {
    renameat2(AT_FDCWD, a, AT_FDCWD, b, RenameFlags::RENAME_EXCHANGE).expect("exchange");
}

/// The patching thread's rounds, as the swapping thread sees them.
#[derive(Default)]
struct Turns {
    /// The round being patched (1-based); the swapper starts on a change.
    round: AtomicUsize,
    /// Whether the round's patch is still being applied.
    patching: AtomicBool,
    /// The last round after which the real directory is back at `sub`.
    settled: AtomicUsize,
    quit: AtomicBool,
}

impl Turns {
    /// The other process: while a patch is being applied, swap `sub` and the symlink back
    /// and forth; between patches, leave the real directory at `sub`. Each round leaves the
    /// real directory in place a little longer (0 to 75 µs) before the next swap, so that
    /// some patches fit between swaps and others are hit in the middle.
    fn swap_during_rounds(&self, sub: &Path, swap: &Path) {
        let mut seen = 0;
        loop {
            while self.round.load(Ordering::SeqCst) == seen {
                if self.quit.load(Ordering::SeqCst) {
                    return;
                }
                std::thread::yield_now();
            }
            seen = self.round.load(Ordering::SeqCst);
            let hold = Duration::from_micros(seen as u64 % 4 * 25);
            let mut swaps = 0;
            while self.patching.load(Ordering::SeqCst) {
                if swaps % 2 == 0 {
                    let held = Instant::now();
                    while held.elapsed() < hold && self.patching.load(Ordering::SeqCst) {
                        std::thread::yield_now();
                    }
                }
                exchange(sub, swap);
                swaps += 1;
            }
            if swaps % 2 == 1 {
                exchange(sub, swap);
            }
            self.settled.store(seen, Ordering::SeqCst);
        }
    }
}

struct QuitOnDrop<'a>(&'a Turns);

impl Drop for QuitOnDrop<'_> {
    fn drop(&mut self) {
        self.0.quit.store(true, Ordering::SeqCst);
        self.0.patching.store(false, Ordering::SeqCst);
    }
}

/// Plans the patch in `root` and applies it with every path targeted beneath `root`, as a
/// caller confining writes to `root` (checked before the swapping began) does.
fn apply(root: &Path) -> Result<(), PatchError> {
    let changes = plan_patch(&parse_patch(PATCH)?, root)?;
    let mut targets = WriteTargets::default();
    for path in changes.iter().flat_map(PlannedChange::paths) {
        let relative = path.strip_prefix(root).expect("planned inside the root");
        let target = WriteTarget::new(root.to_path_buf(), relative.to_path_buf());
        targets.insert(path.to_path_buf(), target.expect("plain relative path"));
    }
    apply_planned(&changes, &targets)?;
    Ok(())
}

#[test]
fn swapping_a_directory_for_a_symlink_never_redirects_a_patch_outside_the_root() {
    let root_dir = tempfile::tempdir().unwrap();
    let outside_dir = tempfile::tempdir().unwrap();
    let root = root_dir.path().canonicalize().unwrap();
    let outside = outside_dir.path().canonicalize().unwrap();
    let (sub, swap) = (root.join("sub"), root.join("swap"));
    fs::create_dir(&sub).unwrap();
    reset(&sub);
    reset(&outside);
    fs::write(outside.join("secret.txt"), "outside bytes\n").unwrap();
    std::os::unix::fs::symlink(&outside, &swap).unwrap();
    let outside_before = snapshot(&outside);

    let turns = Turns::default();
    let mut escapes = Vec::new();
    let mut unclean = Vec::new();
    let (mut applied, mut failed, mut redirected) = (0, 0, 0);
    std::thread::scope(|scope| {
        let swapper = scope.spawn(|| turns.swap_during_rounds(&sub, &swap));
        // Ends the swapper even if an assertion below fails, so the test cannot hang.
        let _quit = QuitOnDrop(&turns);
        for attempt in 0..ATTEMPTS {
            turns.patching.store(true, Ordering::SeqCst);
            turns.round.store(attempt + 1, Ordering::SeqCst);
            let result = apply(&root);
            turns.patching.store(false, Ordering::SeqCst);
            while turns.settled.load(Ordering::SeqCst) != attempt + 1 {
                assert!(!swapper.is_finished(), "the swapping thread stopped");
                std::thread::yield_now();
            }

            let outside_now = snapshot(&outside);
            if outside_now != outside_before {
                escapes.push(format!("attempt {attempt}: outside became {outside_now:?}"));
                reset(&outside);
                fs::write(outside.join("secret.txt"), "outside bytes\n").unwrap();
            }
            let inside = snapshot(&sub);
            match &result {
                Ok(()) if inside == expected(APPLIED) => applied += 1,
                Err(err) if inside == expected(UNCHANGED) && is_clean(err) => {
                    failed += 1;
                    if matches!(err, PatchError::Apply(ApplyError::Redirected { .. })) {
                        redirected += 1;
                    }
                }
                _ => unclean.push(format!(
                    "attempt {attempt}: {result:?}, sub holds {inside:?}"
                )),
            }
            reset(&sub);
        }
    });

    let tally = format!(
        "{} of {ATTEMPTS} wrote outside the root, {} neither applied inside nor failed \
         cleanly; {applied} applied, {failed} failed cleanly",
        escapes.len(),
        unclean.len()
    );
    eprintln!("{tally}, {redirected} of them as redirected");
    assert!(escapes.is_empty(), "{tally}; first escape: {}", escapes[0]);
    assert!(unclean.is_empty(), "{tally}; first unclean: {}", unclean[0]);
    // Both outcomes occurred, and some failures were the swap caught in the act, so the
    // swapping did overlap the writes.
    assert!(
        applied > 0 && redirected > 0,
        "{tally}, {redirected} as redirected"
    );
}

/// A failure that changed nothing: a planning error, or an apply error whose rollback succeeded.
fn is_clean(err: &PatchError) -> bool {
    match err {
        PatchError::Parse(_) => false,
        PatchError::Apply(
            ApplyError::Io {
                rollback_failures, ..
            }
            | ApplyError::ChangedSincePlanned {
                rollback_failures, ..
            }
            | ApplyError::Redirected {
                rollback_failures, ..
            },
        ) => rollback_failures.is_empty(),
        PatchError::Apply(_) => true,
    }
}
