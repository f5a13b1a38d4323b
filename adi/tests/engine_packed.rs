//! Messages made and taken one chunk at a time (`isend_packed`,
//! `irecv_unpacked`, issue 30): over the in-process backend, eager and
//! rendezvous, to a peer and to oneself, expected and unexpected, and
//! truncated. The engine never asks for or hands over more than a packet's
//! worth at once, and the bytes arrive whole and in place.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use adi::backend::local::default_caps;
use adi::{AdiError, Done, PackSource, Source, TagSel, UnpackSink};

mod common;
use common::run;

fn payload(i: u32, len: usize) -> Vec<u8> {
    (0..len).map(|j| (i as usize * 7 + j * 3 + 1) as u8).collect()
}

/// A message held by the test, handed out in chunks; records the largest.
struct Source_ {
    bytes: Vec<u8>,
    largest: Arc<AtomicU64>,
}

impl PackSource for Source_ {
    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }
    fn pack(&self, off: u64, out: &mut [u8]) {
        self.largest.fetch_max(out.len() as u64, Ordering::Relaxed);
        out.copy_from_slice(&self.bytes[off as usize..off as usize + out.len()]);
    }
}

/// Where the chunks go; records the largest.
struct Sink {
    bytes: Arc<Mutex<Vec<u8>>>,
    largest: Arc<AtomicU64>,
}

impl UnpackSink for Sink {
    fn capacity(&self) -> u64 {
        self.bytes.lock().map_or(0, |b| b.len() as u64)
    }
    fn unpack(&mut self, off: u64, data: &[u8]) {
        self.largest.fetch_max(data.len() as u64, Ordering::Relaxed);
        if let Ok(mut b) = self.bytes.lock() {
            b[off as usize..off as usize + data.len()].copy_from_slice(data);
        }
    }
}

const SIZES: [usize; 4] = [0, 100, 4096, 1 << 20];

/// Every size to the peer (its receive posted first, then not) and to
/// oneself; the largest chunk either side sees is one packet.
#[test]
fn packed_messages_arrive_whole_in_chunks_of_a_packet() {
    let out = run(2, None, 4096, |rank, e| {
        let largest = Arc::new(AtomicU64::new(0));
        let peer = 1 - rank;
        let mut ok = Vec::new();
        for (i, &n) in SIZES.iter().enumerate() {
            for (to, tag) in [(peer, i as i32), (rank, 100 + i as i32)] {
                let bytes = Arc::new(Mutex::new(vec![0u8; n]));
                let sink = Sink { bytes: bytes.clone(), largest: largest.clone() };
                let r = e.irecv_unpacked(Source::Rank(to), TagSel::Tag(tag), 5, Box::new(sink)).unwrap();
                let src = Source_ { bytes: payload(rank * 10 + i as u32, n), largest: largest.clone() };
                let s = e.isend_packed(to, tag, 5, Box::new(src), false).unwrap();
                assert_eq!(e.wait(s).unwrap(), Done::Sent);
                assert!(matches!(e.wait(r).unwrap(), Done::Placed { .. }));
                let from = if to == rank { rank } else { peer };
                ok.push(*bytes.lock().unwrap() == payload(from * 10 + i as u32, n));
            }
        }
        (ok, largest.load(Ordering::Relaxed))
    });
    for (rank, (ok, largest)) in out.into_iter().enumerate() {
        assert!(ok.iter().all(|&x| x), "rank {rank}: {ok:?}");
        assert!(largest <= default_caps().max_message as u64, "rank {rank}: a chunk of {largest} bytes");
        assert!(largest > 0);
    }
}

/// A packed message longer than the receive: the receive holds its first
/// bytes, nothing past its capacity is asked of the sink, and the receive
/// ends truncated.
#[test]
fn a_packed_message_longer_than_the_receive_is_truncated() {
    let out = run(2, None, 4096, |rank, e| {
        let largest = Arc::new(AtomicU64::new(0));
        if rank == 0 {
            for n in [2000usize, 200_000] {
                let src = Source_ { bytes: payload(3, n), largest: largest.clone() };
                let s = e.isend_packed(1, 7, 5, Box::new(src), false).unwrap();
                e.wait(s).unwrap();
            }
            true
        } else {
            let mut ok = true;
            for n in [2000usize, 200_000] {
                let bytes = Arc::new(Mutex::new(vec![0u8; n / 2]));
                let sink = Sink { bytes: bytes.clone(), largest: largest.clone() };
                let r = e.irecv_unpacked(Source::Rank(0), TagSel::Tag(7), 5, Box::new(sink)).unwrap();
                ok &= matches!(e.wait(r), Err(AdiError::Truncated { .. }));
                ok &= *bytes.lock().unwrap() == payload(3, n)[..n / 2];
            }
            ok
        }
    });
    assert!(out.iter().all(|&x| x));
}
