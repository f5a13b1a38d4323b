//! User functions on raw elements (MPI 4.1 §6.9.5), the form a C
//! `MPI_User_function` takes: two pointers and a count, the elements laid
//! out as their datatype says and aligned for any predefined type. The
//! reductions move packed bytes; this is what hands such a function its
//! elements and takes its result back.

use std::sync::Arc;

use super::Operation;
use crate::datatype::Typemap;
use crate::error::{Result, TypeError};

/// The alignment every predefined type's elements need.
const ALIGN: usize = 16;

/// A function on raw elements (a C `MPI_User_function`): `apply(src, acc,
/// n)` sets `acc = src ⊕ acc` on `n` elements.
pub trait RawUserFn: Send + Sync + 'static {
    /// Combine `n` elements at `src` into those at `acc`.
    ///
    /// # Safety
    /// The caller gives pointers aligned to 16 bytes, `src` valid for
    /// reading and `acc` for reading and writing `n` elements of the
    /// operation's datatype (from their origin, as the datatype lays them
    /// out), for the call only, the two not overlapping.
    unsafe fn apply(&self, src: *mut u8, acc: *mut u8, n: usize);
}

/// `words` 16-byte words of zeroes: aligned scratch memory.
fn scratch(words: usize) -> Vec<u128> {
    vec![0u128; words]
}

impl Operation {
    /// A user-defined operation on elements of `elem` bytes, given as a
    /// [`RawUserFn`]: buffers that are not aligned are copied to aligned
    /// scratch memory first, and the result back.
    pub fn from_raw(elem: usize, commutative: bool, f: impl RawUserFn) -> Operation {
        Operation::from_bytes(elem, commutative, move |src: &[u8], acc: &mut [u8]| {
            let n = src.len().min(acc.len()) / elem.max(1);
            let aligned = |p: *const u8| p as usize % ALIGN == 0;
            if aligned(src.as_ptr()) && aligned(acc.as_ptr()) {
                // SAFETY: both are aligned (checked above) and hold `n` elements of `elem` bytes (`n` is the shorter's
                // length over `elem`), `acc` writable, for this call; the two are different slices. `src` is passed as a
                // mutable pointer (the C signature is not const) but only read (`RawUserFn::apply`'s contract).
                unsafe { f.apply(src.as_ptr().cast_mut(), acc.as_mut_ptr(), n) };
                return;
            }
            let (mut s, mut a) = (scratch(src.len().div_ceil(ALIGN)), scratch(acc.len().div_ceil(ALIGN)));
            let (sb, ab): (&mut [u8], &mut [u8]) = (bytemuck::cast_slice_mut(&mut s), bytemuck::cast_slice_mut(&mut a));
            sb[..src.len()].copy_from_slice(src);
            ab[..acc.len()].copy_from_slice(acc);
            // SAFETY: `sb` and `ab` are this call's own scratch, aligned (their storage is `u128`s) and holding `n`
            // elements of `elem` bytes each (copies of `src` and `acc`).
            unsafe { f.apply(sb.as_mut_ptr(), ab.as_mut_ptr(), n) };
            acc.copy_from_slice(&ab[..acc.len()]);
        })
    }

    /// A user-defined operation on elements of a derived datatype laid out
    /// as `layout`, whose packed elements the reduction moves: `f` gets
    /// them laid out as the datatype says (each pointer is the elements'
    /// origin, their data starting `true_lb` after it), unpacked into
    /// aligned scratch memory unless the layout is one dense block at the
    /// origin, and its result is packed back (§6.9.5: the function sees
    /// `len` elements of the reduction's datatype).
    /// Refused for a datatype whose extent is not positive: its elements
    /// would not follow one another (`TypeError::Extent`).
    pub fn from_raw_typed(layout: Arc<Typemap>, commutative: bool, f: impl RawUserFn) -> Result<Operation> {
        let size = layout.size;
        if layout.dense() && layout.true_lb == 0 {
            return Ok(Operation::from_raw(size, commutative, f));
        }
        let extent = layout.extent();
        if extent <= 0 {
            return Err(TypeError::Extent { extent }.into());
        }
        // The origin's place in the scratch memory: aligned, with room
        // before it for data below the origin (a negative true lower bound).
        let lead = (-layout.true_lb).max(0).unsigned_abs().next_multiple_of(ALIGN);
        Ok(Operation::from_bytes(size, commutative, move |src: &[u8], acc: &mut [u8]| {
            let n = src.len().min(acc.len()) / size.max(1);
            if n == 0 {
                return;
            }
            // Where the data of `n` elements ends, from the scratch's start.
            let end = lead as isize + layout.true_ub + (n as isize - 1).saturating_mul(extent);
            let words = (end.max(0) as usize).div_ceil(ALIGN);
            let (mut s, mut a) = (scratch(words), scratch(words));
            let origin = |v: &mut Vec<u128>| v.as_mut_ptr().cast::<u8>().wrapping_add(lead);
            let (so, ao) = (origin(&mut s), origin(&mut a));
            // SAFETY: the data of `n` elements of `layout` from origins `so` and `ao` lies within `s` and `a`: it
            // starts `lead + true_lb` >= 0 bytes into them and ends `end` bytes in (the extent is positive, so the
            // last element is the highest); both are alive and unshared for this block. `src` and `acc` hold
            // `n * size` packed bytes (`n` is their length over `size`), which is what `unpack_raw` reads and
            // `pack_raw` writes.
            unsafe {
                layout.unpack_raw(&src[..n * size], so);
                layout.unpack_raw(&acc[..n * size], ao);
            }
            // SAFETY: `n` elements of `layout` from origins `so` and `ao`, within the scratch `s` and `a` (above);
            // each origin is `lead`, a multiple of 16, past the start of `u128` storage, so it is 16-byte aligned, and
            // the datatype's elements sit where it lays them out from there.
            unsafe { f.apply(so, ao, n) };
            // SAFETY: as above: `n` elements of `layout` from `ao` lie within `a`, and `acc` has room for their
            // `n * size` packed bytes.
            unsafe { layout.pack_raw(ao, n, &mut acc[..n * size]) };
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datatype::TypemapBuilder;

    /// Apply `o` to packed `src` and `acc`.
    fn apply(o: &Operation, src: &[u8], acc: &mut [u8]) {
        (o.f)(src, acc)
    }

    /// The function sees aligned elements even when the reduction's bytes
    /// are not aligned, and its result reaches the accumulator.
    #[test]
    fn unaligned_buffers_reach_the_function_aligned() {
        struct Sum;
        impl RawUserFn for Sum {
            unsafe fn apply(&self, s: *mut u8, a: *mut u8, n: usize) {
                assert_eq!((s as usize % ALIGN, a as usize % ALIGN), (0, 0));
                for i in 0..n {
                    // SAFETY: `n` aligned i32s at each (`apply`'s contract).
                    unsafe { *a.cast::<i32>().add(i) += *s.cast::<i32>().add(i) };
                }
            }
        }
        let o = Operation::from_raw(4, true, Sum);
        let src: Vec<u8> = [1i32, 2, 3].iter().flat_map(|v| v.to_ne_bytes()).collect();
        // 16-byte aligned storage, so `acc` at its byte 1 is not aligned.
        let mut store = [0u128; 2];
        let acc = &mut bytemuck::cast_slice_mut::<u128, u8>(&mut store)[1..13];
        acc.copy_from_slice(&[10i32, 20, 30].iter().flat_map(|v| v.to_ne_bytes()).collect::<Vec<u8>>());
        apply(&o, &src, acc);
        let got: Vec<i32> = acc.chunks(4).map(|c| i32::from_ne_bytes([c[0], c[1], c[2], c[3]])).collect();
        assert_eq!(got, [11, 22, 33]);
    }

    /// A derived type with a gap (an i32 at 8 of a 16-byte extent): the
    /// function sees the elements at their offsets, and the packed result
    /// has its sums.
    #[test]
    fn derived_elements_are_laid_out_for_the_function() {
        let mut b = TypemapBuilder::new();
        b.place(&Arc::new(Typemap::of::<i32>()), 8, 1).ok();
        let layout = b.finish().resized(0, 16).map(Arc::new);
        let layout = layout.unwrap_or_else(|e| panic!("{e}"));
        struct SumAt8;
        impl RawUserFn for SumAt8 {
            unsafe fn apply(&self, s: *mut u8, a: *mut u8, n: usize) {
                for i in 0..n {
                    // SAFETY: `n` elements of the 16-byte type from each origin, the i32 at 8 (`apply`'s contract).
                    unsafe { *a.add(16 * i + 8).cast::<i32>() += *s.add(16 * i + 8).cast::<i32>() };
                }
            }
        }
        let o = Operation::from_raw_typed(layout, true, SumAt8).unwrap_or_else(|e| panic!("{e}"));
        let src: Vec<u8> = [1i32, 2].iter().flat_map(|v| v.to_ne_bytes()).collect();
        let mut acc: Vec<u8> = [5i32, 7].iter().flat_map(|v| v.to_ne_bytes()).collect();
        apply(&o, &src, &mut acc);
        let got: Vec<i32> = acc.chunks(4).map(|c| i32::from_ne_bytes([c[0], c[1], c[2], c[3]])).collect();
        assert_eq!(got, [6, 9]);
    }

    /// The origin the function gets is 16-byte aligned even when the data
    /// starts below it (a negative lower bound), and a type whose elements
    /// do not follow one another is refused.
    #[test]
    fn an_origin_below_the_data_is_aligned_and_in_bounds() {
        struct Check;
        impl RawUserFn for Check {
            unsafe fn apply(&self, s: *mut u8, a: *mut u8, n: usize) {
                assert_eq!((s as usize % ALIGN, a as usize % ALIGN), (0, 0));
                for i in 0..n {
                    // SAFETY: `n` elements of the 8-byte type from each origin, its i32 at -4 (`apply`'s contract).
                    unsafe {
                        *a.offset(8 * i as isize - 4).cast::<i32>() += *s.offset(8 * i as isize - 4).cast::<i32>()
                    };
                }
            }
        }
        let mut b = TypemapBuilder::new();
        b.place(&Arc::new(Typemap::of::<i32>()), -4, 1).ok();
        let layout = b.finish().resized(-4, 8).map(Arc::new).unwrap_or_else(|e| panic!("{e}"));
        let o = Operation::from_raw_typed(layout.clone(), true, Check).unwrap_or_else(|e| panic!("{e}"));
        let src: Vec<u8> = [1i32, 2, 3].iter().flat_map(|v| v.to_ne_bytes()).collect();
        let mut acc: Vec<u8> = [10i32, 20, 30].iter().flat_map(|v| v.to_ne_bytes()).collect();
        apply(&o, &src, &mut acc);
        let got: Vec<i32> = acc.chunks(4).map(|c| i32::from_ne_bytes([c[0], c[1], c[2], c[3]])).collect();
        assert_eq!(got, [11, 22, 33]);
        let back = layout.resized(0, -8).map(Arc::new).unwrap_or_else(|e| panic!("{e}"));
        let e = Operation::from_raw_typed(back, true, Check).err().map(|e| e.class());
        assert_eq!(e, Some(crate::ErrorClass::Type));
    }
}
