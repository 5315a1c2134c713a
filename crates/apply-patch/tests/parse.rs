//! The patch grammar: every form it accepts, the slips it forgives, and the
//! errors it gives for everything else.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::path::PathBuf;

use deputy_apply_patch::{Hunk, ParseError, Patch, UpdateChunk, parse_patch};
use pretty_assertions::assert_eq;

fn chunk(context: &[&str], old: &[&str], new: &[&str], eof: bool) -> UpdateChunk {
    let owned = |lines: &[&str]| lines.iter().map(|l| (*l).to_owned()).collect();
    UpdateChunk {
        context: owned(context),
        old_lines: owned(old),
        new_lines: owned(new),
        is_end_of_file: eof,
    }
}

fn update(path: &str, move_path: Option<&str>, chunks: Vec<UpdateChunk>) -> Hunk {
    Hunk::Update {
        path: PathBuf::from(path),
        move_path: move_path.map(PathBuf::from),
        chunks,
    }
}

fn error(text: &str) -> ParseError {
    parse_patch(text).expect_err("patch should be rejected")
}

#[test]
fn add_file_collects_plus_lines_with_newlines() {
    let patch =
        parse_patch("*** Begin Patch\n*** Add File: a/b.txt\n+one\n+\n+three\n*** End Patch\n");
    assert_eq!(
        patch,
        Ok(Patch {
            hunks: vec![Hunk::Add {
                path: PathBuf::from("a/b.txt"),
                contents: "one\n\nthree\n".to_owned(),
            }]
        })
    );
}

#[test]
fn delete_file_is_a_single_header() {
    let patch = parse_patch("*** Begin Patch\n*** Delete File: gone.txt\n*** End Patch").unwrap();
    assert_eq!(
        patch.hunks,
        vec![Hunk::Delete {
            path: PathBuf::from("gone.txt")
        }]
    );
}

#[test]
fn update_with_context_header_and_change_lines() {
    let text = "*** Begin Patch\n*** Update File: x.py\n@@ class X\n def f():\n-    return 1\n+    return 2\n*** End Patch\n";
    let patch = parse_patch(text).unwrap();
    let expected = chunk(
        &["class X"],
        &["def f():", "    return 1"],
        &["def f():", "    return 2"],
        false,
    );
    assert_eq!(patch.hunks, vec![update("x.py", None, vec![expected])]);
}

#[test]
fn first_chunk_may_omit_the_at_at_line() {
    let text = "*** Begin Patch\n*** Update File: x\n a\n-b\n+c\n*** End Patch";
    let patch = parse_patch(text).unwrap();
    assert_eq!(
        patch.hunks,
        vec![update(
            "x",
            None,
            vec![chunk(&[], &["a", "b"], &["a", "c"], false)]
        )]
    );
}

#[test]
fn each_at_at_line_starts_a_new_chunk() {
    let text = "*** Begin Patch\n*** Update File: x\n@@\n-a\n+b\n@@ fn g\n-c\n+d\n*** End Patch";
    let patch = parse_patch(text).unwrap();
    let chunks = vec![
        chunk(&[], &["a"], &["b"], false),
        chunk(&["fn g"], &["c"], &["d"], false),
    ];
    assert_eq!(patch.hunks, vec![update("x", None, chunks)]);
}

#[test]
fn consecutive_at_at_lines_are_anchors_sought_in_order() {
    let text = "*** Begin Patch\n*** Update File: x\n@@ class A\n@@ def f\n-a\n+b\n*** End Patch";
    let patch = parse_patch(text).unwrap();
    assert_eq!(
        patch.hunks,
        vec![update(
            "x",
            None,
            vec![chunk(&["class A", "def f"], &["a"], &["b"], false)]
        )]
    );
}

#[test]
fn git_style_hunk_header_contributes_only_its_heading() {
    let text = "*** Begin Patch\n*** Update File: x\n@@ -1,2 +1,2 @@\n-a\n+b\n@@ -9 +9 @@ fn g\n-c\n+d\n*** End Patch";
    let patch = parse_patch(text).unwrap();
    let chunks = vec![
        chunk(&[], &["a"], &["b"], false),
        chunk(&["fn g"], &["c"], &["d"], false),
    ];
    assert_eq!(patch.hunks, vec![update("x", None, chunks)]);
}

#[test]
fn bare_empty_line_in_a_chunk_is_empty_context() {
    let text = "*** Begin Patch\n*** Update File: x\n@@\n a\n\n-b\n+c\n*** End Patch";
    let patch = parse_patch(text).unwrap();
    assert_eq!(
        patch.hunks,
        vec![update(
            "x",
            None,
            vec![chunk(&[], &["a", "", "b"], &["a", "", "c"], false)]
        )]
    );
}

#[test]
fn move_alone_is_a_rename() {
    let text =
        "*** Begin Patch\n*** Update File: old.txt\n*** Move to: new/place.txt\n*** End Patch";
    let patch = parse_patch(text).unwrap();
    assert_eq!(
        patch.hunks,
        vec![update("old.txt", Some("new/place.txt"), vec![])]
    );
}

#[test]
fn move_with_changes() {
    let text = "*** Begin Patch\n*** Update File: a\n*** Move to: b\n@@\n-x\n+y\n*** End Patch";
    let patch = parse_patch(text).unwrap();
    assert_eq!(
        patch.hunks,
        vec![update(
            "a",
            Some("b"),
            vec![chunk(&[], &["x"], &["y"], false)]
        )]
    );
}

#[test]
fn end_of_file_marker_flags_the_chunk() {
    let text =
        "*** Begin Patch\n*** Update File: a\n@@\n last\n+appended\n*** End of File\n*** End Patch";
    let patch = parse_patch(text).unwrap();
    assert_eq!(
        patch.hunks,
        vec![update(
            "a",
            None,
            vec![chunk(&[], &["last"], &["last", "appended"], true)]
        )]
    );
}

#[test]
fn several_hunks_keep_their_order() {
    let text = "*** Begin Patch\n*** Add File: a\n+1\n*** Delete File: b\n*** Update File: c\n-x\n+y\n*** Delete File: d\n*** End Patch";
    let paths: Vec<_> = parse_patch(text)
        .unwrap()
        .hunks
        .iter()
        .map(|h| h.path().to_path_buf())
        .collect();
    assert_eq!(paths, ["a", "b", "c", "d"].map(PathBuf::from));
}

#[test]
fn surrounding_whitespace_and_blank_lines_between_hunks_are_ignored() {
    let text = "\n\n  *** Begin Patch  \n*** Add File: a\n+1\n\n*** Update File: b\n-x\n+y\n\n\n*** End Patch\n\n  ";
    let patch = parse_patch(text).unwrap();
    let expected = vec![
        Hunk::Add {
            path: PathBuf::from("a"),
            contents: "1\n".to_owned(),
        },
        update("b", None, vec![chunk(&[], &["x"], &["y"], false)]),
    ];
    assert_eq!(patch.hunks, expected);
}

#[test]
fn heredoc_wrapper_is_unwrapped_with_any_quoting() {
    let inner = "*** Begin Patch\n*** Delete File: a\n*** End Patch\n";
    let expected = parse_patch(inner).unwrap();
    for opener in ["<<'EOF'", "<<EOF", "<<\"EOF\"", "apply_patch <<'PATCH'"] {
        let word = if opener.contains("PATCH") {
            "PATCH"
        } else {
            "EOF"
        };
        let wrapped = format!("{opener}\n{inner}{word}\n");
        assert_eq!(
            parse_patch(&wrapped).as_ref(),
            Ok(&expected),
            "opener {opener}"
        );
    }
}

#[test]
fn crlf_line_endings_parse_like_lf() {
    let lf =
        "*** Begin Patch\n*** Update File: a\n@@ ctx\n-x\n+y\n*** Add File: b\n+z\n*** End Patch\n";
    assert_eq!(parse_patch(&lf.replace('\n', "\r\n")), parse_patch(lf));
}

#[test]
fn missing_begin_marker_is_reported_on_line_one() {
    let err = error("*** Add File: a\n+x\n*** End Patch");
    assert_eq!(
        err.to_string(),
        "line 1: expected '*** Begin Patch', found '*** Add File: a'"
    );
}

#[test]
fn missing_end_marker_is_reported_after_the_last_line() {
    let err = error("*** Begin Patch\n*** Add File: a\n+x");
    assert_eq!(err.line, 3);
    assert!(
        err.message.contains("'*** End Patch', found end of input"),
        "{err}"
    );
}

#[test]
fn empty_input_is_rejected() {
    assert_eq!(
        error("  \n").to_string(),
        "line 1: expected '*** Begin Patch', found end of input"
    );
}

#[test]
fn patch_without_hunks_is_rejected() {
    let err = error("*** Begin Patch\n*** End Patch\n");
    assert_eq!(err.line, 2);
    assert!(
        err.message.ends_with("(a patch needs at least one hunk)"),
        "{err}"
    );
}

#[test]
fn bad_hunk_header_names_the_line_and_the_choices() {
    let err = error("*** Begin Patch\n\nfoo\n*** End Patch");
    assert_eq!(
        err.to_string(),
        "line 3: expected '*** Add File: ', '*** Delete File: ' or '*** Update File: ', found 'foo'"
    );
}

#[test]
fn add_file_without_plus_lines_is_rejected() {
    let err = error("*** Begin Patch\n*** Add File: a.txt\n*** End Patch");
    assert_eq!(
        err.to_string(),
        "line 3: expected a '+' line with the contents of 'a.txt', found '*** End Patch'"
    );
}

#[test]
fn update_without_changes_is_rejected() {
    let err = error("*** Begin Patch\n*** Update File: a.txt\n*** End Patch");
    assert_eq!(err.line, 3);
    assert!(
        err.message
            .starts_with("expected '@@' or change lines for 'a.txt'"),
        "{err}"
    );
}

#[test]
fn change_line_without_a_marker_is_rejected() {
    let err = error("*** Begin Patch\n*** Update File: a\n@@\n-x\nstray\n*** End Patch");
    assert_eq!(
        err.to_string(),
        "line 5: expected a change line starting with ' ', '+' or '-', found 'stray'"
    );
}

#[test]
fn at_at_line_without_changes_is_rejected() {
    let err = error("*** Begin Patch\n*** Update File: a\n@@ fn f\n*** End Patch");
    assert_eq!(
        err.to_string(),
        "line 4: expected change lines after '@@ fn f', found '*** End Patch'"
    );
}

#[test]
fn header_without_a_file_name_is_rejected() {
    let err = error("*** Begin Patch\n*** Delete File:   \n*** End Patch");
    assert_eq!(
        err.to_string(),
        "line 2: expected a file name after '*** Delete File: '"
    );
}

#[test]
fn text_after_end_patch_is_rejected() {
    let err = error("*** Begin Patch\n*** Delete File: a\n*** End Patch\nmore");
    assert_eq!(
        err.to_string(),
        "line 4: expected nothing after '*** End Patch', found 'more'"
    );
}
