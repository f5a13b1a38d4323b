//! Command descriptors: the six DIMMnet-2 commands and the four vector modes.
//!
//! From seed 004 §2 (**paper**): the commands VL (SO-DIMM → PW), VS
//! (WW → SO-DIMM), RVL and RVS (the same against a remote node's SO-DIMM),
//! IVS (append to a ring in the remote SO-DIMM, one ring per source) and BOTF
//! (send the packet image written in WW straight to the network); and the
//! vector modes contiguous, stride, list and packed list.
//!
//! **Ours**: the 64-byte descriptor encoding below; that the vector pattern
//! always applies to the SO-DIMM side (the window side is contiguous); that
//! list-mode index lists live in WW; that "packed list" means a list of
//! `(offset, length)` pairs, i.e. variable-size elements packed back to back
//! on the window side; and that RVS/RVL may use local SO-DIMM instead of the
//! window as their near side.
//!
//! Descriptor words (little-endian `u64`):
//!
//! | word | bits | field |
//! |---|---|---|
//! | 0 | 7:0 | opcode |
//! | 0 | 15:8 | vector mode |
//! | 0 | 31:16 | flags (`NEAR_SODIMM` = bit 0) |
//! | 0 | 47:32 | destination / source node (RVL, RVS, IVS) |
//! | 0 | 63:48 | destination / source slot (RVL, RVS, IVS) |
//! | 1 | 31:0 | contiguous length, or element size (stride, list) |
//! | 1 | 63:32 | window offset (PW for VL/RVL, WW for VS/RVS/BOTF) |
//! | 2 | 63:0 | pattern base address |
//! | 3 | 31:0 | element count (stride, list, packed list) |
//! | 3 | 63:32 | stride in bytes (stride) |
//! | 4 | 31:0 | WW offset of the index list (list, packed list) |
//! | 5 | 63:0 | near-side local SO-DIMM address (`NEAR_SODIMM`) |
//! | 4 hi, 6, 7 | | reserved, must be zero |
//!
//! AMO (ours, map 1.3) uses the words its own way: word 1 the element size
//! and the PW offset of the old value, word 2 the remote address, word 3
//! the operand, word 4 bits 7:0 the operation ([`Atomic`]) and 15:8 the
//! element type ([`ElemType`]), word 5 the compare value (compare-and-swap
//! only). Operand and compare use the element's low bytes; the rest must
//! be zero, as must the mode and flags.

use serde::Serialize;

use crate::error::ErrorCode;
use crate::field;
use crate::meta::{EnumInfo, EnumValue, Field, Word};
use crate::sched::{ElemType, ReduceOp};

/// The six commands (seed 004 §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[repr(u8)]
pub enum Opcode {
    /// Vector Load: SO-DIMM → PW.
    Vl = 1,
    /// Vector Store: WW → SO-DIMM.
    Vs = 2,
    /// Remote Vector Load: remote SO-DIMM → local PW (or local SO-DIMM).
    Rvl = 3,
    /// Remote Vector Store: local WW (or local SO-DIMM) → remote SO-DIMM.
    Rvs = 4,
    /// Indirect Vector Store: append to the remote ring of this source.
    Ivs = 5,
    /// Block On The Fly: send the packet image in WW as is.
    Botf = 6,
    /// Start a collective schedule (ours, not in the paper): the table at
    /// the given SO-DIMM address ([`crate::sched`]) is executed by the device.
    Sched = 7,
    /// Atomic memory operation (ours, map 1.3): read-modify-write of one
    /// element of a remote SO-DIMM by the target card's atomic unit; the
    /// old value comes back to PW.
    Amo = 8,
}

impl Opcode {
    /// All opcodes.
    pub const ALL: [Opcode; 8] =
        [Opcode::Vl, Opcode::Vs, Opcode::Rvl, Opcode::Rvs, Opcode::Ivs, Opcode::Botf, Opcode::Sched, Opcode::Amo];

    /// Decode a raw opcode.
    pub fn from_raw(raw: u8) -> Option<Opcode> {
        Opcode::ALL.into_iter().find(|o| *o as u8 == raw)
    }

    /// Name as in the paper.
    pub fn name(self) -> &'static str {
        match self {
            Opcode::Vl => "VL",
            Opcode::Vs => "VS",
            Opcode::Rvl => "RVL",
            Opcode::Rvs => "RVS",
            Opcode::Ivs => "IVS",
            Opcode::Botf => "BOTF",
            Opcode::Sched => "SCHED",
            Opcode::Amo => "AMO",
        }
    }

    /// Whether the command crosses the network.
    pub fn is_network(self) -> bool {
        !matches!(self, Opcode::Vl | Opcode::Vs | Opcode::Sched)
    }

    fn doc(self) -> &'static str {
        match self {
            Opcode::Vl => "Vector Load: SO-DIMM -> PW",
            Opcode::Vs => "Vector Store: WW -> SO-DIMM",
            Opcode::Rvl => "Remote Vector Load: remote SO-DIMM -> local PW (or local SO-DIMM with NEAR_SODIMM)",
            Opcode::Rvs => "Remote Vector Store: local WW (or local SO-DIMM with NEAR_SODIMM) -> remote SO-DIMM",
            Opcode::Ivs => "Indirect Vector Store: gather from WW (or SO-DIMM with NEAR_SODIMM) and append to the remote ring of this source",
            Opcode::Botf => "Block On The Fly: send the packet image in WW; its TYPE decides what the receiver does",
            Opcode::Sched => "Schedule (ours): start the collective schedule table at word 2 (own SO-DIMM); the command ends when the table is loaded, the schedule's end is reported in SCHED_DONE/SCHED_RESULT",
            Opcode::Amo => "Atomic memory operation (ours, map 1.3): the remote card's atomic unit reads the element at word 2 (aligned, exposed for reading and writing), writes AMO_OP(operand word 3, compare word 5, old) and returns the old value to PW at the window offset",
        }
    }
}

/// Vector access modes (seed 004 §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[repr(u8)]
pub enum VectorMode {
    /// One contiguous range.
    Contiguous = 0,
    /// `count` elements of `elem` bytes, `stride` bytes apart.
    Stride = 1,
    /// `count` elements of `elem` bytes at `base + list[i]` (u32 offsets in WW).
    List = 2,
    /// `count` variable-size elements at `base + off[i]`, `len[i]` bytes each ((u32, u32) pairs in WW).
    PackedList = 3,
}

impl VectorMode {
    /// All modes.
    pub const ALL: [VectorMode; 4] =
        [VectorMode::Contiguous, VectorMode::Stride, VectorMode::List, VectorMode::PackedList];

    /// Decode a raw mode.
    pub fn from_raw(raw: u8) -> Option<VectorMode> {
        VectorMode::ALL.into_iter().find(|m| *m as u8 == raw)
    }

    fn doc(self) -> &'static str {
        match self {
            VectorMode::Contiguous => "one contiguous range of `len` bytes",
            VectorMode::Stride => "`count` elements of `elem` bytes, `stride` bytes apart",
            VectorMode::List => "`count` elements of `elem` bytes at base + list[i]; list = u32 offsets in WW",
            VectorMode::PackedList => "`count` elements at base + off[i] of len[i] bytes; list = (u32 off, u32 len) pairs in WW; elements packed back to back on the window side",
        }
    }
}

bitflags::bitflags! {
    /// Descriptor flags (word 0 bits 31:16).
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct DescFlags: u16 {
        /// The near side is local SO-DIMM (word 5) instead of a window (RVL, RVS),
        /// or the IVS gather pattern addresses SO-DIMM instead of WW.
        const NEAR_SODIMM = 1 << 0;
    }
}

/// A process on the fabric: node and slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Peer {
    /// Node number.
    pub node: u16,
    /// Slot number on that node.
    pub slot: u16,
}

impl Peer {
    /// Shorthand constructor.
    pub const fn new(node: u16, slot: u16) -> Self {
        Peer { node, slot }
    }
}

impl std::fmt::Display for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "node {} slot {}", self.node, self.slot)
    }
}

/// A vector access pattern on the SO-DIMM side (or WW for IVS gathers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pattern {
    /// `len` bytes at `addr`.
    Contiguous {
        /// Start address.
        addr: u64,
        /// Length in bytes.
        len: u32,
    },
    /// `count` elements of `elem` bytes at `addr + i * stride`.
    Stride {
        /// First element.
        addr: u64,
        /// Element size.
        elem: u32,
        /// Distance between element starts.
        stride: u32,
        /// Number of elements.
        count: u32,
    },
    /// `count` elements of `elem` bytes at `base + list[i]`.
    List {
        /// Base address.
        base: u64,
        /// Element size.
        elem: u32,
        /// Number of elements.
        count: u32,
        /// WW offset of `count` little-endian `u32` offsets.
        list_off: u32,
    },
    /// `count` elements at `base + off[i]` of `len[i]` bytes.
    PackedList {
        /// Base address.
        base: u64,
        /// Number of elements.
        count: u32,
        /// WW offset of `count` little-endian `(u32 off, u32 len)` pairs.
        list_off: u32,
    },
}

/// Bytes per index list entry.
pub const fn list_entry_size(mode: VectorMode) -> usize {
    match mode {
        VectorMode::List => 4,
        VectorMode::PackedList => 8,
        _ => 0,
    }
}

impl Pattern {
    /// The vector mode.
    pub fn mode(&self) -> VectorMode {
        match self {
            Pattern::Contiguous { .. } => VectorMode::Contiguous,
            Pattern::Stride { .. } => VectorMode::Stride,
            Pattern::List { .. } => VectorMode::List,
            Pattern::PackedList { .. } => VectorMode::PackedList,
        }
    }

    /// Base address.
    pub fn base(&self) -> u64 {
        match *self {
            Pattern::Contiguous { addr, .. } | Pattern::Stride { addr, .. } => addr,
            Pattern::List { base, .. } | Pattern::PackedList { base, .. } => base,
        }
    }

    /// Number of elements.
    pub fn count(&self) -> u32 {
        match *self {
            Pattern::Contiguous { .. } => 1,
            Pattern::Stride { count, .. } | Pattern::List { count, .. } | Pattern::PackedList { count, .. } => count,
        }
    }

    /// WW range holding the index list, if the mode has one.
    pub fn list_range(&self) -> Option<(u32, usize)> {
        match *self {
            Pattern::List { count, list_off, .. } => Some((list_off, count as usize * 4)),
            Pattern::PackedList { count, list_off, .. } => Some((list_off, count as usize * 8)),
            _ => None,
        }
    }

    /// Total bytes moved, when known without the list (all modes but packed list).
    pub fn fixed_len(&self) -> Option<u64> {
        match *self {
            Pattern::Contiguous { len, .. } => Some(len as u64),
            Pattern::Stride { elem, count, .. } | Pattern::List { elem, count, .. } => Some(elem as u64 * count as u64),
            Pattern::PackedList { .. } => None,
        }
    }

    /// Resolve the pattern into `(address, length)` segments, in the order
    /// they are packed on the window side. `list` is the index list bytes
    /// (ignored for contiguous and stride). Fails with [`ErrorCode::ListRange`]
    /// when the list is too short or an address overflows.
    pub fn segments(&self, list: &[u8]) -> Result<Vec<(u64, u32)>, ErrorCode> {
        let mut out = Vec::with_capacity(self.count().min(4096) as usize);
        match *self {
            Pattern::Contiguous { addr, len } => out.push((addr, len)),
            Pattern::Stride { addr, elem, stride, count } => {
                for i in 0..count as u64 {
                    let a = addr.checked_add(i * stride as u64).ok_or(ErrorCode::ListRange)?;
                    out.push((a, elem));
                }
            }
            Pattern::List { base, elem, count, .. } => {
                let need = count as usize * 4;
                let bytes = list.get(..need).ok_or(ErrorCode::ListRange)?;
                for e in bytes.chunks_exact(4) {
                    let off = u32::from_le_bytes([e[0], e[1], e[2], e[3]]) as u64;
                    out.push((base.checked_add(off).ok_or(ErrorCode::ListRange)?, elem));
                }
            }
            Pattern::PackedList { base, count, .. } => {
                let need = count as usize * 8;
                let bytes = list.get(..need).ok_or(ErrorCode::ListRange)?;
                for e in bytes.chunks_exact(8) {
                    let off = u32::from_le_bytes([e[0], e[1], e[2], e[3]]) as u64;
                    let len = u32::from_le_bytes([e[4], e[5], e[6], e[7]]);
                    out.push((base.checked_add(off).ok_or(ErrorCode::ListRange)?, len));
                }
            }
        }
        Ok(out)
    }
}

/// The near side of RVL (destination) and RVS (source).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Near {
    /// An offset in the window (PW for RVL, WW for RVS).
    Window(u32),
    /// An absolute address in the local SO-DIMM partition.
    SoDimm(u64),
}

/// Where an IVS gathers its data from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Space {
    /// The Write Window (pattern addresses are WW offsets).
    Window,
    /// The local SO-DIMM partition (absolute addresses).
    SoDimm,
}

/// A typed command. Encode with [`Command::encode`]; the controller decodes
/// with [`Command::decode`], which rejects every malformed descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Command {
    /// SO-DIMM (pattern) → PW at `pw_off`.
    Vl {
        /// SO-DIMM side.
        src: Pattern,
        /// PW offset of the packed data.
        pw_off: u32,
    },
    /// WW at `ww_off` → SO-DIMM (pattern).
    Vs {
        /// WW offset of the packed data.
        ww_off: u32,
        /// SO-DIMM side.
        dst: Pattern,
    },
    /// Remote SO-DIMM (pattern) → local PW or SO-DIMM.
    Rvl {
        /// The remote process.
        peer: Peer,
        /// Remote SO-DIMM side.
        src: Pattern,
        /// Local destination.
        dst: Near,
    },
    /// Local WW or SO-DIMM → remote SO-DIMM (pattern).
    Rvs {
        /// The remote process.
        peer: Peer,
        /// Local source.
        src: Near,
        /// Remote SO-DIMM side.
        dst: Pattern,
    },
    /// Gather (pattern over WW or SO-DIMM) → append to `peer`'s ring for this source.
    Ivs {
        /// The receiving process.
        peer: Peer,
        /// Where the pattern addresses.
        space: Space,
        /// What to gather.
        src: Pattern,
    },
    /// Send the packet image at `ww_off` (header + payload, `len` bytes).
    Botf {
        /// WW offset of the image.
        ww_off: u32,
        /// Image length (header included).
        len: u32,
    },
    /// Start the schedule table at `table` (absolute address in the slot's
    /// own SO-DIMM partition; layout in [`crate::sched`]).
    Sched {
        /// Table address.
        table: u64,
    },
    /// Atomic read-modify-write of one element of `peer`'s SO-DIMM at
    /// `addr`; the old value goes to PW at `pw_off`.
    Amo {
        /// The remote process.
        peer: Peer,
        /// Remote SO-DIMM address, aligned to the element.
        addr: u64,
        /// What is done.
        op: Atomic,
        /// The element's type.
        elem: ElemType,
        /// The operand (its low `elem.size()` bytes).
        operand: u64,
        /// The compare value of [`Atomic::CompareSwap`] (0 otherwise).
        compare: u64,
        /// PW offset of the old value.
        pw_off: u32,
    },
}

/// What the atomic unit does to the element at the address (ours, map
/// 1.3): the reductions of the collective engine, a swap, an atomic read,
/// and compare-and-swap — what MPI's `MPI_Accumulate`,
/// `MPI_Fetch_and_op` and `MPI_Compare_and_swap` need (MPI 4.1 §12.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Atomic {
    /// `*addr = operand ⊕ *addr`.
    Reduce(ReduceOp),
    /// `*addr = operand`.
    Replace,
    /// Nothing is written: an atomic read.
    Fetch,
    /// `*addr = operand` if `*addr == compare`.
    CompareSwap,
}

impl Atomic {
    /// Every operation.
    pub const ALL: [Atomic; 13] = [
        Atomic::Reduce(ReduceOp::Sum),
        Atomic::Reduce(ReduceOp::Prod),
        Atomic::Reduce(ReduceOp::Min),
        Atomic::Reduce(ReduceOp::Max),
        Atomic::Reduce(ReduceOp::Land),
        Atomic::Reduce(ReduceOp::Lor),
        Atomic::Reduce(ReduceOp::Lxor),
        Atomic::Reduce(ReduceOp::Band),
        Atomic::Reduce(ReduceOp::Bor),
        Atomic::Reduce(ReduceOp::Bxor),
        Atomic::Replace,
        Atomic::Fetch,
        Atomic::CompareSwap,
    ];

    /// Its code in descriptor word 4 bits 7:0 (the reductions keep their
    /// `REDUCE_OP` codes 1..=10).
    pub fn code(self) -> u8 {
        match self {
            Atomic::Reduce(op) => op as u8,
            Atomic::Replace => 11,
            Atomic::Fetch => 12,
            Atomic::CompareSwap => 13,
        }
    }

    /// The operation of a code.
    pub fn from_code(c: u8) -> Option<Atomic> {
        Atomic::ALL.into_iter().find(|a| a.code() == c)
    }

    fn name(self) -> String {
        match self {
            Atomic::Reduce(op) => format!("{op:?}").to_uppercase(),
            Atomic::Replace => "REPLACE".into(),
            Atomic::Fetch => "FETCH".into(),
            Atomic::CompareSwap => "CAS".into(),
        }
    }

    /// Whether it is defined on `elem` (no bitwise operation on floating
    /// point, and an element type at all).
    pub fn defined_on(self, elem: ElemType) -> bool {
        elem != ElemType::None && !(elem.is_float() && matches!(self, Atomic::Reduce(op) if op.is_bitwise()))
    }
}

/// The atomic operations as an exported enumeration.
pub fn atomic_enum() -> EnumInfo {
    EnumInfo {
        name: "AMO_OP",
        doc: "atomic operations (AMO descriptor word 4 bits 7:0; the reductions keep their REDUCE_OP codes)",
        bitflags: false,
        values: Atomic::ALL
            .iter()
            .map(|a| EnumValue {
                name: a.name(),
                value: a.code() as u64,
                doc: match a {
                    Atomic::Reduce(_) => "*addr = operand OP *addr (no bitwise operation on floating point)".into(),
                    Atomic::Replace => "*addr = operand".into(),
                    Atomic::Fetch => "nothing written: an atomic read".into(),
                    Atomic::CompareSwap => "*addr = operand if *addr == compare (word 5)".into(),
                },
            })
            .collect(),
    }
}

/// Descriptor word fields, for the exporters and for encode/decode.
pub mod fields {
    use super::*;
    /// Opcode.
    pub const OPCODE: Field = field!("opcode", 0, 8, "Opcode (CMD_*)");
    /// Mode.
    pub const MODE: Field = field!("mode", 8, 8, "vector mode (MODE_*)");
    /// Flags.
    pub const FLAGS: Field = field!("flags", 16, 16, "DESC_* flags");
    /// Node.
    pub const NODE: Field = field!("node", 32, 16, "remote node (RVL, RVS, IVS)");
    /// Slot.
    pub const SLOT: Field = field!("slot", 48, 16, "remote slot (RVL, RVS, IVS)");
    /// Length / element size.
    pub const LEN: Field = field!("len_or_elem", 0, 32, "contiguous length, or element size (stride, list)");
    /// Window offset.
    pub const WINDOW_OFF: Field = field!("window_off", 32, 32, "PW offset (VL, RVL) or WW offset (VS, RVS, BOTF)");
    /// Base address.
    pub const ADDR: Field = field!("addr", 0, 64, "pattern base address");
    /// Count.
    pub const COUNT: Field = field!("count", 0, 32, "element count (stride, list, packed list)");
    /// Stride.
    pub const STRIDE: Field = field!("stride", 32, 32, "stride in bytes (stride)");
    /// List offset.
    pub const LIST_OFF: Field = field!("list_off", 0, 32, "WW offset of the index list (list, packed list)");
    /// Near SO-DIMM address.
    pub const NEAR_ADDR: Field = field!("near_addr", 0, 64, "local SO-DIMM address when NEAR_SODIMM");
    /// AMO operation.
    pub const AMO_OP: Field = field!("amo_op", 0, 8, "AMO: the operation (AMO_OP_*)");
    /// AMO element type.
    pub const AMO_ELEM: Field = field!("amo_elem", 8, 8, "AMO: the element type (ELEM_TYPE_*)");
    /// AMO operand.
    pub const AMO_OPERAND: Field = field!("operand", 0, 64, "AMO: the operand, in the element's low bytes");
    /// AMO compare value.
    pub const AMO_COMPARE: Field =
        field!("compare", 0, 64, "AMO: the compare value of CAS, in the element's low bytes (else zero)");
    /// AMO element size.
    pub const AMO_SIZE: Field = field!("elem_size", 0, 32, "AMO: the element's size in bytes (1, 2, 4 or 8)");
    /// AMO PW offset.
    pub const AMO_PW_OFF: Field = field!("pw_off", 32, 32, "AMO: PW offset where the old value lands");
    /// AMO remote address.
    pub const AMO_ADDR: Field = field!("addr", 0, 64, "AMO: remote SO-DIMM address, aligned to the element");
    /// The AMO descriptor's word layouts.
    pub const AMO_WORDS: &[Word] = &[
        Word { index: 0, fields: &[OPCODE, NODE, SLOT] },
        Word { index: 1, fields: &[AMO_SIZE, AMO_PW_OFF] },
        Word { index: 2, fields: &[AMO_ADDR] },
        Word { index: 3, fields: &[AMO_OPERAND] },
        Word { index: 4, fields: &[AMO_OP, AMO_ELEM] },
        Word { index: 5, fields: &[AMO_COMPARE] },
    ];
    /// Word layouts.
    pub const WORDS: &[Word] = &[
        Word { index: 0, fields: &[OPCODE, MODE, FLAGS, NODE, SLOT] },
        Word { index: 1, fields: &[LEN, WINDOW_OFF] },
        Word { index: 2, fields: &[ADDR] },
        Word { index: 3, fields: &[COUNT, STRIDE] },
        Word { index: 4, fields: &[LIST_OFF] },
        Word { index: 5, fields: &[NEAR_ADDR] },
    ];
}

/// Why a descriptor was refused at decode time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{code:?}: {detail}")]
pub struct DescError {
    /// The status the controller reports.
    pub code: ErrorCode,
    /// Which rule was broken.
    pub detail: &'static str,
}

fn bad(code: ErrorCode, detail: &'static str) -> DescError {
    DescError { code, detail }
}

/// The raw descriptor: eight little-endian words.
pub type Descriptor = [u64; 8];

impl Command {
    /// The opcode.
    pub fn opcode(&self) -> Opcode {
        match self {
            Command::Vl { .. } => Opcode::Vl,
            Command::Vs { .. } => Opcode::Vs,
            Command::Rvl { .. } => Opcode::Rvl,
            Command::Rvs { .. } => Opcode::Rvs,
            Command::Ivs { .. } => Opcode::Ivs,
            Command::Botf { .. } => Opcode::Botf,
            Command::Sched { .. } => Opcode::Sched,
            Command::Amo { .. } => Opcode::Amo,
        }
    }

    /// The pattern the command carries, if any.
    pub fn pattern(&self) -> Option<&Pattern> {
        match self {
            Command::Vl { src, .. } | Command::Rvl { src, .. } | Command::Ivs { src, .. } => Some(src),
            Command::Vs { dst, .. } | Command::Rvs { dst, .. } => Some(dst),
            Command::Botf { .. } | Command::Sched { .. } | Command::Amo { .. } => None,
        }
    }

    /// Encode into descriptor words.
    pub fn encode(&self) -> Descriptor {
        let mut w = [0u64; 8];
        let mut flags = DescFlags::empty();
        let (peer, window_off) = match *self {
            Command::Vl { pw_off, .. } => (None, pw_off),
            Command::Vs { ww_off, .. } => (None, ww_off),
            Command::Rvl { peer, dst, .. } => (Some(peer), near(&mut w, &mut flags, dst)),
            Command::Rvs { peer, src, .. } => (Some(peer), near(&mut w, &mut flags, src)),
            Command::Ivs { peer, space, .. } => {
                if space == Space::SoDimm {
                    flags |= DescFlags::NEAR_SODIMM;
                }
                (Some(peer), 0)
            }
            Command::Botf { ww_off, len } => {
                w[0] = fields::OPCODE.set(0, Opcode::Botf as u64);
                w[1] = fields::WINDOW_OFF.set(fields::LEN.set(0, len as u64), ww_off as u64);
                return w;
            }
            Command::Sched { table } => {
                w[0] = fields::OPCODE.set(0, Opcode::Sched as u64);
                w[2] = table;
                return w;
            }
            Command::Amo { peer, addr, op, elem, operand, compare, pw_off } => {
                let w0 = fields::OPCODE.set(0, Opcode::Amo as u64);
                w[0] = fields::SLOT.set(fields::NODE.set(w0, peer.node as u64), peer.slot as u64);
                w[1] = fields::WINDOW_OFF.set(fields::LEN.set(0, elem.size() as u64), pw_off as u64);
                w[2] = addr;
                w[3] = operand;
                w[4] = fields::AMO_ELEM.set(fields::AMO_OP.set(0, op.code() as u64), elem as u64);
                w[5] = compare;
                return w;
            }
        };
        let pattern = self.pattern().copied().unwrap_or(Pattern::Contiguous { addr: 0, len: 0 });
        let mut w0 = fields::OPCODE.set(0, self.opcode() as u64);
        w0 = fields::MODE.set(w0, pattern.mode() as u64);
        w0 = fields::FLAGS.set(w0, flags.bits() as u64);
        if let Some(p) = peer {
            w0 = fields::NODE.set(w0, p.node as u64);
            w0 = fields::SLOT.set(w0, p.slot as u64);
        }
        w[0] = w0;
        let (len_or_elem, count, stride, list_off) = match pattern {
            Pattern::Contiguous { len, .. } => (len, 0, 0, 0),
            Pattern::Stride { elem, stride, count, .. } => (elem, count, stride, 0),
            Pattern::List { elem, count, list_off, .. } => (elem, count, 0, list_off),
            Pattern::PackedList { count, list_off, .. } => (0, count, 0, list_off),
        };
        w[1] = fields::WINDOW_OFF.set(fields::LEN.set(0, len_or_elem as u64), window_off as u64);
        w[2] = pattern.base();
        w[3] = fields::STRIDE.set(fields::COUNT.set(0, count as u64), stride as u64);
        w[4] = list_off as u64;
        w
    }

    /// Decode descriptor words, refusing anything malformed.
    pub fn decode(w: &Descriptor) -> Result<Command, DescError> {
        let op =
            Opcode::from_raw(fields::OPCODE.get(w[0]) as u8).ok_or(bad(ErrorCode::BadOpcode, "opcode is not 1..=8"))?;
        let mode =
            VectorMode::from_raw(fields::MODE.get(w[0]) as u8).ok_or(bad(ErrorCode::BadMode, "mode is not 0..=3"))?;
        let flags = DescFlags::from_bits(fields::FLAGS.get(w[0]) as u16)
            .ok_or(bad(ErrorCode::ReservedBits, "unknown flag bits"))?;
        if fields::LIST_OFF.get(w[4]) != w[4] || w[6] != 0 || w[7] != 0 {
            return Err(bad(ErrorCode::ReservedBits, "words 4[63:32], 6 and 7 must be zero"));
        }
        let peer = Peer::new(fields::NODE.get(w[0]) as u16, fields::SLOT.get(w[0]) as u16);
        let window_off = fields::WINDOW_OFF.get(w[1]) as u32;
        let near_sodimm = flags.contains(DescFlags::NEAR_SODIMM);
        let local_only = |what: &'static str| -> Result<(), DescError> {
            if peer != Peer::new(0, 0) || !flags.is_empty() || w[5] != 0 {
                Err(bad(ErrorCode::ReservedBits, what))
            } else {
                Ok(())
            }
        };
        if op == Opcode::Botf {
            if mode != VectorMode::Contiguous {
                return Err(bad(ErrorCode::BadMode, "BOTF takes contiguous mode only"));
            }
            local_only("BOTF: node, slot, flags and word 5 must be zero")?;
            if w[2] != 0 || w[3] != 0 || w[4] != 0 {
                return Err(bad(ErrorCode::ReservedBits, "BOTF: words 2-4 must be zero"));
            }
            return Ok(Command::Botf { ww_off: window_off, len: fields::LEN.get(w[1]) as u32 });
        }
        if op == Opcode::Sched {
            if mode != VectorMode::Contiguous {
                return Err(bad(ErrorCode::BadMode, "SCHED takes contiguous mode only"));
            }
            local_only("SCHED: node, slot, flags and word 5 must be zero")?;
            if w[1] != 0 || w[3] != 0 || w[4] != 0 {
                return Err(bad(ErrorCode::ReservedBits, "SCHED: words 1, 3 and 4 must be zero"));
            }
            return Ok(Command::Sched { table: w[2] });
        }
        if op == Opcode::Amo {
            return decode_amo(w, mode, flags, peer, window_off);
        }
        let pattern = decode_pattern(mode, w)?;
        let near_of = |w5: u64| -> Result<Near, DescError> {
            if near_sodimm {
                if window_off != 0 {
                    return Err(bad(ErrorCode::ReservedBits, "window offset must be zero with NEAR_SODIMM"));
                }
                Ok(Near::SoDimm(w5))
            } else if w5 != 0 {
                Err(bad(ErrorCode::ReservedBits, "word 5 must be zero without NEAR_SODIMM"))
            } else {
                Ok(Near::Window(window_off))
            }
        };
        Ok(match op {
            Opcode::Vl => {
                local_only("VL: node, slot, flags and word 5 must be zero")?;
                Command::Vl { src: pattern, pw_off: window_off }
            }
            Opcode::Vs => {
                local_only("VS: node, slot, flags and word 5 must be zero")?;
                Command::Vs { ww_off: window_off, dst: pattern }
            }
            Opcode::Rvl => Command::Rvl { peer, src: pattern, dst: near_of(w[5])? },
            Opcode::Rvs => Command::Rvs { peer, src: near_of(w[5])?, dst: pattern },
            Opcode::Ivs => {
                if window_off != 0 || w[5] != 0 {
                    return Err(bad(ErrorCode::ReservedBits, "IVS: window offset and word 5 must be zero"));
                }
                let space = if near_sodimm { Space::SoDimm } else { Space::Window };
                Command::Ivs { peer, space, src: pattern }
            }
            Opcode::Botf | Opcode::Sched | Opcode::Amo => unreachable!("handled above"),
        })
    }
}

/// Decode an AMO descriptor (word 0 already checked for a known mode and flags).
fn decode_amo(
    w: &Descriptor,
    mode: VectorMode,
    flags: DescFlags,
    peer: Peer,
    pw_off: u32,
) -> Result<Command, DescError> {
    if mode != VectorMode::Contiguous || !flags.is_empty() {
        return Err(bad(ErrorCode::ReservedBits, "AMO: mode and flags must be zero"));
    }
    if fields::AMO_OP.set(fields::AMO_ELEM.set(0, fields::AMO_ELEM.get(w[4])), fields::AMO_OP.get(w[4])) != w[4] {
        return Err(bad(ErrorCode::ReservedBits, "AMO: word 4 bits 63:16 must be zero"));
    }
    let op = Atomic::from_code(fields::AMO_OP.get(w[4]) as u8)
        .ok_or(bad(ErrorCode::BadAtomic, "AMO: word 4 bits 7:0 name no operation (1..=13)"))?;
    let elem = ElemType::from_raw(fields::AMO_ELEM.get(w[4]) as u8)
        .filter(|e| *e != ElemType::None)
        .ok_or(bad(ErrorCode::BadAtomic, "AMO: word 4 bits 15:8 name no element type (1..=10)"))?;
    if !op.defined_on(elem) {
        return Err(bad(ErrorCode::BadAtomic, "AMO: no bitwise operation on floating point"));
    }
    let size = elem.size() as u64;
    if fields::LEN.get(w[1]) != size {
        return Err(bad(ErrorCode::BadAtomic, "AMO: word 1 bits 31:0 must be the element's size"));
    }
    if w[2] % size != 0 {
        return Err(bad(ErrorCode::BadAtomic, "AMO: the address is not aligned to the element"));
    }
    let fits = |v: u64| size == 8 || v >> (8 * size) == 0;
    if !fits(w[3]) || !fits(w[5]) || (op != Atomic::CompareSwap && w[5] != 0) {
        return Err(bad(
            ErrorCode::ReservedBits,
            "AMO: operand and compare use the element's low bytes; compare only with CAS",
        ));
    }
    Ok(Command::Amo { peer, addr: w[2], op, elem, operand: w[3], compare: w[5], pw_off })
}

fn near(w: &mut Descriptor, flags: &mut DescFlags, n: Near) -> u32 {
    match n {
        Near::Window(off) => off,
        Near::SoDimm(addr) => {
            *flags |= DescFlags::NEAR_SODIMM;
            w[5] = addr;
            0
        }
    }
}

fn decode_pattern(mode: VectorMode, w: &Descriptor) -> Result<Pattern, DescError> {
    let len = fields::LEN.get(w[1]) as u32;
    let count = fields::COUNT.get(w[3]) as u32;
    let stride = fields::STRIDE.get(w[3]) as u32;
    let list_off = fields::LIST_OFF.get(w[4]) as u32;
    let addr = w[2];
    let zero = |ok: bool, detail: &'static str| {
        if ok {
            Ok(())
        } else {
            Err(bad(ErrorCode::ReservedBits, detail))
        }
    };
    Ok(match mode {
        VectorMode::Contiguous => {
            zero(count == 0 && stride == 0 && list_off == 0, "contiguous: count, stride and list offset must be zero")?;
            Pattern::Contiguous { addr, len }
        }
        VectorMode::Stride => {
            zero(list_off == 0, "stride: list offset must be zero")?;
            Pattern::Stride { addr, elem: len, stride, count }
        }
        VectorMode::List => {
            zero(stride == 0, "list: stride must be zero")?;
            Pattern::List { base: addr, elem: len, count, list_off }
        }
        VectorMode::PackedList => {
            zero(stride == 0 && len == 0, "packed list: stride and element size must be zero")?;
            Pattern::PackedList { base: addr, count, list_off }
        }
    })
}

/// Opcodes as an exported enumeration.
pub fn opcode_enum() -> EnumInfo {
    EnumInfo {
        name: "CMD",
        doc: "command opcodes (descriptor word 0 bits 7:0)",
        bitflags: false,
        values: Opcode::ALL
            .iter()
            .map(|o| EnumValue { name: o.name().to_string(), value: *o as u64, doc: o.doc().to_string() })
            .collect(),
    }
}

/// Vector modes as an exported enumeration.
pub fn mode_enum() -> EnumInfo {
    EnumInfo {
        name: "MODE",
        doc: "vector modes (descriptor word 0 bits 15:8, packet header word 0 bits 15:8)",
        bitflags: false,
        values: VectorMode::ALL
            .iter()
            .map(|m| EnumValue { name: format!("{m:?}").to_uppercase(), value: *m as u64, doc: m.doc().to_string() })
            .collect(),
    }
}

/// Descriptor flags as an exported enumeration.
pub fn flags_enum() -> EnumInfo {
    EnumInfo {
        name: "DESC",
        doc: "descriptor flags (word 0 bits 31:16)",
        bitflags: true,
        values: vec![EnumValue {
            name: "NEAR_SODIMM".into(),
            value: DescFlags::NEAR_SODIMM.bits() as u64,
            doc: "RVL/RVS: near side is local SO-DIMM at word 5; IVS: gather pattern addresses SO-DIMM".into(),
        }],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    pub(crate) fn pattern() -> impl Strategy<Value = Pattern> {
        prop_oneof![
            (any::<u64>(), any::<u32>()).prop_map(|(addr, len)| Pattern::Contiguous { addr, len }),
            (any::<u64>(), any::<u32>(), any::<u32>(), any::<u32>())
                .prop_map(|(addr, elem, stride, count)| Pattern::Stride { addr, elem, stride, count }),
            (any::<u64>(), any::<u32>(), any::<u32>(), any::<u32>())
                .prop_map(|(base, elem, count, list_off)| Pattern::List { base, elem, count, list_off }),
            (any::<u64>(), any::<u32>(), any::<u32>())
                .prop_map(|(base, count, list_off)| { Pattern::PackedList { base, count, list_off } }),
        ]
    }

    fn peer() -> impl Strategy<Value = Peer> {
        (any::<u16>(), any::<u16>()).prop_map(|(n, s)| Peer::new(n, s))
    }

    fn near() -> impl Strategy<Value = Near> {
        prop_oneof![any::<u32>().prop_map(Near::Window), any::<u64>().prop_map(Near::SoDimm)]
    }

    pub(crate) fn command() -> impl Strategy<Value = Command> {
        prop_oneof![
            (pattern(), any::<u32>()).prop_map(|(src, pw_off)| Command::Vl { src, pw_off }),
            (any::<u32>(), pattern()).prop_map(|(ww_off, dst)| Command::Vs { ww_off, dst }),
            (peer(), pattern(), near()).prop_map(|(peer, src, dst)| Command::Rvl { peer, src, dst }),
            (peer(), near(), pattern()).prop_map(|(peer, src, dst)| Command::Rvs { peer, src, dst }),
            (peer(), any::<bool>(), pattern()).prop_map(|(peer, s, src)| Command::Ivs {
                peer,
                space: if s { Space::SoDimm } else { Space::Window },
                src
            }),
            (any::<u32>(), any::<u32>()).prop_map(|(ww_off, len)| Command::Botf { ww_off, len }),
            any::<u64>().prop_map(|table| Command::Sched { table }),
            (peer(), any::<u64>(), 0usize..13, 1u8..=10, any::<u64>(), any::<u64>(), any::<u32>()).prop_filter_map(
                "a valid AMO",
                |(peer, addr, op, elem, operand, compare, pw_off)| {
                    let (op, elem) = (Atomic::ALL[op], ElemType::from_raw(elem)?);
                    let size = elem.size() as u64;
                    let low = |v: u64| if size == 8 { v } else { v & ((1 << (8 * size)) - 1) };
                    let compare = if op == Atomic::CompareSwap { low(compare) } else { 0 };
                    op.defined_on(elem).then_some(Command::Amo {
                        peer,
                        addr: addr / size * size,
                        op,
                        elem,
                        operand: low(operand),
                        compare,
                        pw_off,
                    })
                }
            ),
        ]
    }

    proptest! {
        #[test]
        fn commands_round_trip(cmd in command()) {
            let words = cmd.encode();
            prop_assert_eq!(Command::decode(&words), Ok(cmd));
        }

        #[test]
        fn decode_never_panics_and_reencodes_exactly(words in any::<[u64; 8]>()) {
            if let Ok(cmd) = Command::decode(&words) {
                // Decoding is strict: whatever is accepted re-encodes to the same bits.
                prop_assert_eq!(cmd.encode(), words);
            }
        }
    }

    #[test]
    fn malformed_descriptors_are_refused() {
        let mut w = Command::Vl { src: Pattern::Contiguous { addr: 0, len: 8 }, pw_off: 0 }.encode();
        assert_eq!(Command::decode(&[0; 8]).unwrap_err().code, ErrorCode::BadOpcode);
        w[7] = 1;
        assert_eq!(Command::decode(&w).unwrap_err().code, ErrorCode::ReservedBits);
        let mut b = Command::Botf { ww_off: 0, len: 64 }.encode();
        b[0] = fields::MODE.set(b[0], VectorMode::Stride as u64);
        assert_eq!(Command::decode(&b).unwrap_err().code, ErrorCode::BadMode);
    }

    #[test]
    fn segments_follow_the_modes() {
        let s = Pattern::Stride { addr: 100, elem: 4, stride: 16, count: 3 };
        assert_eq!(s.segments(&[]).unwrap(), vec![(100, 4), (116, 4), (132, 4)]);
        let list: Vec<u8> = [8u32, 0, 40].iter().flat_map(|v| v.to_le_bytes()).collect();
        let l = Pattern::List { base: 1000, elem: 2, count: 3, list_off: 0 };
        assert_eq!(l.segments(&list).unwrap(), vec![(1008, 2), (1000, 2), (1040, 2)]);
        let packed: Vec<u8> = [(4u32, 3u32), (0, 1)]
            .iter()
            .flat_map(|(o, l)| o.to_le_bytes().into_iter().chain(l.to_le_bytes()))
            .collect();
        let p = Pattern::PackedList { base: 10, count: 2, list_off: 0 };
        assert_eq!(p.segments(&packed).unwrap(), vec![(14, 3), (10, 1)]);
        assert_eq!(p.segments(&packed[..8]).unwrap_err(), ErrorCode::ListRange);
    }
}
