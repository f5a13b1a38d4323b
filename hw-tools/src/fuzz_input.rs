//! The fuzzer's input format: bytes to a case of [`Op`]s and back.
//!
//! A coverage-guided fuzzer (AFL++ through `fuzz/`, `scripts/fuzz.sh`)
//! mutates bytes, not operation sequences; [`decode`] turns any bytes into
//! a case the harness of [`crate::fuzz`] runs with all its invariants, and
//! [`encode`] writes a case back, so the seed corpus comes from the
//! proptest generator (`decode(encode(case)) == case`) and a failing input
//! can be printed as operations.
//!
//! The format is a list of operations, each a tag byte (which variant, by
//! its value modulo the number of variants) followed by its fields in
//! little-endian order, each read modulo the range the generator draws it
//! from, so every input decodes to operations the generator could have
//! made, in orders and combinations it would rarely make. Missing bytes at
//! the end read as zeros; at most [`MAX_OPS`] operations are read.
//!
//! [`decode_raw`] reads the same bytes as the second target's operations
//! only: words written anywhere in the slot's four windows, raw
//! descriptors, doorbell values and pauses, with no structure at all.

use crate::fuzz::{Defect, Mutation, Op, Proto, Shape, EXPOSED, LOCAL_SPAN};

/// Most operations one input decodes to (the proptest cases have up to 64).
pub const MAX_OPS: usize = 64;

const PROTOS: [Proto; 7] = [Proto::Vs, Proto::Vl, Proto::Rvs, Proto::Rvl, Proto::Ivs, Proto::Botf, Proto::Amo];
const SPAN: u32 = LOCAL_SPAN as u32;
/// Elements in a list shape (the generator: 1..32).
const MAX_LIST: u8 = 31;

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }

    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut b = [0u8; N];
        for x in b.iter_mut() {
            *x = self.bytes.get(self.at).copied().unwrap_or(0);
            self.at += 1;
        }
        b
    }

    fn u8(&mut self) -> u8 {
        self.take::<1>()[0]
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.take())
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }

    fn shape(&mut self) -> Shape {
        match self.u8() % 4 {
            0 => Shape::Contiguous { off: self.u32() % (SPAN - 4096), len: self.u32() % 4097 },
            1 => {
                let elem = 1 + self.u8() as u32 % 63;
                let extra = self.u8() as u32 % 192;
                let count = 1 + self.u8() as u32 % 63;
                Shape::Stride { off: self.u32() % (SPAN / 2), elem, stride: elem + extra, count }
            }
            2 => {
                let elem = 1 + self.u8() as u32 % 63;
                let n = 1 + self.u8() % MAX_LIST;
                Shape::List { elem, offs: (0..n).map(|_| self.u32() % (SPAN - 64)).collect() }
            }
            _ => {
                let n = 1 + self.u8() % MAX_LIST;
                Shape::Packed { items: (0..n).map(|_| (self.u32() % (SPAN - 64), self.u8() as u32 % 64)).collect() }
            }
        }
    }

    fn mutation(&mut self) -> Mutation {
        match self.u8() % 3 {
            0 => Mutation::Random(self.u64()),
            1 => Mutation::Flip(self.u8()),
            _ => Mutation::Add((self.u8() % 128) as i16 - 64),
        }
    }

    fn op(&mut self) -> Op {
        match self.u8() % 11 {
            0 => Op::LocalRoundTrip { shape: self.shape(), seed: self.u64() },
            1 => Op::RemoteRoundTrip { shape: self.shape(), seed: self.u64() },
            2 => {
                let len = self.u16() as u32 % 257;
                let flags = self.u8();
                Op::Send { len, botf: flags & 1 != 0, from_sodimm: flags & 2 != 0 }
            }
            3 => Op::BotfRoundTrip { shape: self.shape(), seed: self.u64() },
            4 => Op::Atomic { off: (self.u16() as u32 % (EXPOSED as u32 / 8)) * 8, operand: self.u64() },
            5 => Op::Invalid(Defect::ALL[self.u8() as usize % Defect::ALL.len()]),
            6 => {
                let proto = PROTOS[self.u8() as usize % PROTOS.len()];
                let shape = self.shape();
                let word = self.u8() % 6;
                Op::Mutant { proto, shape, word, how: self.mutation() }
            }
            7 => self.raw_op(1),
            8 => self.raw_op(0),
            9 => self.raw_op(2),
            _ => self.raw_op(3),
        }
    }

    /// The unstructured operations: 0 a word anywhere, 1 a raw descriptor,
    /// 2 a doorbell value, 3 a pause.
    fn raw_op(&mut self, kind: u8) -> Op {
        match kind % 4 {
            0 => Op::Poke { region: self.u8() % 4, word: self.u16() % 8192, value: self.u64() },
            1 => Op::Raw(std::array::from_fn(|_| self.u64())),
            2 => match self.u8() % 2 {
                0 => Op::Doorbell { delta: (self.u8() % 80) as i64 - 40 },
                _ => Op::Doorbell { delta: self.u64() as i64 },
            },
            _ => Op::Compute(self.u16() % 5000),
        }
    }
}

/// The operations `bytes` stand for (see the module documentation).
pub fn decode(bytes: &[u8]) -> Vec<Op> {
    let mut r = Reader { bytes, at: 0 };
    let mut ops = Vec::new();
    while !r.done() && ops.len() < MAX_OPS {
        ops.push(r.op());
    }
    ops
}

/// The second target's reading of `bytes`: raw words, descriptors and
/// doorbells only.
pub fn decode_raw(bytes: &[u8]) -> Vec<Op> {
    let mut r = Reader { bytes, at: 0 };
    let mut ops = Vec::new();
    while !r.done() && ops.len() < MAX_OPS {
        let kind = r.u8();
        ops.push(r.raw_op(kind));
    }
    ops
}

struct Writer(Vec<u8>);

impl Writer {
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u16(&mut self, v: u16) {
        self.0.extend(v.to_le_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.0.extend(v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend(v.to_le_bytes());
    }

    fn shape(&mut self, s: &Shape) {
        match s {
            Shape::Contiguous { off, len } => {
                self.u8(0);
                self.u32(*off);
                self.u32(*len);
            }
            Shape::Stride { off, elem, stride, count } => {
                self.u8(1);
                self.u8((elem - 1) as u8);
                self.u8((stride - elem) as u8);
                self.u8((count - 1) as u8);
                self.u32(*off);
            }
            Shape::List { elem, offs } => {
                self.u8(2);
                self.u8((elem - 1) as u8);
                self.u8((offs.len() - 1) as u8);
                offs.iter().for_each(|o| self.u32(*o));
            }
            Shape::Packed { items } => {
                self.u8(3);
                self.u8((items.len() - 1) as u8);
                for (o, l) in items {
                    self.u32(*o);
                    self.u8(*l as u8);
                }
            }
        }
    }

    fn op(&mut self, op: &Op) {
        match op {
            Op::LocalRoundTrip { shape, seed }
            | Op::RemoteRoundTrip { shape, seed }
            | Op::BotfRoundTrip { shape, seed } => {
                self.u8(match op {
                    Op::LocalRoundTrip { .. } => 0,
                    Op::RemoteRoundTrip { .. } => 1,
                    _ => 3,
                });
                self.shape(shape);
                self.u64(*seed);
            }
            Op::Send { len, botf, from_sodimm } => {
                self.u8(2);
                self.u16(*len as u16);
                self.u8(*botf as u8 | (*from_sodimm as u8) << 1);
            }
            Op::Atomic { off, operand } => {
                self.u8(4);
                self.u16((off / 8) as u16);
                self.u64(*operand);
            }
            Op::Invalid(d) => {
                self.u8(5);
                self.u8(Defect::ALL
                    .iter()
                    .position(|x| std::mem::discriminant(x) == std::mem::discriminant(d))
                    .unwrap_or(0) as u8);
            }
            Op::Mutant { proto, shape, word, how } => {
                self.u8(6);
                self.u8(PROTOS.iter().position(|p| p == proto).unwrap_or(0) as u8);
                self.shape(shape);
                self.u8(*word);
                match how {
                    Mutation::Random(v) => {
                        self.u8(0);
                        self.u64(*v);
                    }
                    Mutation::Flip(b) => {
                        self.u8(1);
                        self.u8(*b);
                    }
                    Mutation::Add(d) => {
                        self.u8(2);
                        self.u8((d + 64) as u8);
                    }
                }
            }
            Op::Raw(w) => {
                self.u8(7);
                w.iter().for_each(|x| self.u64(*x));
            }
            Op::Poke { region, word, value } => {
                self.u8(8);
                self.u8(*region);
                self.u16(*word);
                self.u64(*value);
            }
            Op::Doorbell { delta } => {
                self.u8(9);
                if (-40..40).contains(delta) {
                    self.u8(0);
                    self.u8((delta + 40) as u8);
                } else {
                    self.u8(1);
                    self.u64(*delta as u64);
                }
            }
            Op::Compute(ns) => {
                self.u8(10);
                self.u16(*ns);
            }
        }
    }
}

/// The bytes that [`decode`] reads as `ops` (which must be operations the
/// generator makes: fields in its ranges, at most [`MAX_OPS`] of them).
pub fn encode(ops: &[Op]) -> Vec<u8> {
    let mut w = Writer(Vec::new());
    ops.iter().take(MAX_OPS).for_each(|op| w.op(op));
    w.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

        /// Every generated case survives the round trip, so the seed corpus
        /// is the generator's cases exactly.
        #[test]
        fn generated_cases_decode_to_themselves(ops in crate::fuzz::case(MAX_OPS)) {
            let back = decode(&encode(&ops));
            prop_assert_eq!(format!("{back:?}"), format!("{ops:?}"));
        }

        /// Any bytes decode, to at most MAX_OPS operations.
        #[test]
        fn any_bytes_decode(bytes in proptest::collection::vec(any::<u8>(), 0..4096)) {
            prop_assert!(decode(&bytes).len() <= MAX_OPS);
            prop_assert!(decode_raw(&bytes).len() <= MAX_OPS);
        }
    }

    #[test]
    fn the_raw_target_reads_only_unstructured_operations() {
        let ops = decode_raw(&(0..=255u8).cycle().take(3000).collect::<Vec<_>>());
        assert!(!ops.is_empty());
        assert!(ops.iter().all(|o| matches!(o, Op::Poke { .. } | Op::Raw(_) | Op::Doorbell { .. } | Op::Compute(_))));
    }
}
