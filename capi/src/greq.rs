//! Generalized requests (MPI 4.1 §13.2): a request the program completes
//! itself, with `MPI_Grequest_complete`, and that the completion calls
//! report like any other through the program's callbacks.
//!
//! - `query_fn(extra_state, status)` fills the status when a completion
//!   call (`MPI_Wait`, `MPI_Test`, ..., and `MPI_Request_get_status`)
//!   reports the request complete; its return value is the call's error.
//! - `free_fn(extra_state)` runs when the request is freed: by the
//!   completion call that reports it, after `query_fn`, or by
//!   `MPI_Request_free` (once the request is complete, §13.2: at
//!   `MPI_Grequest_complete` if that comes later).
//! - `cancel_fn(extra_state, complete)` runs on `MPI_Cancel`, with whether
//!   `MPI_Grequest_complete` has run.
//!
//! Where each request stands, and which callback is due when, is
//! `mpi::greq::Table`'s; this module runs the callbacks, once the call
//! has released the library's lock ([`crate::attr::Deferred`]): they call
//! MPI themselves (`MPI_Status_set_elements`, `MPI_Status_set_cancelled`).
//!
//! A wait that only the completion of a generalized request not yet
//! complete could end waits for another thread's `MPI_Grequest_complete`
//! under `MPI_THREAD_MULTIPLE` (`crate::threads`). Below it, or when the
//! process has no other thread, nobody can call it while this thread
//! waits: the wait fails instead of waiting for ever
//! (`mpi::request::settle_shared`).

use std::ffi::{c_int, c_void};

use crate::abi::*;
use crate::*;

/// `MPI_Grequest_query_function`.
type QueryFn = unsafe extern "C" fn(*mut c_void, *mut MpiStatus) -> c_int;
/// `MPI_Grequest_free_function`.
type FreeFn = unsafe extern "C" fn(*mut c_void) -> c_int;
/// `MPI_Grequest_cancel_function`.
type CancelFn = unsafe extern "C" fn(*mut c_void, c_int) -> c_int;

/// A generalized request's callbacks (`mpi::greq::Table` keeps where it
/// stands).
#[derive(Clone, Copy)]
pub(crate) struct Greq {
    query: QueryFn,
    free: FreeFn,
    cancel: CancelFn,
    extra: *mut c_void,
}

/// A callback to run once the call has released the lock.
pub(crate) enum Callback {
    /// Report the request complete: `query_fn` fills the status at `out`
    /// (null: `MPI_STATUS_IGNORE`; the function gets one of its own), then
    /// `free_fn` runs if `free`. `in_array`: the call reports on an array
    /// of requests, whose failure is `MPI_ERR_IN_STATUS` with the code in
    /// the status.
    Report { query: QueryFn, free: Option<FreeFn>, extra: *mut c_void, out: *mut MpiStatus, in_array: bool },
    /// `free_fn` alone (`MPI_Request_free`).
    Free { free: FreeFn, extra: *mut c_void },
    /// `cancel_fn`.
    Cancel { cancel: CancelFn, extra: *mut c_void, complete: bool },
}

impl Callback {
    /// Run it (no lock held).
    pub(crate) fn run(self) -> R<()> {
        match self {
            Callback::Report { query, free, extra, out, in_array } => {
                let mut own = MpiStatus::empty();
                let at = if out.is_null() { &mut own as *mut MpiStatus } else { out };
                // SAFETY: `query` is the function the program passed to MPI_Grequest_start as its `query_fn`, of the
                // MPI_Grequest_query_function type MPI 4.1 §13.2 gives it, called with that signature, its
                // `extra_state` and a status: `at` is the completion call's status (valid for that call, within which
                // this deferred callback runs) or the local `own`.
                let rc = unsafe { query(extra, at) };
                // SAFETY: `f` is the function the program passed to MPI_Grequest_start as its `free_fn`, of the
                // MPI_Grequest_free_function type MPI 4.1 §13.2 gives it, called with that signature and its
                // `extra_state`.
                let freed = free.map_or(MPI_SUCCESS, |f| unsafe { f(extra) });
                let (rc, which) = if rc != MPI_SUCCESS { (rc, "query_fn") } else { (freed, "free_fn") };
                if rc == MPI_SUCCESS {
                    return Ok(());
                }
                let msg = format!("the generalized request's {which} returned {rc}");
                if in_array {
                    if !out.is_null() {
                        // SAFETY: `out` is not null (checked above) and is the completion call's status array entry,
                        // writable for that call, within which this deferred callback runs.
                        unsafe { (*out).error = rc };
                    }
                    return Err(Fail::new(MPI_ERR_IN_STATUS, msg));
                }
                Err(Fail::new(rc, msg))
            }
            Callback::Free { free, extra } => {
                // SAFETY: the program registered `free` as an
                // `MPI_Grequest_free_function`.
                let rc = unsafe { free(extra) };
                match rc {
                    MPI_SUCCESS => Ok(()),
                    _ => Err(Fail::new(rc, format!("the generalized request's free_fn returned {rc}"))),
                }
            }
            Callback::Cancel { cancel, extra, complete } => {
                // SAFETY: the program registered `cancel` as an
                // `MPI_Grequest_cancel_function`.
                let rc = unsafe { cancel(extra, complete as c_int) };
                match rc {
                    MPI_SUCCESS => Ok(()),
                    _ => Err(Fail::new(rc, format!("the generalized request's cancel_fn returned {rc}"))),
                }
            }
        }
    }
}

/// Run `callback` once the call has released the lock.
fn defer(st: &mut State, callback: Callback) {
    st.deferred.push(attr::Deferred::Callback(Box::new(move || callback.run())));
}

/// Report generalized request `g`, complete, as complete: `query_fn`
/// fills in the status at `out` (null: `MPI_STATUS_IGNORE`), then
/// `free_fn` runs if the call `frees` it (`MPI_Wait`, ..., not
/// `MPI_Request_get_status`). `in_array`: the call reports on an array
/// of requests. Until then, the call writes the empty status returned.
pub(crate) fn report(st: &mut State, g: Greq, out: *mut MpiStatus, in_array: bool, frees: bool) -> MpiStatus {
    let (query, extra) = (g.query, g.extra);
    defer(st, Callback::Report { query, free: frees.then_some(g.free), extra, out, in_array });
    MpiStatus::empty()
}

/// Run generalized request `g`'s `free_fn` (`MPI_Request_free` of it,
/// complete, or its completion after `MPI_Request_free`).
pub(crate) fn free(st: &mut State, g: Greq) {
    defer(st, Callback::Free { free: g.free, extra: g.extra });
}

/// `MPI_Cancel` of `h`, if it is a generalized request: `cancel_fn` runs.
/// The request must still be completed (§13.2).
pub(crate) fn cancel(st: &mut State, h: Handle) -> Option<()> {
    let (g, complete) = st.requests.generalized().cancel(h)?;
    defer(st, Callback::Cancel { cancel: g.cancel, extra: g.extra, complete });
    Some(())
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Grequest_start(
    query_fn: Option<QueryFn>,
    free_fn: Option<FreeFn>,
    cancel_fn: Option<CancelFn>,
    extra_state: *mut c_void,
    request: *mut Handle,
) -> c_int {
    with_state("MPI_Grequest_start", MPI_COMM_WORLD, |st| {
        let (Some(query), Some(free), Some(cancel)) = (query_fn, free_fn, cancel_fn) else {
            return Err(Fail::new(MPI_ERR_ARG, "query_fn, free_fn and cancel_fn must all be functions, not null"));
        };
        if request.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "request is a null pointer"));
        }
        let h = st.new_handle();
        st.requests.generalized().start(h, Greq { query, free, cancel, extra: extra_state });
        // SAFETY: `request` is not null (checked above) and is MPI_Grequest_start's out-argument (MPI 4.1 §13.2), valid
        // for writing one handle for this call.
        unsafe { request.write(h) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Grequest_complete(request: Handle) -> c_int {
    with_state("MPI_Grequest_complete", MPI_COMM_WORLD, |st| {
        if let Some(g) = st.requests.generalized().complete(request)? {
            free(st, g);
        }
        Ok(())
    })
}
