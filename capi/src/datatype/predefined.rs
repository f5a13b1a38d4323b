//! What the predefined datatypes are, by their ABI handles: the basic
//! elements of each (for `external32`, MPI 4.1 §13.5.2) and the element
//! type a reduction combines (§6.9.2); the mpi crate's rules then apply
//! to them and to the derived types built from them
//! (`mpi::staged::basis`).

use mpi::datatype::external32::Basic;
use mpi::staged::reduce::Elem;

use crate::abi::*;
use crate::datatype::Layout;
use crate::{Fail, Handle, R};

/// The size of predefined datatype `dt` when its data is one block (its
/// basic elements follow one another, each aligned, with no padding after
/// the last: every predefined type but the pairs `MPI_DOUBLE_INT`,
/// `MPI_LONG_INT`, `MPI_SHORT_INT` and `MPI_LONG_DOUBLE_INT`), else 0.
pub(crate) const fn contiguous_size_of(dt: Handle) -> usize {
    let Some(b) = basics(dt) else { return 0 };
    let (mut at, mut align, mut i) = (0, 1, 0);
    while i < b.len() {
        let n = b[i].native();
        let a = if n > 16 { 16 } else { n };
        if at % a != 0 {
            return 0;
        }
        at += n;
        if a > align {
            align = a;
        }
        i += 1;
    }
    if at % align == 0 {
        at
    } else {
        0
    }
}

/// The layout of predefined datatype `dt`: one block of its basic
/// elements, or a pair laid out as its C struct (§6.9.4).
pub(crate) fn layout_of(dt: Handle) -> Option<Layout> {
    let b = basics(dt)?;
    match contiguous_size_of(dt) {
        0 => Some(Layout::pair(b[0].native(), b[0].native())),
        n => Some(Layout::basic(n, (n / b.len()).min(16), b.len())),
    }
}

/// The basic elements of predefined datatype `dt` (x86-64 Linux sizes
/// here; the standard's table there).
pub(crate) const fn basics(dt: Handle) -> Option<&'static [Basic]> {
    use Basic::*;
    const LONG: Basic = Int { native: 8, ext: 4, signed: true };
    const ULONG: Basic = Int { native: 8, ext: 4, signed: false };
    const WCHAR: Basic = Int { native: 4, ext: 2, signed: true };
    Some(match dt {
        MPI_CHAR | MPI_SIGNED_CHAR | MPI_UNSIGNED_CHAR | MPI_BYTE | MPI_PACKED | MPI_INT8_T | MPI_UINT8_T
        | MPI_C_BOOL | MPI_CXX_BOOL | MPI_CHARACTER | MPI_LOGICAL1 | MPI_INTEGER1 => &[Swap(1)],
        MPI_SHORT | MPI_UNSIGNED_SHORT | MPI_INT16_T | MPI_UINT16_T | MPI_LOGICAL2 | MPI_INTEGER2 | MPI_REAL2 => {
            &[Swap(2)]
        }
        MPI_INT | MPI_UNSIGNED | MPI_INT32_T | MPI_UINT32_T | MPI_FLOAT | MPI_LOGICAL | MPI_INTEGER | MPI_REAL
        | MPI_LOGICAL4 | MPI_INTEGER4 | MPI_REAL4 => &[Swap(4)],
        MPI_WCHAR => &[WCHAR],
        MPI_LONG => &[LONG],
        MPI_UNSIGNED_LONG => &[ULONG],
        MPI_LONG_LONG
        | MPI_UNSIGNED_LONG_LONG
        | MPI_INT64_T
        | MPI_UINT64_T
        | MPI_DOUBLE
        | MPI_AINT
        | MPI_COUNT
        | MPI_OFFSET
        | MPI_DOUBLE_PRECISION
        | MPI_LOGICAL8
        | MPI_INTEGER8
        | MPI_REAL8 => &[Swap(8)],
        MPI_LONG_DOUBLE => &[X87],
        MPI_LOGICAL16 | MPI_INTEGER16 | MPI_REAL16 => &[Swap(16)],
        MPI_COMPLEX4 => &[Swap(2), Swap(2)],
        MPI_C_FLOAT_COMPLEX
        | MPI_CXX_FLOAT_COMPLEX
        | MPI_COMPLEX
        | MPI_COMPLEX8
        | MPI_2INT
        | MPI_2REAL
        | MPI_2INTEGER => &[Swap(4), Swap(4)],
        MPI_C_DOUBLE_COMPLEX | MPI_CXX_DOUBLE_COMPLEX | MPI_DOUBLE_COMPLEX | MPI_COMPLEX16 | MPI_2DOUBLE_PRECISION => {
            &[Swap(8), Swap(8)]
        }
        MPI_C_LONG_DOUBLE_COMPLEX | MPI_CXX_LONG_DOUBLE_COMPLEX => &[X87, X87],
        MPI_COMPLEX32 => &[Swap(16), Swap(16)],
        MPI_FLOAT_INT => &[Swap(4), Swap(4)],
        MPI_DOUBLE_INT => &[Swap(8), Swap(4)],
        MPI_LONG_INT => &[LONG, Swap(4)],
        MPI_SHORT_INT => &[Swap(2), Swap(4)],
        MPI_LONG_DOUBLE_INT => &[X87, Swap(4)],
        _ => return None,
    })
}

/// The element type of a reduction on datatype `dt`.
pub(crate) fn elem_of(dt: Handle) -> R<Elem> {
    Ok(match dt {
        MPI_SIGNED_CHAR | MPI_CHAR | MPI_INT8_T | MPI_INTEGER1 => Elem::I8,
        MPI_UNSIGNED_CHAR | MPI_UINT8_T | MPI_BYTE | MPI_C_BOOL | MPI_CXX_BOOL => Elem::U8,
        MPI_SHORT | MPI_INT16_T | MPI_INTEGER2 => Elem::I16,
        MPI_UNSIGNED_SHORT | MPI_UINT16_T => Elem::U16,
        MPI_INT | MPI_INT32_T | MPI_INTEGER | MPI_INTEGER4 | MPI_LOGICAL => Elem::I32,
        MPI_UNSIGNED | MPI_UINT32_T => Elem::U32,
        MPI_LONG | MPI_LONG_LONG | MPI_INT64_T | MPI_INTEGER8 | MPI_AINT | MPI_COUNT | MPI_OFFSET => Elem::I64,
        MPI_UNSIGNED_LONG | MPI_UNSIGNED_LONG_LONG | MPI_UINT64_T => Elem::U64,
        MPI_FLOAT | MPI_REAL | MPI_REAL4 => Elem::F32,
        MPI_DOUBLE | MPI_DOUBLE_PRECISION | MPI_REAL8 => Elem::F64,
        MPI_2INT | MPI_2INTEGER => Elem::Int2,
        MPI_FLOAT_INT => Elem::FloatInt,
        MPI_DOUBLE_INT => Elem::DoubleInt,
        MPI_LONG_INT => Elem::LongInt,
        MPI_SHORT_INT => Elem::ShortInt,
        MPI_2REAL => Elem::Real2,
        MPI_2DOUBLE_PRECISION => Elem::Double2,
        MPI_C_FLOAT_COMPLEX | MPI_CXX_FLOAT_COMPLEX | MPI_COMPLEX | MPI_COMPLEX8 => Elem::C32,
        MPI_C_DOUBLE_COMPLEX | MPI_CXX_DOUBLE_COMPLEX | MPI_DOUBLE_COMPLEX | MPI_COMPLEX16 => Elem::C64,
        MPI_LONG_DOUBLE => Elem::LongDouble,
        MPI_LONG_DOUBLE_INT => Elem::LongDoubleInt,
        MPI_C_LONG_DOUBLE_COMPLEX | MPI_CXX_LONG_DOUBLE_COMPLEX => Elem::C80,
        other => {
            return Err(Fail::new(
                MPI_ERR_TYPE,
                format!(
                "no reduction on datatype {other:#x}: not a predefined number, pair or complex type, nor a derived datatype"
            ),
            ))
        }
    })
}
