use std::os::unix::fs::symlink;
use std::sync::mpsc;

use deputy_test_support::random_input::within;

use super::*;

/// A repository root (canonical, as callers pass it) with an `outside` directory beside it.
struct Scene {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    outside: PathBuf,
}

fn scene() -> Scene {
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = tmp.path().canonicalize().expect("canonical");
    let root = base.join("repo");
    let outside = base.join("home");
    std::fs::create_dir_all(root.join("sub")).expect("dirs");
    std::fs::create_dir_all(&outside).expect("dirs");
    std::fs::write(outside.join("id_rsa"), "SECRET").expect("write");
    Scene {
        _tmp: tmp,
        root,
        outside,
    }
}

fn mkfifo(path: &Path) {
    nix::unistd::mkfifo(path, Mode::from_bits_truncate(0o600)).expect("mkfifo");
}

/// A FIFO opened the usual way would block the read forever: a minute is a hang.
fn without_hanging<T: Send + 'static>(read: impl FnOnce() -> T + Send + 'static) -> T {
    within(Duration::from_secs(60), read)
}

fn text(read: Result<Option<Capped>, UnreadableFile>) -> String {
    let capped = read.expect("readable").expect("present");
    String::from_utf8(capped.bytes).expect("utf-8")
}

#[test]
fn a_regular_file_is_read_up_to_the_cap() {
    let s = scene();
    std::fs::write(s.root.join("AGENTS.md"), "0123456789").expect("write");
    let whole = read_beneath(&s.root, Path::new("AGENTS.md"), 10).expect("read");
    assert_eq!(
        whole,
        Some(Capped {
            bytes: b"0123456789".to_vec(),
            truncated: false
        })
    );
    let cut = read_beneath(&s.root, Path::new("AGENTS.md"), 4).expect("read");
    assert_eq!(
        cut,
        Some(Capped {
            bytes: b"0123".to_vec(),
            truncated: true
        })
    );
    assert!(matches!(
        read_beneath(&s.root, Path::new("sub/AGENTS.md"), 4),
        Ok(None)
    ));
}

#[test]
fn a_fifo_or_a_directory_is_refused_at_once() {
    let s = scene();
    mkfifo(&s.root.join("AGENTS.md"));
    std::fs::create_dir(s.root.join("sub/AGENTS.md")).expect("mkdir");
    let root = s.root.clone();
    let (fifo, fifo_again, dir) = without_hanging(move || {
        (
            read_beneath(&root, Path::new("AGENTS.md"), 100),
            read_file(&root.join("AGENTS.md"), true, 100),
            read_beneath(&root, Path::new("sub/AGENTS.md"), 100),
        )
    });
    assert!(
        matches!(fifo, Err(UnreadableFile::NotRegular("a FIFO"))),
        "{fifo:?}"
    );
    assert!(
        matches!(fifo_again, Err(UnreadableFile::NotRegular("a FIFO"))),
        "{fifo_again:?}"
    );
    assert!(
        matches!(dir, Err(UnreadableFile::NotRegular("a directory"))),
        "{dir:?}"
    );
}

#[test]
fn links_are_followed_only_while_they_stay_beneath_the_root() {
    let s = scene();
    std::fs::write(s.root.join("CLAUDE.md"), "shared rules").expect("write");
    symlink("../CLAUDE.md", s.root.join("sub/AGENTS.md")).expect("symlink");
    symlink(s.outside.join("id_rsa"), s.root.join("AGENTS.md")).expect("symlink");
    symlink("../../home/id_rsa", s.root.join("sub/relative.md")).expect("symlink");
    mkfifo(&s.root.join("pipe"));
    symlink("pipe", s.root.join("to_pipe.md")).expect("symlink");

    assert_eq!(
        text(read_beneath(&s.root, Path::new("sub/AGENTS.md"), 100)),
        "shared rules"
    );
    for escaping in ["AGENTS.md", "sub/relative.md"] {
        let read = read_beneath(&s.root, Path::new(escaping), 100);
        assert!(
            matches!(&read, Err(UnreadableFile::LeavesRoot(root)) if *root == s.root),
            "{escaping}: {read:?}"
        );
    }
    let root = s.root.clone();
    let pipe = without_hanging(move || read_beneath(&root, Path::new("to_pipe.md"), 100));
    assert!(
        matches!(pipe, Err(UnreadableFile::NotRegular("a FIFO"))),
        "{pipe:?}"
    );
}

#[test]
fn without_openat2_no_link_is_followed_and_the_file_must_be_beneath() {
    let s = scene();
    std::fs::write(s.root.join("CLAUDE.md"), "shared rules").expect("write");
    symlink("CLAUDE.md", s.root.join("AGENTS.md")).expect("symlink");
    // A directory on the way that is a link out of the root.
    symlink(&s.outside, s.root.join("sub/away")).expect("symlink");
    std::fs::write(s.outside.join("AGENTS.md"), "SECRET").expect("write");

    assert_eq!(
        text(read_beneath_without_openat2(
            &s.root,
            Path::new("CLAUDE.md"),
            100
        )),
        "shared rules"
    );
    let link = read_beneath_without_openat2(&s.root, Path::new("AGENTS.md"), 100);
    assert!(matches!(link, Err(UnreadableFile::Link)), "{link:?}");
    let away = read_beneath_without_openat2(&s.root, Path::new("sub/away/AGENTS.md"), 100);
    assert!(
        matches!(away, Err(UnreadableFile::LeavesRoot(_))),
        "{away:?}"
    );
}

#[test]
fn a_file_read_without_following_links_refuses_one() {
    let s = scene();
    symlink(s.outside.join("id_rsa"), s.root.join("a.txt")).expect("symlink");
    let refused = read_file(&s.root.join("a.txt"), false, 100);
    assert!(matches!(refused, Err(UnreadableFile::Link)), "{refused:?}");
    assert_eq!(text(read_file(&s.root.join("a.txt"), true, 100)), "SECRET");
}

#[tokio::test]
async fn a_read_that_takes_too_long_is_given_up_without_blocking_the_runtime() {
    let (release, wait) = mpsc::channel::<()>();
    let slow = off_runtime(Duration::from_millis(50), move || {
        let _ = wait.recv_timeout(Duration::from_secs(60));
        "late"
    });
    assert_eq!(slow.await, None);
    let _ = release.send(());
    assert_eq!(
        off_runtime(Duration::from_secs(60), || "quick").await,
        Some("quick")
    );
}
