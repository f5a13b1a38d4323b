//! Low Latency Common Memory (LLCM): the IVS ring table and host scratch.
//!
//! Seed 004 §2: IVS appends data to a ring buffer in the receiver's SO-DIMM;
//! the controller tells the process where it wrote through *Next Write Addr*
//! in LLCM, the process advances *Next Read Addr* in LLCM after reading, and
//! when the ring is full reception stops so the ring is never overwritten.
//! One ring per source process (IPUSH) makes each ring a hardware virtual
//! connection (§4).
//!
//! **Ours**: the table has one 32-byte entry per possible source, indexed by
//! `source_node * num_slots + source_slot`; NWA and NRA are monotonic byte
//! counters (position = `base + counter % size`), which removes the
//! full/empty ambiguity of raw addresses; `NWA - NRA` is taken modulo 2^64,
//! so counters may start anywhere the host sets them; every record the controller appends
//! is padded to 8 bytes; a record is never split across a packet boundary,
//! but it may wrap around the end of the ring.
//!
//! **Map 1.2 (ours)**: 1,024 sources instead of 256, and an *arrival
//! queue*. Entries 0–255 and the scratch area keep their 1.1 offsets (a 1.1
//! driver still works for jobs of up to 256 sources); entries 256–1,023
//! follow the scratch area. Finding new data by reading every source's NWA
//! costs one uncached read per source per poll: 1,023 reads, about 110 us
//! on the paper's host, at 1,024 ranks. So whenever the controller publishes
//! a record in any ring it also writes the source's index into the arrival
//! queue, entry `k % ARRIVAL_ENTRIES` for the `k`-th record it published
//! (counted in UR `RX_ACCEPTED`), tagged with `k`'s low 32 bits. A host
//! reads `RX_ACCEPTED`, then the entries it has not seen, and drains only
//! those rings: a poll that finds nothing costs one read at any job size.
//! The queue never stalls the controller: an entry whose tag is not the one
//! the host expects was overwritten (the host fell more than
//! `ARRIVAL_ENTRIES` records behind), and the host scans every ring once.
//!
//! **Map 1.4 (ours)**: 16,384 sources instead of 1,024. Every earlier entry,
//! the scratch area and the arrival queue keep their 1.2 offsets; the
//! entries of sources 1,024–16,383 follow the arrival queue. A job of `n`
//! sources uses (and so touches) only the first `n` entries.

use core::mem::{offset_of, size_of};
use volatile_register::RW;

use crate::field;
use crate::layout::{LLCM_SIZE, MAX_SOURCES};

/// Ring entries at the start of LLCM (the whole table of map 1.1).
pub const LOW_RINGS: usize = 256;
/// Ring entries of maps 1.1 and 1.2 together; map 1.4's follow the arrival queue.
pub const NEAR_RINGS: usize = 1024;
/// Entries of the arrival queue (map 1.2).
pub const ARRIVAL_ENTRIES: usize = 1024;
/// Host scratch words (the 1.1 offset and size).
const SCRATCH_WORDS: usize = 1024;
use crate::meta::{Access, Field, Register, Source};

/// Alignment of every ring record (bytes).
pub const RING_ALIGN: u64 = 8;

/// One IVS ring table entry.
#[repr(C)]
pub struct RingEntry {
    /// Absolute SO-DIMM address of the ring (in the receiver's partition, 8-byte aligned).
    pub base: RW<u64>,
    /// `[31:0]` ring size in bytes (multiple of 8), `[32]` enable.
    pub size_ctrl: RW<u64>,
    /// Next Write Addr: bytes ever appended; written by the controller while enabled.
    pub nwa: RW<u64>,
    /// Next Read Addr: bytes ever consumed; written by the host.
    pub nra: RW<u64>,
}

/// The LLCM region.
#[repr(C)]
pub struct Llcm {
    /// Ring table entries of sources 0–255 (at their map 1.1 offsets).
    pub rings: [RingEntry; LOW_RINGS],
    /// Host scratch memory (the controller never touches it).
    pub scratch: [RW<u64>; SCRATCH_WORDS],
    /// Ring table entries of sources 256–1,023 (map 1.2).
    pub high_rings: [RingEntry; NEAR_RINGS - LOW_RINGS],
    /// The arrival queue (map 1.2): entry `k % ARRIVAL_ENTRIES` names the
    /// source of the `k`-th record the controller published ([`arrival`]).
    pub arrivals: [RW<u64>; ARRIVAL_ENTRIES],
    /// Ring table entries of sources 1,024–16,383 (map 1.4).
    pub far_rings: [RingEntry; MAX_SOURCES - NEAR_RINGS],
}

const _: () = assert!(size_of::<Llcm>() == LLCM_SIZE);
const _: () = assert!(size_of::<RingEntry>() == 32);
const _: () = assert!(offset_of!(Llcm, scratch) == 0x2000, "the 1.1 scratch offset");

/// Offsets inside LLCM.
pub mod off {
    use super::*;
    /// First ring table entry.
    pub const RINGS: usize = offset_of!(Llcm, rings);
    /// Size of one ring entry.
    pub const RING_STRIDE: usize = size_of::<RingEntry>();
    /// `base` inside an entry.
    pub const RING_BASE: usize = offset_of!(RingEntry, base);
    /// `size_ctrl` inside an entry.
    pub const RING_SIZE_CTRL: usize = offset_of!(RingEntry, size_ctrl);
    /// `nwa` inside an entry.
    pub const RING_NWA: usize = offset_of!(RingEntry, nwa);
    /// `nra` inside an entry.
    pub const RING_NRA: usize = offset_of!(RingEntry, nra);
    /// Host scratch.
    pub const SCRATCH: usize = offset_of!(Llcm, scratch);
    /// Ring entries of sources 256 and up (map 1.2).
    pub const HIGH_RINGS: usize = offset_of!(Llcm, high_rings);
    /// The arrival queue (map 1.2).
    pub const ARRIVALS: usize = offset_of!(Llcm, arrivals);
    /// Ring entries of sources 1,024 and up (map 1.4).
    pub const FAR_RINGS: usize = offset_of!(Llcm, far_rings);
    /// Offset of ring entry `source`.
    pub const fn ring(source: usize) -> usize {
        if source < LOW_RINGS {
            RINGS + source * RING_STRIDE
        } else if source < NEAR_RINGS {
            HIGH_RINGS + (source - LOW_RINGS) * RING_STRIDE
        } else {
            FAR_RINGS + (source - NEAR_RINGS) * RING_STRIDE
        }
    }
    /// Offset of arrival queue entry `k % ARRIVAL_ENTRIES`.
    pub const fn arrival(k: u64) -> usize {
        ARRIVALS + (k % ARRIVAL_ENTRIES as u64) as usize * 8
    }
}

/// Fields of an arrival queue entry (map 1.2).
pub mod arrival {
    use super::*;
    /// Source index.
    pub const SOURCE: Field = field!("source", 0, 32, "index of the source whose ring got the record");
    /// Tag.
    pub const TAG: Field =
        field!("tag", 32, 32, "low 32 bits of k, the record's number; another tag means the entry was overwritten");
    /// All fields.
    pub const FIELDS: &[Field] = &[SOURCE, TAG];

    /// The entry for the `k`-th record published, from `source`.
    pub const fn encode(k: u64, source: usize) -> u64 {
        ((k & 0xffff_ffff) << 32) | (source as u64 & 0xffff_ffff)
    }

    /// The source named by the entry read for record `k`, or `None` if
    /// the entry no longer holds record `k`.
    pub const fn decode(k: u64, word: u64) -> Option<usize> {
        if word >> 32 == k & 0xffff_ffff {
            Some((word & 0xffff_ffff) as usize)
        } else {
            None
        }
    }
}

/// Fields of a ring entry's `size_ctrl`.
pub mod size_ctrl {
    use super::*;
    /// Ring size.
    pub const SIZE: Field = field!("size", 0, 32, "ring size in bytes, a non-zero multiple of 8");
    /// Enable.
    pub const ENABLE: Field =
        field!("enable", 32, 1, "1 = the controller appends to this ring; while 0 the host may initialise NWA and NRA");
    /// All fields.
    pub const FIELDS: &[Field] = &[SIZE, ENABLE];
}

/// Bytes a payload of `len` bytes occupies in a ring.
pub const fn record_len(len: u64) -> u64 {
    len.div_ceil(RING_ALIGN) * RING_ALIGN
}

/// A decoded ring entry (as the controller evaluates it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingState {
    /// Base address.
    pub base: u64,
    /// Size in bytes.
    pub size: u64,
    /// Enabled.
    pub enabled: bool,
    /// Next write counter.
    pub nwa: u64,
    /// Next read counter.
    pub nra: u64,
}

impl RingState {
    /// Decode the four words of an entry.
    pub fn decode(words: [u64; 4]) -> Self {
        RingState {
            base: words[0],
            size: size_ctrl::SIZE.get(words[1]),
            enabled: size_ctrl::ENABLE.get(words[1]) == 1,
            nwa: words[2],
            nra: words[3],
        }
    }

    /// The `size_ctrl` word for a ring.
    pub fn size_ctrl(size: u32, enabled: bool) -> u64 {
        size_ctrl::ENABLE.set(size_ctrl::SIZE.set(0, size as u64), enabled as u64)
    }

    /// Bytes appended and not yet consumed, or `None` if the pointers are inconsistent.
    pub fn used(&self) -> Option<u64> {
        let used = self.nwa.wrapping_sub(self.nra);
        (used <= self.size).then_some(used)
    }

    /// Free bytes, or `None` if the pointers are inconsistent.
    pub fn free(&self) -> Option<u64> {
        self.used().map(|u| self.size - u)
    }

    /// Byte offset inside the ring of counter value `c`.
    pub fn pos(&self, c: u64) -> u64 {
        if self.size == 0 {
            0
        } else {
            c % self.size
        }
    }
}

/// The LLCM table for the exporters.
pub const REGISTERS: &[Register] = &[
    Register {
        name: "RING",
        offset: off::RINGS,
        count: LOW_RINGS,
        stride: off::RING_STRIDE,
        words: 4,
        access: Access::RW,
        source: Source::Paper,
        doc: "IVS ring table, one entry per source (IPUSH, seed 004 §2), sources 0-255. Words: BASE (absolute SO-DIMM address, host), SIZE_CTRL (host, fields below), NWA = Next Write Addr (controller, monotonic byte count), NRA = Next Read Addr (host, monotonic byte count). Layout and counter encoding are ours",
        fields: size_ctrl::FIELDS,
    },
    Register {
        name: "SCRATCH",
        offset: off::SCRATCH,
        count: SCRATCH_WORDS,
        stride: 8,
        words: 1,
        access: Access::RW,
        source: Source::Ours,
        doc: "host scratch; the controller never reads or writes it",
        fields: &[],
    },
    Register {
        name: "RING_HIGH",
        offset: off::HIGH_RINGS,
        count: NEAR_RINGS - LOW_RINGS,
        stride: off::RING_STRIDE,
        words: 4,
        access: Access::RW,
        source: Source::Ours,
        doc: "map 1.2: the ring table entries of sources 256-1023, laid out as RING",
        fields: size_ctrl::FIELDS,
    },
    Register {
        name: "ARRIVAL",
        offset: off::ARRIVALS,
        count: ARRIVAL_ENTRIES,
        stride: 8,
        words: 1,
        access: Access::RO,
        source: Source::Ours,
        doc: "map 1.2 arrival queue: when the controller publishes its k-th record in any ring (k = UR RX_ACCEPTED before the increment) it writes entry k % 1024 = (k's low 32 bits, source index), in the same cycle as NWA. A host reads RX_ACCEPTED and the entries it has not seen, and drains only those rings; a tag that is not the one it expects means it fell more than 1024 records behind, and it scans every ring",
        fields: arrival::FIELDS,
    },
    Register {
        name: "RING_FAR",
        offset: off::FAR_RINGS,
        count: MAX_SOURCES - NEAR_RINGS,
        stride: off::RING_STRIDE,
        words: 4,
        access: Access::RW,
        source: Source::Ours,
        doc: "map 1.4: the ring table entries of sources 1024-16383, laid out as RING",
        fields: size_ctrl::FIELDS,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_accounting() {
        let r = RingState { base: 0, size: 64, enabled: true, nwa: 100, nra: 60 };
        assert_eq!(r.used(), Some(40));
        assert_eq!(r.free(), Some(24));
        assert_eq!(r.pos(100), 36);
        let bad = RingState { nra: 101, ..r };
        assert_eq!(bad.used(), None);
        let over = RingState { nra: 0, ..r };
        assert_eq!(over.used(), None);
        let wrapped = RingState { nwa: 8, nra: u64::MAX - 15, ..r };
        assert_eq!(wrapped.used(), Some(24));
        assert_eq!(record_len(0), 0);
        assert_eq!(record_len(1), 8);
        assert_eq!(record_len(32), 32);
    }

    #[test]
    fn ring_entries_keep_their_1_1_and_1_2_offsets_and_the_rest_follow() {
        assert_eq!(off::ring(0), 0);
        assert_eq!(off::ring(255), 255 * 32);
        assert_eq!(off::SCRATCH, 256 * 32);
        assert_eq!(off::ring(256), off::SCRATCH + 8 * SCRATCH_WORDS);
        assert_eq!(off::ring(NEAR_RINGS - 1) + 32, off::ARRIVALS);
        assert_eq!(off::arrival(ARRIVAL_ENTRIES as u64 + 3), off::ARRIVALS + 24);
        assert_eq!(off::ARRIVALS, 0xA000, "the 1.2 arrival queue offset");
        assert_eq!(off::ring(NEAR_RINGS), off::arrival(ARRIVAL_ENTRIES as u64 - 1) + 8);
        assert_eq!(off::ring(MAX_SOURCES - 1) + 32, LLCM_SIZE);
    }

    #[test]
    fn an_arrival_entry_names_its_record_or_is_known_to_be_overwritten() {
        let w = arrival::encode(5, 1023);
        assert_eq!(arrival::decode(5, w), Some(1023));
        assert_eq!(arrival::decode(5 + ARRIVAL_ENTRIES as u64, w), None, "overwritten by a later record");
        let far = (1u64 << 32) + 7;
        assert_eq!(arrival::decode(far, arrival::encode(far, 9)), Some(9), "tags wrap with the counter");
    }
}
