//! Packing and unpacking (MPI 4.1 §5.2).

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

/// The position argument of `MPI_Pack`/`MPI_Unpack`, checked against the
/// buffer's size and the bytes to move.
///
/// # Safety
/// `position` is null or readable.
pub(crate) unsafe fn position(position: *const c_int, size: c_int, need: usize, call: &str) -> R<usize> {
    // SAFETY: `position` is null or readable for one `int` for this call (`position`'s `# Safety`, from the in/out
    // argument of MPI_Pack or MPI_Unpack); `read_arg` refuses null.
    let at = unsafe { read_arg(position, "position")? };
    let (at, size) = (count_arg(at, "position")?, count_arg(size, "the buffer size")?);
    if at.checked_add(need).is_none_or(|end| end > size) {
        return Err(Fail::new(
            MPI_ERR_TRUNCATE,
            format!("{call}: {need} bytes from position {at} do not fit a buffer of {size} bytes"),
        ));
    }
    Ok(at)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Pack(
    inbuf: *const c_void,
    incount: c_int,
    datatype: Handle,
    outbuf: *mut c_void,
    outsize: c_int,
    position_: *mut c_int,
    comm: Handle,
) -> c_int {
    with_state("MPI_Pack", comm, |st| {
        st.comm(comm)?;
        let span = st.span(incount, datatype)?;
        // SAFETY: `position_` is MPI_Pack's in/out argument (MPI 4.1 §5.2.1), null or readable and writable for one
        // `int` for this call: `position`'s `# Safety` (it refuses null).
        let at = unsafe { position(position_, outsize, span.len(), "MPI_Pack")? };
        // SAFETY: `inbuf` holds `incount` elements of `datatype` (`span`), readable for this call, as MPI 4.1 §5.2.1
        // requires of MPI_Pack's caller, and the bytes borrowed are used before the call returns: what `outgoing`
        // requires.
        let data = unsafe { outgoing(inbuf.cast(), &span, "input")? };
        if !data.is_empty() {
            if outbuf.is_null() {
                return Err(Fail::new(MPI_ERR_BUFFER, "outbuf is a null pointer"));
            }
            // SAFETY: `outbuf` holds `outsize` bytes, and `at + len <= outsize` (checked).
            unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), outbuf.cast::<u8>().add(at), data.len()) };
        }
        // SAFETY: checked non-null above.
        unsafe { position_.write((at + data.len()) as c_int) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Unpack(
    inbuf: *const c_void,
    insize: c_int,
    position_: *mut c_int,
    outbuf: *mut c_void,
    outcount: c_int,
    datatype: Handle,
    comm: Handle,
) -> c_int {
    with_state("MPI_Unpack", comm, |st| {
        st.comm(comm)?;
        let span = st.span(outcount, datatype)?;
        // SAFETY: `position_` is MPI_Unpack's in/out argument (MPI 4.1 §5.2.1), null or readable and writable for one
        // `int` for this call: `position`'s `# Safety` (it refuses null).
        let at = unsafe { position(position_, insize, span.len(), "MPI_Unpack")? };
        // SAFETY: `outbuf` has room for `outcount` elements of `datatype` (`span`), writable for this call, as MPI 4.1
        // §5.2.1 requires of MPI_Unpack's caller, and `into` is finished below, within the call: what `incoming`
        // requires.
        let mut into = unsafe { incoming(outbuf.cast(), &span, "output", false)? };
        if into.len > 0 {
            if inbuf.is_null() {
                return Err(Fail::new(MPI_ERR_BUFFER, "inbuf is a null pointer"));
            }
            // SAFETY: `inbuf` holds `insize` bytes and `at + len <= insize`
            // (checked); `into` is the output's bytes or a staging buffer.
            unsafe {
                std::ptr::copy_nonoverlapping(inbuf.cast::<u8>().add(at), into.bytes().as_mut_ptr(), into.len);
            }
        }
        let n = into.len;
        // SAFETY: `outbuf` is still MPI_Unpack's output buffer, writable for this call (MPI 4.1 §5.2.1), and `into` was
        // made from it in this call: what `Incoming::finish` requires. `n` is the number of bytes copied into `into`.
        unsafe { into.finish(n as u64) };
        // SAFETY: checked non-null above.
        unsafe { position_.write((at + n) as c_int) };
        Ok(())
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
