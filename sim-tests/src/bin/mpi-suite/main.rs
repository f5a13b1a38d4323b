//! MPI programs for the end-to-end suite: `mpi-suite TEST`, run under
//! `dnrun` with any number of ranks and nodes. Rank 0 prints `OK TEST` when
//! every check passed; any failed check returns an error (non-zero exit).

use std::process::ExitCode;

mod collectives;
mod io;
mod ports;
mod rma;
mod spawn;

use mpi::traits::*;
use mpi::{Color, Rank, SimpleCommunicator, Universe};

pub(crate) type R<T = ()> = Result<T, String>;

pub(crate) fn e<E: std::fmt::Display>(x: E) -> String {
    x.to_string()
}

macro_rules! check {
    ($cond:expr, $($msg:tt)*) => {
        let ok: bool = $cond;
        if !ok {
            return Err(format!($($msg)*));
        }
    };
}

// After `check!`, which they use.
mod attrs;
mod greq;
mod groups;
mod partitioned;
mod proc_null;
mod waiting;
use waiting::*;

/// Deterministic message contents for (sender, receiver, index, length).
fn data(src: Rank, dst: Rank, i: u32, len: usize) -> Vec<u8> {
    let seed = ((src as u64 + 1) * 0x9E37_79B9) ^ ((dst as u64 + 7) * 0x85EB_CA6B) ^ ((i as u64) << 20);
    hw_tools::harness::pattern_bytes(seed, len)
}

fn main() -> ExitCode {
    let test = std::env::args().nth(1).unwrap_or_default();
    let u = match mpi::initialize() {
        Ok(u) => u,
        Err(err) => {
            eprintln!("mpi-suite {test}: {err}");
            return ExitCode::FAILURE;
        }
    };
    let result = (|| -> R {
        let w = u.world();
        match test.as_str() {
            "pingpong" => pingpong(&u, &w)?,
            "ring" => ring(&w)?,
            "allpairs" => allpairs(&w)?,
            "wildcard" => wildcard(&w)?,
            "unexpected" => unexpected(&u, &w)?,
            "many-requests" => many_requests(&w)?,
            "ordering" => ordering(&w)?,
            "rndv-large" => rndv_large(&w)?,
            "mixed" => mixed(&w)?,
            "lent" => lent(&w)?,
            "probe" => probe(&w)?,
            "sync" => sync(&u, &w)?,
            "comms" => comms(&w)?,
            "topo" => topo(&w)?,
            "views" => views(&w)?,
            "sockets" => sockets(&w)?,
            "private-files" => private_files(&w)?,
            "idle" => idle(&w)?,
            "quiet-peer" => {
                let secs = std::env::args().nth(2).map_or(Ok(3.0), |s| s.parse::<f64>()).map_err(e)?;
                quiet_peer(&w, secs, std::env::args().nth(3).as_deref() == Some("send-first"))?
            }
            "stuck" => {
                // Every rank waits for a message nobody sends: for tests
                // that kill the launcher under a running job.
                println!("stuck: rank {} waiting", w.rank());
                let _: (u8, _) = w.any_process().receive_with_tag(999).map_err(e)?;
            }
            "poll-iprobe" => poll_iprobe(&u, &w)?,
            "poll-test" => poll_test(&u, &w)?,
            "poll-testall" => poll_testall(&u, &w)?,
            "poll-compute" => poll_compute(&u, &w)?,
            "poll-wtime" => poll_wtime(&u, &w)?,
            "one-call-waits" => one_call_waits(&u, &w)?,
            "collectives" => collectives::collectives(&u, &w)?,
            "rma" => rma::rma(&w)?,
            "rma-passive" => rma::passive_target(&u, &w)?,
            "io" => {
                let dir = std::env::args().nth(2).ok_or("usage: mpi-suite io DIR")?;
                io::io(&u, &w, &dir)?
            }
            "io-queue" => {
                let dir = std::env::args().nth(2).ok_or("usage: mpi-suite io-queue DIR K")?;
                let k = std::env::args().nth(3).ok_or("usage: mpi-suite io-queue DIR K")?.parse::<f64>().map_err(e)?;
                io::queue(&u, &w, &dir, k)?
            }
            "io-collective" => {
                let dir = std::env::args().nth(2).ok_or("usage: mpi-suite io-collective DIR")?;
                io::collective(&w, &dir)?
            }
            "io-convert" => {
                let dir = std::env::args().nth(2).ok_or("usage: mpi-suite io-convert DIR")?;
                io::convert(&w, &dir)?
            }
            "ports" => ports::ports(&w)?,
            "spawn" => spawn::spawn(&u, &w)?,
            "spawn-child" => spawn::child(&u, &w)?,
            "nbc" => collectives::nbc(&u, &w)?,
            "persistent" => collectives::persistent(&w)?,
            "partitioned" => partitioned::partitioned(&w)?,
            "attrs" => attrs::attrs(&w)?,
            "greq" => greq::greq(&w)?,
            "proc-null" => proc_null::proc_null(&u, &w)?,
            "groups" => groups::groups(&w)?,
            "coll-mismatch" => collectives::mismatch(&w)?,
            "coll-mismatch-all" => collectives::mismatch_all(&w)?,
            "coll-kind-mismatch" => collectives::kind_mismatch(&w)?,
            "coll-huge" => collectives::huge(&w)?,
            "overlap" => {
                let limit = std::env::args().nth(2).map_or(Ok(60.0), |s| s.parse::<f64>()).map_err(e)?;
                collectives::overlap(&u, &w, limit)?
            }
            "udp-garbage" => {
                // `kernel`: the socket is connected to its one peer, so the
                // kernel drops the strays before they reach us.
                let kernel = std::env::args().nth(2).as_deref() == Some("kernel");
                udp_garbage(&u, &w, kernel)?
            }
            "early-exit" => {
                // Rank 1 leaves without finalising; the others wait for it.
                if w.rank() == 1 {
                    std::process::exit(0);
                }
                let _: (u8, _) = w.process_at_rank(1).receive().map_err(e)?;
            }
            "fail" => {
                if w.rank() == w.size() - 1 {
                    return Err("deliberate failure".into());
                }
                w.barrier().map_err(e)?;
            }
            other => return Err(format!("unknown test {other:?}")),
        }
        w.barrier().map_err(e)?;
        if w.rank() == 0 {
            println!("OK {test} on {} ranks ({} backend)", w.size(), u.backend().map_err(e)?);
        }
        Ok(())
    })();
    match result {
        Ok(()) => match u.finalize() {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("mpi-suite {test}: finalize: {err}");
                ExitCode::FAILURE
            }
        },
        Err(msg) => {
            eprintln!("mpi-suite {test}: {msg}");
            u.abort(1)
        }
    }
}

/// Pairs (0,1), (2,3)… ping-pong messages of every protocol; bytes checked.
fn pingpong(u: &Universe, w: &SimpleCommunicator) -> R {
    let (me, n) = (w.rank(), w.size());
    let peer = me ^ 1;
    if peer >= n {
        return Ok(());
    }
    let sizes = [0usize, 1, 7, 64, 1000, 4000, 4096, 5000, 16 * 1024, 70_000, 300_000];
    let t0 = u.wtime();
    for (i, &len) in sizes.iter().enumerate() {
        for rep in 0..3u32 {
            let k = i as u32 * 10 + rep;
            let p = w.process_at_rank(peer);
            let mut buf = vec![0u8; len];
            if me % 2 == 0 {
                p.send(&data(me, peer, k, len)[..]).map_err(e)?;
                let st = p.receive_into(&mut buf[..]).map_err(e)?;
                check!(st.bytes() == len as u64 && st.source_rank() == peer, "status {st:?} for {len} bytes");
            } else {
                p.receive_into(&mut buf[..]).map_err(e)?;
                check!(buf == data(peer, me, k, len), "{len}-byte message from {peer} corrupted");
                buf = data(me, peer, k, len);
                p.send(&buf[..]).map_err(e)?;
                continue;
            }
            check!(buf == data(peer, me, k, len), "{len}-byte reply from {peer} corrupted");
        }
    }
    check!(u.wtime() >= t0, "time went backwards");
    Ok(())
}

/// A token travels around the ring three times, each hop adding data.
fn ring(w: &SimpleCommunicator) -> R {
    let (me, n) = (w.rank(), w.size());
    let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
    for lap in 0..3u32 {
        let len = [8usize, 3000, 40_000][lap as usize];
        if me == 0 {
            w.process_at_rank(next).send(&data(0, next, lap, len)[..]).map_err(e)?;
            let (v, st) = w.process_at_rank(prev).receive_vec::<u8>().map_err(e)?;
            check!(st.source_rank() == prev && v == data(prev, 0, lap, len), "lap {lap}: token corrupted");
        } else {
            let (v, _) = w.process_at_rank(prev).receive_vec::<u8>().map_err(e)?;
            check!(v == data(prev, me, lap, len), "lap {lap}: token from {prev} corrupted");
            w.process_at_rank(next).send(&data(me, next, lap, len)[..]).map_err(e)?;
        }
    }
    Ok(())
}

/// Every rank sends every other rank a set of messages of pseudo-random
/// sizes (eager and rendezvous) with immediate operations; every byte checked.
fn allpairs(w: &SimpleCommunicator) -> R {
    let (me, n) = (w.rank(), w.size());
    let per = 6u32;
    let size_of = |src: Rank, dst: Rank, i: u32| -> usize {
        let h = (src as usize * 131 + dst as usize * 31 + i as usize * 7919) % 17;
        [0, 1, 33, 100, 512, 1500, 4000, 4100, 9000, 20_000, 65_536, 100_000, 8, 2, 777, 5555, 12_345][h]
    };
    let mut rbufs: Vec<(Rank, u32, Vec<u8>)> = Vec::new();
    for src in 0..n {
        if src != me {
            for i in 0..per {
                rbufs.push((src, i, vec![0u8; size_of(src, me, i)]));
            }
        }
    }
    let sends: Vec<(Rank, u32, Vec<u8>)> = (0..n)
        .filter(|d| *d != me)
        .flat_map(|d| (0..per).map(move |i| (d, i, data(me, d, i, size_of(me, d, i)))))
        .collect();
    mpi::request::scope(|s| -> R {
        let mut reqs = Vec::new();
        for (src, i, b) in rbufs.iter_mut() {
            reqs.push(w.process_at_rank(*src).immediate_receive_into_with_tag(s, &mut b[..], *i as i32).map_err(e)?);
        }
        for (d, i, b) in &sends {
            reqs.push(w.process_at_rank(*d).immediate_send_with_tag(s, &b[..], *i as i32).map_err(e)?);
        }
        mpi::request::wait_all(reqs).map_err(e)?;
        Ok(())
    })?;
    for (src, i, b) in &rbufs {
        check!(*b == data(*src, me, *i, b.len()), "message {i} from rank {src} ({} bytes) corrupted", b.len());
    }
    Ok(())
}

/// ANY_SOURCE / ANY_TAG receives see every message once, with the right
/// status, and messages from one sender in order.
fn wildcard(w: &SimpleCommunicator) -> R {
    let (me, n) = (w.rank(), w.size());
    let per = 10u32;
    if me == 0 {
        let mut next = vec![0u32; n as usize];
        for _ in 0..(n as u32 - 1) * per {
            let (v, st) = w.any_process().receive_vec::<u32>().map_err(e)?;
            let src = st.source_rank();
            check!(src > 0 && src < n, "bad source {src}");
            check!(v.len() == (src as usize % 3) + 1, "bad length from {src}");
            check!(v[0] == next[src as usize], "rank {src}: got message {} but expected {}", v[0], next[src as usize]);
            check!(st.tag() == (v[0] % 5) as i32, "tag {} for message {} of rank {src}", st.tag(), v[0]);
            next[src as usize] += 1;
        }
    } else {
        for i in 0..per {
            let v = vec![i; (me as usize % 3) + 1];
            w.process_at_rank(0).send_with_tag(&v[..], (i % 5) as i32).map_err(e)?;
        }
    }
    Ok(())
}

/// Messages sent long before their receives are posted (unexpected queue).
fn unexpected(u: &Universe, w: &SimpleCommunicator) -> R {
    let (me, n) = (w.rank(), w.size());
    if n < 2 {
        return Ok(());
    }
    if me == 1 {
        u.compute(2_000_000.0).map_err(e)?; // 2 ms of "work" before receiving
                                            // Receive in reverse tag order to search the unexpected queue.
        for t in (0..20).rev() {
            let len = if t % 4 == 0 { 20_000 } else { 64 };
            let mut b = vec![0u8; len];
            w.process_at_rank(0).receive_into_with_tag(&mut b[..], t).map_err(e)?;
            check!(b == data(0, 1, t as u32, len), "unexpected message {t} corrupted");
        }
        let c = u.counters().map_err(e)?;
        check!(c.unexpected_total >= 15, "only {} messages were unexpected", c.unexpected_total);
    } else if me == 0 {
        // Immediate sends: a blocking rendezvous send could (legitimately)
        // wait for its receive, which rank 1 posts last.
        let msgs: Vec<Vec<u8>> = (0..20).map(|t| data(0, 1, t as u32, if t % 4 == 0 { 20_000 } else { 64 })).collect();
        mpi::request::scope(|s| -> R {
            let reqs = msgs
                .iter()
                .enumerate()
                .map(|(t, m)| w.process_at_rank(1).immediate_send_with_tag(s, &m[..], t as i32))
                .collect::<Result<Vec<_>, _>>()
                .map_err(e)?;
            mpi::request::wait_all(reqs).map_err(e)?;
            Ok(())
        })?;
    }
    Ok(())
}

/// Hundreds of outstanding requests, completed with wait_any, test_all and wait_all.
fn many_requests(w: &SimpleCommunicator) -> R {
    let (me, n) = (w.rank(), w.size());
    let peer = (me + n / 2) % n;
    let k = 300usize;
    let out: Vec<Vec<u8>> = (0..k).map(|i| data(me, peer, i as u32, 16 + i % 200)).collect();
    let mut inb: Vec<Vec<u8>> = (0..k).map(|i| vec![0u8; 16 + i % 200]).collect();
    mpi::request::scope(|s| -> R {
        let mut reqs = Vec::new();
        for (i, b) in inb.iter_mut().enumerate() {
            let from = (me + n - n / 2) % n;
            reqs.push(w.process_at_rank(from).immediate_receive_into_with_tag(s, &mut b[..], i as i32).map_err(e)?);
        }
        let mut sends = Vec::new();
        for (i, b) in out.iter().enumerate() {
            sends.push(w.process_at_rank(peer).immediate_send_with_tag(s, &b[..], i as i32).map_err(e)?);
        }
        // Half the receives by wait_any, the rest by test_all polling then wait_all.
        for _ in 0..k / 2 {
            mpi::request::wait_any(&mut reqs).map_err(e)?;
        }
        let mut rest = reqs;
        loop {
            match mpi::request::test_all(rest).map_err(e)? {
                Ok(_) => break,
                Err(pending) => rest = pending,
            }
        }
        mpi::request::wait_all(sends).map_err(e)?;
        Ok(())
    })?;
    let from = (me + n - n / 2) % n;
    for (i, b) in inb.iter().enumerate() {
        check!(*b == data(from, me, i as u32, b.len()), "request {i} corrupted");
    }
    Ok(())
}

/// Same-tag messages between a pair arrive in send order, whatever their protocol.
fn ordering(w: &SimpleCommunicator) -> R {
    let (me, n) = (w.rank(), w.size());
    if n < 2 || me > 1 {
        return Ok(());
    }
    let lens = [50_000usize, 10, 0, 30_000, 5, 5000, 1];
    if me == 0 {
        for (i, &l) in lens.iter().enumerate() {
            let mut m = data(0, 1, i as u32, l.max(4));
            m[..4].copy_from_slice(&(i as u32).to_le_bytes());
            w.process_at_rank(1).send_with_tag(&m[..], 3).map_err(e)?;
        }
    } else {
        for (i, &l) in lens.iter().enumerate() {
            let (v, _) = w.process_at_rank(0).receive_vec_with_tag::<u8>(3).map_err(e)?;
            check!(v.len() == l.max(4), "message {i} has {} bytes, expected {}", v.len(), l.max(4));
            let got = u32::from_le_bytes([v[0], v[1], v[2], v[3]]);
            check!(got == i as u32, "message {got} arrived in position {i}");
        }
    }
    Ok(())
}

/// Rendezvous of 1 MiB and 16 MiB between ranks 0 and 1 (and the last rank).
fn rndv_large(w: &SimpleCommunicator) -> R {
    let (me, n) = (w.rank(), w.size());
    let other = n - 1;
    if n < 2 || (me != 0 && me != other) {
        return Ok(());
    }
    for &len in &[1usize << 20, 16 << 20] {
        if me == 0 {
            w.process_at_rank(other).send(&data(0, other, len as u32, len)[..]).map_err(e)?;
            let mut back = vec![0u8; len];
            w.process_at_rank(other).receive_into(&mut back[..]).map_err(e)?;
            check!(back == data(other, 0, len as u32, len), "{len}-byte reply corrupted");
        } else {
            let mut b = vec![0u8; len];
            w.process_at_rank(0).receive_into(&mut b[..]).map_err(e)?;
            check!(b == data(0, other, len as u32, len), "{len}-byte message corrupted");
            w.process_at_rank(0).send(&data(other, 0, len as u32, len)[..]).map_err(e)?;
        }
    }
    Ok(())
}

/// Eager and rendezvous interleaved in both directions at once.
fn mixed(w: &SimpleCommunicator) -> R {
    let (me, n) = (w.rank(), w.size());
    let peer = (me + 1) % n;
    let from = (me + n - 1) % n;
    let lens: Vec<usize> = (0..40).map(|i| if i % 3 == 0 { 20_000 + i * 100 } else { i * 37 }).collect();
    let out: Vec<Vec<u8>> = lens.iter().enumerate().map(|(i, &l)| data(me, peer, i as u32, l)).collect();
    let mut inb: Vec<Vec<u8>> = lens.iter().map(|&l| vec![0u8; l]).collect();
    mpi::request::scope(|s| -> R {
        let mut reqs = Vec::new();
        for b in &out {
            reqs.push(w.process_at_rank(peer).immediate_send_with_tag(s, &b[..], 1).map_err(e)?);
        }
        for b in inb.iter_mut() {
            reqs.push(w.process_at_rank(from).immediate_receive_into_with_tag(s, &mut b[..], 1).map_err(e)?);
        }
        mpi::request::wait_all(reqs).map_err(e)?;
        Ok(())
    })?;
    for (i, b) in inb.iter().enumerate() {
        check!(*b == data(from, me, i as u32, b.len()), "message {i} from {from} corrupted or out of order");
    }
    Ok(())
}

/// Requests that lend their buffers to the library (zero copy): forgotten
/// with `mem::forget` (completed by the scope's end, so the data is there
/// after it), dropped (waits), a receive buffer shorter than the message
/// (a truncation error, nothing written past it), a send buffer reused
/// after `wait`, a cancelled receive; eager and rendezvous sizes, in a ring
/// (any number of ranks).
fn lent(w: &SimpleCommunicator) -> R {
    let (me, n) = (w.rank(), w.size());
    let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
    for (k, len) in [24usize, 70_000].into_iter().enumerate() {
        let k = k as u32 * 10;
        // Forgotten requests: the scope completes them.
        let mine = data(me, next, k, len);
        let mut got = vec![0u8; len];
        mpi::request::scope(|s| -> R {
            let r = w.process_at_rank(prev).immediate_receive_into_with_tag(s, &mut got[..], 1).map_err(e)?;
            std::mem::forget(r);
            let r = w.process_at_rank(next).immediate_send_with_tag(s, &mine[..], 1).map_err(e)?;
            std::mem::forget(r);
            Ok(())
        })?;
        check!(got == data(prev, me, k, len), "a forgotten receive of {len} B did not complete by the scope's end");
        // Dropped requests wait.
        let mut got2 = vec![0u8; len];
        mpi::request::scope(|s| -> R {
            let r = w.process_at_rank(prev).immediate_receive_into_with_tag(s, &mut got2[..], 2).map_err(e)?;
            let t = w.process_at_rank(next).immediate_send_with_tag(s, &mine[..], 2).map_err(e)?;
            drop(r);
            drop(t);
            Ok(())
        })?;
        check!(got2 == data(prev, me, k, len), "a dropped receive of {len} B did not complete");
        // Truncation: guard bytes around a buffer of half the message.
        let mut mem = vec![0xEEu8; len / 2 + 64];
        let half = len / 2;
        mpi::request::scope(|s| -> R {
            let r =
                w.process_at_rank(prev).immediate_receive_into_with_tag(s, &mut mem[32..32 + half], 3).map_err(e)?;
            w.process_at_rank(next).send_with_tag(&mine[..], 3).map_err(e)?;
            let err = r.wait().err().map(|x| x.to_string()).unwrap_or_default();
            check!(err.contains("does not fit"), "a {len} B message into {half} B gave {err:?}");
            Ok(())
        })?;
        check!(mem[..32].iter().chain(&mem[32 + half..]).all(|b| *b == 0xEE), "written outside the buffer");
        check!(mem[32..32 + half] == data(prev, me, k, len)[..half], "truncated prefix wrong");
        // A send buffer reused after wait: the receiver sees the old bytes.
        let mut buf = mine.clone();
        let mut got3 = vec![0u8; len];
        mpi::request::scope(|s| -> R {
            let r = w.process_at_rank(prev).immediate_receive_into_with_tag(s, &mut got3[..], 4).map_err(e)?;
            w.process_at_rank(next).immediate_send_with_tag(s, &buf[..], 4).map_err(e)?.wait().map_err(e)?;
            r.wait().map_err(e)?;
            Ok(())
        })?;
        buf.fill(0);
        check!(got3 == data(prev, me, k, len), "message {k} corrupted by reuse of the send buffer after wait");
        // A cancelled receive never touches its buffer.
        let mut never = vec![7u8; len];
        let st = mpi::request::scope(|s| -> R<mpi::Status> {
            let r = w.process_at_rank(prev).immediate_receive_into_with_tag(s, &mut never[..], 77).map_err(e)?;
            r.cancel().map_err(e)?;
            r.wait().map_err(e)
        })?;
        check!(st.is_cancelled(), "cancel of an unmatched receive did not win: {st:?}");
        check!(never.iter().all(|b| *b == 7), "a cancelled receive wrote its buffer");
        // A guarded receive given up on an early return is cancelled, not
        // waited for (a plain request's drop would wait for ever here).
        let early = mpi::request::scope(|s| -> R {
            let r = w.process_at_rank(prev).immediate_receive_into_with_tag(s, &mut never[..], 78).map_err(e)?;
            let _guard = mpi::CancelGuard::from(r);
            Err("an early return".into())
        });
        check!(early.is_err(), "the early return did not happen");
        check!(never.iter().all(|b| *b == 7), "a receive cancelled by its guard wrote its buffer");
        // A guarded receive that is matched completes as usual.
        let mut got4 = vec![0u8; len];
        mpi::request::scope(|s| -> R {
            let r = w.process_at_rank(prev).immediate_receive_into_with_tag(s, &mut got4[..], 79).map_err(e)?;
            let g = mpi::CancelGuard::from(r);
            w.process_at_rank(next).send_with_tag(&mine[..], 79).map_err(e)?;
            g.wait().map_err(e)?;
            Ok(())
        })?;
        check!(got4 == data(prev, me, k, len), "a guarded receive got the wrong bytes");
        w.barrier().map_err(e)?;
    }
    Ok(())
}

/// probe, immediate_probe, count and truncation errors.
fn probe(w: &SimpleCommunicator) -> R {
    let (me, n) = (w.rank(), w.size());
    if n < 2 || me > 1 {
        return Ok(());
    }
    if me == 0 {
        w.process_at_rank(1).send_with_tag(&[1.5f64, 2.5, 3.5][..], 42).map_err(e)?;
        w.process_at_rank(1).send_with_tag(&[9u32; 10][..], 43).map_err(e)?;
    } else {
        let st = w.any_process().probe_with_tag(42).map_err(e)?;
        check!(st.source_rank() == 0 && st.count::<f64>().map_err(e)? == 3, "probe status {st:?}");
        check!(w.any_process().immediate_probe_with_tag(99).map_err(e)?.is_none(), "iprobe found a tag-99 message");
        let (v, _) = w.process_at_rank(0).receive_vec_with_tag::<f64>(42).map_err(e)?;
        check!(v == vec![1.5, 2.5, 3.5], "received {v:?}");
        let mut small = [0u32; 4];
        let err = w.process_at_rank(0).receive_into_with_tag(&mut small[..], 43).unwrap_err();
        check!(err.to_string().contains("does not fit"), "truncation not reported: {err}");
    }
    Ok(())
}

/// Synchronous sends complete only after the receive matched.
fn sync(u: &Universe, w: &SimpleCommunicator) -> R {
    let (me, n) = (w.rank(), w.size());
    if n < 2 || me > 1 {
        return Ok(());
    }
    if me == 0 {
        let t0 = u.wtime();
        w.process_at_rank(1).synchronous_send(&7u64).map_err(e)?;
        let waited = u.wtime() - t0;
        if u.is_simulated() {
            check!(waited >= 1e-3, "ssend returned after {waited} s, before the 1 ms late receive");
        }
    } else {
        u.compute(1_000_000.0).map_err(e)?;
        let (v, _) = w.process_at_rank(0).receive::<u64>().map_err(e)?;
        check!(v == 7, "got {v}");
    }
    Ok(())
}

/// dup and split give communicators with their own ranks and contexts.
/// Process topologies through the Rust API (`mpi::topo`): a 2-D grid
/// periodic in dimension 0, its neighborhood allgather and alltoall checked
/// against the grid's arithmetic, a row sub-grid, and a distributed graph.
fn topo(w: &SimpleCommunicator) -> R {
    use mpi::topo::Topology;
    let (me, n) = (w.rank(), w.size());
    let mut dims = [0, 0];
    mpi::topo::dims_create(n, &mut dims).map_err(e)?;
    let grid = w.create_cartesian(&dims, &[true, false], true).map_err(e)?.ok_or("not on the grid")?;
    let Some(Topology::Cartesian(cart)) = grid.topology() else {
        return Err("the grid has no Cartesian topology".into());
    };
    check!(grid.rank() == me, "ranks were reordered");
    let coords = cart.coords_of(me).map_err(e)?;
    check!(coords == [me / dims[1], me % dims[1]], "coords {coords:?} of {me} on {dims:?}");
    // The neighbor below and above in each dimension, by arithmetic.
    let at = |c0: i32, c1: i32| -> Option<Rank> {
        let c0 = c0.rem_euclid(dims[0]);
        (0..dims[1]).contains(&c1).then_some(c0 * dims[1] + c1)
    };
    let (c0, c1) = (coords[0], coords[1]);
    let nbrs = [at(c0 - 1, c1), at(c0 + 1, c1), at(c0, c1 - 1), at(c0, c1 + 1)];
    let mut got = [-1i32; 4];
    grid.neighbor_all_gather_into(&[me], &mut got[..]).map_err(e)?;
    for (i, nb) in nbrs.iter().enumerate() {
        check!(got[i] == nb.unwrap_or(-1), "allgather block {i}: {} want {nb:?}", got[i]);
    }
    let out: Vec<i32> = (0..4).map(|j| me * 10 + j).collect();
    let mut got = [-1i32; 4];
    grid.neighbor_all_to_all_into(&out, &mut got[..]).map_err(e)?;
    // Block 2d comes from below (its block 2d + 1), block 2d + 1 from above (its 2d).
    for (i, nb) in nbrs.iter().enumerate() {
        let want = nb.map_or(-1, |p| p * 10 + (i as i32 ^ 1));
        check!(got[i] == want, "alltoall block {i}: {} want {want}", got[i]);
    }
    let row = grid.cartesian_sub(&[false, true]).map_err(e)?;
    check!(row.size() == dims[1] && row.rank() == c1, "row: size {} rank {}", row.size(), row.rank());
    check!(grid.duplicate().map_err(e)?.topology() == grid.topology(), "dup lost the topology");
    check!(w.cartesian_sub(&[true]).is_err(), "cartesian_sub on world accepted");
    // A distributed graph: receive from r - 1, send to r + 1.
    let ring = w.create_dist_graph_adjacent(&[(me + n - 1) % n], None, &[(me + 1) % n], None, false).map_err(e)?;
    let mut from = [-1i32];
    ring.neighbor_all_gather_into(&[me], &mut from[..]).map_err(e)?;
    check!(from[0] == (me + n - 1) % n, "dist graph: got {} from r - 1", from[0]);
    check!(w.neighbor_all_gather_into(&[me], &mut from[..]).is_err(), "a neighborhood collective on world accepted");
    Ok(())
}

fn comms(w: &SimpleCommunicator) -> R {
    let (me, n) = (w.rank(), w.size());
    let dup = w.duplicate().map_err(e)?;
    check!(dup.rank() == me && dup.size() == n, "dup changed rank/size");
    // Two idups started in opposite orders on odd and even ranks, with a
    // message before the waits (MPI 4.1 §7.4.2): no agreement to hang on.
    let (a, b) = if me % 2 == 0 {
        let a = w.immediate_duplicate().map_err(e)?;
        (a, dup.immediate_duplicate().map_err(e)?)
    } else {
        let b = dup.immediate_duplicate().map_err(e)?;
        (w.immediate_duplicate().map_err(e)?, b)
    };
    if n >= 2 {
        let next = w.process_at_rank((me + 1) % n);
        let prev = w.process_at_rank((me + n - 1) % n);
        let mine = me as u32;
        let (got, _) = mpi::request::scope(|s| -> std::result::Result<(u32, mpi::Status), String> {
            let r = next.immediate_send(s, &mine).map_err(e)?;
            let got = prev.receive::<u32>().map_err(e)?;
            r.wait().map_err(e)?;
            Ok(got)
        })?;
        check!(got == ((me + n - 1) % n) as u32, "a message between idups: {got}");
    }
    let (a, b) = (a.wait().map_err(e)?, b.wait().map_err(e)?);
    let (mut sa, mut sb) = ([0i32], [0i32]);
    a.all_reduce_into(&[me][..], &mut sa[..], mpi::SystemOperation::sum()).map_err(e)?;
    b.all_reduce_into(&[1i32][..], &mut sb[..], mpi::SystemOperation::sum()).map_err(e)?;
    let (sa, sb) = (sa[0], sb[0]);
    check!(sa == n * (n - 1) / 2 && sb == n, "allreduce on the idups: {sa} {sb}");
    let half = w.split_by_color_with_key(Color::With(me % 2), -me).map_err(e)?.ok_or("split returned None")?;
    let expect_size = (n + 1 - me % 2) / 2;
    check!(half.size() == expect_size, "split size {} expected {expect_size}", half.size());
    // key = -rank: reversed order.
    let members: Vec<Rank> = (0..n).filter(|r| r % 2 == me % 2).rev().collect();
    let my_pos = members.iter().position(|r| *r == me).ok_or("not in group")? as Rank;
    check!(half.rank() == my_pos, "split rank {} expected {my_pos}", half.rank());
    let none = w.split_by_color(if me == 0 { Color::Undefined } else { Color::With(1) }).map_err(e)?;
    check!(none.is_none() == (me == 0), "Color::Undefined must give None");
    // The same tag on three communicators: each message stays on its own.
    if n >= 2 && me < 2 {
        let p = 1 - me;
        if me == 0 {
            w.process_at_rank(p).send_with_tag(&1u32, 5).map_err(e)?;
            dup.process_at_rank(p).send_with_tag(&2u32, 5).map_err(e)?;
        } else {
            let (b, _) = dup.process_at_rank(p).receive_with_tag::<u32>(5).map_err(e)?;
            let (a, _) = w.process_at_rank(p).receive_with_tag::<u32>(5).map_err(e)?;
            check!((a, b) == (1, 2), "messages crossed communicators: world got {a}, dup got {b}");
        }
    }
    half.barrier().map_err(e)?;
    // Within the half, a ring using half ranks.
    let hn = half.size();
    if hn > 1 {
        let hr = half.rank();
        half.process_at_rank((hr + 1) % hn).send(&(hr as u32)).map_err(e)?;
        let (v, st) = half.any_process().receive::<u32>().map_err(e)?;
        check!(
            st.source_rank() == (hr + hn - 1) % hn && v == st.source_rank() as u32,
            "ring in split communicator: {v} from {}",
            st.source_rank()
        );
    }
    dup.barrier().map_err(e)?;
    Ok(())
}

/// How many sockets this process has open.
fn open_sockets() -> R<u64> {
    let mut n = 0;
    for entry in std::fs::read_dir("/proc/self/fd").map_err(e)? {
        let target = std::fs::read_link(entry.map_err(e)?.path()).unwrap_or_default();
        if target.to_string_lossy().starts_with("socket:") {
            n += 1;
        }
    }
    Ok(n)
}

/// Every rank reports its socket count; rank 0 prints the total.
fn sockets(w: &SimpleCommunicator) -> R {
    let mine = open_sockets()?;
    if w.rank() == 0 {
        let mut total = mine;
        for r in 1..w.size() {
            let (n, _) = w.process_at_rank(r).receive::<u64>().map_err(e)?;
            check!(n <= 1, "rank {r} has {n} sockets open");
            total += n;
        }
        check!(mine <= 1, "rank 0 has {mine} sockets open");
        println!("sockets: {total} in total for {} ranks", w.size());
    } else {
        w.process_at_rank(0).send(&mine).map_err(e)?;
    }
    Ok(())
}

/// Every directory of the job is its owner's alone (0700) and every file
/// in it 0600 — checked by rank 0 once all ranks are up, so that the
/// simulator's files, the rendezvous files, the UDP key and the memif
/// sockets all exist. Sockets are reached through their 0700 directory;
/// none may be in the abstract namespace, which has no permissions. As
/// root with a `nobody` user, `nobody` must fail to read a file.
fn private_files(w: &SimpleCommunicator) -> R {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    w.barrier().map_err(e)?;
    if w.rank() != 0 {
        return Ok(());
    }
    let job = adi::knobs::raw("DN_JOB_DIR").ok_or("DN_JOB_DIR is not set (run with dnrun)")?;
    let root = std::path::Path::new(&job).parent().ok_or("DN_JOB_DIR has no parent")?.to_path_buf();
    let uid = std::fs::metadata(&root).map_err(e)?.uid();
    let (mut stack, mut files, mut sockets, mut readable, mut socket) = (vec![root.clone()], 0, 0, None, None);
    while let Some(d) = stack.pop() {
        let m = std::fs::symlink_metadata(&d).map_err(e)?;
        check!(m.mode() & 0o777 == 0o700 && m.uid() == uid, "{} has mode {:o}", d.display(), m.mode() & 0o777);
        for entry in std::fs::read_dir(&d).map_err(e)? {
            let p = entry.map_err(e)?.path();
            let m = std::fs::symlink_metadata(&p).map_err(e)?;
            let t = m.file_type();
            if t.is_dir() {
                stack.push(p);
            } else if t.is_socket() {
                sockets += 1;
                socket.get_or_insert(p);
            } else {
                check!(t.is_file(), "{} is neither a file, a directory nor a socket", p.display());
                check!(m.mode() & 0o777 == 0o600, "{} has mode {:o}, not 0600", p.display(), m.mode() & 0o777);
                files += 1;
                readable.get_or_insert(p);
            }
        }
    }
    let unix = std::fs::read_to_string("/proc/net/unix").unwrap_or_default();
    check!(!unix.contains("@dn-memif"), "a memif socket is in the abstract namespace");
    let nobody = match readable {
        Some(f) if uid == 0 && std::path::Path::new("/usr/sbin/runuser").exists() => {
            let out = std::process::Command::new("/usr/sbin/runuser")
                .args(["-u", "nobody", "--", "cat"])
                .arg(&f)
                .output()
                .map_err(e)?;
            check!(!out.status.success(), "user nobody read {}", f.display());
            // A memif socket: nobody must not connect (as it could when
            // the sockets were abstract names).
            if let Some(sock) = socket.filter(|_| std::path::Path::new("/usr/bin/python3").exists()) {
                let connect = "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])";
                let out = std::process::Command::new("/usr/sbin/runuser")
                    .args(["-u", "nobody", "--", "/usr/bin/python3", "-c", connect])
                    .arg(&sock)
                    .output()
                    .map_err(e)?;
                check!(!out.status.success(), "user nobody connected to {}", sock.display());
            }
            "nobody cannot read or connect to them"
        }
        _ => "not checked as nobody (needs root and runuser)",
    };
    println!("private-files: {files} files and {sockets} sockets, all private; {nobody}");
    Ok(())
}

/// Rank 0 throws bad datagrams at rank 1's socket; none may reach the
/// application, each is counted, and the job carries on.
fn udp_garbage(u: &Universe, w: &SimpleCommunicator, kernel: bool) -> R {
    use adi::backend::udp::wire::{flag, seal, Header, HEADER};
    let (me, n) = (w.rank(), w.size());
    if n < 2 || me > 1 {
        return Ok(());
    }
    if kernel {
        // Datagrams queued before rank 1 connected its socket were let in;
        // a round trip first makes sure it has.
        if me == 1 {
            w.process_at_rank(0).send(&0u32).map_err(e)?;
        } else {
            w.process_at_rank(1).receive::<u32>().map_err(e)?;
        }
    }
    if me == 0 {
        let dir = adi::knobs::raw("DN_JOB_DIR").ok_or("DN_JOB_DIR is not set (run with dnrun --backend udp)")?;
        let target: std::net::SocketAddr =
            std::fs::read_to_string(std::path::Path::new(&dir).join("udp.1")).map_err(e)?.trim().parse().map_err(e)?;
        let job: u32 = adi::knobs::raw("DN_JOB_ID").ok_or("DN_JOB_ID is not set")?.parse().map_err(e)?;
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").map_err(e)?;
        let good = Header {
            flags: flag::DATA,
            job,
            src: 0,
            dst: 1,
            seq: 0,
            ack: 0,
            msg_len: 4,
            frag: 0,
            nfrags: 1,
            payload: 4,
        };
        let make = |h: Header, payload: &[u8], fix: bool| {
            let mut d = vec![0u8; HEADER + payload.len()];
            h.write(&mut d);
            d[HEADER..].copy_from_slice(payload);
            if fix {
                seal(&mut d);
            }
            d
        };
        let bad: Vec<Vec<u8>> = vec![
            b"hello, not a datagram of ours".to_vec(),            // foreign
            make(good, b"ping", true)[..20].to_vec(),             // truncated
            make(Header { job: job ^ 1, ..good }, b"ping", true), // other job
            make(good, b"ping", false),                           // corrupt (no CRC)
            make(Header { src: 99, ..good }, b"ping", true),      // unknown rank
            make(good, b"ping", true),                            // right header, wrong address
            make(Header { frag: 3, ..good }, b"ping", true),      // malformed
        ];
        for d in &bad {
            sock.send_to(d, target).map_err(e)?;
        }
        w.process_at_rank(1).send(&7u32).map_err(e)?;
        let (v, _) = w.process_at_rank(1).receive::<u32>().map_err(e)?;
        check!(v == 8, "reply {v}");
    } else {
        let (v, _) = w.process_at_rank(0).receive::<u32>().map_err(e)?;
        check!(v == 7, "the application saw {v} instead of the real message");
        check!(w.any_process().immediate_probe().map_err(e)?.is_none(), "a bad datagram reached the application");
        w.process_at_rank(0).send(&8u32).map_err(e)?;
        let report = u.with_engine(|e| e.transport_report()).map_err(e)?.unwrap_or_default();
        let dropped: u64 = report
            .split("dropped:")
            .nth(1)
            .unwrap_or("")
            .split(';')
            .next()
            .unwrap_or("")
            .split(',')
            .filter_map(|p| p.split_whitespace().next()?.parse::<u64>().ok())
            .sum();
        if kernel {
            check!(dropped == 0, "{dropped} stray datagrams reached a connected socket: {report}");
        } else {
            check!(dropped >= 7, "only {dropped} bad datagrams were counted: {report}");
        }
        println!("udp-garbage: {report}");
    }
    Ok(())
}
