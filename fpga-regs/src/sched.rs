//! Collective schedules executed by the device (**ours**; no such unit is in
//! the papers).
//!
//! Seed 002 (KACC, §3) describes a non-blocking collective as a graph of
//! SEND, RECV and CALC nodes with explicit dependencies, executed by an agent
//! other than the application (a kernel tasklet there). Here the agent is the
//! DIMMnet-2 controller, in the spirit of Portals 4 triggered operations and
//! CORE-Direct: the host writes a **schedule table** into its own SO-DIMM
//! partition (with VS), starts it with the `SCHED` command, and later finds
//! its end in `SCHED_DONE[k]` / `SCHED_RESULT[k]` (UR), where `k` is the
//! completion slot the table names.
//!
//! Table layout (little-endian `u64` words, at a 64-byte aligned address):
//!
//! | bytes | content |
//! |---|---|
//! | 0..64 | header ([`TableHeader`]) |
//! | 64.. | `entries` entries of 64 bytes ([`Entry`]) |
//! | then | `deps` predecessor indices, `u32` each, padded to 8 bytes |
//!
//! An entry fires when all its predecessors are done. SEND reads `len` bytes
//! at `src` and sends them to `peer` tagged with the table's `key` and the
//! entry's `round`; RECV waits for the message from `peer` with the same key
//! and round and writes it at `dst` (a message that arrives before its RECV
//! is kept by the device, up to [`EARLY_STORE_BYTES`]); REDUCE computes
//! `dst = src ⊕ dst` element-wise with the table's operation and element
//! type (the reduction unit); COPY copies. Every address is absolute and
//! must lie in the slot's own partition. A schedule ends when every entry is
//! done and every message it sent has been accepted by its receiver.

use crate::command::Peer;
use crate::error::ErrorCode;
use crate::field;
use crate::meta::{EnumInfo, EnumValue, Field, Word};

/// Completion slots: schedules that may run at once per process.
pub const SCHED_SLOTS: usize = 8;
/// Most entries in one table.
pub const MAX_ENTRIES: u32 = 16_384;
/// Most predecessor indices in one table.
pub const MAX_DEPS: u32 = 65_536;
/// Bytes of the table header.
pub const HEADER_BYTES: usize = 64;
/// Bytes of one entry.
pub const ENTRY_BYTES: usize = 64;
/// `TableHeader` word 0: "DNSCHED\0".
pub const TABLE_MAGIC: u64 = u64::from_le_bytes(*b"DNSCHED\0");
/// Bytes of early messages (arrived before their RECV fired) the device keeps per slot.
pub const EARLY_STORE_BYTES: u64 = 16 << 20;

/// What an entry does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum EntryKind {
    /// Send `len` bytes at `src` to `peer`.
    Send = 1,
    /// Receive `len` bytes from `peer` into `dst`.
    Recv = 2,
    /// `dst = src ⊕ dst` with the table's operation.
    Reduce = 3,
    /// `dst = src`.
    Copy = 4,
}

/// `ALL` (every value, in order) and `from_raw` for a `u8` enumeration.
macro_rules! raw_u8_enum {
    ($t:ident: $($v:ident),*) => {
        impl $t {
            /// Every value, in numeric order.
            pub const ALL: &'static [$t] = &[$($t::$v),*];

            /// Decode a raw value (`None`: not one this map defines).
            pub fn from_raw(raw: u8) -> Option<$t> {
                $t::ALL.iter().copied().find(|v| *v as u8 == raw)
            }
        }
    };
}
raw_u8_enum!(EntryKind: Send, Recv, Reduce, Copy);
raw_u8_enum!(ReduceOp: None, Sum, Prod, Min, Max, Land, Lor, Lxor, Band, Bor, Bxor);
raw_u8_enum!(ElemType: None, I8, I16, I32, I64, U8, U16, U32, U64, F32, F64);

/// The reduction unit's operations (MPI's predefined ones except MINLOC/MAXLOC).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ReduceOp {
    /// No reduction (the table has no REDUCE entry).
    None = 0,
    /// Sum (wrapping for integers).
    Sum = 1,
    /// Product (wrapping for integers).
    Prod = 2,
    /// Minimum.
    Min = 3,
    /// Maximum.
    Max = 4,
    /// Logical and (non-zero is true, result 1 or 0).
    Land = 5,
    /// Logical or.
    Lor = 6,
    /// Logical exclusive or.
    Lxor = 7,
    /// Bitwise and (integers only).
    Band = 8,
    /// Bitwise or (integers only).
    Bor = 9,
    /// Bitwise exclusive or (integers only).
    Bxor = 10,
}

impl ReduceOp {
    /// Whether the operation is bitwise (undefined on floating point).
    pub fn is_bitwise(self) -> bool {
        matches!(self, ReduceOp::Band | ReduceOp::Bor | ReduceOp::Bxor)
    }
}

/// Element types of the reduction unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ElemType {
    /// No reduction.
    None = 0,
    /// `i8`.
    I8 = 1,
    /// `i16`.
    I16 = 2,
    /// `i32`.
    I32 = 3,
    /// `i64`.
    I64 = 4,
    /// `u8`.
    U8 = 5,
    /// `u16`.
    U16 = 6,
    /// `u32`.
    U32 = 7,
    /// `u64`.
    U64 = 8,
    /// `f32`.
    F32 = 9,
    /// `f64`.
    F64 = 10,
}

impl ElemType {
    /// Bytes per element (0 for `None`).
    pub fn size(self) -> usize {
        match self {
            ElemType::None => 0,
            ElemType::I8 | ElemType::U8 => 1,
            ElemType::I16 | ElemType::U16 => 2,
            ElemType::I32 | ElemType::U32 | ElemType::F32 => 4,
            ElemType::I64 | ElemType::U64 | ElemType::F64 => 8,
        }
    }

    /// Whether the type is floating point.
    pub fn is_float(self) -> bool {
        matches!(self, ElemType::F32 | ElemType::F64)
    }
}

/// Header word fields.
pub mod header {
    use super::*;
    /// Number of entries.
    pub const ENTRIES: Field = field!("entries", 0, 32, "number of entries");
    /// Number of dependency indices.
    pub const DEPS: Field = field!("deps", 32, 32, "number of u32 predecessor indices after the entries");
    /// Completion slot.
    pub const DONE_SLOT: Field = field!("done_slot", 0, 8, "completion slot k: the end is reported in SCHED_DONE[k]");
    /// Reduction operation.
    pub const OP: Field = field!("op", 8, 8, "REDUCE_OP of every REDUCE entry");
    /// Element type.
    pub const ELEM: Field = field!("elem", 16, 8, "ELEM_TYPE of every REDUCE entry");
    /// Magic.
    pub const MAGIC: Field = field!("magic", 0, 64, "\"DNSCHED\\0\"");
    /// Key.
    pub const KEY: Field =
        field!("key", 0, 64, "matches this schedule's messages with the peers' schedules of the same collective");
    /// Word layouts.
    pub const WORDS: &[Word] = &[
        Word { index: 0, fields: &[MAGIC] },
        Word { index: 1, fields: &[ENTRIES, DEPS] },
        Word { index: 2, fields: &[KEY] },
        Word { index: 3, fields: &[DONE_SLOT, OP, ELEM] },
    ];
}

/// Entry word fields.
pub mod entry {
    use super::*;
    /// Kind.
    pub const KIND: Field = field!("kind", 0, 8, "ENTRY_* kind");
    /// Peer node.
    pub const NODE: Field = field!("node", 32, 16, "peer node (SEND, RECV)");
    /// Peer slot.
    pub const SLOT: Field = field!("slot", 48, 16, "peer slot (SEND, RECV)");
    /// Source address.
    pub const SRC: Field = field!("src", 0, 64, "source address in the own partition (SEND, REDUCE, COPY)");
    /// Destination address.
    pub const DST: Field = field!("dst", 0, 64, "destination address in the own partition (RECV, REDUCE, COPY)");
    /// Length.
    pub const LEN: Field = field!("len", 0, 32, "bytes");
    /// Round.
    pub const ROUND: Field = field!("round", 32, 32, "message tag within the schedule (SEND, RECV)");
    /// First predecessor.
    pub const FIRST_DEP: Field = field!("first_dep", 0, 32, "index of the first predecessor in the dependency array");
    /// Number of predecessors.
    pub const N_DEPS: Field = field!("n_deps", 32, 32, "number of predecessors (all earlier entries)");
    /// Word layouts.
    pub const WORDS: &[Word] = &[
        Word { index: 0, fields: &[KIND, NODE, SLOT] },
        Word { index: 1, fields: &[SRC] },
        Word { index: 2, fields: &[DST] },
        Word { index: 3, fields: &[LEN, ROUND] },
        Word { index: 4, fields: &[FIRST_DEP, N_DEPS] },
    ];
}

/// A decoded table header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableHeader {
    /// Entries that follow.
    pub entries: u32,
    /// Predecessor indices after the entries.
    pub deps: u32,
    /// Message key shared by the peers' schedules of one collective.
    pub key: u64,
    /// Completion slot (`< SCHED_SLOTS`).
    pub done_slot: u8,
    /// Reduction operation.
    pub op: ReduceOp,
    /// Element type of reductions.
    pub elem: ElemType,
}

fn bad() -> ErrorCode {
    ErrorCode::BadSchedule
}

impl TableHeader {
    /// Encode into eight words.
    pub fn encode(&self) -> [u64; 8] {
        let mut w = [0u64; 8];
        w[0] = TABLE_MAGIC;
        w[1] = header::DEPS.set(header::ENTRIES.set(0, self.entries as u64), self.deps as u64);
        w[2] = self.key;
        w[3] = header::ELEM
            .set(header::OP.set(header::DONE_SLOT.set(0, self.done_slot as u64), self.op as u64), self.elem as u64);
        w
    }

    /// Decode and check: magic, limits, slot, an operation the unit has on
    /// a type it is defined for.
    pub fn decode(w: &[u64; 8]) -> Result<TableHeader, ErrorCode> {
        if w[0] != TABLE_MAGIC || w[4..].iter().any(|&x| x != 0) || w[3] >> 24 != 0 {
            return Err(bad());
        }
        let op = ReduceOp::from_raw(header::OP.get(w[3]) as u8).ok_or(bad())?;
        let elem = ElemType::from_raw(header::ELEM.get(w[3]) as u8).ok_or(bad())?;
        let h = TableHeader {
            entries: header::ENTRIES.get(w[1]) as u32,
            deps: header::DEPS.get(w[1]) as u32,
            key: w[2],
            done_slot: header::DONE_SLOT.get(w[3]) as u8,
            op,
            elem,
        };
        if h.entries > MAX_ENTRIES || h.deps > MAX_DEPS || h.done_slot as usize >= SCHED_SLOTS {
            return Err(bad());
        }
        if (op == ReduceOp::None) != (elem == ElemType::None) || (op.is_bitwise() && elem.is_float()) {
            return Err(bad());
        }
        Ok(h)
    }

    /// Bytes of the whole table (header, entries, padded dependencies).
    pub fn table_bytes(&self) -> u64 {
        (HEADER_BYTES + self.entries as usize * ENTRY_BYTES) as u64 + (self.deps as u64 * 4).div_ceil(8) * 8
    }
}

/// A decoded entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// What it does.
    pub kind: EntryKind,
    /// Peer (SEND, RECV; zero otherwise).
    pub peer: Peer,
    /// Source address (SEND, REDUCE, COPY; zero otherwise).
    pub src: u64,
    /// Destination address (RECV, REDUCE, COPY; zero otherwise).
    pub dst: u64,
    /// Bytes.
    pub len: u32,
    /// Message tag within the schedule (SEND, RECV; zero otherwise).
    pub round: u32,
    /// First predecessor index in the dependency array.
    pub first_dep: u32,
    /// Number of predecessors.
    pub n_deps: u32,
}

impl Entry {
    /// Encode into eight words.
    pub fn encode(&self) -> [u64; 8] {
        let mut w = [0u64; 8];
        w[0] = entry::SLOT
            .set(entry::NODE.set(entry::KIND.set(0, self.kind as u64), self.peer.node as u64), self.peer.slot as u64);
        w[1] = self.src;
        w[2] = self.dst;
        w[3] = entry::ROUND.set(entry::LEN.set(0, self.len as u64), self.round as u64);
        w[4] = entry::N_DEPS.set(entry::FIRST_DEP.set(0, self.first_dep as u64), self.n_deps as u64);
        w
    }

    /// Decode, refusing reserved bits and fields the kind does not use.
    pub fn decode(w: &[u64; 8]) -> Result<Entry, ErrorCode> {
        let kind = EntryKind::from_raw(entry::KIND.get(w[0]) as u8).ok_or(bad())?;
        if (w[0] >> 8) & 0xFF_FFFF != 0 || w[5..].iter().any(|&x| x != 0) {
            return Err(bad());
        }
        let e = Entry {
            kind,
            peer: Peer::new(entry::NODE.get(w[0]) as u16, entry::SLOT.get(w[0]) as u16),
            src: w[1],
            dst: w[2],
            len: entry::LEN.get(w[3]) as u32,
            round: entry::ROUND.get(w[3]) as u32,
            first_dep: entry::FIRST_DEP.get(w[4]) as u32,
            n_deps: entry::N_DEPS.get(w[4]) as u32,
        };
        let unused = match kind {
            EntryKind::Send => e.dst != 0,
            EntryKind::Recv => e.src != 0,
            EntryKind::Reduce | EntryKind::Copy => e.peer != Peer::new(0, 0) || e.round != 0,
        };
        if unused {
            return Err(bad());
        }
        Ok(e)
    }
}

/// Entry kinds as an exported enumeration.
pub fn kind_enum() -> EnumInfo {
    EnumInfo {
        name: "ENTRY",
        doc: "schedule entry kinds (entry word 0 bits 7:0)",
        bitflags: false,
        values: EntryKind::ALL
            .iter()
            .map(|k| EnumValue {
                name: format!("{k:?}").to_uppercase(),
                value: *k as u64,
                doc: match k {
                    EntryKind::Send => "send len bytes at src to peer, tagged (key, round)",
                    EntryKind::Recv => "receive the (key, round) message of peer into dst",
                    EntryKind::Reduce => "dst = src op dst, element-wise (reduction unit)",
                    EntryKind::Copy => "dst = src",
                }
                .into(),
            })
            .collect(),
    }
}

/// Reduction operations as an exported enumeration.
pub fn op_enum() -> EnumInfo {
    EnumInfo {
        name: "REDUCE_OP",
        doc: "reduction unit operations (table header word 3 bits 15:8); bitwise ones on integers only",
        bitflags: false,
        values: ReduceOp::ALL
            .iter()
            .map(|k| EnumValue { name: format!("{k:?}").to_uppercase(), value: *k as u64, doc: String::new() })
            .collect(),
    }
}

/// Element types as an exported enumeration.
pub fn elem_enum() -> EnumInfo {
    EnumInfo {
        name: "ELEM_TYPE",
        doc: "reduction unit element types (table header word 3 bits 23:16), little-endian",
        bitflags: false,
        values: ElemType::ALL
            .iter()
            .map(|k| EnumValue { name: format!("{k:?}").to_uppercase(), value: *k as u64, doc: String::new() })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn entries_round_trip_and_decode_is_strict(words in any::<[u64; 8]>()) {
            if let Ok(e) = Entry::decode(&words) {
                prop_assert_eq!(e.encode(), words);
            }
        }

        #[test]
        fn headers_decode_strictly(words in any::<[u64; 8]>(), magic in any::<bool>()) {
            let mut w = words;
            if magic { w[0] = TABLE_MAGIC; }
            if let Ok(h) = TableHeader::decode(&w) {
                prop_assert_eq!(h.encode(), w);
            }
        }
    }

    #[test]
    fn a_header_names_a_defined_operation() {
        let h = TableHeader { entries: 3, deps: 2, key: 7, done_slot: 1, op: ReduceOp::Sum, elem: ElemType::F64 };
        assert_eq!(TableHeader::decode(&h.encode()), Ok(h));
        assert_eq!(h.table_bytes(), 64 + 3 * 64 + 8);
        let float_xor = TableHeader { op: ReduceOp::Bxor, ..h };
        assert_eq!(TableHeader::decode(&float_xor.encode()), Err(ErrorCode::BadSchedule));
        let half = TableHeader { op: ReduceOp::None, ..h };
        assert_eq!(TableHeader::decode(&half.encode()), Err(ErrorCode::BadSchedule));
        let slot = TableHeader { done_slot: SCHED_SLOTS as u8, ..h };
        assert_eq!(TableHeader::decode(&slot.encode()), Err(ErrorCode::BadSchedule));
    }

    #[test]
    fn entries_refuse_fields_their_kind_does_not_use() {
        let send = Entry {
            kind: EntryKind::Send,
            peer: Peer::new(1, 2),
            src: 4096,
            dst: 0,
            len: 8,
            round: 3,
            first_dep: 0,
            n_deps: 0,
        };
        assert_eq!(Entry::decode(&send.encode()), Ok(send));
        assert_eq!(Entry::decode(&Entry { dst: 8, ..send }.encode()), Err(ErrorCode::BadSchedule));
        let copy = Entry { kind: EntryKind::Copy, dst: 64, ..send };
        assert_eq!(Entry::decode(&copy.encode()), Err(ErrorCode::BadSchedule), "a copy has no peer");
    }
}
