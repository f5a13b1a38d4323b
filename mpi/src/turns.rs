//! How threads take turns at the library's one lock under
//! `MPI_THREAD_MULTIPLE` (MPI 4.1 §11.6: a blocking call blocks only its
//! own thread). The library's state is one structure behind one lock; a
//! blocking call that has to wait gives the lock up where it would
//! otherwise idle when another thread wants it, and comes back for it
//! after. [`Turns`] keeps the counts that decide when to give it up, so
//! that threads which all wait take turns at idling rather than at
//! spinning, and none misses the end of its wait:
//!
//! - a thread with a new call ([`Turns::arriving`]) gets the lock at once;
//! - a thread coming back to its own wait ([`Turns::coming_back`]) gets it
//!   only if something may have changed since it last looked: a call
//!   ended, or a progress pass moved something ([`Turns::changed`]).
//!
//! The lock itself, waking a holder asleep in the backend's idle wait, and
//! each thread's own flags are the caller's (the C library's
//! `capi/src/threads.rs`).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::thread::ThreadId;

/// The counts behind the hand-over of the lock between threads.
#[derive(Default, Debug)]
pub struct Turns {
    /// Threads waiting for the lock.
    wanted: AtomicUsize,
    /// Of those, threads coming back to a blocking call that let another
    /// in (they have nothing new to do: they look again whether their wait
    /// is over); counted from before they let the lock go.
    returning: AtomicUsize,
    /// Counts what may have changed the state of a request: a call that
    /// ended, a progress pass that moved something.
    epoch: AtomicU64,
    /// The epoch each thread coming back for the lock saw when it last
    /// looked at its wait: while one is older than `epoch`, that thread may
    /// find its wait over, and a holder about to idle lets it look first.
    seen: Mutex<Vec<(ThreadId, u64)>>,
}

impl Turns {
    /// Whether a thread with a new call waits for the lock.
    pub fn newcomers(&self) -> bool {
        self.wanted.load(Ordering::Acquire) > self.returning.load(Ordering::Acquire)
    }

    /// Whether a thread coming back for the lock has not looked at its
    /// wait since the last change.
    pub fn stale(&self) -> bool {
        if self.returning.load(Ordering::Acquire) == 0 {
            return false;
        }
        let now = self.epoch.load(Ordering::Acquire);
        self.seen.lock().unwrap_or_else(PoisonError::into_inner).iter().any(|&(_, e)| e < now)
    }

    /// Whether the holder, waiting inside the library where it would
    /// otherwise idle, gives the lock up, told whether its wait `moved`
    /// anything since it took the lock: at once for a thread with a new
    /// call; for a thread coming back to its own wait, only if something
    /// may have changed since that thread last looked.
    pub fn should_yield(&self, moved: bool) -> bool {
        if moved {
            self.changed();
        }
        self.newcomers() || self.stale()
    }

    /// Something may have changed what threads wait for: a call ended, or
    /// an idle wait ended.
    pub fn changed(&self) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }

    /// A thread with a new call is about to wait for the lock.
    pub fn arriving(&self) {
        self.wanted.fetch_add(1, Ordering::AcqRel);
    }

    /// The thread counted by [`Turns::arriving`] has the lock.
    pub fn arrived(&self) {
        self.wanted.fetch_sub(1, Ordering::AcqRel);
    }

    /// Count thread `me`, which holds the lock and is about to let it go,
    /// as one coming back for it: from the moment the lock is free, the
    /// next holder sees it waiting (a thread counted only once it found the
    /// lock taken could be missed by a holder that looked in between, and
    /// would then wait for that holder's next event, perhaps for ever).
    pub fn coming_back(&self, me: ThreadId) {
        let now = self.epoch.load(Ordering::Acquire);
        self.seen.lock().unwrap_or_else(PoisonError::into_inner).push((me, now));
        self.returning.fetch_add(1, Ordering::AcqRel);
        self.wanted.fetch_add(1, Ordering::AcqRel);
    }

    /// Thread `me`, counted by [`Turns::coming_back`], has the lock again
    /// (and looks at its wait now).
    pub fn came_back(&self, me: ThreadId) {
        self.wanted.fetch_sub(1, Ordering::AcqRel);
        self.returning.fetch_sub(1, Ordering::AcqRel);
        self.seen.lock().unwrap_or_else(PoisonError::into_inner).retain(|&(t, _)| t != me);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn other() -> ThreadId {
        std::thread::spawn(|| std::thread::current().id()).join().expect("a thread")
    }

    #[test]
    fn a_new_call_gets_the_lock_at_once() {
        let t = Turns::default();
        assert!(!t.should_yield(false), "nobody waits");
        t.arriving();
        assert!(t.newcomers() && t.should_yield(false));
        t.arrived();
        assert!(!t.should_yield(false));
    }

    #[test]
    fn a_thread_coming_back_gets_the_lock_only_after_a_change() {
        let (t, b) = (Turns::default(), other());
        t.coming_back(b);
        assert!(!t.newcomers(), "a thread coming back is no newcomer");
        assert!(!t.should_yield(false), "nothing changed since it looked: the holder idles for both");
        t.changed();
        assert!(t.stale() && t.should_yield(false), "a call ended: it may find its wait over");
        t.came_back(b);
        assert!(!t.stale() && !t.should_yield(false));
        // A wait that moved something counts as a change.
        t.coming_back(b);
        assert!(t.should_yield(true));
        t.came_back(b);
    }

    #[test]
    fn two_threads_coming_back_are_told_apart() {
        let (t, b, c) = (Turns::default(), other(), other());
        t.coming_back(b);
        t.changed();
        t.coming_back(c);
        assert!(t.stale(), "b has not looked since the change");
        t.came_back(b);
        assert!(!t.stale(), "c looked after it");
        t.came_back(c);
        assert!(!t.newcomers() && !t.stale());
    }
}
