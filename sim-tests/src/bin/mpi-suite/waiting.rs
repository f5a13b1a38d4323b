//! Cases about waiting: an idle rank's CPU time, a quiet peer, one call
//! that waits on many requests, and the polling loops (`iprobe`, `test`,
//! `testall`, `MPI_Wtime`, computation) whose simulated time is checked.

use super::*;

/// CPU seconds this process has used (user + system).
fn cpu_seconds() -> R<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").map_err(e)?;
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks: f64 = fields.get(11).and_then(|u| u.parse::<f64>().ok()).unwrap_or(0.0)
        + fields.get(12).and_then(|s| s.parse::<f64>().ok()).unwrap_or(0.0);
    Ok(ticks / 100.0)
}

/// Rank 0 sleeps 5 s (wall) before sending; rank 1 waits in a blocking
/// receive and reports the CPU time the wait cost (a measurement, not a check).
pub(super) fn idle(w: &SimpleCommunicator) -> R {
    if w.size() < 2 || w.rank() > 1 {
        return Ok(());
    }
    if w.rank() == 0 {
        std::thread::sleep(std::time::Duration::from_secs(5));
        w.process_at_rank(1).send(&1u8).map_err(e)?;
    } else {
        let before = cpu_seconds()?;
        let (_, _) = w.process_at_rank(0).receive::<u8>().map_err(e)?;
        println!("idle: a 5 s blocking receive used {:.2} s of CPU", cpu_seconds()? - before);
    }
    Ok(())
}

/// Issue 30: the last rank computes (sleeps) for `secs` without calling
/// MPI, then sends each other rank a message; the others only wait for it
/// (`send_first`: each sends the last rank a message first, which it
/// receives after its computation). Over UDP or DPDK with a peer timeout
/// shorter than `secs`, the job must still succeed (the quiet rank answers
/// its peers while it computes), and with the last rank hung
/// (`DN_UDP_FAULTS=blackhole=N-1`) every waiting rank must end with an
/// error naming it.
pub(super) fn quiet_peer(w: &SimpleCommunicator, secs: f64, send_first: bool) -> R {
    let last = w.size() - 1;
    if last == 0 {
        return Ok(());
    }
    if w.rank() == last {
        std::thread::sleep(std::time::Duration::from_secs_f64(secs));
        for r in 0..last {
            if send_first {
                let (got, _) = w.process_at_rank(r).receive::<u32>().map_err(e)?;
                check!(got == r as u32 + 1, "quiet-peer: {got} from rank {r}");
            }
            w.process_at_rank(r).send(&(r as u32 + 100)).map_err(e)?;
        }
    } else {
        if send_first {
            w.process_at_rank(last).send(&(w.rank() as u32 + 1)).map_err(e)?;
        }
        let (got, _) = w.process_at_rank(last).receive::<u32>().map_err(e)?;
        check!(got == w.rank() as u32 + 100, "quiet-peer: {got} from the last rank");
    }
    Ok(())
}

/// Most polls a polling test allows before it calls the simulation stuck.
const POLL_LIMIT: u64 = 2_000_000;

/// How long (simulated ns) the sender of a polling test computes first.
const POLL_DELAY_NS: f64 = 50_000.0;

/// Print this rank's simulated clock, for run-to-run comparison.
fn report_time(u: &Universe, w: &SimpleCommunicator, what: &str, polls: u64) {
    if u.is_simulated() {
        println!("{what}: rank {} at {:.0} ps after {polls} polls", w.rank(), u.wtime() * 1e12);
    }
}

/// The sender side of the polling tests: compute, then send 5 bytes with tag 12.
fn late_send(u: &Universe, w: &SimpleCommunicator, to: Rank) -> R {
    u.compute(POLL_DELAY_NS).map_err(e)?;
    w.process_at_rank(to).send_with_tag(&b"hello"[..], 12).map_err(e)
}

/// Derived datatypes from Rust (MPI 4.1 §5.1): each rank sends column
/// `rank % 4` of a 4x4 matrix of i32 (a vector: 4 blocks of 1, stride 4)
/// to the next rank, which receives it into every other element of a row
/// of 8 (stride 2); the elements in between keep their values. A view
/// that reaches past its buffer is refused before anything moves.
pub(super) fn views(w: &SimpleCommunicator) -> R {
    use mpi::datatype::{MutView, UserDatatype, View};
    let (rank, size) = (w.rank(), w.size());
    let int = UserDatatype::of::<i32>();
    let column = UserDatatype::vector(4, 1, 4, &int).map_err(e)?;
    let spread = UserDatatype::vector(4, 1, 2, &int).map_err(e)?;
    let matrix: Vec<i32> = (0..16).map(|k| rank * 100 + k).collect();
    let col = (rank % 4) as usize;
    let bytes: &[u8] = matrix.as_bytes();
    let send = View::new(&bytes[col * 4..], 1, &column).map_err(e)?;
    let mut row = vec![-1i32; 8];
    let (next, prev) = ((rank + 1) % size, (rank + size - 1) % size);
    // 16 bytes go eagerly: everyone sends, then receives.
    w.process_at_rank(next).send_view(&send, 5).map_err(e)?;
    let mut view = MutView::new(row.as_bytes_mut(), 1, &spread).map_err(e)?;
    let st = w.process_at_rank(prev).receive_into_view(&mut view, 5).map_err(e)?;
    check!(st.bytes() == 16, "received {} bytes", st.bytes());
    let pc = prev % 4;
    let want: Vec<i32> = (0..8).map(|k| if k % 2 == 0 { prev * 100 + pc + 4 * (k / 2) } else { -1 }).collect();
    check!(row == want, "rank {rank} received {row:?}, want {want:?}");
    check!(View::new(&bytes[..51], 1, &column).is_err(), "a view past its buffer (52 bytes needed) was accepted");
    check!(View::new(&bytes[..52], 1, &column).is_ok(), "a view that fits was refused");
    check!(MutView::new(&mut [0u8; 27], 1, &spread).is_err(), "a receive view past its buffer was accepted");
    Ok(())
}

/// Every completion call is one MPI call however long it waits (MPI 4.1
/// §3.7.5; the engine's wait idles, it does not poll): rank 0 waits for
/// rank 1's late message with `wait`, `wait_any`, `wait_some`, `wait_all`
/// and the settle the C ABI's `MPI_Wait*` calls, and each is charged
/// exactly one `MpiCall`; a `test_some` loop is charged one per poll.
pub(super) fn one_call_waits(u: &Universe, w: &SimpleCommunicator) -> R {
    if w.size() < 2 || w.rank() > 1 || !u.is_simulated() {
        return Ok(());
    }
    const WAYS: [&str; 6] = ["wait", "wait_any", "wait_some", "wait_all", "settle", "test_some"];
    if w.rank() == 1 {
        for _ in WAYS {
            late_send(u, w, 0)?;
        }
        return Ok(());
    }
    let calls = || -> R<u64> {
        let counts = u.with_engine(|e| e.cost_counts()).map_err(e)?.ok_or("no cost counts on the simulator")?;
        Ok(counts[adi::HostCost::MpiCall as usize])
    };
    for way in WAYS {
        let mut b = [0u8; 5];
        let (charged, polls) = mpi::request::scope(|s| -> R<(u64, u64)> {
            let r = w.process_at_rank(1).immediate_receive_into_with_tag(s, &mut b[..], 12).map_err(e)?;
            let before = calls()?;
            let mut polls = 1;
            match way {
                "wait" => drop(r.wait().map_err(e)?),
                "wait_any" => drop(mpi::request::wait_any(&mut vec![r]).map_err(e)?),
                "wait_some" => {
                    let done = mpi::request::wait_some(&mut vec![r]).map_err(e)?;
                    check!(done.len() == 1 && done[0].1.is_ok(), "wait_some completed {} requests", done.len());
                }
                "wait_all" => drop(mpi::request::wait_all(vec![r]).map_err(e)?),
                "settle" => {
                    let parts = [mpi::request::Part::Waiting(&r, Vec::new())];
                    let ended = mpi::request::settle(&parts, mpi::request::Need::One, true, "settle").map_err(e)?;
                    check!(ended == [true], "settle returned {ended:?}");
                    drop(parts);
                    r.finish().map_err(e)?;
                }
                _ => {
                    let mut rs = vec![r];
                    polls = 0;
                    while !rs.is_empty() {
                        polls += 1;
                        mpi::request::test_some(&mut rs).map_err(e)?;
                    }
                }
            }
            Ok((calls()? - before, polls))
        })?;
        check!(&b == b"hello", "{way}: received {b:?}");
        check!(charged == polls, "{way}: charged {charged} MPI calls for {polls} call(s)");
        check!(way != "test_some" || polls > 10, "test_some found the late message after {polls} polls");
        report_time(u, w, &format!("one-call-waits {way}"), polls);
    }
    Ok(())
}

/// Check that a poller saw the message after the sender's delay and not
/// absurdly later (simulated time must stay meaningful while it polls).
fn check_poll_time(u: &Universe, what: &str) -> R {
    if u.is_simulated() {
        let t = u.wtime() * 1e9;
        check!(t >= POLL_DELAY_NS, "{what}: found the message at {t:.0} ns, before it was sent");
        check!(t <= POLL_DELAY_NS + 20_000.0, "{what}: found the message at {t:.0} ns, long after it was sent");
    }
    Ok(())
}

/// After a polling loop saw the late message: check when, report the
/// simulated time, and receive it.
fn receive_polled(u: &Universe, w: &SimpleCommunicator, what: &str, polls: u64) -> R {
    check_poll_time(u, what)?;
    report_time(u, w, &format!("poll-{what}"), polls);
    let (v, _) = w.process_at_rank(1).receive_vec_with_tag::<u8>(12).map_err(e)?;
    check!(v == b"hello", "received {v:?}");
    Ok(())
}

/// The most common MPI idiom: loop on `MPI_Iprobe` until a message is there.
pub(super) fn poll_iprobe(u: &Universe, w: &SimpleCommunicator) -> R {
    if w.size() < 2 || w.rank() > 1 {
        return Ok(());
    }
    if w.rank() == 1 {
        return late_send(u, w, 0);
    }
    let mut polls = 0u64;
    let st = loop {
        polls += 1;
        check!(polls < POLL_LIMIT, "iprobe found nothing after {polls} polls");
        if let Some(st) = w.process_at_rank(1).immediate_probe_with_tag(12).map_err(e)? {
            break st;
        }
    };
    check!(st.source_rank() == 1 && st.tag() == 12 && st.bytes() == 5, "iprobe status {st:?}");
    receive_polled(u, w, "iprobe", polls)
}

/// Loop on `MPI_Test` of a posted receive.
pub(super) fn poll_test(u: &Universe, w: &SimpleCommunicator) -> R {
    if w.size() < 2 || w.rank() > 1 {
        return Ok(());
    }
    if w.rank() == 1 {
        return late_send(u, w, 0);
    }
    let mut buf = [0u8; 5];
    let (st, polls) = mpi::request::scope(|s| -> R<(mpi::Status, u64)> {
        let mut req = w.process_at_rank(1).immediate_receive_into_with_tag(s, &mut buf[..], 12).map_err(e)?;
        let mut polls = 0u64;
        loop {
            polls += 1;
            check!(polls < POLL_LIMIT, "test found nothing after {polls} polls");
            match req.test().map_err(e)? {
                Ok(st) => return Ok((st, polls)),
                Err(r) => req = r,
            }
        }
    })?;
    check!(st.source_rank() == 1 && st.bytes() == 5, "test status {st:?}");
    check_poll_time(u, "test")?;
    report_time(u, w, "poll-test", polls);
    check!(&buf == b"hello", "received {buf:?}");
    Ok(())
}

/// Loop on `MPI_Testall` of receives from every other rank.
pub(super) fn poll_testall(u: &Universe, w: &SimpleCommunicator) -> R {
    let (me, n) = (w.rank(), w.size());
    if me != 0 {
        return late_send(u, w, 0);
    }
    let mut bufs = vec![[0u8; 5]; n as usize - 1];
    let (sts, polls) = mpi::request::scope(|s| -> R<(Vec<mpi::Status>, u64)> {
        let mut reqs = Vec::new();
        for (i, b) in bufs.iter_mut().enumerate() {
            reqs.push(w.process_at_rank(i as Rank + 1).immediate_receive_into_with_tag(s, &mut b[..], 12).map_err(e)?);
        }
        let mut polls = 0u64;
        loop {
            polls += 1;
            check!(polls < POLL_LIMIT, "test_all found nothing after {polls} polls");
            match mpi::request::test_all(reqs).map_err(e)? {
                Ok(sts) => return Ok((sts, polls)),
                Err(r) => reqs = r,
            }
        }
    })?;
    check!(sts.len() == n as usize - 1, "test_all gave {} statuses", sts.len());
    check_poll_time(u, "test_all")?;
    report_time(u, w, "poll-testall", polls);
    drop(sts);
    check!(bufs.iter().all(|b| b == b"hello"), "received {bufs:?}");
    Ok(())
}

/// A rank that waits by watching the clock (`while (MPI_Wtime() - t0 < d)`)
/// and then polls: on the simulator `wtime` must advance by itself.
pub(super) fn poll_wtime(u: &Universe, w: &SimpleCommunicator) -> R {
    if w.size() < 2 || w.rank() > 1 {
        return Ok(());
    }
    if w.rank() == 1 {
        return late_send(u, w, 0);
    }
    let mut polls = 0u64;
    loop {
        let t0 = u.wtime();
        while u.wtime() - t0 < 1e-6 {
            polls += 1;
            check!(polls < POLL_LIMIT * 100, "wtime did not advance after {polls} reads");
        }
        if w.any_process().immediate_probe_with_tag(12).map_err(e)?.is_some() {
            break;
        }
    }
    receive_polled(u, w, "wtime", polls)
}

/// Compute in small steps and poll between them (the overlap idiom).
pub(super) fn poll_compute(u: &Universe, w: &SimpleCommunicator) -> R {
    if w.size() < 2 || w.rank() > 1 {
        return Ok(());
    }
    if w.rank() == 1 {
        return late_send(u, w, 0);
    }
    let mut polls = 0u64;
    loop {
        polls += 1;
        check!(polls < POLL_LIMIT, "compute+iprobe found nothing after {polls} polls");
        u.compute(700.0).map_err(e)?;
        if w.any_process().immediate_probe_with_tag(12).map_err(e)?.is_some() {
            break;
        }
    }
    receive_polled(u, w, "compute", polls)
}
