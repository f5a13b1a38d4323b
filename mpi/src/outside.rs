//! Standing in for a rank blocked in the operating system, on the
//! simulator (issue 50: mpi4py's `testJoin`, MPICH's join tests).
//!
//! On the simulator one party runs at a time, and a rank outside MPI is
//! running: it holds the simulation's token until its next MPI call. A
//! rank that blocks outside MPI on something another rank must do first —
//! `accept` on a socket the other connects to, a read of a pipe the other
//! writes — would hold it for ever, and the job would hang.
//!
//! So a thread of the process watches the thread that initialized MPI.
//! When that thread has been blocked, outside the library, in a system
//! call that waits for another process ([`WAITS_FOR_OTHERS`]: socket,
//! pipe, poll, file-lock and child waits; not `nanosleep`, not `futex`) for
//! [`PATIENCE`], the watcher takes the library's lock and waits in the
//! program's place, as a blocking call would: the token goes to the
//! others, and whatever arrives for this rank meanwhile is taken in. The
//! program's next MPI call wakes it (a poke, as a second thread's call
//! under `MPI_THREAD_MULTIPLE` does), and the simulator resumes the rank
//! at the earliest time at which it can act without changing anybody's
//! past (`simlink::scheduler::poked_clock`).
//!
//! When the rank resumes then depends on how long the operating system
//! took, so such a run's simulated times can differ from run to run: the
//! program waited on something outside the simulation. A program that
//! never blocks outside MPI on another process keeps identical runs. Ranks
//! that are contexts of one process cannot be stood in for (a blocked
//! system call blocks all of them): there is no watcher then.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Weak;
use std::time::Duration;

use crate::error::Result;
use crate::locked::{EngineHolder, Locked, LockedInner};
use crate::watcher::Watcher;

/// How often the watcher looks. A look at a rank inside an MPI call (the
/// library's lock taken) is one failed `try_lock`; only a rank outside
/// MPI costs a read of its thread's `/proc` entry.
const EVERY: Duration = Duration::from_millis(100);

/// How long the program must have been blocked before the watcher stands
/// in: long enough that a read of a local file or a short poll never
/// counts.
const PATIENCE: Duration = Duration::from_millis(300);

/// The most progress passes between two waits.
const MAX_PASSES: usize = 4096;

/// The system calls (x86-64 numbers) in which a thread waits for another
/// process: `read`, `poll`, `select`, `connect`, `accept`, `recvfrom`,
/// `recvmsg`, `wait4`, `fcntl` (a lock), `flock`, `epoll_wait`, `waitid`,
/// `pselect6`, `ppoll`, `epoll_pwait`, `accept4`, `recvmmsg`,
/// `epoll_pwait2`.
const WAITS_FOR_OTHERS: [u32; 18] = [0, 7, 23, 42, 43, 45, 47, 61, 72, 73, 232, 247, 270, 271, 281, 288, 299, 441];

/// The running watcher; stopped and joined when dropped.
pub(crate) struct StandIn {
    _thread: Watcher,
}

impl StandIn {
    /// Start the watcher of the calling thread, on the simulator, when
    /// ranks are processes.
    pub(crate) fn start<T: EngineHolder + Send + 'static>(shared: &Locked<T>) -> Result<Option<StandIn>> {
        if !cfg!(all(target_os = "linux", target_arch = "x86_64")) || adi::transport::ranks_are_contexts() {
            return Ok(None);
        }
        let waker = {
            let mut c = shared.borrow_mut();
            let e = c.engine()?;
            if e.now_ps().is_none() {
                return Ok(None);
            }
            e.waker()?
        };
        let Some(waker) = waker else { return Ok(None) };
        let weak = shared.downgrade();
        let _ = weak.upgrade().map(|inner| inner.waker.set(waker));
        // SAFETY: gettid takes no arguments and touches no memory.
        let program = unsafe { libc::gettid() };
        let what = "the thread that stands in for a blocked rank";
        let thread = Watcher::start("dnmpi-outside", what, move |stop| watch(&weak, stop, program))?;
        Ok(Some(StandIn { _thread: thread }))
    }
}

/// The system call thread `tid` of this process is blocked in, if any
/// (`/proc/self/task/TID/syscall` begins with its number; "running" when
/// it runs).
fn blocked_in(tid: libc::pid_t) -> Option<u32> {
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/syscall")).ok()?;
    text.split_whitespace().next()?.parse().ok()
}

/// Whether thread `tid` waits for another process now.
fn waits_for_others(tid: libc::pid_t) -> bool {
    blocked_in(tid).is_some_and(|n| WAITS_FOR_OTHERS.contains(&n))
}

fn watch<T: EngineHolder>(shared: &Weak<LockedInner<T>>, stop: &AtomicBool, program: libc::pid_t) {
    let mut blocked_for = Duration::ZERO;
    loop {
        std::thread::park_timeout(EVERY);
        if stop.load(Ordering::Acquire) {
            return;
        }
        let Some(inner) = shared.upgrade() else { return };
        // Inside an MPI call (any thread's), the program is not stuck.
        let Some(mut c) = inner.try_for_thread() else {
            blocked_for = Duration::ZERO;
            continue;
        };
        blocked_for = match waits_for_others(program) {
            true => blocked_for + EVERY,
            false => Duration::ZERO,
        };
        if blocked_for < PATIENCE {
            continue;
        }
        let Some(waker) = inner.waker.get() else { return };
        if stand_in(&inner, &mut c, waker.as_ref(), stop, program).is_err() {
            // Finalized, or the engine failed: the program's next call
            // meets the same failure and reports it.
            return;
        }
        blocked_for = Duration::ZERO;
    }
}

/// Wait in the program's place until it calls MPI or stops waiting for
/// others: hand the token over, and take in what arrives.
fn stand_in<T: EngineHolder>(
    inner: &LockedInner<T>,
    c: &mut T,
    waker: &dyn adi::Waker,
    stop: &AtomicBool,
    program: libc::pid_t,
) -> Result<()> {
    // While the watcher waits, the program is a thread that may wake it:
    // its waits are no proof of a deadlock (unless the program stays
    // blocked past the simulator's patience).
    let was_threaded = waker.threaded();
    waker.set_threaded();
    inner.standing_in.store(true, Ordering::SeqCst);
    let result = (|| {
        loop {
            waker.arm();
            if inner.wanted() || stop.load(Ordering::Acquire) || !waits_for_others(program) {
                return Ok(());
            }
            // Take in what came, as a blocking call's progress would: a
            // wait would end at once on it otherwise.
            let e = c.engine()?;
            for _ in 0..MAX_PASSES {
                if !e.progress()? {
                    break;
                }
            }
            e.idle()?;
        }
    })();
    inner.standing_in.store(false, Ordering::SeqCst);
    if !was_threaded {
        waker.clear_threaded();
    }
    result
}

#[cfg(all(test, target_os = "linux", target_arch = "x86_64"))]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Look at thread `tid` until `want` holds of it (a thread just
    /// started takes a moment to reach its system call); at most 5,000
    /// looks a millisecond apart.
    fn eventually(tid: libc::pid_t, want: bool) -> bool {
        (0..5000).any(|_| {
            std::thread::sleep(Duration::from_millis(1));
            waits_for_others(tid) == want
        })
    }

    /// A thread blocked reading a pipe nobody writes waits for another
    /// process; one sleeping does not. (A thread cannot look at itself:
    /// it is in the `read` of its own `/proc` entry.)
    #[test]
    fn a_thread_blocked_on_a_pipe_counts_and_a_sleeping_one_does_not() {
        let mut fds = [0; 2];
        // SAFETY: `fds` has room for the two descriptors pipe writes.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let (tx, rx) = std::sync::mpsc::channel();
        let reader = std::thread::spawn(move || {
            // SAFETY: gettid has no preconditions.
            tx.send(unsafe { libc::gettid() }).unwrap();
            let mut b = [0u8; 1];
            // SAFETY: `b` is one writable byte; the read end is open.
            unsafe { libc::read(fds[0], b.as_mut_ptr().cast(), 1) }
        });
        let tid = rx.recv().unwrap();
        assert!(eventually(tid, true), "a read of an empty pipe is not seen as waiting on another process");
        // SAFETY: the write end is open; one byte from a live buffer.
        assert_eq!(unsafe { libc::write(fds[1], b"x".as_ptr().cast(), 1) }, 1);
        assert_eq!(reader.join().unwrap(), 1);

        let (tx, rx) = std::sync::mpsc::channel();
        let done = Arc::new(AtomicBool::new(false));
        let flag = done.clone();
        let sleeper = std::thread::spawn(move || {
            // SAFETY: gettid takes no arguments and touches no memory.
            tx.send(unsafe { libc::gettid() }).unwrap();
            while !flag.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(5));
            }
        });
        let tid = rx.recv().unwrap();
        let asleep = (0..5000).any(|_| {
            std::thread::sleep(Duration::from_millis(1));
            blocked_in(tid) == Some(230)
        });
        assert!(asleep, "the sleeping thread was never seen in clock_nanosleep");
        assert!(!waits_for_others(tid), "a sleeping thread is taken for one waiting on another process");
        done.store(true, Ordering::Release);
        sleeper.join().unwrap();
        // SAFETY: both descriptors are ours, closed once.
        unsafe {
            libc::close(fds[0]);
            libc::close(fds[1]);
        }
    }
}
