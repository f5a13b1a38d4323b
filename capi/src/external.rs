//! `MPI_Pack_external`, `MPI_Unpack_external` and
//! `MPI_Pack_external_size` (MPI 4.1 §5.2.3), in the `external32`
//! representation (§13.5.2), the only one the standard defines.
//!
//! The elements are packed as `MPI_Pack` packs them (the typemap engine)
//! and converted by their type signature (`mpi::datatype::external32`).
//! The signature comes from how the datatype was built, the record
//! `MPI_Type_get_contents` returns: a predefined type's basic elements,
//! and for a derived one, its old type's signature repeated as often as
//! the old type's elements fit in it (a struct: each block's in turn).

use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::Arc;

use mpi::datatype::external32::Signature;
use mpi::staged::pack::Representation;

use crate::abi::*;
use crate::*;

/// The signature of datatype `dt` (its basic elements, §5.1.11).
pub(crate) fn signature_of(st: &State, dt: Handle) -> R<Arc<Signature>> {
    Ok(st.basis(dt, None)?.signature().clone())
}

/// Check the representation the program names: only `"external32"`.
///
/// # Safety
/// `datarep` is null or a C string.
unsafe fn external32(datarep: *const c_char) -> R<()> {
    if datarep.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "datarep is a null pointer"));
    }
    // SAFETY: `datarep` is not null (checked above) and is a NUL-terminated string readable for this call
    // (`external32`'s `# Safety`); it is copied out at once.
    let name = unsafe { CStr::from_ptr(datarep) }.to_string_lossy();
    if name != "external32" {
        return Err(Fail::new(
            MPI_ERR_ARG,
            format!("data representation \"{name}\" is not one this library has: use \"external32\" (MPI 4.1 §13.5.2)"),
        ));
    }
    Ok(())
}

/// A count or size argument as a `usize`.
fn nonneg(v: i64, what: &str) -> R<usize> {
    usize::try_from(v).map_err(|_| Fail::new(MPI_ERR_COUNT, format!("{what} {v} is negative")))
}

/// `MPI_Pack_external_size(_c)`.
///
/// # Safety
/// As the MPI call: `datarep` a C string, `size` writable.
unsafe fn pack_size<T: TryFrom<u64>>(
    call: &str,
    datarep: *const c_char,
    incount: i64,
    dt: Handle,
    size: *mut T,
) -> c_int {
    with_state(call, MPI_COMM_WORLD, |st| {
        // SAFETY: `datarep` is null or a NUL-terminated string readable for this call (`pack_size`'s `# Safety`), which
        // is `external32`'s requirement.
        unsafe { external32(datarep)? };
        let n = nonneg(incount, "incount")? as u64;
        let bytes = signature_of(st, dt)?.external_size().checked_mul(n);
        let bytes = bytes.and_then(|b| T::try_from(b).ok());
        let bytes = bytes.ok_or_else(|| Fail::new(MPI_ERR_COUNT, "the packed size does not fit the size argument"))?;
        // SAFETY: `size` is null or valid for writing one `T` for this call (`pack_size`'s `# Safety`, the MPI call's
        // out-argument); `put` refuses null.
        unsafe { put(size, bytes, "size") }
    })
}

/// `MPI_Pack_external(_c)` (§5.2.3): [`crate::datatype::pack`] in
/// `external32`.
///
/// # Safety
/// As the MPI call: `datarep` a C string, `inbuf` holds `incount` elements, `outbuf` `outsize`
/// bytes, `position` readable and writable.
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn pack<T: Copy + TryFrom<usize> + Into<i64>>(
    call: &str,
    datarep: *const c_char,
    inbuf: *const c_void,
    incount: i64,
    dt: Handle,
    outbuf: *mut c_void,
    outsize: i64,
    position: *mut T,
) -> c_int {
    with_state(call, MPI_COMM_WORLD, |st| {
        // SAFETY: `datarep` is null or a NUL-terminated string readable for this call (`pack`'s `# Safety`), which is
        // `external32`'s requirement.
        unsafe { external32(datarep)? };
        let (signature, count) = (signature_of(st, dt)?, nonneg(incount, "incount")?);
        let span = st.span(incount, dt)?;
        let rep = Representation::External32 { signature: &signature, count };
        // SAFETY: `inbuf` holds `incount` elements of `dt` (`span`), `outbuf` `outsize` bytes and `position` one `T`,
        // for this call (`pack`'s `# Safety`, MPI 4.1 §5.2.3): `datatype::pack`'s `# Safety`.
        unsafe { crate::datatype::pack(inbuf, &span, rep, outbuf, outsize, position) }
    })
}

/// `MPI_Unpack_external(_c)` (§5.2.3): [`crate::datatype::unpack`] from
/// `external32`.
///
/// # Safety
/// As the MPI call: `datarep` a C string, `inbuf` holds `insize` bytes, `outbuf` has room for
/// `outcount` elements, `position` readable and writable.
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
unsafe fn unpack<T: Copy + TryFrom<usize> + Into<i64>>(
    call: &str,
    datarep: *const c_char,
    inbuf: *const c_void,
    insize: i64,
    position: *mut T,
    outbuf: *mut c_void,
    outcount: i64,
    dt: Handle,
) -> c_int {
    with_state(call, MPI_COMM_WORLD, |st| {
        // SAFETY: `datarep` is null or a NUL-terminated string readable for this call (`unpack`'s `# Safety`), which is
        // `external32`'s requirement.
        unsafe { external32(datarep)? };
        let (signature, count) = (signature_of(st, dt)?, nonneg(outcount, "outcount")?);
        let span = st.span(outcount, dt)?;
        let rep = Representation::External32 { signature: &signature, count };
        // SAFETY: `inbuf` holds `insize` bytes, `outbuf` has room for `outcount` elements of `dt` (`span`) and
        // `position` is one `T`, for this call (`unpack`'s `# Safety`, MPI 4.1 §5.2.3): `datatype::unpack`'s
        // `# Safety`.
        unsafe { crate::datatype::unpack(inbuf, insize, position, outbuf, &span, rep) }
    })
}

forward! {
    pub unsafe extern "C" fn MPI_Pack_external_size(datarep: *const c_char, incount: c_int, datatype: Handle, size: *mut isize) -> c_int = pack_size(datarep, incount.into(), datatype, size);
    pub unsafe extern "C" fn MPI_Pack_external_size_c(datarep: *const c_char, incount: i64, datatype: Handle, size: *mut i64) -> c_int = pack_size(datarep, incount, datatype, size);
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Pack_external(
    datarep: *const c_char,
    inbuf: *const c_void,
    incount: c_int,
    datatype: Handle,
    outbuf: *mut c_void,
    outsize: isize,
    position: *mut isize,
) -> c_int {
    let call = "MPI_Pack_external";
    // SAFETY: `datarep` is a NUL-terminated string, `inbuf` holds `incount` elements of `datatype`, `outbuf` has
    // `outsize` writable bytes, and `position` points to one readable and writable `MPI_Aint` (64 bits here, laid out
    // as the `i64` it is cast to), all for this call, as MPI 4.1 §5.2.3 requires of MPI_Pack_external's caller:
    // `pack`'s `# Safety`.
    unsafe { pack(call, datarep, inbuf, incount.into(), datatype, outbuf, outsize as i64, position.cast::<i64>()) }
}

forward! {
    pub unsafe extern "C" fn MPI_Pack_external_c(datarep: *const c_char, inbuf: *const c_void, incount: i64, datatype: Handle, outbuf: *mut c_void, outsize: i64, position: *mut i64) -> c_int = pack(datarep, inbuf, incount, datatype, outbuf, outsize, position);
    pub unsafe extern "C" fn MPI_Unpack_external_c(datarep: *const c_char, inbuf: *const c_void, insize: i64, position: *mut i64, outbuf: *mut c_void, outcount: i64, datatype: Handle) -> c_int = unpack(datarep, inbuf, insize, position, outbuf, outcount, datatype);
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Unpack_external(
    datarep: *const c_char,
    inbuf: *const c_void,
    insize: isize,
    position: *mut isize,
    outbuf: *mut c_void,
    outcount: c_int,
    datatype: Handle,
) -> c_int {
    let call = "MPI_Unpack_external";
    // SAFETY: `datarep` is a NUL-terminated string, `inbuf` has `insize` readable bytes, `position` points to one
    // readable and writable `MPI_Aint` (64 bits here, laid out as the `i64` it is cast to), and `outbuf` has room for
    // `outcount` elements of `datatype`, all for this call, as MPI 4.1 §5.2.3 requires of MPI_Unpack_external's caller:
    // `unpack`'s `# Safety`.
    unsafe { unpack(call, datarep, inbuf, insize as i64, position.cast::<i64>(), outbuf, outcount.into(), datatype) }
}
