//! `MPI_THREAD_MULTIPLE` (MPI 4.1 §11.6): any thread may call MPI at any
//! time, and a blocking call blocks only its own thread.
//!
//! - **One lock.** The library's state is one structure behind one lock
//!   (the mpi crate's objects are single-threaded): calls from different
//!   threads take turns. A thread that finds the lock taken waits for it
//!   (in the lower levels, a second thread ends the job instead: they are
//!   erroneous there).
//! - **Blocking calls let others in.** A blocking call that has to wait
//!   (`MPI_Recv`, `MPI_Wait*`, a blocking collective, ...) starts its
//!   operation as the non-blocking form does and then waits for it, as
//!   `MPI_Wait` does; but when another thread wants the lock, the waiting
//!   thread gives it up where it would otherwise idle, and waits again once
//!   it has it back ([`blocking_call`], `mpi::request::settle_until`).
//! - **Waking an idle wait.** The thread that waits inside may be asleep
//!   in the backend's idle wait (in the simulator, a `WAIT` hand-over; on
//!   a socket, a timed receive). A thread arriving at the lock wakes it
//!   first ([`adi::Waker`]): the simulator then resumes the process at the
//!   earliest simulated time at which it can act without changing anybody's
//!   past (`simlink::scheduler::poked_clock`); the datagram backends look at
//!   a flag at least every millisecond.
//! - **Threads that wait take turns.** Two threads that both wait hand
//!   the lock to each other only when something may have changed since the
//!   other last looked at its wait (a new call ran, a progress pass moved
//!   something: [`stop`]); otherwise the holder idles for both. The counts
//!   that decide it, and their rules, are the mpi crate's (`mpi::turns`).
//! - **What it costs.** Below `MPI_THREAD_MULTIPLE`, one check per call.
//!   With it and without contention, a blocking point-to-point call becomes
//!   the non-blocking one plus a wait (docs/BENCHMARKS.md has the figures).
//!
//! Simulated time stays exact for a program whose threads never meet in
//! the library (one thread calls MPI at a time): nothing is woken and no
//! lock changes hands inside a call. When two threads do meet, when the
//! second one gets in depends on how the host scheduled them, so
//! simulated times then vary from run to run (as with `--compute
//! measured`); results do not.
//!
//! `MPI_Comm_dup` is an idup and a wait (`env::dup_by_idup`), and
//! `MPI_Comm_create`, `_create_group` and `_create_from_group` on an
//! intracommunicator are made the same way (`group::create_multiple`).
//! Calls that stay whole under the lock: the others that build
//! communicators, groups, windows or topologies (`MPI_Comm_split`,
//! `MPI_Comm_create` of an intercommunicator, `MPI_Intercomm_create`,
//! `MPI_Win_create`, ...), the one-sided synchronizations of fences and
//! of post/start/complete/wait (passive-target ones of unified windows
//! wait as `MPI_Wait` does: `win::passive_sync`), the collectives on an
//! intercommunicator, and `MPI_Finalize`: another thread's call waits until
//! they return (docs/guide/threads.md).

use std::cell::Cell;
use std::ffi::c_int;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::process::Shared;
use crate::{Fail, R};

/// The process's [`Shared`].
#[inline(always)]
fn shared() -> &'static Shared {
    &crate::process::process().threads
}

/// Not an MPI error class: a blocking call's body gave the lock up for
/// another thread and is to run again ([`blocking_call`]).
const YIELDED: c_int = c_int::MIN;

/// Whether `MPI_THREAD_MULTIPLE` was granted (one load: the check every
/// blocking call makes).
#[inline(always)]
pub(crate) fn multiple() -> bool {
    shared().multiple.load(Ordering::Relaxed)
}

/// Grant `MPI_THREAD_MULTIPLE`: from now on blocking calls let other
/// threads in, and `waker` ends an idle wait when one arrives.
pub(crate) fn grant(waker: Option<Arc<dyn adi::Waker>>) {
    if let Some(w) = &waker {
        w.set_threaded();
    }
    let _ = shared().waker.set(waker);
    shared().multiple.store(true, Ordering::SeqCst);
}

/// Whether a thread with a new call waits for the lock.
fn newcomers() -> bool {
    shared().turns.newcomers()
}

/// Whether a thread waiting inside the library gives the lock up, asked
/// where it would otherwise idle, told whether its wait `moved` anything
/// since it took the lock: at once for a thread with a new call; for a
/// thread coming back to its own wait, only if something may have changed
/// since that thread last looked (a new call ran, a progress pass moved
/// something), so that threads that all wait take turns at idling rather
/// than at spinning, and none misses the end of its wait.
pub(crate) fn stop(moved: bool) -> bool {
    arm();
    shared().turns.should_yield(moved)
}

/// Whether a thread coming back for the lock has not looked at its wait
/// since the last change (`mpi::turns::Turns::stale`).
fn stale() -> bool {
    shared().turns.stale()
}

/// A call ends (in MPI_THREAD_MULTIPLE, through the standing mark every
/// call ends with, `attr::Deferred::CallEnds`): it may have changed what
/// others wait for, unless it is a blocking call giving the lock up with
/// nothing done but a look at its own wait.
pub(crate) fn ended() {
    if !crate::process::with_thread(|t| t.yielding.get()) {
        shared().turns.changed();
    }
}

/// Let a newcomer's wake end this thread's next wait (before looking for
/// newcomers: see [`adi::Waker::arm`]).
fn arm() {
    if let Some(Some(w)) = shared().waker.get() {
        w.arm();
    }
}

/// A thread about to wait for the lock (in MPI_THREAD_MULTIPLE): count
/// it and wake the holder's idle wait, unless it is coming back to its
/// blocking call, which counted it already, before it let the lock go
/// ([`blocking_call`]). Returns what [`arrived`] takes.
pub(crate) fn arriving() -> bool {
    if crate::process::with_thread(|t| t.coming_back.get()) {
        return false;
    }
    shared().turns.arriving();
    if let Some(Some(w)) = shared().waker.get() {
        w.wake();
    }
    true
}

/// The thread counted by [`arriving`] has the lock.
pub(crate) fn arrived(counted: bool) {
    if counted {
        shared().turns.arrived();
    }
}

/// Count this thread, which holds the lock and is about to let it go, as
/// one coming back for it: from the moment the lock is free, the next
/// holder sees it waiting (a thread counted only once it found the lock
/// taken could be missed by a holder that looked in between, and would
/// then wait for that holder's next event, perhaps for ever).
fn coming_back() {
    shared().turns.coming_back(std::thread::current().id());
}

/// The thread [`coming_back`] counted has the lock again (and looks at
/// its wait now).
fn came_back() {
    shared().turns.came_back(std::thread::current().id());
}

/// The failure a blocking call's body returns when it gave the lock up.
pub(crate) fn yielded() -> Fail {
    Fail::new(YIELDED, "the call waits again")
}

/// Whether the process has a thread besides the calling one, to complete
/// what only a thread can (a generalized request, a partitioned send's
/// partitions). Counted by the operating system: a thread that has not
/// called MPI yet counts too.
pub(crate) fn others_exist() -> bool {
    // A rank that is a context of a host has no thread of its own besides
    // the host's one (programs that create threads run as processes).
    if simlink::contexts::in_host() {
        return false;
    }
    simlink::process::threads(std::process::id()).is_none_or(|n| n > 1)
}

/// A blocking call under `MPI_THREAD_MULTIPLE` found what it waits for
/// not yet there and gives the lock up ([`blocking_call`]): after waiting
/// once for something to happen if `idle` (it waits for what only another
/// thread can do: complete a generalized request, mark a partition ready)
/// and no thread with a new call waits for the lock.
pub(crate) fn again(st: &crate::State, idle: bool) -> Fail {
    arm();
    if idle && !newcomers() && !stale() {
        if let Err(e) = st.universe.idle() {
            return e.into();
        }
        // Something may have moved for another waiting thread.
        shared().turns.changed();
    }
    yielded()
}

/// Run a blocking call's `body` under the lock, again each time it gives
/// the lock up for another thread (it returns [`yielded`]), handing the
/// lock straight to a thread that waits for it; its other outcomes are
/// the call's, as [`crate::with_state`] reports them.
pub(crate) fn blocking_call(
    call: &str,
    comm: crate::Handle,
    mut body: impl FnMut(&mut crate::State) -> R<()>,
) -> c_int {
    // Counted among the lock's waiters by `coming_back`, until it has the
    // lock again.
    let counted = Cell::new(false);
    loop {
        let again = Cell::new(false);
        let rc = crate::with_state_then(
            call,
            comm,
            |st| {
                if counted.replace(false) {
                    came_back();
                }
                match body(st) {
                    Err(f) if f.class == YIELDED => {
                        again.set(true);
                        crate::process::with_thread(|t| t.yielding.set(true));
                        // Counted from before the lock is free (then
                        // handed straight to a thread parked for it).
                        coming_back();
                        counted.set(true);
                        Ok(())
                    }
                    r => r,
                }
            },
            &again,
        );
        crate::process::with_thread(|t| t.yielding.set(false));
        crate::process::with_thread(|t| t.coming_back.set(again.get()));
        if !again.get() {
            // The body did not run (the library ended meanwhile).
            if counted.replace(false) {
                came_back();
            }
            return rc;
        }
        std::thread::yield_now();
    }
}
