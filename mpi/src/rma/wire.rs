//! The messages of one-sided communication by active messages (MPI 4.1
//! chapter 12 over the engine's point-to-point): what an origin asks of a
//! target, and the target's replies.
//!
//! Each message travels on the window's own context, with its kind as
//! the tag; the engine keeps messages from one process in order, so a
//! flush, an unlock or a completion notice arrives after every operation
//! the same origin issued before it. Layout (little-endian, ours):
//!
//! | bytes | field |
//! |---|---|
//! | 8 | `id`: the origin's number for the reply (0: none wanted) |
//! | 1 | operation ([`AccOp`] code), 0 when none |
//! | 1 | element type ([`Elem`] code), 0 when none |
//! | 1 | flags (bit 0: exclusive lock; bit 1: failed reply) |
//! | 1 | reserved, 0 |
//! | 4 | `n`: number of target blocks |
//! | 16 × n | blocks: byte offset in the target's window (an address for a dynamic window), length |
//! | rest | data |

use super::AccOp;
use crate::staged::reduce::Elem;
use crate::{MpiError, Result};

/// What a message asks for, or answers (its tag on the window's context).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum Kind {
    /// Store the data into the blocks (`MPI_Put`).
    Put = 1,
    /// Combine the data into the blocks (`MPI_Accumulate`).
    Acc = 2,
    /// Reply with the blocks' bytes (`MPI_Get`).
    Get = 3,
    /// Reply with the blocks' bytes, then combine the data into them
    /// (`MPI_Get_accumulate`, `MPI_Fetch_and_op`).
    GetAcc = 4,
    /// Data holds the compare value then the new one: reply with the
    /// old value, store the new one if the old equals the compare value
    /// (`MPI_Compare_and_swap`).
    Cas = 5,
    /// Reply once everything before has been applied (`MPI_Win_flush`).
    Flush = 6,
    /// Reply once the lock is granted (`MPI_Win_lock`).
    Lock = 7,
    /// Release the lock, then reply (`MPI_Win_unlock`).
    Unlock = 8,
    /// The target exposes its window to this origin (`MPI_Win_post`).
    Post = 9,
    /// The origin's access epoch ended (`MPI_Win_complete`).
    Complete = 10,
    /// An answer to the message whose `id` it carries.
    Reply = 11,
}

impl Kind {
    const ALL: [Kind; 11] = [
        Kind::Put,
        Kind::Acc,
        Kind::Get,
        Kind::GetAcc,
        Kind::Cas,
        Kind::Flush,
        Kind::Lock,
        Kind::Unlock,
        Kind::Post,
        Kind::Complete,
        Kind::Reply,
    ];

    /// The kind a tag names.
    pub fn from_tag(tag: i32) -> Option<Kind> {
        Kind::ALL.iter().copied().find(|k| *k as i32 == tag)
    }
}

/// Flag: the lock asked for is exclusive.
pub const EXCLUSIVE: u8 = 1;
/// Flag: the reply reports a failure (its data is the reason, in UTF-8).
pub const FAILED: u8 = 2;

/// Fixed header bytes.
pub const HEAD: usize = 16;

/// A decoded message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Msg<'a> {
    /// What it is.
    pub kind: Kind,
    /// The origin's number for the reply.
    pub id: u64,
    /// The combining operation (`Acc`, `GetAcc`).
    pub op: Option<AccOp>,
    /// The element type (`Acc`, `GetAcc`, `Cas`).
    pub elem: Option<Elem>,
    /// Flags.
    pub flags: u8,
    /// Target blocks `(offset, length)`.
    pub blocks: Vec<(u64, u64)>,
    /// The data that follows.
    pub data: &'a [u8],
}

impl Msg<'_> {
    /// A message with no blocks and no data.
    pub fn bare(kind: Kind, id: u64) -> Msg<'static> {
        Msg { kind, id, op: None, elem: None, flags: 0, blocks: Vec::new(), data: &[] }
    }

    /// Encode: the tag, and the bytes to send.
    pub fn encode(&self) -> (i32, Vec<u8>) {
        let mut v = Vec::with_capacity(HEAD + 16 * self.blocks.len() + self.data.len());
        v.extend_from_slice(&self.id.to_le_bytes());
        v.push(self.op.map_or(0, AccOp::code));
        v.push(self.elem.map_or(0, elem_code));
        v.push(self.flags);
        v.push(0);
        v.extend_from_slice(&(self.blocks.len() as u32).to_le_bytes());
        for (o, l) in &self.blocks {
            v.extend_from_slice(&o.to_le_bytes());
            v.extend_from_slice(&l.to_le_bytes());
        }
        v.extend_from_slice(self.data);
        (self.kind as i32, v)
    }

    /// Decode a message that arrived with `tag` from `src` (a job rank, for
    /// the error); anything malformed is an error naming the sender, never
    /// a panic.
    pub fn decode(src: u32, tag: i32, b: &[u8]) -> Result<Msg<'_>> {
        let bad = |what: &str| MpiError::Malformed { from: src, what: format!("a one-sided message: {what}") };
        let kind = Kind::from_tag(tag).ok_or_else(|| bad(&format!("unknown kind {tag}")))?;
        if b.len() < HEAD {
            return Err(bad("shorter than its header"));
        }
        let id = u64::from_le_bytes(b[0..8].try_into().map_err(|_| bad("header"))?);
        let op = match b[8] {
            0 => None,
            c => Some(AccOp::from_code(c).ok_or_else(|| bad(&format!("unknown operation {c}")))?),
        };
        let elem = match b[9] {
            0 => None,
            c => Some(elem_from_code(c).ok_or_else(|| bad(&format!("unknown element type {c}")))?),
        };
        let n = u32::from_le_bytes(b[12..16].try_into().map_err(|_| bad("header"))?) as usize;
        let end = n.checked_mul(16).and_then(|x| x.checked_add(HEAD)).filter(|e| *e <= b.len());
        let end = end.ok_or_else(|| bad(&format!("{n} blocks do not fit its {} bytes", b.len())))?;
        let blocks = b[HEAD..end]
            .chunks_exact(16)
            .map(|c| {
                let (o, l) = c.split_at(8);
                (
                    u64::from_le_bytes(o.try_into().unwrap_or_default()),
                    u64::from_le_bytes(l.try_into().unwrap_or_default()),
                )
            })
            .collect();
        Ok(Msg { kind, id, op, elem, flags: b[10], blocks, data: &b[end..] })
    }
}

/// The element types, by wire code (1-based; 0 is "none").
const ELEMS: [Elem; 22] = [
    Elem::I8,
    Elem::U8,
    Elem::I16,
    Elem::U16,
    Elem::I32,
    Elem::U32,
    Elem::I64,
    Elem::U64,
    Elem::F32,
    Elem::F64,
    Elem::Int2,
    Elem::FloatInt,
    Elem::DoubleInt,
    Elem::LongInt,
    Elem::ShortInt,
    Elem::Real2,
    Elem::Double2,
    Elem::C32,
    Elem::C64,
    Elem::LongDouble,
    Elem::LongDoubleInt,
    Elem::C80,
];

fn elem_code(e: Elem) -> u8 {
    ELEMS.iter().position(|x| *x == e).map_or(0, |i| i as u8 + 1)
}

fn elem_from_code(c: u8) -> Option<Elem> {
    ELEMS.get(usize::from(c).checked_sub(1)?).copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SystemOperation;
    use proptest::prelude::*;

    fn op() -> impl Strategy<Value = Option<AccOp>> {
        prop_oneof![
            Just(None),
            Just(Some(AccOp::Replace)),
            Just(Some(AccOp::NoOp)),
            Just(Some(AccOp::System(SystemOperation::Sum))),
            Just(Some(AccOp::System(SystemOperation::MaxLoc))),
        ]
    }

    proptest! {
        #[test]
        fn messages_round_trip(
            k in 0usize..11, id in any::<u64>(), op in op(), e in proptest::option::of(0usize..12),
            flags in 0u8..4, blocks in proptest::collection::vec((any::<u64>(), any::<u64>()), 0..5),
            data in proptest::collection::vec(any::<u8>(), 0..40),
        ) {
            let m = Msg { kind: Kind::ALL[k], id, op, elem: e.map(|i| ELEMS[i]), flags, blocks, data: &data };
            let (tag, bytes) = m.encode();
            prop_assert_eq!(Msg::decode(2, tag, &bytes).unwrap(), m);
        }

        #[test]
        fn garbage_is_an_error_not_a_panic(tag in -2i32..14, b in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = Msg::decode(1, tag, &b);
        }
    }

    #[test]
    fn a_block_count_past_the_end_is_refused() {
        let (tag, mut b) = Msg::bare(Kind::Put, 0).encode();
        b[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        let e = Msg::decode(4, tag, &b).unwrap_err().to_string();
        assert!(e.contains("rank 4") && e.contains("blocks"), "{e}");
    }
}
