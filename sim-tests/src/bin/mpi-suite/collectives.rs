//! Every collective checked element by element against a reference
//! computed locally: counts 0, 1, odd and above the eager threshold, roots
//! other than 0, a non-commutative user operation whose result depends on
//! the order, and a split communicator.

use mpi::traits::*;
use mpi::{Count, Operation, Rank, SimpleCommunicator, SystemOperation, ValueIndex};

use super::{e, R};

macro_rules! check {
    ($cond:expr, $($msg:tt)*) => {
        let ok: bool = $cond;
        if !ok {
            return Err(format!($($msg)*));
        }
    };
}

/// Element `i` of rank `r`'s contribution.
fn val(r: Rank, i: usize) -> u64 {
    (r as u64 + 1) * 1_000_003 + i as u64 * 7
}

fn mine(r: Rank, n: usize) -> Vec<u64> {
    (0..n).map(|i| val(r, i)).collect()
}

/// An affine map x -> a·x + b; composing them does not commute.
type Affine = [u64; 2];

/// `left` then `right`.
fn compose(left: Affine, right: Affine) -> Affine {
    [left[0].wrapping_mul(right[0]), left[1].wrapping_mul(right[0]).wrapping_add(right[1])]
}

fn affine(r: Rank, i: usize) -> Affine {
    [r as u64 + 2 + i as u64, r as u64 * 3 + 1]
}

fn compose_op() -> Operation {
    Operation::non_commutative(|src: &[Affine], acc: &mut [Affine]| {
        for (a, s) in acc.iter_mut().zip(src) {
            *a = compose(*s, *a);
        }
    })
}

const COUNTS: [usize; 4] = [0, 1, 7, 3000];

pub fn collectives(u: &mpi::Universe, w: &SimpleCommunicator) -> R {
    run_all(w)?;
    // The same on a split communicator (odd and even ranks).
    let half =
        w.split_by_color(mpi::Color::with_value(w.rank() % 2)).map_err(e)?.ok_or("split gave no communicator")?;
    run_all(&half).map_err(|m| format!("on the split communicator: {m}"))?;
    if u.is_simulated() {
        // For the determinism check: the same run must end at the same time.
        println!("collectives: rank {} at {:.0} ps after 0 polls", w.rank(), u.wtime() * 1e12);
    }
    Ok(())
}

fn run_all(w: &SimpleCommunicator) -> R {
    let (me, n) = (w.rank(), w.size());
    let nu = n as usize;
    w.barrier().map_err(e)?;
    for &count in &COUNTS {
        for root in [0, n - 1, n / 2] {
            // Broadcast.
            let mut buf = if me == root { mine(root, count) } else { vec![0u64; count] };
            w.process_at_rank(root).broadcast_into(&mut buf[..]).map_err(e)?;
            check!(buf == mine(root, count), "broadcast of {count} from {root}: wrong data");

            // Reduce (sum), and a non-commutative reduce.
            let expect: Vec<u64> =
                (0..count).map(|i| (0..n).map(|r| val(r, i)).fold(0u64, u64::wrapping_add)).collect();
            let expect_aff: Vec<Affine> =
                (0..count).map(|i| (1..n).fold(affine(0, i), |acc, r| compose(acc, affine(r, i)))).collect();
            let aff: Vec<Affine> = (0..count).map(|i| affine(me, i)).collect();
            let rootp = w.process_at_rank(root);
            if me == root {
                let mut out = vec![0u64; count];
                rootp.reduce_into_root(&mine(me, count), &mut out, SystemOperation::Sum).map_err(e)?;
                check!(out == expect, "reduce sum of {count} to {root}: wrong result");
                let mut out = vec![[0u64; 2]; count];
                rootp.reduce_into_root(&aff, &mut out, &compose_op()).map_err(e)?;
                check!(out == expect_aff, "non-commutative reduce of {count} to {root}: wrong order");
            } else {
                rootp.reduce_into(&mine(me, count), SystemOperation::Sum).map_err(e)?;
                rootp.reduce_into(&aff, &compose_op()).map_err(e)?;
            }

            // Gather and scatter.
            if me == root {
                let mut all = vec![0u64; count * nu];
                rootp.gather_into_root(&mine(me, count)[..], &mut all[..]).map_err(e)?;
                let want: Vec<u64> = (0..n).flat_map(|r| mine(r, count)).collect();
                check!(all == want, "gather of {count} to {root}: wrong data");
                let mut part = vec![0u64; count];
                rootp.scatter_into_root(&want[..], &mut part[..]).map_err(e)?;
                check!(part == mine(me, count), "scatter of {count} from {root}: wrong block");
            } else {
                rootp.gather_into(&mine(me, count)[..]).map_err(e)?;
                let mut part = vec![0u64; count];
                rootp.scatter_into(&mut part[..]).map_err(e)?;
                check!(part == mine(me, count), "scatter of {count} from {root}: wrong block on {me}");
            }

            // Variable counts: rank r contributes (r + count) % 5 elements,
            // placed in reverse rank order with a gap of one.
            let vc: Vec<Count> = (0..n).map(|r| ((r as usize + count) % 5) as Count).collect();
            let mut displs = vec![0 as Count; nu];
            let mut at = 0;
            for r in (0..nu).rev() {
                displs[r] = at;
                at += vc[r] + 1;
            }
            let total = at as usize;
            let own = mine(me, vc[me as usize] as usize);
            let want_v = {
                let mut v = vec![0u64; total];
                for r in 0..nu {
                    let d = displs[r] as usize;
                    v[d..d + vc[r] as usize].copy_from_slice(&mine(r as Rank, vc[r] as usize));
                }
                v
            };
            if me == root {
                let mut all = vec![0u64; total];
                rootp.gather_varcount_into_root(&own[..], &mut all, &vc, &displs).map_err(e)?;
                check!(all == want_v, "gatherv to {root}: wrong data");
                let mut part = vec![0u64; vc[me as usize] as usize];
                rootp.scatter_varcount_into_root(&want_v, &vc, &displs, &mut part[..]).map_err(e)?;
                check!(part == own, "scatterv from {root}: wrong block");
            } else {
                rootp.gather_varcount_into(&own[..]).map_err(e)?;
                let mut part = vec![0u64; vc[me as usize] as usize];
                rootp.scatter_varcount_into(&mut part[..]).map_err(e)?;
                check!(part == own, "scatterv from {root}: wrong block on {me}");
            }
            let mut all = vec![0u64; total];
            w.all_gather_varcount_into(&own[..], &mut all, &vc, &displs).map_err(e)?;
            check!(all == want_v, "allgatherv: wrong data");
        }

        // Allreduce: sum, max on floats, minloc, non-commutative.
        let mut out = vec![0u64; count];
        w.all_reduce_into(&mine(me, count), &mut out, SystemOperation::Sum).map_err(e)?;
        let expect: Vec<u64> = (0..count).map(|i| (0..n).map(|r| val(r, i)).sum()).collect();
        check!(out == expect, "allreduce sum of {count}: wrong result");
        let f: Vec<f64> = (0..count).map(|i| ((me as f64) - 2.5).powi(2) + i as f64).collect();
        let mut fo = vec![0f64; count];
        w.all_reduce_into(&f, &mut fo, SystemOperation::Max).map_err(e)?;
        let fe: Vec<f64> = (0..count)
            .map(|i| (0..n).map(|r| ((r as f64) - 2.5).powi(2) + i as f64).fold(f64::MIN, f64::max))
            .collect();
        check!(fo == fe, "allreduce max of {count} f64: wrong result");
        let loc: Vec<ValueIndex<f64, i64>> = (0..count)
            .map(|i| ValueIndex { value: ((me as i64 - 3).abs() + (i as i64 % 2)) as f64, index: me as i64 })
            .collect();
        let mut lo = vec![ValueIndex::default(); count];
        w.all_reduce_into(&loc, &mut lo, SystemOperation::MinLoc).map_err(e)?;
        for (i, l) in lo.iter().enumerate() {
            let best = (0..n).min_by_key(|r| ((*r as i64 - 3).abs(), *r)).unwrap_or(0);
            check!(l.index == best as i64, "allreduce minloc element {i}: index {} instead of {best}", l.index);
        }
        let aff: Vec<Affine> = (0..count).map(|i| affine(me, i)).collect();
        let mut ao = vec![[0u64; 2]; count];
        w.all_reduce_into(&aff, &mut ao, &compose_op()).map_err(e)?;
        let expect_aff: Vec<Affine> =
            (0..count).map(|i| (1..n).fold(affine(0, i), |acc, r| compose(acc, affine(r, i)))).collect();
        check!(ao == expect_aff, "non-commutative allreduce of {count}: wrong order");

        // Allgather, alltoall, alltoallv.
        let mut all = vec![0u64; count * nu];
        w.all_gather_into(&mine(me, count)[..], &mut all[..]).map_err(e)?;
        check!(all == (0..n).flat_map(|r| mine(r, count)).collect::<Vec<_>>(), "allgather of {count}: wrong data");
        let block =
            |from: Rank, to: Rank| -> Vec<u64> { (0..count).map(|i| val(from, i) ^ (to as u64) << 40).collect() };
        let send: Vec<u64> = (0..n).flat_map(|to| block(me, to)).collect();
        let mut got = vec![0u64; count * nu];
        w.all_to_all_into(&send[..], &mut got[..]).map_err(e)?;
        check!(got == (0..n).flat_map(|from| block(from, me)).collect::<Vec<_>>(), "alltoall of {count}: wrong data");
        // alltoallv: from a to b, (a + b + count) % 4 elements.
        let cnt = |a: Rank, b: Rank| ((a + b) as usize + count) % 4;
        let sc: Vec<Count> = (0..n).map(|b| cnt(me, b) as Count).collect();
        let rc: Vec<Count> = (0..n).map(|a| cnt(a, me) as Count).collect();
        let (sd, rd) = (disp(&sc), disp(&rc));
        let vblock = |from: Rank, to: Rank| -> Vec<u64> {
            (0..cnt(from, to)).map(|i| val(from, i) ^ (to as u64) << 40).collect()
        };
        let sendv: Vec<u64> = (0..n).flat_map(|b| vblock(me, b)).collect();
        let mut gotv = vec![0u64; rc.iter().sum::<Count>() as usize];
        w.all_to_all_varcount_into(&sendv, &sc, &sd, &mut gotv, &rc, &rd).map_err(e)?;
        let wantv: Vec<u64> = (0..n).flat_map(|a| vblock(a, me)).collect();
        check!(gotv == wantv, "alltoallv ({count}): wrong data");

        // Reduce-scatter-block, scan, exscan.
        let big = mine(me, count * nu);
        let mut part = vec![0u64; count];
        w.reduce_scatter_block_into(&big, &mut part, SystemOperation::Sum).map_err(e)?;
        let want: Vec<u64> = (0..count).map(|i| (0..n).map(|r| val(r, me as usize * count + i)).sum()).collect();
        check!(part == want, "reduce_scatter_block of {count}: wrong block");
        let mut sc_out = vec![0u64; count];
        w.scan_into(&mine(me, count), &mut sc_out, SystemOperation::Sum).map_err(e)?;
        check!(
            sc_out == (0..count).map(|i| (0..=me).map(|r| val(r, i)).sum()).collect::<Vec<u64>>(),
            "scan of {count}: wrong prefix"
        );
        let mut ex = vec![u64::MAX; count];
        w.exclusive_scan_into(&aff, &mut ao, &compose_op()).map_err(e)?;
        if me > 0 {
            let want: Vec<Affine> =
                (0..count).map(|i| (1..me).fold(affine(0, i), |acc, r| compose(acc, affine(r, i)))).collect();
            check!(ao == want, "non-commutative exscan of {count}: wrong prefix");
        }
        w.exclusive_scan_into(&mine(me, count), &mut ex, SystemOperation::Sum).map_err(e)?;
        if me > 0 {
            check!(
                ex == (0..count).map(|i| (0..me).map(|r| val(r, i)).sum()).collect::<Vec<u64>>(),
                "exscan of {count}: wrong prefix"
            );
        } else {
            check!(ex.iter().all(|v| *v == u64::MAX), "exscan changed rank 0's buffer");
        }
    }

    // Wrong use is an error, never a hang or a panic.
    let bad = w.process_at_rank(n);
    check!(bad.broadcast_into(&mut [0u8; 4][..]).is_err(), "broadcast from rank {n} of {n} was accepted");
    let mut small = [0u64; 1];
    check!(w.all_gather_into(&mine(me, 2)[..], &mut small[..]).is_err(), "allgather into a short buffer was accepted");
    check!(Operation::system::<f64>(SystemOperation::BitwiseAnd).is_err(), "BAND on f64 was accepted");
    Ok(())
}

/// Non-blocking collectives: several outstanding on one communicator,
/// completed in a different order than started (and in a different order
/// on even and odd ranks), through `wait`, a `test` loop with computation,
/// `wait_all` mixed with point-to-point, on a split communicator too.
pub fn nbc(u: &mpi::Universe, w: &SimpleCommunicator) -> R {
    nbc_on(u, w)?;
    let half =
        w.split_by_color(mpi::Color::with_value(w.rank() % 2)).map_err(e)?.ok_or("split gave no communicator")?;
    nbc_on(u, &half).map_err(|m| format!("on the split communicator: {m}"))?;
    if u.is_simulated() {
        println!("nbc: rank {} at {:.0} ps after 0 polls", w.rank(), u.wtime() * 1e12);
    }
    Ok(())
}

/// Displacements of blocks of `counts` packed back to back.
fn disp(counts: &[Count]) -> Vec<Count> {
    counts
        .iter()
        .scan(0, |s, x| {
            let d = *s;
            *s += x;
            Some(d)
        })
        .collect()
}

/// A broadcast whose counts disagree (rank 0 sends 8 elements, the others
/// expect 4) must end in an error on the receivers, in every progress mode:
/// never a hang, never a silently short result.
pub fn mismatch(w: &SimpleCommunicator) -> R {
    let mut buf = vec![7u64; if w.rank() == 0 { 8 } else { 4 }];
    match w.process_at_rank(0).broadcast_into(&mut buf[..]) {
        Ok(()) if w.rank() == 0 => Ok(()),
        Ok(()) => Err(format!("rank {}: a mismatched broadcast succeeded with {buf:?}", w.rank())),
        Err(err) => {
            println!("mismatch: rank {} refused: {err}", w.rank());
            Ok(())
        }
    }
}

/// Issue 30: collectives whose counts differ between ranks (rank 0
/// passes 8 elements, the others 4): an allreduce, an allgather and a
/// non-blocking allreduce. No rank may wait for ever: each either
/// completes or reports an error (the rank that finds the fault tells the
/// others), and a correct allreduce afterwards gives every rank the right
/// sum, so the communicator is still usable.
pub fn mismatch_all(w: &SimpleCommunicator) -> R {
    let me = w.rank();
    let n = if me == 0 { 8 } else { 4 };
    let report = |what: &str, r: mpi::Result<()>| match r {
        Ok(()) => println!("mismatch-all: rank {me} {what} completed"),
        Err(err) => println!("mismatch-all: rank {me} {what} refused: {err}"),
    };
    let send = vec![1u64; n];
    let mut sum = vec![0u64; n];
    report("allreduce", w.all_reduce_into(&send[..], &mut sum[..], SystemOperation::Sum));
    let mut all = vec![0u64; n * w.size() as usize];
    report("allgather", w.all_gather_into(&send[..], &mut all[..]));
    let r = w.immediate_all_reduce_into(&send[..], &mut sum[..], SystemOperation::Sum);
    report("iallreduce", r.and_then(|r| r.wait().map(drop)));
    let mut total = [0u64];
    w.all_reduce_into(&[1u64][..], &mut total[..], SystemOperation::Sum).map_err(e)?;
    check!(total[0] == w.size() as u64, "after the mismatches an allreduce gave {} on rank {me}", total[0]);
    Ok(())
}

/// Issue 30: processes that call different collectives at the same point
/// (rank 0 a broadcast, the others an allreduce; then the other way round)
/// used to succeed with a wrong sum. Now every process that waits for the
/// other kind's messages reports the mismatch, naming both calls, the
/// others learn it from its notice, and a correct allreduce afterwards
/// still gives the right sum.
pub fn kind_mismatch(w: &SimpleCommunicator) -> R {
    let me = w.rank();
    let report = |what: &str, r: mpi::Result<()>| match r {
        Ok(()) => println!("kind-mismatch: rank {me} {what} completed"),
        Err(err) => println!("kind-mismatch: rank {me} {what} refused: {err}"),
    };
    let mut buf = [me as u64 + 1; 4];
    let mut sum = [0u64; 4];
    for bcast_on_zero in [true, false] {
        let bcast = (me == 0) == bcast_on_zero;
        if bcast {
            report("bcast", w.process_at_rank(0).broadcast_into(&mut buf[..]));
        } else {
            report("allreduce", w.all_reduce_into(&buf[..], &mut sum[..], SystemOperation::Sum));
        }
    }
    let mut total = [0u64];
    w.all_reduce_into(&[1u64][..], &mut total[..], SystemOperation::Sum).map_err(e)?;
    check!(total[0] == w.size() as u64, "after the mismatches an allreduce gave {} on rank {me}", total[0]);
    Ok(())
}

/// A broadcast larger than the device memory an offloaded schedule may
/// use: with `DN_NBC_PROGRESS=offload` every rank gets an error naming the
/// shortage at once (it used to wait for memory that would never come).
pub fn huge(w: &SimpleCommunicator) -> R {
    let mut buf = vec![3u64; 8 << 20];
    match w.process_at_rank(w.size() - 1).broadcast_into(&mut buf[..]) {
        Ok(()) => Err(format!("rank {}: a 64 MiB offloaded broadcast did not report the shortage", w.rank())),
        Err(err) => {
            println!("huge: rank {} refused: {err}", w.rank());
            Ok(())
        }
    }
}

fn nbc_on(u: &mpi::Universe, w: &SimpleCommunicator) -> R {
    let (me, n) = (w.rank(), w.size());
    let nu = n as usize;
    {
        // A schedule of our own (seed 002's API): every rank sends its rank
        // to the next one around the ring and adds what it receives.
        use mpi::coll::schedule::{Builder, Slice, BUF_RECV, BUF_SEND};
        let mut b = Builder::new();
        let t = b.tmp(8);
        let s = b.send(((me + 1) % n) as u32, 0, Slice::new(BUF_SEND, 0, 8), &[]);
        let v = b.recv(((me + n - 1) % n) as u32, 0, Slice::new(t, 0, 8), &[]);
        b.calc(Slice::new(t, 0, 8), Slice::new(BUF_RECV, 0, 8), &[v, s]);
        let mut out = [100u64];
        let op = Operation::commutative(|a: &[u64], acc: &mut [u64]| {
            for (x, y) in acc.iter_mut().zip(a) {
                *x += y;
            }
        });
        let send = (me as u64).to_le_bytes();
        let r = w.immediate_schedule(b.build(), &send, out[..].as_bytes_mut(), Some(&op)).map_err(e)?;
        r.wait().map_err(e)?;
        check!(
            out[0] == 100 + ((me + n - 1) % n) as u64,
            "own schedule: {} instead of {}",
            out[0],
            100 + (me + n - 1) % n
        );
    }
    if n >= 4 {
        // Rank 2 forwards rank 0's broadcast to rank 3 (binomial tree), but
        // first makes a synchronous send to rank 3, which receives it only
        // after its broadcast completed: the blocking send must keep the
        // broadcast moving, or the two wait for each other for ever.
        let mut b = if me == 0 { mine(0, 64) } else { vec![0u64; 64] };
        let r = w.process_at_rank(0).immediate_broadcast_into(&mut b[..]).map_err(e)?;
        match me {
            2 => {
                w.process_at_rank(3).synchronous_send_with_tag(&[9u64][..], 33).map_err(e)?;
                r.wait().map_err(e)?;
            }
            3 => {
                r.wait().map_err(e)?;
                let (v, _) = w.process_at_rank(2).receive_vec_with_tag::<u64>(33).map_err(e)?;
                check!(v == [9], "synchronous message {v:?}");
            }
            _ => {
                r.wait().map_err(e)?;
            }
        }
        check!(b == mine(0, 64), "broadcast around a blocking send: wrong data");
    }
    for &count in &COUNTS {
        let root = n - 1;
        let src = mine(me, count);
        let mut b = if me == root { mine(root, count) } else { vec![0u64; count] };
        let mut sum = vec![0u64; count];
        let mut all = vec![0u64; count * nu];
        let mut red = vec![0u64; count];
        let aff: Vec<Affine> = (0..count).map(|i| affine(me, i)).collect();
        let mut sc = vec![[0u64; 2]; count];
        let rootp = w.process_at_rank(n / 2);
        let r1 = w.process_at_rank(root).immediate_broadcast_into(&mut b[..]).map_err(e)?;
        let r2 = w.immediate_all_reduce_into(&src, &mut sum, SystemOperation::Sum).map_err(e)?;
        let r3 = w.immediate_all_gather_into(&src[..], &mut all[..]).map_err(e)?;
        let r4 = w.immediate_barrier().map_err(e)?;
        let r5 = if me == n / 2 {
            rootp.immediate_reduce_into_root(&src, &mut red, SystemOperation::Max).map_err(e)?
        } else {
            rootp.immediate_reduce_into(&src, SystemOperation::Max).map_err(e)?
        };
        let r6 = w.immediate_scan_into(&aff, &mut sc, &compose_op()).map_err(e)?;
        // Complete in another order than started, differently on odd ranks.
        r4.wait().map_err(e)?;
        let mut r3 = r3;
        let mut polls = 0;
        loop {
            match r3.test().map_err(e)? {
                Ok(_) => break,
                Err(r) => {
                    r3 = r;
                    polls += 1;
                    check!(polls < 10_000_000, "immediate all_gather never completed under test");
                    u.compute(200.0).map_err(e)?;
                }
            }
        }
        if me % 2 == 0 {
            r1.wait().map_err(e)?;
            r2.wait().map_err(e)?;
        } else {
            r2.wait().map_err(e)?;
            r1.wait().map_err(e)?;
        }
        // Point-to-point and collective requests in one wait_all.
        let next = (me + 1) % n;
        let prev = (me + n - 1) % n;
        let token = [me as u64 + 100];
        let mut got = [0u64];
        mpi::request::scope(|s| -> R {
            let reqs = vec![
                r6,
                w.process_at_rank(next).immediate_send(s, &token[..]).map_err(e)?,
                w.process_at_rank(prev).immediate_receive_into(s, &mut got[..]).map_err(e)?,
                r5,
            ];
            mpi::request::wait_all(reqs).map_err(e)?;
            Ok(())
        })?;
        check!(got[0] == prev as u64 + 100, "ring token {} instead of {}", got[0], prev + 100);
        check!(b == mine(root, count), "ibcast of {count}: wrong data");
        check!(
            sum == (0..count).map(|i| (0..n).map(|r| val(r, i)).sum()).collect::<Vec<u64>>(),
            "iallreduce of {count}: wrong result"
        );
        check!(all == (0..n).flat_map(|r| mine(r, count)).collect::<Vec<_>>(), "iallgather of {count}: wrong data");
        if me == n / 2 {
            check!(
                red == (0..count).map(|i| (0..n).map(|r| val(r, i)).max().unwrap_or(0)).collect::<Vec<u64>>(),
                "ireduce of {count}: wrong result"
            );
        }
        let want: Vec<Affine> =
            (0..count).map(|i| (1..=me).fold(affine(0, i), |acc, r| compose(acc, affine(r, i)))).collect();
        check!(sc == want, "non-commutative iscan of {count}: wrong prefix");

        // The other non-blocking collectives, completed in reverse order.
        let mut ex = vec![u64::MAX; count];
        let big = mine(me, count * nu);
        let mut part = vec![0u64; count];
        let vc: Vec<Count> = (0..n).map(|r| ((r as usize + count) % 3) as Count).collect();
        let vd = disp(&vc);
        let own = mine(me, vc[me as usize] as usize);
        let mut allv = vec![0u64; vc.iter().sum::<Count>() as usize];
        let cnt = |a: Rank, b: Rank| ((a * 2 + b) as usize + count) % 3;
        let sc2: Vec<Count> = (0..n).map(|b| cnt(me, b) as Count).collect();
        let rc2: Vec<Count> = (0..n).map(|a| cnt(a, me) as Count).collect();
        let (sd2, rd2) = (disp(&sc2), disp(&rc2));
        let vblock = |from: Rank, to: Rank| -> Vec<u64> {
            (0..cnt(from, to)).map(|i| val(from, i) ^ ((to as u64) << 33)).collect()
        };
        let sendv: Vec<u64> = (0..n).flat_map(|b| vblock(me, b)).collect();
        let mut gotv = vec![0u64; rc2.iter().sum::<Count>() as usize];
        let mut reqs = vec![
            w.immediate_exclusive_scan_into(&mine(me, count), &mut ex, SystemOperation::Sum).map_err(e)?,
            w.immediate_reduce_scatter_block_into(&big, &mut part, SystemOperation::Sum).map_err(e)?,
            w.immediate_all_gather_varcount_into(&own[..], &mut allv, &vc, &vd).map_err(e)?,
            w.immediate_all_to_all_varcount_into(&sendv, &sc2, &sd2, &mut gotv, &rc2, &rd2).map_err(e)?,
        ];
        while let Some(last) = reqs.pop() {
            last.wait().map_err(e)?;
        }
        drop(reqs);
        if me > 0 {
            let want: Vec<u64> = (0..count).map(|i| (0..me).map(|r| val(r, i)).sum()).collect();
            check!(ex == want, "iexscan of {count}: wrong prefix");
        } else {
            check!(ex.iter().all(|v| *v == u64::MAX), "iexscan changed rank 0's buffer");
        }
        let want: Vec<u64> = (0..count).map(|i| (0..n).map(|r| val(r, me as usize * count + i)).sum()).collect();
        check!(part == want, "ireduce_scatter_block of {count}: wrong block");
        let want: Vec<u64> = (0..n).flat_map(|r| mine(r, vc[r as usize] as usize)).collect();
        check!(allv == want, "iallgatherv: wrong data");
        check!(gotv == (0..n).flat_map(|a| vblock(a, me)).collect::<Vec<_>>(), "ialltoallv: wrong data");

        // Non-blocking gatherv and scatterv with a root in the middle.
        let rootp = w.process_at_rank(n / 2);
        let total = vc.iter().sum::<Count>() as usize;
        let flat: Vec<u64> = (0..n).flat_map(|r| mine(r, vc[r as usize] as usize)).collect();
        let mut gv = vec![0u64; total];
        let mut sv = vec![0u64; vc[me as usize] as usize];
        if me == n / 2 {
            let g = rootp.immediate_gather_varcount_into_root(&own[..], &mut gv, &vc, &vd).map_err(e)?;
            let sc = rootp.immediate_scatter_varcount_into_root(&flat, &vc, &vd, &mut sv[..]).map_err(e)?;
            mpi::request::wait_all(vec![sc, g]).map_err(e)?;
            check!(gv == flat, "igatherv to {}: wrong data", n / 2);
        } else {
            let g = rootp.immediate_gather_varcount_into(&own[..]).map_err(e)?;
            let sc = rootp.immediate_scatter_varcount_into(&mut sv[..]).map_err(e)?;
            mpi::request::wait_all(vec![sc, g]).map_err(e)?;
        }
        check!(sv == own, "iscatterv from {}: wrong block on {me}", n / 2);
    }
    Ok(())
}

/// Issue 9, `DN_NBC_PROGRESS=thread` on a real network: collectives
/// progress while the application computes outside MPI.
///
/// Rank 0 starts a 1 MiB broadcast rooted at the last rank and a 256 KiB
/// all-reduce, then computes without calling MPI until every other rank
/// reports (through a file in the job directory) that both finished. The
/// others cannot finish without rank 0's part: it must answer the root's
/// rendezvous and contribute to the reduction. So with a progress thread
/// rank 0 sees the reports, and without one (manual mode) it never does and
/// gives up after `limit` seconds: the failure this test exists to catch,
/// not a speed goal. `limit` is a bound against hanging, not a timing.
pub fn overlap(u: &mpi::Universe, w: &SimpleCommunicator, limit: f64) -> R {
    let (me, n) = (w.rank(), w.size());
    check!(n >= 2, "overlap needs 2 ranks or more");
    let dir = std::env::var(mpi::ENV_JOB_DIR).map_err(|_| "overlap runs under dnrun (no job directory)")?;
    let done = |r: Rank| std::path::Path::new(&dir).join(format!("overlap-done.{r}"));
    let root = n - 1;
    let len = 1 << 20;
    let pattern = |i: usize| (i * 7 % 251) as u8;
    let mut big: Vec<u8> = if me == root { (0..len).map(pattern).collect() } else { vec![0; len] };
    let mine: Vec<f64> = (0..32 * 1024).map(|i| (me as f64 + 1.0) * i as f64).collect();
    let mut sum = vec![0f64; mine.len()];
    // A point-to-point rendezvous too: rank 1 sends 256 KiB into a buffer
    // rank 0 lent before computing; the thread lands it there.
    let p2p_len = 256 << 10;
    let mut landing = vec![0u8; if me == 0 { p2p_len } else { 0 }];
    mpi::request::scope(|s| -> R {
        let rr = if me == 0 {
            Some(w.process_at_rank(1).immediate_receive_into_with_tag(s, &mut landing[..], 77).map_err(e)?)
        } else {
            None
        };
        let rb = w.process_at_rank(root).immediate_broadcast_into(&mut big[..]).map_err(e)?;
        let rs = w.immediate_all_reduce_into(&mine[..], &mut sum[..], SystemOperation::Sum).map_err(e)?;
        if me == 0 {
            // Compute outside MPI: no MPI call until every other rank is done.
            let start = std::time::Instant::now();
            while !(1..n).all(|r| done(r).exists()) {
                if start.elapsed().as_secs_f64() > limit {
                    return Err(format!(
                        "overlap: the collectives did not progress while rank 0 computed outside MPI for {limit} s \
                         (no progress thread?)"
                    ));
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        rb.wait().map_err(e)?;
        rs.wait().map_err(e)?;
        if me == 1 {
            let data: Vec<u8> = (0..p2p_len).map(|i| pattern(i + 3)).collect();
            w.process_at_rank(0).send_with_tag(&data[..], 77).map_err(e)?;
        }
        if me != 0 {
            std::fs::write(done(me), b"").map_err(e)?;
        }
        if let Some(rr) = rr {
            let st = rr.wait().map_err(e)?;
            let got = st.count::<u8>().map_err(e)?;
            check!(got == p2p_len, "overlap: rank 0 received {got} bytes");
        }
        Ok(())
    })?;
    for (i, &b) in big.iter().enumerate() {
        check!(b == pattern(i), "overlap: rank {me}: broadcast byte {i} is {b}");
    }
    for (i, &b) in landing.iter().enumerate() {
        check!(b == pattern(i + 3), "overlap: rank 0: received byte {i} is {b}");
    }
    let ranks = (n * (n + 1) / 2) as f64;
    for (i, &s) in sum.iter().enumerate() {
        check!(s == ranks * i as f64, "overlap: rank {me}: sum element {i} is {s}");
    }
    if me == 0 {
        let (passes, useful, failed) = u.progress_thread_stats().unwrap_or((0, 0, None));
        println!("overlap: OK; progress thread: {passes} passes, {useful} moved something, failed: {failed:?}");
    }
    Ok(())
}

/// Persistent collectives (MPI 4.1 §6.13) from Rust: a barrier, a
/// broadcast from the last rank, an allreduce, an allgather and an
/// all-to-all, each initialized once and started several times with new
/// data, odd ranks starting them in the opposite order from even ranks
/// (they match in the order of their initializations), with an ordinary
/// non-blocking allreduce between, and wrong sizes refused.
pub fn persistent(w: &SimpleCommunicator) -> R {
    let (n, me) = (w.size(), w.rank());
    let last = n - 1;
    let mut barrier = w.barrier_init().map_err(e)?;
    let mut bcast = w.process_at_rank(last).broadcast_init(3 * 8).map_err(e)?;
    let mut sum = w.all_reduce_init::<i64, _>(2, SystemOperation::sum()).map_err(e)?;
    let mut gather = w.all_gather_init(4).map_err(e)?;
    let mut a2a = w.all_to_all_init(4).map_err(e)?;
    for round in 0..3i64 {
        let mut b = if me == last { [round, 10 + round, 20 + round] } else { [-1; 3] };
        let x = [me as i64 + round, 1];
        let mut s = [0i64; 2];
        let mine = (me as u32 * 100 + round as u32).to_le_bytes();
        let mut all = vec![0u8; 4 * n as usize];
        let out: Vec<u32> = (0..n).map(|to| (me * 1000 + to) as u32 + round as u32).collect();
        let mut got = vec![0u32; n as usize];
        let mut plain = [0i64; 1];
        {
            let (mut rb, mut rs, mut rg, mut ra, rp, rr);
            if me % 2 == 1 {
                rr = barrier.start().map_err(e)?;
                rb = Some(bcast.start(&mut b[..]).map_err(e)?);
                rs = Some(sum.start(&x, &mut s).map_err(e)?);
                rp =
                    w.immediate_all_reduce_into(&[me as i64][..], &mut plain[..], SystemOperation::max()).map_err(e)?;
                rg = Some(gather.start(&mine[..], &mut all[..]).map_err(e)?);
                ra = Some(a2a.start(&out[..], &mut got[..]).map_err(e)?);
            } else {
                rp =
                    w.immediate_all_reduce_into(&[me as i64][..], &mut plain[..], SystemOperation::max()).map_err(e)?;
                ra = Some(a2a.start(&out[..], &mut got[..]).map_err(e)?);
                rg = Some(gather.start(&mine[..], &mut all[..]).map_err(e)?);
                rs = Some(sum.start(&x, &mut s).map_err(e)?);
                rb = Some(bcast.start(&mut b[..]).map_err(e)?);
                rr = barrier.start().map_err(e)?;
            }
            for r in [rb.take(), rs.take(), rg.take(), ra.take()].into_iter().flatten() {
                r.wait().map_err(e)?;
            }
            rp.wait().map_err(e)?;
            rr.wait().map_err(e)?;
        }
        check!(b == [round, 10 + round, 20 + round], "round {round}: persistent bcast gave {b:?}");
        let want = (0..n as i64).map(|r| r + round).sum::<i64>();
        check!(s == [want, n as i64], "round {round}: persistent allreduce gave {s:?}, not [{want}, {n}]");
        for r in 0..n as usize {
            let v = u32::from_le_bytes(all[4 * r..4 * r + 4].try_into().map_err(e)?);
            check!(v == r as u32 * 100 + round as u32, "round {round}: allgather block {r} is {v}");
            check!(
                got[r] == (r as i32 * 1000 + me) as u32 + round as u32,
                "round {round}: all-to-all from {r}: {}",
                got[r]
            );
        }
        check!(plain == [last as i64], "round {round}: the ordinary allreduce between gave {plain:?}");
    }
    // A start with other sizes than the initialization's is refused, and
    // refused alike everywhere (nothing is started).
    let mut short = [0i64; 1];
    check!(sum.start(&[1, 2], &mut short).is_err(), "a persistent allreduce started on 1 element of 2");
    check!(
        gather.start(&[0u8; 3][..], &mut vec![0u8; 4 * n as usize][..]).is_err(),
        "an allgather started on 3 bytes of 4"
    );
    Ok(())
}
