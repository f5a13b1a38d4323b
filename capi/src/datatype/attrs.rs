//! Attributes on datatypes (MPI 4.1 §5.1.15): set, get and delete, with
//! the keyvals and callbacks of `crate::attr` (one space of keyvals for
//! every kind of object).

use std::ffi::{c_int, c_void};

use crate::abi::*;
use crate::attr::delete_attr;
use crate::*;

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_set_attr(datatype: Handle, type_keyval: c_int, attribute_val: *mut c_void) -> c_int {
    with_state("MPI_Type_set_attr", MPI_COMM_WORLD, |st| {
        st.layout(datatype)?;
        st.settable_keyval(type_keyval)?;
        // A value already set is deleted first (§5.1.15, as §7.7.2).
        if let Some(old) = st.type_attrs.entry(datatype).or_default().set(type_keyval, attribute_val) {
            delete_attr(st, datatype, type_keyval, old)?;
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_get_attr(
    datatype: Handle,
    type_keyval: c_int,
    attribute_val: *mut c_void,
    flag: *mut c_int,
) -> c_int {
    with_state("MPI_Type_get_attr", MPI_COMM_WORLD, |st| {
        st.layout(datatype)?;
        st.keyval_of(type_keyval)?;
        let v = st.type_attrs.get(&datatype).and_then(|a| a.get(type_keyval)).copied();
        // SAFETY: `attribute_val` is MPI_Type_get_attr's out-argument, declared `void *` but defined by MPI 4.1 §7.7.4
        // as the address of one writable `void *`, and `flag` points to one writable `int`, both for this call; `put`
        // refuses null.
        unsafe {
            if let Some(v) = v {
                put(attribute_val.cast::<*mut c_void>(), v, "attribute_val")?;
            }
            put(flag, v.is_some() as c_int, "flag")
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Type_delete_attr(datatype: Handle, type_keyval: c_int) -> c_int {
    with_state("MPI_Type_delete_attr", MPI_COMM_WORLD, |st| {
        st.layout(datatype)?;
        st.keyval_of(type_keyval)?;
        let Some(v) = st.type_attrs.get_mut(&datatype).and_then(|a| a.remove(type_keyval)) else {
            return Err(Fail::new(
                MPI_ERR_KEYVAL,
                format!("keyval {type_keyval} is not set on datatype {datatype:#x}"),
            ));
        };
        delete_attr(st, datatype, type_keyval, v)?;
        st.sweep_keyvals();
        Ok(())
    })
}
