//! The type constructors (MPI 4.1 §5.1.2-5.1.7): contiguous, vector,
//! indexed, struct, resized, in their `_c` forms too; and the Fortran 90
//! parameterized types (§19.1.9).
//!
//! Each constructor is written once, generic over its count type: `int`
//! in the classic form, `MPI_Count` in the `_c` form ([`Count`]), which
//! `MPI_Type_get_contents` tells apart (§5.1.13).

use mpi::staged::recipe;

use crate::count::Int;

use super::*;

/// A constructor's count type, and the form it makes (§5.1.13).
pub(crate) trait Count: Int {
    const FORM: Form;
}

impl Count for c_int {
    const FORM: Form = Form::Int;
}

impl Count for i64 {
    const FORM: Form = Form::Large;
}

/// `n` values of an array argument (counts, block lengths or
/// displacements, in either form), widened.
///
/// # Safety
/// `p` holds `n` values, readable for the call.
pub(crate) unsafe fn wides<T: Int>(p: *const T, n: usize, what: &str) -> R<Vec<i64>> {
    // SAFETY: `array`'s requirement is this function's: `p` holds `n` values of `T`.
    Ok(unsafe { array(p, n, what)? }.iter().map(|v| v.wide()).collect())
}

/// Register the datatype a constructor built, recording its old types
/// `olds`.
///
/// # Safety
/// `newtype` is null or writable.
unsafe fn made(st: &mut State, built: (Layout, Args), olds: &[Handle], newtype: *mut Handle) -> R<()> {
    let parts = olds.iter().map(|&t| st.part(t)).collect::<R<Vec<_>>>()?;
    // SAFETY: `newtype` is null or valid for writing one handle for this call (`made`'s `# Safety`), which is what
    // `define` requires; it refuses null.
    unsafe { define(st, built.0, built.1.contents(parts), newtype) }
}

/// `MPI_Type_contiguous(_c)` (§5.1.2).
///
/// # Safety
/// `newtype` is null or writable.
unsafe fn contiguous<C: Count>(call: &str, count: C, oldtype: Handle, newtype: *mut Handle) -> c_int {
    with_state(call, MPI_COMM_WORLD, |st| {
        let built = recipe::contiguous(C::FORM, count.wide(), &st.layout(oldtype)?)?;
        // SAFETY: `newtype` is null or writable for this call (`contiguous`' `# Safety`): `made`'s requirement.
        unsafe { made(st, built, &[oldtype], newtype) }
    })
}

/// `MPI_Type_vector` and `MPI_Type_create_hvector`, in both forms
/// (§5.1.2): `count` blocks of `blocklength` elements, `stride` apart (in
/// extents, or in bytes when `bytes`).
///
/// # Safety
/// `newtype` is null or writable.
unsafe fn vector<C: Count>(
    call: &str,
    count: C,
    blocklength: C,
    stride: i64,
    bytes: bool,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    with_state(call, MPI_COMM_WORLD, |st| {
        let built = recipe::vector(C::FORM, count.wide(), blocklength.wide(), stride, bytes, &st.layout(oldtype)?)?;
        // SAFETY: `newtype` is null or writable for this call (`vector`'s `# Safety`): `made`'s requirement.
        unsafe { made(st, built, &[oldtype], newtype) }
    })
}

/// The block lengths of an indexed constructor: one per block, or the one
/// length of every block (`*_block`).
#[derive(Clone, Copy)]
enum Lengths<C> {
    Each(*const C),
    Same(C),
}

/// `MPI_Type_indexed`, `create_hindexed`, `create_indexed_block` and
/// `create_hindexed_block`, in both forms (§5.1.2): `count` blocks at
/// displacements `disps` in extents of `oldtype`, or in bytes when
/// `bytes`.
///
/// # Safety
/// `newtype` is null or writable; `lens` (when `Each`) and `disps` hold
/// `count` values, readable for the call.
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn indexed<C: Count, D: Int>(
    call: &str,
    combiner: c_int,
    bytes: bool,
    count: C,
    lens: Lengths<C>,
    disps: *const D,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    with_state(call, MPI_COMM_WORLD, |st| {
        let n = count_arg(count.wide(), "count")?;
        // SAFETY: `lens` (when `Each`) and `disps` hold `count` values, readable for this call (`indexed`'s
        // `# Safety`): `wides`' requirement; `count_arg` refused a negative count.
        let (lens, disps) = unsafe {
            let lens = match lens {
                Lengths::Each(p) => recipe::Lengths::Each(wides(p, n, "array_of_blocklengths")?),
                Lengths::Same(len) => recipe::Lengths::Same(len.wide()),
            };
            (lens, wides(disps, n, "array_of_displacements")?)
        };
        let built = recipe::indexed(C::FORM, combiner, bytes, count.wide(), lens, disps, &st.layout(oldtype)?)?;
        // SAFETY: `newtype` is null or writable for this call (`indexed`'s `# Safety`): `made`'s requirement.
        unsafe { made(st, built, &[oldtype], newtype) }
    })
}

/// `MPI_Type_create_struct(_c)` (§5.1.2): block `i` is `lens[i]`
/// elements of `types[i]` at byte `disps[i]`.
///
/// # Safety
/// `newtype` is null or writable; `lens`, `disps` and `types` hold `count`
/// values, readable for the call.
unsafe fn structure<C: Count, D: Int>(
    call: &str,
    count: C,
    lens: *const C,
    disps: *const D,
    types: *const Handle,
    newtype: *mut Handle,
) -> c_int {
    with_state(call, MPI_COMM_WORLD, |st| {
        let n = count_arg(count.wide(), "count")?;
        // SAFETY: `lens`, `disps` and `types` hold `count` values, readable for this call (`structure`'s
        // `# Safety`): what `wides` and `array` require; `count_arg` refused a negative count.
        let (lens, disps, types) = unsafe {
            (
                wides(lens, n, "array_of_blocklengths")?,
                wides(disps, n, "array_of_displacements")?,
                array(types, n, "array_of_types")?,
            )
        };
        let olds = types.iter().map(|&t| st.layout(t)).collect::<R<Vec<_>>>()?;
        let built = recipe::structure(C::FORM, lens, disps, &olds)?;
        // SAFETY: `newtype` is null or writable for this call (`structure`'s `# Safety`): `made`'s requirement.
        unsafe { made(st, built, types, newtype) }
    })
}

/// `MPI_Type_create_resized(_c)` (§5.1.7): `oldtype` with new bounds.
///
/// # Safety
/// `newtype` is null or writable.
unsafe fn resized(call: &str, form: Form, oldtype: Handle, lb: i64, extent: i64, newtype: *mut Handle) -> c_int {
    with_state(call, MPI_COMM_WORLD, |st| {
        let built = recipe::resized(form, &*st.layout(oldtype)?, lb, extent)?;
        // SAFETY: `newtype` is null or writable for this call (`resized`'s `# Safety`): `made`'s requirement.
        unsafe { made(st, built, &[oldtype], newtype) }
    })
}

use Lengths::{Each, Same};

forward! {
    pub unsafe extern "C" fn MPI_Type_contiguous(count: c_int, oldtype: Handle, newtype: *mut Handle) -> c_int = contiguous(count, oldtype, newtype);
    pub unsafe extern "C" fn MPI_Type_contiguous_c(count: i64, oldtype: Handle, newtype: *mut Handle) -> c_int = contiguous(count, oldtype, newtype);
    pub unsafe extern "C" fn MPI_Type_vector(count: c_int, blocklength: c_int, stride: c_int, oldtype: Handle, newtype: *mut Handle) -> c_int = vector(count, blocklength, stride.wide(), false, oldtype, newtype);
    pub unsafe extern "C" fn MPI_Type_vector_c(count: i64, blocklength: i64, stride: i64, oldtype: Handle, newtype: *mut Handle) -> c_int = vector(count, blocklength, stride, false, oldtype, newtype);
    pub unsafe extern "C" fn MPI_Type_create_hvector(count: c_int, blocklength: c_int, stride: isize, oldtype: Handle, newtype: *mut Handle) -> c_int = vector(count, blocklength, stride.wide(), true, oldtype, newtype);
    pub unsafe extern "C" fn MPI_Type_create_hvector_c(count: i64, blocklength: i64, stride: i64, oldtype: Handle, newtype: *mut Handle) -> c_int = vector(count, blocklength, stride, true, oldtype, newtype);
    pub unsafe extern "C" fn MPI_Type_indexed(count: c_int, array_of_blocklengths: *const c_int, array_of_displacements: *const c_int, oldtype: Handle, newtype: *mut Handle) -> c_int = indexed(MPI_COMBINER_INDEXED, false, count, Each(array_of_blocklengths), array_of_displacements, oldtype, newtype);
    pub unsafe extern "C" fn MPI_Type_indexed_c(count: i64, array_of_blocklengths: *const i64, array_of_displacements: *const i64, oldtype: Handle, newtype: *mut Handle) -> c_int = indexed(MPI_COMBINER_INDEXED, false, count, Each(array_of_blocklengths), array_of_displacements, oldtype, newtype);
    pub unsafe extern "C" fn MPI_Type_create_hindexed(count: c_int, array_of_blocklengths: *const c_int, array_of_displacements: *const isize, oldtype: Handle, newtype: *mut Handle) -> c_int = indexed(MPI_COMBINER_HINDEXED, true, count, Each(array_of_blocklengths), array_of_displacements, oldtype, newtype);
    pub unsafe extern "C" fn MPI_Type_create_hindexed_c(count: i64, array_of_blocklengths: *const i64, array_of_displacements: *const i64, oldtype: Handle, newtype: *mut Handle) -> c_int = indexed(MPI_COMBINER_HINDEXED, true, count, Each(array_of_blocklengths), array_of_displacements, oldtype, newtype);
    pub unsafe extern "C" fn MPI_Type_create_indexed_block(count: c_int, blocklength: c_int, array_of_displacements: *const c_int, oldtype: Handle, newtype: *mut Handle) -> c_int = indexed(MPI_COMBINER_INDEXED_BLOCK, false, count, Same(blocklength), array_of_displacements, oldtype, newtype);
    pub unsafe extern "C" fn MPI_Type_create_indexed_block_c(count: i64, blocklength: i64, array_of_displacements: *const i64, oldtype: Handle, newtype: *mut Handle) -> c_int = indexed(MPI_COMBINER_INDEXED_BLOCK, false, count, Same(blocklength), array_of_displacements, oldtype, newtype);
    pub unsafe extern "C" fn MPI_Type_create_hindexed_block(count: c_int, blocklength: c_int, array_of_displacements: *const isize, oldtype: Handle, newtype: *mut Handle) -> c_int = indexed(MPI_COMBINER_HINDEXED_BLOCK, true, count, Same(blocklength), array_of_displacements, oldtype, newtype);
    pub unsafe extern "C" fn MPI_Type_create_hindexed_block_c(count: i64, blocklength: i64, array_of_displacements: *const i64, oldtype: Handle, newtype: *mut Handle) -> c_int = indexed(MPI_COMBINER_HINDEXED_BLOCK, true, count, Same(blocklength), array_of_displacements, oldtype, newtype);
    pub unsafe extern "C" fn MPI_Type_create_struct(count: c_int, array_of_blocklengths: *const c_int, array_of_displacements: *const isize, array_of_types: *const Handle, newtype: *mut Handle) -> c_int = structure(count, array_of_blocklengths, array_of_displacements, array_of_types, newtype);
    pub unsafe extern "C" fn MPI_Type_create_struct_c(count: i64, array_of_blocklengths: *const i64, array_of_displacements: *const i64, array_of_types: *const Handle, newtype: *mut Handle) -> c_int = structure(count, array_of_blocklengths, array_of_displacements, array_of_types, newtype);
    pub unsafe extern "C" fn MPI_Type_create_resized(oldtype: Handle, lb: isize, extent: isize, newtype: *mut Handle) -> c_int = resized(Form::Int, oldtype, lb.wide(), extent.wide(), newtype);
    pub unsafe extern "C" fn MPI_Type_create_resized_c(oldtype: Handle, lb: i64, extent: i64, newtype: *mut Handle) -> c_int = resized(Form::Large, oldtype, lb, extent, newtype);
}

/// `MPI_Type_match_size` (§19.2.5): the Fortran-sized predefined type of
/// a class (`MPI_TYPECLASS_INTEGER`, `_REAL`, `_COMPLEX`, or MPICH's
/// logical class) and a size in bytes.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_match_size(typeclass: c_int, size: c_int, datatype: *mut Handle) -> c_int {
    with_state("MPI_Type_match_size", MPI_COMM_WORLD, |_| {
        let candidates: &[Handle] = match typeclass {
            MPI_TYPECLASS_INTEGER => &[MPI_INTEGER1, MPI_INTEGER2, MPI_INTEGER4, MPI_INTEGER8, MPI_INTEGER16],
            MPI_TYPECLASS_REAL => &[MPI_REAL2, MPI_REAL4, MPI_REAL8, MPI_REAL16],
            MPI_TYPECLASS_COMPLEX => &[MPI_COMPLEX4, MPI_COMPLEX8, MPI_COMPLEX16, MPI_COMPLEX32],
            MPIX_TYPECLASS_LOGICAL => &[MPI_LOGICAL1, MPI_LOGICAL2, MPI_LOGICAL4, MPI_LOGICAL8, MPI_LOGICAL16],
            c => {
                return Err(Fail::new(
                    MPI_ERR_ARG,
                    format!("{c} is not a type class (MPI_TYPECLASS_INTEGER, _REAL, _COMPLEX)"),
                ))
            }
        };
        let want = usize::try_from(size).ok();
        let found = candidates.iter().copied().find(|&h| layout_of(h).is_some_and(|l| Some(l.size) == want));
        let h = found.ok_or_else(|| {
            Fail::new(MPI_ERR_ARG, format!("no predefined type of class {typeclass} has {size} bytes in this library"))
        })?;
        // SAFETY: `datatype` is MPI_Type_match_size's out-argument, null or valid for writing one handle for this call;
        // `put` refuses null.
        unsafe { put(datatype, h, "datatype") }
    })
}

/// `MPI_Get_address` (§5.1.5): the address of `location` as an `MPI_Aint`,
/// for displacements relative to `MPI_BOTTOM`.
/// Parameterized Fortran types (§19.2.5): the predefined type a
/// `SELECTED_INT_KIND(r)` / `SELECTED_REAL_KIND(p, r)` selects, as a
/// handle whose combiner records the call (`MPI_COMBINER_F90_*`). The same
/// arguments return the same handle; like a predefined type, it is
/// committed and cannot be freed.
fn f90_type(st: &mut State, combiner: c_int, ints: Vec<c_int>) -> R<Handle> {
    let undefined = |v: c_int| v == MPI_UNDEFINED;
    let (p, r) = match ints[..] {
        [r] => (MPI_UNDEFINED, r),
        [p, r] => (p, r),
        _ => (MPI_UNDEFINED, MPI_UNDEFINED),
    };
    if combiner != MPI_COMBINER_F90_INTEGER && undefined(p) && undefined(r) {
        return Err(Fail::new(MPI_ERR_ARG, "p and r are both MPI_UNDEFINED: give a precision or a range"));
    }
    let fits = |v: c_int, max: c_int| undefined(v) || (0..=max).contains(&v);
    // (decimal precision, decimal exponent range) of each real kind.
    let reals = [(6, 37), (15, 307)];
    let pick = match combiner {
        MPI_COMBINER_F90_INTEGER => [(2, MPI_INTEGER1), (4, MPI_INTEGER2), (9, MPI_INTEGER4), (18, MPI_INTEGER8)]
            .iter()
            .find(|(max, _)| fits(r, *max))
            .map(|&(_, h)| h),
        c => {
            let kinds = if c == MPI_COMBINER_F90_REAL { [MPI_REAL4, MPI_REAL8] } else { [MPI_COMPLEX8, MPI_COMPLEX16] };
            reals.iter().zip(kinds).find(|((pm, rm), _)| fits(p, *pm) && fits(r, *rm)).map(|(_, h)| h)
        }
    };
    let base = pick.ok_or_else(|| {
        Fail::new(MPI_ERR_ARG, format!("no Fortran kind of this library has precision {p} and range {r}"))
    })?;
    let same = |e: &&TypeEntry| e.def.contents.combiner == combiner && e.def.contents.ints == ints;
    let h = match st.types.iter().find(|(_, e)| same(e)) {
        Some((&h, _)) => h,
        None => {
            let h = st.new_handle();
            let contents = Contents { combiner, ints, aints: vec![], counts: vec![], types: vec![] };
            let (layout, basis) = (Arc::new(st.layout(base)?.as_ref().clone()), st.basis(base, None)?);
            let def = Arc::new(TypeDef { layout, contents, basis });
            st.types.insert(h, TypeEntry { def, committed: true, name: String::new() });
            h
        }
    };
    Ok(h)
}

/// A type `MPI_Type_create_f90_*` returned: predefined, never freed.
pub(crate) fn is_f90(e: &TypeEntry) -> bool {
    matches!(e.def.contents.combiner, MPI_COMBINER_F90_INTEGER | MPI_COMBINER_F90_REAL | MPI_COMBINER_F90_COMPLEX)
}

/// An `MPI_Type_create_f90_*` call (§19.2.5): the type [`f90_type`]
/// picks, written to `newtype`.
///
/// # Safety
/// `newtype` is null or valid for writing one handle for the call.
unsafe fn f90(call: &str, combiner: c_int, ints: Vec<c_int>, newtype: *mut Handle) -> c_int {
    with_state(call, MPI_COMM_WORLD, |st| {
        let h = f90_type(st, combiner, ints)?;
        // SAFETY: `newtype` is null or valid for writing one handle for this call (`f90`'s `# Safety`); `put` refuses
        // null.
        unsafe { put(newtype, h, "newtype") }
    })
}

forward! {
    pub unsafe extern "C" fn MPI_Type_create_f90_integer(r: c_int, newtype: *mut Handle) -> c_int = f90(MPI_COMBINER_F90_INTEGER, vec![r], newtype);
    pub unsafe extern "C" fn MPI_Type_create_f90_real(p: c_int, r: c_int, newtype: *mut Handle) -> c_int = f90(MPI_COMBINER_F90_REAL, vec![p, r], newtype);
    pub unsafe extern "C" fn MPI_Type_create_f90_complex(p: c_int, r: c_int, newtype: *mut Handle) -> c_int = f90(MPI_COMBINER_F90_COMPLEX, vec![p, r], newtype);
}
