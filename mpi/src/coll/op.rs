//! Reduction operations (MPI 4.1 §6.9): the predefined ones on the
//! primitive types and on value-index pairs, and user-defined ones,
//! commutative or not.

use std::sync::Arc;

use adi::offload::{Elem, Reduction};
use bytemuck::{Pod, Zeroable};

use crate::datatype::Equivalence;

/// The predefined operations (`MPI_SUM`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SystemOperation {
    /// `MPI_SUM` (wrapping for integers).
    Sum,
    /// `MPI_PROD` (wrapping for integers).
    Product,
    /// `MPI_MIN`.
    Min,
    /// `MPI_MAX`.
    Max,
    /// `MPI_LAND`.
    LogicalAnd,
    /// `MPI_LOR`.
    LogicalOr,
    /// `MPI_LXOR`.
    LogicalXor,
    /// `MPI_BAND`.
    BitwiseAnd,
    /// `MPI_BOR`.
    BitwiseOr,
    /// `MPI_BXOR`.
    BitwiseXor,
    /// `MPI_MINLOC` (on [`ValueIndex`]).
    MinLoc,
    /// `MPI_MAXLOC` (on [`ValueIndex`]).
    MaxLoc,
}

impl SystemOperation {
    /// `MPI_SUM`.
    pub fn sum() -> SystemOperation {
        SystemOperation::Sum
    }
    /// `MPI_PROD`.
    pub fn product() -> SystemOperation {
        SystemOperation::Product
    }
    /// `MPI_MIN`.
    pub fn min() -> SystemOperation {
        SystemOperation::Min
    }
    /// `MPI_MAX`.
    pub fn max() -> SystemOperation {
        SystemOperation::Max
    }
}

/// A `(value, index)` pair for `MinLoc` and `MaxLoc` (`MPI_2INT`,
/// `MPI_FLOAT_INT`, and `MPI_DOUBLE_INT` with a 64-bit index so that the
/// pair has no padding).
#[derive(Clone, Copy, Debug, PartialEq, Default)]
#[repr(C)]
pub struct ValueIndex<V, I> {
    /// The value compared.
    pub value: V,
    /// Its index (usually the rank that contributed it).
    pub index: I,
}

// SAFETY: `ValueIndex<i32, i32>` is `#[repr(C)]` with two 4-byte `i32`s: 8 bytes, no padding, and all
// zeros is a valid value, which is what `Zeroable` requires. Only the five pairs of two numbers of the
// same size below are declared, none with padding.
unsafe impl Zeroable for ValueIndex<i32, i32> {}
// SAFETY: the same pair is `Copy + 'static`, has no padding, and any 8 bytes are two valid `i32`s: what
// `Pod` adds to `Zeroable`.
unsafe impl Pod for ValueIndex<i32, i32> {}
// SAFETY: `#[repr(C)]` with a 4-byte `f32` and a 4-byte `i32`: 8 bytes, no padding; all zeros is valid.
unsafe impl Zeroable for ValueIndex<f32, i32> {}
// SAFETY: `Copy + 'static`, no padding, and any 8 bytes are a valid `f32` and `i32`.
unsafe impl Pod for ValueIndex<f32, i32> {}
// SAFETY: `#[repr(C)]` with an 8-byte `f64` and an 8-byte `i64`: 16 bytes, no padding; all zeros is valid.
unsafe impl Zeroable for ValueIndex<f64, i64> {}
// SAFETY: `Copy + 'static`, no padding, and any 16 bytes are a valid `f64` and `i64`.
unsafe impl Pod for ValueIndex<f64, i64> {}
// SAFETY: `#[repr(C)]` with two 4-byte `f32`s (Fortran's MPI_2REAL): 8 bytes, no padding; all zeros is
// valid.
unsafe impl Zeroable for ValueIndex<f32, f32> {}
// SAFETY: `Copy + 'static`, no padding, and any 8 bytes are two valid `f32`s.
unsafe impl Pod for ValueIndex<f32, f32> {}
// SAFETY: `#[repr(C)]` with two 8-byte `f64`s (Fortran's MPI_2DOUBLE_PRECISION): 16 bytes, no padding;
// all zeros is valid.
unsafe impl Zeroable for ValueIndex<f64, f64> {}
// SAFETY: `Copy + 'static`, no padding, and any 16 bytes are two valid `f64`s.
unsafe impl Pod for ValueIndex<f64, f64> {}
impl Equivalence for ValueIndex<i32, i32> {}
impl Equivalence for ValueIndex<f32, i32> {}
impl Equivalence for ValueIndex<f64, i64> {}
impl Equivalence for ValueIndex<f32, f32> {}
impl Equivalence for ValueIndex<f64, f64> {}

/// A `(value, index)` pair whose C struct has padding, laid out as C lays
/// it out on this ABI with the padding named, so that every byte is a
/// field: `MPI_DOUBLE_INT` (`{double; int}`: 4 bytes after the index),
/// `MPI_LONG_INT` (`{long; int}`, the same) and `MPI_SHORT_INT`
/// (`{short; int}`: 2 bytes after the value). The padding is carried, not
/// combined.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub struct PaddedPair<V, I, const PAD_AFTER_VALUE: usize, const PAD_AFTER_INDEX: usize> {
    /// The value compared.
    pub value: V,
    pad_v: [u8; PAD_AFTER_VALUE],
    /// Its index.
    pub index: I,
    pad_i: [u8; PAD_AFTER_INDEX],
}

/// `MPI_LONG_DOUBLE_INT` (`{long double; int}`: 12 bytes after the index).
pub type LongDoubleInt = PaddedPair<LongDouble, i32, 0, 12>;
/// `MPI_DOUBLE_INT`.
pub type DoubleInt = PaddedPair<f64, i32, 0, 4>;
/// `MPI_LONG_INT`.
pub type LongInt = PaddedPair<i64, i32, 0, 4>;
/// `MPI_SHORT_INT`.
pub type ShortInt = PaddedPair<i16, i32, 2, 0>;

// SAFETY: `DoubleInt` is `#[repr(C)]` with its padding spelled as byte arrays: an `f64` at 0, the
// empty `pad_v`, an `i32` at 8 and `pad_i: [u8; 4]` at 12, 16 bytes with no implicit padding (its size
// is checked in `staged::reduce`'s tests); all zeros is a valid value of every field.
unsafe impl Zeroable for DoubleInt {}
// SAFETY: `DoubleInt` is `Copy + 'static`, and its 16 bytes are all fields, each valid for any bit pattern.
unsafe impl Pod for DoubleInt {}
// SAFETY: `LongInt` is `#[repr(C)]`: an `i64` at 0, an `i32` at 8 and `pad_i: [u8; 4]` at 12, 16 bytes
// with no implicit padding (checked in `staged::reduce`'s tests); all zeros is valid for every field.
unsafe impl Zeroable for LongInt {}
// SAFETY: `LongInt` is `Copy + 'static`, and its 16 bytes are all fields, each valid for any bit pattern.
unsafe impl Pod for LongInt {}
// SAFETY: `ShortInt` is `#[repr(C)]`: an `i16` at 0, `pad_v: [u8; 2]` at 2 and an `i32` at 4, 8 bytes
// with no implicit padding (checked in `staged::reduce`'s tests); all zeros is valid for every field.
unsafe impl Zeroable for ShortInt {}
// SAFETY: `ShortInt` is `Copy + 'static`, and its 8 bytes are all fields, each valid for any bit pattern.
unsafe impl Pod for ShortInt {}
// SAFETY: `LongDoubleInt` is `#[repr(C)]`: a `LongDouble` (16 bytes, 16-byte aligned, itself `Zeroable`)
// at 0, an `i32` at 16 and `pad_i: [u8; 12]` at 20, 32 bytes with no implicit padding; all zeros is
// valid for every field.
unsafe impl Zeroable for LongDoubleInt {}
// SAFETY: `LongDoubleInt` is `Copy + 'static`, and its 32 bytes are all fields, each valid for any bit
// pattern (`LongDouble` is `Pod`).
unsafe impl Pod for LongDoubleInt {}
impl Equivalence for LongDoubleInt {}
impl Equivalence for DoubleInt {}
impl Equivalence for LongInt {}
impl Equivalence for ShortInt {}

pub use super::long_double::LongDouble;

/// A complex number as C (`float _Complex`, `double _Complex`) and Fortran
/// (`COMPLEX`) lay it out: real part, then imaginary part.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
#[repr(C)]
pub struct Complex<T> {
    /// The real part.
    pub re: T,
    /// The imaginary part.
    pub im: T,
}

// SAFETY: `Complex<f32>` is `#[repr(C)]` with two 4-byte `f32`s: 8 bytes, no padding; all zeros is valid.
unsafe impl Zeroable for Complex<f32> {}
// SAFETY: `Complex<f32>` is `Copy + 'static`, no padding, and any 8 bytes are two valid `f32`s.
unsafe impl Pod for Complex<f32> {}
// SAFETY: `Complex<f64>` is `#[repr(C)]` with two 8-byte `f64`s: 16 bytes, no padding; all zeros is valid.
unsafe impl Zeroable for Complex<f64> {}
// SAFETY: `Complex<f64>` is `Copy + 'static`, no padding, and any 16 bytes are two valid `f64`s.
unsafe impl Pod for Complex<f64> {}
// SAFETY: `Complex<LongDouble>` is `#[repr(C)]` with two 16-byte, 16-byte aligned `LongDouble`s: 32
// bytes, no padding; all zeros is valid (`LongDouble` is `Zeroable`).
unsafe impl Zeroable for Complex<LongDouble> {}
// SAFETY: `Complex<LongDouble>` is `Copy + 'static`, no padding, and any 32 bytes are two valid
// `LongDouble`s (`LongDouble` is `Pod`).
unsafe impl Pod for Complex<LongDouble> {}
impl Equivalence for Complex<LongDouble> {}
impl Equivalence for Complex<f32> {}
impl Equivalence for Complex<f64> {}

/// Element types the predefined operations apply to.
pub trait Reducible: Equivalence {
    /// The element type as a device reduction unit knows it, if it does.
    const DEVICE: Option<Elem> = None;
    /// `acc = src ⊕ acc` for one element, or `None` if `op` is not defined
    /// on this type (for example a bitwise operation on floats).
    fn apply(op: SystemOperation, src: Self, acc: Self) -> Option<Self>;
}

impl SystemOperation {
    /// The operation as a device reduction unit knows it (`MINLOC` and
    /// `MAXLOC` work on pairs, which offload does not carry).
    fn device(self) -> Option<Reduction> {
        use SystemOperation::*;
        Some(match self {
            Sum => Reduction::Sum,
            Product => Reduction::Prod,
            Min => Reduction::Min,
            Max => Reduction::Max,
            LogicalAnd => Reduction::Land,
            LogicalOr => Reduction::Lor,
            LogicalXor => Reduction::Lxor,
            BitwiseAnd => Reduction::Band,
            BitwiseOr => Reduction::Bor,
            BitwiseXor => Reduction::Bxor,
            MinLoc | MaxLoc => return None,
        })
    }
}

macro_rules! int_reducible {
    ($($t:ty => $e:expr),*) => {$(
        impl Reducible for $t {
            const DEVICE: Option<Elem> = $e;
            fn apply(op: SystemOperation, a: $t, b: $t) -> Option<$t> {
                use SystemOperation::*;
                let t = |x: bool| x as $t;
                Some(match op {
                    Sum => a.wrapping_add(b),
                    Product => a.wrapping_mul(b),
                    Min => a.min(b),
                    Max => a.max(b),
                    LogicalAnd => t(a != 0 && b != 0),
                    LogicalOr => t(a != 0 || b != 0),
                    LogicalXor => t((a != 0) != (b != 0)),
                    BitwiseAnd => a & b,
                    BitwiseOr => a | b,
                    BitwiseXor => a ^ b,
                    MinLoc | MaxLoc => return None,
                })
            }
        }
    )*};
}
int_reducible!(
    u8 => Some(Elem::U8), u16 => Some(Elem::U16), u32 => Some(Elem::U32), u64 => Some(Elem::U64),
    i8 => Some(Elem::I8), i16 => Some(Elem::I16), i32 => Some(Elem::I32), i64 => Some(Elem::I64),
    usize => if usize::BITS == 64 { Some(Elem::U64) } else { Some(Elem::U32) },
    isize => if isize::BITS == 64 { Some(Elem::I64) } else { Some(Elem::I32) }
);

macro_rules! float_reducible {
    ($($t:ty => $e:expr),*) => {$(
        impl Reducible for $t {
            const DEVICE: Option<Elem> = Some($e);
            fn apply(op: SystemOperation, a: $t, b: $t) -> Option<$t> {
                use SystemOperation::*;
                let t = |x: bool| if x { 1.0 } else { 0.0 };
                Some(match op {
                    Sum => a + b,
                    Product => a * b,
                    Min => a.min(b),
                    Max => a.max(b),
                    LogicalAnd => t(a != 0.0 && b != 0.0),
                    LogicalOr => t(a != 0.0 || b != 0.0),
                    LogicalXor => t((a != 0.0) != (b != 0.0)),
                    BitwiseAnd | BitwiseOr | BitwiseXor | MinLoc | MaxLoc => return None,
                })
            }
        }
    )*};
}
float_reducible!(f32 => Elem::F32, f64 => Elem::F64);

/// `MINLOC`/`MAXLOC` on every pair type, padded or not (each has a
/// `value` and an `index`).
macro_rules! loc_reducible {
    ($($t:ty),*) => {$(
        impl Reducible for $t {
            fn apply(op: SystemOperation, a: Self, b: Self) -> Option<Self> {
                // MPI 4.1 §6.9.4: the smaller (larger) value; on a tie, the smaller index.
                let pick_a = match op {
                    SystemOperation::MinLoc => a.value < b.value || (a.value == b.value && a.index < b.index),
                    SystemOperation::MaxLoc => a.value > b.value || (a.value == b.value && a.index < b.index),
                    _ => return None,
                };
                Some(if pick_a { a } else { b })
            }
        }
    )*};
}
loc_reducible!(
    ValueIndex<i32, i32>, ValueIndex<f32, i32>, ValueIndex<f64, i64>, ValueIndex<f32, f32>, ValueIndex<f64, f64>,
    DoubleInt, LongInt, ShortInt, LongDoubleInt
);

/// `long double`: exact order; arithmetic on the x87 unit, as C does it
/// (none off x86-64, where `long double` is another format).
impl Reducible for LongDouble {
    fn apply(op: SystemOperation, a: Self, b: Self) -> Option<Self> {
        use SystemOperation::*;
        let t = |x: bool| if x { LongDouble::ONE } else { LongDouble::ZERO };
        Some(match op {
            Sum => a.checked_add(b)?,
            Product => a.checked_mul(b)?,
            // As f64's min/max: a NaN gives way to the other value.
            Min => {
                if b.is_nan() || a < b {
                    a
                } else {
                    b
                }
            }
            Max => {
                if b.is_nan() || a > b {
                    a
                } else {
                    b
                }
            }
            LogicalAnd => t(!a.is_zero() && !b.is_zero()),
            LogicalOr => t(!a.is_zero() || !b.is_zero()),
            LogicalXor => t(a.is_zero() != b.is_zero()),
            BitwiseAnd | BitwiseOr | BitwiseXor | MinLoc | MaxLoc => return None,
        })
    }
}

/// Sum and product of `long double` complex numbers (MPI 4.1 §6.9.2).
impl Reducible for Complex<LongDouble> {
    fn apply(op: SystemOperation, a: Self, b: Self) -> Option<Self> {
        Some(match op {
            SystemOperation::Sum => Complex { re: a.re.checked_add(b.re)?, im: a.im.checked_add(b.im)? },
            SystemOperation::Product => Complex {
                re: a.re.checked_mul(b.re)?.checked_sub(a.im.checked_mul(b.im)?)?,
                im: a.re.checked_mul(b.im)?.checked_add(a.im.checked_mul(b.re)?)?,
            },
            _ => return None,
        })
    }
}

macro_rules! complex_reducible {
    ($($t:ty),*) => {$(
        /// Sum and product only: MPI defines no order, logic or bits on
        /// complex numbers (MPI 4.1 §6.9.2).
        impl Reducible for Complex<$t> {
            fn apply(op: SystemOperation, a: Self, b: Self) -> Option<Self> {
                Some(match op {
                    SystemOperation::Sum => Complex { re: a.re + b.re, im: a.im + b.im },
                    SystemOperation::Product => Complex { re: a.re * b.re - a.im * b.im, im: a.re * b.im + a.im * b.re },
                    _ => return None,
                })
            }
        }
    )*};
}
complex_reducible!(f32, f64);

/// A combining function on bytes: `acc = src ⊕ acc`.
pub(crate) type ByteOp = Arc<dyn Fn(&[u8], &mut [u8]) + Send + Sync>;

/// An operation ready to run on bytes, with whether it commutes.
#[derive(Clone)]
pub struct Operation {
    pub(crate) f: ByteOp,
    pub(crate) commutative: bool,
    pub(crate) elem: usize,
    /// The same operation for a device's reduction unit, if it has it.
    pub(crate) device: Option<(Reduction, Elem)>,
}

impl std::fmt::Debug for Operation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Operation {{ commutative: {}, elem: {} B }}", self.commutative, self.elem)
    }
}

fn elementwise<T: Pod>(src: &[u8], acc: &mut [u8], f: impl Fn(T, T) -> T) {
    let sz = std::mem::size_of::<T>();
    for (s, a) in src.chunks_exact(sz).zip(acc.chunks_exact_mut(sz)) {
        let v = f(bytemuck::pod_read_unaligned(s), bytemuck::pod_read_unaligned(a));
        a.copy_from_slice(bytemuck::bytes_of(&v));
    }
}

impl Operation {
    /// A predefined operation on `T`, or an error naming the pair if MPI
    /// does not define it (MPI 4.1 §6.9.2).
    pub fn system<T: Reducible>(op: SystemOperation) -> crate::Result<Operation> {
        if T::apply(op, T::zeroed(), T::zeroed()).is_none() {
            return Err(
                crate::error::ArgError::OpOnType { op: format!("{op:?}"), ty: std::any::type_name::<T>() }.into()
            );
        }
        // One loop per operation, with the operation a constant inside it,
        // so that the compiler can vectorise it: matching `op` per element
        // made a large MPI_Accumulate of MPI_CHAR spend half of its time
        // in this loop (MPICH's large_acc_flush_local: 62 s).
        macro_rules! per_op {
            ($($v:ident),*) => {
                match op {
                    $(SystemOperation::$v => Arc::new(|src: &[u8], acc: &mut [u8]| {
                        elementwise::<T>(src, acc, |a, b| T::apply(SystemOperation::$v, a, b).unwrap_or(b))
                    }) as ByteOp,)*
                }
            };
        }
        let f: ByteOp = per_op!(
            Sum, Product, Min, Max, LogicalAnd, LogicalOr, LogicalXor, BitwiseAnd, BitwiseOr, BitwiseXor, MinLoc,
            MaxLoc
        );
        let device = op.device().zip(T::DEVICE);
        Ok(Operation { f, commutative: true, elem: std::mem::size_of::<T>(), device })
    }

    /// A user-defined commutative operation: `f(src, acc)` sets
    /// `acc[i] = src[i] ⊕ acc[i]` (`MPI_Op_create` with `commute = true`).
    pub fn commutative<T: Equivalence>(f: impl Fn(&[T], &mut [T]) + Send + Sync + 'static) -> Operation {
        Operation::user(f, true)
    }

    /// A user-defined operation that need not commute: results combine in
    /// rank order, lower ranks on the left (MPI 4.1 §6.9.5).
    pub fn non_commutative<T: Equivalence>(f: impl Fn(&[T], &mut [T]) + Send + Sync + 'static) -> Operation {
        Operation::user(f, false)
    }

    /// A user-defined operation on elements of `elem` bytes, given as a
    /// function on whole buffers of them, `f(src, acc)` setting
    /// `acc = src ⊕ acc` (the form of a C `MPI_User_function`). The
    /// buffers may have any alignment; their lengths are multiples of
    /// `elem`.
    pub fn from_bytes(
        elem: usize,
        commutative: bool,
        f: impl Fn(&[u8], &mut [u8]) + Send + Sync + 'static,
    ) -> Operation {
        Operation { f: Arc::new(f), commutative, elem, device: None }
    }

    fn user<T: Equivalence>(f: impl Fn(&[T], &mut [T]) + Send + Sync + 'static, commutative: bool) -> Operation {
        let g: ByteOp = Arc::new(move |src: &[u8], acc: &mut [u8]| {
            // Copies, so that buffers of any alignment work.
            let s: Vec<T> = crate::datatype::vec_from_bytes(src).unwrap_or_default();
            let mut a: Vec<T> = crate::datatype::vec_from_bytes(acc).unwrap_or_default();
            f(&s, &mut a);
            acc.copy_from_slice(bytemuck::cast_slice(&a));
        });
        Operation { f: g, commutative, elem: std::mem::size_of::<T>(), device: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run<T: Reducible>(op: SystemOperation, a: &[T], b: &mut [T]) {
        let o = Operation::system::<T>(op).unwrap();
        let mut acc = bytemuck::cast_slice::<T, u8>(b).to_vec();
        (o.f)(bytemuck::cast_slice(a), &mut acc);
        b.copy_from_slice(&crate::datatype::vec_from_bytes::<T>(&acc).unwrap());
    }

    #[test]
    fn predefined_operations_follow_the_standard() {
        let mut b = [5i32, -3, 0, 7];
        run(SystemOperation::Sum, &[1, 2, 3, i32::MAX], &mut b);
        assert_eq!(b, [6, -1, 3, i32::MIN + 6]);
        let mut l = [1u8, 0, 2, 0];
        run(SystemOperation::LogicalXor, &[1, 1, 0, 0], &mut l);
        assert_eq!(l, [0, 1, 1, 0]);
        let mut f = [1.5f64, -2.0];
        run(SystemOperation::Max, &[0.5, 3.0], &mut f);
        assert_eq!(f, [1.5, 3.0]);
        let mut m = [ValueIndex { value: 2.0f64, index: 3i64 }, ValueIndex { value: 1.0, index: 5 }];
        run(
            SystemOperation::MinLoc,
            &[ValueIndex { value: 2.0, index: 1 }, ValueIndex { value: 4.0, index: 0 }],
            &mut m,
        );
        assert_eq!(m[0].index, 1, "a tie goes to the smaller index");
        assert_eq!(m[1].index, 5);
    }

    #[test]
    fn undefined_pairs_are_refused() {
        assert!(Operation::system::<f64>(SystemOperation::BitwiseAnd).is_err());
        assert!(Operation::system::<i32>(SystemOperation::MinLoc).is_err());
        assert!(Operation::system::<ValueIndex<i32, i32>>(SystemOperation::Sum).is_err());
    }
}
