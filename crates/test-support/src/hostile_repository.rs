//! A git repository whose configuration makes git run programs, for the tests that prove a
//! review (or a "safe" git command) runs none of them outside the sandbox.
//!
//! Each program leaves a file named after itself in a directory outside the repository when
//! it runs, and passes its input through, so git still works if it does run.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The programs the configuration names, each with the setting that names it.
const PROGRAMS: &[&str] = &[
    "clean",
    "smudge",
    "textconv",
    "external-diff",
    "gpg",
    "fsmonitor",
];

/// The filter driver's name: an `=` in it defeats `git -c filter.NAME.clean=`.
const FILTER_DRIVER: &str = "evil=driver";

/// A repository at `root`: `main` with a commit of `tracked.txt`, then a signed commit of
/// `signed.txt`; `tracked.txt` modified and `untracked.txt` new in the worktree. Its
/// `.gitattributes` puts every file through the filter and diff drivers of [`PROGRAMS`],
/// and its config turns on `log.showSignature` with a `gpg.program`, `core.fsmonitor` and
/// `diff.external`.
#[derive(Debug)]
pub struct HostileRepository {
    /// The repository's top directory.
    pub root: PathBuf,
    /// The signed commit's id.
    pub signed_commit: String,
    /// Where the programs leave their files when they run.
    ran: PathBuf,
}

impl HostileRepository {
    /// Builds the repository in the existing directory `root`, with its programs and their
    /// marks in `outside` (a directory outside `root`).
    pub fn create(root: &Path, outside: &Path) -> Self {
        let programs = outside.join("programs");
        let ran = outside.join("ran");
        for dir in [&programs, &ran] {
            std::fs::create_dir_all(dir).expect("create the programs' directories");
        }
        let git = |args: &[&str]| git(root, args);
        git(&["init", "-q", "-b", "main"]);
        std::fs::write(root.join("tracked.txt"), "one\n").expect("write tracked.txt");
        std::fs::write(
            root.join(".gitattributes"),
            format!("* filter={FILTER_DRIVER} diff=evil\n"),
        )
        .expect("write .gitattributes");
        git(&["add", "."]);
        git(&["commit", "-q", "-m", "first"]);
        std::fs::write(root.join("signed.txt"), "signed\n").expect("write signed.txt");
        git(&["add", "signed.txt"]);
        let tree = git(&["write-tree"]);
        let parent = git(&["rev-parse", "HEAD"]);
        let commit = format!(
            "tree {tree}\nparent {parent}\nauthor T <t@example.com> 1700000000 +0000\n\
             committer T <t@example.com> 1700000000 +0000\n\
             gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----\n\
             \nsigned work\n"
        );
        let signed_commit = git_with_input(
            root,
            &["hash-object", "-t", "commit", "-w", "--stdin"],
            &commit,
        );
        git(&["update-ref", "HEAD", &signed_commit]);
        std::fs::write(root.join("tracked.txt"), "one\ntwo\n").expect("modify tracked.txt");
        std::fs::write(root.join("untracked.txt"), "new file\n").expect("write untracked.txt");

        let program = |name: &str, body: &str| {
            let path = programs.join(name);
            let mark = ran.join(name);
            std::fs::write(
                &path,
                format!("#!/bin/sh\necho ran >> '{}'\n{body}\n", mark.display()),
            )
            .expect("write a program");
            make_executable(&path);
            path.display().to_string()
        };
        let config = [
            (
                format!("filter.{FILTER_DRIVER}.clean"),
                program("clean", "cat"),
            ),
            (
                format!("filter.{FILTER_DRIVER}.smudge"),
                program("smudge", "cat"),
            ),
            (
                format!("filter.{FILTER_DRIVER}.required"),
                "true".to_string(),
            ),
            (
                "diff.evil.textconv".to_string(),
                program("textconv", "cat \"$1\""),
            ),
            ("diff.external".to_string(), program("external-diff", "")),
            ("gpg.program".to_string(), program("gpg", "")),
            ("log.showSignature".to_string(), "true".to_string()),
            ("core.fsmonitor".to_string(), program("fsmonitor", "")),
        ];
        for (key, value) in &config {
            git(&["config", key, value]);
        }
        Self {
            root: root.to_path_buf(),
            signed_commit,
            ran,
        }
    }

    /// The programs that have run so far.
    pub fn programs_that_ran(&self) -> Vec<String> {
        PROGRAMS
            .iter()
            .filter(|name| self.ran.join(name).exists())
            .map(|name| name.to_string())
            .collect()
    }

    /// Proves the setup: plain `git` here runs the programs (then forgets that they did).
    pub fn assert_git_runs_its_programs(&self) {
        git(&self.root, &["diff"]);
        git(&self.root, &["log", "-1"]);
        let ran = self.programs_that_ran();
        for expected in ["clean", "gpg", "fsmonitor", "external-diff"] {
            assert!(
                ran.iter().any(|name| name == expected),
                "{expected} did not run: {ran:?}"
            );
        }
        for name in PROGRAMS {
            let _ = std::fs::remove_file(self.ran.join(name));
        }
    }
}

/// Runs git in `dir` without the user's or the system's configuration and returns its
/// trimmed stdout; a failure fails the test.
fn git(dir: &Path, args: &[&str]) -> String {
    git_with_input(dir, args, "")
}

fn git_with_input(dir: &Path, args: &[&str], input: &str) -> String {
    use std::io::Write;
    let mut child = Command::new("git")
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args(["-c", "user.name=T", "-c", "user.email=t@example.com"])
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("git runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write git's input");
    let out = child.wait_with_output().expect("git ends");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .expect("make a program executable");
}
