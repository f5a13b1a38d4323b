//! The User Register (UR) page: capabilities, the command queue and its
//! doorbell, completions, status and errors, and the exposure table.
//!
//! Seed 004 §2: "the process issues commands to the DIMMnet-2 controller and
//! obtains its state through UR". How it does so is **ours**: a command is a
//! 64-byte descriptor written into one of [`CQ_DEPTH`] queue entries plus a
//! doorbell write; the controller reports each command's outcome in a
//! completion entry and in monotonic counters. No UR register changes on
//! read: the host acknowledges errors by writing `ERROR_ACK`.

use core::mem::{offset_of, size_of};
use volatile_register::{RO, RW};

use crate::field;
use crate::meta::{Access, Field, Register, Source};

/// Magic number in `ID[31:0]`: ASCII "DNM2".
pub const MAGIC: u32 = 0x444E_4D32;
/// Register map major version (`ID[63:48]`); a driver refuses other majors.
pub const VERSION_MAJOR: u16 = 1;
/// Register map minor version (`ID[47:32]`).
pub const VERSION_MINOR: u16 = 4;

/// Number of command queue entries (descriptors and completions).
pub const CQ_DEPTH: usize = 32;
/// Number of exposure (remote access) table entries.
pub const EXPOSE_ENTRIES: usize = 8;
/// Largest IVS/BOTF packet payload in bytes (ours; InfiniBand allows 4 KiB MTU).
pub const MAX_PAYLOAD: usize = 4096;

/// One exposure table entry: a range of the slot's own SO-DIMM partition that
/// remote RVS/RVL may touch.
#[repr(C)]
pub struct ExposeEntry {
    /// Absolute SO-DIMM base address of the exposed range.
    pub base: RW<u64>,
    /// `[31:0]` size in bytes (0 = entry unused), `[33:32]` permissions ([`ExposePerm`]).
    pub size_perm: RW<u64>,
}

/// One completion entry, written by the controller when a command ends.
#[repr(C)]
pub struct CompletionEntry {
    /// Sequence number of the command plus one (0 = never written).
    pub done: RO<u64>,
    /// `[15:0]` status ([`crate::ErrorCode`]), `[63:16]` bytes moved.
    pub result: RO<u64>,
}

/// One 64-byte command descriptor slot (eight 64-bit words).
#[repr(C)]
pub struct DescriptorSlot {
    /// The words; see [`crate::command`] for their layout.
    pub words: [RW<u64>; 8],
}

/// The UR page, as the host sees it.
#[repr(C)]
pub struct UserRegs {
    /// `[31:0]` MAGIC, `[47:32]` minor version, `[63:48]` major version.
    pub id: RO<u64>,
    /// Node and slot identity and the fabric size.
    pub topology: RO<u64>,
    /// Capability flags and queue sizes.
    pub caps: RO<u64>,
    /// Absolute SO-DIMM address of this slot's partition.
    pub sodimm_base: RO<u64>,
    /// Size of this slot's partition in bytes.
    pub sodimm_size: RO<u64>,
    /// Packet and table limits.
    pub limits: RO<u64>,
    /// Device clock in Hz.
    pub clock_hz: RO<u64>,
    _reserved0: [u8; 0x100 - 0x38],
    /// Number of descriptors the host has posted (producer count).
    pub doorbell: RW<u64>,
    /// Number of descriptors the controller has fetched (consumer count).
    pub cmd_fetched: RO<u64>,
    /// Number of commands that have completed (successfully or not).
    pub cmd_completed: RO<u64>,
    /// Status flags ([`Status`]).
    pub status: RO<u64>,
    /// Number of errors reported (monotonic).
    pub error_count: RO<u64>,
    /// The most recent error.
    pub last_error: RO<u64>,
    /// The host writes the `ERROR_COUNT` value it has seen here.
    pub error_ack: RW<u64>,
    /// Incoming packets refused (monotonic).
    pub rx_refused: RO<u64>,
    /// Incoming IVS packets currently held because their ring is full.
    pub rx_held: RO<u64>,
    /// Incoming IVS packets accepted into rings (monotonic): the records
    /// published in rings, each when its NWA moves. Since map 1.2 the
    /// arrival queue in LLCM names each one's source.
    pub rx_accepted: RO<u64>,
    /// Commands fetched and not yet completed.
    pub inflight: RO<u64>,
    _reserved1: [u8; 0x180 - 0x158],
    /// Per completion slot: how many schedules started there have ended
    /// (monotonic; see [`crate::sched`]).
    pub sched_done: [RO<u64>; crate::sched::SCHED_SLOTS],
    /// Per completion slot: how the last schedule ended ([`sched_result`] fields).
    pub sched_result: [RO<u64>; crate::sched::SCHED_SLOTS],
    /// Exposure table.
    pub expose: [ExposeEntry; EXPOSE_ENTRIES],
    _reserved2: [u8; 0x400 - 0x280],
    /// Completion entries, indexed by `seq % CQ_DEPTH`.
    pub completions: [CompletionEntry; CQ_DEPTH],
    _reserved3: [u8; 0x800 - 0x600],
    /// Descriptor queue entries, indexed by `seq % CQ_DEPTH`.
    pub descriptors: [DescriptorSlot; CQ_DEPTH],
}

const _: () = assert!(size_of::<UserRegs>() == crate::layout::UR_SIZE);
const _: () = assert!(offset_of!(UserRegs, doorbell) == 0x100);
const _: () = assert!(offset_of!(UserRegs, expose) == 0x200);
const _: () = assert!(offset_of!(UserRegs, sched_done) == 0x180);
const _: () = assert!(offset_of!(UserRegs, sched_result) == 0x1C0);
const _: () = assert!(offset_of!(UserRegs, completions) == 0x400);
const _: () = assert!(offset_of!(UserRegs, descriptors) == 0x800);

/// Offsets of the UR registers (bytes from the start of UR), for the model's
/// MMIO dispatch and for the exporters.
pub mod off {
    use super::*;
    /// `ID`
    pub const ID: usize = offset_of!(UserRegs, id);
    /// `TOPOLOGY`
    pub const TOPOLOGY: usize = offset_of!(UserRegs, topology);
    /// `CAPS`
    pub const CAPS: usize = offset_of!(UserRegs, caps);
    /// `SODIMM_BASE`
    pub const SODIMM_BASE: usize = offset_of!(UserRegs, sodimm_base);
    /// `SODIMM_SIZE`
    pub const SODIMM_SIZE: usize = offset_of!(UserRegs, sodimm_size);
    /// `LIMITS`
    pub const LIMITS: usize = offset_of!(UserRegs, limits);
    /// `CLOCK_HZ`
    pub const CLOCK_HZ: usize = offset_of!(UserRegs, clock_hz);
    /// `DOORBELL`
    pub const DOORBELL: usize = offset_of!(UserRegs, doorbell);
    /// `CMD_FETCHED`
    pub const CMD_FETCHED: usize = offset_of!(UserRegs, cmd_fetched);
    /// `CMD_COMPLETED`
    pub const CMD_COMPLETED: usize = offset_of!(UserRegs, cmd_completed);
    /// `STATUS`
    pub const STATUS: usize = offset_of!(UserRegs, status);
    /// `ERROR_COUNT`
    pub const ERROR_COUNT: usize = offset_of!(UserRegs, error_count);
    /// `LAST_ERROR`
    pub const LAST_ERROR: usize = offset_of!(UserRegs, last_error);
    /// `ERROR_ACK`
    pub const ERROR_ACK: usize = offset_of!(UserRegs, error_ack);
    /// `RX_REFUSED`
    pub const RX_REFUSED: usize = offset_of!(UserRegs, rx_refused);
    /// `RX_HELD`
    pub const RX_HELD: usize = offset_of!(UserRegs, rx_held);
    /// `RX_ACCEPTED`
    pub const RX_ACCEPTED: usize = offset_of!(UserRegs, rx_accepted);
    /// `INFLIGHT`
    pub const INFLIGHT: usize = offset_of!(UserRegs, inflight);
    /// `SCHED_DONE[0]`.
    pub const SCHED_DONE: usize = offset_of!(UserRegs, sched_done);
    /// `SCHED_RESULT[0]`.
    pub const SCHED_RESULT: usize = offset_of!(UserRegs, sched_result);
    /// `EXPOSE[0]`
    pub const EXPOSE: usize = offset_of!(UserRegs, expose);
    /// `COMPLETION[0]`
    pub const COMPLETIONS: usize = offset_of!(UserRegs, completions);
    /// `DESCRIPTOR[0]`
    pub const DESCRIPTORS: usize = offset_of!(UserRegs, descriptors);
    /// Size of one exposure entry.
    pub const EXPOSE_STRIDE: usize = size_of::<ExposeEntry>();
    /// Size of one completion entry.
    pub const COMPLETION_STRIDE: usize = size_of::<CompletionEntry>();
    /// Size of one descriptor.
    pub const DESCRIPTOR_STRIDE: usize = size_of::<DescriptorSlot>();
}

/// Fields of `ID`.
pub mod id {
    use super::*;
    /// Magic number.
    pub const MAGIC: Field = field!("magic", 0, 32, "0x444E4D32 (\"DNM2\")");
    /// Minor version.
    pub const MINOR: Field = field!("minor", 32, 16, "register map minor version");
    /// Major version.
    pub const MAJOR: Field = field!("major", 48, 16, "register map major version; incompatible when different");
    /// All fields.
    pub const FIELDS: &[Field] = &[MAGIC, MINOR, MAJOR];
}

/// Fields of `TOPOLOGY`.
pub mod topology {
    use super::*;
    /// This slot's node number.
    pub const NODE: Field = field!("node", 0, 16, "this node's number");
    /// This slot's number.
    pub const SLOT: Field = field!("slot", 16, 16, "this slot's number within the node");
    /// Number of nodes in the fabric.
    pub const NODES: Field = field!("num_nodes", 32, 16, "nodes in the fabric");
    /// Slots per node.
    pub const SLOTS: Field = field!("num_slots", 48, 16, "slots per node");
    /// All fields.
    pub const FIELDS: &[Field] = &[NODE, SLOT, NODES, SLOTS];
}

/// Fields of `CAPS`.
pub mod caps {
    use super::*;
    /// Capability flags ([`super::Caps`]).
    pub const FLAGS: Field = field!("flags", 0, 32, "capability flags (CAPS_*)");
    /// Command queue depth.
    pub const CQ_DEPTH: Field = field!("cq_depth", 32, 16, "descriptor and completion entries");
    /// Exposure table size.
    pub const EXPOSE_ENTRIES: Field = field!("expose_entries", 48, 16, "exposure table entries");
    /// All fields.
    pub const FIELDS: &[Field] = &[FLAGS, CQ_DEPTH, EXPOSE_ENTRIES];
}

/// Fields of `LIMITS`.
pub mod limits {
    use super::*;
    /// Largest IVS/BOTF payload.
    pub const MAX_PAYLOAD: Field = field!("max_payload", 0, 32, "largest IVS/BOTF payload in bytes");
    /// IVS ring table entries.
    pub const RING_ENTRIES: Field = field!("ring_entries", 32, 16, "IVS ring table entries in LLCM");
    /// All fields.
    pub const FIELDS: &[Field] = &[MAX_PAYLOAD, RING_ENTRIES];
}

/// Fields of `LAST_ERROR`.
pub mod last_error {
    use super::*;
    /// Error code.
    pub const CODE: Field = field!("code", 0, 16, "ErrorCode of the most recent error");
    /// Whether the error belongs to a command.
    pub const HAS_SEQ: Field = field!("has_seq", 16, 1, "1 when seq names the failed command");
    /// Low 32 bits of the failing command's sequence number.
    pub const SEQ: Field = field!("seq", 32, 32, "low 32 bits of the failed command's sequence number");
    /// All fields.
    pub const FIELDS: &[Field] = &[CODE, HAS_SEQ, SEQ];
}

/// Fields of `EXPOSE[i].size_perm`.
pub mod expose {
    use super::*;
    /// Size of the exposed range.
    pub const SIZE: Field = field!("size", 0, 32, "bytes exposed (0 = unused entry)");
    /// Permissions.
    pub const PERM: Field = field!("perm", 32, 2, "bit 0 remote read (RVL), bit 1 remote write (RVS)");
    /// All fields.
    pub const FIELDS: &[Field] = &[SIZE, PERM];
}

/// Fields of `COMPLETION[i].result`.
pub mod completion {
    use super::*;
    /// Status.
    pub const STATUS: Field = field!("status", 0, 16, "ErrorCode (0 = OK)");
    /// Bytes moved.
    pub const BYTES: Field = field!("bytes", 16, 48, "bytes moved by the command");
    /// All fields.
    pub const FIELDS: &[Field] = &[STATUS, BYTES];
}

bitflags::bitflags! {
    /// Capability flags in `CAPS[31:0]`.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct Caps: u32 {
        /// VL and VS.
        const VECTOR_LOCAL = 1 << 0;
        /// RVL and RVS.
        const VECTOR_REMOTE = 1 << 1;
        /// IVS with per-source rings (IPUSH).
        const IVS = 1 << 2;
        /// BOTF.
        const BOTF = 1 << 3;
        /// Stride mode.
        const MODE_STRIDE = 1 << 4;
        /// List mode.
        const MODE_LIST = 1 << 5;
        /// Packed list mode.
        const MODE_PACKED_LIST = 1 << 6;
        /// The SCHED command and the collective engine (ours).
        const SCHED = 1 << 7;
        /// The LLCM arrival queue (map 1.2).
        const ARRIVALS = 1 << 8;
        /// The AMO command and the atomic unit (map 1.3).
        const ATOMIC = 1 << 9;
        /// The device is the simulator (a `sim.ctl` sits beside the MMIO file).
        const SIMULATED = 1 << 31;
    }
}

bitflags::bitflags! {
    /// `STATUS` flags.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct Status: u64 {
        /// `ERROR_COUNT != ERROR_ACK`: there are errors the host has not acknowledged.
        const ERROR = 1 << 0;
        /// Commands are fetched and not yet complete.
        const BUSY = 1 << 1;
        /// At least one incoming IVS packet is held because its ring is full.
        const RX_HELD = 1 << 2;
        /// The last doorbell write was invalid and ignored.
        const DOORBELL_INVALID = 1 << 3;
    }
}

bitflags::bitflags! {
    /// Permissions of an exposure entry.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct ExposePerm: u64 {
        /// Remote nodes may RVL from the range.
        const REMOTE_READ = 1 << 0;
        /// Remote nodes may RVS into the range.
        const REMOTE_WRITE = 1 << 1;
    }
}

/// A decoded completion result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompletionResult {
    /// Raw status (0 = OK); decode with [`crate::ErrorCode::from_raw`].
    pub status: u16,
    /// Bytes moved.
    pub bytes: u64,
}

impl CompletionResult {
    /// Pack into the `result` word.
    pub fn encode(self) -> u64 {
        let w = completion::STATUS.set(0, self.status as u64);
        completion::BYTES.set(w, self.bytes)
    }

    /// Unpack a `result` word.
    pub fn decode(word: u64) -> Self {
        CompletionResult { status: completion::STATUS.get(word) as u16, bytes: completion::BYTES.get(word) }
    }
}

/// Decoded `TOPOLOGY`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Topology {
    /// This node.
    pub node: u16,
    /// This slot.
    pub slot: u16,
    /// Nodes in the fabric.
    pub nodes: u16,
    /// Slots per node.
    pub slots: u16,
}

impl Topology {
    /// Pack into the register value.
    pub fn encode(self) -> u64 {
        let mut w = topology::NODE.set(0, self.node as u64);
        w = topology::SLOT.set(w, self.slot as u64);
        w = topology::NODES.set(w, self.nodes as u64);
        topology::SLOTS.set(w, self.slots as u64)
    }

    /// Unpack the register value.
    pub fn decode(w: u64) -> Self {
        Topology {
            node: topology::NODE.get(w) as u16,
            slot: topology::SLOT.get(w) as u16,
            nodes: topology::NODES.get(w) as u16,
            slots: topology::SLOTS.get(w) as u16,
        }
    }
}

/// `SCHED_RESULT[k]` fields.
pub mod sched_result {
    use super::*;
    /// Status.
    pub const STATUS: Field = field!("status", 0, 16, "ErrorCode of the schedule (0 = OK)");
    /// Failed entry.
    pub const ENTRY: Field = field!("entry", 16, 32, "entry that failed (valid when status != 0)");
    /// All fields.
    pub const FIELDS: &[Field] = &[STATUS, ENTRY];
}

/// The `ID` value of this register map version.
pub const fn id_value() -> u64 {
    (MAGIC as u64) | ((VERSION_MINOR as u64) << 32) | ((VERSION_MAJOR as u64) << 48)
}

/// The UR register table, for the exporters.
pub const REGISTERS: &[Register] = &[
    reg(off::ID, "ID", Access::RO, Source::Ours, "magic number and register-map version", id::FIELDS),
    reg(off::TOPOLOGY, "TOPOLOGY", Access::RO, Source::Ours, "this slot's node and slot numbers and the fabric size", topology::FIELDS),
    reg(off::CAPS, "CAPS", Access::RO, Source::Ours, "capabilities (commands and vector modes of seed 004 §2) and queue sizes", caps::FIELDS),
    reg(off::SODIMM_BASE, "SODIMM_BASE", Access::RO, Source::Ours, "absolute SO-DIMM address of this slot's partition (SO-DIMM per process: seed 004 §2)", &[]),
    reg(off::SODIMM_SIZE, "SODIMM_SIZE", Access::RO, Source::Ours, "bytes in this slot's SO-DIMM partition", &[]),
    reg(off::LIMITS, "LIMITS", Access::RO, Source::Ours, "packet payload and ring table limits", limits::FIELDS),
    reg(off::CLOCK_HZ, "CLOCK_HZ", Access::RO, Source::Paper, "controller clock (100 MHz FPGA, seed 004 Table 1)", &[]),
    reg(off::DOORBELL, "DOORBELL", Access::RW, Source::Ours, "host writes the number of descriptors posted so far; the controller fetches up to it", &[]),
    reg(off::CMD_FETCHED, "CMD_FETCHED", Access::RO, Source::Ours, "descriptors fetched; an entry may be rewritten once fetched", &[]),
    reg(off::CMD_COMPLETED, "CMD_COMPLETED", Access::RO, Source::Ours, "commands completed, successfully or not", &[]),
    reg(off::STATUS, "STATUS", Access::RO, Source::Ours, "status flags (STATUS_*)", &[]),
    reg(off::ERROR_COUNT, "ERROR_COUNT", Access::RO, Source::Ours, "errors reported since reset (commands refused, bad doorbells)", &[]),
    reg(off::LAST_ERROR, "LAST_ERROR", Access::RO, Source::Ours, "the most recent error", last_error::FIELDS),
    reg(off::ERROR_ACK, "ERROR_ACK", Access::RW, Source::Ours, "host writes the ERROR_COUNT it has handled; STATUS.ERROR clears when equal (reads never clear anything)", &[]),
    reg(off::RX_REFUSED, "RX_REFUSED", Access::RO, Source::Ours, "incoming packets refused (not exposed, ring disabled or invalid)", &[]),
    reg(off::RX_HELD, "RX_HELD", Access::RO, Source::Ours, "incoming IVS packets held right now because their ring is full (seed 004 §2: reception stops)", &[]),
    reg(off::RX_ACCEPTED, "RX_ACCEPTED", Access::RO, Source::Ours, "incoming IVS packets appended to rings", &[]),
    reg(off::INFLIGHT, "INFLIGHT", Access::RO, Source::Ours, "commands fetched and not yet complete", &[]),
    Register {
        name: "SCHED_DONE",
        offset: off::SCHED_DONE,
        count: crate::sched::SCHED_SLOTS,
        stride: 8,
        words: 1,
        access: Access::RO,
        source: Source::Ours,
        doc: "per completion slot: schedules started there that have ended (monotonic); the host waits for it to reach its count",
        fields: &[],
    },
    Register {
        name: "SCHED_RESULT",
        offset: off::SCHED_RESULT,
        count: crate::sched::SCHED_SLOTS,
        stride: 8,
        words: 1,
        access: Access::RO,
        source: Source::Ours,
        doc: "per completion slot: how the last schedule there ended",
        fields: sched_result::FIELDS,
    },
    Register {
        name: "EXPOSE",
        offset: off::EXPOSE,
        count: EXPOSE_ENTRIES,
        stride: off::EXPOSE_STRIDE,
        words: 2,
        access: Access::RW,
        source: Source::Ours,
        doc: "exposure table: word 0 = absolute SO-DIMM base; word 1 = size and permissions. Remote RVS/RVL may touch only ranges listed here",
        fields: expose::FIELDS,
    },
    Register {
        name: "COMPLETION",
        offset: off::COMPLETIONS,
        count: CQ_DEPTH,
        stride: off::COMPLETION_STRIDE,
        words: 2,
        access: Access::RO,
        source: Source::Ours,
        doc: "completion entry seq % 32: word 0 = seq + 1 once the command has ended; word 1 = result (fields below)",
        fields: completion::FIELDS,
    },
    Register {
        name: "DESCRIPTOR",
        offset: off::DESCRIPTORS,
        count: CQ_DEPTH,
        stride: off::DESCRIPTOR_STRIDE,
        words: 8,
        access: Access::RW,
        source: Source::Ours,
        doc: "descriptor entry seq % 32: eight words, layout in the Command descriptor section",
        fields: &[],
    },
];

const fn reg(
    offset: usize,
    name: &'static str,
    access: Access,
    source: Source,
    doc: &'static str,
    fields: &'static [Field],
) -> Register {
    Register { name, offset, count: 1, stride: 8, words: 1, access, source, doc, fields }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registers_do_not_overlap_and_fit_the_page() {
        let mut spans: Vec<(usize, usize, &str)> =
            REGISTERS.iter().map(|r| (r.offset, r.offset + r.count * r.stride, r.name)).collect();
        spans.sort();
        for w in spans.windows(2) {
            assert!(w[0].1 <= w[1].0, "{} overlaps {}", w[0].2, w[1].2);
        }
        assert!(spans.last().unwrap().1 <= crate::layout::UR_SIZE);
    }

    #[test]
    fn topology_round_trips() {
        let t = Topology { node: 3, slot: 7, nodes: 4, slots: 8 };
        assert_eq!(Topology::decode(t.encode()), t);
    }
}
