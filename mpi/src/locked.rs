//! The library's state behind one lock, and what the threads that act for
//! the program while it is elsewhere (the keep-alive thread, the stand-in
//! of [`crate::outside`]) need of it: below the universe that holds the
//! state, so that those threads do not import the universe.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use adi::Engine;

use crate::error::Result;

/// What a thread acting for the program needs of the locked state.
pub(crate) trait EngineHolder {
    /// The engine, or why there is none (finalized).
    fn engine(&mut self) -> Result<&mut Engine>;
    /// One keep-alive pass of the engine: `None` once finalized, else
    /// whether it moved anything.
    fn keep_alive(&mut self) -> Option<Result<bool>>;
}

/// State shared by one process's handles (communicators, requests, the
/// progress thread) under one lock. The library is single-threaded from the
/// application's side (communicators are not `Send`); the lock exists for
/// the progress thread, and is held only inside MPI calls, never across a
/// return to user code, so a call never waits for itself.
pub(crate) struct Locked<T>(Arc<LockedInner<T>>);

pub(crate) struct LockedInner<T> {
    value: Mutex<T>,
    /// Application calls waiting for the lock: the progress thread leaves
    /// the lock to them (it takes it only when nobody waits and it is free),
    /// so a blocking MPI call never queues behind the thread's passes.
    wanted: std::sync::atomic::AtomicUsize,
    /// A thread stands in for the program while it is blocked outside
    /// the library ([`crate::outside`]): a call arriving wakes it with
    /// `waker` before it waits for the lock.
    pub(crate) standing_in: std::sync::atomic::AtomicBool,
    pub(crate) waker: std::sync::OnceLock<std::sync::Arc<dyn adi::Waker>>,
}

impl<T> Clone for Locked<T> {
    fn clone(&self) -> Self {
        Locked(self.0.clone())
    }
}

impl<T> Locked<T> {
    pub(crate) fn new(v: T) -> Locked<T> {
        Locked(Arc::new(LockedInner {
            value: Mutex::new(v),
            wanted: 0.into(),
            standing_in: false.into(),
            waker: std::sync::OnceLock::new(),
        }))
    }

    /// Take the lock. A panic while it was held (a user-defined reduction
    /// that panicked, say) leaves the state as consistent as the panic did
    /// with a `RefCell`: the lock is taken anyway.
    pub(crate) fn borrow_mut(&self) -> MutexGuard<'_, T> {
        self.0.wanted.fetch_add(1, Ordering::SeqCst);
        if self.0.standing_in.load(Ordering::SeqCst) {
            if let Some(w) = self.0.waker.get() {
                w.wake();
            }
        }
        let g = self.0.value.lock().unwrap_or_else(PoisonError::into_inner);
        self.0.wanted.fetch_sub(1, Ordering::AcqRel);
        g
    }

    /// Same as [`Locked::borrow_mut`] (a read needs the lock too).
    pub(crate) fn borrow(&self) -> MutexGuard<'_, T> {
        self.borrow_mut()
    }

    /// A reference that does not keep the state alive (for threads that
    /// must not outlive the library).
    pub(crate) fn downgrade(&self) -> Weak<LockedInner<T>> {
        Arc::downgrade(&self.0)
    }

    pub(crate) fn ptr_eq(a: &Locked<T>, b: &Locked<T>) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }
}

impl<T> LockedInner<T> {
    /// Whether a call of the application waits for the lock (a thread
    /// holding it should let go).
    pub(crate) fn wanted(&self) -> bool {
        self.wanted.load(Ordering::Acquire) > 0
    }

    /// The lock for the progress thread: only if it is free and no
    /// application call is waiting for it.
    pub(crate) fn try_for_thread(&self) -> Option<MutexGuard<'_, T>> {
        if self.wanted.load(Ordering::Acquire) > 0 {
            return None;
        }
        match self.value.try_lock() {
            Ok(g) => Some(g),
            Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }
}
