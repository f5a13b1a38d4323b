//! Packing into a byte buffer at a position, and unpacking from one (MPI
//! 4.1 §5.2.1 `MPI_Pack`/`MPI_Unpack`; §5.2.3 `MPI_Pack_external`/
//! `MPI_Unpack_external`, in the `external32` representation): the
//! elements of a [`Span`], in this machine's form or converted by their
//! type signature. The position moves past them; data that does not fit
//! the buffer from the position is an error (`MpiError::PackSpace`), never
//! a partial copy.

use std::borrow::Cow;

use super::{incoming, outgoing, Span};
use crate::datatype::external32::Signature;
use crate::error::{MpiError, Result};

/// The representation packed data is in.
#[derive(Clone, Copy, Debug)]
pub enum Representation<'a> {
    /// This machine's (`MPI_Pack`).
    Native,
    /// `external32` (§13.5.2), by the type signature of the `count`
    /// elements.
    External32 {
        /// The signature of one element.
        signature: &'a Signature,
        /// Elements.
        count: usize,
    },
}

/// `at..at + need` within a buffer of `size` bytes.
fn range(at: usize, need: usize, size: usize) -> Result<std::ops::Range<usize>> {
    match at.checked_add(need) {
        Some(end) if end <= size => Ok(at..end),
        _ => Err(MpiError::PackSpace { need, at, size }),
    }
}

/// Pack the elements `span` describes at `inbuf` into `out` from
/// `*position`, in `rep`, and move the position past them.
///
/// # Safety
/// Every block of `span` at `inbuf` is readable for this call.
pub unsafe fn pack_into(
    inbuf: *const u8,
    span: &Span,
    rep: Representation<'_>,
    out: &mut [u8],
    position: &mut usize,
) -> Result<()> {
    // SAFETY: the span's blocks at `inbuf` are readable for this call (`# Safety`), and the bytes
    // borrowed are used before it returns: what `outgoing` requires.
    let native = unsafe { outgoing(inbuf, span, "inbuf") }?;
    let packed = match rep {
        Representation::Native => native,
        Representation::External32 { signature, count } => Cow::Owned(signature.to_external(&native, count)?),
    };
    let at = range(*position, packed.len(), out.len())?;
    *position = at.end;
    out[at].copy_from_slice(&packed);
    Ok(())
}

/// Unpack the elements `span` describes, in `rep`, from `input` at
/// `*position` into `outbuf`, and move the position past them.
///
/// # Safety
/// Every block of `span` at `outbuf` is writable, and not otherwise accessed, for this call.
pub unsafe fn unpack_from(
    input: &[u8],
    position: &mut usize,
    outbuf: *mut u8,
    span: &Span,
    rep: Representation<'_>,
) -> Result<()> {
    let need = match rep {
        Representation::Native => span.len(),
        Representation::External32 { signature, count } => {
            usize::try_from(signature.external_size().saturating_mul(count as u64)).unwrap_or(usize::MAX)
        }
    };
    let at = range(*position, need, input.len())?;
    let end = at.end;
    let native = match rep {
        Representation::Native => Cow::Borrowed(&input[at]),
        Representation::External32 { signature, count } => Cow::Owned(signature.from_external(&input[at], count)?),
    };
    // SAFETY: the span's blocks at `outbuf` are writable and untouched for this call (`# Safety`),
    // and `into` is finished below, within it: what `incoming` requires.
    let mut into = unsafe { incoming(outbuf, span, "outbuf", false) }?;
    let n = native.len().min(into.len);
    // SAFETY: `into`'s bytes (the caller's or a staging buffer's) are reached only through this
    // slice until `finish`, which puts them where they go, within this call.
    unsafe {
        into.bytes()[..n].copy_from_slice(&native[..n]);
        into.finish(n as u64);
    }
    *position = end;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::external32::Basic;

    #[test]
    fn a_pack_moves_the_position_and_refuses_what_does_not_fit() {
        let src = [1u8, 2, 3, 4];
        let mut out = [0u8; 6];
        let mut at = 1;
        // SAFETY: `src` holds the span's 4 bytes.
        unsafe { pack_into(src.as_ptr(), &Span::bytes(4), Representation::Native, &mut out, &mut at) }.unwrap();
        assert_eq!((out, at), ([0, 1, 2, 3, 4, 0], 5));
        // SAFETY: as above; nothing is written when it does not fit.
        let e = unsafe { pack_into(src.as_ptr(), &Span::bytes(4), Representation::Native, &mut out, &mut at) };
        assert!(matches!(e, Err(MpiError::PackSpace { need: 4, at: 5, size: 6 })));
        assert_eq!(at, 5);
    }

    #[test]
    fn external32_round_trips_through_a_buffer() {
        let sig = Signature::of(&[Basic::Swap(4)]);
        let rep = Representation::External32 { signature: &sig, count: 2 };
        let src = [1i32, -2];
        let mut out = [0u8; 8];
        let mut at = 0;
        // SAFETY: `src` holds the span's 8 bytes.
        unsafe { pack_into(src.as_ptr().cast(), &Span::bytes(8), rep, &mut out, &mut at) }.unwrap();
        assert_eq!(out, [0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfe], "big-endian");
        let mut back = [0i32; 2];
        let mut from = 0;
        // SAFETY: `back` has room for the span's 8 bytes.
        unsafe { unpack_from(&out, &mut from, back.as_mut_ptr().cast(), &Span::bytes(8), rep) }.unwrap();
        assert_eq!((back, from), ([1, -2], 8));
        let mut short = 4;
        // SAFETY: as above; nothing is written when the input is short.
        let e = unsafe { unpack_from(&out, &mut short, back.as_mut_ptr().cast(), &Span::bytes(8), rep) };
        assert!(matches!(e, Err(MpiError::PackSpace { need: 8, at: 4, size: 8 })));
    }
}
