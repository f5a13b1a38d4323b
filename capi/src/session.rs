//! Sessions (MPI 4.1 §11.3): a process may use MPI without `MPI_Init`,
//! through sessions it opens and closes, each with its error handler and
//! hints, from which it gets groups of processes ("process sets") and
//! makes communicators (`MPI_Comm_create_from_group`).
//!
//! - **One library state.** The first of `MPI_Init` and
//!   `MPI_Session_init` makes it; the others share it. `MPI_Finalize`
//!   ends it when no session is open, and the last `MPI_Session_finalize`
//!   after `MPI_Finalize`; after that it cannot start again. A program
//!   that never calls `MPI_Init` may finalize its last session and open
//!   new ones (§11.3.1): the state stays, idle, and ends when the process
//!   exits (an `atexit` handler does what `MPI_Finalize` would).
//! - **Two process sets.** `mpi://WORLD` (every process of the job) and
//!   `mpi://SELF` (this one); their names compare without regard to case.
//! - **Errors.** A session's calls report through its handler, one
//!   `MPI_Session_create_errhandler` made (before `MPI_Session_init` if
//!   the program likes) or a predefined one.
//! - **Buffers.** `MPI_Session_attach_buffer` gives buffered sends on the
//!   communicators made from the session's groups a buffer of their own
//!   (`crate::bsend`).

use std::ffi::{c_char, c_int, CStr};

use mpi::session::{ProcessSet, ThreadLevel};

use crate::abi::*;
use crate::process::Kind;
use crate::*;

/// The process set named by C string `name` (`mpi::session::ProcessSet`).
///
/// # Safety
/// `name` is null or a C string.
unsafe fn pset(name: *const c_char) -> R<ProcessSet> {
    if name.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "pset_name is a null pointer"));
    }
    // SAFETY: `name` is not null (checked above) and is a NUL-terminated string readable for this call (`pset`'s
    // `# Safety`); it is copied out at once.
    Ok(ProcessSet::named(&unsafe { CStr::from_ptr(name) }.to_string_lossy())?)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_init(info: Handle, errhandler: Handle, session: *mut Handle) -> c_int {
    let opened = (|| -> R<c_int> {
        crate::errh::check(errhandler, Kind::Session)?;
        let pairs = if info == MPI_INFO_NULL { mpi::info::Info::new() } else { crate::info::get(info)? };
        if session.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "session is a null pointer"));
        }
        crate::env::init(ThreadLevel::asked_by(&pairs)?.code(), true)
    })();
    if let Err(f) = opened {
        return report_without_state("MPI_Session_init", f);
    }
    with_state("MPI_Session_init", MPI_COMM_WORLD, |st| {
        let mut pairs = if info == MPI_INFO_NULL { mpi::info::Info::new() } else { crate::info::get(info)? };
        pairs
            .set("thread_level", crate::process::process().life.thread_level().unwrap_or(ThreadLevel::Single).name())?;
        let h = st.new_handle();
        st.sessions.insert(h, SessionEntry { errhandler, info: pairs, buffered: Default::default() });
        // SAFETY: `session` is not null (checked before the state was made, the same pointer) and is MPI_Session_init's
        // out-argument (MPI 4.1 §11.3.1), valid for writing one handle for this call.
        unsafe { session.write(h) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_finalize(session: *mut Handle) -> c_int {
    let mut last = None;
    let rc = with_state("MPI_Session_finalize", MPI_COMM_WORLD, |st| {
        // SAFETY: `session` is MPI_Session_finalize's in/out handle argument (MPI 4.1 §11.3.1), null or readable and
        // writable for one handle for this call; `read_arg` refuses null.
        let h = unsafe { read_arg(session, "session")? };
        let mut e = st.sessions.remove(&h).ok_or_else(|| not_session(h))?;
        // Buffered messages still in the session's buffer go out first.
        e.buffered.flush()?;
        // SAFETY: readable above, and writable (INOUT).
        unsafe { session.write(MPI_SESSION_NULL) };
        last = Some(crate::process::process().life.ends_without(!st.sessions.is_empty()));
        Ok(())
    });
    if rc != MPI_SUCCESS || last != Some(true) {
        return rc;
    }
    // The last user of the library. Without the world model ever, a new
    // session may come: the state stays until the process exits.
    if !crate::process::process().life.initialized() {
        end_at_exit();
        return MPI_SUCCESS;
    }
    let taken = {
        let mut g = lock();
        let ends = g.as_ref().is_some_and(|st| crate::process::process().life.ends_without(!st.sessions.is_empty()));
        if ends {
            g.take()
        } else {
            None
        }
    };
    match taken {
        Some(st) => crate::env::teardown(st, "MPI_Session_finalize"),
        None => MPI_SUCCESS,
    }
}

/// End the library when the process exits, if no model uses it then
/// (registered once).
fn end_at_exit() {
    extern "C" fn at_exit() {
        let taken = {
            let mut g = lock();
            let idle =
                g.as_ref().is_some_and(|st| crate::process::process().life.ends_without(!st.sessions.is_empty()));
            if idle {
                g.take()
            } else {
                None
            }
        };
        if let Some(st) = taken {
            crate::env::teardown(st, "the exit after MPI_Session_finalize");
        }
    }
    crate::process::process().at_exit.call_once(|| {
        // SAFETY: `at_exit` is an `extern "C" fn()` that lives as long as
        // the program (the library is never unloaded while it runs). In a
        // host of ranks it runs when this rank ends, as this rank.
        unsafe { libc::atexit(at_exit) };
    });
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_num_psets(session: Handle, info: Handle, npset_names: *mut c_int) -> c_int {
    with_state("MPI_Session_get_num_psets", session, |st| {
        st.session(session)?;
        st.info_or_null(info)?;
        // SAFETY: `npset_names` is MPI_Session_get_num_psets' out-argument (MPI 4.1 §11.3.2), null or valid for writing
        // one `int` for this call; `put` refuses null.
        unsafe { put(npset_names, ProcessSet::ALL.len() as c_int, "npset_names") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_nth_pset(
    session: Handle,
    info: Handle,
    n: c_int,
    pset_len: *mut c_int,
    pset_name: *mut c_char,
) -> c_int {
    with_state("MPI_Session_get_nth_pset", session, |st| {
        st.session(session)?;
        st.info_or_null(info)?;
        let name = ProcessSet::nth(n)?.name();
        // SAFETY: `pset_len` is MPI_Session_get_nth_pset's in/out argument (MPI 4.1 §11.3.2), null or readable and
        // writable for one `int` for this call; `read_arg` refuses null.
        let room = unsafe { read_arg(pset_len, "pset_len")? };
        let need = name.len() as c_int + 1;
        // A length of 0 asks for the length needed, NUL included
        // (§11.3.2); otherwise the name is cut to the room given.
        if room > 0 {
            let mut written = 0;
            // SAFETY: `pset_name` has room for `room` (> 0) characters, writable for this call, as MPI 4.1 §11.3.2
            // requires of MPI_Session_get_nth_pset's caller when `*pset_len` is not 0, and `written` is a local:
            // `put_string`'s `# Safety` (it refuses a null `pset_name`).
            unsafe { crate::strings::put_string(pset_name, &mut written, name, room)? };
        }
        // SAFETY: readable above, and writable (INOUT).
        unsafe { pset_len.write(need) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_pset_info(
    session: Handle,
    pset_name: *const c_char,
    info: *mut Handle,
) -> c_int {
    with_state("MPI_Session_get_pset_info", session, |st| {
        st.session(session)?;
        // SAFETY: `pset_name` is MPI_Session_get_pset_info's process set name (MPI 4.1 §11.3.2), a NUL-terminated
        // string readable for this call, or null, which `pset` refuses.
        let pairs = unsafe { pset(pset_name)? }.info(&st.comm(MPI_COMM_WORLD)?.comm)?;
        // SAFETY: `info` is MPI_Session_get_pset_info's out-argument, null or valid for writing one info handle for
        // this call; `hand_out` refuses null.
        unsafe { crate::info::hand_out(pairs, info, "info") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Session_get_info(session: Handle, info_used: *mut Handle) -> c_int {
    with_state("MPI_Session_get_info", session, |st| {
        let pairs = st.session(session)?.info.clone();
        // SAFETY: `info_used` is MPI_Session_get_info's out-argument, null or valid for writing one info handle for
        // this call; `hand_out` refuses null.
        unsafe { crate::info::hand_out(pairs, info_used, "info_used") }
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Group_from_session_pset(
    session: Handle,
    pset_name: *const c_char,
    newgroup: *mut Handle,
) -> c_int {
    with_state("MPI_Group_from_session_pset", session, |st| {
        st.session(session)?;
        // SAFETY: `pset_name` is MPI_Group_from_session_pset's process set name (MPI 4.1 §11.3.2), a NUL-terminated
        // string readable for this call, or null, which `pset` refuses.
        let g = unsafe { pset(pset_name)? }.group(&st.comm(MPI_COMM_WORLD)?.comm);
        // SAFETY: `newgroup` is MPI_Group_from_session_pset's out-argument, null or valid for writing one group handle
        // for this call; `new_group` refuses null.
        unsafe { st.new_group(g, newgroup)? };
        // SAFETY: written just above.
        let h = unsafe { newgroup.read() };
        st.session_groups.insert(h, session);
        Ok(())
    })
}
