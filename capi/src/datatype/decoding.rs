//! Decoding a datatype (MPI 4.1 §5.1.13): its envelope and contents.

use super::*;

impl State {
    /// How `datatype` was built: `None` for a named predefined type.
    fn contents_of(&self, datatype: Handle) -> R<Option<&Contents>> {
        match self.types.get(&datatype) {
            Some(e) => Ok(Some(&e.def.contents)),
            None => self.layout(datatype).map(|_| None),
        }
    }
}

/// `MPI_Type_get_envelope(_c)` (§5.1.13): `[integers, addresses, large
/// counts, datatypes]` and the combiner.
pub(crate) fn envelope(st: &State, datatype: Handle, form: Form) -> R<([usize; 4], c_int)> {
    let Some(c) = st.contents_of(datatype)? else {
        return Ok(([0; 4], MPI_COMBINER_NAMED));
    };
    Ok((c.envelope(form)?, c.combiner))
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_envelope(
    datatype: Handle,
    num_integers: *mut c_int,
    num_addresses: *mut c_int,
    num_datatypes: *mut c_int,
    combiner: *mut c_int,
) -> c_int {
    with_state("MPI_Type_get_envelope", MPI_COMM_WORLD, |st| {
        let ([ni, na, _, nd], c) = envelope(st, datatype, Form::Int)?;
        // SAFETY: `num_integers`, `num_addresses`, `num_datatypes` and `combiner` are MPI_Type_get_envelope's
        // out-arguments (MPI 4.1 §5.1.13), each null or valid for writing one `int` for this call; `put` refuses null.
        unsafe {
            put(num_integers, ni as c_int, "num_integers")?;
            put(num_addresses, na as c_int, "num_addresses")?;
            put(num_datatypes, nd as c_int, "num_datatypes")?;
            put(combiner, c, "combiner")
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_envelope_c(
    datatype: Handle,
    num_integers: *mut i64,
    num_addresses: *mut i64,
    num_large_counts: *mut i64,
    num_datatypes: *mut i64,
    combiner: *mut c_int,
) -> c_int {
    with_state("MPI_Type_get_envelope_c", MPI_COMM_WORLD, |st| {
        let ([ni, na, nc, nd], c) = envelope(st, datatype, Form::Large)?;
        // SAFETY: `num_integers`, `num_addresses`, `num_large_counts` and `num_datatypes` (`MPI_Count`s) and `combiner`
        // (an `int`) are MPI_Type_get_envelope_c's out-arguments (MPI 4.1 §5.1.13), each null or valid for writing one
        // value for this call; `put` refuses null.
        unsafe {
            put(num_integers, ni as i64, "num_integers")?;
            put(num_addresses, na as i64, "num_addresses")?;
            put(num_large_counts, nc as i64, "num_large_counts")?;
            put(num_datatypes, nd as i64, "num_datatypes")?;
            put(combiner, c, "combiner")
        }
    })
}

/// The output arrays of `MPI_Type_get_contents(_c)` and their sizes.
pub(crate) struct ContentsOut {
    max: [i64; 4],
    ints: *mut c_int,
    aints: *mut isize,
    counts: *mut i64,
    types: *mut Handle,
}

/// Copy `vals` into the caller's array `out` of `max` values.
///
/// # Safety
/// `out` holds `max` values.
pub(crate) unsafe fn fill<T: Copy>(out: *mut T, max: i64, vals: &[T], what: &str) -> R<()> {
    if max < vals.len() as i64 {
        return Err(Fail::new(MPI_ERR_ARG, format!("max_{what} is {max}, but this datatype has {}", vals.len())));
    }
    if !vals.is_empty() {
        if out.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, format!("array_of_{what} is a null pointer")));
        }
        // SAFETY: `out` is not null (checked above) and holds `max` values of `T`, writable for this call (`fill`'s
        // `# Safety`), and `vals.len()` <= `max` (checked above); `vals` is the library's own, so the two do not
        // overlap.
        unsafe { std::ptr::copy_nonoverlapping(vals.as_ptr(), out, vals.len()) };
    }
    Ok(())
}

/// `MPI_Type_get_contents(_c)` (§5.1.13).
///
/// # Safety
/// Each output array holds its maximum.
pub(crate) unsafe fn decode(st: &mut State, datatype: Handle, form: Form, out: ContentsOut) -> R<()> {
    envelope(st, datatype, form)?;
    let Some(c) = st.contents_of(datatype)?.cloned() else {
        return Err(Fail::new(
            MPI_ERR_TYPE,
            "MPI_Type_get_contents of a named predefined datatype (its combiner is MPI_COMBINER_NAMED)",
        ));
    };
    // SAFETY: each of `out.ints`, `out.aints` and `out.counts` has room for its maximum (`out.max[0..3]`), writable for
    // this call (`decode`'s `# Safety`): what `fill` requires; it checks the values fit and refuses null.
    unsafe {
        fill(out.ints, out.max[0], &c.ints, "integers")?;
        fill(out.aints, out.max[1], &c.aints, "addresses")?;
        fill(out.counts, out.max[2], &c.counts, "large_counts")?;
    }
    // A derived datatype comes back as a new handle the caller frees (§5.1.13).
    let handles: Vec<Handle> = c
        .types
        .iter()
        .map(|(h, def)| match def {
            None => *h,
            Some(def) => {
                let n = st.new_handle();
                st.types.insert(n, TypeEntry { def: def.clone(), committed: true, name: String::new() });
                n
            }
        })
        .collect();
    // SAFETY: `out.types` has room for `out.max[3]` handles (MPI_Type_get_contents' `max_datatypes`), writable for this
    // call (`decode`'s `# Safety`): what `fill` requires; it checks the handles fit and refuses null.
    unsafe { fill(out.types, out.max[3], &handles, "datatypes") }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_contents(
    datatype: Handle,
    max_integers: c_int,
    max_addresses: c_int,
    max_datatypes: c_int,
    array_of_integers: *mut c_int,
    array_of_addresses: *mut isize,
    array_of_datatypes: *mut Handle,
) -> c_int {
    with_state("MPI_Type_get_contents", MPI_COMM_WORLD, |st| {
        let out = ContentsOut {
            max: [max_integers.into(), max_addresses.into(), 0, max_datatypes.into()],
            ints: array_of_integers,
            aints: array_of_addresses,
            counts: std::ptr::null_mut(),
            types: array_of_datatypes,
        };
        // SAFETY: `array_of_integers`, `array_of_addresses` and `array_of_datatypes` have room for `max_integers`,
        // `max_addresses` and `max_datatypes` entries, writable for this call, as MPI 4.1 §5.1.13 requires of
        // MPI_Type_get_contents' caller; the large-count array is null with a maximum of 0: `decode`'s `# Safety`.
        unsafe { decode(st, datatype, Form::Int, out) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_contents_c(
    datatype: Handle,
    max_integers: i64,
    max_addresses: i64,
    max_large_counts: i64,
    max_datatypes: i64,
    array_of_integers: *mut c_int,
    array_of_addresses: *mut isize,
    array_of_large_counts: *mut i64,
    array_of_datatypes: *mut Handle,
) -> c_int {
    with_state("MPI_Type_get_contents_c", MPI_COMM_WORLD, |st| {
        let out = ContentsOut {
            max: [max_integers, max_addresses, max_large_counts, max_datatypes],
            ints: array_of_integers,
            aints: array_of_addresses,
            counts: array_of_large_counts,
            types: array_of_datatypes,
        };
        // SAFETY: `array_of_integers`, `array_of_addresses`, `array_of_large_counts` and `array_of_datatypes` have room
        // for their `max_*` entries, writable for this call, as MPI 4.1 §5.1.13 requires of MPI_Type_get_contents_c's
        // caller: `decode`'s `# Safety`.
        unsafe { decode(st, datatype, Form::Large, out) }
    })
}
