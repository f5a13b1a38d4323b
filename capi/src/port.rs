//! Client/server connections (MPI 4.1 §11.10): the C arguments of
//! `mpi::port`'s ports, accept/connect, join and name service.

use std::ffi::{c_char, c_int};

use crate::abi::*;
use crate::*;

/// A string argument: `what` names it in errors.
///
/// # Safety
/// `p` is null or a NUL-terminated string.
pub(crate) unsafe fn str_arg(p: *const c_char, what: &str) -> R<String> {
    if p.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, format!("{what} is a null pointer")));
    }
    // SAFETY: `p` is not null (checked above) and is a NUL-terminated string readable for this call (`str_arg`'s
    // `# Safety`); it is copied out at once.
    Ok(unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// Copy a port's name into `out` (`MPI_MAX_PORT_NAME` bytes).
///
/// # Safety
/// `out` is null or has room for `MPI_MAX_PORT_NAME` bytes.
unsafe fn put_port(out: *mut c_char, name: &str) -> R<()> {
    if name.len() >= MPI_MAX_PORT_NAME as usize {
        return Err(Fail::new(MPI_ERR_INTERN, format!("port name {name:?} is longer than MPI_MAX_PORT_NAME")));
    }
    if out.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "port_name is a null pointer"));
    }
    // SAFETY: `out` has room for MPI_MAX_PORT_NAME bytes (the caller's
    // contract) and the name and its NUL fit in them (checked above).
    unsafe {
        std::ptr::copy_nonoverlapping(name.as_ptr(), out.cast::<u8>(), name.len());
        out.add(name.len()).write(0);
    }
    Ok(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Open_port(info: Handle, port_name: *mut c_char) -> c_int {
    with_state("MPI_Open_port", MPI_COMM_WORLD, |st| {
        st.info_or_null(info)?;
        let name = st.comm(MPI_COMM_WORLD)?.comm.open_port()?;
        // SAFETY: `port_name` has room for MPI_MAX_PORT_NAME characters, writable for this call, as MPI_Open_port's
        // caller must provide: `put_port`'s `# Safety` (it refuses null).
        unsafe { put_port(port_name, &name) }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Close_port(port_name: *const c_char) -> c_int {
    with_state("MPI_Close_port", MPI_COMM_WORLD, |st| {
        // SAFETY: `port_name` is MPI_Close_port's port name, a NUL-terminated string readable for this call, or null,
        // which `str_arg` refuses.
        let name = unsafe { str_arg(port_name, "port_name")? };
        Ok(st.comm(MPI_COMM_WORLD)?.comm.close_port(&name)?)
    })
}

/// Accept or connect: `port_name` is read at `root` only (§11.10.2).
///
/// # Safety
/// At `root`, `port_name` is null or a NUL-terminated string; `newcomm`
/// is null or writable.
unsafe fn meet(
    call: &str,
    accept: bool,
    port_name: *const c_char,
    info: Handle,
    root: c_int,
    comm: Handle,
    newcomm: *mut Handle,
) -> c_int {
    with_state(call, comm, |st| {
        let c = &st.comm(comm)?.comm;
        let port = if c.rank() == root {
            // SAFETY: at the root, `port_name` is null or a NUL-terminated string readable for this call (`meet`'s
            // `# Safety`: the standard makes it significant at the root only), and this branch runs only at the root;
            // `str_arg` refuses null.
            let checked = st.info_or_null(info).and_then(|_| unsafe { str_arg(port_name, "port_name") });
            match checked {
                Ok(p) => p,
                Err(f) => {
                    // The group is told, not left waiting for this root.
                    c.meet_refused(root, false)?;
                    return Err(f);
                }
            }
        } else {
            String::new()
        };
        let made = if accept { c.accept(&port, root)? } else { c.connect(&port, root)? };
        // Checked after the collective part, so that one rank's bad
        // argument does not leave the others waiting for it.
        if newcomm.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "newcomm is a null pointer"));
        }
        let h = crate::comm_table::register(st, Some(made), comm)?;
        // SAFETY: `newcomm` is not null (checked above) and valid for writing one handle for this call (`meet`'s
        // `# Safety`, the MPI call's out-argument).
        unsafe { put(newcomm, h, "newcomm") }
    })
}

forward! {
    pub unsafe extern "C" fn MPI_Comm_accept(port_name: *const c_char, info: Handle, root: c_int, comm: Handle, newcomm: *mut Handle) -> c_int = meet(true, port_name, info, root, comm, newcomm);
    pub unsafe extern "C" fn MPI_Comm_connect(port_name: *const c_char, info: Handle, root: c_int, comm: Handle, newcomm: *mut Handle) -> c_int = meet(false, port_name, info, root, comm, newcomm);
    pub unsafe extern "C" fn MPI_Publish_name(service_name: *const c_char, info: Handle, port_name: *const c_char) -> c_int = name_call(service_name, info, port_name, mpi::port::publish_name);
    pub unsafe extern "C" fn MPI_Unpublish_name(service_name: *const c_char, info: Handle, port_name: *const c_char) -> c_int = name_call(service_name, info, port_name, mpi::port::unpublish_name);
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_join(fd: c_int, intercomm: *mut Handle) -> c_int {
    with_state("MPI_Comm_join", MPI_COMM_WORLD, |st| {
        if intercomm.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "intercomm is a null pointer"));
        }
        let made = st.comm(MPI_COMM_WORLD)?.comm.join(fd)?;
        let h = crate::comm_table::register(st, Some(made), MPI_COMM_WORLD)?;
        // SAFETY: `intercomm` is not null (checked above) and is MPI_Comm_join's out-argument, valid for writing one
        // handle for this call.
        unsafe { put(intercomm, h, "intercomm") }
    })
}

/// `MPI_Publish_name` and `MPI_Unpublish_name`: `f` on the service and
/// the port.
///
/// # Safety
/// `service_name` and `port_name` are null or NUL-terminated strings.
unsafe fn name_call(
    call: &str,
    service_name: *const c_char,
    info: Handle,
    port_name: *const c_char,
    f: fn(&str, &str) -> mpi::Result<()>,
) -> c_int {
    with_state(call, MPI_COMM_WORLD, |st| {
        st.info_or_null(info)?;
        // SAFETY: `service_name` and `port_name` are null or NUL-terminated strings readable for this call
        // (`name_call`'s `# Safety`); `str_arg` refuses null, and both are copied out at once.
        let (service, port) = unsafe { (str_arg(service_name, "service_name")?, str_arg(port_name, "port_name")?) };
        Ok(f(&service, &port)?)
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Lookup_name(service_name: *const c_char, info: Handle, port_name: *mut c_char) -> c_int {
    with_state("MPI_Lookup_name", MPI_COMM_WORLD, |st| {
        st.info_or_null(info)?;
        // SAFETY: `service_name` is MPI_Lookup_name's service name, a NUL-terminated string readable for this call, or
        // null, which `str_arg` refuses.
        let service = unsafe { str_arg(service_name, "service_name")? };
        let port = mpi::port::lookup_name(&service)?;
        // SAFETY: `port_name` has room for MPI_MAX_PORT_NAME characters, writable for this call, as MPI_Lookup_name's
        // caller must provide: `put_port`'s `# Safety` (it refuses null).
        unsafe { put_port(port_name, &port) }
    })
}
