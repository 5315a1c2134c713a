//! Planning and applying patches against real files in a temporary directory.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::fs;
use std::path::Path;

use deputy_apply_patch::{
    ApplyError, PatchError, PlannedChange, WriteTargets, apply_patch, apply_planned, parse_patch,
    plan_patch,
};
use pretty_assertions::assert_eq;
use tempfile::TempDir;

fn dir_with(files: &[(&str, &str)]) -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, content) in files {
        let path = dir.path().join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }
    dir
}

fn read(dir: &TempDir, name: &str) -> String {
    fs::read_to_string(dir.path().join(name)).unwrap()
}

fn patch(body: &str) -> String {
    format!("*** Begin Patch\n{body}*** End Patch\n")
}

fn apply_error(text: &str, cwd: &Path) -> String {
    match apply_patch(text, cwd) {
        Err(PatchError::Apply(err)) => err.to_string(),
        other => panic!("expected an apply error, got {other:?}"),
    }
}

#[test]
fn add_update_delete_and_summary() {
    let dir = dir_with(&[("m.txt", "a\nb\nc\n"), ("d.txt", "bye\n")]);
    let text = patch(
        "*** Add File: new/n.txt\n+hi\n*** Update File: m.txt\n@@\n a\n-b\n+B\n*** Delete File: d.txt\n",
    );
    let summary = apply_patch(&text, dir.path()).unwrap();
    assert_eq!(
        summary.to_string(),
        "Success. Updated the following files:\nA new/n.txt\nM m.txt\nD d.txt\n"
    );
    assert_eq!(read(&dir, "new/n.txt"), "hi\n");
    assert_eq!(read(&dir, "m.txt"), "a\nB\nc\n");
    assert!(!dir.path().join("d.txt").exists());
}

#[test]
fn add_over_an_existing_file_overwrites_it() {
    let dir = dir_with(&[("a.txt", "old\n")]);
    apply_patch(&patch("*** Add File: a.txt\n+new\n"), dir.path()).unwrap();
    assert_eq!(read(&dir, "a.txt"), "new\n");
}

#[test]
fn chunks_apply_in_order_with_context_anchors() {
    let dir = dir_with(&[(
        "x.py",
        "class A:\n    def f(self):\n        return 1\nclass B:\n    def f(self):\n        return 1\n",
    )]);
    let text = patch(
        "*** Update File: x.py\n@@ class B:\n     def f(self):\n-        return 1\n+        return 2\n",
    );
    apply_patch(&text, dir.path()).unwrap();
    assert_eq!(
        read(&dir, "x.py"),
        "class A:\n    def f(self):\n        return 1\nclass B:\n    def f(self):\n        return 2\n"
    );
}

#[test]
fn chunk_may_repeat_its_anchor_as_first_context_line() {
    let dir = dir_with(&[("x.py", "def f():\n    return 1\n")]);
    let text =
        patch("*** Update File: x.py\n@@ def f():\n def f():\n-    return 1\n+    return 2\n");
    apply_patch(&text, dir.path()).unwrap();
    assert_eq!(read(&dir, "x.py"), "def f():\n    return 2\n");
}

#[test]
fn multiple_chunks_each_search_after_the_previous() {
    let dir = dir_with(&[("f", "x\ny\nx\ny\n")]);
    apply_patch(
        &patch("*** Update File: f\n@@\n-x\n+1\n@@\n-x\n+2\n"),
        dir.path(),
    )
    .unwrap();
    assert_eq!(read(&dir, "f"), "1\ny\n2\ny\n");
}

#[test]
fn move_renames_and_updates() {
    let dir = dir_with(&[("src/old.rs", "fn a() {}\n")]);
    let text =
        patch("*** Update File: src/old.rs\n*** Move to: lib/new.rs\n@@\n-fn a() {}\n+fn b() {}\n");
    let summary = apply_patch(&text, dir.path()).unwrap();
    assert_eq!(
        summary.to_string(),
        "Success. Updated the following files:\nM lib/new.rs\n"
    );
    assert_eq!(read(&dir, "lib/new.rs"), "fn b() {}\n");
    assert!(!dir.path().join("src/old.rs").exists());
}

#[test]
fn pure_move_keeps_content() {
    let dir = dir_with(&[("a", "same\n")]);
    apply_patch(&patch("*** Update File: a\n*** Move to: b\n"), dir.path()).unwrap();
    assert_eq!(read(&dir, "b"), "same\n");
    assert!(!dir.path().join("a").exists());
}

#[test]
fn end_of_file_chunk_matches_only_at_the_end() {
    let dir = dir_with(&[("f", "end\nmiddle\nend\n")]);
    apply_patch(
        &patch("*** Update File: f\n@@\n end\n+after\n*** End of File\n"),
        dir.path(),
    )
    .unwrap();
    assert_eq!(read(&dir, "f"), "end\nmiddle\nend\nafter\n");

    let err = apply_error(
        &patch("*** Update File: f\n@@\n middle\n+x\n*** End of File\n"),
        dir.path(),
    );
    assert_eq!(
        err,
        "Failed to find expected lines at the end of f (chunk 1 of 1):\n    middle"
    );
}

#[test]
fn plus_only_chunk_is_inserted_after_its_anchor_or_at_the_end() {
    let dir = dir_with(&[("f", "a\nb\n")]);
    apply_patch(&patch("*** Update File: f\n@@ a\n+inserted\n"), dir.path()).unwrap();
    assert_eq!(read(&dir, "f"), "a\ninserted\nb\n");
    apply_patch(&patch("*** Update File: f\n+appended\n"), dir.path()).unwrap();
    assert_eq!(read(&dir, "f"), "a\ninserted\nb\nappended\n");
}

#[test]
fn whitespace_tiers_match_loosely_but_write_patch_lines() {
    let dir = dir_with(&[("f", "keep\n  value = 1   \nnext\n")]);
    apply_patch(
        &patch("*** Update File: f\n@@\n-value = 1\n+value = 2\n"),
        dir.path(),
    )
    .unwrap();
    assert_eq!(read(&dir, "f"), "keep\nvalue = 2\nnext\n");
}

#[test]
fn trailing_blank_context_line_may_stand_for_the_final_newline() {
    let dir = dir_with(&[("f", "a\nb\n")]);
    apply_patch(&patch("*** Update File: f\n@@\n-b\n+c\n \n"), dir.path()).unwrap();
    assert_eq!(read(&dir, "f"), "a\nc\n");
}

#[test]
fn crlf_files_stay_crlf_and_missing_final_newline_stays_missing() {
    let dir = dir_with(&[("w", "a\r\nb\r\n"), ("n", "a\nb")]);
    apply_patch(
        &patch("*** Update File: w\n-b\n+c\n*** Update File: n\n-b\n+c\n"),
        dir.path(),
    )
    .unwrap();
    assert_eq!(read(&dir, "w"), "a\r\nc\r\n");
    assert_eq!(read(&dir, "n"), "a\nc");
}

#[test]
fn later_hunks_see_earlier_hunks_of_the_same_patch() {
    let dir = tempfile::tempdir().unwrap();
    let text = patch(
        "*** Add File: f\n+one\n*** Update File: f\n-one\n+two\n*** Update File: f\n-two\n+three\n",
    );
    let summary = apply_patch(&text, dir.path()).unwrap();
    assert_eq!(read(&dir, "f"), "three\n");
    assert_eq!(
        summary.to_string(),
        "Success. Updated the following files:\nA f\nM f\n"
    );
}

#[test]
fn missing_lines_error_names_chunk_and_shows_lines() {
    let dir = dir_with(&[("src/main.rs", "fn main() {\n    run();\n}\n")]);
    let text = patch(
        "*** Update File: src/main.rs\n@@\n fn main() {\n@@\n-foo()\n-bar()\n+baz()\n@@\n }\n+x\n",
    );
    let err = apply_error(&text, dir.path());
    assert_eq!(
        err,
        "Failed to find expected lines in src/main.rs (chunk 2 of 3):\n    foo()\n    bar()"
    );
}

#[test]
fn out_of_order_chunks_get_a_hint() {
    let dir = dir_with(&[("f", "a\nb\n")]);
    let err = apply_error(
        &patch("*** Update File: f\n@@\n-b\n+B\n@@\n-a\n+A\n"),
        dir.path(),
    );
    assert!(err.ends_with("chunks must be in file order)"), "{err}");
}

#[test]
fn missing_context_anchor_is_named() {
    let dir = dir_with(&[("src/x.py", "class Y:\n    pass\n")]);
    let err = apply_error(
        &patch("*** Update File: src/x.py\n@@ class X\n-    pass\n+    x = 1\n"),
        dir.path(),
    );
    assert_eq!(
        err,
        "Failed to find context '@@ class X' in src/x.py (chunk 1 of 1)"
    );
}

#[test]
fn update_of_missing_file_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let err = apply_error(&patch("*** Update File: src/a.txt\n-x\n+y\n"), dir.path());
    assert_eq!(err, "src/a.txt: file to update does not exist");
}

#[test]
fn delete_of_missing_file_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let err = apply_error(&patch("*** Delete File: nope.txt\n"), dir.path());
    assert_eq!(err, "nope.txt: file to delete does not exist");
}

#[test]
fn failing_second_file_leaves_the_first_untouched() {
    let dir = dir_with(&[("first.txt", "one\n"), ("second.txt", "two\n")]);
    let text = patch(
        "*** Update File: first.txt\n-one\n+ONE\n*** Update File: second.txt\n-absent\n+x\n*** Add File: third.txt\n+3\n",
    );
    assert!(apply_patch(&text, dir.path()).is_err());
    assert_eq!(read(&dir, "first.txt"), "one\n");
    assert_eq!(read(&dir, "second.txt"), "two\n");
    assert!(!dir.path().join("third.txt").exists());
}

#[test]
fn a_file_where_a_directory_must_be_fails_the_patch_before_anything_is_written() {
    let dir = dir_with(&[
        ("a.txt", "original\n"),
        ("gone.txt", "g\n"),
        ("blocker", "a regular file\n"),
    ]);
    let text = patch(
        "*** Update File: a.txt\n-original\n+changed\n*** Delete File: gone.txt\n*** Add File: fresh/new.txt\n+n\n*** Add File: blocker/sub/x.txt\n+x\n",
    );
    let changes = plan_patch(&parse_patch(&text).unwrap(), dir.path()).unwrap();
    let err = apply_planned(&changes, &WriteTargets::resolved_now(&changes).unwrap()).unwrap_err();

    assert!(
        matches!(&err, ApplyError::Io { action: "open directory", rollback_failures, .. } if rollback_failures.is_empty()),
        "{err}"
    );
    assert!(
        err.to_string().ends_with("; no files were changed"),
        "{err}"
    );
    assert_eq!(read(&dir, "a.txt"), "original\n");
    assert_eq!(read(&dir, "gone.txt"), "g\n");
    assert!(
        !dir.path().join("fresh").exists(),
        "created directory must be removed"
    );
}

#[test]
fn planning_writes_nothing_and_reports_absolute_paths_and_diffs() {
    let dir = dir_with(&[("a", "x\n"), ("d", "bye\n")]);
    let text = patch(
        "*** Add File: n\n+new\n*** Update File: a\n*** Move to: b\n-x\n+y\n*** Delete File: d\n",
    );
    let changes = plan_patch(&parse_patch(&text).unwrap(), dir.path()).unwrap();
    let root = dir.path();
    assert_eq!(
        changes,
        vec![
            PlannedChange::Add {
                path: root.join("n"),
                display_path: "n".into(),
                content: "new\n".into()
            },
            PlannedChange::Update {
                path: root.join("a"),
                move_path: Some(root.join("b")),
                display_path: "b".into(),
                old_content: "x\n".into(),
                new_content: "y\n".into(),
                unified_diff: "@@ -1 +1 @@\n-x\n+y\n".into(),
            },
            PlannedChange::Delete {
                path: root.join("d"),
                display_path: "d".into(),
                content: "bye\n".into()
            },
        ]
    );
    assert!(!root.join("n").exists() && !root.join("b").exists());
    assert_eq!(read(&dir, "a"), "x\n");
}

#[test]
fn absolute_paths_are_used_as_given() {
    let dir = dir_with(&[("abs.txt", "1\n")]);
    let absolute = dir.path().join("abs.txt");
    let elsewhere = tempfile::tempdir().unwrap();
    let text = patch(&format!(
        "*** Update File: {}\n-1\n+2\n",
        absolute.display()
    ));
    apply_patch(&text, elsewhere.path()).unwrap();
    assert_eq!(read(&dir, "abs.txt"), "2\n");
}

#[test]
fn file_edited_after_planning_is_not_overwritten() {
    let dir = dir_with(&[("f", "planned\n")]);
    let changes = plan_patch(
        &parse_patch(&patch("*** Update File: f\n-planned\n+patched\n")).unwrap(),
        dir.path(),
    )
    .unwrap();
    fs::write(dir.path().join("f"), "edited meanwhile\n").unwrap();
    let err = apply_planned(&changes, &WriteTargets::resolved_now(&changes).unwrap()).unwrap_err();
    assert!(
        matches!(err, ApplyError::ChangedSincePlanned { .. }),
        "{err}"
    );
    assert_eq!(read(&dir, "f"), "edited meanwhile\n");
}

#[test]
fn many_chunks_on_a_large_file_apply_quickly() {
    let original: String = (0..50_000).map(|n| format!("line {n}\n")).collect();
    let dir = dir_with(&[("big.txt", &original)]);
    let mut body = String::from("*** Update File: big.txt\n");
    for n in (0..50_000).step_by(250) {
        body.push_str(&format!(
            "@@\n line {n}\n-line {}\n+changed {}\n",
            n + 1,
            n + 1
        ));
    }
    let started = std::time::Instant::now();
    apply_patch(&patch(&body), dir.path()).unwrap();
    let elapsed = started.elapsed();

    let expected: String = (0..50_000)
        .map(|n| {
            if n % 250 == 1 {
                format!("changed {n}\n")
            } else {
                format!("line {n}\n")
            }
        })
        .collect();
    assert!(
        read(&dir, "big.txt") == expected,
        "content differs from the expected edit"
    );
    // Generous for a debug build on a loaded machine; quadratic behaviour takes minutes.
    assert!(elapsed.as_secs() < 20, "took {elapsed:?}");
}

#[test]
fn planning_refuses_a_fifo_instead_of_waiting_for_a_writer() {
    let dir = dir_with(&[]);
    nix::unistd::mkfifo(
        &dir.path().join("pipe"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    let cwd = dir.path().to_path_buf();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let text = patch("*** Update File: pipe\n-x\n+y\n");
        let _ = tx.send(apply_error(&text, &cwd));
    });
    let err = rx
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("planning returned instead of blocking on the FIFO");
    assert!(err.contains("not a regular file"), "{err}");
}
