//! Messages handed to the engine in parts (`Transport::poll_arrivals`, as
//! the DIMMnet-2 backend does): the payload of an eager message that
//! matches a posted receive goes straight into its buffer; everything else
//! (unexpected messages, rendezvous packets) is read whole first. Checked
//! over the in-process backend wrapped so that every message longer than
//! the head arrives in parts, and against what nobody should do: write past
//! a truncated receive's buffer, or read past a message.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use adi::backend::local::{default_caps, local_world, LocalTransport};
use adi::transport::{Arrival, ARRIVAL_HEAD};
use adi::{AdiError, Caps, Config, Engine, Source, TagSel, Transport, TransportError};

/// The in-process backend, delivering long messages as a head and a rest.
struct Split {
    inner: LocalTransport,
    /// Bytes read past the heads, for the test to see.
    rest_bytes: Arc<AtomicU64>,
}

struct Parts<'a> {
    msg: &'a [u8],
    read: bool,
    rest_bytes: &'a AtomicU64,
}

impl Arrival for Parts<'_> {
    fn len(&self) -> usize {
        self.msg.len()
    }
    fn head(&self) -> &[u8] {
        &self.msg[..ARRIVAL_HEAD.min(self.msg.len())]
    }
    fn read_rest(&mut self, out: &mut [u8]) -> Result<(), TransportError> {
        let rest = &self.msg[self.head().len()..];
        assert!(!self.read, "read_rest called twice");
        assert!(out.len() <= rest.len(), "the engine asked for {} bytes past the message", out.len() - rest.len());
        self.read = true;
        out.copy_from_slice(&rest[..out.len()]);
        self.rest_bytes.fetch_add(out.len() as u64, Ordering::Relaxed);
        Ok(())
    }
}

impl Transport for Split {
    fn name(&self) -> &'static str {
        "split"
    }
    fn rank(&self) -> u32 {
        self.inner.rank()
    }
    fn size(&self) -> u32 {
        self.inner.size()
    }
    fn caps(&self) -> Caps {
        self.inner.caps()
    }
    fn try_send(&mut self, dest: u32, parts: &[&[u8]]) -> Result<bool, TransportError> {
        self.inner.try_send(dest, parts)
    }
    fn poll(&mut self, sink: &mut dyn FnMut(u32, &[u8])) -> Result<usize, TransportError> {
        self.inner.poll(sink)
    }
    fn poll_arrivals(&mut self, sink: &mut dyn FnMut(u32, &mut dyn Arrival)) -> Result<usize, TransportError> {
        let rest_bytes = self.rest_bytes.clone();
        self.inner.poll(&mut |src, msg| sink(src, &mut Parts { msg, read: false, rest_bytes: &rest_bytes }))
    }
    fn idle(&mut self) -> Result<(), TransportError> {
        self.inner.idle()
    }
}

/// Run `f(rank, engine, rest bytes read)` on two threads.
fn run2(f: fn(u32, &mut Engine, &AtomicU64)) {
    let hs: Vec<_> = local_world(2, None, default_caps())
        .into_iter()
        .map(|inner| {
            std::thread::spawn(move || {
                let rest = Arc::new(AtomicU64::new(0));
                let t = Split { inner, rest_bytes: rest.clone() };
                let mut e = Engine::with_config(
                    Box::new(t),
                    Config { eager_threshold: 4096, force_rendezvous: false, print_stats: false },
                );
                let rank = e.rank();
                f(rank, &mut e, &rest);
                e.finalize().unwrap();
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
}

fn bytes(seed: u8, len: usize) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(13).wrapping_add(seed)).collect()
}

#[test]
fn a_posted_eager_receive_is_filled_from_the_head_and_the_rest_directly() {
    run2(|rank, e, rest| {
        let sizes = [0usize, 1, 31, 32, 33, 100, 1000, 4000];
        if rank == 1 {
            // Post first (borrowed buffers), then let rank 0 send.
            let mut bufs: Vec<Vec<u8>> = sizes.iter().map(|&n| vec![0xEE; n]).collect();
            let mut ids = Vec::new();
            for (i, b) in bufs.iter_mut().enumerate() {
                // SAFETY: each buffer outlives its request, which wait_all
                // below completes before the buffers are read or dropped.
                ids.push(unsafe { e.irecv_into(Source::Rank(0), TagSel::Tag(i as i32), 0, b).unwrap() });
            }
            e.send(0, 99, 0, &[], false).unwrap();
            e.wait_all(&ids).unwrap();
            for (i, b) in bufs.iter().enumerate() {
                assert_eq!(b, &bytes(i as u8, sizes[i]), "message {i} of {} bytes", sizes[i]);
            }
            let c = e.counters();
            // Envelopes are 32 bytes: messages of 33 bytes and more arrive in parts.
            assert_eq!(c.recv_direct, 4, "{c}");
            assert_eq!(c.recv_copies, 0, "{c}");
            let expected: usize = sizes.iter().map(|&n| (32 + n).saturating_sub(ARRIVAL_HEAD)).sum();
            assert_eq!(rest.load(Ordering::Relaxed), expected as u64);
        } else {
            e.recv(Source::Rank(1), TagSel::Tag(99), 0, 0).unwrap();
            for (i, &n) in sizes.iter().enumerate() {
                e.send(1, i as i32, 0, &bytes(i as u8, n), false).unwrap();
            }
        }
    });
}

#[test]
fn a_truncated_receive_in_parts_writes_nothing_past_its_buffer() {
    run2(|rank, e, rest| {
        if rank == 1 {
            // 200 bytes into the first 100 of a 120-byte region: the last 20
            // are a guard that must stay untouched.
            let mut region = [0xEEu8; 120];
            let (buf, guard) = region.split_at_mut(100);
            // SAFETY: `buf` outlives the request, which `wait` completes.
            let id = unsafe { e.irecv_into(Source::Rank(0), TagSel::Tag(1), 0, buf).unwrap() };
            e.send(0, 99, 0, &[], false).unwrap();
            match e.wait(id) {
                Err(AdiError::Truncated { len: 200, capacity: 100, .. }) => {}
                other => panic!("expected a truncation error, got {other:?}"),
            }
            assert_eq!(buf, &bytes(7, 200)[..100]);
            assert!(guard.iter().all(|&b| b == 0xEE), "bytes written past the buffer: {guard:?}");
            // Only what fits was read past the head: 32 + 100 - 64 bytes.
            assert_eq!(rest.load(Ordering::Relaxed), 68);
        } else {
            e.recv(Source::Rank(1), TagSel::Tag(99), 0, 0).unwrap();
            e.send(1, 1, 0, &bytes(7, 200), false).unwrap();
        }
    });
}

#[test]
fn unexpected_and_rendezvous_messages_in_parts_are_read_whole() {
    run2(|rank, e, _| {
        if rank == 1 {
            // Both arrive before any receive is posted: unexpected.
            e.recv(Source::Rank(0), TagSel::Tag(98), 0, 0).unwrap();
            let mut small = vec![0u8; 3000];
            e.recv_into(Source::Rank(0), TagSel::Tag(1), 0, &mut small).unwrap();
            assert_eq!(small, bytes(1, 3000));
            // Above the eager threshold: RTS, CTS, then DATA packets in parts.
            let mut big = vec![0u8; 100_000];
            e.recv_into(Source::Rank(0), TagSel::Tag(2), 0, &mut big).unwrap();
            assert_eq!(big, bytes(2, 100_000));
            let c = e.counters();
            assert_eq!((c.recv_direct, c.recv_copies), (0, 1), "{c}");
        } else {
            e.send(1, 1, 0, &bytes(1, 3000), false).unwrap();
            e.send(1, 98, 0, &[], false).unwrap();
            e.send(1, 2, 0, &bytes(2, 100_000), false).unwrap();
        }
    });
}
