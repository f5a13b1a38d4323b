//! The whole register map as one serialisable value, from which the C
//! header, the JSON document and the Markdown spec page are generated.

use serde::Serialize;

use crate::command::{self, DescFlags};
use crate::error::ErrorCode;
use crate::layout::{self, Caching, Region};
use crate::meta::{EnumInfo, EnumValue, Register, Source, Word};
use crate::packet;
use crate::ur::{self, Caps, ExposePerm, Status};
use crate::{llcm, MAP_VERSION};

/// A region of a slot.
#[derive(Clone, Debug, Serialize)]
pub struct RegionInfo {
    /// Name (UR, LLCM, WW, PW).
    pub name: &'static str,
    /// Offset in the slot.
    pub offset: usize,
    /// Size.
    pub size: usize,
    /// Host mapping.
    pub caching: Caching,
    /// Purpose.
    pub doc: &'static str,
    /// Registers inside (empty for the data windows).
    pub registers: Vec<Register>,
}

/// A named constant.
#[derive(Clone, Debug, Serialize)]
pub struct Constant {
    /// Name (upper snake case, without prefix).
    pub name: &'static str,
    /// Value.
    pub value: u64,
    /// Meaning.
    pub doc: &'static str,
}

/// A word-structured layout (descriptor, packet header).
#[derive(Clone, Debug, Serialize)]
pub struct WordLayout {
    /// Name.
    pub name: &'static str,
    /// Size in bytes.
    pub bytes: usize,
    /// Words.
    pub words: Vec<Word>,
    /// What it is.
    pub doc: &'static str,
}

/// A design fact and where it comes from.
#[derive(Clone, Debug, Serialize)]
pub struct Fact {
    /// What.
    pub topic: &'static str,
    /// Paper or ours.
    pub source: Source,
    /// The fact.
    pub text: &'static str,
}

/// The full map.
#[derive(Clone, Debug, Serialize)]
pub struct Spec {
    /// Device name.
    pub device: &'static str,
    /// Map version "major.minor".
    pub version: String,
    /// Constants.
    pub constants: Vec<Constant>,
    /// Slot regions with their registers.
    pub regions: Vec<RegionInfo>,
    /// Descriptor and packet layouts.
    pub layouts: Vec<WordLayout>,
    /// Enumerations and flag sets.
    pub enums: Vec<EnumInfo>,
    /// Where each design decision comes from.
    pub facts: Vec<Fact>,
}

fn flags_enum<T: bitflags::Flags>(name: &'static str, doc: &'static str, docs: &[(&str, &str)]) -> EnumInfo
where
    T::Bits: Into<u64>,
{
    EnumInfo {
        name,
        doc,
        bitflags: true,
        values: T::FLAGS
            .iter()
            .map(|f| EnumValue {
                name: f.name().to_string(),
                value: f.value().bits().into(),
                doc: docs.iter().find(|(n, _)| *n == f.name()).map(|(_, d)| d.to_string()).unwrap_or_default(),
            })
            .collect(),
    }
}

/// Build the spec.
pub fn spec() -> Spec {
    let constants = vec![
        Constant { name: "PAGE_SIZE", value: layout::PAGE_SIZE as u64, doc: "host page size the layout is aligned to" },
        Constant {
            name: "SLOT_STRIDE",
            value: layout::SLOT_STRIDE as u64,
            doc: "bytes between slots in a node's MMIO surface",
        },
        Constant { name: "MAX_NODES", value: layout::MAX_NODES as u64, doc: "largest fabric" },
        Constant { name: "MAX_SLOTS", value: layout::MAX_SLOTS as u64, doc: "largest number of slots per node" },
        Constant {
            name: "MAX_SOURCES",
            value: layout::MAX_SOURCES as u64,
            doc: "IVS ring table entries (nodes x slots must not exceed it)",
        },
        Constant { name: "CQ_DEPTH", value: ur::CQ_DEPTH as u64, doc: "descriptor / completion queue entries" },
        Constant { name: "EXPOSE_ENTRIES", value: ur::EXPOSE_ENTRIES as u64, doc: "exposure table entries" },
        Constant { name: "MAX_PAYLOAD", value: ur::MAX_PAYLOAD as u64, doc: "largest IVS/BOTF payload" },
        Constant { name: "MAGIC", value: ur::MAGIC as u64, doc: "ID[31:0]" },
        Constant { name: "VERSION_MAJOR", value: ur::VERSION_MAJOR as u64, doc: "ID[63:48]" },
        Constant { name: "VERSION_MINOR", value: ur::VERSION_MINOR as u64, doc: "ID[47:32]" },
        Constant { name: "DESCRIPTOR_BYTES", value: 64, doc: "size of a command descriptor" },
        Constant { name: "PACKET_HEADER_BYTES", value: packet::HEADER_LEN as u64, doc: "size of a packet header" },
        Constant {
            name: "PATTERN_BLOCK_BYTES",
            value: packet::PATTERN_BLOCK_LEN as u64,
            doc: "size of a pattern block",
        },
        Constant { name: "RING_ALIGN", value: llcm::RING_ALIGN, doc: "ring records are padded to this many bytes" },
        Constant {
            name: "SCHED_SLOTS",
            value: crate::sched::SCHED_SLOTS as u64,
            doc: "schedule completion slots (schedules running at once)",
        },
        Constant {
            name: "SCHED_MAX_ENTRIES",
            value: crate::sched::MAX_ENTRIES as u64,
            doc: "most entries in a schedule table",
        },
        Constant {
            name: "SCHED_EARLY_STORE",
            value: crate::sched::EARLY_STORE_BYTES,
            doc: "bytes of early schedule messages a slot keeps",
        },
        Constant { name: "DEVICE_CLOCK_HZ", value: layout::DEVICE_CLOCK_HZ, doc: "controller clock" },
    ];
    let regions = Region::ALL
        .iter()
        .map(|r| RegionInfo {
            name: r.name(),
            offset: r.offset(),
            size: r.size(),
            caching: r.caching(),
            doc: r.doc(),
            registers: match r {
                Region::Ur => ur::REGISTERS.to_vec(),
                Region::Llcm => llcm::REGISTERS.to_vec(),
                _ => Vec::new(),
            },
        })
        .collect();
    let layouts = vec![
        WordLayout {
            name: "DESCRIPTOR",
            bytes: 64,
            words: command::fields::WORDS.to_vec(),
            doc: "command descriptor; words 4[63:32], 6 and 7 are reserved and must be zero; fields a command does not use must be zero",
        },
        WordLayout {
            name: "AMO_DESCRIPTOR",
            bytes: 64,
            words: command::fields::AMO_WORDS.to_vec(),
            doc: "the AMO command's descriptor (map 1.3): mode, flags and words 6-7 zero, word 4 bits 63:16 zero",
        },
        WordLayout {
            name: "SCHED_HEADER",
            bytes: crate::sched::HEADER_BYTES,
            words: crate::sched::header::WORDS.to_vec(),
            doc: "schedule table header (SCHED command, word 2 = its address); words 4-7 reserved; entries follow, then u32 predecessor indices padded to 8 bytes",
        },
        WordLayout {
            name: "SCHED_ENTRY",
            bytes: crate::sched::ENTRY_BYTES,
            words: crate::sched::entry::WORDS.to_vec(),
            doc: "schedule table entry; words 5-7 and word 0 bits 31:8 reserved; fields the kind does not use must be zero",
        },
        WordLayout {
            name: "PACKET_HEADER",
            bytes: packet::HEADER_LEN,
            words: packet::fields::WORDS.to_vec(),
            doc: "network packet header at the start of every packet and of every BOTF image",
        },
    ];
    let errors = EnumInfo {
        name: "ERR",
        doc: "completion / LAST_ERROR status codes",
        bitflags: false,
        values: ErrorCode::ALL
            .iter()
            .map(|c| EnumValue {
                name: upper_snake(c.name()),
                value: *c as u64,
                doc: format!("{} Fix: {}.", c.doc(), c.hint()),
            })
            .collect(),
    };
    let enums = vec![
        command::opcode_enum(),
        command::mode_enum(),
        command::flags_enum(),
        command::atomic_enum(),
        packet::type_enum(),
        crate::sched::kind_enum(),
        crate::sched::op_enum(),
        crate::sched::elem_enum(),
        errors,
        flags_enum::<Caps>(
            "CAPS",
            "CAPS[31:0] capability flags",
            &[
                ("VECTOR_LOCAL", "VL and VS"),
                ("VECTOR_REMOTE", "RVL and RVS"),
                ("IVS", "IVS with one ring per source (IPUSH)"),
                ("BOTF", "BOTF"),
                ("MODE_STRIDE", "stride mode"),
                ("MODE_LIST", "list mode"),
                ("MODE_PACKED_LIST", "packed list mode"),
                ("SCHED", "SCHED command: the device executes collective schedules"),
                ("ARRIVALS", "the LLCM arrival queue (map 1.2)"),
                ("ATOMIC", "AMO command: the atomic unit (map 1.3)"),
                ("SIMULATED", "the device is the simulator"),
            ],
        ),
        flags_enum::<Status>(
            "STATUS",
            "STATUS flags",
            &[
                ("ERROR", "ERROR_COUNT != ERROR_ACK"),
                ("BUSY", "commands in flight"),
                ("RX_HELD", "an incoming IVS packet waits for ring space"),
                ("DOORBELL_INVALID", "the last doorbell value was refused"),
            ],
        ),
        flags_enum::<ExposePerm>(
            "EXPOSE_PERM",
            "exposure permissions (EXPOSE[i] word 1 bits 33:32, shifted down)",
            &[("REMOTE_READ", "remote RVL allowed"), ("REMOTE_WRITE", "remote RVS allowed")],
        ),
    ];
    let _ = DescFlags::NEAR_SODIMM;
    Spec { device: "DIMMnet-2", version: MAP_VERSION.to_string(), constants, regions, layouts, enums, facts: facts() }
}

fn upper_snake(camel: &str) -> String {
    let mut out = String::new();
    for (i, ch) in camel.chars().enumerate() {
        if ch.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(ch.to_ascii_uppercase());
    }
    out
}

fn facts() -> Vec<Fact> {
    use Source::*;
    vec![
        Fact { topic: "per-process resources", source: Paper, text: "each process gets its own SO-DIMM share, WW, PW, LLCM and UR, reached by mmap() (seed 004 §2, Fig. 1)" },
        Fact { topic: "commands", source: Paper, text: "VL, VS, RVL, RVS, IVS and BOTF are issued through UR (seed 004 §2)" },
        Fact { topic: "vector modes", source: Paper, text: "contiguous, stride, list and packed-list access (seed 004 §2)" },
        Fact { topic: "window caching", source: Paper, text: "WW is mapped write-combining, PW uncachable (seed 004 §8.1)" },
        Fact { topic: "IVS rings", source: Paper, text: "one ring per source (IPUSH); controller writes Next Write Addr in LLCM, host advances Next Read Addr; when the ring is full reception stops (seed 004 §2)" },
        Fact { topic: "BOTF", source: Paper, text: "sends the packet image in WW; the header TYPE makes it RVS, RVL, IVS... (seed 004 §2)" },
        Fact { topic: "clock", source: Paper, text: "controller FPGA at 100 MHz; InfiniBand 4X link (seed 004 Table 1)" },
        Fact { topic: "offsets and sizes", source: Ours, text: "1 MiB slot stride (256 KiB before map 1.4); UR 4 KiB at 0, LLCM 528 KiB at 0x4000 (16 KiB before map 1.2, 48 KiB before map 1.4), WW 64 KiB at 0x90000, PW 64 KiB at 0xA0000 (0x10000 and 0x20000 before map 1.4); every window page-aligned" },
        Fact { topic: "command queue", source: Ours, text: "32 descriptor entries of 64 bytes + DOORBELL producer count; completions in 32 entries (seq+1, status, bytes) and monotonic counters; out-of-order completion allowed" },
        Fact { topic: "errors", source: Ours, text: "refused commands complete with an ErrorCode and are never performed; ERROR_COUNT/LAST_ERROR record them; reads never clear anything (ERROR_ACK is written)" },
        Fact { topic: "ring pointers", source: Ours, text: "NWA and NRA are monotonic byte counters, records padded to 8 bytes, table indexed by source node*slots+slot" },
        Fact { topic: "protection", source: Ours, text: "local SO-DIMM accesses must stay in the slot's partition; remote RVS/RVL must fall in a range the target exposed with the right permission; packets carry controller-stamped source ids" },
        Fact { topic: "packet header", source: Ours, text: "32 bytes: TYPE, mode, destination, source, payload length, address, tag, aux; pattern block + list in the payload for vector RVS/RVL" },
        Fact { topic: "collective engine", source: Ours, text: "SCHED starts a schedule table (seed 002's CAD graph of SEND/RECV/CALC nodes, §3) that the controller executes without the host, like Portals 4 triggered operations; the reduction unit's speed is an assumption of the profile (the papers have no such unit)" },
        Fact { topic: "arrival queue", source: Ours, text: "map 1.2: the controller counts the records it publishes in rings (RX_ACCEPTED) and writes each one's source into a 1,024-entry LLCM queue tagged with the record's number, so that a host with many peers finds new data with one read instead of one per ring; the queue never holds the controller back, a host that falls behind sees a stale tag and scans every ring" },
        Fact { topic: "scale", source: Ours, text: "map 1.2: up to 1,024 nodes and 1,024 sources (nodes x slots); ring entries 0-255 and the scratch area keep their 1.1 offsets" },
        Fact { topic: "atomic unit", source: Ours, text: "map 1.3: the AMO command (seed 004 §8.3 leaves one-sided communication as future work; MPI's Fetch_and_op, Compare_and_swap and accumulates need atomics the paper's card lacks): one element of 1, 2, 4 or 8 bytes of a remote SO-DIMM range exposed for reading and writing is read, combined with the operand (a reduction of the collective engine, a swap, a fetch, or compare-and-swap) and written back by the target card, which holds its SO-DIMM port for the read, the unit's cycles (device.atomic_cycles, 2) and the write, so nothing else touches the element in between; the old value returns to the issuer's PW; no host CPU takes part at the target" },
        Fact { topic: "completion of network commands", source: Ours, text: "IVS, RVS and BOTF complete when the receiver acknowledges (or refuses); RVL when its data has landed" },
    ]
}
