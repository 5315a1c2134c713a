//! The engine's one way to take a `std::sync::Mutex`, and to run bounded work on the
//! blocking pool.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Semaphore;
use tokio::task::JoinError;

/// Locks `mutex`, using it even if a panic poisoned it: every lock in the engine guards
/// state that a single insert, remove or replace keeps consistent, so a panicking holder
/// cannot leave it half-changed.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Values made once per process and shared by key (instructions texts, tool schemas): a
/// short list, since each cache holds a handful of keys at most.
pub(crate) struct SharedByKey<K, V: ?Sized>(Mutex<Vec<(K, Arc<V>)>>);

impl<K: PartialEq, V: ?Sized> SharedByKey<K, V> {
    pub(crate) const fn new() -> Self {
        Self(Mutex::new(Vec::new()))
    }

    /// The value of `key`, made by `make` (under the lock, so once) the first time.
    pub(crate) fn get_or_make(&self, key: K, make: impl FnOnce(&K) -> Arc<V>) -> Arc<V> {
        let mut known = lock(&self.0);
        if let Some((_, value)) = known.iter().find(|(known, _)| *known == key) {
            return Arc::clone(value);
        }
        let value = make(&key);
        known.push((key, Arc::clone(&value)));
        value
    }
}

/// Runs `work` on tokio's blocking pool once one of `places` is free, holding it until the
/// work ends (even if the caller stops waiting). Work that every session does goes through
/// here: a thousand sessions at once would otherwise each get a thread (tokio starts up to
/// 512, each with a stack and an allocator arena), where a few finish the same work as soon.
pub(crate) async fn spawn_blocking_in<T: Send + 'static>(
    places: &'static Semaphore,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, JoinError> {
    // `places` is never closed, so a place is always granted.
    let place = places.acquire().await.ok();
    tokio::task::spawn_blocking(move || {
        let _place = place;
        work()
    })
    .await
}
