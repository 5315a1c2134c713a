//! Files and directories beneath a root directory, reached without following symlinks.
//!
//! A path that was checked ("this lies inside the workspace") can be redirected before it is
//! written: a process that swaps a directory on the path for a symlink between the check and
//! the write sends the write wherever the link points. Here every path is resolved from an
//! open root directory, one plain name at a time, and a symlink anywhere on the way — or as
//! the final component — makes the open fail (`ELOOP`) instead of leading elsewhere.
//!
//! On Linux ≥ 5.6 a path is resolved by one `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`;
//! where that call is missing (`ENOSYS`), refused by a seccomp filter (`EPERM`) or asks to be
//! retried (`EAGAIN`), the components are walked one `openat(O_NOFOLLOW)` at a time, with the
//! same outcome.
//!
//! ```
//! # fn main() -> std::io::Result<()> {
//! use std::ffi::OsStr;
//! use std::io::Write;
//! use deputy_apply_patch::beneath::{FileOpen, Root};
//!
//! let dir = tempfile::tempdir()?;
//! let root = Root::open(&dir.path().canonicalize()?)?;
//! let src = root.create_dir_all("src".as_ref(), |_, _| {})?;
//! src.open_file(OsStr::new("lib.rs"), FileOpen::CreateNew)?.write_all(b"// new\n")?;
//! assert!(root.open_dir("../etc".as_ref()).is_err());
//! # Ok(())
//! # }
//! ```

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::{Mode, SFlag};
use nix::unistd::UnlinkatFlags;

/// A directory that paths are resolved beneath; its own path holds no symlinks.
#[derive(Debug)]
pub struct Root {
    dir: Dir,
    path: PathBuf,
}

impl Root {
    /// Opens the directory at `path`, which must be absolute, without `.` or `..`, and
    /// free of symlinks (canonicalize it when you check it; a symlink there later fails).
    pub fn open(path: &Path) -> io::Result<Self> {
        let Ok(relative) = path.strip_prefix("/") else {
            return Err(invalid("a root directory must be an absolute path"));
        };
        let slash = Dir::from(nix::fcntl::open(
            "/",
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?);
        let dir = open_dir_beneath(&slash, &plain_relative(relative)?)?;
        Ok(Root {
            dir,
            path: path.to_path_buf(),
        })
    }

    /// The path the root was opened at.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the directory at `relative` (plain names only; empty is the root itself).
    pub fn open_dir(&self, relative: &Path) -> io::Result<Dir> {
        let relative = plain_relative(relative)?;
        let dir = open_dir_beneath(&self.dir, &relative)?;
        self.check_still_beneath(&dir)?;
        Ok(dir)
    }

    /// Opens the directory at `relative`, first creating each missing directory on the way
    /// (mode 0777 less the umask). `on_created(parent, made)` is told about each one made, in
    /// order — the directory it was made in and its path beneath the root — so that the
    /// caller can remove them again.
    pub fn create_dir_all(
        &self,
        relative: &Path,
        mut on_created: impl FnMut(&Dir, &Path),
    ) -> io::Result<Dir> {
        let relative = plain_relative(relative)?;
        match open_dir_beneath(&self.dir, &relative) {
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            other => {
                let dir = other?;
                self.check_still_beneath(&dir)?;
                return Ok(dir);
            }
        }
        let mut dir = self.dir.clone();
        let mut reached = PathBuf::new();
        for name in relative.iter() {
            reached.push(name);
            dir = match dir.open_dir(name) {
                Err(err) if err.kind() == io::ErrorKind::NotFound => {
                    match dir.create_dir(name) {
                        Ok(()) => on_created(&dir, &reached),
                        // Someone else made it meanwhile: use it, but it is not ours to remove.
                        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
                        Err(err) => return Err(err),
                    }
                    dir.open_dir(name)?
                }
                other => other?,
            };
        }
        self.check_still_beneath(&dir)?;
        Ok(dir)
    }

    /// Fails with `EXDEV` when `dir` is no longer beneath the root's path.
    ///
    /// The open itself never leaves the root, but an opened directory can afterwards be
    /// renamed elsewhere by a process allowed to write there; this check narrows that window
    /// to the write itself. Where `/proc` is not mounted it is skipped.
    fn check_still_beneath(&self, dir: &Dir) -> io::Result<()> {
        let link = format!("/proc/self/fd/{}", dir.fd.as_raw_fd());
        let Ok(now) = nix::fcntl::readlink(link.as_str()) else {
            return Ok(());
        };
        if Path::new(&now).starts_with(&self.path) {
            Ok(())
        } else {
            Err(io::Error::from(Errno::EXDEV))
        }
    }
}

/// An open directory reached without symlinks; its entries are named by one plain name.
///
/// Cloning shares the descriptor. The handle keeps referring to the same directory even if
/// it is renamed, which is what lets a caller undo its changes in the place it made them.
#[derive(Debug, Clone)]
pub struct Dir {
    fd: Arc<OwnedFd>,
}

impl From<OwnedFd> for Dir {
    fn from(fd: OwnedFd) -> Self {
        Dir { fd: Arc::new(fd) }
    }
}

impl AsFd for Dir {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// How [`Dir::open_file`] opens a file; every mode refuses a symlink and a non-regular file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileOpen {
    /// Read an existing file.
    Read,
    /// Read and write an existing file.
    ReadWrite,
    /// Create a file that must not exist yet (mode 0666 less the umask), for reading and writing.
    CreateNew,
    /// Read and write the file, creating it if it does not exist.
    ReadWriteOrCreate,
}

impl Dir {
    /// Opens the subdirectory `name`; a symlink there fails with `ELOOP`.
    pub fn open_dir(&self, name: &OsStr) -> io::Result<Dir> {
        let name = plain_name(name)?;
        // O_PATH|O_NOFOLLOW opens a symlink as itself, so the type check below tells a
        // symlink (ELOOP, as openat2 reports it) from any other non-directory (ENOTDIR).
        let fd = nix::fcntl::openat(
            self,
            name,
            OFlag::O_PATH | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        match file_type(&fd)? {
            SFlag::S_IFDIR => Ok(Dir::from(fd)),
            SFlag::S_IFLNK => Err(io::Error::from(Errno::ELOOP)),
            _ => Err(io::Error::from(Errno::ENOTDIR)),
        }
    }

    /// Opens the regular file `name` as `how` says; a symlink there fails with `ELOOP`,
    /// anything but a regular file with `InvalidInput`.
    pub fn open_file(&self, name: &OsStr, how: FileOpen) -> io::Result<File> {
        let name = plain_name(name)?;
        // O_NONBLOCK: opening a FIFO planted under the name must not hang the caller;
        // it has no effect on the regular files that are accepted below.
        let always = OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NOCTTY | OFlag::O_NONBLOCK;
        let flags = match how {
            FileOpen::Read => OFlag::O_RDONLY,
            FileOpen::ReadWrite => OFlag::O_RDWR,
            FileOpen::CreateNew => OFlag::O_RDWR | OFlag::O_CREAT | OFlag::O_EXCL,
            FileOpen::ReadWriteOrCreate => OFlag::O_RDWR | OFlag::O_CREAT,
        };
        let mode = Mode::from_bits_truncate(0o666);
        let fd = nix::fcntl::openat(self, name, flags | always, mode)?;
        if file_type(&fd)? != SFlag::S_IFREG {
            return Err(invalid("not a regular file"));
        }
        Ok(File::from(fd))
    }

    /// Creates the directory `name` (mode 0777 less the umask).
    pub fn create_dir(&self, name: &OsStr) -> io::Result<()> {
        let name = plain_name(name)?;
        Ok(nix::sys::stat::mkdirat(
            self,
            name,
            Mode::from_bits_truncate(0o777),
        )?)
    }

    /// Removes the entry `name`, which must not be a directory (a symlink itself is removed).
    pub fn remove_file(&self, name: &OsStr) -> io::Result<()> {
        let name = plain_name(name)?;
        Ok(nix::unistd::unlinkat(
            self,
            name,
            UnlinkatFlags::NoRemoveDir,
        )?)
    }

    /// Removes the empty directory `name`.
    pub fn remove_dir(&self, name: &OsStr) -> io::Result<()> {
        let name = plain_name(name)?;
        Ok(nix::unistd::unlinkat(self, name, UnlinkatFlags::RemoveDir)?)
    }

    /// Renames the entry `from` to `to` in this directory, replacing what `to` names
    /// (atomically); neither name is followed if it is a symlink.
    pub fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        let (from, to) = (plain_name(from)?, plain_name(to)?);
        Ok(nix::fcntl::renameat(self, from, self, to)?)
    }

    /// Makes `link` a new name, in this directory, of the entry `name` (not followed if it
    /// is a symlink); `link` must not exist.
    pub fn hard_link(&self, name: &OsStr, link: &OsStr) -> io::Result<()> {
        let (name, link) = (plain_name(name)?, plain_name(link)?);
        Ok(nix::unistd::linkat(
            self,
            name,
            self,
            link,
            nix::fcntl::AtFlags::empty(),
        )?)
    }

    /// The identity of the entry `name` (not followed if it is a symlink), or `None` when
    /// there is none.
    pub fn entry_id(&self, name: &OsStr) -> io::Result<Option<FileId>> {
        let name = plain_name(name)?;
        match nix::sys::stat::fstatat(self, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Some(FileId::of(&stat))),
            Err(Errno::ENOENT) => Ok(None),
            Err(errno) => Err(errno.into()),
        }
    }

    /// The directory's identity.
    pub fn id(&self) -> io::Result<FileId> {
        Ok(FileId::of(&nix::sys::stat::fstat(self)?))
    }

    /// Flushes the directory's entries (names made, renamed or removed) to the disk.
    pub fn sync(&self) -> io::Result<()> {
        // The handle is O_PATH, which cannot be synced: open the directory itself.
        let fd = nix::fcntl::openat(
            self,
            ".",
            OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )?;
        Ok(nix::unistd::fsync(&fd)?)
    }
}

/// Which file an entry is: its device and inode, as `stat` reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileId {
    /// The device.
    pub dev: u64,
    /// The inode.
    pub ino: u64,
}

impl FileId {
    /// The identity `stat` describes.
    pub fn of(stat: &nix::sys::stat::FileStat) -> Self {
        FileId {
            dev: stat.st_dev,
            ino: stat.st_ino,
        }
    }

    /// The identity of an open file.
    pub fn of_file(file: &File) -> io::Result<Self> {
        Ok(FileId::of(&nix::sys::stat::fstat(file)?))
    }
}

/// Splits `relative` into its parent directory and final name; both plain names only.
pub fn split_relative(relative: &Path) -> io::Result<(PathBuf, &OsStr)> {
    let mut parent = plain_relative(relative)?;
    // Every component is a plain name now, so the last one is the file's.
    let Some(Component::Normal(name)) = relative.components().next_back() else {
        return Err(invalid("a file path needs a final name"));
    };
    parent.pop();
    Ok((parent, name))
}

/// Set once openat2 has answered ENOSYS: the walk is used from then on.
static OPENAT2_MISSING: AtomicBool = AtomicBool::new(false);

#[cfg(test)]
thread_local! {
    /// Tests set this to exercise the walk used where openat2 is missing.
    pub(crate) static FORCE_WALK: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// How often this thread resolved a path by the walk, so tests can see which way ran.
    pub(crate) static WALKS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn openat2_usable() -> bool {
    #[cfg(test)]
    if FORCE_WALK.get() {
        return false;
    }
    !OPENAT2_MISSING.load(Ordering::Relaxed)
}

/// Opens the directory `relative` (already checked to be plain names) beneath `base`.
fn open_dir_beneath(base: &Dir, relative: &Path) -> io::Result<Dir> {
    if relative.as_os_str().is_empty() {
        return Ok(base.clone());
    }
    if openat2_usable() {
        let how = OpenHow::new()
            .flags(OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC)
            .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_SYMLINKS);
        match nix::fcntl::openat2(base, relative, how) {
            Ok(fd) => return Ok(Dir::from(fd)),
            Err(Errno::ENOSYS) => OPENAT2_MISSING.store(true, Ordering::Relaxed),
            // EPERM: a seccomp filter that predates openat2 may refuse it so. EAGAIN: the
            // kernel could not rule out a concurrent rename. The walk is as strict for both.
            Err(Errno::EPERM | Errno::EAGAIN) => {}
            Err(errno) => return Err(errno.into()),
        }
    }
    #[cfg(test)]
    WALKS.set(WALKS.get() + 1);
    let mut dir = base.clone();
    for name in relative.iter() {
        dir = dir.open_dir(name)?;
    }
    Ok(dir)
}

/// `relative` rebuilt from its components, refusing anything but plain names
/// (`..`, `.`, a root or a prefix), so that nothing can climb out of the base.
fn plain_relative(relative: &Path) -> io::Result<PathBuf> {
    let mut plain = PathBuf::new();
    for component in relative.components() {
        match component {
            Component::Normal(name) => plain.push(plain_name(name)?),
            _ => return Err(invalid("only plain names may follow a root directory")),
        }
    }
    Ok(plain)
}

/// `name` if it is one plain path component: not empty, `.` or `..`, without `/` or NUL.
fn plain_name(name: &OsStr) -> io::Result<&OsStr> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || name == "." || name == ".." || bytes.contains(&b'/') {
        return Err(invalid(
            "a name beneath a root must be one plain path component",
        ));
    }
    if bytes.contains(&0) {
        return Err(invalid("a name beneath a root must not contain NUL"));
    }
    Ok(name)
}

fn file_type(fd: &OwnedFd) -> io::Result<SFlag> {
    let stat = nix::sys::stat::fstat(fd)?;
    Ok(SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT)
}

fn invalid(message: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

#[cfg(test)]
mod tests;
