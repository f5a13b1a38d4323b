//! The null process from Rust (MPI 4.1 §3.10, `mpi::PROC_NULL`): a send
//! to it and a receive from it complete at once and move nothing, in
//! every form (blocking, non-blocking, typed, into a buffer, as a vector,
//! and probes); a tag is still checked; a receive reports source
//! `PROC_NULL`, any tag and no bytes; its requests complete beside real
//! ones and a cancel of one changes nothing; and, on the simulator, none
//! of it is charged to simulated time.

use mpi::request::wait_all;
use mpi::traits::*;
use mpi::{MpiError, SimpleCommunicator, Status, Universe, ANY_TAG, PROC_NULL};

use crate::{e, R};

fn is_null(st: &Status, what: &str) -> R {
    check!(
        st.source_rank() == PROC_NULL && st.tag() == ANY_TAG && st.bytes() == 0 && !st.is_cancelled(),
        "{what}: not the null process's status: {st:?}"
    );
    Ok(())
}

pub fn proc_null(u: &Universe, w: &SimpleCommunicator) -> R {
    let me = w.rank();
    let null = w.process_at_rank(PROC_NULL);
    // Simulated time in picoseconds: what a call of `wtime` itself costs,
    // then what the null process's calls add to it.
    let ps = || (u.wtime() * 1e12).round() as i64;
    let (t0, t1) = (ps(), ps());
    null.send(&[1u32, 2, 3][..]).map_err(e)?;
    null.send_with_tag(&7i64, 9).map_err(e)?;
    let (v, st) = null.receive::<i64>().map_err(e)?;
    check!(v == 0, "a value from the null process: {v}");
    is_null(&st, "receive")?;
    let mut buf = [5u8; 4];
    is_null(&null.receive_into_with_tag(&mut buf[..], 3).map_err(e)?, "receive_into")?;
    check!(buf == [5u8; 4], "a receive from the null process wrote {buf:?}");
    let (v, st) = null.receive_vec::<u16>().map_err(e)?;
    check!(v.is_empty(), "a vector from the null process: {v:?}");
    is_null(&st, "receive_vec")?;
    is_null(&null.probe().map_err(e)?, "probe")?;
    match null.immediate_probe_with_tag(4).map_err(e)? {
        Some(st) => is_null(&st, "immediate_probe")?,
        None => return Err("immediate_probe of the null process found nothing".into()),
    }
    let t2 = ps();
    // (Over a network, `wtime` is the wall clock.)
    check!(
        !u.is_simulated() || t2 - t1 == t1 - t0,
        "the null process's calls took {} ps of simulated time",
        (t2 - t1) - (t1 - t0)
    );
    // A bad tag is refused all the same.
    match null.send_with_tag(&1u8, -5) {
        Err(MpiError::InvalidTag(-5)) => {}
        other => return Err(format!("a negative tag to the null process gave {other:?}")),
    }
    // Partitioned communication with it is refused from Rust (documented).
    let part: &'static mut [u8] = Box::leak(vec![0u8; 4].into_boxed_slice());
    match mpi::partitioned::PartitionedSend::init(mpi::request::StaticScope, &null, part, 2, 0) {
        Err(MpiError::InvalidRank { rank: PROC_NULL, .. }) => {}
        Err(other) => return Err(format!("a partitioned send to the null process gave {other}")),
        Ok(_) => return Err("a partitioned send to the null process was accepted".into()),
    }
    // Non-blocking: complete at once, beside real requests.
    let to = w.process_at_rank((me + 1) % w.size());
    let from = w.process_at_rank((me + w.size() - 1) % w.size());
    let (mut got, mut nothing) = ([0i32; 1], [9i32; 2]);
    let mine = [me];
    mpi::request::scope(|sc| -> R {
        let r = null.immediate_receive_into_with_tag(sc, &mut nothing[..], 6).map_err(e)?;
        let st = match r.test().map_err(e)? {
            Ok(st) => st,
            Err(_) => return Err("a receive from the null process is not complete at once".into()),
        };
        is_null(&st, "immediate receive, tested")?;
        let s = null.immediate_send_with_tag(sc, &mine[..], 6).map_err(e)?;
        s.cancel().map_err(e)?;
        let st = s.wait().map_err(e)?;
        check!(!st.is_cancelled(), "a cancelled send to the null process says cancelled");
        let list = vec![
            from.immediate_receive_into_with_tag(sc, &mut got[..], 6).map_err(e)?,
            null.immediate_send_with_tag(sc, &mine[..], 6).map_err(e)?,
            to.immediate_send_with_tag(sc, &mine[..], 6).map_err(e)?,
        ];
        let sts = wait_all(list).map_err(e)?;
        is_null(&sts[1], "immediate send in wait_all")?;
        check!(sts[0].source_rank() == from.rank(), "the real receive beside it: {:?}", sts[0]);
        Ok(())
    })?;
    check!(got[0] == from.rank() && nothing == [9, 9], "data: {got:?} {nothing:?}");
    w.barrier().map_err(e)?;
    Ok(())
}
