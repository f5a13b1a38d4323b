//! The protocol engine over the in-process backend: matching, ordering,
//! eager and rendezvous, flow control, probes and errors.

use adi::backend::local::{default_caps, local_world};
use adi::{AdiError, Config, Done, Engine, Source, TagSel};

mod common;
use common::run;

fn payload(src: u32, i: u32, len: usize) -> Vec<u8> {
    (0..len).map(|j| (src as usize * 31 + i as usize * 7 + j) as u8).collect()
}

#[test]
fn ping_pong_eager_and_rendezvous_sizes() {
    run(2, None, 1024, |rank, e| {
        for &len in &[0usize, 1, 100, 1024, 1025, 50_000, 300_000] {
            let msg = payload(rank, len as u32, len);
            if rank == 0 {
                e.send(1, 5, 0, &msg, false).unwrap();
                let (st, data) = e.recv(Source::Rank(1), TagSel::Tag(5), 0, len as u64).unwrap();
                assert_eq!(data, payload(1, len as u32, len));
                assert_eq!((st.source, st.tag, st.len), (1, 5, len as u64));
            } else {
                let (_, data) = e.recv(Source::Rank(0), TagSel::Tag(5), 0, len as u64).unwrap();
                assert_eq!(data, payload(0, len as u32, len));
                e.send(0, 5, 0, &msg, false).unwrap();
            }
        }
        let c = e.counters();
        assert!(c.eager_sent >= 4 && c.rndv_sent >= 3, "{c}");
    });
}

#[test]
fn unexpected_messages_and_wildcards_keep_per_sender_order() {
    let results = run(4, None, 512, |rank, e| {
        if rank == 0 {
            // Everyone sends before we post anything: all unexpected.
            e.compute(0.0).unwrap();
            std::thread::sleep(std::time::Duration::from_millis(50));
            let mut seen = vec![Vec::new(); 4];
            for _ in 0..3 * 20 {
                let (st, data) = e.recv(Source::Any, TagSel::Any, 0, 4096).unwrap();
                let i = u32::from_le_bytes([data[0], data[1], data[2], data[3]]);
                seen[st.source as usize].push((st.tag, i));
            }
            assert!(e.counters().unexpected_total > 0);
            seen
        } else {
            for i in 0..20u32 {
                let mut m = i.to_le_bytes().to_vec();
                m.resize(if i % 3 == 0 { 2000 } else { 8 }, 9); // mixed eager / rendezvous
                e.send(0, (i % 2) as i32, 0, &m, false).unwrap();
            }
            Vec::new()
        }
    });
    for (src, seen) in results[0].iter().enumerate().skip(1) {
        let got: Vec<u32> = seen.iter().map(|x| x.1).collect();
        assert_eq!(got, (0..20).collect::<Vec<_>>(), "messages from rank {src} overtook each other");
    }
}

#[test]
fn same_tag_messages_are_not_overtaken_even_across_protocols() {
    run(2, None, 100, |rank, e| {
        if rank == 0 {
            e.send(1, 1, 0, &vec![1u8; 5000], false).unwrap(); // rendezvous
            e.send(1, 1, 0, &[2u8; 10], false).unwrap(); // eager, must not overtake
        } else {
            let (_, a) = e.recv(Source::Rank(0), TagSel::Tag(1), 0, 10_000).unwrap();
            let (_, b) = e.recv(Source::Rank(0), TagSel::Tag(1), 0, 10_000).unwrap();
            assert_eq!((a.len(), b.len()), (5000, 10));
        }
    });
}

#[test]
fn many_outstanding_requests_with_flow_control() {
    run(3, Some(4), 256, |rank, e| {
        let n = 300u32;
        if rank == 0 {
            let mut reqs = Vec::new();
            for i in 0..n {
                for d in 1..3 {
                    reqs.push(e.isend(d, i as i32, 7, payload(0, i, (i as usize * 13) % 700), false).unwrap());
                }
            }
            for d in e.wait_all(&reqs).unwrap() {
                assert_eq!(d, Done::Sent);
            }
            assert!(e.counters().send_queued > 0, "the bounded inbox never pushed back");
            assert_eq!(e.live_requests(), 0, "completed requests were not freed");
        } else {
            // Post all receives first, in reverse tag order, then wait.
            let reqs: Vec<_> =
                (0..n).rev().map(|i| e.irecv(Source::Rank(0), TagSel::Tag(i as i32), 7, 1000).unwrap()).collect();
            let done = e.wait_all(&reqs).unwrap();
            for (k, d) in done.into_iter().enumerate() {
                let i = n - 1 - k as u32;
                match d {
                    Done::Received { status, data } => {
                        assert_eq!(status.tag, i as i32);
                        assert_eq!(data, payload(0, i, (i as usize * 13) % 700));
                    }
                    other => panic!("receive completed as {other:?}"),
                }
            }
            assert!(e.counters().posted_max >= n as u64);
            assert_eq!((e.counters().posted_depth, e.live_requests()), (0, 0));
        }
    });
}

#[test]
fn synchronous_sends_complete_only_after_matching() {
    run(2, None, 1 << 20, |rank, e| {
        if rank == 0 {
            let r = e.isend(1, 3, 0, vec![1, 2, 3], true).unwrap();
            for _ in 0..50 {
                assert!(e.test(r).unwrap().is_none() || panic!("ssend completed before the receive was posted"));
            }
            e.send(1, 4, 0, &[], false).unwrap(); // tell rank 1 to post
            e.wait(r).unwrap();
        } else {
            e.recv(Source::Rank(0), TagSel::Tag(4), 0, 0).unwrap();
            let (_, d) = e.recv(Source::Rank(0), TagSel::Tag(3), 0, 16).unwrap();
            assert_eq!(d, vec![1, 2, 3]);
        }
    });
}

/// Cancelling sends (MPI 4.1 §3.8.4): an unmatched message, eager or
/// rendezvous (and the very first request, id 0), is withdrawn and never
/// received; one already matched completes as sent. Rank 1 posts nothing
/// until told, then receives whatever is left, in order.
#[test]
fn unmatched_sends_are_withdrawn_and_matched_ones_are_not() {
    run(2, None, 1024, |rank, e| {
        if rank == 0 {
            let eager = e.isend(1, 1, 0, vec![1; 8], false).unwrap();
            let rndv = e.isend(1, 2, 0, vec![2; 50_000], false).unwrap();
            let sync = e.isend(1, 3, 0, vec![3; 4], true).unwrap();
            let kept = e.isend(1, 4, 0, vec![4; 8], false).unwrap();
            for r in [eager, rndv, sync] {
                e.cancel_send(r).unwrap();
                e.cancel_send(r).unwrap(); // twice: no change
                assert_eq!(e.wait(r).unwrap(), Done::Cancelled);
            }
            assert_eq!(e.wait(kept).unwrap(), Done::Sent);
            e.send(1, 9, 0, &[], false).unwrap(); // tell rank 1 to receive
                                                  // Matched already (rank 1 received it before answering): lost.
            let late = e.isend(1, 5, 0, vec![5; 8], false).unwrap();
            e.recv(Source::Rank(1), TagSel::Tag(10), 0, 0).unwrap();
            e.cancel_send(late).unwrap();
            assert_eq!(e.wait(late).unwrap(), Done::Sent);
            let r = e.irecv(Source::Rank(1), TagSel::Tag(77), 0, 0).unwrap();
            assert!(e.cancel_send(r).is_err(), "cancel_send on a receive");
            assert!(e.cancel_recv(r).unwrap());
            assert_eq!(e.wait(r).unwrap(), Done::Cancelled);
            e.send(1, 11, 0, &[], false).unwrap(); // rank 1 may go
        } else {
            e.recv(Source::Rank(0), TagSel::Tag(9), 0, 0).unwrap();
            // Only tag 4 is left of the first four.
            let (st, d) = e.recv(Source::Rank(0), TagSel::Any, 0, 64).unwrap();
            assert_eq!((st.tag, d), (4, vec![4; 8]));
            let (st, _) = e.recv(Source::Rank(0), TagSel::Any, 0, 64).unwrap();
            assert_eq!(st.tag, 5);
            e.send(0, 10, 0, &[], false).unwrap();
            e.recv(Source::Rank(0), TagSel::Tag(11), 0, 0).unwrap();
            assert!(e.iprobe(Source::Any, TagSel::Any, 0).unwrap().is_none());
        }
    });
}

#[test]
fn probes_truncation_self_messages_and_bad_arguments() {
    run(2, None, 64, |rank, e| {
        if rank == 0 {
            e.send(1, 9, 0, &[7u8; 100], false).unwrap();
            e.send(1, 10, 0, &[8u8; 10], false).unwrap();
            // To self, both protocols.
            let r = e.isend(0, 1, 0, vec![5u8; 300], false).unwrap();
            let (_, d) = e.recv(Source::Rank(0), TagSel::Tag(1), 0, 300).unwrap();
            e.wait(r).unwrap();
            assert_eq!(d, vec![5u8; 300]);
            assert!(matches!(e.isend(9, 0, 0, vec![], false), Err(AdiError::BadRank { rank: 9, size: 2 })));
        } else {
            let st = e.probe(Source::Any, TagSel::Tag(9), 0).unwrap();
            assert_eq!((st.source, st.len), (0, 100));
            assert!(e.iprobe(Source::Rank(0), TagSel::Tag(99), 0).unwrap().is_none());
            let err = e.recv(Source::Rank(0), TagSel::Tag(9), 0, 50).unwrap_err();
            assert!(matches!(err, AdiError::Truncated { len: 100, capacity: 50, .. }), "{err}");
            assert!(err.to_string().contains("does not fit"));
            let (_, d) = e.recv(Source::Rank(0), TagSel::Tag(10), 0, 50).unwrap();
            assert_eq!(d, vec![8u8; 10]);
        }
    });
}

/// Rank 0 runs an engine with a 100-byte rendezvous receive from rank 1
/// posted; rank 1 (a raw transport) sends the RTS, and once the CTS names
/// the receive request, rank `forger` (1 or 2) sends `forge(rreq)`.
/// Returns the receive's outcome.
fn forged_rendezvous(forger: u32, forge: fn(u32) -> Vec<Vec<u8>>) -> Result<Done, AdiError> {
    use adi::wire::{Envelope, Packet};
    let mut ts = local_world(3, None, default_caps());
    let (mut t2, mut t1, t0) = (ts.pop().unwrap(), ts.pop().unwrap(), ts.pop().unwrap());
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let raw = std::thread::spawn(move || {
        let env = Envelope { ctx: 0, tag: 5, src: 1, len: 100 };
        adi::Transport::try_send(&mut t1, 0, &[&packet(Packet::Rts { env, sreq: 9, sync: false }, 0)]).unwrap();
        let mut rreq = None;
        while rreq.is_none() {
            adi::Transport::poll(&mut t1, &mut |_, m| {
                if let Ok((Packet::Cts { rreq: r, .. }, _)) = Packet::decode(0, m) {
                    rreq = Some(r);
                }
            })
            .unwrap();
        }
        let t = if forger == 1 { &mut t1 } else { &mut t2 };
        for msg in forge(rreq.unwrap()) {
            adi::Transport::try_send(t, 0, &[&msg]).unwrap();
        }
        rx.recv().unwrap(); // keep the transports alive until rank 0 is done
    });
    let mut e = Engine::with_config(
        Box::new(t0),
        Config { eager_threshold: 1024, force_rendezvous: false, print_stats: false },
    );
    let out = e.irecv(Source::Rank(1), TagSel::Tag(5), 0, 100).and_then(|id| e.wait(id));
    tx.send(()).unwrap();
    raw.join().unwrap();
    out
}

/// The encoding of `p` followed by `body` bytes of 1.
fn packet(p: adi::wire::Packet, body: usize) -> Vec<u8> {
    let mut h = [0u8; adi::wire::MAX_HEADER];
    let n = p.encode(&mut h);
    let mut m = h[..n].to_vec();
    m.resize(n + body, 1);
    m
}

#[test]
fn forged_packets_are_protocol_errors_naming_the_sender() {
    use adi::wire::{Envelope, Packet};
    let protocol_error_from =
        |r: &Result<Done, AdiError>, rank: u32| matches!(r, Err(AdiError::Protocol { sender, .. }) if *sender == rank);
    // A finish whose offset + length overflows.
    let r = forged_rendezvous(1, |rreq| vec![packet(Packet::Fts { rreq, offset: u64::MAX, len: 2 }, 0)]);
    assert!(protocol_error_from(&r, 1), "{r:?}");
    // Data past the end of the message.
    let r = forged_rendezvous(1, |rreq| vec![packet(Packet::Data { rreq, offset: 99, len: 2 }, 2)]);
    assert!(protocol_error_from(&r, 1), "{r:?}");
    // Another rank finishing rank 1's rendezvous.
    let r = forged_rendezvous(2, |rreq| vec![packet(Packet::Fts { rreq, offset: 0, len: 100 }, 0)]);
    assert!(protocol_error_from(&r, 2), "{r:?}");
    // Another rank sending an envelope in rank 1's name.
    let r = forged_rendezvous(2, |_| {
        vec![packet(Packet::Eager { env: Envelope { ctx: 0, tag: 5, src: 1, len: 3 }, sreq: 1 }, 3)]
    });
    assert!(protocol_error_from(&r, 2), "{r:?}");
    // The genuine sender's data and finish complete it.
    let r = forged_rendezvous(1, |rreq| {
        vec![
            packet(Packet::Data { rreq, offset: 0, len: 100 }, 100),
            packet(Packet::Fts { rreq, offset: 0, len: 100 }, 0),
        ]
    });
    match r {
        Ok(Done::Received { status, data }) => assert_eq!((status.source, data), (1, vec![1u8; 100])),
        other => panic!("the genuine rendezvous did not complete: {other:?}"),
    }
}
