//! Applying writes each path at the target the caller chose, beneath its root, and nowhere
//! a symlink planted afterwards would lead.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use deputy_apply_patch::{
    ApplyError, PlannedChange, WriteTarget, WriteTargets, apply_planned, parse_patch, plan_patch,
};
use pretty_assertions::assert_eq;

/// A canonical root holding `files`, and an outside directory holding `secret.txt`.
fn scene(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf, tempfile::TempDir, PathBuf) {
    let root_dir = tempfile::tempdir().unwrap();
    let outside_dir = tempfile::tempdir().unwrap();
    let root = root_dir.path().canonicalize().unwrap();
    let outside = outside_dir.path().canonicalize().unwrap();
    for (name, text) in files {
        let path = root.join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    fs::write(outside.join("secret.txt"), "outside\n").unwrap();
    (root_dir, root, outside_dir, outside)
}

fn plan(root: &Path, body: &str) -> Vec<PlannedChange> {
    let text = format!("*** Begin Patch\n{body}*** End Patch\n");
    plan_patch(&parse_patch(&text).unwrap(), root).unwrap()
}

/// Every planned path targeted beneath `root`, as a caller confining writes to it does.
fn beneath(root: &Path, changes: &[PlannedChange]) -> WriteTargets {
    let mut targets = WriteTargets::default();
    for path in changes.iter().flat_map(PlannedChange::paths) {
        let relative = path.strip_prefix(root).unwrap().to_path_buf();
        targets.insert(
            path.to_path_buf(),
            WriteTarget::new(root.to_path_buf(), relative).unwrap(),
        );
    }
    targets
}

fn outside_entries(outside: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(outside)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_directory_swapped_for_a_symlink_after_checking_fails_the_patch_and_rolls_back() {
    let (_r, root, _o, outside) = scene(&[("a.txt", "a\n"), ("sub/b.txt", "b\n")]);
    let changes = plan(
        &root,
        "*** Update File: a.txt\n-a\n+A\n*** Update File: sub/b.txt\n-b\n+B\n*** Add File: sub/new/c.txt\n+c\n",
    );
    let targets = beneath(&root, &changes);
    // After the check: `sub` becomes a symlink to a directory holding the same file.
    fs::rename(root.join("sub"), root.join("sub-moved")).unwrap();
    fs::write(outside.join("b.txt"), "b\n").unwrap();
    symlink(&outside, root.join("sub")).unwrap();

    let err = apply_planned(&changes, &targets).unwrap_err();

    assert!(
        matches!(&err, ApplyError::Redirected { path, rollback_failures }
            if *path == root.join("sub/b.txt") && rollback_failures.is_empty()),
        "{err}"
    );
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert!(
        err.to_string().ends_with("; no files were changed"),
        "{err}"
    );
    assert_eq!(fs::read_to_string(root.join("a.txt")).unwrap(), "a\n");
    assert_eq!(fs::read_to_string(outside.join("b.txt")).unwrap(), "b\n");
    assert_eq!(outside_entries(&outside), ["b.txt", "secret.txt"]);
}

#[test]
fn a_file_swapped_for_a_symlink_is_not_written_through() {
    let (_r, root, _o, outside) = scene(&[("f.txt", "same\n")]);
    let changes = plan(&root, "*** Update File: f.txt\n-same\n+changed\n");
    let targets = beneath(&root, &changes);
    fs::write(outside.join("secret.txt"), "same\n").unwrap();
    fs::remove_file(root.join("f.txt")).unwrap();
    symlink(outside.join("secret.txt"), root.join("f.txt")).unwrap();

    let err = apply_planned(&changes, &targets).unwrap_err();

    assert!(matches!(err, ApplyError::Redirected { .. }), "{err}");
    assert_eq!(
        fs::read_to_string(outside.join("secret.txt")).unwrap(),
        "same\n"
    );
}

#[test]
fn a_path_without_a_target_fails_before_anything_is_written() {
    let (_r, root, _o, _outside) = scene(&[("a.txt", "a\n")]);
    let changes = plan(
        &root,
        "*** Update File: a.txt\n-a\n+A\n*** Add File: b.txt\n+b\n",
    );
    let mut targets = WriteTargets::default();
    targets.insert(
        root.join("a.txt"),
        WriteTarget::new(root.clone(), "a.txt".into()).unwrap(),
    );

    let err = apply_planned(&changes, &targets).unwrap_err();

    assert!(
        matches!(&err, ApplyError::NoWriteTarget { path } if *path == root.join("b.txt")),
        "{err}"
    );
    assert_eq!(fs::read_to_string(root.join("a.txt")).unwrap(), "a\n");
    assert!(!root.join("b.txt").exists());
}

#[test]
fn writes_go_to_the_target_even_when_it_differs_from_the_planned_path() {
    // A caller that resolved `link/x.txt` when checking it writes where the link led then,
    // even though the link now points elsewhere.
    let (_r, root, _o, outside) = scene(&[("real/x.txt", "x\n")]);
    symlink(root.join("real"), root.join("link")).unwrap();
    let changes = plan(&root, "*** Update File: link/x.txt\n-x\n+X\n");
    let targets = WriteTargets::resolved_now(&changes).unwrap();
    assert_eq!(
        targets.get(&root.join("link/x.txt")).unwrap(),
        &WriteTarget::new(root.join("real"), "x.txt".into()).unwrap()
    );
    fs::remove_file(root.join("link")).unwrap();
    symlink(&outside, root.join("link")).unwrap();

    apply_planned(&changes, &targets).unwrap();

    assert_eq!(fs::read_to_string(root.join("real/x.txt")).unwrap(), "X\n");
    assert_eq!(outside_entries(&outside), ["secret.txt"]);
}

#[test]
fn resolving_now_targets_the_deepest_existing_directory() {
    let (_r, root, _o, _outside) = scene(&[("dir/file.txt", "f\n"), ("blocker", "b\n")]);
    let resolve = |path: &str| WriteTarget::resolve_now(&root.join(path)).unwrap();
    assert_eq!(
        resolve("dir/file.txt"),
        WriteTarget::new(root.join("dir"), "file.txt".into()).unwrap()
    );
    assert_eq!(
        resolve("dir/new/deeper.txt"),
        WriteTarget::new(root.join("dir"), "new/deeper.txt".into()).unwrap()
    );
    // A file where a directory is missing stays beneath its own directory, so writing there
    // fails as "not a directory" rather than opening the file as a root.
    assert_eq!(
        resolve("blocker/sub/x.txt"),
        WriteTarget::new(root.clone(), "blocker/sub/x.txt".into()).unwrap()
    );
    assert!(WriteTarget::resolve_now(Path::new("relative.txt")).is_err());
    symlink(root.join("absent"), root.join("dangling")).unwrap();
    assert!(WriteTarget::resolve_now(&root.join("dangling/x.txt")).is_err());
}

#[test]
fn write_targets_refuse_relative_roots_and_climbing_paths() {
    let ok = |root: &str, relative: &str| WriteTarget::new(root.into(), relative.into()).is_ok();
    assert!(ok("/work/repo", "src/lib.rs"));
    assert!(!ok("work/repo", "src/lib.rs"));
    assert!(!ok("/work/../etc", "passwd"));
    assert!(!ok("/work/repo", "../etc/passwd"));
    assert!(!ok("/work/repo", "/etc/passwd"));
    assert!(!ok("/work/repo", "./a"));
    assert!(!ok("/work/repo", ""));
}

#[test]
fn an_updated_file_keeps_its_permissions() {
    let (_r, root, _o, _outside) = scene(&[("run.sh", "echo a\n")]);
    fs::set_permissions(root.join("run.sh"), fs::Permissions::from_mode(0o750)).unwrap();
    let changes = plan(&root, "*** Update File: run.sh\n-echo a\n+echo b\n");

    apply_planned(&changes, &beneath(&root, &changes)).unwrap();

    let meta = fs::metadata(root.join("run.sh")).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o750);
    assert_eq!(fs::read_to_string(root.join("run.sh")).unwrap(), "echo b\n");
}

#[test]
fn a_move_onto_a_symlink_to_the_file_itself_edits_it_in_place() {
    let (_r, root, _o, _outside) = scene(&[("a.txt", "a\n")]);
    symlink(root.join("a.txt"), root.join("b.txt")).unwrap();
    let changes = plan(
        &root,
        "*** Update File: a.txt\n*** Move to: b.txt\n-a\n+A\n",
    );

    apply_planned(&changes, &WriteTargets::resolved_now(&changes).unwrap()).unwrap();

    assert_eq!(fs::read_to_string(root.join("a.txt")).unwrap(), "A\n");
    assert_eq!(fs::read_to_string(root.join("b.txt")).unwrap(), "A\n");
}

#[test]
fn deleting_or_moving_a_symlink_is_refused_rather_than_removing_its_target() {
    let (_r, root, _o, _outside) = scene(&[("real.txt", "r\n")]);
    symlink(root.join("real.txt"), root.join("link.txt")).unwrap();
    for body in [
        "*** Delete File: link.txt\n",
        "*** Update File: link.txt\n*** Move to: moved.txt\n-r\n+R\n",
    ] {
        let changes = plan(&root, body);

        let err =
            apply_planned(&changes, &WriteTargets::resolved_now(&changes).unwrap()).unwrap_err();

        assert!(
            matches!(&err, ApplyError::RemovesSymlink { path } if *path == root.join("link.txt")),
            "{err}"
        );
        assert_eq!(fs::read_to_string(root.join("real.txt")).unwrap(), "r\n");
        assert!(root.join("link.txt").is_symlink());
        assert!(!root.join("moved.txt").exists());
    }
}
