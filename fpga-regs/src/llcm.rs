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

use core::mem::{offset_of, size_of};
use volatile_register::RW;

use crate::field;
use crate::layout::{LLCM_SIZE, MAX_SOURCES};
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
    /// Ring table, indexed by source.
    pub rings: [RingEntry; MAX_SOURCES],
    /// Host scratch memory (the controller never touches it).
    pub scratch: [RW<u64>; (LLCM_SIZE - MAX_SOURCES * 32) / 8],
}

const _: () = assert!(size_of::<Llcm>() == LLCM_SIZE);
const _: () = assert!(size_of::<RingEntry>() == 32);

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
    /// Offset of ring entry `source`.
    pub const fn ring(source: usize) -> usize {
        RINGS + source * RING_STRIDE
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
        count: MAX_SOURCES,
        stride: off::RING_STRIDE,
        words: 4,
        access: Access::RW,
        source: Source::Paper,
        doc: "IVS ring table, one entry per source (IPUSH, seed 004 §2). Words: BASE (absolute SO-DIMM address, host), SIZE_CTRL (host, fields below), NWA = Next Write Addr (controller, monotonic byte count), NRA = Next Read Addr (host, monotonic byte count). Layout and counter encoding are ours",
        fields: size_ctrl::FIELDS,
    },
    Register {
        name: "SCRATCH",
        offset: off::SCRATCH,
        count: (LLCM_SIZE - MAX_SOURCES * 32) / 8,
        stride: 8,
        words: 1,
        access: Access::RW,
        source: Source::Ours,
        doc: "host scratch; the controller never reads or writes it",
        fields: &[],
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
}
