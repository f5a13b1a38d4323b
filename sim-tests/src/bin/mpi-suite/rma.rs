//! One-sided communication through the Rust API (MPI 4.1 chapter 12):
//! every synchronisation style, every operation, the errors.

use mpi::rma::{Assert, LockType, RawWindow, Target, Window};
use mpi::traits::*;
use mpi::{MpiError, SimpleCommunicator, SystemOperation};

use crate::{e, R};

macro_rules! check {
    ($cond:expr, $($msg:tt)*) => {
        let ok: bool = $cond;
        if !ok {
            return Err(format!($($msg)*));
        }
    };
}

pub(crate) fn rma(w: &SimpleCommunicator) -> R {
    let (me, n) = (w.rank(), w.size());
    let (right, left) = ((me + 1) % n, (me + n - 1) % n);
    let nu = n as usize;
    // Slots: 0..n written by each rank, then a counter, a ticket, a flag, a ring slot.
    let (counter, ticket, flag, ring) = (nu, nu + 1, nu + 2, nu + 3);
    let mut win = Window::<i64>::allocate(w, nu + 4).map_err(e)?;

    // Fence: everyone puts its rank into its slot everywhere and adds 1 to every counter.
    let mut ep = win.fence().map_err(e)?;
    for t in 0..n {
        ep.put(t, me as usize, &[me as i64 * 10]).map_err(e)?;
        ep.accumulate(t, counter, &[1], SystemOperation::Sum).map_err(e)?;
    }
    ep.end().map_err(e)?;
    {
        let l = win.local().map_err(e)?;
        for r in 0..nu {
            check!(l[r] == r as i64 * 10, "fence: slot {r} holds {} at rank {me}", l[r]);
        }
        check!(l[counter] == n as i64, "fence: the counter is {} at rank {me}, not {n}", l[counter]);
    }

    // Passive target: tickets by fetch-and-add on rank 0, one winner of a compare-and-swap.
    let t = {
        let mut ep = win.lock(0, LockType::Shared).map_err(e)?;
        let t = ep.fetch_and_op(0, ticket, 1, SystemOperation::Sum).map_err(e)?;
        ep.compare_and_swap(0, flag, 0, me as i64 + 1).map_err(e)?;
        ep.unlock().map_err(e)?;
        t
    };
    check!((0..n as i64).contains(&t), "ticket {t} at rank {me}");
    let mut tickets = vec![0i64; nu];
    w.all_gather_into(&t, &mut tickets[..]).map_err(e)?;
    let mut sorted = tickets.clone();
    sorted.sort();
    check!(sorted == (0..n as i64).collect::<Vec<_>>(), "tickets are not a permutation: {tickets:?}");
    w.barrier().map_err(e)?;
    if me == 0 {
        let l = win.local().map_err(e)?;
        check!(l[ticket] == n as i64, "the ticket counter is {}", l[ticket]);
        check!((1..=n as i64).contains(&l[flag]), "the swap flag is {}", l[flag]);
    }

    // Exclusive locks serialise read-modify-write by get and put.
    for _ in 0..3 {
        let mut ep = win.lock(0, LockType::Exclusive).map_err(e)?;
        let mut v = [0i64];
        ep.get(0, counter, &mut v).map_err(e)?;
        ep.put(0, counter, &[v[0] + 1]).map_err(e)?;
        ep.unlock().map_err(e)?;
    }
    w.barrier().map_err(e)?;
    if me == 0 {
        let l = win.local().map_err(e)?;
        check!(l[counter] == 4 * n as i64, "exclusive increments: {} at rank 0, not {}", l[counter], 4 * n);
    }

    // General active target: a ring, each rank exposed to its left neighbour
    // while it accesses its right one.
    {
        let mut ex = win.post(&[left]).map_err(e)?;
        let mut ep = ex.start(&[right]).map_err(e)?;
        ep.put(right, ring, &[me as i64 + 100]).map_err(e)?;
        ep.complete().map_err(e)?;
        ex.wait().map_err(e)?;
    }
    {
        let l = win.local().map_err(e)?;
        check!(l[ring] == left as i64 + 100, "ring: {} at rank {me}, from {left}", l[ring]);
    }

    // lock_all and gets from everyone.
    {
        let mut ep = win.lock_all().map_err(e)?;
        for t in 0..n {
            let mut v = vec![0i64; nu];
            ep.get(t, 0, &mut v).map_err(e)?;
            check!(v == (0..n as i64).map(|r| r * 10).collect::<Vec<_>>(), "get from {t}: {v:?}");
        }
        // An access outside the target's window writes nothing and says so.
        let err = ep.put(right, nu + 3, &[1, 2]);
        check!(matches!(err, Err(MpiError::RmaRange(_))), "a put past the end gave {err:?}");
        ep.flush().map_err(e)?;
        ep.unlock().map_err(e)?;
    }
    w.barrier().map_err(e)?;
    {
        let l = win.local().map_err(e)?;
        check!(l[ring] == left as i64 + 100, "the refused put wrote {} at rank {me}", l[ring]);
    }
    win.free().map_err(e)?;

    raw_errors(w)
}

/// The synchronisation rules and argument checks of the raw layer.
fn raw_errors(w: &SimpleCommunicator) -> R {
    let n = w.size();
    let mut raw = RawWindow::allocate(w, 64, 8).map_err(e)?;
    let layout = mpi::datatype::typemap::Typemap::basic(8, 8, 1);
    let t = Target { rank: (w.rank() + 1) % n, disp: 0, layout: &layout, count: 1 };
    let v = 7u64;
    let span = mpi::staged::Span::bytes(8);
    // SAFETY: `v` is 8 readable bytes.
    let r = unsafe { raw.put((&v as *const u64).cast(), &span, &t) };
    check!(matches!(r, Err(MpiError::RmaSync(_))), "a put outside any epoch gave {r:?}");
    raw.lock(LockType::Shared, 0, Assert::default()).map_err(e)?;
    let r = raw.lock(LockType::Exclusive, 0, Assert::default());
    check!(matches!(r, Err(MpiError::RmaSync(_))), "locking rank 0 twice gave {r:?}");
    let r = raw.fence(Assert::default());
    check!(matches!(r, Err(MpiError::RmaSync(_))), "a fence inside a lock epoch gave {r:?}");
    if n > 1 {
        let r = raw.unlock(n - 1);
        check!(matches!(r, Err(MpiError::RmaSync(_))), "unlocking a rank not locked gave {r:?}");
    }
    raw.unlock(0).map_err(e)?;
    let r = raw.lock(LockType::Shared, n, Assert::default());
    check!(matches!(r, Err(MpiError::InvalidRank { .. })), "locking rank {n} gave {r:?}");
    raw.free().map_err(e)?;
    Ok(())
}

/// A passive target that makes no MPI call (it computes, or sleeps a
/// second on a real network) and then one that only polls with `iprobe`: on the
/// simulator the card holds the window's public copy, so rank 0's lock,
/// put, fetch-and-add and unlock complete while rank 1 is away — in far
/// less time than rank 1 is away; on a real network the progress thread
/// (`DN_NBC_PROGRESS=thread`) answers for rank 1. Rank 0 prints how long
/// its epochs took.
pub(crate) fn passive_target(u: &mpi::Universe, w: &SimpleCommunicator) -> R {
    const AWAY_NS: f64 = 2_000_000.0; // 2 ms of computation at the target
    let (me, n) = (w.rank(), w.size());
    if n < 2 {
        return Ok(());
    }
    // The card's public copies (the separate model) are what serve a
    // target that makes no call; other transports give a unified window.
    let mut win = Window::<u64>::allocate_with(w, 4, Some(mpi::rma::Model::Separate)).map_err(e)?;
    w.barrier().map_err(e)?;
    let epoch = |win: &mut Window<u64>, round: u64| -> R<f64> {
        let t0 = u.wtime();
        let mut ep = win.lock(1, LockType::Exclusive).map_err(e)?;
        ep.put(1, 0, &[40 + round]).map_err(e)?;
        let old = ep.fetch_and_op(1, 1, 5, SystemOperation::Sum).map_err(e)?;
        check!(old == 5 * round, "fetch-and-add returned {old} in round {round}");
        ep.unlock().map_err(e)?;
        Ok((u.wtime() - t0) * 1e6)
    };
    match me {
        0 => {
            let computing = epoch(&mut win, 0)?;
            w.process_at_rank(1).send_with_tag(&[1u8], 9).map_err(e)?;
            let polling = epoch(&mut win, 1)?;
            w.process_at_rank(1).send_with_tag(&[2u8], 9).map_err(e)?;
            // On the simulator the card needs no target (simulated time,
            // exact); on a real network rank 1 checks the order instead.
            if u.is_simulated() {
                check!(
                    computing < AWAY_NS / 1000.0 / 10.0,
                    "the epoch took {computing:.3} us while the target was away: it waited for the target"
                );
            }
            println!(
                "passive-target epoch: {computing:.3} us while the target computed, {polling:.3} us while it polled"
            );
        }
        1 => {
            // No MPI call at all while rank 0's first epoch runs: simulated
            // computation, or on a real network a sleep.
            if u.is_simulated() {
                u.compute(AWAY_NS).map_err(e)?;
            } else {
                std::thread::sleep(std::time::Duration::from_secs(1));
                // Rank 0 says its epoch is over right after it; if its
                // epoch needed this process, the word could not be here
                // before this process's first call. With a progress thread
                // it must be (a second of margin; no clock is read).
                let early = w.any_process().immediate_probe_with_tag(9).map_err(e)?.is_some();
                if u.progress_mode() == mpi::ProgressMode::Thread {
                    check!(early, "rank 0's epoch was not over when rank 1 woke: the progress thread did not serve it");
                }
            }
            let mut b = [0u8; 1];
            w.process_at_rank(0).receive_into_with_tag(&mut b, 9).map_err(e)?;
            // Then only iprobe, until rank 0 says its second epoch is over.
            while w.any_process().immediate_probe_with_tag(9).map_err(e)?.is_none() {
                u.compute(1000.0).map_err(e)?;
            }
            w.process_at_rank(0).receive_into_with_tag(&mut b, 9).map_err(e)?;
        }
        _ => {}
    }
    w.barrier().map_err(e)?;
    if me == 1 {
        let l = win.local().map_err(e)?;
        check!(l[0] == 41 && l[1] == 10, "the target's window holds {} and {}", l[0], l[1]);
    }
    drop(win.free());
    Ok(())
}
