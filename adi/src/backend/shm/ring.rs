//! One single-producer, single-consumer ring of messages in memory shared
//! between two processes (issue 49, item 9): the sender's process writes
//! records and advances `tail`, the receiver's reads them and advances
//! `head`. No system call and no lock on the way; the two counters sit in
//! cache lines of their own, and each side keeps a private copy of the
//! other's counter, so that a message in flight moves three cache lines
//! between the cores (the tail, the record, the head), as in MPICH's and
//! Open MPI's shared-memory paths.
//!
//! A sender that finds the ring full says so in the control block (a
//! flag beside the tail), and the receiver, after it has made room, looks
//! at the flag and wakes the sender: a sender waiting for room is never
//! left asleep.
//!
//! A record is an 8-byte header (the payload's length, then a check word)
//! and the payload, padded to 8 bytes; it never wraps around the ring's
//! end: a record that would is preceded by a pad record that fills the
//! end, and starts at the ring's beginning.
//!
//! The memory is shared with another process, which may misbehave (a
//! bug, a crash halfway through a write). This side therefore never forms
//! a Rust reference into it: it copies bytes in and out through raw
//! pointers, and checks every length it reads against the ring before it
//! uses it, so that a peer that lies can give it wrong bytes or an error,
//! never a read or write outside the ring.

use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

/// Bytes of a ring's control block: the tail's cache line (with the
/// sender's want-room flag), then the head's.
pub const CONTROL_BYTES: usize = 128;
/// A record's header.
const HEADER: usize = 8;
/// The length word of a pad record (skip to the ring's start).
const PAD: u32 = u32::MAX;
/// The check word of every record: a torn or foreign record is caught.
const CHECK: u32 = 0x5348_4d31; // "SHM1"

/// Why a ring's contents cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RingError {
    /// A record's header is not one a sender of this library writes.
    #[error("a record at offset {at} of a shared-memory ring is malformed ({why}); the sender is not this library, or broke")]
    Malformed {
        /// Its offset in the ring.
        at: u64,
        /// What is wrong.
        why: &'static str,
    },
}

/// A ring's control block and data area, as raw pointers into a mapping
/// that outlives the ring (its owner keeps both).
#[derive(Debug, Clone, Copy)]
pub struct RingMem {
    /// The control block ([`CONTROL_BYTES`]: the tail at 0, the head at 64),
    /// 64-byte aligned.
    pub control: *mut u8,
    /// The data area.
    pub data: *mut u8,
    /// The data area's bytes: a power of two, at least 64.
    pub capacity: usize,
}

// SAFETY: a RingMem is only pointers into a shared mapping; the sender and
// the receiver types below that use it each touch their own side only.
unsafe impl Send for RingMem {}

impl RingMem {
    fn tail(&self) -> &AtomicU64 {
        // SAFETY: `control` is 64-byte aligned and valid for CONTROL_BYTES
        // for as long as the mapping lives, which the owner guarantees
        // outlives self; an AtomicU64 may alias memory another process
        // writes, as long as every access is atomic, which both sides' are.
        unsafe { &*(self.control as *const AtomicU64) }
    }

    fn head(&self) -> &AtomicU64 {
        // SAFETY: as in `tail`, 64 bytes further (inside CONTROL_BYTES).
        unsafe { &*(self.control.add(64) as *const AtomicU64) }
    }

    fn want_room(&self) -> &AtomicU32 {
        // SAFETY: as in `tail`, 8 bytes further (4-aligned, inside the
        // tail's cache line).
        unsafe { &*(self.control.add(8) as *const AtomicU32) }
    }
}

const fn padded(len: usize) -> usize {
    (len + 7) & !7
}

/// The largest payload a ring of `capacity` bytes takes in one record: a
/// quarter of it, so that several are in flight at once.
pub const fn max_payload(capacity: usize) -> usize {
    capacity / 4 - HEADER
}

/// The sending side of a ring.
#[derive(Debug)]
pub struct Producer {
    mem: RingMem,
    /// The next record's position (bytes written since the start).
    tail: u64,
    /// The head as last read: room is known to be at least this much.
    head_seen: u64,
}

impl Producer {
    /// The producer of the ring at `mem`, which starts empty or continues
    /// where the shared tail says.
    pub fn new(mem: RingMem) -> Producer {
        let tail = mem.tail().load(Ordering::Acquire);
        let head_seen = mem.head().load(Ordering::Acquire);
        Producer { mem, tail, head_seen }
    }

    /// Append one record of `parts`; `false` when the ring has no room
    /// for it now (the receiver has not read enough yet). A payload over
    /// [`max_payload`] is the caller's error, checked before.
    pub fn push(&mut self, parts: &[&[u8]]) -> bool {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        debug_assert!(len <= max_payload(self.mem.capacity));
        let cap = self.mem.capacity as u64;
        let need = (HEADER + padded(len)) as u64;
        let at = self.tail % cap;
        // A record that would cross the end is preceded by a pad to it.
        let pad = if at + need > cap { cap - at } else { 0 };
        if self.tail + pad + need - self.head_seen > cap {
            self.head_seen = self.mem.head().load(Ordering::Acquire);
            if self.tail + pad + need - self.head_seen > cap {
                return false;
            }
        }
        // SAFETY: [at, at + pad) and then [start, start + need) lie inside
        // the data area (capacity bytes, valid while the mapping lives),
        // and the receiver reads neither before the tail's release below
        // says they are written; the room check above keeps both clear
        // of records it has not read.
        unsafe {
            if pad > 0 {
                write_header(self.mem.data.add(at as usize), PAD);
            }
            let start = ((self.tail + pad) % cap) as usize;
            let rec = self.mem.data.add(start);
            write_header(rec, len as u32);
            let mut off = HEADER;
            for p in parts {
                std::ptr::copy_nonoverlapping(p.as_ptr(), rec.add(off), p.len());
                off += p.len();
            }
        }
        self.tail += pad + need;
        self.mem.tail().store(self.tail, Ordering::Release);
        true
    }

    /// After [`Producer::push`] refused: ask the receiver to wake this
    /// side when it has made room. Returns whether room appeared meanwhile
    /// (then push again instead of waiting).
    pub fn ask_for_room(&mut self) -> bool {
        self.mem.want_room().store(1, Ordering::SeqCst);
        // Pairs with the receiver's fence between its head store and its
        // look at the flag: it sees the flag, or we see its new head.
        fence(Ordering::SeqCst);
        let head = self.mem.head().load(Ordering::Acquire);
        let grew = head != self.head_seen;
        self.head_seen = head;
        grew
    }

    /// Whether the receiver has read records since this side last looked
    /// (room may have appeared).
    pub fn room_grew(&self) -> bool {
        self.mem.head().load(Ordering::Acquire) != self.head_seen
    }

    /// Whether the receiver has read everything sent.
    pub fn drained(&self) -> bool {
        self.mem.head().load(Ordering::Acquire) == self.tail
    }
}

/// # Safety
/// `at` must be valid for an 8-byte write, 8-byte aligned.
unsafe fn write_header(at: *mut u8, len: u32) {
    let word = u64::from(len) | (u64::from(CHECK) << 32);
    // SAFETY: the caller's contract.
    unsafe { std::ptr::write_volatile(at as *mut u64, word) };
}

/// The receiving side of a ring.
#[derive(Debug)]
pub struct Consumer {
    mem: RingMem,
    /// The next record's position.
    head: u64,
}

/// One record in a ring, readable until the consumer moves on.
#[derive(Debug)]
pub struct Record {
    /// Where its payload starts.
    ptr: *const u8,
    /// Its payload's length.
    pub len: usize,
}

impl Record {
    /// Copy `out.len()` payload bytes from `skip` on into `out` (the caller
    /// keeps `skip + out.len() <= len`).
    pub fn copy_to(&self, skip: usize, out: &mut [u8]) {
        assert!(skip + out.len() <= self.len, "a read past a shared-memory record's end");
        // SAFETY: the record's payload [ptr, ptr + len) lies inside the
        // ring's data area (checked when it was found), which stays
        // mapped and unwritten by the sender until the consumer's head
        // passes it, after the record is no longer used.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(skip), out.as_mut_ptr(), out.len()) };
    }
}

impl Consumer {
    /// The consumer of the ring at `mem`.
    pub fn new(mem: RingMem) -> Consumer {
        let head = mem.head().load(Ordering::Acquire);
        Consumer { mem, head }
    }

    /// Whether a record is waiting.
    pub fn ready(&self) -> bool {
        self.mem.tail().load(Ordering::Acquire) != self.head
    }

    /// Hand each waiting record to `each`, in order, then give their room
    /// back to the sender in one store. Returns how many were handed.
    pub fn drain(&mut self, mut each: impl FnMut(&Record)) -> Result<usize, RingError> {
        let tail = self.mem.tail().load(Ordering::Acquire);
        let cap = self.mem.capacity as u64;
        if tail.wrapping_sub(self.head) > cap {
            return Err(RingError::Malformed { at: self.head, why: "the tail is more than a ring ahead" });
        }
        let mut n = 0;
        let mut head = self.head;
        let result = loop {
            if head == tail {
                break Ok(n);
            }
            let at = (head % cap) as usize;
            // SAFETY: at is 8-aligned and inside the data area (positions
            // advance by multiples of 8 and capacity is a multiple of 8);
            // the producer wrote this header before its release of a tail
            // past it, which the acquire load above saw.
            let word = unsafe { std::ptr::read_volatile(self.mem.data.add(at) as *const u64) };
            let (len, check) = (word as u32, (word >> 32) as u32);
            if check != CHECK {
                break Err(RingError::Malformed { at: head, why: "its check word is wrong" });
            }
            if len == PAD {
                head += cap - at as u64;
                continue;
            }
            let need = (HEADER + padded(len as usize)) as u64;
            if at as u64 + need > cap || head + need > tail || len as usize > max_payload(cap as usize) {
                break Err(RingError::Malformed { at: head, why: "its length runs past what was written" });
            }
            // SAFETY: [at + HEADER, at + HEADER + len) is inside the data
            // area (checked just above).
            let ptr = unsafe { self.mem.data.add(at + HEADER) };
            each(&Record { ptr, len: len as usize });
            head += need;
            n += 1;
        };
        if head != self.head {
            self.head = head;
            self.mem.head().store(head, Ordering::Release);
        }
        result
    }

    /// Whether the sender asked to be woken when there is room (and forget
    /// that it did): call after [`Consumer::drain`] made some.
    pub fn room_wanted(&self) -> bool {
        fence(Ordering::SeqCst);
        self.mem.want_room().load(Ordering::Relaxed) != 0 && self.mem.want_room().swap(0, Ordering::SeqCst) != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ring in heap memory, 64-byte aligned like a mapping's.
    struct Heap {
        buf: Vec<u64>,
        capacity: usize,
    }

    impl Heap {
        fn new(capacity: usize) -> Heap {
            Heap { buf: vec![0u64; (CONTROL_BYTES + capacity) / 8 + 8], capacity }
        }
        fn mem(&mut self) -> RingMem {
            let base = self.buf.as_mut_ptr() as *mut u8;
            let skew = base.align_offset(64);
            // SAFETY: buf has 64 spare bytes for the alignment.
            let control = unsafe { base.add(skew) };
            // SAFETY: CONTROL_BYTES + capacity bytes follow, inside buf.
            RingMem { control, data: unsafe { control.add(CONTROL_BYTES) }, capacity: self.capacity }
        }
    }

    fn take_all(c: &mut Consumer) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        c.drain(|r| {
            let mut v = vec![0u8; r.len];
            r.copy_to(0, &mut v);
            out.push(v);
        })
        .unwrap();
        out
    }

    #[test]
    fn records_arrive_whole_in_order_across_the_wrap() {
        let mut h = Heap::new(256);
        let (mut p, mut c) = (Producer::new(h.mem()), Consumer::new(h.mem()));
        let mut sent = Vec::new();
        for i in 0..200u32 {
            let msg: Vec<u8> = (0..(i % 53) as u8).map(|b| b ^ i as u8).collect();
            if !p.push(&[&i.to_le_bytes(), &msg]) {
                for got in take_all(&mut c) {
                    assert_eq!(got, sent.remove(0));
                }
                assert!(p.push(&[&i.to_le_bytes(), &msg]), "an empty ring takes a record");
            }
            let mut whole = i.to_le_bytes().to_vec();
            whole.extend(&msg);
            sent.push(whole);
        }
        for got in take_all(&mut c) {
            assert_eq!(got, sent.remove(0));
        }
        assert!(sent.is_empty() && p.drained());
    }

    #[test]
    fn a_full_ring_refuses_until_read() {
        let mut h = Heap::new(256);
        let (mut p, mut c) = (Producer::new(h.mem()), Consumer::new(h.mem()));
        let big = [7u8; 56]; // max_payload(256) = 56
        let mut n = 0;
        while p.push(&[&big]) {
            n += 1;
        }
        assert_eq!(n, 4);
        assert!(!c.room_wanted(), "no sender asked");
        assert!(!p.ask_for_room(), "no room appeared");
        assert_eq!(c.drain(|_| {}).unwrap(), 4);
        assert!(c.room_wanted(), "the sender asked for room");
        assert!(!c.room_wanted(), "once");
        assert!(p.push(&[&big]));
    }

    #[test]
    fn a_lying_sender_is_an_error_not_a_wild_read() {
        let mut h = Heap::new(256);
        let (mut p, mut c) = (Producer::new(h.mem()), Consumer::new(h.mem()));
        assert!(p.push(&[b"hello"]));
        // The sender claims a record longer than the ring.
        let mem = h.mem();
        // SAFETY: the data area's first header word, in the heap ring.
        unsafe { write_header(mem.data, 10_000) };
        assert!(matches!(c.drain(|_| {}), Err(RingError::Malformed { .. })));
        // A tail far ahead.
        mem.tail().store(1 << 40, Ordering::Release);
        assert!(matches!(Consumer::new(mem).drain(|_| {}), Err(RingError::Malformed { .. })));
        // A wrong check word.
        let mut h = Heap::new(256);
        let (mut p, mut c) = (Producer::new(h.mem()), Consumer::new(h.mem()));
        assert!(p.push(&[b"hello"]));
        // SAFETY: as above.
        unsafe { std::ptr::write_volatile(h.mem().data as *mut u64, 5) };
        assert!(matches!(c.drain(|_| {}), Err(RingError::Malformed { .. })));
    }

    #[test]
    fn two_threads_move_a_million_records() {
        let mut h = Heap::new(4096);
        let mem = h.mem();
        let (mut p, mut c) = (Producer::new(mem), Consumer::new(mem));
        const N: u64 = 1_000_000;
        let t = std::thread::spawn(move || {
            for i in 0..N {
                let len = (i % 100) as usize;
                let payload = [i as u8; 100];
                while !p.push(&[&i.to_le_bytes(), &payload[..len]]) {
                    std::hint::spin_loop();
                }
            }
        });
        let mut next = 0u64;
        while next < N {
            c.drain(|r| {
                let mut v = vec![0u8; r.len];
                r.copy_to(0, &mut v);
                let i = u64::from_le_bytes(v[..8].try_into().unwrap());
                assert_eq!(i, next);
                assert_eq!(r.len, 8 + (i % 100) as usize);
                assert!(v[8..].iter().all(|b| *b == i as u8));
                next += 1;
            })
            .unwrap();
        }
        t.join().unwrap();
        drop(h);
    }
}
