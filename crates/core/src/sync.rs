//! The engine's one way to take a `std::sync::Mutex`.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, using it even if a panic poisoned it: every lock in the engine guards
/// state that a single insert, remove or replace keeps consistent, so a panicking holder
/// cannot leave it half-changed.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
