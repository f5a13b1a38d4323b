//! Handles as `int`s and back (`MPI_Comm_toint`, `MPI_Comm_fromint`, ...;
//! MPI 5.0's ABI chapter, where they replace the `_c2f`/`_f2c` pairs):
//! what a Fortran layer or a language binding stores in an `INTEGER`.
//!
//! A handle here is a small integer in a pointer: the predefined ones are
//! the ABI's constants (below `0x1000`), the ones the library makes count
//! up from `FIRST_HANDLE` by 16. Both fit an `int`, so the conversion is
//! the value itself and round-trips. The conversions need no state and
//! work before `MPI_Init` and after `MPI_Finalize`, as the standard asks
//! of them. A value that cannot be a handle (a negative `int`, or a
//! handle past `INT_MAX` after more than 10^8 creations) converts to the
//! kind's null handle, which every call then refuses by name.

use std::ffi::c_int;

use crate::abi::*;
use crate::Handle;

/// `h` as an `int`, or `null`'s when it does not fit.
fn to_int(h: Handle, null: Handle) -> c_int {
    c_int::try_from(h).unwrap_or(null as c_int)
}

/// The handle `i` stands for, or `null` for a value no handle has.
fn from_int(i: c_int, null: Handle) -> Handle {
    Handle::try_from(i).unwrap_or(null)
}

macro_rules! int_conversions {
    ($($to:ident / $from:ident: $null:ident;)*) => {$(
        #[no_mangle]
        pub extern "C" fn $to(handle: Handle) -> c_int {
            to_int(handle, $null)
        }

        #[no_mangle]
        pub extern "C" fn $from(handle: c_int) -> Handle {
            from_int(handle, $null)
        }
    )*};
}

int_conversions! {
    MPI_Comm_toint / MPI_Comm_fromint: MPI_COMM_NULL;
    MPI_Errhandler_toint / MPI_Errhandler_fromint: MPI_ERRHANDLER_NULL;
    MPI_File_toint / MPI_File_fromint: MPI_FILE_NULL;
    MPI_Group_toint / MPI_Group_fromint: MPI_GROUP_NULL;
    MPI_Info_toint / MPI_Info_fromint: MPI_INFO_NULL;
    MPI_Message_toint / MPI_Message_fromint: MPI_MESSAGE_NULL;
    MPI_Op_toint / MPI_Op_fromint: MPI_OP_NULL;
    MPI_Request_toint / MPI_Request_fromint: MPI_REQUEST_NULL;
    MPI_Session_toint / MPI_Session_fromint: MPI_SESSION_NULL;
    MPI_Type_toint / MPI_Type_fromint: MPI_DATATYPE_NULL;
    MPI_Win_toint / MPI_Win_fromint: MPI_WIN_NULL;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_round_trip_and_impossible_values_are_null() {
        for h in [MPI_COMM_WORLD, MPI_INT, crate::FIRST_HANDLE + 16 * 1000] {
            assert_eq!(MPI_Comm_fromint(MPI_Comm_toint(h)), h);
        }
        assert_eq!(MPI_Type_fromint(-5), MPI_DATATYPE_NULL);
        assert_eq!(MPI_Win_toint(usize::MAX), MPI_WIN_NULL as c_int);
    }
}
