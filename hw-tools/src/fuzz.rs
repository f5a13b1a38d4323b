//! Fuzzing the register protocol through the driver (`dimmnet-sim fuzz`
//! and the proptest suite).
//!
//! A case is a random sequence of operations by one process (node 0, slot 0):
//! valid commands of every kind and mode (checked byte for byte), BOTF
//! packets of TYPE IVS, RVS and RVL request, commands with one planted
//! defect (each must be refused with its error code), valid descriptors
//! with one word changed (so that the deeper decode and protection paths
//! are reached, not only the opcode check), raw random descriptors, random
//! doorbell values and random garbage written anywhere in the slot. After
//! each case the invariants are checked:
//!
//! * the model did not panic (a panic fails the case, with the seed) and
//!   every command ended (or a deadlock was reported, never a hang);
//! * memory the process had no right to write is unchanged: the other slot
//!   on its node, the remote slots outside the range they exposed for
//!   writing, and the unconsumed part of the remote ring;
//! * the other slots' registers and windows (UR, LLCM, WW, PW) are unchanged
//!   except for the receive counters and status a packet legitimately moves,
//!   and the write pointer of the ring the process sends into;
//! * every IVS payload is in the victim's ring exactly as it was sent;
//! * no ring holds more than its size, and every planted defect got its error code.

// Variant fields of the operation enums are self-describing.
#![allow(missing_docs)]

use std::fmt;
use std::path::Path;

mod finding;
pub use finding::{Finding, SetupError};

use driver::{Device, DriverError};
use fpga_regs::llcm::{self, RingState};
use fpga_regs::packet::{PacketHeader, PacketType};
use fpga_regs::ur::{self, ExposePerm};
use fpga_regs::{Command, ErrorCode, Near, Pattern, Peer, Region, Space};
use proptest::prelude::*;

use crate::harness::{pattern_bytes, temp_dir, SimCluster};
use fpga_regs::layout;
use hw_model::cluster::{Cluster, ClusterConfig};
use hw_model::model::PlantedFaults;
use simlink::mmio::Mapping;

/// SO-DIMM partition size used by fuzz clusters (small: cases are many).
pub const PARTITION: u64 = 2 << 20;
/// Region of the attacker's partition that valid local commands use.
pub(crate) const LOCAL_SPAN: u64 = 64 * 1024;
/// Offset (in the remote victim's partition) of the range it exposes for writing.
const RW_OFF: u64 = 256 * 1024;
/// Offset of the range it exposes for reading only.
const RO_OFF: u64 = 512 * 1024;
/// Size of each exposed range.
pub(crate) const EXPOSED: u64 = 64 * 1024;
/// Offset and size of the remote victim's ring for the attacker.
const RING_OFF: u64 = 1 << 20;
const RING_SIZE: u64 = 64 * 1024;
/// Bytes already in that ring, unconsumed, when a case starts.
const RING_PRELOAD: u64 = 512;
/// Where list-mode index lists go in WW.
const LIST_OFF: u32 = 0xC000;

/// A vector pattern relative to some base, generated within a 64 KiB span.
#[derive(Clone, Debug)]
pub enum Shape {
    /// `len` bytes at `off`.
    Contiguous { off: u32, len: u32 },
    /// Strided elements.
    Stride { off: u32, elem: u32, stride: u32, count: u32 },
    /// Fixed-size elements at listed offsets.
    List { elem: u32, offs: Vec<u32> },
    /// Variable-size elements at listed offsets.
    Packed { items: Vec<(u32, u32)> },
}

impl Shape {
    fn pattern(&self, base: u64) -> (Pattern, Vec<u8>) {
        match self {
            Shape::Contiguous { off, len } => (Pattern::Contiguous { addr: base + *off as u64, len: *len }, vec![]),
            Shape::Stride { off, elem, stride, count } => {
                (Pattern::Stride { addr: base + *off as u64, elem: *elem, stride: *stride, count: *count }, vec![])
            }
            Shape::List { elem, offs } => (
                Pattern::List { base, elem: *elem, count: offs.len() as u32, list_off: LIST_OFF },
                offs.iter().flat_map(|o| o.to_le_bytes()).collect(),
            ),
            Shape::Packed { items } => (
                Pattern::PackedList { base, count: items.len() as u32, list_off: LIST_OFF },
                items.iter().flat_map(|(o, l)| o.to_le_bytes().into_iter().chain(l.to_le_bytes())).collect(),
            ),
        }
    }
}

/// A defect planted in an otherwise valid command, and the code it must get.
#[derive(Clone, Copy, Debug)]
pub enum Defect {
    /// VL from the other slot's partition on the same node.
    LocalOtherSlot,
    /// VS past the end of the own partition.
    LocalPastEnd,
    /// VL into PW past its end.
    WindowOverflow,
    /// RVS into the range the victim exposed read-only.
    WriteReadOnly,
    /// RVL outside anything exposed.
    ReadUnexposed,
    /// IVS to a slot that has no ring for us.
    NoRing,
    /// A node that does not exist.
    NoSuchNode,
    /// A slot that does not exist.
    NoSuchSlot,
    /// BOTF carrying a controller-only TYPE.
    BotfBadType,
    /// BOTF whose header length disagrees with the image.
    BotfBadLength,
    /// A reserved descriptor word set.
    ReservedBits,
    /// A stride with too many elements.
    TooManyElements,
    /// IVS larger than a packet.
    IvsTooLarge,
    /// AMO at an address not aligned to its element.
    AmoMisaligned,
    /// AMO on the range the victim exposed read-only.
    AmoReadOnly,
}

impl Defect {
    /// Every defect (the fuzzer picks among these).
    pub const ALL: [Defect; 15] = {
        use Defect::*;
        [
            LocalOtherSlot,
            LocalPastEnd,
            WindowOverflow,
            WriteReadOnly,
            ReadUnexposed,
            NoRing,
            NoSuchNode,
            NoSuchSlot,
            BotfBadType,
            BotfBadLength,
            ReservedBits,
            TooManyElements,
            IvsTooLarge,
            AmoMisaligned,
            AmoReadOnly,
        ]
    };

    fn code(self) -> ErrorCode {
        match self {
            Defect::LocalOtherSlot | Defect::LocalPastEnd => ErrorCode::OutOfPartition,
            Defect::WindowOverflow => ErrorCode::WindowRange,
            Defect::WriteReadOnly | Defect::ReadUnexposed => ErrorCode::NotExposed,
            Defect::NoRing => ErrorCode::RingDisabled,
            Defect::NoSuchNode => ErrorCode::NoSuchNode,
            Defect::NoSuchSlot => ErrorCode::NoSuchSlot,
            Defect::BotfBadType => ErrorCode::BadPacketType,
            Defect::BotfBadLength => ErrorCode::BadPacketHeader,
            Defect::ReservedBits => ErrorCode::ReservedBits,
            Defect::TooManyElements | Defect::IvsTooLarge => ErrorCode::TooLarge,
            Defect::AmoMisaligned => ErrorCode::BadAtomic,
            Defect::AmoReadOnly => ErrorCode::NotExposed,
        }
    }
}

/// The valid command a [`Op::Mutant`] starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Proto {
    Vs,
    Vl,
    Rvs,
    Rvl,
    Ivs,
    Botf,
    Amo,
}

/// How one descriptor word is changed.
#[derive(Clone, Copy, Debug)]
pub enum Mutation {
    /// Replaced by a random value (word 0: only its node and slot half).
    Random(u64),
    /// One bit flipped (word 0: only in its node and slot half).
    Flip(u8),
    /// A small signed offset added (off-by-a-few lengths and addresses).
    Add(i16),
}

impl Proto {
    /// The valid command, its index list, and whether it needs the victims.
    fn command(self, shape: &Shape, own_base: u64) -> (Command, Vec<u8>, bool) {
        let victim = Peer::new(1, 0);
        match self {
            Proto::Vs => {
                let (p, l) = shape.pattern(own_base);
                (Command::Vs { ww_off: 0, dst: p }, l, false)
            }
            Proto::Vl => {
                let (p, l) = shape.pattern(own_base);
                (Command::Vl { src: p, pw_off: 0 }, l, false)
            }
            Proto::Rvs => {
                let (p, l) = shape.pattern(RW_OFF);
                (Command::Rvs { peer: victim, src: Near::Window(0), dst: p }, l, true)
            }
            Proto::Rvl => {
                let (p, l) = shape.pattern(RW_OFF);
                (Command::Rvl { peer: victim, src: p, dst: Near::Window(0x8000) }, l, true)
            }
            Proto::Ivs => {
                let (p, l) = shape.pattern(0);
                (Command::Ivs { peer: victim, space: Space::Window, src: p }, l, true)
            }
            Proto::Botf => (Command::Botf { ww_off: 0x4000, len: HEADER_BYTES + 64 }, Vec::new(), true),
            Proto::Amo => (fetch_add(victim, RW_OFF, 1), Vec::new(), true),
        }
    }
}

const HEADER_BYTES: u32 = fpga_regs::packet::HEADER_LEN as u32;

/// An AMO adding `operand` to the u64 at `addr` of `peer`, the old value to PW 0x8000.
fn fetch_add(peer: Peer, addr: u64, operand: u64) -> Command {
    use fpga_regs::sched::{ElemType, ReduceOp};
    let op = fpga_regs::Atomic::Reduce(ReduceOp::Sum);
    Command::Amo { peer, addr, op, elem: ElemType::U64, operand, compare: 0, pw_off: 0x8000 }
}

/// Apply `how` to word `word` (0..=5) of `w`, within the bits that carry
/// fields: the point is to get past the opcode, mode, flag and
/// reserved-bit checks into decoding and protection.
pub fn mutate(mut w: [u64; 8], word: u8, how: Mutation) -> [u64; 8] {
    let botf = fpga_regs::command::fields::OPCODE.get(w[0]) == fpga_regs::Opcode::Botf as u64;
    // BOTF uses word 1 only; the others are reserved.
    let i = if botf { 1 } else { word as usize % 6 };
    // Word 0 keeps its opcode, mode and flags; word 4's upper half is reserved.
    let keep = match i {
        0 => 0xFFFF_FFFF,
        4 => 0xFFFF_FFFF_0000_0000,
        _ => 0,
    };
    let changed = match how {
        Mutation::Random(v) => v,
        Mutation::Flip(b) => w[i] ^ (1u64 << (b % 64)),
        Mutation::Add(d) => w[i].wrapping_add(d as i64 as u64),
    };
    w[i] = (w[i] & keep) | (changed & !keep);
    w
}

/// The descriptor words of an [`Op::Mutant`] (its command at partition 0).
pub fn mutant_words(proto: Proto, shape: &Shape, word: u8, how: Mutation) -> [u64; 8] {
    mutate(proto.command(shape, 0).0.encode(), word, how)
}

/// One fuzz operation.
#[derive(Clone)]
pub enum Op {
    /// VS then VL of the same pattern in the own partition; must read back.
    LocalRoundTrip { shape: Shape, seed: u64 },
    /// RVS then RVL of the same pattern in the victim's writable range.
    RemoteRoundTrip { shape: Shape, seed: u64 },
    /// IVS (from WW or SO-DIMM) or BOTF/IVS into the victim's ring.
    Send { len: u32, botf: bool, from_sodimm: bool },
    /// BOTF with TYPE RVS into the victim's writable range, then BOTF with
    /// TYPE RVL request reading it back into PW; must read back.
    BotfRoundTrip { shape: Shape, seed: u64 },
    /// AMOs on one u64 of the victim's writable range: a fetch, an add of
    /// `operand`, a compare-and-swap back; each must return what the one
    /// before left.
    Atomic { off: u32, operand: u64 },
    /// A command with one defect.
    Invalid(Defect),
    /// A valid descriptor with one word changed.
    Mutant { proto: Proto, shape: Shape, word: u8, how: Mutation },
    /// Random descriptor words.
    Raw([u64; 8]),
    /// Write a word anywhere in the slot (region 0-3, word index).
    Poke { region: u8, word: u16, value: u64 },
    /// A doorbell value near (or far from) the right one.
    Doorbell { delta: i64 },
    /// Host computation between operations (ns).
    Compute(u16),
}

impl fmt::Debug for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::LocalRoundTrip { shape, seed } => write!(f, "LocalRoundTrip({shape:?}, seed {seed})"),
            Op::RemoteRoundTrip { shape, seed } => write!(f, "RemoteRoundTrip({shape:?}, seed {seed})"),
            Op::Send { len, botf, from_sodimm } => write!(f, "Send({len} B, botf={botf}, from_sodimm={from_sodimm})"),
            Op::BotfRoundTrip { shape, seed } => write!(f, "BotfRoundTrip({shape:?}, seed {seed})"),
            Op::Atomic { off, operand } => write!(f, "Atomic(+{off:#x}, {operand:#x})"),
            Op::Invalid(d) => write!(f, "Invalid({d:?})"),
            Op::Mutant { proto, shape, word, how } => write!(f, "Mutant({proto:?} {shape:?}, word {word} {how:?})"),
            Op::Raw(w) => write!(f, "Raw({w:#x?})"),
            Op::Poke { region, word, value } => {
                write!(f, "Poke({} word {word} = {value:#x})", Region::ALL[*region as usize % 4].name())
            }
            Op::Doorbell { delta } => write!(f, "Doorbell(posted {delta:+})"),
            Op::Compute(ns) => write!(f, "Compute({ns} ns)"),
        }
    }
}

fn shape() -> impl Strategy<Value = Shape> {
    let span = LOCAL_SPAN as u32;
    prop_oneof![
        (0..span - 4096, 0u32..=4096).prop_map(|(off, len)| Shape::Contiguous { off, len }),
        (1u32..64, 0u32..192, 1u32..64, 0..span / 2).prop_map(move |(elem, extra, count, off)| Shape::Stride {
            off,
            elem,
            stride: elem + extra,
            count
        }),
        (1u32..64, proptest::collection::vec(0..span - 64, 1..32)).prop_map(|(elem, offs)| Shape::List { elem, offs }),
        proptest::collection::vec((0..span - 64, 0u32..64), 1..32).prop_map(|items| Shape::Packed { items }),
    ]
}

fn proto() -> impl Strategy<Value = Proto> {
    proptest::sample::select(vec![Proto::Vs, Proto::Vl, Proto::Rvs, Proto::Rvl, Proto::Ivs, Proto::Botf, Proto::Amo])
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<u64>().prop_map(Mutation::Random),
        any::<u8>().prop_map(Mutation::Flip),
        (-64i16..64).prop_map(Mutation::Add),
    ]
}

fn defect() -> impl Strategy<Value = Defect> {
    proptest::sample::select(Defect::ALL.to_vec())
}

/// The operation strategy.
pub fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (shape(), any::<u64>()).prop_map(|(shape, seed)| Op::LocalRoundTrip { shape, seed }),
        3 => (shape(), any::<u64>()).prop_map(|(shape, seed)| Op::RemoteRoundTrip { shape, seed }),
        2 => (0u32..=256, any::<bool>(), any::<bool>()).prop_map(|(len, botf, from_sodimm)| Op::Send { len, botf, from_sodimm }),
        2 => (shape(), any::<u64>()).prop_map(|(shape, seed)| Op::BotfRoundTrip { shape, seed }),
        2 => (0..(EXPOSED as u32 / 8), any::<u64>()).prop_map(|(w, operand)| Op::Atomic { off: w * 8, operand }),
        3 => defect().prop_map(Op::Invalid),
        4 => (proto(), shape(), 0u8..6, mutation()).prop_map(|(proto, shape, word, how)| Op::Mutant { proto, shape, word, how }),
        2 => any::<[u64; 8]>().prop_map(Op::Raw),
        2 => (0u8..4, 0u16..8192, any::<u64>()).prop_map(|(region, word, value)| Op::Poke { region, word, value }),
        1 => prop_oneof![(-40i64..40), any::<i64>()].prop_map(|delta| Op::Doorbell { delta }),
        1 => (0u16..5000).prop_map(Op::Compute),
    ]
}

/// A case: up to `max_len` operations.
pub fn case(max_len: usize) -> impl Strategy<Value = Vec<Op>> {
    proptest::collection::vec(op(), 1..=max_len)
}

/// What a VL of `segs` reads back after a VS of `data` to the same `segs`
/// (later elements win where they overlap).
fn expected_readback(segs: &[(u64, u32)], data: &[u8]) -> Vec<u8> {
    let mut mem = std::collections::BTreeMap::new();
    let mut pos = 0;
    for &(a, l) in segs {
        for i in 0..l as u64 {
            mem.insert(a + i, data[pos]);
            pos += 1;
        }
    }
    segs.iter().flat_map(|&(a, l)| (0..l as u64).map(move |i| a + i)).map(|a| mem[&a]).collect()
}

fn canary(node: u16, slot: u16, len: usize) -> Vec<u8> {
    pattern_bytes(0xC0FFEE ^ ((node as u64) << 32) ^ ((slot as u64) << 16), len)
}

/// The canary of a victim's whole partition, made once per process: every
/// case fills and checks the same bytes, and making them was a fifth of a
/// case's time.
fn partition_canary(node: u16, slot: u16) -> &'static [u8] {
    static CANARIES: std::sync::OnceLock<Vec<Vec<u8>>> = std::sync::OnceLock::new();
    let all = CANARIES.get_or_init(|| VICTIMS.iter().map(|&(n, s)| canary(n, s, PARTITION as usize)).collect());
    let k = VICTIMS.iter().position(|&v| v == (node, slot)).unwrap_or(0);
    &all[k]
}

/// The victims' registers and windows as `prepare` left them.
#[derive(Clone, Debug)]
pub struct Baseline {
    /// (node, slot, region, its bytes).
    regions: Vec<(u16, u16, Region, Vec<u8>)>,
}

/// The victim slots: the other slot on the attacker's node and both slots
/// of node 1 (slot (1, 0) exposes memory and has a ring for the attacker).
const VICTIMS: [(u16, u16); 3] = [(0, 1), (1, 0), (1, 1)];

fn snapshot(cluster: &Cluster) -> Baseline {
    let model = cluster.model();
    let slots = model.config().slots;
    let mut regions = Vec::new();
    for (node, slot) in VICTIMS {
        if slot >= slots || node >= model.config().nodes {
            continue;
        }
        for r in Region::ALL {
            let base = layout::slot_region_offset(slot as usize, r);
            let mut bytes = vec![0u8; r.size()];
            let _ = model.mmio(node).read_bytes(base, &mut bytes);
            regions.push((node, slot, r, bytes));
        }
    }
    Baseline { regions }
}

/// Whether a victim register word may change under the attacker's traffic:
/// the receive counters and status that packets move, and the write
/// pointer of the ring the attacker sends into.
fn may_change(node: u16, slot: u16, region: Region, off: usize) -> bool {
    match region {
        Region::Ur => [ur::off::STATUS, ur::off::RX_HELD, ur::off::INFLIGHT, ur::off::RX_REFUSED, ur::off::RX_ACCEPTED]
            .contains(&off),
        Region::Llcm => {
            (node, slot) == (1, 0)
                && (off == llcm::off::ring(0) + llcm::off::RING_NWA
                    || (llcm::off::ARRIVALS..llcm::off::ARRIVALS + 8 * llcm::ARRIVAL_ENTRIES).contains(&off))
        }
        _ => false,
    }
}

/// Fill every victim partition with canaries, expose the remote victim's
/// ranges and give it a preloaded ring for the attacker (as the victims'
/// own processes would have done before the attack). Returns the victims'
/// registers as they are now, for [`check_isolation`].
pub fn prepare(cluster: &mut Cluster) -> Baseline {
    let model = cluster.model_mut();
    let slots = model.config().slots;
    for (node, slot) in [(0u16, 1u16), (1, 0), (1, 1)] {
        if slot >= slots {
            continue;
        }
        let base = model.partition_base(slot) as usize;
        model.sodimm_mut(node)[base..base + PARTITION as usize].copy_from_slice(partition_canary(node, slot));
    }
    let vbase = model.partition_base(0);
    let mmio = model.mmio(1);
    let e = ur::off::EXPOSE;
    let st = ur::off::EXPOSE_STRIDE;
    let perm = |size: u64, p: ExposePerm| ur::expose::PERM.set(ur::expose::SIZE.set(0, size), p.bits());
    let _ = mmio.write_u64(e, vbase + RW_OFF);
    let _ = mmio.write_u64(e + 8, perm(EXPOSED, ExposePerm::REMOTE_WRITE | ExposePerm::REMOTE_READ));
    let _ = mmio.write_u64(e + st, vbase + RO_OFF);
    let _ = mmio.write_u64(e + st + 8, perm(EXPOSED, ExposePerm::REMOTE_READ));
    let ring = fpga_regs::layout::LLCM_OFFSET + llcm::off::ring(0);
    let _ = mmio.write_u64(ring + llcm::off::RING_BASE, vbase + RING_OFF);
    let _ = mmio.write_u64(ring + llcm::off::RING_NWA, RING_PRELOAD);
    let _ = mmio.write_u64(ring + llcm::off::RING_NRA, 0);
    let _ = mmio.write_u64(ring + llcm::off::RING_SIZE_CTRL, RingState::size_ctrl(RING_SIZE as u32, true));
    snapshot(cluster)
}

/// Check the isolation invariants on a cluster after a case.
pub fn check_isolation(cluster: &Cluster, baseline: &Baseline) -> Result<(), Finding> {
    let model = cluster.model();
    let slots = model.config().slots;
    // Whole regions and 4 KiB blocks compare at memory speed; only a
    // block that differs is looked at word by word or byte by byte.
    let mut now = Vec::new();
    for (node, slot, region, was) in &baseline.regions {
        let base = layout::slot_region_offset(*slot as usize, *region);
        now.resize(was.len(), 0);
        let _ = model.mmio(*node).read_bytes(base, &mut now);
        if now == *was {
            continue;
        }
        let word = |b: &[u8], i: usize| u64::from_le_bytes(b[8 * i..8 * i + 8].try_into().unwrap_or([0; 8]));
        for i in 0..was.len() / 8 {
            let (w0, w1) = (word(was, i), word(&now, i));
            if w0 != w1 && !may_change(*node, *slot, *region, 8 * i) {
                return Err(Finding::Register {
                    node: *node,
                    slot: *slot,
                    region: region.name(),
                    offset: 8 * i,
                    was: w0,
                    now: w1,
                });
            }
        }
    }
    const BLOCK: usize = 4096;
    for (node, slot) in VICTIMS {
        if slot >= slots {
            continue;
        }
        let base = model.partition_base(slot) as usize;
        let mem = &model.sodimm(node)[base..base + PARTITION as usize];
        let c = partition_canary(node, slot);
        let writable = |off: usize| {
            (node, slot) == (1, 0)
                && ((RW_OFF as usize..(RW_OFF + EXPOSED) as usize).contains(&off)
                    || ((RING_OFF + RING_PRELOAD) as usize..(RING_OFF + RING_SIZE) as usize).contains(&off))
        };
        let changed =
            mem.chunks(BLOCK).zip(c.chunks(BLOCK)).enumerate().filter(|(_, (m, c))| m != c).find_map(|(b, (m, c))| {
                (0..m.len()).find(|&i| m[i] != c[i] && !writable(b * BLOCK + i)).map(|i| b * BLOCK + i)
            });
        if let Some(off) = changed {
            return Err(Finding::Memory { node, slot, offset: off });
        }
    }
    let mmio = model.mmio(1);
    let ring = fpga_regs::layout::LLCM_OFFSET + llcm::off::ring(0);
    let w = |o: usize| mmio.read_u64(ring + o).unwrap_or(0);
    let r = RingState::decode([w(0), w(8), w(16), w(24)]);
    if r.used().is_none() {
        return Err(Finding::Ring { nwa: r.nwa, nra: r.nra, size: r.size });
    }
    // The arrival queue (map 1.2) names every record the victim accepted
    // that it still holds, and each one came from the attacker (source 0).
    let accepted = model.read_ur(1, 0, ur::off::RX_ACCEPTED);
    let llcm_base = layout::slot_region_offset(0, Region::Llcm);
    for k in accepted.saturating_sub(llcm::ARRIVAL_ENTRIES as u64)..accepted {
        let word = mmio.read_u64(llcm_base + llcm::off::arrival(k)).unwrap_or(0);
        if llcm::arrival::decode(k, word) != Some(0) {
            return Err(Finding::Arrival { record: k, accepted, word });
        }
    }
    Ok(())
}

/// IVS payloads the attacker sent, each with the victim ring's write
/// counter after it was committed.
pub type SentRecords = Vec<(u64, Vec<u8>)>;

/// Check that every IVS payload is in the victim's ring, byte for byte,
/// where the controller said it put it.
pub fn check_ivs_payloads(cluster: &Cluster, sent: &SentRecords) -> Result<(), Finding> {
    let model = cluster.model();
    let ring_base = (model.partition_base(0) + RING_OFF) as usize;
    let mem = model.sodimm(1);
    for (i, (nwa, data)) in sent.iter().enumerate() {
        let start = nwa.wrapping_sub(llcm::record_len(data.len() as u64));
        let got: Vec<u8> =
            (0..data.len() as u64).map(|k| mem[ring_base + (start.wrapping_add(k) % RING_SIZE) as usize]).collect();
        if got != *data {
            let first = got.iter().zip(data).position(|(a, b)| a != b).unwrap_or(0);
            return Err(Finding::Payload {
                index: i,
                len: data.len(),
                counter: start,
                byte: first,
                got: got[first],
                sent: data[first],
            });
        }
    }
    Ok(())
}

/// Where a fuzz case runs.
pub enum Target<'a> {
    /// A fresh in-process simulator per case (all invariants).
    Simulator,
    /// An existing device path: a real card, or a running `dimmnet-sim serve`
    /// (error-code and read-back checks; memory isolation needs the simulator).
    Device(&'a Path),
}

/// Whether a driver error only says that packets wait for ring space that
/// nobody will free (legitimate backpressure, not a device fault).
fn held_forever(e: &DriverError) -> bool {
    matches!(e, DriverError::Deadlock { packets_held: true, .. })
}

/// What a case carries from one operation to the next.
struct Ctx {
    /// The doorbell value the process last saw fetched.
    posted: u64,
    /// Whether the victims of [`prepare`] exist (simulator target).
    victims: bool,
    /// Node 1's register file, to read the victim ring's write counter.
    victim_regs: Option<Mapping>,
    /// IVS payloads sent, for [`check_ivs_payloads`].
    sent: SentRecords,
}

impl Ctx {
    fn victim_nwa(&self) -> Option<u64> {
        let off = layout::slot_region_offset(0, Region::Llcm) + llcm::off::ring(0) + llcm::off::RING_NWA;
        self.victim_regs.as_ref().and_then(|m| m.read_u64(off).ok())
    }
}

/// Run one operation. `Ok(false)`: the case cannot continue (backpressure
/// with no consumer), which is not a failure.
fn run_op(d: &mut Device, op: &Op, ctx: &mut Ctx) -> Result<bool, String> {
    match run_op_inner(d, op, ctx) {
        Err(Stop::Held) => Ok(false),
        Err(Stop::Fail(m)) => Err(m),
        Ok(()) => Ok(true),
    }
}

enum Stop {
    Held,
    Fail(String),
}

impl From<String> for Stop {
    fn from(m: String) -> Stop {
        Stop::Fail(m)
    }
}

fn run_op_inner(d: &mut Device, op: &Op, ctx: &mut Ctx) -> Result<(), Stop> {
    let me = d.info().clone();
    let base = me.sodimm_base;
    let victim = Peer::new(1, 0);
    // Slot 0's partition starts at 0 on every node.
    let victim_base = 0u64;
    // Remote operations need the victims that `prepare` sets up.
    let remote_ok = ctx.victims && me.nodes >= 2;
    let err =
        |what: &str, e: DriverError| if held_forever(&e) { Stop::Held } else { Stop::Fail(format!("{what}: {e}")) };
    match op {
        Op::LocalRoundTrip { shape, seed } => {
            let (p, list) = shape.pattern(base);
            let segs = p.segments(&list).map_err(|e| Stop::Fail(format!("bad generated pattern {e:?}")))?;
            let data = pattern_bytes(*seed, segs.iter().map(|s| s.1 as usize).sum());
            d.write_ww(0, &data).map_err(|e| err("WW", e))?;
            d.write_ww(LIST_OFF as usize, &list).map_err(|e| err("WW list", e))?;
            d.run(&Command::Vs { ww_off: 0, dst: p }).map_err(|e| err("valid VS", e))?;
            d.run(&Command::Vl { src: p, pw_off: 0 }).map_err(|e| err("valid VL", e))?;
            let mut got = vec![0u8; data.len()];
            d.read_pw(0, &mut got).map_err(|e| err("PW", e))?;
            if got != expected_readback(&segs, &data) {
                return Err(Stop::Fail(format!("VS/VL {:?} read back different bytes", p.mode())));
            }
        }
        Op::RemoteRoundTrip { shape, seed } if remote_ok => {
            let (p, list) = shape.pattern(victim_base + RW_OFF);
            let segs = p.segments(&list).map_err(|e| Stop::Fail(format!("bad generated pattern {e:?}")))?;
            let data = pattern_bytes(*seed, segs.iter().map(|s| s.1 as usize).sum());
            d.write_ww(0, &data).map_err(|e| err("WW", e))?;
            d.write_ww(LIST_OFF as usize, &list).map_err(|e| err("WW list", e))?;
            d.run(&Command::Rvs { peer: victim, src: Near::Window(0), dst: p }).map_err(|e| err("valid RVS", e))?;
            d.run(&Command::Rvl { peer: victim, src: p, dst: Near::Window(0x8000) })
                .map_err(|e| err("valid RVL", e))?;
            let mut got = vec![0u8; data.len()];
            d.read_pw(0x8000, &mut got).map_err(|e| err("PW", e))?;
            if got != expected_readback(&segs, &data) {
                return Err(Stop::Fail(format!("RVS/RVL {:?} read back different bytes", p.mode())));
            }
        }
        Op::Send { len, botf, from_sodimm } if remote_ok => {
            let data = pattern_bytes(*len as u64, *len as usize);
            let cmd = if *botf {
                let mut img = PacketHeader::ivs(victim, *len).encode().to_vec();
                img.extend(&data);
                d.write_ww(0x4000, &img).map_err(|e| err("WW", e))?;
                Command::Botf { ww_off: 0x4000, len: img.len() as u32 }
            } else if *from_sodimm {
                d.write_ww(0, &data).map_err(|e| err("WW", e))?;
                let at = Pattern::Contiguous { addr: base + LOCAL_SPAN, len: *len };
                d.run(&Command::Vs { ww_off: 0, dst: at }).map_err(|e| err("valid VS", e))?;
                Command::Ivs { peer: victim, space: Space::SoDimm, src: at }
            } else {
                d.write_ww(0, &data).map_err(|e| err("WW", e))?;
                Command::Ivs { peer: victim, space: Space::Window, src: Pattern::Contiguous { addr: 0, len: *len } }
            };
            d.run(&cmd).map_err(|e| err("valid IVS", e))?;
            // The acknowledgement came after the commit: the record ends at
            // the ring's write counter now.
            if let Some(nwa) = ctx.victim_nwa() {
                ctx.sent.push((nwa, data));
            }
        }
        Op::BotfRoundTrip { shape, seed } if remote_ok => {
            let (p, list) = shape.pattern(victim_base + RW_OFF);
            let segs = p.segments(&list).map_err(|e| Stop::Fail(format!("bad generated pattern {e:?}")))?;
            let data = pattern_bytes(*seed, segs.iter().map(|s| s.1 as usize).sum());
            let mut block = Vec::new();
            if p.mode() != fpga_regs::VectorMode::Contiguous {
                block.extend(fpga_regs::packet::PatternBlock::of(&p).encode());
                block.extend(&list);
            }
            let mut payload = block.clone();
            payload.extend(&data);
            if payload.len() > ur::MAX_PAYLOAD || block.is_empty() && data.is_empty() {
                return Ok(()); // not one packet (the IvsTooLarge defect covers refusal)
            }
            let header = |ptype, len: usize, aux| {
                let mut h = PacketHeader::ivs(victim, len as u32);
                h.ptype = ptype;
                h.mode = p.mode();
                h.addr = p.base();
                h.aux = aux;
                h.encode()
            };
            let mut img = header(PacketType::Rvs, payload.len(), 0).to_vec();
            img.extend(&payload);
            d.write_ww(0x4000, &img).map_err(|e| err("WW", e))?;
            d.run(&Command::Botf { ww_off: 0x4000, len: img.len() as u32 }).map_err(|e| err("valid BOTF RVS", e))?;
            let req = if p.mode() == fpga_regs::VectorMode::Contiguous {
                fpga_regs::packet::PatternBlock::of(&p).encode().to_vec()
            } else {
                block
            };
            let mut img = header(PacketType::RvlRequest, req.len(), 0x8000).to_vec();
            img.extend(&req);
            d.write_ww(0x4000, &img).map_err(|e| err("WW", e))?;
            d.run(&Command::Botf { ww_off: 0x4000, len: img.len() as u32 })
                .map_err(|e| err("valid BOTF RVL request", e))?;
            let mut got = vec![0u8; data.len()];
            d.read_pw(0x8000, &mut got).map_err(|e| err("PW", e))?;
            if got != expected_readback(&segs, &data) {
                return Err(Stop::Fail(format!("BOTF RVS/RVL {:?} read back different bytes", p.mode())));
            }
        }
        Op::Mutant { proto, shape, word, how } => {
            let (cmd, list, remote) = proto.command(shape, base);
            if remote && !remote_ok {
                return Ok(()); // never aim changed descriptors at a peer nobody prepared
            }
            d.write_ww(LIST_OFF as usize, &list).map_err(|e| err("WW list", e))?;
            let t = d.submit_raw(mutate(cmd.encode(), *word, *how)).map_err(|e| err("submit changed descriptor", e))?;
            match d.wait(t) {
                Ok(_) | Err(DriverError::Device { .. }) => {}
                Err(e) => return Err(err("changed descriptor", e)),
            }
        }
        Op::Atomic { off, operand } if remote_ok => {
            use fpga_regs::sched::ElemType;
            let addr = victim_base + RW_OFF + *off as u64;
            let old = |d: &mut Device, cmd: Command, what: &str| -> Result<u64, Stop> {
                d.run(&cmd).map_err(|e| err(what, e))?;
                let mut b = [0u8; 8];
                d.read_pw(0x8000, &mut b).map_err(|e| err("PW", e))?;
                Ok(u64::from_le_bytes(b))
            };
            let a = old(d, fetch_add(victim, addr, 0), "AMO add 0")?;
            let b = old(d, fetch_add(victim, addr, *operand), "AMO add")?;
            let cas = Command::Amo {
                peer: victim,
                addr,
                op: fpga_regs::Atomic::CompareSwap,
                elem: ElemType::U64,
                operand: a,
                compare: a.wrapping_add(*operand),
                pw_off: 0x8000,
            };
            let c = old(d, cas, "AMO compare-and-swap")?;
            let fetch = Command::Amo {
                peer: victim,
                addr,
                op: fpga_regs::Atomic::Fetch,
                elem: ElemType::U64,
                operand: 0,
                compare: 0,
                pw_off: 0x8000,
            };
            let e = old(d, fetch, "AMO fetch")?;
            if b != a || c != a.wrapping_add(*operand) || e != a {
                return Err(Stop::Fail(format!(
                    "AMOs on {addr:#x}: fetched {a:#x}, add returned {b:#x}, swap {c:#x} (want {:#x}), then {e:#x}",
                    a.wrapping_add(*operand)
                )));
            }
        }
        Op::RemoteRoundTrip { .. } | Op::Send { .. } | Op::BotfRoundTrip { .. } | Op::Atomic { .. } => {}
        Op::Invalid(defect) => {
            let c = |addr, len| Pattern::Contiguous { addr, len };
            let ticket = match defect {
                Defect::LocalOtherSlot => d.submit(&Command::Vl { src: c(base + me.sodimm_size, 64), pw_off: 0 }),
                Defect::LocalPastEnd => d.submit(&Command::Vs { ww_off: 0, dst: c(base + me.sodimm_size - 16, 64) }),
                Defect::WindowOverflow => d.submit(&Command::Vl { src: c(base, 4096), pw_off: 0xF000 + 1 }),
                Defect::WriteReadOnly if remote_ok => {
                    d.submit(&Command::Rvs { peer: victim, src: Near::Window(0), dst: c(victim_base + RO_OFF, 64) })
                }
                Defect::ReadUnexposed if me.nodes >= 2 => {
                    d.submit(&Command::Rvl { peer: victim, src: c(victim_base, 64), dst: Near::Window(0) })
                }
                // Slot (1, 1) never sets up a ring for us.
                Defect::NoRing if remote_ok && me.slots >= 2 => {
                    d.submit(&Command::Ivs { peer: Peer::new(1, 1), space: Space::Window, src: c(0, 8) })
                }
                Defect::NoSuchNode => {
                    d.submit(&Command::Rvs { peer: Peer::new(me.nodes, 0), src: Near::Window(0), dst: c(0, 8) })
                }
                Defect::NoSuchSlot => {
                    d.submit(&Command::Rvl { peer: Peer::new(0, me.slots), src: c(0, 8), dst: Near::Window(0) })
                }
                Defect::BotfBadType => {
                    let mut h = PacketHeader::ivs(Peer::new(0, 0), 0);
                    h.ptype = PacketType::RvlResponse;
                    d.write_ww(0x4000, &h.encode()).map_err(|e| err("WW", e))?;
                    d.submit(&Command::Botf { ww_off: 0x4000, len: 32 })
                }
                Defect::BotfBadLength => {
                    d.write_ww(0x4000, &PacketHeader::ivs(Peer::new(0, 0), 100).encode()).map_err(|e| err("WW", e))?;
                    d.submit(&Command::Botf { ww_off: 0x4000, len: 64 })
                }
                Defect::ReservedBits => {
                    let mut w = Command::Vl { src: c(base, 8), pw_off: 0 }.encode();
                    w[6] = 0xDEAD;
                    d.submit_raw(w)
                }
                Defect::TooManyElements => d.submit(&Command::Vl {
                    src: Pattern::Stride { addr: base, elem: 0, stride: 0, count: 1 << 20 },
                    pw_off: 0,
                }),
                Defect::AmoMisaligned if remote_ok => d.submit(&fetch_add(victim, victim_base + RW_OFF + 4, 1)),
                Defect::AmoReadOnly if remote_ok => d.submit(&fetch_add(victim, victim_base + RO_OFF, 1)),
                Defect::IvsTooLarge => d.submit(&Command::Ivs {
                    peer: Peer::new(0, 0),
                    space: Space::Window,
                    src: c(0, ur::MAX_PAYLOAD as u32 + 8),
                }),
                _ => return Ok(()),
            };
            let ticket = ticket.map_err(|e| err("submit", e))?;
            match d.wait(ticket) {
                Err(e) if e.code() == Some(defect.code()) => {}
                Err(e) if held_forever(&e) => return Err(Stop::Held),
                Err(e) => return Err(Stop::Fail(format!("{defect:?} must fail with {:?}, got: {e}", defect.code()))),
                Ok(_) => {
                    return Err(Stop::Fail(format!(
                        "{defect:?} was performed; it must be refused with {:?}",
                        defect.code()
                    )))
                }
            }
        }
        Op::Raw(words) => {
            let t = d.submit_raw(*words).map_err(|e| err("submit raw", e))?;
            match d.wait(t) {
                Ok(_) | Err(DriverError::Device { .. }) => {}
                Err(e) => return Err(err("raw descriptor", e)),
            }
        }
        Op::Poke { region, word, value } => {
            let r = Region::ALL[*region as usize % 4];
            let off = (*word as usize * 8) % r.size();
            d.poke(r, off, *value).map_err(|e| err("poke", e))?;
            d.resync().map_err(|e| err(&format!("recovering after a poke of {} at {off:#x}", r.name()), e))?;
        }
        Op::Doorbell { delta } => {
            let v = (ctx.posted as i64).wrapping_add(*delta) as u64;
            d.poke(Region::Ur, ur::off::DOORBELL, v).map_err(|e| err("doorbell", e))?;
            d.resync().map_err(|e| err("recovering after a doorbell", e))?;
        }
        Op::Compute(ns) => d.compute(*ns as f64).map_err(|e| err("compute", e))?,
    }
    ctx.posted = d.read_ur(ur::off::CMD_FETCHED);
    Ok(())
}

/// Run one case. Returns a description of the first violated invariant.
pub fn run_case(target: &Target, ops: &[Op]) -> Result<(), Finding> {
    run_case_planted(target, ops, PlantedFaults::default())
}

/// [`run_case`] on a simulator with `faults` planted in the model: the
/// mutation tests use it to show that each check can fail.
#[doc(hidden)]
pub fn run_case_planted(target: &Target, ops: &[Op], faults: PlantedFaults) -> Result<(), Finding> {
    let sim = |e: &dyn std::fmt::Display| Finding::Setup(SetupError::Simulator(e.to_string()));
    let dev = |path: &std::path::Path, e: DriverError| {
        Finding::Setup(SetupError::Device { path: path.to_path_buf(), why: e.to_string() })
    };
    let failed = |index: usize, op: &Op, what: String| Finding::Operation { index, op: format!("{op:?}"), what };
    match target {
        Target::Simulator => {
            let mut cfg = ClusterConfig::new(temp_dir("fuzz"), 2, 2);
            cfg.partition_size = PARTITION;
            cfg.expected_actors = 1;
            let mut cluster = Cluster::create(cfg).map_err(|e| sim(&e))?;
            let baseline = prepare(&mut cluster);
            cluster.model_mut().plant(faults);
            let simc = SimCluster::spawn(cluster).map_err(|e| sim(&e))?;
            let victim_regs = Mapping::open(&simc.node_path(1), 0, layout::node_mmio_size(2)).map_err(|e| sim(&e))?;
            let mut ctx = Ctx { posted: 0, victims: true, victim_regs: Some(victim_regs), sent: Vec::new() };
            let outcome = (|| {
                let path = simc.node_path(0);
                let mut d = Device::open(&path, 0).map_err(|e| dev(&path, e))?;
                for (i, op) in ops.iter().enumerate() {
                    if !run_op(&mut d, op, &mut ctx).map_err(|e| failed(i, op, e))? {
                        break;
                    }
                }
                Ok::<(), Finding>(())
            })();
            // If the device never attached, the model would wait for it forever.
            let joined = if outcome.is_err() { simc.stop() } else { simc.join() };
            // A panic in the model thread is a finding, whatever the actor saw.
            let (cluster, _) = joined.map_err(|e| Finding::Model(e.to_string()))?;
            outcome?;
            check_isolation(&cluster, &baseline)?;
            check_ivs_payloads(&cluster, &ctx.sent)
        }
        Target::Device(path) => {
            let mut d = Device::open(path, 0).map_err(|e| dev(path, e))?;
            // A card that stops answering is a finding, not a hang.
            d.set_wait_timeout(Some(std::time::Duration::from_secs(10)));
            d.resync().map_err(|e| dev(path, e))?;
            let mut ctx =
                Ctx { posted: d.read_ur(ur::off::CMD_FETCHED), victims: false, victim_regs: None, sent: vec![] };
            for (i, op) in ops.iter().enumerate() {
                if !run_op(&mut d, op, &mut ctx).map_err(|e| failed(i, op, e))? {
                    break;
                }
            }
            Ok(())
        }
    }
}

/// Check that `target` can be fuzzed at all: the device opens, or a
/// simulator can be created. A failure here is an error of the set-up, not
/// a finding.
pub fn preflight(target: &Target) -> Result<(), SetupError> {
    match target {
        Target::Simulator => {
            let mut cfg = ClusterConfig::new(temp_dir("fuzz-preflight"), 2, 2);
            cfg.partition_size = PARTITION;
            Cluster::create(cfg).map(drop).map_err(|e| SetupError::Simulator(e.to_string()))
        }
        Target::Device(path) => Device::open(path, 0)
            .map(drop)
            .map_err(|e| SetupError::Device { path: path.to_path_buf(), why: e.to_string() }),
    }
}

/// Outcome of a fuzz campaign.
#[derive(Debug)]
pub enum FuzzOutcome {
    /// Every case passed.
    Passed {
        /// Cases run.
        cases: u32,
    },
    /// The target could not be fuzzed at all (no finding).
    Setup(String),
    /// A case failed; `ops` is the minimal sequence proptest found.
    Failed {
        /// Seed of the campaign.
        seed: u64,
        /// What broke.
        reason: String,
        /// The shrunk operation sequence.
        ops: Vec<Op>,
    },
}

/// Run `cases` random cases from `seed` against `target`, shrinking failures.
pub fn fuzz(target: &Target, cases: u32, seed: u64, max_len: usize) -> FuzzOutcome {
    use proptest::test_runner::{Config, RngAlgorithm, TestError, TestRng, TestRunner};
    let mut seed_bytes = [0u8; 32];
    seed_bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let config = Config { cases, failure_persistence: None, max_shrink_iters: 2000, ..Config::default() };
    if let Err(e) = preflight(target) {
        return FuzzOutcome::Setup(e.to_string());
    }
    let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &seed_bytes));
    match runner.run(&case(max_len), |ops| run_case(target, &ops).map_err(|f| TestCaseError::fail(f.to_string()))) {
        Ok(()) => FuzzOutcome::Passed { cases },
        Err(TestError::Fail(reason, ops)) => FuzzOutcome::Failed { seed, reason: reason.to_string(), ops },
        Err(TestError::Abort(reason)) => FuzzOutcome::Failed { seed, reason: reason.to_string(), ops: Vec::new() },
    }
}
