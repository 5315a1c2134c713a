//! Making a rollout's directory entry durable, shared between the writers whose files are in
//! one directory.
//!
//! A file created (or renamed) in a directory survives a power cut only once the directory
//! itself has been synced; every writer needs that once, before its first turn ends. Sessions
//! of one day share a directory, and a thousand starting together would each sync it: one
//! sync that starts after a file was in the directory covers that file, so a writer asks with
//! a ticket taken once its file exists, and any sync started after the ticket was issued
//! serves it — the one in flight when it asks (it waits for the next one), or its own.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// The syncs of one directory.
#[derive(Default)]
struct Directory {
    /// The next ticket.
    next: AtomicU64,
    /// Every ticket below this is covered by a sync that has completed.
    covered: AtomicU64,
    /// Held by the sync in flight (one at a time).
    syncing: tokio::sync::Mutex<()>,
}

/// The directories seen so far (one per day of sessions, each a few words).
static DIRECTORIES: Mutex<BTreeMap<PathBuf, Arc<Directory>>> = Mutex::new(BTreeMap::new());

fn directory(dir: &Path) -> Arc<Directory> {
    let mut dirs = DIRECTORIES.lock().unwrap_or_else(PoisonError::into_inner);
    Arc::clone(dirs.entry(dir.to_path_buf()).or_default())
}

/// Returns once `dir` has been synced after this call began: the entries it held then are on
/// disk. `sync` syncs it (on a blocking thread); it runs only when no sync that started after
/// this call has completed, and never twice at once for one directory. A failed sync is
/// reported to its caller alone; the callers waiting on it then sync themselves.
pub(super) async fn sync_directory<F>(dir: &Path, sync: impl FnOnce() -> F) -> io::Result<()>
where
    F: Future<Output = io::Result<()>>,
{
    let directory = directory(dir);
    let ticket = directory.next.fetch_add(1, Ordering::SeqCst);
    if directory.covered.load(Ordering::SeqCst) > ticket {
        return Ok(());
    }
    let _turn = directory.syncing.lock().await;
    if directory.covered.load(Ordering::SeqCst) > ticket {
        return Ok(()); // Served by the sync that held the lock while this one waited.
    }
    // Every ticket issued so far belongs to a file already in the directory.
    let covers = directory.next.load(Ordering::SeqCst);
    sync().await?;
    directory.covered.fetch_max(covers, Ordering::SeqCst);
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use super::*;

    /// A sync that counts itself, then waits for a permit of `gate`.
    async fn gated(count: Arc<AtomicUsize>, gate: Arc<tokio::sync::Semaphore>) -> io::Result<()> {
        count.fetch_add(1, Ordering::SeqCst);
        gate.acquire().await.expect("gate open").forget();
        Ok(())
    }

    /// Lets the other tasks run until `done`; panics rather than hang when they never get
    /// there (every step here takes a few polls).
    async fn until(done: impl Fn() -> bool) {
        for _ in 0..10_000 {
            if done() {
                return;
            }
            tokio::task::yield_now().await;
        }
        panic!("the callers never got there");
    }

    #[tokio::test]
    async fn callers_waiting_on_a_sync_share_the_next_one_and_later_callers_sync_again() {
        let dir = Path::new("/deputy-test/dir-sync/shared");
        let count = Arc::new(AtomicUsize::new(0));
        let gate = Arc::new(tokio::sync::Semaphore::new(0));
        let start = |count: &Arc<AtomicUsize>| {
            let (count, gate) = (Arc::clone(count), Arc::clone(&gate));
            tokio::spawn(sync_directory(dir, move || gated(count, gate)))
        };
        // The first caller's sync is in flight when three more ask: it started before they
        // did, so it cannot serve them; one sync after it serves all three.
        let first = start(&count);
        until(|| count.load(Ordering::SeqCst) == 1).await;
        let waiting: Vec<_> = (0..3).map(|_| start(&count)).collect();
        until(|| directory(dir).next.load(Ordering::SeqCst) == 4).await;
        gate.add_permits(1);
        until(|| count.load(Ordering::SeqCst) == 2).await;
        // Enough for one sync per caller, so that callers failing to share one end too.
        gate.add_permits(3);
        first.await.expect("joined").expect("first sync");
        for caller in waiting {
            caller.await.expect("joined").expect("shared sync");
        }
        assert_eq!(
            count.load(Ordering::SeqCst),
            2,
            "the waiting callers shared one sync"
        );

        // Asking afterwards syncs again (with a permit left over): the file may be newer
        // than every sync so far.
        start(&count).await.expect("joined").expect("later sync");
        assert_eq!(count.load(Ordering::SeqCst), 3);
    }

    #[tokio::test]
    async fn a_failed_sync_is_its_callers_alone_and_the_next_caller_syncs_itself() {
        let dir = Path::new("/deputy-test/dir-sync/failing");
        let failed = sync_directory(dir, || async { Err(io::Error::other("disk gone")) }).await;
        assert_eq!(failed.expect_err("reported").to_string(), "disk gone");
        let ran = AtomicUsize::new(0);
        sync_directory(dir, || async {
            ran.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
        .await
        .expect("second sync");
        assert_eq!(ran.load(Ordering::SeqCst), 1, "the failure covered nothing");
    }

    #[tokio::test]
    async fn directories_are_synced_apart() {
        let ran = AtomicUsize::new(0);
        for dir in ["/deputy-test/dir-sync/a", "/deputy-test/dir-sync/b"] {
            sync_directory(Path::new(dir), || async {
                ran.fetch_add(1, Ordering::SeqCst);
                Ok(())
            })
            .await
            .expect("sync");
        }
        assert_eq!(ran.load(Ordering::SeqCst), 2);
    }
}
