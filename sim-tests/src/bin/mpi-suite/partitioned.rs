//! Partitioned communication from Rust (MPI 4.1 chapter 4,
//! `mpi::partitioned`): every rank sends to the next and receives from the
//! previous, on any number of ranks.

use mpi::partitioned::{PartitionedRecv, PartitionedSend};
use mpi::traits::*;
use mpi::{MpiError, PartitionError, SimpleCommunicator};

use crate::{e, R};

const TAG: i32 = 7;

fn value(from: i32, req: u32, round: u32, i: usize) -> u32 {
    (from as u32) << 20 | req << 16 | round << 8 | i as u32
}

fn is<T>(r: mpi::Result<T>, what: &str, want: impl Fn(&PartitionError) -> bool) -> R {
    match r {
        Err(MpiError::Partition(p)) if want(&p) => Ok(()),
        Err(other) => Err(format!("{what}: refused with another error: {other}")),
        Ok(_) => Err(format!("{what}: not refused")),
    }
}

/// Fill partition `p` (of 8 elements) of the first send, as a program
/// computes it between the start and the partition's `ready`.
fn fill<'a, Sc: mpi::request::Scope<'a> + Copy>(
    s: &mut PartitionedSend<'a, Sc, u32>,
    me: i32,
    round: u32,
    p: usize,
) -> R {
    let part = s.partition_mut(p).map_err(e)?;
    check!(part.len() == 8, "partition {p} has {} elements", part.len());
    for (k, v) in part.iter_mut().enumerate() {
        *v = value(me, 0, round, p * 8 + k);
    }
    Ok(())
}

pub fn partitioned(w: &SimpleCommunicator) -> R {
    let (n, me) = (w.size(), w.rank());
    let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
    let mut first_in = [0u32; 32];
    let mut second_in = [0u32; 6];
    for round in 0..3u32 {
        // The first buffer is filled partition by partition after the
        // start, as a program computes it; the second before.
        let mut first_out = vec![0u32; 32];
        let mut second_out: Vec<u32> = (0..6).map(|i| value(me, 1, round, i)).collect();
        mpi::request::scope(|sc| -> R {
            // Two sends with one tag to one peer: they match the receives
            // in the order of their initializations, whatever the order of
            // their starts (§4.2.2).
            let to = w.process_at_rank(next);
            let from = w.process_at_rank(prev);
            let mut s0 = PartitionedSend::init(sc, &to, &mut first_out, 4, TAG).map_err(e)?;
            let mut s1 = PartitionedSend::init(sc, &to, &mut second_out, 2, TAG).map_err(e)?;
            let mut r0 = PartitionedRecv::init(sc, &from, &mut first_in[..], 4, TAG).map_err(e)?;
            let mut r1 = PartitionedRecv::init(sc, &from, &mut second_in[..], 3, TAG).map_err(e)?;
            check!(s0.partitions() == 4 && r1.partitions() == 3, "partitions as given");
            r1.start().map_err(e)?;
            r0.start().map_err(e)?;
            is(r0.start(), "a second start of an active receive", |p| *p == PartitionError::StillActive)?;
            check!(r0.data().is_err(), "the data of a receive under way are not lent out");
            is(s1.ready(0), "a partition marked before the start", |p| *p == PartitionError::NotStarted)?;
            s1.start().map_err(e)?;
            s0.start().map_err(e)?;
            is(s0.start(), "a second start while partitions wait", |p| *p == PartitionError::StillActive)?;
            is(s0.wait(), "a wait with partitions not ready", |p| matches!(p, PartitionError::NeverReady { .. }))?;
            // A refused list marks nothing: partition 1 is free after it.
            is(s0.ready_list(&[1, 1]), "a partition twice in a list", |p| {
                *p == PartitionError::MarkedTwice { partition: 1 }
            })?;
            is(s0.ready_list(&[2, 9]), "a partition that does not exist", |p| {
                *p == PartitionError::NoSuchPartition { partition: 9, partitions: 4 }
            })?;
            is(s0.ready_range(3, 2), "a range the wrong way round", |p| {
                *p == PartitionError::Range { low: 3, high: 2 }
            })?;
            is(r0.arrived(4), "a partition the receive lacks", |p| {
                matches!(p, PartitionError::NoSuchPartition { .. })
            })?;
            fill(&mut s0, me, round, 3)?;
            s0.ready(3).map_err(e)?;
            is(s0.ready(3), "a partition marked twice", |p| *p == PartitionError::MarkedTwice { partition: 3 })?;
            is(s0.partition_mut(3), "a ready partition lent to write", |p| {
                *p == PartitionError::Ready { partition: 3 }
            })?;
            fill(&mut s0, me, round, 1)?;
            fill(&mut s0, me, round, 0)?;
            s0.ready_list(&[1, 0]).map_err(e)?;
            check!(s0.test().map_err(e)?.is_none(), "a send with a partition not ready is not done");
            fill(&mut s0, me, round, 2)?;
            s0.ready(2).map_err(e)?;
            is(s0.partition_mut(0), "a partition of a message under way", |p| {
                *p == PartitionError::Ready { partition: 0 }
            })?;
            s1.ready_range(0, 1).map_err(e)?;
            // Poll one partition until the message is in.
            let mut polls = 0u64;
            while !r0.arrived(2).map_err(e)? {
                polls += 1;
                check!(polls < 10_000_000, "partition 2 never arrived");
            }
            let st = r0.wait().map_err(e)?;
            check!(st.source_rank() == prev && st.tag() == TAG && st.bytes() == 128, "first status {st:?}");
            let st = r1.wait().map_err(e)?;
            check!(st.source_rank() == prev && st.tag() == TAG && st.bytes() == 24, "second status {st:?}");
            s0.wait().map_err(e)?;
            s1.wait().map_err(e)?;
            check!(r0.arrived(0).map_err(e)?, "an inactive receive's partitions have arrived");
            let want: Vec<u32> = (0..32).map(|i| value(prev, 0, round, i)).collect();
            check!(r0.data().map_err(e)? == want, "round {round}: first buffer {:?}", r0.data());
            let want: Vec<u32> = (0..6).map(|i| value(prev, 1, round, i)).collect();
            check!(r1.data().map_err(e)? == want, "round {round}: second buffer");
            Ok(())
        })?;
    }
    // A receive forgotten while under way: its scope's end waits for it,
    // and the buffer holds the message after the scope.
    let mut lost = vec![0u64; 4];
    let mut out: Vec<u64> = (0..4).map(|i| (me as u64) << 8 | i).collect();
    mpi::request::scope(|sc| -> R {
        let mut r = PartitionedRecv::init(sc, &w.process_at_rank(prev), &mut lost[..], 2, TAG + 1).map_err(e)?;
        r.start().map_err(e)?;
        std::mem::forget(r);
        let mut s = PartitionedSend::init(sc, &w.process_at_rank(next), &mut out, 2, TAG + 1).map_err(e)?;
        s.start().map_err(e)?;
        s.ready_range(0, 1).map_err(e)?;
        s.wait().map_err(e)?;
        Ok(())
    })?;
    let want: Vec<u64> = (0..4).map(|i| (prev as u64) << 8 | i).collect();
    check!(lost == want, "the forgotten receive's buffer after its scope: {lost:?}");
    // A buffer that does not cut into its partitions, and a tag too large.
    let five: &'static mut [u8] = Box::leak(vec![1u8; 5].into_boxed_slice());
    let none: &'static mut [u8] = Box::leak(Vec::new().into_boxed_slice());
    let uneven = PartitionedSend::init(mpi::request::StaticScope, &w.process_at_rank(next), five, 2, 0);
    check!(
        matches!(uneven, Err(MpiError::Partition(PartitionError::Uneven { len: 5, partitions: 2 }))),
        "5 elements into 2 partitions refused"
    );
    let big = mpi::partitioned::PARTITIONED_TAG_UB + 1;
    check!(
        matches!(
            PartitionedSend::init(mpi::request::StaticScope, &w.process_at_rank(next), none, 0, big),
            Err(MpiError::InvalidTag(_))
        ),
        "tag {big} refused"
    );
    w.barrier().map_err(e)?;
    Ok(())
}
