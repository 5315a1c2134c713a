//! Arbitrary input never panics or hangs: not the parser, the planner, the writer, nor
//! the argv extractor.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a failed step is a failed test"
)]

use std::path::{Component, Path};

use deputy_apply_patch::{
    Hunk, Patch, PlannedChange, WriteTarget, WriteTargets, apply_planned, extract_patch_from_argv,
    parse_patch, plan_patch,
};
use proptest::prelude::*;

const VALID: &str = "*** Begin Patch
*** Add File: dir/new.txt
+hello
+
*** Update File: code.py
@@ class A:
     def f(self):
-        return 1
+        return 2
@@
 tail
+more
*** End of File
*** Update File: old.txt
*** Move to: moved/new_name.txt
@@
-x
+y
*** Delete File: gone.txt
*** End Patch
";

/// Lines that steer mutations towards the parser's interesting states.
const SPICE: &[&str] = &[
    "*** Begin Patch",
    "*** End Patch",
    "*** Add File: a",
    "*** Delete File: gone.txt",
    "*** Update File: code.py",
    "*** Move to: b",
    "*** End of File",
    "@@",
    "@@ class A:",
    "@@ -1,2 +1,2 @@",
    "<<'EOF'",
    "EOF",
    "",
    "+",
    "-",
    " ",
    "\r",
];

#[derive(Debug, Clone)]
enum Mutation {
    Delete(usize),
    Duplicate(usize),
    Insert(usize, String),
    Swap(usize, usize),
    Truncate(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let spice = prop::sample::select(SPICE).prop_map(str::to_owned);
    let line = prop_oneof![spice, ".{0,12}"];
    prop_oneof![
        any::<usize>().prop_map(Mutation::Delete),
        any::<usize>().prop_map(Mutation::Duplicate),
        (any::<usize>(), line).prop_map(|(at, l)| Mutation::Insert(at, l)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::Swap(a, b)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::Truncate(a, b)),
    ]
}

fn mutate(text: &str, mutations: &[Mutation]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    for m in mutations {
        let n = lines.len().max(1);
        match m {
            Mutation::Delete(at) if !lines.is_empty() => {
                lines.remove(at % n);
            }
            Mutation::Duplicate(at) if !lines.is_empty() => {
                let line = lines[at % n].clone();
                lines.insert(at % n, line);
            }
            Mutation::Insert(at, line) => lines.insert(at % (lines.len() + 1), line.clone()),
            Mutation::Swap(a, b) if !lines.is_empty() => lines.swap(a % n, b % n),
            Mutation::Truncate(at, len) if !lines.is_empty() => {
                let line = &mut lines[at % n];
                let cut = (0..=len % (line.len() + 1))
                    .rev()
                    .find(|&i| line.is_char_boundary(i));
                line.truncate(cut.unwrap_or(0));
            }
            _ => {}
        }
    }
    lines.join("\n")
}

/// True when every path stays inside the directory it is resolved against,
/// so applying a fuzzed patch can only touch the test's own tempdir.
fn confined(patch: &Patch) -> bool {
    let inside = |p: &Path| {
        p.components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
    };
    patch.hunks.iter().all(|hunk| match hunk {
        Hunk::Update {
            path, move_path, ..
        } => inside(path) && move_path.as_deref().is_none_or(inside),
        other => inside(other.path()),
    })
}

fn exercise(text: &str) {
    let Ok(patch) = parse_patch(text) else {
        return;
    };
    if !confined(&patch) {
        return;
    }
    let dir = seeded_dir();
    if let Ok(changes) = plan_patch(&patch, dir.path()) {
        let _ = apply_planned(&changes, &beneath_the_dir(&changes, dir.path()));
    }
}

/// Every path the plan touches, targeted beneath `dir` as a confining caller would.
fn beneath_the_dir(changes: &[PlannedChange], dir: &Path) -> WriteTargets {
    let root = dir.canonicalize().expect("canonical tempdir");
    let mut targets = WriteTargets::default();
    for path in changes.iter().flat_map(PlannedChange::paths) {
        let relative = path
            .strip_prefix(dir)
            .expect("confined patch")
            .to_path_buf();
        if let Ok(target) = WriteTarget::new(root.clone(), relative) {
            targets.insert(path.to_path_buf(), target);
        }
    }
    targets
}

/// A directory holding the files `VALID` expects.
fn seeded_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, content) in [
        (
            "code.py",
            "class A:\n    def f(self):\n        return 1\ntail\n",
        ),
        ("old.txt", "x\n"),
        ("gone.txt", "bye\n"),
    ] {
        std::fs::write(dir.path().join(name), content).expect("seed file");
    }
    dir
}

#[test]
fn the_unmutated_patch_applies() {
    let dir = seeded_dir();
    deputy_apply_patch::apply_patch(VALID, dir.path()).unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("code.py")).unwrap(),
        "class A:\n    def f(self):\n        return 2\ntail\nmore\n"
    );
}

/// 256 cases in CI (about a second); `PROPTEST_CASES=100000 cargo test -p deputy-apply-patch
/// --test no_panic` runs more.
fn cases() -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = 256;
    }
    config
}

/// Runs `work` on a thread of its own and fails the test if it takes a minute: whatever the
/// input, parsing and applying must end.
fn without_hanging(work: impl FnOnce() + Send + 'static) {
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        work();
        let _ = done.send(());
    });
    finished
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("parsing and applying the patch hung (or panicked)");
}

proptest! {
    #![proptest_config(cases())]

    #[test]
    fn arbitrary_text_never_panics(text in "[\\PC\\n\\r\\t]{0,400}") {
        without_hanging(move || {
            exercise(&text);
            let _ = extract_patch_from_argv(&["bash".to_owned(), "-lc".to_owned(), text.clone()]);
        });
    }

    #[test]
    fn mutated_valid_patches_never_panic(mutations in prop::collection::vec(mutation(), 0..6)) {
        let text = mutate(VALID, &mutations);
        without_hanging(move || {
            exercise(&text);
            exercise(&text.replace('\n', "\r\n"));
            let script = format!("cd d && apply_patch <<'EOF'\n{text}\nEOF\n");
            let _ = extract_patch_from_argv(&["bash".to_owned(), "-lc".to_owned(), script]);
        });
    }
}
