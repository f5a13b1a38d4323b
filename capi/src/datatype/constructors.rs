//! The type constructors (MPI 4.1 §5.1.2-5.1.7): contiguous, vector,
//! indexed, struct, resized, in their `_c` forms too; and the Fortran 90
//! parameterized types (§19.1.9).

use super::*;

/// `MPI_Type_contiguous(_c)` (§5.1.2).
///
/// # Safety
/// `newtype` is null or writable.
pub(crate) unsafe fn contiguous(call: &str, form: Form, count: i64, oldtype: Handle, newtype: *mut Handle) -> c_int {
    with_state(call, MPI_COMM_WORLD, |st| {
        count_arg(count, "count")?;
        let args = Args::new(form, MPI_COMBINER_CONTIGUOUS, vec![count], vec![]);
        // SAFETY: `newtype` is null or valid for writing one handle for this call (`contiguous`' `# Safety`), which is
        // what `blocks_of` requires.
        unsafe { blocks_of(st, oldtype, &[count], &[0], true, args, newtype) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_contiguous(count: c_int, oldtype: Handle, newtype: *mut Handle) -> c_int {
    // SAFETY: `newtype` is MPI_Type_contiguous's out-argument (MPI 4.1 §5.1.2), null or valid for writing one handle
    // for this call: `contiguous`' `# Safety`.
    unsafe { contiguous("MPI_Type_contiguous", Form::Int, count.into(), oldtype, newtype) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_contiguous_c(count: i64, oldtype: Handle, newtype: *mut Handle) -> c_int {
    // SAFETY: `newtype` is MPI_Type_contiguous_c's out-argument (MPI 4.1 §5.1.2), null or valid for writing one handle
    // for this call: `contiguous`' `# Safety`.
    unsafe { contiguous("MPI_Type_contiguous_c", Form::Large, count, oldtype, newtype) }
}

/// `MPI_Type_vector` and `MPI_Type_create_hvector`, in both forms
/// (§5.1.2): `count` blocks of `blocklength` elements, `stride` apart (in
/// extents, or in bytes when `bytes`).
///
/// # Safety
/// `newtype` is null or writable.
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
pub(crate) unsafe fn vector(
    call: &str,
    form: Form,
    count: i64,
    blocklength: i64,
    stride: i64,
    bytes: bool,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    with_state(call, MPI_COMM_WORLD, |st| {
        let n = count_arg(count, "count")?;
        let len = count_arg(blocklength, "blocklength")?;
        let args = if bytes {
            Args::new(form, MPI_COMBINER_HVECTOR, vec![count, blocklength], vec![stride])
        } else {
            Args::new(form, MPI_COMBINER_VECTOR, vec![count, blocklength, stride], vec![])
        };
        let old = st.layout(oldtype)?;
        let unit = if bytes { 1 } else { old.extent() };
        let step = disp_arg(stride)?.checked_mul(unit).ok_or_else(|| Fail::new(MPI_ERR_ARG, "the stride overflows"))?;
        let layout = Layout::vector(n, len, step, &old)?;
        let contents = args.contents(vec![st.part(oldtype)?]);
        // SAFETY: `newtype` is null or valid for writing one handle for this call (`vector`'s `# Safety`), which is
        // what `define` requires; it refuses null.
        unsafe { define(st, layout, contents, newtype) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_vector(
    count: c_int,
    blocklength: c_int,
    stride: c_int,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    let (c, b, s) = (count.into(), blocklength.into(), stride.into());
    // SAFETY: `newtype` is MPI_Type_vector's out-argument (MPI 4.1 §5.1.2), null or valid for writing one handle for
    // this call: `vector`'s `# Safety`.
    unsafe { vector("MPI_Type_vector", Form::Int, c, b, s, false, oldtype, newtype) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_vector_c(
    count: i64,
    blocklength: i64,
    stride: i64,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    // SAFETY: `newtype` is MPI_Type_vector_c's out-argument (MPI 4.1 §5.1.2), null or valid for writing one handle for
    // this call: `vector`'s `# Safety`.
    unsafe { vector("MPI_Type_vector_c", Form::Large, count, blocklength, stride, false, oldtype, newtype) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_hvector(
    count: c_int,
    blocklength: c_int,
    stride: isize,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    let (c, b, s) = (count.into(), blocklength.into(), stride as i64);
    // SAFETY: `newtype` is MPI_Type_create_hvector's out-argument (MPI 4.1 §5.1.2), null or valid for writing one
    // handle for this call: `vector`'s `# Safety`.
    unsafe { vector("MPI_Type_create_hvector", Form::Int, c, b, s, true, oldtype, newtype) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_hvector_c(
    count: i64,
    blocklength: i64,
    stride: i64,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    let call = "MPI_Type_create_hvector_c";
    // SAFETY: `newtype` is MPI_Type_create_hvector_c's out-argument (MPI 4.1 §5.1.2), null or valid for writing one
    // handle for this call: `vector`'s `# Safety`.
    unsafe { vector(call, Form::Large, count, blocklength, stride, true, oldtype, newtype) }
}

/// The arrays of an indexed constructor, read by its entry point.
pub(crate) struct Indexed {
    count: i64,
    /// One length per block, or the one length of every block (`*_block`).
    lens: Vec<i64>,
    disps: Vec<i64>,
}

/// `MPI_Type_indexed`, `create_hindexed`, `create_indexed_block` and
/// `create_hindexed_block`, in both forms (§5.1.2): blocks at
/// displacements in extents of `oldtype`, or in bytes when `bytes`.
///
/// # Safety
/// `newtype` is null or writable; `read` reads the caller's arrays.
pub(crate) unsafe fn indexed(
    call: &str,
    form: Form,
    combiner: c_int,
    bytes: bool,
    read: impl FnOnce() -> R<Indexed>,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    with_state(call, MPI_COMM_WORLD, |st| {
        let Indexed { count, lens, disps } = read()?;
        let n = disps.len();
        let all = if lens.len() == n { lens.clone() } else { vec![lens.first().copied().unwrap_or(0); n] };
        let mut counts = vec![count];
        counts.extend_from_slice(&lens);
        let args = if bytes {
            Args::new(form, combiner, counts, disps.clone())
        } else {
            counts.extend_from_slice(&disps);
            Args::new(form, combiner, counts, vec![])
        };
        // SAFETY: `newtype` is null or valid for writing one handle for this call (`indexed`'s `# Safety`), which is
        // what `blocks_of` requires.
        unsafe { blocks_of(st, oldtype, &all, &disps, !bytes, args, newtype) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_indexed(
    count: c_int,
    array_of_blocklengths: *const c_int,
    array_of_displacements: *const c_int,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    // SAFETY: `read` runs inside `indexed`, during this call, and reads `count` values (checked not negative) from each
    // of `array_of_blocklengths` and `array_of_displacements`, which MPI 4.1 §5.1.2 requires MPI_Type_indexed's caller
    // to provide: `ints_arg`'s requirement (`array` refuses null when `count` > 0).
    let read = || unsafe {
        let n = count_arg(count, "count")?;
        let lens = ints_arg(array_of_blocklengths, n, "array_of_blocklengths")?;
        Ok(Indexed { count: count.into(), lens, disps: ints_arg(array_of_displacements, n, "array_of_displacements")? })
    };
    // SAFETY: `newtype` is MPI_Type_indexed's out-argument (MPI 4.1 §5.1.2), null or valid for writing one handle for
    // this call, and `read` reads only the caller's arrays: `indexed`'s `# Safety`.
    unsafe { indexed("MPI_Type_indexed", Form::Int, MPI_COMBINER_INDEXED, false, read, oldtype, newtype) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_indexed_c(
    count: i64,
    array_of_blocklengths: *const i64,
    array_of_displacements: *const i64,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    // SAFETY: `read` runs inside `indexed`, during this call, and reads `count` values (checked not negative) from each
    // of `array_of_blocklengths` and `array_of_displacements`, which MPI 4.1 §5.1.2 requires MPI_Type_indexed_c's
    // caller to provide: `counts_arg`'s requirement (`array` refuses null when `count` > 0).
    let read = || unsafe {
        let n = count_arg(count, "count")?;
        let lens = counts_arg(array_of_blocklengths, n, "array_of_blocklengths")?;
        Ok(Indexed { count, lens, disps: counts_arg(array_of_displacements, n, "array_of_displacements")? })
    };
    // SAFETY: `newtype` is MPI_Type_indexed_c's out-argument (MPI 4.1 §5.1.2), null or valid for writing one handle for
    // this call, and `read` reads only the caller's arrays: `indexed`'s `# Safety`.
    unsafe { indexed("MPI_Type_indexed_c", Form::Large, MPI_COMBINER_INDEXED, false, read, oldtype, newtype) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_hindexed(
    count: c_int,
    array_of_blocklengths: *const c_int,
    array_of_displacements: *const isize,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    // SAFETY: `read` runs inside `indexed`, during this call, and reads `count` values (checked not negative) from each
    // of `array_of_blocklengths` (`int`s) and `array_of_displacements` (`MPI_Aint`s), which MPI 4.1 §5.1.2 requires
    // MPI_Type_create_hindexed's caller to provide: `ints_arg`'s and `aints_arg`'s requirement.
    let read = || unsafe {
        let n = count_arg(count, "count")?;
        let lens = ints_arg(array_of_blocklengths, n, "array_of_blocklengths")?;
        Ok(Indexed {
            count: count.into(),
            lens,
            disps: aints_arg(array_of_displacements, n, "array_of_displacements")?,
        })
    };
    let (call, c) = ("MPI_Type_create_hindexed", MPI_COMBINER_HINDEXED);
    // SAFETY: `newtype` is MPI_Type_create_hindexed's out-argument (MPI 4.1 §5.1.2), null or valid for writing one
    // handle for this call, and `read` reads only the caller's arrays: `indexed`'s `# Safety`.
    unsafe { indexed(call, Form::Int, c, true, read, oldtype, newtype) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_hindexed_c(
    count: i64,
    array_of_blocklengths: *const i64,
    array_of_displacements: *const i64,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    // SAFETY: `read` runs inside `indexed`, during this call, and reads `count` values (checked not negative) from each
    // of `array_of_blocklengths` and `array_of_displacements`, which MPI 4.1 §5.1.2 requires
    // MPI_Type_create_hindexed_c's caller to provide: `counts_arg`'s requirement.
    let read = || unsafe {
        let n = count_arg(count, "count")?;
        let lens = counts_arg(array_of_blocklengths, n, "array_of_blocklengths")?;
        Ok(Indexed { count, lens, disps: counts_arg(array_of_displacements, n, "array_of_displacements")? })
    };
    let (call, c) = ("MPI_Type_create_hindexed_c", MPI_COMBINER_HINDEXED);
    // SAFETY: `newtype` is MPI_Type_create_hindexed_c's out-argument (MPI 4.1 §5.1.2), null or valid for writing one
    // handle for this call, and `read` reads only the caller's arrays: `indexed`'s `# Safety`.
    unsafe { indexed(call, Form::Large, c, true, read, oldtype, newtype) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_indexed_block(
    count: c_int,
    blocklength: c_int,
    array_of_displacements: *const c_int,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    // SAFETY: `read` runs inside `indexed`, during this call, and reads `count` values (checked not negative) from
    // `array_of_displacements`, which MPI 4.1 §5.1.2 requires MPI_Type_create_indexed_block's caller to provide:
    // `ints_arg`'s requirement.
    let read = || unsafe {
        let n = count_arg(count, "count")?;
        let disps = ints_arg(array_of_displacements, n, "array_of_displacements")?;
        Ok(Indexed { count: count.into(), lens: vec![blocklength.into()], disps })
    };
    let (call, c) = ("MPI_Type_create_indexed_block", MPI_COMBINER_INDEXED_BLOCK);
    // SAFETY: `newtype` is MPI_Type_create_indexed_block's out-argument (MPI 4.1 §5.1.2), null or valid for writing one
    // handle for this call, and `read` reads only the caller's array: `indexed`'s `# Safety`.
    unsafe { indexed(call, Form::Int, c, false, read, oldtype, newtype) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_indexed_block_c(
    count: i64,
    blocklength: i64,
    array_of_displacements: *const i64,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    // SAFETY: `read` runs inside `indexed`, during this call, and reads `count` values (checked not negative) from
    // `array_of_displacements`, which MPI 4.1 §5.1.2 requires MPI_Type_create_indexed_block_c's caller to provide:
    // `counts_arg`'s requirement.
    let read = || unsafe {
        let n = count_arg(count, "count")?;
        let disps = counts_arg(array_of_displacements, n, "array_of_displacements")?;
        Ok(Indexed { count, lens: vec![blocklength], disps })
    };
    let (call, c) = ("MPI_Type_create_indexed_block_c", MPI_COMBINER_INDEXED_BLOCK);
    // SAFETY: `newtype` is MPI_Type_create_indexed_block_c's out-argument (MPI 4.1 §5.1.2), null or valid for writing
    // one handle for this call, and `read` reads only the caller's array: `indexed`'s `# Safety`.
    unsafe { indexed(call, Form::Large, c, false, read, oldtype, newtype) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_hindexed_block(
    count: c_int,
    blocklength: c_int,
    array_of_displacements: *const isize,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    // SAFETY: `read` runs inside `indexed`, during this call, and reads `count` values (checked not negative) from
    // `array_of_displacements` (`MPI_Aint`s), which MPI 4.1 §5.1.2 requires MPI_Type_create_hindexed_block's caller to
    // provide: `aints_arg`'s requirement.
    let read = || unsafe {
        let n = count_arg(count, "count")?;
        let disps = aints_arg(array_of_displacements, n, "array_of_displacements")?;
        Ok(Indexed { count: count.into(), lens: vec![blocklength.into()], disps })
    };
    let (call, c) = ("MPI_Type_create_hindexed_block", MPI_COMBINER_HINDEXED_BLOCK);
    // SAFETY: `newtype` is MPI_Type_create_hindexed_block's out-argument (MPI 4.1 §5.1.2), null or valid for writing
    // one handle for this call, and `read` reads only the caller's array: `indexed`'s `# Safety`.
    unsafe { indexed(call, Form::Int, c, true, read, oldtype, newtype) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_hindexed_block_c(
    count: i64,
    blocklength: i64,
    array_of_displacements: *const i64,
    oldtype: Handle,
    newtype: *mut Handle,
) -> c_int {
    // SAFETY: `read` runs inside `indexed`, during this call, and reads `count` values (checked not negative) from
    // `array_of_displacements`, which MPI 4.1 §5.1.2 requires MPI_Type_create_hindexed_block_c's caller to provide:
    // `counts_arg`'s requirement.
    let read = || unsafe {
        let n = count_arg(count, "count")?;
        let disps = counts_arg(array_of_displacements, n, "array_of_displacements")?;
        Ok(Indexed { count, lens: vec![blocklength], disps })
    };
    let (call, c) = ("MPI_Type_create_hindexed_block_c", MPI_COMBINER_HINDEXED_BLOCK);
    // SAFETY: `newtype` is MPI_Type_create_hindexed_block_c's out-argument (MPI 4.1 §5.1.2), null or valid for writing
    // one handle for this call, and `read` reads only the caller's array: `indexed`'s `# Safety`.
    unsafe { indexed(call, Form::Large, c, true, read, oldtype, newtype) }
}

/// `MPI_Type_create_struct(_c)` (§5.1.2): block `i` is `lens[i]`
/// elements of `types[i]` at byte `disps[i]`.
///
/// # Safety
/// `newtype` is null or writable; `read` reads the caller's arrays.
pub(crate) unsafe fn structure(
    call: &str,
    form: Form,
    read: impl FnOnce() -> R<(Indexed, Vec<Handle>)>,
    newtype: *mut Handle,
) -> c_int {
    with_state(call, MPI_COMM_WORLD, |st| {
        let (Indexed { count, lens, disps }, types) = read()?;
        let mut b = Builder::new();
        let mut parts = Vec::with_capacity(types.len());
        for ((&len, &d), &t) in lens.iter().zip(&disps).zip(&types) {
            b.place(&st.layout(t)?, disp_arg(d)?, count_arg(len, "a block length")?)?;
            parts.push(st.part(t)?);
        }
        // The extent is padded as a C compiler pads a struct (§5.1.6).
        let l = b.finish_struct()?;
        let mut counts = vec![count];
        counts.extend_from_slice(&lens);
        let contents = Args::new(form, MPI_COMBINER_STRUCT, counts, disps).contents(parts);
        // SAFETY: `newtype` is null or valid for writing one handle for this call (`structure`'s `# Safety`), which is
        // what `define` requires; it refuses null.
        unsafe { define(st, l, contents, newtype) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_struct(
    count: c_int,
    array_of_blocklengths: *const c_int,
    array_of_displacements: *const isize,
    array_of_types: *const Handle,
    newtype: *mut Handle,
) -> c_int {
    // SAFETY: `read` runs inside `structure`, during this call, and reads `count` values (checked not negative) from
    // each of `array_of_blocklengths` (`int`s), `array_of_displacements` (`MPI_Aint`s) and `array_of_types` (handles),
    // which MPI 4.1 §5.1.2 requires MPI_Type_create_struct's caller to provide: `ints_arg`'s, `aints_arg`'s and
    // `array`'s requirement.
    let read = || unsafe {
        let n = count_arg(count, "count")?;
        let lens = ints_arg(array_of_blocklengths, n, "array_of_blocklengths")?;
        let disps = aints_arg(array_of_displacements, n, "array_of_displacements")?;
        Ok((Indexed { count: count.into(), lens, disps }, array(array_of_types, n, "array_of_types")?.to_vec()))
    };
    // SAFETY: `newtype` is MPI_Type_create_struct's out-argument (MPI 4.1 §5.1.2), null or valid for writing one handle
    // for this call, and `read` reads only the caller's arrays: `structure`'s `# Safety`.
    unsafe { structure("MPI_Type_create_struct", Form::Int, read, newtype) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_struct_c(
    count: i64,
    array_of_blocklengths: *const i64,
    array_of_displacements: *const i64,
    array_of_types: *const Handle,
    newtype: *mut Handle,
) -> c_int {
    // SAFETY: `read` runs inside `structure`, during this call, and reads `count` values (checked not negative) from
    // each of `array_of_blocklengths`, `array_of_displacements` (`MPI_Count`s) and `array_of_types` (handles), which
    // MPI 4.1 §5.1.2 requires MPI_Type_create_struct_c's caller to provide: `counts_arg`'s and `array`'s requirement.
    let read = || unsafe {
        let n = count_arg(count, "count")?;
        let lens = counts_arg(array_of_blocklengths, n, "array_of_blocklengths")?;
        let disps = counts_arg(array_of_displacements, n, "array_of_displacements")?;
        Ok((Indexed { count, lens, disps }, array(array_of_types, n, "array_of_types")?.to_vec()))
    };
    // SAFETY: `newtype` is MPI_Type_create_struct_c's out-argument (MPI 4.1 §5.1.2), null or valid for writing one
    // handle for this call, and `read` reads only the caller's arrays: `structure`'s `# Safety`.
    unsafe { structure("MPI_Type_create_struct_c", Form::Large, read, newtype) }
}

/// `MPI_Type_create_resized(_c)` (§5.1.7): `oldtype` with new bounds.
///
/// # Safety
/// `newtype` is null or writable.
pub(crate) unsafe fn resized(
    call: &str,
    form: Form,
    oldtype: Handle,
    lb: i64,
    extent: i64,
    newtype: *mut Handle,
) -> c_int {
    with_state(call, MPI_COMM_WORLD, |st| {
        let mut l = (*st.layout(oldtype)?).clone();
        let (lo, ext) = (disp_arg(lb)?, disp_arg(extent)?);
        l.lb = lo;
        l.ub = lo.checked_add(ext).ok_or_else(|| Fail::new(MPI_ERR_ARG, "lb + extent overflows an address"))?;
        let contents =
            Args::new(form, MPI_COMBINER_RESIZED, vec![], vec![lb, extent]).contents(vec![st.part(oldtype)?]);
        // SAFETY: `newtype` is null or valid for writing one handle for this call (`resized`'s `# Safety`), which is
        // what `define` requires; it refuses null.
        unsafe { define(st, l, contents, newtype) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_resized(
    oldtype: Handle,
    lb: isize,
    extent: isize,
    newtype: *mut Handle,
) -> c_int {
    // SAFETY: `newtype` is MPI_Type_create_resized's out-argument (MPI 4.1 §5.1.7), null or valid for writing one
    // handle for this call: `resized`'s `# Safety`.
    unsafe { resized("MPI_Type_create_resized", Form::Int, oldtype, lb as i64, extent as i64, newtype) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_resized_c(
    oldtype: Handle,
    lb: i64,
    extent: i64,
    newtype: *mut Handle,
) -> c_int {
    // SAFETY: `newtype` is MPI_Type_create_resized_c's out-argument (MPI 4.1 §5.1.7), null or valid for writing one
    // handle for this call: `resized`'s `# Safety`.
    unsafe { resized("MPI_Type_create_resized_c", Form::Large, oldtype, lb, extent, newtype) }
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
        let found = candidates.iter().copied().find(|&h| predefined(h).is_some_and(|l| Some(l.size) == want));
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
pub(crate) fn f90_type(st: &mut State, combiner: c_int, ints: Vec<c_int>, out: *mut Handle) -> R<()> {
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
            let def = Arc::new(TypeDef { layout: Arc::new(st.layout(base)?.as_ref().clone()), contents });
            st.types.insert(h, TypeEntry { def, committed: true, name: String::new() });
            h
        }
    };
    // SAFETY: `out` is the `newtype` out-argument of the MPI_Type_create_f90_* call that called this function (the only
    // callers), null or valid for writing one handle for this call; `put` refuses null. Note: `f90_type` is a safe
    // function, so nothing in its signature obliges a caller to pass such a pointer.
    unsafe { put(out, h, "newtype") }
}

/// A type `MPI_Type_create_f90_*` returned: predefined, never freed.
pub(crate) fn is_f90(e: &TypeEntry) -> bool {
    matches!(e.def.contents.combiner, MPI_COMBINER_F90_INTEGER | MPI_COMBINER_F90_REAL | MPI_COMBINER_F90_COMPLEX)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_f90_integer(r: c_int, newtype: *mut Handle) -> c_int {
    with_state("MPI_Type_create_f90_integer", MPI_COMM_WORLD, |st| {
        f90_type(st, MPI_COMBINER_F90_INTEGER, vec![r], newtype)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_f90_real(p: c_int, r: c_int, newtype: *mut Handle) -> c_int {
    with_state("MPI_Type_create_f90_real", MPI_COMM_WORLD, |st| {
        f90_type(st, MPI_COMBINER_F90_REAL, vec![p, r], newtype)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_create_f90_complex(p: c_int, r: c_int, newtype: *mut Handle) -> c_int {
    with_state("MPI_Type_create_f90_complex", MPI_COMM_WORLD, |st| {
        f90_type(st, MPI_COMBINER_F90_COMPLEX, vec![p, r], newtype)
    })
}
