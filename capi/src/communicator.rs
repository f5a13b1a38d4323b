//! Communicator management (MPI 4.1 §7.4): size and rank, duplication
//! (blocking, with info, non-blocking), freeing and disconnecting, names
//! (§7.8), the parent of a spawned process (§11.8.2), and a communicator's
//! error handler (§9.3.1). `MPI_Comm_split` and the other calls that make
//! communicators from groups are in `crate::group`.

use std::ffi::{c_char, c_int};

use crate::abi::*;
use crate::comm_table::{register, ParentHandle};
use crate::strings::{c_name, put_name};
use crate::*;

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_rank(comm: Handle, rank: *mut c_int) -> c_int {
    with_state("MPI_Comm_rank", comm, |st| {
        let r = st.comm(comm)?.comm.rank();
        // SAFETY: `rank` is MPI_Comm_rank's out-argument (MPI 4.1 §7.4.1), null or valid for writing one `int` for this
        // call; `put` refuses null.
        unsafe { put(rank, r, "rank") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_size(comm: Handle, size: *mut c_int) -> c_int {
    with_state("MPI_Comm_size", comm, |st| {
        let n = st.comm(comm)?.comm.size();
        // SAFETY: `size` is MPI_Comm_size's out-argument (MPI 4.1 §7.4.1), null or valid for writing one `int` for this
        // call; `put` refuses null.
        unsafe { put(size, n, "size") }
    })
}

forward! {
    pub unsafe extern "C" fn MPI_Comm_dup(comm: Handle, newcomm: *mut Handle) -> c_int = dup_by_idup(comm, None, newcomm);
    pub unsafe extern "C" fn MPI_Comm_idup(comm: Handle, newcomm: *mut Handle, request: *mut Handle) -> c_int = idup(comm, None, newcomm, request);
    pub unsafe extern "C" fn MPI_Comm_idup_with_info(comm: Handle, info: Handle, newcomm: *mut Handle, request: *mut Handle) -> c_int = idup(comm, Some(info), newcomm, request);
    pub unsafe extern "C" fn MPI_Comm_dup_with_info(comm: Handle, info: Handle, newcomm: *mut Handle) -> c_int = dup_by_idup(comm, Some(info), newcomm);
}

/// `MPI_Comm_dup` and `MPI_Comm_dup_with_info`, at every thread level: an
/// idup, then a wait for it, which under `MPI_THREAD_MULTIPLE` lets other
/// threads in (`crate::threads`). The blocking form's agreement on a
/// context id would hold the library until every member has answered, so
/// threads duplicating different communicators in different orders on
/// different processes (MPICH's threads/comm tests) would wait for ever;
/// an idup agrees on nothing. It is the form at every level because the
/// two do not meet: processes of one job may ask for different thread
/// levels (§11.2.1), and a duplicate made by agreement on some and by
/// idup on others hung (issue 47, break 8).
///
/// # Safety
/// `newcomm` is null or writable.
pub(crate) unsafe fn dup_by_idup(call: &str, comm: Handle, info: Option<Handle>, newcomm: *mut Handle) -> c_int {
    let mut r = MPI_REQUEST_NULL;
    // SAFETY: `newcomm` is null or valid for writing one handle for this call (`dup_by_idup`'s `# Safety`), and `r` is
    // a local handle, writable: what `idup` requires.
    let rc = unsafe { idup(call, comm, info, newcomm, &mut r) };
    if rc != MPI_SUCCESS {
        // An attribute's copy callback runs after the idup has started
        // (its failure is the call's error, and the duplicate is gone):
        // the other members take part in the duplication all the same, so
        // it is completed here rather than left active for ever.
        if r != MPI_REQUEST_NULL {
            // SAFETY: `r` is a local handle, valid for reading and writing for this call.
            let _ = unsafe { crate::p2p::wait_request(call, comm, &mut r) };
        }
        return rc;
    }
    // SAFETY: `r` is a local.
    unsafe { crate::p2p::wait_request(call, comm, &mut r) }
}

/// `MPI_Comm_idup` and `MPI_Comm_idup_with_info` (§7.4.2; `info`'s hints,
/// `MPI_INFO_NULL` for none, replace the original's). The duplicate's
/// handle goes to `newcomm` at the call, with the original's attributes
/// (copied now, through their callbacks), error handler and hints; it
/// names a usable communicator once the request completes
/// ([`settle_idup`]), whose context id comes from the leader without an
/// agreement (`mpi::dup`), so idups never wait for each other.
///
/// # Safety
/// `newcomm` and `request` are null or writable.
unsafe fn idup(call: &str, comm: Handle, info: Option<Handle>, newcomm: *mut Handle, request: *mut Handle) -> c_int {
    with_state(call, comm, |st| {
        if request.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "request is a null pointer"));
        }
        if newcomm.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "newcomm is a null pointer"));
        }
        let pairs = match info {
            Some(i) => st.info_or_null(i)?,
            None => st.comm(comm)?.info.clone(),
        };
        let (op, cell) = st.comm(comm)?.comm.immediate_duplicate()?.into_parts();
        // Registered on the original for now: the handle is unusable
        // (`State::comm`) until the duplicate replaces it.
        let placeholder = st.comm(comm)?.comm.clone();
        let h = register(st, Some(placeholder), comm)?;
        crate::attr::copy_all(st, comm, h, newcomm)?;
        if let Some(e) = st.comms.get_mut(&h) {
            e.info = pairs;
            e.pending = Some(cell);
        }
        // SAFETY: `newcomm` is not null (checked above) and valid for writing one handle for this call (`idup`'s
        // `# Safety`, from MPI_Comm_idup's or MPI_Comm_dup's caller).
        unsafe { newcomm.write(h) };
        // SAFETY: `request` is not null (checked above) and valid for writing one handle for this call (`idup`'s
        // `# Safety`): what `new_request` requires.
        unsafe { crate::new_request(st, Req::Op(op), request) }?;
        // SAFETY: `request` is not null (checked above) and points to memory valid for one handle for this call
        // (`idup`'s `# Safety`), which `new_request` has just written, so the read sees an initialised handle.
        let r = unsafe { request.read() };
        st.idups.push((r, h));
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_free(comm: *mut Handle) -> c_int {
    if comm.is_null() {
        return with_state("MPI_Comm_free", MPI_COMM_WORLD, |_| Err(Fail::new(MPI_ERR_ARG, "comm is a null pointer")));
    }
    // SAFETY: `comm` is not null (checked above) and is MPI_Comm_free's in/out handle argument (MPI 4.1 §7.4.3),
    // readable and writable for one handle for this call.
    let h = unsafe { comm.read() };
    with_state("MPI_Comm_free", h, |st| {
        if h == MPI_COMM_WORLD || h == MPI_COMM_SELF {
            return Err(Fail::new(MPI_ERR_COMM, "MPI_COMM_WORLD and MPI_COMM_SELF cannot be freed"));
        }
        st.comm(h)?;
        // Attributes are deleted first, through their delete callbacks
        // (§7.7.2); the handle stays valid for them.
        crate::attr::delete_all(st, h)?;
        st.deferred.push(crate::attr::Deferred::Then(Box::new(move |st| crate::comm_table::free(st, h))));
        // SAFETY: `comm` was read above, so it is not null; the standard makes it writable
        // (§7.4.3).
        unsafe { comm.write(MPI_COMM_NULL) };
        Ok(())
    })
}

/// `MPI_Comm_get_parent` (§11.8.2): the intercommunicator with the
/// processes that spawned this one (one handle, registered at the first
/// call: a program may free it, and then gets `MPI_COMM_NULL`, as the
/// standard has it), or `MPI_COMM_NULL` for a process not spawned.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_parent(parent: *mut Handle) -> c_int {
    with_state("MPI_Comm_get_parent", MPI_COMM_WORLD, |st| {
        let h = match st.parent {
            ParentHandle::Unasked => match st.universe.parent() {
                Some(c) => {
                    let h = register(st, Some(c), MPI_COMM_WORLD)?;
                    // Its name (§7.8).
                    st.comm_mut(h)?.name = "MPI_COMM_PARENT".into();
                    st.parent = ParentHandle::Registered(h);
                    h
                }
                None => {
                    st.parent = ParentHandle::Freed;
                    MPI_COMM_NULL
                }
            },
            ParentHandle::Registered(h) => h,
            ParentHandle::Freed => MPI_COMM_NULL,
        };
        // SAFETY: `parent` is MPI_Comm_get_parent's out-argument (MPI 4.1 §11.8.2), null or valid for writing one
        // handle for this call; `put` refuses null.
        unsafe { put(parent, h, "parent") }
    })
}

/// `MPI_Comm_disconnect` (§11.10.4): the communication on `comm` ends,
/// then it is freed. Every rank of it takes part (the standard makes the
/// call collective); the barrier is where the others' pending sends to
/// this one have been matched, since a rank enters it only after its own
/// calls on `comm` returned.
#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_disconnect(comm: *mut Handle) -> c_int {
    if comm.is_null() {
        return with_state("MPI_Comm_disconnect", MPI_COMM_WORLD, |_| {
            Err(Fail::new(MPI_ERR_ARG, "comm is a null pointer"))
        });
    }
    // SAFETY: `comm` is not null (checked above) and is MPI_Comm_disconnect's in/out handle argument (MPI 4.1
    // §11.10.4), readable and writable for one handle for this call.
    let h = unsafe { comm.read() };
    if h == MPI_COMM_WORLD || h == MPI_COMM_SELF {
        return with_state("MPI_Comm_disconnect", h, |_| {
            Err(Fail::new(MPI_ERR_COMM, "MPI_COMM_WORLD and MPI_COMM_SELF cannot be disconnected"))
        });
    }
    let rc = crate::coll::MPI_Barrier(h);
    if rc != MPI_SUCCESS {
        return rc;
    }
    // SAFETY: `comm` is not null (checked above) and readable and writable for one handle for this call
    // (MPI_Comm_disconnect's in/out argument), which is what MPI_Comm_free's argument must be.
    unsafe { MPI_Comm_free(comm) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_set_name(comm: Handle, comm_name: *const c_char) -> c_int {
    with_state("MPI_Comm_set_name", comm, |st| {
        // SAFETY: `comm_name` is MPI_Comm_set_name's name argument (MPI 4.1 §7.8), a NUL-terminated string readable for
        // this call, or null, which `c_name` refuses.
        let name = unsafe { c_name(comm_name)? };
        st.comm_handle_mut(comm)?.name = name;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Comm_get_name(comm: Handle, comm_name: *mut c_char, resultlen: *mut c_int) -> c_int {
    with_state("MPI_Comm_get_name", comm, |st| {
        // The null handle has a name too, as the null datatype does.
        let name = if comm == MPI_COMM_NULL { "MPI_COMM_NULL".to_string() } else { st.comm_handle(comm)?.name.clone() };
        // SAFETY: `comm_name` has room for MPI_MAX_OBJECT_NAME characters and `resultlen` for one `int`, for this call,
        // as MPI 4.1 §7.8 requires of MPI_Comm_get_name's caller: `put_name`'s `# Safety` (null is refused).
        unsafe { put_name(&name, comm_name, resultlen) }
    })
}
