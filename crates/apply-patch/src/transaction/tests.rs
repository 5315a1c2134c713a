//! Stopping an apply at every step that changes the disk: a failure is rolled back at once,
//! a crash (the process killed there) is rolled back or completed by `recover`, and either
//! way every file is whole, old or new, with nothing left behind.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::*;
use crate::journal::{FileOutcome, RecoveryAction, recover};
use crate::{parse_patch, plan_patch};

/// Where a test stops the apply.
#[derive(Debug, Clone, Copy)]
enum Fault {
    /// Fail the step with an I/O error: the apply rolls back.
    Fail(usize),
    /// Stop there as if killed: nothing more happens in this process.
    Crash(usize),
}

thread_local! {
    static FAULT: Cell<Option<Fault>> = const { Cell::new(None) };
    static STEPS: Cell<usize> = const { Cell::new(0) };
}

pub(super) fn fault_at_this_step(can_fail: bool) -> Result<(), Failure> {
    let step = STEPS.get();
    STEPS.set(step + 1);
    match FAULT.get() {
        Some(Fault::Fail(at)) if at == step && can_fail => Err(Failure::Io {
            path: PathBuf::from("injected"),
            action: "write",
            source: io::Error::other("injected failure"),
        }),
        Some(Fault::Crash(at)) if at == step => Err(Failure::Crashed),
        _ => Ok(()),
    }
}

const PATCH: &str = "*** Begin Patch
*** Update File: a.txt
@@
-a
+A
*** Delete File: gone.txt
*** Add File: fresh/deeper/new.txt
+new
*** Update File: src/old.rs
*** Move to: lib/new.rs
@@
-fn a() {}
+fn b() {}
*** Add File: over.txt
+replaced
*** End Patch";

const BEFORE: &[(&str, &str)] = &[
    ("a.txt", "a\n"),
    ("gone.txt", "g\n"),
    ("src/old.rs", "fn a() {}\n"),
    ("over.txt", "was here\n"),
];

const AFTER: &[(&str, &str)] = &[
    ("a.txt", "A\n"),
    ("fresh/deeper/new.txt", "new\n"),
    ("lib/new.rs", "fn b() {}\n"),
    ("over.txt", "replaced\n"),
];

/// Every entry beneath `dir` (hidden ones too): files with their content and mode,
/// directories as `/`.
fn snapshot(dir: &Path) -> BTreeMap<String, String> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.strip_prefix(base).unwrap().display().to_string();
            let meta = fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                out.insert(name, "/".into());
                walk(base, &path, out);
            } else {
                let mode = meta.permissions().mode() & 0o777;
                let content = fs::read_to_string(&path).unwrap();
                out.insert(name, format!("{mode:o} {content}"));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

fn expected(files: &[(&str, &str)], dirs: &[&str]) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> =
        dirs.iter().map(|d| (d.to_string(), "/".into())).collect();
    for (name, content) in files {
        let mode = if *name == "a.txt" { "640" } else { "644" };
        out.insert(name.to_string(), format!("{mode} {content}"));
    }
    out
}

fn before() -> BTreeMap<String, String> {
    expected(BEFORE, &["src"])
}

fn after() -> BTreeMap<String, String> {
    expected(AFTER, &["src", "lib", "fresh", "fresh/deeper"])
}

struct Scene {
    _dir: tempfile::TempDir,
    root: PathBuf,
    journal: JournalFile,
    _home: tempfile::TempDir,
}

fn scene() -> Scene {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    for (name, content) in BEFORE {
        let path = root.join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(&path, content).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    }
    fs::set_permissions(root.join("a.txt"), fs::Permissions::from_mode(0o640)).unwrap();
    let home = tempfile::tempdir().unwrap();
    let journal = JournalFile {
        path: home.path().join("journal/one.json"),
        label: "call-7".into(),
    };
    Scene {
        _dir: dir,
        root,
        journal,
        _home: home,
    }
}

/// Applies [`PATCH`] in `scene` with `fault` armed; returns the result and the steps taken.
fn apply(scene: &Scene, fault: Option<Fault>) -> (Result<ApplySummary, ApplyError>, usize) {
    let changes = plan_patch(&parse_patch(PATCH).unwrap(), &scene.root).unwrap();
    let targets = WriteTargets::resolved_now(&changes).unwrap();
    FAULT.set(fault);
    STEPS.set(0);
    let result = apply_journaled(&changes, &targets, Some(&scene.journal));
    FAULT.set(None);
    (result, STEPS.get())
}

#[test]
fn a_clean_apply_writes_every_file_keeps_permissions_and_leaves_nothing_behind() {
    let scene = scene();
    let (result, steps) = apply(&scene, None);
    result.unwrap();
    assert_eq!(snapshot(&scene.root), after());
    assert!(!scene.journal.path.exists());
    assert!(steps > 5, "{steps} steps");
}

#[test]
fn a_failure_at_any_step_leaves_every_file_as_it_was() {
    let (_, steps) = apply(&scene(), None);
    // The last step comes after the commit, where nothing fails the apply any more.
    for step in 0..steps - 1 {
        let scene = scene();
        let (result, _) = apply(&scene, Some(Fault::Fail(step)));
        let err = result.unwrap_err();
        assert!(
            err.to_string().ends_with("no files were changed"),
            "step {step}: {err}"
        );
        assert_eq!(snapshot(&scene.root), before(), "step {step}");
        assert!(!scene.journal.path.exists(), "step {step}: journal left");
    }
}

#[test]
fn a_kill_at_any_step_leaves_whole_files_and_recovery_makes_it_all_or_nothing() {
    let (_, steps) = apply(&scene(), None);
    let (mut rolled_back, mut completed, mut mixed) = (0, 0, 0);
    for step in 0..steps {
        let scene = scene();
        let (result, _) = apply(&scene, Some(Fault::Crash(step)));
        assert!(result.is_err(), "step {step}");
        // Before recovery: each file old or new, whole, wherever the kill fell.
        let now = snapshot(&scene.root);
        let (old, new) = (before(), after());
        for (name, content) in &now {
            let hidden = name.rsplit('/').next().unwrap().starts_with('.');
            assert!(
                hidden || old.get(name) == Some(content) || new.get(name) == Some(content),
                "step {step}: {name} holds {content:?}"
            );
        }
        let visible = |map: &BTreeMap<String, String>| {
            map.iter()
                .filter(|(name, _)| !name.rsplit('/').next().unwrap().starts_with('.'))
                .map(|(n, c)| (n.clone(), c.clone()))
                .collect::<BTreeMap<_, _>>()
        };
        if visible(&now) != old && visible(&now) != visible(&new) {
            mixed += 1;
        }
        if !scene.journal.path.exists() {
            // Killed before the journal was first written: nothing had changed.
            assert_eq!(now, old, "step {step}");
            continue;
        }
        let recovery = recover(&scene.journal.path).unwrap();
        assert_eq!(recovery.label, "call-7");
        assert!(recovery.failures.is_empty(), "{recovery}");
        assert!(!scene.journal.path.exists(), "step {step}: journal left");
        match recovery.action {
            RecoveryAction::RolledBack => {
                rolled_back += 1;
                assert_eq!(snapshot(&scene.root), old, "step {step}: {recovery}");
            }
            RecoveryAction::Completed => {
                completed += 1;
                assert_eq!(snapshot(&scene.root), new, "step {step}: {recovery}");
                assert!(
                    recovery
                        .files
                        .iter()
                        .all(|(_, o)| *o == FileOutcome::Patched),
                    "{recovery}"
                );
            }
        }
    }
    // The kills fell before, during and after the renames.
    assert!(
        rolled_back > 0 && completed > 0 && mixed > 0,
        "{rolled_back} rolled back, {completed} completed, {mixed} half-applied"
    );
}

#[test]
fn recovery_says_which_files_were_restored_and_which_removed() {
    let scene = scene();
    // Crash after every rename, just before the commit: everything is rolled back.
    let (_, steps) = apply(&scene, None);
    let scene = self::scene();
    let (result, _) = apply(&scene, Some(Fault::Crash(steps - 2)));
    assert!(result.is_err());
    let recovery = recover(&scene.journal.path).unwrap();
    let text = recovery.to_string();
    assert_eq!(recovery.action, RecoveryAction::RolledBack, "{text}");
    let outcome = |name: &str| {
        recovery
            .files
            .iter()
            .find(|(path, _)| path.ends_with(name))
            .map(|(_, o)| *o)
    };
    assert_eq!(outcome("a.txt"), Some(FileOutcome::Restored), "{text}");
    assert_eq!(outcome("gone.txt"), Some(FileOutcome::Restored), "{text}");
    assert_eq!(
        outcome("fresh/deeper/new.txt"),
        Some(FileOutcome::Removed),
        "{text}"
    );
    assert_eq!(outcome("lib/new.rs"), Some(FileOutcome::Removed), "{text}");
    assert!(text.contains("rolled back"), "{text}");
    assert!(
        text.contains(&scene.root.join("a.txt").display().to_string()),
        "{text}"
    );
    assert_eq!(snapshot(&scene.root), before());
}
