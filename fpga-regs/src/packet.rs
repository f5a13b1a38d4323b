//! The DIMMnet-2 network packet header.
//!
//! Seed 004 §2 (**paper**): BOTF sends the packet image written in WW
//! straight to the network, and by rewriting the TYPE field of the header the
//! host builds RVS, RVL, IVS and other packets. The header layout is **ours**
//! (the paper does not give it): 32 bytes, four little-endian words:
//!
//! | word | bits | field |
//! |---|---|---|
//! | 0 | 7:0 | TYPE |
//! | 0 | 15:8 | vector mode of the remote access (RVS, RVL request) |
//! | 0 | 31:16 | flags (reserved, zero) |
//! | 0 | 47:32 | destination node |
//! | 0 | 63:48 | destination slot |
//! | 1 | 15:0 | source node (stamped by the controller) |
//! | 1 | 31:16 | source slot (stamped by the controller) |
//! | 1 | 63:32 | payload length in bytes (what follows the header) |
//! | 2 | 63:0 | remote SO-DIMM address (RVS, RVL request) |
//! | 3 | 31:0 | tag: matches responses and acknowledgements to requests |
//! | 3 | 63:32 | aux: RVL reply PW offset; NACK error code |
//!
//! Payload, by type: IVS = the data appended to the ring; RVS = a pattern
//! block (unless contiguous), the index list (list modes), then the data;
//! RVL request = a pattern block and the index list, no data; RVL response =
//! the data. A pattern block is 16 bytes: `elem u32, count u32, stride u32,
//! 0 u32` (for a contiguous RVL request: `elem` = length, `count` = 1).
//!
//! The controller overwrites the source fields of every packet it sends, so a
//! process cannot forge another's identity (ours).

use serde::Serialize;

use crate::command::{list_entry_size, Pattern, Peer, VectorMode};
use crate::error::ErrorCode;
use crate::field;
use crate::meta::{EnumInfo, EnumValue, Field, Word};

/// Size of the header in bytes.
pub const HEADER_LEN: usize = 32;
/// Size of a pattern block in bytes.
pub const PATTERN_BLOCK_LEN: usize = 16;

/// The TYPE field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[repr(u8)]
pub enum PacketType {
    /// Append the payload to the receiver's ring for this source.
    Ivs = 1,
    /// Store the payload into the receiver's SO-DIMM.
    Rvs = 2,
    /// Read the receiver's SO-DIMM and answer with an RVL response.
    RvlRequest = 3,
    /// Data answering an RVL request (controller-generated).
    RvlResponse = 4,
    /// Positive acknowledgement of an IVS/RVS (controller-generated).
    Ack = 5,
    /// Refusal of an IVS/RVS/RVL/AMO, with an error code in `aux` (controller-generated).
    Nack = 6,
    /// An atomic operation on the receiver's SO-DIMM (controller-generated
    /// from an AMO command; map 1.3): the address in `addr`; the payload is
    /// the operation, element type, operand and compare value.
    AmoRequest = 7,
    /// The old value answering an AMO request (controller-generated).
    AmoResponse = 8,
}

impl PacketType {
    /// All types.
    pub const ALL: [PacketType; 8] = [
        PacketType::Ivs,
        PacketType::Rvs,
        PacketType::RvlRequest,
        PacketType::RvlResponse,
        PacketType::Ack,
        PacketType::Nack,
        PacketType::AmoRequest,
        PacketType::AmoResponse,
    ];

    /// Decode a raw TYPE.
    pub fn from_raw(raw: u8) -> Option<PacketType> {
        PacketType::ALL.into_iter().find(|t| *t as u8 == raw)
    }

    /// Whether a host may send this type with BOTF.
    pub fn host_may_send(self) -> bool {
        matches!(self, PacketType::Ivs | PacketType::Rvs | PacketType::RvlRequest)
    }

    fn doc(self) -> &'static str {
        match self {
            PacketType::Ivs => "append payload to the receiver's ring for this source (BOTF allowed)",
            PacketType::Rvs => "store payload into the receiver's exposed SO-DIMM (BOTF allowed)",
            PacketType::RvlRequest => "read the receiver's exposed SO-DIMM, reply to PW offset aux (BOTF allowed)",
            PacketType::RvlResponse => "RVL data (controller only)",
            PacketType::Ack => "acknowledgement (controller only)",
            PacketType::Nack => "refusal, error code in aux (controller only)",
            PacketType::AmoRequest => {
                "atomic read-modify-write of the receiver's exposed SO-DIMM at addr (controller only: the AMO command)"
            }
            PacketType::AmoResponse => "the old value of an AMO, to the PW offset in aux (controller only)",
        }
    }
}

/// Header fields.
pub mod fields {
    use super::*;
    /// TYPE.
    pub const TYPE: Field = field!("type", 0, 8, "PacketType (PKT_*)");
    /// Mode.
    pub const MODE: Field = field!("mode", 8, 8, "vector mode of the remote access (MODE_*)");
    /// Flags.
    pub const FLAGS: Field = field!("flags", 16, 16, "reserved, zero");
    /// Destination node.
    pub const DST_NODE: Field = field!("dst_node", 32, 16, "destination node");
    /// Destination slot.
    pub const DST_SLOT: Field = field!("dst_slot", 48, 16, "destination slot");
    /// Source node.
    pub const SRC_NODE: Field = field!("src_node", 0, 16, "source node (stamped by the controller)");
    /// Source slot.
    pub const SRC_SLOT: Field = field!("src_slot", 16, 16, "source slot (stamped by the controller)");
    /// Payload length.
    pub const LEN: Field = field!("payload_len", 32, 32, "bytes following the header");
    /// Address.
    pub const ADDR: Field = field!("addr", 0, 64, "remote SO-DIMM address (RVS, RVL request)");
    /// Tag.
    pub const TAG: Field = field!("tag", 0, 32, "request tag echoed by responses");
    /// Aux.
    pub const AUX: Field = field!("aux", 32, 32, "RVL reply PW offset; NACK error code");
    /// Word layouts.
    pub const WORDS: &[Word] = &[
        Word { index: 0, fields: &[TYPE, MODE, FLAGS, DST_NODE, DST_SLOT] },
        Word { index: 1, fields: &[SRC_NODE, SRC_SLOT, LEN] },
        Word { index: 2, fields: &[ADDR] },
        Word { index: 3, fields: &[TAG, AUX] },
    ];
}

/// A decoded packet header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PacketHeader {
    /// TYPE.
    pub ptype: PacketType,
    /// Vector mode of the remote access.
    pub mode: VectorMode,
    /// Destination.
    pub dst: Peer,
    /// Source.
    pub src: Peer,
    /// Payload bytes following the header.
    pub payload_len: u32,
    /// Remote SO-DIMM address.
    pub addr: u64,
    /// Request tag.
    pub tag: u32,
    /// Auxiliary word.
    pub aux: u32,
}

impl PacketHeader {
    /// A header for an IVS packet carrying `len` bytes to `dst`.
    pub fn ivs(dst: Peer, len: u32) -> Self {
        PacketHeader {
            ptype: PacketType::Ivs,
            mode: VectorMode::Contiguous,
            dst,
            src: Peer::new(0, 0),
            payload_len: len,
            addr: 0,
            tag: 0,
            aux: 0,
        }
    }

    /// Encode into 32 bytes.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut w0 = fields::TYPE.set(0, self.ptype as u64);
        w0 = fields::MODE.set(w0, self.mode as u64);
        w0 = fields::DST_NODE.set(w0, self.dst.node as u64);
        w0 = fields::DST_SLOT.set(w0, self.dst.slot as u64);
        let mut w1 = fields::SRC_NODE.set(0, self.src.node as u64);
        w1 = fields::SRC_SLOT.set(w1, self.src.slot as u64);
        w1 = fields::LEN.set(w1, self.payload_len as u64);
        let w3 = fields::AUX.set(fields::TAG.set(0, self.tag as u64), self.aux as u64);
        let mut out = [0u8; HEADER_LEN];
        for (i, w) in [w0, w1, self.addr, w3].into_iter().enumerate() {
            out[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        out
    }

    /// Decode 32 bytes; refuses unknown types, modes and non-zero flags.
    pub fn decode(bytes: &[u8]) -> Result<PacketHeader, ErrorCode> {
        let b = bytes.get(..HEADER_LEN).ok_or(ErrorCode::BadPacketHeader)?;
        let word = |i: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&b[i * 8..i * 8 + 8]);
            u64::from_le_bytes(a)
        };
        let (w0, w1, w2, w3) = (word(0), word(1), word(2), word(3));
        let ptype = PacketType::from_raw(fields::TYPE.get(w0) as u8).ok_or(ErrorCode::BadPacketType)?;
        let mode = VectorMode::from_raw(fields::MODE.get(w0) as u8).ok_or(ErrorCode::BadMode)?;
        if fields::FLAGS.get(w0) != 0 {
            return Err(ErrorCode::ReservedBits);
        }
        Ok(PacketHeader {
            ptype,
            mode,
            dst: Peer::new(fields::DST_NODE.get(w0) as u16, fields::DST_SLOT.get(w0) as u16),
            src: Peer::new(fields::SRC_NODE.get(w1) as u16, fields::SRC_SLOT.get(w1) as u16),
            payload_len: fields::LEN.get(w1) as u32,
            addr: w2,
            tag: fields::TAG.get(w3) as u32,
            aux: fields::AUX.get(w3) as u32,
        })
    }
}

/// The pattern block of an RVS or RVL-request payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PatternBlock {
    /// Element size (contiguous RVL request: the length).
    pub elem: u32,
    /// Element count.
    pub count: u32,
    /// Stride.
    pub stride: u32,
}

impl PatternBlock {
    /// The block describing `p` (list offsets are not part of it: the list follows the block).
    pub fn of(p: &Pattern) -> PatternBlock {
        match *p {
            Pattern::Contiguous { len, .. } => PatternBlock { elem: len, count: 1, stride: 0 },
            Pattern::Stride { elem, stride, count, .. } => PatternBlock { elem, count, stride },
            Pattern::List { elem, count, .. } => PatternBlock { elem, count, stride: 0 },
            Pattern::PackedList { count, .. } => PatternBlock { elem: 0, count, stride: 0 },
        }
    }

    /// Encode into 16 bytes.
    pub fn encode(&self) -> [u8; PATTERN_BLOCK_LEN] {
        let mut out = [0u8; PATTERN_BLOCK_LEN];
        out[0..4].copy_from_slice(&self.elem.to_le_bytes());
        out[4..8].copy_from_slice(&self.count.to_le_bytes());
        out[8..12].copy_from_slice(&self.stride.to_le_bytes());
        out
    }

    /// Decode 16 bytes.
    pub fn decode(b: &[u8]) -> Result<PatternBlock, ErrorCode> {
        let b = b.get(..PATTERN_BLOCK_LEN).ok_or(ErrorCode::BadPacketHeader)?;
        let u = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        if u(12) != 0 {
            return Err(ErrorCode::ReservedBits);
        }
        Ok(PatternBlock { elem: u(0), count: u(4), stride: u(8) })
    }

    /// Rebuild the pattern at `addr` with `mode` (list offsets set to 0: the list travels inline).
    pub fn pattern(&self, mode: VectorMode, addr: u64) -> Result<Pattern, ErrorCode> {
        Ok(match mode {
            VectorMode::Contiguous => {
                if self.count != 1 || self.stride != 0 {
                    return Err(ErrorCode::BadPacketHeader);
                }
                Pattern::Contiguous { addr, len: self.elem }
            }
            VectorMode::Stride => Pattern::Stride { addr, elem: self.elem, stride: self.stride, count: self.count },
            VectorMode::List => {
                if self.stride != 0 {
                    return Err(ErrorCode::BadPacketHeader);
                }
                Pattern::List { base: addr, elem: self.elem, count: self.count, list_off: 0 }
            }
            VectorMode::PackedList => {
                if self.stride != 0 || self.elem != 0 {
                    return Err(ErrorCode::BadPacketHeader);
                }
                Pattern::PackedList { base: addr, count: self.count, list_off: 0 }
            }
        })
    }

    /// Bytes of index list following the block for `mode`.
    pub fn list_len(&self, mode: VectorMode) -> usize {
        self.count as usize * list_entry_size(mode)
    }
}

/// Packet types as an exported enumeration.
pub fn type_enum() -> EnumInfo {
    EnumInfo {
        name: "PKT",
        doc: "packet TYPE values (header word 0 bits 7:0)",
        bitflags: false,
        values: PacketType::ALL
            .iter()
            .map(|t| EnumValue {
                name: match t {
                    PacketType::Ivs => "IVS".into(),
                    PacketType::Rvs => "RVS".into(),
                    PacketType::RvlRequest => "RVL_REQUEST".into(),
                    PacketType::RvlResponse => "RVL_RESPONSE".into(),
                    PacketType::Ack => "ACK".into(),
                    PacketType::Nack => "NACK".into(),
                    PacketType::AmoRequest => "AMO_REQUEST".into(),
                    PacketType::AmoResponse => "AMO_RESPONSE".into(),
                },
                value: *t as u64,
                doc: t.doc().to_string(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn header() -> impl Strategy<Value = PacketHeader> {
        (0usize..6, 0usize..4, any::<[u16; 4]>(), any::<u32>(), any::<u64>(), any::<u32>(), any::<u32>()).prop_map(
            |(t, m, p, payload_len, addr, tag, aux)| PacketHeader {
                ptype: PacketType::ALL[t],
                mode: VectorMode::ALL[m],
                dst: Peer::new(p[0], p[1]),
                src: Peer::new(p[2], p[3]),
                payload_len,
                addr,
                tag,
                aux,
            },
        )
    }

    proptest! {
        #[test]
        fn headers_round_trip(h in header()) {
            prop_assert_eq!(PacketHeader::decode(&h.encode()), Ok(h));
        }

        #[test]
        fn decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = PacketHeader::decode(&bytes);
            let _ = PatternBlock::decode(&bytes);
        }
    }

    #[test]
    fn pattern_blocks_round_trip() {
        let p = Pattern::Stride { addr: 64, elem: 8, stride: 24, count: 5 };
        let b = PatternBlock::of(&p);
        assert_eq!(PatternBlock::decode(&b.encode()), Ok(b));
        assert_eq!(b.pattern(VectorMode::Stride, 64), Ok(p));
    }
}
