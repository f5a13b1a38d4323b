//! Strings across the C boundary: names and texts the program passes in,
//! and the ones the library writes into the program's buffers (MPI 4.1
//! §7.8, §9.1.2: at most so many characters, NUL included).

use std::ffi::{c_char, c_int};

use crate::abi::*;
use crate::*;

/// Copy `s` into a C buffer of `max` bytes (NUL included) and its length into `len`.
///
/// # Safety
/// `out` is null or has room for `max` bytes; `len` is null or writable.
pub(crate) unsafe fn put_string(out: *mut c_char, len: *mut c_int, s: &str, max: c_int) -> R<()> {
    if out.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "the string buffer is a null pointer"));
    }
    let b = s.as_bytes();
    let n = b.len().min(max as usize - 1);
    // SAFETY: `out` is not null (checked above) and has room for `max` bytes, and `len` is null or writable for one
    // `int` (`put_string`'s `# Safety`); n + 1 <= `max`, so the copy and the NUL stay inside `out`; `put` refuses a
    // null `len`.
    unsafe {
        std::ptr::copy_nonoverlapping(b.as_ptr(), out.cast::<u8>(), n);
        out.add(n).write(0);
        put(len, n as c_int, "resultlen")
    }
}

/// An object name argument (`MPI_Comm_set_name`, ...), cut to
/// `MPI_MAX_OBJECT_NAME - 1` characters.
///
/// # Safety
/// `name` is null or a NUL-terminated string.
pub(crate) unsafe fn c_name(name: *const c_char) -> R<String> {
    if name.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "the name is a null pointer"));
    }
    // SAFETY: `name` is not null (checked above) and points at a NUL-terminated string (§7.8: the
    // caller's name argument).
    let name = unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy();
    Ok(name.chars().take(MPI_MAX_OBJECT_NAME as usize - 1).collect())
}

/// Write an object's name (`MPI_MAX_OBJECT_NAME` bytes at most).
///
/// # Safety
/// `out` has room for `MPI_MAX_OBJECT_NAME` bytes; `len` is writable.
pub(crate) unsafe fn put_name(name: &str, out: *mut c_char, len: *mut c_int) -> R<()> {
    // SAFETY: `out` has room for MPI_MAX_OBJECT_NAME bytes and `len` is writable (§7.8);
    // `put_string` refuses null pointers.
    unsafe { put_string(out, len, name, MPI_MAX_OBJECT_NAME) }
}
