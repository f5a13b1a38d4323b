//! The keep-alive thread: on a network whose peers time out (UDP, DPDK),
//! a rank that computes without calling MPI must still answer its peers,
//! or a peer waiting for it would take it for lost (issue 30).
//!
//! The datagram protocol declares a peer lost when it answers nothing,
//! neither data nor pings, for `DN_UDP_TIMEOUT_MS`. Without this thread
//! only MPI calls answer, so a rank computing longer than the timeout was
//! declared lost by any peer that had sent it something, and a rank that
//! only waits could not tell a computing peer from a hung one. The thread
//! wakes [`adi::Transport::keepalive`] apart (sixteen times per timeout),
//! and when the program is outside MPI (the library's lock is free and no
//! call waits for it) makes one pass of the engine alone
//! ([`adi::Engine::keep_alive`]): acknowledgements, pings and arrivals,
//! but no collective schedule, so the progress mode stays the program's
//! choice. It costs the program nothing inside MPI calls; outside, one
//! pass of a few microseconds per wake-up. On the simulator (no timeouts,
//! and time is simulated) there is no thread.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Weak;
use std::time::Duration;

use crate::error::Result;
use crate::locked::{EngineHolder, Locked, LockedInner};
use crate::watcher::Watcher;

/// The most engine passes of one wake-up: enough for a message from every
/// peer of a large job, and a bound on how long the thread keeps the
/// library's lock from a program that enters MPI meanwhile.
const MAX_PASSES: usize = 4096;

/// The running keep-alive thread; stopped and joined when dropped.
pub(crate) struct KeepAlive {
    _thread: Watcher,
}

impl KeepAlive {
    /// Start the thread for `shared`'s engine if its transport needs one.
    pub(crate) fn start<T: EngineHolder + Send + 'static>(
        shared: &Locked<T>,
        every: Option<Duration>,
    ) -> Result<Option<KeepAlive>> {
        let Some(every) = every else { return Ok(None) };
        let weak = shared.downgrade();
        let w = Watcher::start("dnmpi-keepalive", "the keep-alive thread", move |stop| run(&weak, stop, every))?;
        Ok(Some(KeepAlive { _thread: w }))
    }
}

fn run<T: EngineHolder>(shared: &Weak<LockedInner<T>>, stop: &AtomicBool, every: Duration) {
    loop {
        std::thread::park_timeout(every);
        if stop.load(Ordering::Acquire) {
            return;
        }
        let Some(ctx) = shared.upgrade() else { return };
        // Inside an MPI call the program answers its peers itself.
        let Some(mut c) = ctx.try_for_thread() else { continue };
        // A pass hands over at most one message: take everything that
        // has arrived (31 peers' messages at 32 ranks), so that none of
        // them waits a whole period for its acknowledgement.
        for _ in 0..MAX_PASSES {
            if ctx.wanted() {
                break;
            }
            match c.keep_alive() {
                // Finalized, or the engine failed: the program's next call
                // meets the same failure and reports it.
                None | Some(Err(_)) => return,
                Some(Ok(true)) => {}
                Some(Ok(false)) => break,
            }
        }
    }
}
