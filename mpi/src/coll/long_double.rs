//! C's `long double` on x86-64 (`MPI_LONG_DOUBLE`, and in
//! `MPI_LONG_DOUBLE_INT` and `MPI_C_LONG_DOUBLE_COMPLEX`): the x87 80-bit
//! extended format, stored in 16 bytes. Rust has no such type, so
//! comparisons decode the format exactly and arithmetic runs on the x87
//! unit itself, as a C compiler's code would: a reduction gives the very
//! bits a C program's own `a + b` gives, not a rounded `f64` result.

use bytemuck::{Pod, Zeroable};

use crate::datatype::Equivalence;

/// One `long double`: 10 bytes of x87 extended value (64-bit significand
/// with its integer bit, 15-bit exponent, sign), then 6 bytes of padding,
/// 16-byte aligned, as the x86-64 System V ABI lays it out.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(16))]
pub struct LongDouble {
    bits: [u8; 10],
    pad: [u8; 6],
}

// SAFETY: `#[repr(C, align(16))]` with 16 bytes of byte-array fields: no
// implicit padding, and every bit pattern is a value (NaNs and the
// unnormal encodings included).
unsafe impl Zeroable for LongDouble {}
// SAFETY: `LongDouble` is `Copy + 'static`, and its 16 bytes are its two byte-array fields (no
// implicit padding), valid for any bit pattern: what `Pod` adds to `Zeroable`.
unsafe impl Pod for LongDouble {}
impl Equivalence for LongDouble {}

impl LongDouble {
    /// 1.0 (exponent 0x3fff, significand 1.000...).
    pub const ONE: LongDouble = LongDouble::from_parts(false, 0x3fff, 1 << 63);
    /// +0.0.
    pub const ZERO: LongDouble = LongDouble::from_parts(false, 0, 0);

    /// The value with this sign, biased exponent and significand.
    pub const fn from_parts(negative: bool, exponent: u16, significand: u64) -> LongDouble {
        let m = significand.to_le_bytes();
        let e = (exponent & 0x7fff) | if negative { 0x8000 } else { 0 };
        let e = e.to_le_bytes();
        LongDouble { bits: [m[0], m[1], m[2], m[3], m[4], m[5], m[6], m[7], e[0], e[1]], pad: [0; 6] }
    }

    fn significand(&self) -> u64 {
        let mut m = [0u8; 8];
        m.copy_from_slice(&self.bits[..8]);
        u64::from_le_bytes(m)
    }

    fn sign_exponent(&self) -> u16 {
        u16::from_le_bytes([self.bits[8], self.bits[9]])
    }

    fn negative(&self) -> bool {
        self.sign_exponent() & 0x8000 != 0
    }

    /// Not a number (exponent all ones, significand other than 1.000...).
    pub fn is_nan(&self) -> bool {
        self.sign_exponent() & 0x7fff == 0x7fff && self.significand() << 1 != 0
    }

    /// +0 or -0.
    pub fn is_zero(&self) -> bool {
        self.significand() == 0 && self.sign_exponent() & 0x7fff == 0
    }

    /// The magnitude as one ordered integer: exponent, then significand.
    fn magnitude(&self) -> u128 {
        (u128::from(self.sign_exponent() & 0x7fff) << 64) | u128::from(self.significand())
    }

    /// `self` combined with `other` by the x87 unit: `+`, `-` or `*`.
    #[cfg(target_arch = "x86_64")]
    fn x87(self, other: LongDouble, op: Arith) -> Option<LongDouble> {
        let mut out = self;
        let b = other;
        // `acc = acc OP b` by the x87 instruction `$op` ("faddp", ...),
        // which pops the second load.
        macro_rules! x87_op {
            ($op:literal) => {
                // SAFETY: each `fld` reads 10 bytes of a live `LongDouble`
                // (16 bytes), `fstp` writes 10 bytes of `out`; the two
                // loads are balanced by the popping operation and the
                // store, so the x87 stack is empty again when the block
                // ends, as the ABI requires. Every x87 register is
                // declared clobbered.
                unsafe {
                    std::arch::asm!(
                        "fld tbyte ptr [{a}]", "fld tbyte ptr [{b}]", concat!($op, " st(1), st"), "fstp tbyte ptr [{a}]",
                        a = in(reg) out.bits.as_mut_ptr(), b = in(reg) b.bits.as_ptr(),
                        out("st(0)") _, out("st(1)") _, out("st(2)") _, out("st(3)") _,
                        out("st(4)") _, out("st(5)") _, out("st(6)") _, out("st(7)") _,
                        options(nostack)
                    )
                }
            };
        }
        match op {
            Arith::Add => x87_op!("faddp"),
            Arith::Sub => x87_op!("fsubp"),
            Arith::Mul => x87_op!("fmulp"),
        }
        Some(out)
    }

    /// Elsewhere `long double` is another format: no arithmetic here.
    #[cfg(not(target_arch = "x86_64"))]
    fn x87(self, _: LongDouble, _: Arith) -> Option<LongDouble> {
        None
    }

    /// `self + other`, as the x87 unit rounds it (`None` off x86-64).
    pub fn checked_add(self, other: LongDouble) -> Option<LongDouble> {
        self.x87(other, Arith::Add)
    }

    /// `self - other`.
    pub fn checked_sub(self, other: LongDouble) -> Option<LongDouble> {
        self.x87(other, Arith::Sub)
    }

    /// `self * other`.
    pub fn checked_mul(self, other: LongDouble) -> Option<LongDouble> {
        self.x87(other, Arith::Mul)
    }
}

#[derive(Clone, Copy)]
enum Arith {
    Add,
    Sub,
    Mul,
}

/// Equal values: -0 equals +0, a NaN equals nothing; the padding is not
/// part of the value.
impl PartialEq for LongDouble {
    fn eq(&self, other: &Self) -> bool {
        self.partial_cmp(other) == Some(std::cmp::Ordering::Equal)
    }
}

/// The order of the values, exactly (no rounding through `f64`).
impl PartialOrd for LongDouble {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        use std::cmp::Ordering::*;
        if self.is_nan() || other.is_nan() {
            return None;
        }
        if self.is_zero() && other.is_zero() {
            return Some(Equal);
        }
        Some(match (self.negative(), other.negative()) {
            (false, true) => Greater,
            (true, false) => Less,
            (false, false) => self.magnitude().cmp(&other.magnitude()),
            (true, true) => other.magnitude().cmp(&self.magnitude()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ld(x: i64) -> LongDouble {
        // An integer's exact encoding: significand shifted to its top bit.
        if x == 0 {
            return LongDouble::ZERO;
        }
        let m = x.unsigned_abs();
        let shift = m.leading_zeros();
        LongDouble::from_parts(x < 0, 0x3fff + 63 - shift as u16, m << shift)
    }

    #[test]
    fn the_order_is_exact_and_signed() {
        assert!(ld(-3) < ld(-2) && ld(-2) < ld(0) && ld(0) < ld(5) && ld(5) < ld(1 << 40));
        assert_eq!(LongDouble::from_parts(true, 0, 0), ld(0));
        // 2^64 - 1 and 2^64 - 2 are the same f64 but distinct long doubles.
        let (a, b) = (
            LongDouble::from_parts(false, 0x3fff + 63, u64::MAX),
            LongDouble::from_parts(false, 0x3fff + 63, u64::MAX - 1),
        );
        assert!(b < a);
        let nan = LongDouble::from_parts(false, 0x7fff, 3 << 62);
        assert!(nan.is_nan() && nan.partial_cmp(&ld(1)).is_none());
        assert_eq!(std::mem::size_of::<LongDouble>(), 16);
        assert_eq!(std::mem::align_of::<LongDouble>(), 16);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn arithmetic_is_the_x87_units() {
        assert_eq!(ld(2).checked_add(ld(3)), Some(ld(5)));
        assert_eq!(ld(2).checked_sub(ld(3)), Some(ld(-1)));
        assert_eq!(ld(-4).checked_mul(ld(6)), Some(ld(-24)));
        // 2^63 + 1 needs the 64-bit significand: exact in long double,
        // rounded back to 2^63 in f64.
        let big = ld(1 << 62).checked_add(ld(1 << 62)).expect("x87");
        assert!(big.checked_add(ld(1)).expect("x87") > big);
        assert_eq!(big.checked_add(ld(1)).and_then(|x| x.checked_sub(big)), Some(ld(1)));
        assert_eq!(LongDouble::ONE, ld(1));
    }
}
