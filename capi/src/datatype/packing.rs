//! Packing and unpacking (MPI 4.1 §5.2).

use mpi::staged::pack::Representation;

use super::*;

#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_size(incount: c_int, datatype: Handle, comm: Handle, size: *mut c_int) -> c_int {
    with_state("MPI_Pack_size", comm, |st| {
        st.comm(comm)?;
        let n = count_arg(incount, "incount")?;
        let bytes = st.layout(datatype)?.size.checked_mul(n).and_then(|b| c_int::try_from(b).ok());
        let bytes = bytes.ok_or_else(|| Fail::new(MPI_ERR_COUNT, "the packed size does not fit an int"))?;
        // SAFETY: `size` is MPI_Pack_size's out-argument (MPI 4.1 §5.2.1), null or valid for writing one `int` for this
        // call; `put` refuses null.
        unsafe { put(size, bytes, "size") }
    })
}

/// A packed-data buffer argument of `size` bytes, to write.
///
/// # Safety
/// `p` is null or holds `size` bytes, writable and not otherwise accessed for the call.
pub(crate) unsafe fn bytes_out<'a>(p: *mut c_void, size: usize, what: &str) -> R<&'a mut [u8]> {
    if size == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(Fail::new(MPI_ERR_BUFFER, format!("{what} is a null pointer")));
    }
    // SAFETY: `p` is not null (checked) and holds `size` bytes, writable and reached only through
    // this slice for the call (`bytes_out`'s `# Safety`).
    Ok(unsafe { std::slice::from_raw_parts_mut(p.cast(), size) })
}

/// A packed-data buffer argument of `size` bytes, to read: [`array`],
/// with a null buffer an `MPI_ERR_BUFFER`.
///
/// # Safety
/// `p` is null or holds `size` bytes, readable and not written for the call.
pub(crate) unsafe fn bytes_in<'a>(p: *const c_void, size: usize, what: &str) -> R<&'a [u8]> {
    if size > 0 && p.is_null() {
        return Err(Fail::new(MPI_ERR_BUFFER, format!("{what} is a null pointer")));
    }
    // SAFETY: `p` holds `size` readable bytes for the call (`bytes_in`'s `# Safety`): `array`'s requirement.
    unsafe { array(p.cast(), size, what) }
}

/// `MPI_Pack` and `MPI_Pack_external(_c)` (§5.2.1, §5.2.3): the mpi
/// crate's `pack_into`, the position read from and written back to the
/// program's `int`, `MPI_Aint` or `MPI_Count`.
///
/// # Safety
/// `inbuf` holds the span's elements, readable; `outbuf` holds `outsize` bytes, writable;
/// `position` is null or readable and writable; all for the call.
pub(crate) unsafe fn pack<T: Copy + TryFrom<usize> + Into<i64>>(
    inbuf: *const c_void,
    span: &Span,
    rep: Representation<'_>,
    outbuf: *mut c_void,
    outsize: i64,
    position: *mut T,
) -> R<()> {
    // SAFETY: `position` is null or readable for one `T` for this call (`pack`'s `# Safety`); `read_arg` refuses
    // null.
    let mut at = count_arg(unsafe { read_arg(position, "position")? }.into(), "position")?;
    // SAFETY: `outbuf` is null or holds `outsize` writable bytes, and `inbuf` the span's readable elements, for this
    // call (`pack`'s `# Safety`): what `bytes_out` and `pack_into` require.
    unsafe {
        let out = bytes_out(outbuf, count_arg(outsize, "outsize")?, "outbuf")?;
        mpi::staged::pack::pack_into(inbuf.cast(), span, rep, out, &mut at)?;
    }
    let end = T::try_from(at).map_err(|_| Fail::new(MPI_ERR_COUNT, "the position overflows its argument"))?;
    // SAFETY: `position` is not null (`read_arg` accepted it) and writable for one `T` for this call.
    unsafe { position.write(end) };
    Ok(())
}

/// `MPI_Unpack` and `MPI_Unpack_external(_c)` (§5.2.1, §5.2.3): the mpi
/// crate's `unpack_from`, the position as for [`pack`].
///
/// # Safety
/// `inbuf` holds `insize` bytes, readable; `outbuf` has room for the span's elements, writable;
/// `position` is null or readable and writable; all for the call.
pub(crate) unsafe fn unpack<T: Copy + TryFrom<usize> + Into<i64>>(
    inbuf: *const c_void,
    insize: i64,
    position: *mut T,
    outbuf: *mut c_void,
    span: &Span,
    rep: Representation<'_>,
) -> R<()> {
    // SAFETY: `position` is null or readable for one `T` for this call (`unpack`'s `# Safety`); `read_arg` refuses
    // null.
    let mut at = count_arg(unsafe { read_arg(position, "position")? }.into(), "position")?;
    // SAFETY: `inbuf` is null or holds `insize` readable bytes, and `outbuf` room for the span's elements, writable,
    // for this call (`unpack`'s `# Safety`): what `bytes_in` and `unpack_from` require.
    unsafe {
        let input = bytes_in(inbuf, count_arg(insize, "insize")?, "inbuf")?;
        mpi::staged::pack::unpack_from(input, &mut at, outbuf.cast(), span, rep)?;
    }
    let end = T::try_from(at).map_err(|_| Fail::new(MPI_ERR_COUNT, "the position overflows its argument"))?;
    // SAFETY: `position` is not null (`read_arg` accepted it) and writable for one `T` for this call.
    unsafe { position.write(end) };
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Pack(
    inbuf: *const c_void,
    incount: c_int,
    datatype: Handle,
    outbuf: *mut c_void,
    outsize: c_int,
    position: *mut c_int,
    comm: Handle,
) -> c_int {
    with_state("MPI_Pack", comm, |st| {
        st.comm(comm)?;
        let span = st.span(incount, datatype)?;
        // SAFETY: `inbuf` holds `incount` elements of `datatype` (`span`), `outbuf` `outsize` bytes and `position` one
        // `int`, for this call, as MPI 4.1 §5.2.1 requires of MPI_Pack's caller: `pack`'s `# Safety`.
        unsafe { pack(inbuf, &span, Representation::Native, outbuf, outsize.into(), position) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Unpack(
    inbuf: *const c_void,
    insize: c_int,
    position: *mut c_int,
    outbuf: *mut c_void,
    outcount: c_int,
    datatype: Handle,
    comm: Handle,
) -> c_int {
    with_state("MPI_Unpack", comm, |st| {
        st.comm(comm)?;
        let span = st.span(outcount, datatype)?;
        // SAFETY: `inbuf` holds `insize` bytes, `outbuf` has room for `outcount` elements of `datatype` (`span`) and
        // `position` is one `int`, for this call, as MPI 4.1 §5.2.1 requires of MPI_Unpack's caller: `unpack`'s
        // `# Safety`.
        unsafe { unpack(inbuf, insize.into(), position, outbuf, &span, Representation::Native) }
    })
}

/// `MPI_Type_get_value_index` (MPI 4.1 §6.9.4): the predefined pair type
/// of a value and an index for `MPI_MAXLOC`/`MPI_MINLOC`, or
/// `MPI_DATATYPE_NULL` when the standard has none for the two.
#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_value_index(
    value_type: Handle,
    index_type: Handle,
    pair_type: *mut Handle,
) -> c_int {
    with_state("MPI_Type_get_value_index", MPI_COMM_WORLD, |st| {
        st.layout(value_type)?;
        st.layout(index_type)?;
        let pair = match (value_type, index_type) {
            (MPI_FLOAT, MPI_INT) => MPI_FLOAT_INT,
            (MPI_DOUBLE, MPI_INT) => MPI_DOUBLE_INT,
            (MPI_LONG, MPI_INT) => MPI_LONG_INT,
            (MPI_INT, MPI_INT) => MPI_2INT,
            (MPI_SHORT, MPI_INT) => MPI_SHORT_INT,
            (MPI_LONG_DOUBLE, MPI_INT) => MPI_LONG_DOUBLE_INT,
            (MPI_REAL, MPI_REAL) => MPI_2REAL,
            (MPI_DOUBLE_PRECISION, MPI_DOUBLE_PRECISION) => MPI_2DOUBLE_PRECISION,
            (MPI_INTEGER, MPI_INTEGER) => MPI_2INTEGER,
            _ => MPI_DATATYPE_NULL,
        };
        // SAFETY: `pair_type` is MPI_Type_get_value_index's out-argument, null or valid for writing one handle for this
        // call; `put` refuses null.
        unsafe { put(pair_type, pair, "pair_type") }
    })
}
