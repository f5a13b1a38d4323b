//! The `external32` data representation (MPI 4.1 §13.5.2), for
//! `MPI_Pack_external` and `MPI_Unpack_external` (§5.2.3): every basic
//! element big-endian, at the size the standard's table gives it, with
//! no gaps. On this machine (x86-64 Linux) that means:
//!
//! - integers and IEEE floats swap their bytes;
//! - `long` and `unsigned long` are 8 bytes here and 4 in external32, and
//!   `wchar_t` 4 and 2: packing refuses a value that does not fit
//!   (`MPI_ERR_CONVERSION`), unpacking extends it;
//! - `long double` is x87 extended precision here and IEEE binary128
//!   there: the 64-bit significand moves exactly into the wider one, and
//!   comes back truncated to 64 bits.
//!
//! A datatype's elements are packed natively first (the typemap engine,
//! in typemap order) and converted here, by its [`Signature`]: the
//! sequence of its basic elements, stored in the size of its description.

use std::sync::Arc;

use crate::error::{MpiError, Result};

/// How one basic element moves between this machine's form and
/// external32.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Basic {
    /// `n` bytes either way, big-endian in external32 (integers and IEEE
    /// floats; a single byte is copied).
    Swap(usize),
    /// An integer of `native` bytes here and `ext` in external32.
    Int {
        /// Bytes here.
        native: usize,
        /// Bytes in external32.
        ext: usize,
        /// Sign-extended (else zero-extended) when unpacked.
        signed: bool,
    },
    /// x87 extended precision in 16 bytes here; binary128 there.
    X87,
}

impl Basic {
    /// Bytes here.
    pub const fn native(self) -> usize {
        match self {
            Basic::Swap(n) => n,
            Basic::Int { native, .. } => native,
            Basic::X87 => 16,
        }
    }

    /// Bytes in external32.
    pub fn external(self) -> usize {
        match self {
            Basic::Swap(n) => n,
            Basic::Int { ext, .. } => ext,
            Basic::X87 => 16,
        }
    }

    /// `native` (this element's bytes here) into `out`, big-endian.
    fn to_external(self, native: &[u8], out: &mut [u8]) -> Result<()> {
        match self {
            Basic::Swap(_) => {
                for (o, b) in out.iter_mut().zip(native.iter().rev()) {
                    *o = *b;
                }
            }
            Basic::Int { native: n, ext, signed } => {
                let mut v = [0u8; 16];
                v[..n].copy_from_slice(native);
                let wide = i128::from_le_bytes(v);
                let value = if signed { wide << (128 - 8 * n) >> (128 - 8 * n) } else { wide };
                let bits = 8 * ext as u32;
                let fits = if signed {
                    value >= -(1i128 << (bits - 1)) && value < (1i128 << (bits - 1))
                } else {
                    value < (1i128 << bits)
                };
                if !fits {
                    return Err(MpiError::Conversion(crate::error::ConversionError::IntegerTooWide {
                        bytes: n,
                        value,
                        external: ext,
                    }));
                }
                for (i, o) in out.iter_mut().enumerate() {
                    *o = (value >> (8 * (ext - 1 - i))) as u8;
                }
            }
            Basic::X87 => {
                let mantissa = u64::from_le_bytes(native[..8].try_into().unwrap_or_default());
                let sign_exp = u16::from_le_bytes([native[8], native[9]]);
                let quad = (u128::from(sign_exp) << 112) | (u128::from(mantissa & !(1 << 63)) << 49);
                out.copy_from_slice(&quad.to_be_bytes());
            }
        }
        Ok(())
    }

    /// External32 bytes `ext` into this element's bytes here, `out`.
    fn to_native(self, ext: &[u8], out: &mut [u8]) {
        match self {
            Basic::Swap(_) => {
                for (o, b) in out.iter_mut().zip(ext.iter().rev()) {
                    *o = *b;
                }
            }
            Basic::Int { signed, .. } => {
                let fill = if signed && ext.first().is_some_and(|b| b & 0x80 != 0) { 0xFF } else { 0 };
                out.fill(fill);
                for (o, b) in out.iter_mut().zip(ext.iter().rev()) {
                    *o = *b;
                }
            }
            Basic::X87 => {
                let quad = u128::from_be_bytes(ext[..16].try_into().unwrap_or_default());
                let sign_exp = (quad >> 112) as u16;
                let integer = if sign_exp & 0x7FFF != 0 { 1u64 << 63 } else { 0 };
                let mantissa = integer | ((quad >> 49) as u64 & !(1 << 63));
                out.fill(0);
                out[..8].copy_from_slice(&mantissa.to_le_bytes());
                out[8..10].copy_from_slice(&sign_exp.to_le_bytes());
            }
        }
    }
}

/// One part of a [`Signature`].
#[derive(Clone, Debug)]
enum Part {
    Basic(Basic),
    Sig(Arc<Signature>),
}

/// A datatype's type signature (MPI 4.1 §5.1.1): its basic elements in
/// typemap order, as runs of repeated parts (a vector of a million
/// `MPI_INT`s is one run).
#[derive(Clone, Debug, Default)]
pub struct Signature {
    parts: Vec<(Part, u64)>,
    native: u64,
    external: u64,
}

impl Signature {
    /// The signature of a predefined datatype: its basic elements.
    pub fn of(basics: &[Basic]) -> Signature {
        let mut s = Signature::default();
        for &b in basics {
            s.native += b.native() as u64;
            s.external += b.external() as u64;
            s.parts.push((Part::Basic(b), 1));
        }
        s
    }

    /// Append `times` copies of `sig`.
    pub fn push(&mut self, sig: Arc<Signature>, times: u64) -> Result<()> {
        let too_big = || MpiError::TooLarge(crate::error::Overflow::Signature);
        let native = sig.native.checked_mul(times).ok_or_else(too_big)?;
        let external = sig.external.checked_mul(times).ok_or_else(too_big)?;
        self.native = self.native.checked_add(native).ok_or_else(too_big)?;
        self.external = self.external.checked_add(external).ok_or_else(too_big)?;
        if times > 0 {
            self.parts.push((Part::Sig(sig), times));
        }
        Ok(())
    }

    /// Bytes of one element here (`MPI_Type_size`).
    pub fn native_size(&self) -> u64 {
        self.native
    }

    /// Bytes of one element in external32 (`MPI_Pack_external_size`).
    pub fn external_size(&self) -> u64 {
        self.external
    }

    /// Call `f` on each basic element, in order.
    fn walk(&self, f: &mut dyn FnMut(Basic) -> Result<()>) -> Result<()> {
        for (part, times) in &self.parts {
            for _ in 0..*times {
                match part {
                    Part::Basic(b) => f(*b)?,
                    Part::Sig(s) => s.walk(f)?,
                }
            }
        }
        Ok(())
    }

    /// Convert `count` elements packed here (`native`, in typemap order)
    /// to external32.
    pub fn to_external(&self, native: &[u8], count: usize) -> Result<Vec<u8>> {
        self.check(native.len(), self.native, count)?;
        let mut out = vec![0u8; self.len(self.external, count)?];
        let (mut at, mut to) = (0, 0);
        for _ in 0..count {
            self.walk(&mut |b| {
                let (n, e) = (b.native(), b.external());
                b.to_external(&native[at..at + n], &mut out[to..to + e])?;
                at += n;
                to += e;
                Ok(())
            })?;
        }
        Ok(out)
    }

    /// Convert `count` elements in external32 (`ext`) to their packed form
    /// here, in typemap order.
    pub fn from_external(&self, ext: &[u8], count: usize) -> Result<Vec<u8>> {
        self.check(ext.len(), self.external, count)?;
        let mut out = vec![0u8; self.len(self.native, count)?];
        let (mut at, mut to) = (0, 0);
        for _ in 0..count {
            self.walk(&mut |b| {
                let (n, e) = (b.native(), b.external());
                b.to_native(&ext[at..at + e], &mut out[to..to + n]);
                at += e;
                to += n;
                Ok(())
            })?;
        }
        Ok(out)
    }

    fn len(&self, each: u64, count: usize) -> Result<usize> {
        each.checked_mul(count as u64)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or(MpiError::TooLarge(crate::error::Overflow::ElementsOf { count, each }))
    }

    fn check(&self, have: usize, each: u64, count: usize) -> Result<()> {
        let need = self.len(each, count)?;
        if have != need {
            return Err(crate::error::SignatureError::Packed { have, count, each: each as usize }.into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_and_floats_are_big_endian() {
        let s = Signature::of(&[Basic::Swap(4), Basic::Swap(8)]);
        let mut native = Vec::new();
        native.extend_from_slice(&(-2i32).to_le_bytes());
        native.extend_from_slice(&2.0f64.to_le_bytes());
        let ext = s.to_external(&native, 1).unwrap();
        assert_eq!(ext, [0xFF, 0xFF, 0xFF, 0xFE, 0x40, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(s.from_external(&ext, 1).unwrap(), native);
    }

    #[test]
    fn a_long_narrows_and_widens() {
        let long = Basic::Int { native: 8, ext: 4, signed: true };
        let s = Signature::of(&[long]);
        let ext = s.to_external(&(-2i64).to_le_bytes(), 1).unwrap();
        assert_eq!(ext, [0xFF, 0xFF, 0xFF, 0xFE]);
        assert_eq!(s.from_external(&ext, 1).unwrap(), (-2i64).to_le_bytes());
        let too_big = s.to_external(&(1i64 << 40).to_le_bytes(), 1);
        assert_eq!(
            too_big,
            Err(MpiError::Conversion(crate::error::ConversionError::IntegerTooWide {
                bytes: 8,
                value: 1 << 40,
                external: 4
            }))
        );
        let ulong = Signature::of(&[Basic::Int { native: 8, ext: 4, signed: false }]);
        let ext = ulong.to_external(&0xFFFF_FFFFu64.to_le_bytes(), 1).unwrap();
        assert_eq!(ulong.from_external(&ext, 1).unwrap(), 0xFFFF_FFFFu64.to_le_bytes());
    }

    #[test]
    fn x87_long_double_is_binary128() {
        // 1.0L: significand 1 << 63, exponent 0x3FFF.
        let mut one = [0u8; 16];
        one[..8].copy_from_slice(&(1u64 << 63).to_le_bytes());
        one[8..10].copy_from_slice(&0x3FFFu16.to_le_bytes());
        let s = Signature::of(&[Basic::X87]);
        let ext = s.to_external(&one, 1).unwrap();
        assert_eq!(ext[..2], [0x3F, 0xFF]);
        assert!(ext[2..].iter().all(|&b| b == 0));
        assert_eq!(s.from_external(&ext, 1).unwrap(), one);
    }

    #[test]
    fn repeats_stay_small_and_sizes_add_up() {
        let int = Arc::new(Signature::of(&[Basic::Swap(4)]));
        let mut v = Signature::default();
        v.push(int.clone(), 1 << 40).unwrap();
        assert_eq!(v.parts.len(), 1);
        assert_eq!(v.external_size(), 4 << 40);
        let mut s = Signature::default();
        s.push(int, 3).unwrap();
        s.push(Arc::new(Signature::of(&[Basic::Int { native: 8, ext: 4, signed: true }])), 1).unwrap();
        assert_eq!((s.native_size(), s.external_size()), (20, 16));
        assert!(s.to_external(&[0; 19], 1).is_err());
    }
}
