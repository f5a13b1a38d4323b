//! Zero-copy requests: the engine sends from and receives into the caller's
//! buffers (`isend_borrowed`, `irecv_into`, `imrecv_into`), over the
//! in-process backend. These are the cases that would break the `unsafe`
//! contract if the engine got it wrong: truncation (nothing written past the
//! buffer), cancelled and abandoned receives (buffer never touched), a send
//! buffer reused after completion, and the copy counters.
//!
//! Small enough to run under Miri: `cargo +nightly miri test -p adi --test engine_borrowed`.

use adi::{AdiError, Done, Source, TagSel};

mod common;
use common::run;

fn payload(i: u32, len: usize) -> Vec<u8> {
    (0..len).map(|j| (i as usize * 7 + j * 3 + 1) as u8).collect()
}

/// Eager (16 B) and rendezvous (5000 B, threshold 64) into posted buffers:
/// every byte in place, no extra copy; then the same sizes unexpected:
/// one extra copy for the eager one only.
#[test]
fn borrowed_buffers_both_protocols_expected_and_unexpected() {
    let copies = run(2, None, 64, |rank, e| {
        let sizes = [0usize, 16, 5000];
        if rank == 0 {
            // Expected at the receiver: it posts its receives, then says so.
            e.recv(Source::Rank(1), TagSel::Tag(97), 3, 0).unwrap();
            for (i, &n) in sizes.iter().enumerate() {
                let data = payload(i as u32, n);
                // SAFETY: `data` outlives the wait below.
                let id = unsafe { e.isend_borrowed(1, i as i32, 3, &data, false).unwrap() };
                assert_eq!(e.wait(id).unwrap(), Done::Sent);
            }
            // Unexpected at the receiver: it waits for this token first.
            e.recv(Source::Rank(1), TagSel::Tag(99), 3, 0).unwrap();
            let ids: Vec<_> = sizes
                .iter()
                .enumerate()
                .map(|(i, &n)| e.isend(1, 10 + i as i32, 3, payload(10 + i as u32, n), false).unwrap())
                .collect();
            e.send(1, 98, 3, &[], false).unwrap();
            e.wait_all(&ids).unwrap();
            (0, 0)
        } else {
            let mut bufs: Vec<Vec<u8>> = sizes.iter().map(|&n| vec![0u8; n]).collect();
            // SAFETY: `bufs` is not touched until wait_all has completed
            // every request, and outlives them.
            let ids: Vec<_> = bufs
                .iter_mut()
                .enumerate()
                .map(|(i, b)| unsafe { e.irecv_into(Source::Rank(0), TagSel::Tag(i as i32), 3, b).unwrap() })
                .collect();
            e.send(0, 97, 3, &[], false).unwrap();
            for (d, &n) in e.wait_all(&ids).unwrap().into_iter().zip(&sizes) {
                assert!(matches!(d, Done::Placed { status } if status.len == n as u64), "{d:?}");
            }
            for (i, b) in bufs.iter().enumerate() {
                assert_eq!(*b, payload(i as u32, sizes[i]));
            }
            assert_eq!(e.counters().recv_copies, 0, "an expected receive was copied twice");
            e.send(0, 99, 3, &[], false).unwrap();
            // Wait until all have arrived (the token after them), then receive.
            e.recv(Source::Rank(0), TagSel::Tag(98), 3, 0).unwrap();
            for (i, &n) in sizes.iter().enumerate() {
                let mut buf = vec![0u8; n];
                e.recv_into(Source::Rank(0), TagSel::Tag(10 + i as i32), 3, &mut buf).unwrap();
                assert_eq!(buf, payload(10 + i as u32, n));
            }
            let c = e.counters();
            (c.recv_copies, c.recv_copy_bytes)
        }
    });
    // The unexpected 16-byte eager message; not the empty one (no byte to
    // copy) nor the rendezvous one (its data came after the receive).
    assert_eq!(copies[1], (1, 16));
}

/// A message longer than the buffer: a truncation error, and not one byte
/// written past the buffer (guard bytes around a sub-slice), both protocols.
#[test]
fn truncation_writes_nothing_past_the_buffer() {
    run(2, None, 64, |rank, e| {
        for (i, n) in [40usize, 3000].into_iter().enumerate() {
            if rank == 0 {
                e.send(1, i as i32, 0, &payload(i as u32, n), false).unwrap();
            } else {
                let mut mem = vec![0xEEu8; n + 64];
                let cap = n / 2;
                let err = e.recv_into(Source::Rank(0), TagSel::Tag(i as i32), 0, &mut mem[32..32 + cap]).unwrap_err();
                assert!(matches!(err, AdiError::Truncated { .. }), "{err}");
                assert!(mem[..32].iter().all(|b| *b == 0xEE), "written before the buffer");
                assert!(mem[32 + cap..].iter().all(|b| *b == 0xEE), "written past the buffer");
                assert_eq!(&mem[32..32 + cap], &payload(i as u32, n)[..cap]);
            }
        }
    });
}

/// A cancelled receive completes as cancelled with its buffer untouched; an
/// abandoned one never writes its buffer either; the messages go to the
/// next matching receives.
#[test]
fn cancelled_and_abandoned_receives_leave_their_buffers_alone() {
    run(2, None, 64, |rank, e| {
        if rank == 0 {
            e.recv(Source::Rank(1), TagSel::Tag(50), 0, 0).unwrap();
            e.send(1, 5, 0, &[1u8; 20], false).unwrap();
            e.send(1, 6, 0, &[2u8; 2000], false).unwrap();
        } else {
            let mut a = [0u8; 20];
            let mut b = vec![0u8; 2000];
            // SAFETY: `a` and `b` outlive the engine's use: `a`'s request is
            // cancelled and completed, `b`'s abandoned, below.
            let ra = unsafe { e.irecv_into(Source::Rank(0), TagSel::Tag(5), 0, &mut a).unwrap() };
            let rb = unsafe { e.irecv_into(Source::Rank(0), TagSel::Tag(6), 0, &mut b).unwrap() };
            assert!(e.cancel_recv(ra).unwrap());
            assert_eq!(e.wait(ra).unwrap(), Done::Cancelled);
            e.abandon(rb);
            assert!(matches!(e.wait(rb), Err(AdiError::BadRequest(_))));
            e.send(0, 50, 0, &[], false).unwrap();
            let (_, d5) = e.recv(Source::Rank(0), TagSel::Tag(5), 0, 100).unwrap();
            let (_, d6) = e.recv(Source::Rank(0), TagSel::Tag(6), 0, 4000).unwrap();
            assert_eq!((d5, d6), (vec![1u8; 20], vec![2u8; 2000]));
            assert_eq!(a, [0u8; 20]);
            assert!(b.iter().all(|x| *x == 0));
            // A matched receive cannot be cancelled.
            let mut c = [0u8; 4];
            let rc = unsafe { e.irecv_into(Source::Rank(0), TagSel::Any, 0, &mut c).unwrap() };
            e.send(0, 51, 0, &[], false).unwrap();
            e.wait_until(|e| e.is_done(rc).unwrap_or(true)).unwrap();
            assert!(!e.cancel_recv(rc).unwrap());
            assert!(matches!(e.wait(rc).unwrap(), Done::Placed { .. }));
            assert_eq!(c, [9u8; 4]);
        }
        if rank == 0 {
            e.recv(Source::Rank(1), TagSel::Tag(51), 0, 0).unwrap();
            e.send(1, 7, 0, &[9u8; 4], false).unwrap();
        }
    });
}

/// A send buffer changed right after the send completed: the receiver sees
/// what was there at the send, for eager, rendezvous and self messages.
#[test]
fn a_send_buffer_reused_after_completion() {
    run(2, None, 64, |rank, e| {
        if rank == 0 {
            for n in [10usize, 4000] {
                let mut buf = payload(1, n);
                // SAFETY: each request is waited for before `buf` is written.
                let id = unsafe { e.isend_borrowed(1, 0, 0, &buf, false).unwrap() };
                e.wait(id).unwrap();
                buf.fill(0xAB);
                // To self (a rendezvous to self needs its receive posted).
                let mut back = vec![0u8; n];
                let r = unsafe { e.irecv_into(Source::Rank(0), TagSel::Tag(0), 0, &mut back).unwrap() };
                let id = unsafe { e.isend_borrowed(0, 0, 0, &buf, false).unwrap() };
                e.wait(id).unwrap();
                buf.fill(0);
                e.wait(r).unwrap();
                assert_eq!(back, vec![0xAB; n]);
            }
        } else {
            for n in [10usize, 4000] {
                let mut got = vec![0u8; n];
                e.recv_into(Source::Rank(0), TagSel::Tag(0), 0, &mut got).unwrap();
                assert_eq!(got, payload(1, n));
            }
        }
    });
}

/// Matched probe then receive into a buffer sized from its status; the
/// matched message cannot be taken by another receive meanwhile.
#[test]
fn matched_probe_then_receive_into_a_sized_buffer() {
    run(2, None, 64, |rank, e| {
        if rank == 0 {
            e.send(1, 4, 0, &payload(4, 30), false).unwrap();
            e.send(1, 4, 0, &payload(5, 3000), false).unwrap();
        } else {
            for (i, n) in [(4u32, 30usize), (5, 3000)] {
                let m = loop {
                    if let Some(m) = e.improbe(Source::Any, TagSel::Tag(4), 0).unwrap() {
                        break m;
                    }
                    e.idle().unwrap();
                };
                assert_eq!(m.status().len, n as u64);
                assert!(e.iprobe(Source::Any, TagSel::Tag(4), 0).unwrap().is_none_or(|s| s.len != n as u64));
                let mut buf = vec![0u8; n];
                let id = unsafe { e.imrecv_into(m, &mut buf).unwrap() };
                assert!(matches!(e.wait(id).unwrap(), Done::Placed { status } if status.len == n as u64));
                assert_eq!(buf, payload(i, n));
            }
        }
    });
}
