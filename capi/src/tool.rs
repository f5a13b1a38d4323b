//! The MPI tool information interface (MPI 4.1 chapter 15) with no
//! variables: the standard lets an implementation export none (§15.3.5
//! "the number of ... may be zero"), and a tool written against it must
//! cope. So `MPI_T_init_thread` works before and after `MPI_Init` and
//! nests, every count is zero, a performance-variable session can be made
//! and freed, and every query about a variable, category, enumeration,
//! event or source is the error class for an index or handle that names
//! nothing. The tool interface returns its error codes directly: no error
//! handler applies to it (§15.3.10).
//!
//! No variable is exported yet: the simulator's figures (simulated time
//! per call, the device's cycle counts) would be the natural performance
//! variables, and are work left.

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::Ordering;

use crate::abi::*;
use crate::process::Tool;
use crate::Handle;

fn tool() -> &'static Tool {
    &crate::process::process().tool
}

fn open() -> bool {
    tool().open.load(Ordering::SeqCst) > 0
}

/// Write `v` through `p` if it is not null.
///
/// # Safety
/// `p` is null or writable.
unsafe fn out<T>(p: *mut T, v: T) -> c_int {
    if p.is_null() {
        return MPI_T_ERR_INVALID;
    }
    // SAFETY: `p` is not null (checked above) and valid for writing one `T` for this call (`out`'s `# Safety`, from the
    // MPI_T call's out-argument).
    unsafe { p.write(v) };
    MPI_SUCCESS
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_init_thread(required: c_int, provided: *mut c_int) -> c_int {
    let level = required.clamp(MPI_THREAD_SINGLE, MPI_THREAD_MULTIPLE);
    // SAFETY: `provided` is MPI_T_init_thread's out-argument, null or valid for writing one `int` for this call; `out`
    // refuses null.
    let rc = unsafe { out(provided, level) };
    if rc == MPI_SUCCESS {
        tool().open.fetch_add(1, Ordering::SeqCst);
    }
    rc
}

#[no_mangle]
pub extern "C" fn MPI_T_finalize() -> c_int {
    match tool().open.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| (n > 0).then(|| n - 1)) {
        Ok(_) => MPI_SUCCESS,
        Err(_) => MPI_T_ERR_NOT_INITIALIZED,
    }
}

/// The counts: zero of each, once the interface is open.
macro_rules! none_of {
    ($(pub unsafe extern "C" fn $name:ident(num: *mut c_int) -> c_int;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(num: *mut c_int) -> c_int {
            if !open() {
                return MPI_T_ERR_NOT_INITIALIZED;
            }
            // SAFETY: `num` is the MPI_T call's out-argument, null or valid for writing one `int` for this call; `out`
            // refuses null.
            unsafe { out(num, 0) }
        }
    )*};
}

none_of! {
    pub unsafe extern "C" fn MPI_T_cvar_get_num(num: *mut c_int) -> c_int;
    pub unsafe extern "C" fn MPI_T_pvar_get_num(num: *mut c_int) -> c_int;
    pub unsafe extern "C" fn MPI_T_category_get_num(num: *mut c_int) -> c_int;
    pub unsafe extern "C" fn MPI_T_event_get_num(num: *mut c_int) -> c_int;
    pub unsafe extern "C" fn MPI_T_source_get_num(num: *mut c_int) -> c_int;
    pub unsafe extern "C" fn MPI_T_category_changed(num: *mut c_int) -> c_int;
}

/// Calls that name a variable, category, enumeration, event or source,
/// none of which exists: `$class` once the interface is open.
macro_rules! names_nothing {
    ($class:ident: $(pub unsafe extern "C" fn $name:ident($($arg:ident: $ty:ty),*) -> c_int;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            $(let _ = $arg;)*
            if !open() {
                return MPI_T_ERR_NOT_INITIALIZED;
            }
            $class
        }
    )*};
}

names_nothing! {
    MPI_T_ERR_INVALID_NAME:
    pub unsafe extern "C" fn MPI_T_category_get_index(name: *const c_char, cat_index: *mut c_int) -> c_int;
    pub unsafe extern "C" fn MPI_T_cvar_get_index(name: *const c_char, cvar_index: *mut c_int) -> c_int;
    pub unsafe extern "C" fn MPI_T_event_get_index(name: *const c_char, event_index: *mut c_int) -> c_int;
    pub unsafe extern "C" fn MPI_T_pvar_get_index(name: *const c_char, var_class: c_int, pvar_index: *mut c_int) -> c_int;
}

names_nothing! {
    MPI_T_ERR_INVALID_INDEX:
    pub unsafe extern "C" fn MPI_T_category_get_categories(cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int;
    pub unsafe extern "C" fn MPI_T_category_get_cvars(cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int;
    pub unsafe extern "C" fn MPI_T_category_get_events(cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int;
    pub unsafe extern "C" fn MPI_T_category_get_pvars(cat_index: c_int, len: c_int, indices: *mut c_int) -> c_int;
    pub unsafe extern "C" fn MPI_T_category_get_info(cat_index: c_int, name: *mut c_char, name_len: *mut c_int, desc: *mut c_char, desc_len: *mut c_int, num_cvars: *mut c_int, num_pvars: *mut c_int, num_categories: *mut c_int) -> c_int;
    pub unsafe extern "C" fn MPI_T_category_get_num_events(cat_index: c_int, num_events: *mut c_int) -> c_int;
    pub unsafe extern "C" fn MPI_T_cvar_get_info(cvar_index: c_int, name: *mut c_char, name_len: *mut c_int, verbosity: *mut c_int, datatype: *mut Handle, enumtype: *mut Handle, desc: *mut c_char, desc_len: *mut c_int, bind: *mut c_int, scope: *mut c_int) -> c_int;
    pub unsafe extern "C" fn MPI_T_cvar_handle_alloc(cvar_index: c_int, obj_handle: *mut c_void, handle: *mut Handle, count: *mut c_int) -> c_int;
    pub unsafe extern "C" fn MPI_T_event_get_info(event_index: c_int, name: *mut c_char, name_len: *mut c_int, verbosity: *mut c_int, array_of_datatypes: *mut Handle, array_of_displacements: *mut isize, num_elements: *mut c_int, enumtype: *mut Handle, info: *mut Handle, desc: *mut c_char, desc_len: *mut c_int, bind: *mut c_int) -> c_int;
    pub unsafe extern "C" fn MPI_T_event_handle_alloc(event_index: c_int, obj_handle: *mut c_void, info: Handle, event_registration: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_T_pvar_get_info(pvar_index: c_int, name: *mut c_char, name_len: *mut c_int, verbosity: *mut c_int, var_class: *mut c_int, datatype: *mut Handle, enumtype: *mut Handle, desc: *mut c_char, desc_len: *mut c_int, bind: *mut c_int, readonly: *mut c_int, continuous: *mut c_int, atomic: *mut c_int) -> c_int;
    pub unsafe extern "C" fn MPI_T_source_get_info(source_index: c_int, name: *mut c_char, name_len: *mut c_int, desc: *mut c_char, desc_len: *mut c_int, ordering: *mut c_int, ticks_per_second: *mut i64, max_ticks: *mut i64, info: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_T_source_get_timestamp(source_index: c_int, timestamp: *mut i64) -> c_int;
}

names_nothing! {
    MPI_T_ERR_INVALID_HANDLE:
    pub unsafe extern "C" fn MPI_T_cvar_handle_free(handle: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_T_cvar_read(handle: Handle, buf: *mut c_void) -> c_int;
    pub unsafe extern "C" fn MPI_T_cvar_write(handle: Handle, buf: *const c_void) -> c_int;
    pub unsafe extern "C" fn MPI_T_enum_get_info(enumtype: Handle, num: *mut c_int, name: *mut c_char, name_len: *mut c_int) -> c_int;
    pub unsafe extern "C" fn MPI_T_enum_get_item(enumtype: Handle, indx: c_int, value: *mut c_int, name: *mut c_char, name_len: *mut c_int) -> c_int;
    pub unsafe extern "C" fn MPI_T_event_callback_get_info(event_registration: Handle, cb_safety: c_int, info_used: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_T_event_callback_set_info(event_registration: Handle, cb_safety: c_int, info: Handle) -> c_int;
    pub unsafe extern "C" fn MPI_T_event_copy(event_instance: Handle, buffer: *mut c_void) -> c_int;
    pub unsafe extern "C" fn MPI_T_event_get_source(event_instance: Handle, source_index: *mut c_int) -> c_int;
    pub unsafe extern "C" fn MPI_T_event_get_timestamp(event_instance: Handle, event_timestamp: *mut i64) -> c_int;
    pub unsafe extern "C" fn MPI_T_event_handle_free(event_registration: Handle, user_data: *mut c_void, free_cb_function: usize) -> c_int;
    pub unsafe extern "C" fn MPI_T_event_handle_get_info(event_registration: Handle, info_used: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_T_event_handle_set_info(event_registration: Handle, info: Handle) -> c_int;
    pub unsafe extern "C" fn MPI_T_event_read(event_instance: Handle, element_index: c_int, buffer: *mut c_void) -> c_int;
    pub unsafe extern "C" fn MPI_T_event_register_callback(event_registration: Handle, cb_safety: c_int, info: Handle, user_data: *mut c_void, event_cb_function: usize) -> c_int;
    pub unsafe extern "C" fn MPI_T_event_set_dropped_handler(event_registration: Handle, dropped_cb_function: usize) -> c_int;
}

/// A session handle made by `MPI_T_pvar_session_create`, not yet freed.
fn is_session(s: Handle) -> bool {
    s != 0 && s < tool().next_session.load(Ordering::SeqCst)
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_session_create(session: *mut Handle) -> c_int {
    if !open() {
        return MPI_T_ERR_NOT_INITIALIZED;
    }
    let s = tool().next_session.fetch_add(1, Ordering::SeqCst);
    // SAFETY: `session` is MPI_T_pvar_session_create's out-argument, null or valid for writing one handle for this
    // call; `out` refuses null.
    unsafe { out(session, s) }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_session_free(session: *mut Handle) -> c_int {
    if !open() {
        return MPI_T_ERR_NOT_INITIALIZED;
    }
    if session.is_null() {
        return MPI_T_ERR_INVALID;
    }
    // SAFETY: `session` is not null (checked above) and is MPI_T_pvar_session_free's in/out handle argument, readable
    // and writable for one handle for this call.
    if !is_session(unsafe { session.read() }) {
        return MPI_T_ERR_INVALID_SESSION;
    }
    // SAFETY: `session` is not null (checked above) and, as MPI_T_pvar_session_free's in/out handle argument, writable
    // for one handle for this call: `out`'s `# Safety`.
    unsafe { out(session, 0) }
}

/// Calls on a performance-variable handle within a session: the session
/// may exist, the handle cannot.
macro_rules! no_handle_in {
    ($(pub unsafe extern "C" fn $name:ident(session: Handle, $($arg:ident: $ty:ty),*) -> c_int;)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name(session: Handle, $($arg: $ty),*) -> c_int {
            $(let _ = $arg;)*
            if !open() {
                return MPI_T_ERR_NOT_INITIALIZED;
            }
            if !is_session(session) {
                return MPI_T_ERR_INVALID_SESSION;
            }
            MPI_T_ERR_INVALID_HANDLE
        }
    )*};
}

no_handle_in! {
    pub unsafe extern "C" fn MPI_T_pvar_handle_free(session: Handle, handle: *mut Handle) -> c_int;
    pub unsafe extern "C" fn MPI_T_pvar_read(session: Handle, handle: Handle, buf: *mut c_void) -> c_int;
    pub unsafe extern "C" fn MPI_T_pvar_readreset(session: Handle, handle: Handle, buf: *mut c_void) -> c_int;
    pub unsafe extern "C" fn MPI_T_pvar_reset(session: Handle, handle: Handle) -> c_int;
    pub unsafe extern "C" fn MPI_T_pvar_start(session: Handle, handle: Handle) -> c_int;
    pub unsafe extern "C" fn MPI_T_pvar_stop(session: Handle, handle: Handle) -> c_int;
    pub unsafe extern "C" fn MPI_T_pvar_write(session: Handle, handle: Handle, buf: *const c_void) -> c_int;
}

#[no_mangle]
pub unsafe extern "C" fn MPI_T_pvar_handle_alloc(
    session: Handle,
    pvar_index: c_int,
    obj_handle: *mut c_void,
    handle: *mut Handle,
    count: *mut c_int,
) -> c_int {
    let _ = (pvar_index, obj_handle, handle, count);
    if !open() {
        return MPI_T_ERR_NOT_INITIALIZED;
    }
    if !is_session(session) {
        return MPI_T_ERR_INVALID_SESSION;
    }
    MPI_T_ERR_INVALID_INDEX
}
