//! Which shell tool calls are recognised as `apply_patch` invocations.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use deputy_apply_patch::{ExtractedPatch, extract_patch_from_argv};
use pretty_assertions::assert_eq;

const PATCH: &str = "*** Begin Patch\n*** Delete File: a\n*** End Patch\n";

fn argv(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| (*a).to_owned()).collect()
}

fn extracted(workdir: Option<&str>) -> Option<ExtractedPatch> {
    Some(ExtractedPatch {
        patch: PATCH.to_owned(),
        workdir: workdir.map(str::to_owned),
    })
}

#[test]
fn direct_invocation_passes_the_argument_through() {
    assert_eq!(
        extract_patch_from_argv(&argv(&["apply_patch", PATCH])),
        extracted(None)
    );
    assert_eq!(
        extract_patch_from_argv(&argv(&["applypatch", PATCH])),
        extracted(None)
    );
}

#[test]
fn shell_heredoc_with_any_quoting_and_delimiter() {
    for (shell, flag) in [
        ("bash", "-lc"),
        ("bash", "-c"),
        ("sh", "-c"),
        ("/bin/bash", "-lc"),
    ] {
        for (opener, word) in [
            ("<<'EOF'", "EOF"),
            ("<<EOF", "EOF"),
            ("<< \"PATCH\"", "PATCH"),
        ] {
            let script = format!("apply_patch {opener}\n{PATCH}{word}\n");
            let got = extract_patch_from_argv(&argv(&[shell, flag, &script]));
            assert_eq!(got, extracted(None), "{shell} {flag} {opener}");
        }
    }
}

#[test]
fn terminator_may_lack_a_trailing_newline() {
    let script = format!("apply_patch <<'EOF'\n{PATCH}EOF");
    assert_eq!(
        extract_patch_from_argv(&argv(&["bash", "-lc", &script])),
        extracted(None)
    );
}

#[test]
fn leading_cd_becomes_the_workdir() {
    for (prefix, dir) in [
        ("cd sub/dir && ", "sub/dir"),
        ("cd '/tmp/my dir' && ", "/tmp/my dir"),
        ("cd \"x\"&& ", "x"),
    ] {
        let script = format!("{prefix}apply_patch <<'EOF'\n{PATCH}EOF\n");
        assert_eq!(
            extract_patch_from_argv(&argv(&["bash", "-lc", &script])),
            extracted(Some(dir)),
            "{prefix}"
        );
    }
}

#[test]
fn other_commands_are_not_patches() {
    let heredoc = format!("apply_patch <<'EOF'\n{PATCH}EOF\n");
    let rejected: Vec<Vec<String>> = vec![
        argv(&["apply_patch", "foo", "bar"]),
        argv(&["apply_patch"]),
        argv(&["echo", "apply_patch"]),
        argv(&["python", "-c", &heredoc]),
        argv(&["bash", "-x", &heredoc]),
        argv(&["bash", "-lc", &format!("echo hi\n{heredoc}")]),
        argv(&["bash", "-lc", &format!("{heredoc}rm -rf x\n")]),
        argv(&[
            "bash",
            "-lc",
            &format!("apply_patch <<'EOF' && echo done\n{PATCH}EOF\n"),
        ]),
        argv(&["bash", "-lc", &format!("apply_patch <<'EOF'\n{PATCH}")]),
        argv(&["bash", "-lc", &format!("cd $HOME && {heredoc}")]),
        argv(&["bash", "-lc", &format!("cd a; {heredoc}")]),
        argv(&["bash", "-lc", "apply_patch"]),
        vec![],
    ];
    for args in rejected {
        assert_eq!(extract_patch_from_argv(&args), None, "{args:?}");
    }
}
