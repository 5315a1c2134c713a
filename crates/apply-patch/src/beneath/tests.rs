use std::ffi::OsStr;
use std::fs;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, symlink};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
use tempfile::TempDir;

use super::*;

/// A root directory (canonical) and, beside it, an outside directory holding `secret.txt`.
struct Scene {
    root: PathBuf,
    outside: PathBuf,
    _dirs: (TempDir, TempDir),
}

impl Scene {
    fn new() -> Self {
        let (root_dir, outside_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let root = root_dir.path().canonicalize().unwrap();
        let outside = outside_dir.path().canonicalize().unwrap();
        fs::write(outside.join("secret.txt"), "outside\n").unwrap();
        Scene {
            root,
            outside,
            _dirs: (root_dir, outside_dir),
        }
    }

    fn open(&self) -> Root {
        Root::open(&self.root).unwrap()
    }

    /// The outside directory's entries, to show nothing was created or removed there.
    fn outside_entries(&self) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(&self.outside)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn assert_outside_untouched(&self) {
        assert_eq!(self.outside_entries(), ["secret.txt"]);
        assert_eq!(
            fs::read_to_string(self.outside.join("secret.txt")).unwrap(),
            "outside\n"
        );
    }
}

/// Runs `check` resolving with openat2, then with the component walk, and checks that each
/// way really ran.
fn both_ways(check: impl Fn()) {
    for walk in [false, true] {
        FORCE_WALK.set(walk);
        let walks_before = WALKS.get();
        check();
        let walked = WALKS.get() > walks_before;
        FORCE_WALK.set(false);
        assert_eq!(walked, walk, "the walk ran: {walked}, forced: {walk}");
    }
}

fn errno(result: io::Result<impl std::fmt::Debug>) -> Errno {
    let err = result.expect_err("must fail");
    Errno::from_raw(
        err.raw_os_error()
            .unwrap_or_else(|| panic!("not an OS error: {err}")),
    )
}

fn kind(result: io::Result<impl std::fmt::Debug>) -> io::ErrorKind {
    result.expect_err("must fail").kind()
}

/// The (device, inode) of an open directory, to tell which directory a handle reached.
fn identity(dir: &Dir) -> (u64, u64) {
    let stat = nix::sys::stat::fstat(dir).unwrap();
    (stat.st_dev, stat.st_ino)
}

fn identity_of(path: &Path) -> (u64, u64) {
    let meta = fs::metadata(path).unwrap();
    (meta.dev(), meta.ino())
}

#[test]
fn nested_directories_open_beneath_the_root() {
    let scene = Scene::new();
    fs::create_dir_all(scene.root.join("a/b/c")).unwrap();
    let root = scene.open();
    both_ways(|| {
        let dir = root.open_dir(Path::new("a/b/c")).unwrap();
        assert_eq!(identity(&dir), identity_of(&scene.root.join("a/b/c")));
    });
    let itself = root.open_dir(Path::new("")).unwrap();
    assert_eq!(identity(&itself), identity_of(&scene.root));
}

#[test]
fn dot_dot_and_absolute_paths_are_refused() {
    let scene = Scene::new();
    fs::create_dir(scene.root.join("a")).unwrap();
    let root = scene.open();
    let outside = scene.outside.to_str().unwrap();
    for path in ["..", "a/..", "a/../..", "../escape", "/etc", outside, "./a"] {
        assert_eq!(
            kind(root.open_dir(Path::new(path))),
            io::ErrorKind::InvalidInput,
            "{path}"
        );
        assert_eq!(
            kind(root.create_dir_all(Path::new(&format!("{path}/made")), |_, _| {})),
            io::ErrorKind::InvalidInput,
            "{path}"
        );
        assert!(split_relative(Path::new(path)).is_err(), "{path}");
    }
    let dir = root.open_dir(Path::new("a")).unwrap();
    for name in ["..", ".", "", "b/c", "/etc"] {
        let name = OsStr::new(name);
        assert_eq!(kind(dir.open_dir(name)), io::ErrorKind::InvalidInput);
        assert_eq!(
            kind(dir.open_file(name, FileOpen::ReadWriteOrCreate)),
            io::ErrorKind::InvalidInput
        );
        assert_eq!(kind(dir.create_dir(name)), io::ErrorKind::InvalidInput);
        assert_eq!(kind(dir.remove_file(name)), io::ErrorKind::InvalidInput);
        assert_eq!(kind(dir.remove_dir(name)), io::ErrorKind::InvalidInput);
    }
    assert_eq!(
        kind(dir.open_file(OsStr::from_bytes(b"nul\0byte"), FileOpen::CreateNew)),
        io::ErrorKind::InvalidInput
    );
    assert!(!scene.root.parent().unwrap().join("escape").exists());
    assert!(!scene.root.parent().unwrap().join("made").exists());
}

#[test]
fn a_symlinked_directory_on_the_path_is_refused() {
    let scene = Scene::new();
    fs::create_dir(scene.root.join("real")).unwrap();
    symlink(&scene.outside, scene.root.join("link")).unwrap();
    // A relative link that stays inside the root is refused as well: no symlink is followed.
    symlink("real", scene.root.join("inner-link")).unwrap();
    let root = scene.open();
    both_ways(|| {
        for path in ["link", "link/sub", "real/../link", "inner-link"] {
            let result = root.open_dir(Path::new(path));
            if path.contains("..") {
                assert_eq!(kind(result), io::ErrorKind::InvalidInput, "{path}");
            } else {
                assert_eq!(errno(result), Errno::ELOOP, "{path}");
            }
        }
        assert_eq!(
            errno(root.create_dir_all(Path::new("link/new/deeper"), |_, _| {})),
            Errno::ELOOP
        );
    });
    let dir = root.open_dir(Path::new("")).unwrap();
    assert_eq!(errno(dir.open_dir(OsStr::new("link"))), Errno::ELOOP);
    scene.assert_outside_untouched();
}

#[test]
fn a_symlink_as_the_final_component_is_refused() {
    let scene = Scene::new();
    symlink(
        scene.outside.join("secret.txt"),
        scene.root.join("file-link"),
    )
    .unwrap();
    symlink(
        scene.outside.join("absent.txt"),
        scene.root.join("dangling"),
    )
    .unwrap();
    let dir = scene.open().open_dir(Path::new("")).unwrap();
    for how in [
        FileOpen::Read,
        FileOpen::ReadWrite,
        FileOpen::ReadWriteOrCreate,
    ] {
        assert_eq!(
            errno(dir.open_file(OsStr::new("file-link"), how)),
            Errno::ELOOP
        );
        assert_eq!(
            errno(dir.open_file(OsStr::new("dangling"), how)),
            Errno::ELOOP
        );
    }
    assert_eq!(
        errno(dir.open_file(OsStr::new("dangling"), FileOpen::CreateNew)),
        Errno::EEXIST
    );
    // Removing a link removes the link, never what it points to.
    dir.remove_file(OsStr::new("file-link")).unwrap();
    assert!(!scene.root.join("file-link").exists());
    scene.assert_outside_untouched();
}

#[test]
fn a_root_path_through_a_symlink_or_relative_is_refused() {
    let scene = Scene::new();
    fs::create_dir(scene.root.join("real")).unwrap();
    symlink(scene.root.join("real"), scene.root.join("link")).unwrap();
    both_ways(|| {
        assert_eq!(errno(Root::open(&scene.root.join("link"))), Errno::ELOOP);
    });
    assert_eq!(
        kind(Root::open(Path::new("relative"))),
        io::ErrorKind::InvalidInput
    );
    assert_eq!(
        kind(Root::open(&scene.root.join("real/../real"))),
        io::ErrorKind::InvalidInput
    );
    assert_eq!(
        errno(Root::open(&scene.outside.join("secret.txt"))),
        Errno::ENOTDIR
    );
}

#[test]
fn missing_parents_are_created_beneath_the_root_and_reported_in_order() {
    let scene = Scene::new();
    fs::create_dir(scene.root.join("a")).unwrap();
    let root = scene.open();
    both_ways(|| {
        let _ = fs::remove_dir_all(scene.root.join("a/b"));
        let mut made = Vec::new();
        let dir = root
            .create_dir_all(Path::new("a/b/c/d"), |parent, relative| {
                made.push((identity(parent), relative.to_path_buf()));
            })
            .unwrap();
        assert_eq!(identity(&dir), identity_of(&scene.root.join("a/b/c/d")));
        assert_eq!(
            made,
            [
                (identity_of(&scene.root.join("a")), PathBuf::from("a/b")),
                (identity_of(&scene.root.join("a/b")), PathBuf::from("a/b/c")),
                (
                    identity_of(&scene.root.join("a/b/c")),
                    PathBuf::from("a/b/c/d")
                ),
            ]
        );
        // Existing directories are opened, not reported.
        let mut again = 0;
        root.create_dir_all(Path::new("a/b/c/d"), |_, _| again += 1)
            .unwrap();
        assert_eq!(again, 0);
    });
}

#[test]
fn a_file_where_a_directory_is_needed_fails_with_enotdir() {
    let scene = Scene::new();
    fs::write(scene.root.join("blocker"), "a file\n").unwrap();
    let root = scene.open();
    both_ways(|| {
        assert_eq!(
            errno(root.open_dir(Path::new("blocker/sub"))),
            Errno::ENOTDIR
        );
        assert_eq!(
            errno(root.create_dir_all(Path::new("blocker/sub"), |_, _| {})),
            Errno::ENOTDIR
        );
    });
}

#[test]
fn files_open_read_write_and_remove_by_name() {
    let scene = Scene::new();
    let dir = scene
        .open()
        .create_dir_all(Path::new("d"), |_, _| {})
        .unwrap();
    let name = OsStr::from_bytes(b"caf\xe9-not-utf8.txt");
    dir.open_file(name, FileOpen::CreateNew)
        .unwrap()
        .write_all(b"first\n")
        .unwrap();
    assert_eq!(
        errno(dir.open_file(name, FileOpen::CreateNew)),
        Errno::EEXIST
    );
    let mut text = String::new();
    dir.open_file(name, FileOpen::Read)
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    assert_eq!(text, "first\n");
    dir.remove_file(name).unwrap();
    assert_eq!(
        kind(dir.open_file(name, FileOpen::ReadWrite)),
        io::ErrorKind::NotFound
    );
    dir.create_dir(OsStr::new("sub")).unwrap();
    dir.remove_dir(OsStr::new("sub")).unwrap();
    assert!(fs::read_dir(scene.root.join("d")).unwrap().next().is_none());
}

#[test]
fn a_fifo_or_directory_is_not_opened_as_a_file() {
    let scene = Scene::new();
    nix::unistd::mkfifo(&scene.root.join("fifo"), Mode::from_bits_truncate(0o600)).unwrap();
    fs::create_dir(scene.root.join("dir")).unwrap();
    let dir = scene.open().open_dir(Path::new("")).unwrap();
    // Read on a FIFO without a writer would block forever without O_NONBLOCK.
    for how in [FileOpen::Read, FileOpen::ReadWrite] {
        assert_eq!(
            kind(dir.open_file(OsStr::new("fifo"), how)),
            io::ErrorKind::InvalidInput
        );
    }
    assert_eq!(
        errno(dir.open_file(OsStr::new("dir"), FileOpen::ReadWrite)),
        Errno::EISDIR
    );
}

#[test]
fn split_relative_separates_the_parent_from_the_name() {
    assert_eq!(
        split_relative(Path::new("a/b/c.txt")).unwrap(),
        (PathBuf::from("a/b"), OsStr::new("c.txt"))
    );
    assert_eq!(
        split_relative(Path::new("c.txt")).unwrap(),
        (PathBuf::new(), OsStr::new("c.txt"))
    );
    assert!(split_relative(Path::new("")).is_err());
}

/// While another thread swaps a directory inside the root with a symlink to the outside,
/// every open either fails with ELOOP or reaches the real directory, and nothing is made
/// outside.
#[test]
fn a_directory_swapped_for_a_symlink_mid_resolution_never_leads_outside() {
    // At least this many opens, and more (up to the cap) until both outcomes were seen.
    const OPENS: usize = 400;
    const CAP: usize = 50_000;
    let scene = Scene::new();
    let (sub, swap) = (scene.root.join("sub"), scene.root.join("swap"));
    fs::create_dir_all(sub.join("inner")).unwrap();
    fs::create_dir(scene.outside.join("inner")).unwrap();
    symlink(&scene.outside, &swap).unwrap();
    let inner = identity_of(&sub.join("inner"));
    let root = scene.open();
    let stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Ordering::SeqCst) {
                renameat2(
                    AT_FDCWD,
                    &sub,
                    AT_FDCWD,
                    &swap,
                    RenameFlags::RENAME_EXCHANGE,
                )
                .unwrap();
            }
        });
        // Stops the swapping even if an assertion below fails, so the test cannot hang.
        let _stop = StopOnDrop(&stop);
        both_ways(|| {
            let (mut reached, mut refused) = (0, 0);
            for opens in 0..CAP {
                if opens >= OPENS && reached > 0 && refused > 0 {
                    break;
                }
                let made = root.create_dir_all(Path::new("sub/inner/made"), |_, _| {});
                match root.open_dir(Path::new("sub/inner")) {
                    Ok(dir) => {
                        assert_eq!(identity(&dir), inner, "reached another directory");
                        reached += 1;
                    }
                    Err(err) => {
                        assert_eq!(errno(Err::<(), _>(err)), Errno::ELOOP);
                        refused += 1;
                    }
                }
                if let Err(err) = made {
                    assert_eq!(errno(Err::<(), _>(err)), Errno::ELOOP);
                }
            }
            assert!(
                reached > 0 && refused > 0,
                "reached {reached}, refused {refused}"
            );
        });
    });
    assert_eq!(
        fs::read_dir(scene.outside.join("inner")).unwrap().count(),
        0,
        "nothing may be made outside"
    );
    assert_eq!(scene.outside_entries(), ["inner", "secret.txt"]);
}

struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}
