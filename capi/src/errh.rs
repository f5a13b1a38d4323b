//! User error handlers and user error classes, codes and strings (MPI 4.1
//! §9.3, §9.5).
//!
//! A user handler is a C function `void f(MPI_Comm *, int *, ...)` (or
//! the window's, file's or session's form) registered under a new
//! `MPI_Errhandler`; it may be set only on the kind of object it was made
//! for. When a call fails on an object whose handler is a user's, the
//! function runs after the library's lock is released (it may call MPI),
//! with the object's handle and the error code, and the call then
//! returns the code (§9.3). A freed handler stays in force on the objects
//! that have it (§9.3.4) and can no longer be set. Handlers live apart
//! from the library's state: `MPI_Session_create_errhandler` comes before
//! `MPI_Session_init` (§11.4.1), and so may the others' creation.
//!
//! Error classes and codes a program adds (`MPI_Add_error_class`,
//! `_code`, `_string`, and MPI 4.1's `MPI_Remove_error_*`) count up from
//! `MPI_ERR_LASTCODE`; `MPI_LASTUSEDCODE` follows the largest. They are
//! kept apart from the library's state, since `MPI_Error_class` and
//! `MPI_Error_string` may be called at any time.

use std::ffi::{c_char, c_int};

use crate::abi::*;
use crate::process::{ErrFn, Handlers, Kind};
use crate::*;

/// User handler handles: `FIRST_HANDLE + 16 k + 10`: the low bits tell
/// them from the state's handles (0), communicators (5) and info objects
/// (9).
const HANDLER_MARK: Handle = 0xA;

/// Run `f` on the user handlers.
fn handlers<T>(f: impl FnOnce(&mut Handlers) -> T) -> T {
    let mut g = crate::process::process().handlers.lock();
    f(g.get_or_insert_with(Handlers::default))
}

/// `h` as `MPI_*_get_errhandler` hands it out: one more handle the
/// program must free, if it is a user's handler (§9.3).
pub(crate) fn handed_out(h: Handle) -> Handle {
    if !predefined(h) {
        handlers(|t| t.handed_out(h));
    }
    h
}

/// The predefined handlers, valid on every kind of object.
pub(crate) fn predefined(h: Handle) -> bool {
    [MPI_ERRORS_ARE_FATAL, MPI_ERRORS_RETURN, MPI_ERRORS_ABORT].contains(&h)
}

/// `h` may be set on an object of `kind`.
pub(crate) fn check(h: Handle, kind: Kind) -> R<()> {
    if predefined(h) {
        return Ok(());
    }
    Ok(handlers(|t| t.check(h, kind))?)
}

/// A program's handler function, as `mpi::errhandler::raise` runs it.
#[derive(Clone, Copy)]
pub(crate) struct UserFn(ErrFn);

impl mpi::errhandler::UserHandler for UserFn {
    fn run(&self, object: &mut usize, code: &mut i32) {
        // SAFETY: the function was registered by MPI_*_create_errhandler for the kind of object whose handler is
        // in force (`check` refuses it on any other), so it is of the MPI_*_errhandler_function type MPI 4.1 §9.3
        // gives that argument: a pointer to the object's handle, a pointer to the error code, then variadic
        // arguments, none of which this call passes; both pointers are to `raise`'s locals, valid for reads and
        // writes during the call.
        unsafe { (self.0)(object, code) };
    }
}

/// The handler in force on an object, as a failed call meets it.
pub(crate) type InForce = mpi::errhandler::InForce<UserFn>;

/// What handler `h` does with a failed call (§9.3).
pub(crate) fn in_force(h: Handle) -> InForce {
    match h {
        MPI_ERRORS_RETURN => InForce::Return,
        MPI_ERRORS_ARE_FATAL | MPI_ERRORS_ABORT => InForce::Fatal,
        _ => handlers(|t| t.func(h)).map_or(InForce::Fatal, |f| InForce::User(UserFn(f))),
    }
}

/// `MPI_*_call_errhandler` (§9.3): run the handler of `obj`, an object of
/// `kind`, on `errorcode`. Under `MPI_ERRORS_ARE_FATAL` or
/// `MPI_ERRORS_ABORT` the job ends; once `MPI_ERRORS_RETURN` or a user's
/// handler has run, the call returns `MPI_SUCCESS` (the handler was
/// called); an invalid `obj` is its own error.
fn call_errhandler(call: &str, kind: Kind, obj: Handle, errorcode: c_int) -> c_int {
    let mut handled = false;
    let rc = with_state(call, obj, |st| {
        let h = *st.errhandler_slot(kind, obj)?;
        handled = h == MPI_ERRORS_RETURN || !predefined(h);
        Err(Fail::new(errorcode, format!("the program raised error code {errorcode}")))
    });
    if handled {
        MPI_SUCCESS
    } else {
        rc
    }
}

impl State {
    /// The error handler set on `obj`, an object of `kind` (§9.3): a
    /// communicator's (also while an `MPI_Comm_idup` makes it), a
    /// window's, a file's (`MPI_FILE_NULL`'s: the one new files get,
    /// §14.7), a session's.
    fn errhandler_slot(&mut self, kind: Kind, obj: Handle) -> R<&mut Handle> {
        Ok(match kind {
            Kind::Comm => &mut self.comm_handle_mut(obj)?.errhandler,
            Kind::Win => &mut self.win_mut(obj)?.errhandler,
            Kind::File if obj == MPI_FILE_NULL => &mut self.file_errhandler,
            Kind::File => match self.files.get_mut(&obj) {
                Some(f) => &mut f.errhandler,
                None => return Err(Fail::new(MPI_ERR_FILE, format!("{obj:#x} is not an open file"))),
            },
            Kind::Session => &mut self.session_mut(obj)?.errhandler,
        })
    }
}

/// `MPI_*_set_errhandler` (§9.3): `errhandler`, which must be predefined
/// or made for `kind`, on `obj`.
fn set_errhandler(call: &str, kind: Kind, obj: Handle, errhandler: Handle) -> c_int {
    with_state(call, obj, |st| {
        st.errhandler_slot(kind, obj)?;
        check(errhandler, kind)?;
        *st.errhandler_slot(kind, obj)? = errhandler;
        Ok(())
    })
}

/// `MPI_*_get_errhandler` (§9.3): the handler of `obj`, one more handle
/// for the program to free if it is a user's ([`handed_out`]).
///
/// # Safety
/// `out` is null or valid for writing one handle for the call.
unsafe fn get_errhandler(call: &str, kind: Kind, obj: Handle, out: *mut Handle) -> c_int {
    with_state(call, obj, |st| {
        let h = handed_out(*st.errhandler_slot(kind, obj)?);
        // SAFETY: `out` is null or valid for writing one handle for this call (`get_errhandler`'s `# Safety`); `put`
        // refuses null.
        unsafe { put(out, h, "errhandler") }
    })
}

forward! {
    pub extern "C" fn MPI_Comm_set_errhandler(comm: Handle, errhandler: Handle) -> c_int = set_errhandler(Kind::Comm, comm, errhandler);
    pub extern "C" fn MPI_Win_set_errhandler(win: Handle, errhandler: Handle) -> c_int = set_errhandler(Kind::Win, win, errhandler);
    pub extern "C" fn MPI_File_set_errhandler(file: Handle, errhandler: Handle) -> c_int = set_errhandler(Kind::File, file, errhandler);
    pub extern "C" fn MPI_Session_set_errhandler(session: Handle, errhandler: Handle) -> c_int = set_errhandler(Kind::Session, session, errhandler);
    pub extern "C" fn MPI_Comm_call_errhandler(comm: Handle, errorcode: c_int) -> c_int = call_errhandler(Kind::Comm, comm, errorcode);
    pub extern "C" fn MPI_Win_call_errhandler(win: Handle, errorcode: c_int) -> c_int = call_errhandler(Kind::Win, win, errorcode);
    pub extern "C" fn MPI_File_call_errhandler(fh: Handle, errorcode: c_int) -> c_int = call_errhandler(Kind::File, fh, errorcode);
    pub extern "C" fn MPI_Session_call_errhandler(session: Handle, errorcode: c_int) -> c_int = call_errhandler(Kind::Session, session, errorcode);
}

forward! {
    pub unsafe extern "C" fn MPI_Comm_get_errhandler(comm: Handle, errhandler: *mut Handle) -> c_int = get_errhandler(Kind::Comm, comm, errhandler);
    pub unsafe extern "C" fn MPI_Win_get_errhandler(win: Handle, errhandler: *mut Handle) -> c_int = get_errhandler(Kind::Win, win, errhandler);
    pub unsafe extern "C" fn MPI_File_get_errhandler(file: Handle, errhandler: *mut Handle) -> c_int = get_errhandler(Kind::File, file, errhandler);
    pub unsafe extern "C" fn MPI_Session_get_errhandler(session: Handle, errhandler: *mut Handle) -> c_int = get_errhandler(Kind::Session, session, errhandler);
    pub unsafe extern "C" fn MPI_Comm_create_errhandler(comm_errhandler_fn: usize, errhandler: *mut Handle) -> c_int = create(Kind::Comm, comm_errhandler_fn, errhandler);
    pub unsafe extern "C" fn MPI_Win_create_errhandler(win_errhandler_fn: usize, errhandler: *mut Handle) -> c_int = create(Kind::Win, win_errhandler_fn, errhandler);
    pub unsafe extern "C" fn MPI_File_create_errhandler(file_errhandler_fn: usize, errhandler: *mut Handle) -> c_int = create(Kind::File, file_errhandler_fn, errhandler);
    pub unsafe extern "C" fn MPI_Session_create_errhandler(session_errhandler_fn: usize, errhandler: *mut Handle) -> c_int = create(Kind::Session, session_errhandler_fn, errhandler);
}

/// Register a user handler of `kind` for `func` and hand out its handle.
///
/// # Safety
/// `out` is null or writable; `func` is null or a handler function of
/// the kind's C type.
unsafe fn create(call: &str, kind: Kind, func: usize, out: *mut Handle) -> c_int {
    crate::stateless_call(call, || {
        if func == 0 {
            return Err(Fail::new(MPI_ERR_ARG, "the error handler function is a null pointer"));
        }
        // SAFETY: `func` is not 0 (checked above) and is a handler function of `kind`'s C type (`create`'s `# Safety`:
        // the program passed a function of the type MPI 4.1 §9.3 gives the MPI_*_create_errhandler argument); a
        // function pointer and a `usize` have the same size here.
        let func: ErrFn = unsafe { std::mem::transmute::<usize, ErrFn>(func) };
        if out.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "errhandler is a null pointer"));
        }
        let h = handlers(|t| t.create(kind, func, |made| FIRST_HANDLE + (made << 4) + HANDLER_MARK));
        // SAFETY: `out` is not null (checked above) and valid for writing one handle for this call (`create`'s
        // `# Safety`: the MPI call's `errhandler` out-argument).
        unsafe { out.write(h) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Errhandler_free(errhandler: *mut Handle) -> c_int {
    crate::stateless_call("MPI_Errhandler_free", || {
        // SAFETY: `errhandler` is MPI_Errhandler_free's in/out handle argument (MPI 4.1 §9.3.5), null or readable and
        // writable for one handle for this call; `read_arg` refuses null.
        let h = unsafe { read_arg(errhandler, "errhandler")? };
        // A predefined handler only resets the caller's handle; a user's
        // stays in force where it is set (§9.3.4).
        if !predefined(h) {
            handlers(|t| t.free(h))?;
        }
        // SAFETY: `errhandler` is writable (§9.3.4); `put` refuses null.
        unsafe { put(errhandler, MPI_ERRHANDLER_NULL, "errhandler") }
    })
}

// ---- user error classes, codes and strings (§9.5) ---------------------------

/// The class of `code`: a predefined class is its own, an added code
/// has the class it was added to; `None` for a value that is neither.
pub(crate) fn class_of(code: c_int) -> Option<c_int> {
    added().class_of(code)
}

/// The string an added code or class was given (empty when none was).
pub(crate) fn added_string(code: c_int) -> Option<String> {
    added().string(code).map(str::to_string)
}

/// The largest error code in use (the `MPI_LASTUSEDCODE` attribute).
pub(crate) fn last_used() -> c_int {
    added().last_used()
}

fn added() -> parking_lot::MappedMutexGuard<'static, mpi::error_codes::ErrorCodes> {
    parking_lot::MutexGuard::map(crate::process::process().added.lock(), |a| &mut a.0)
}

impl From<mpi::errhandler::ErrhandlerError> for Fail {
    fn from(e: mpi::errhandler::ErrhandlerError) -> Fail {
        Fail::new(MPI_ERR_ERRHANDLER, e.to_string())
    }
}

impl From<mpi::error_codes::ErrorCodeError> for Fail {
    fn from(e: mpi::error_codes::ErrorCodeError) -> Fail {
        Fail::new(MPI_ERR_ARG, e.to_string())
    }
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Add_error_class(errorclass: *mut c_int) -> c_int {
    with_state("MPI_Add_error_class", MPI_COMM_WORLD, |_| {
        if errorclass.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "errorclass is a null pointer"));
        }
        let v = added().add_class()?;
        // SAFETY: `errorclass` is not null (checked above) and is MPI_Add_error_class's out-argument (MPI 4.1 §9.5),
        // valid for writing one `int` for this call.
        unsafe { errorclass.write(v) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Add_error_code(errorclass: c_int, errorcode: *mut c_int) -> c_int {
    with_state("MPI_Add_error_code", MPI_COMM_WORLD, |_| {
        if errorcode.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "errorcode is a null pointer"));
        }
        let v = added().add_code(errorclass)?;
        // SAFETY: `errorcode` is not null (checked above) and is MPI_Add_error_code's out-argument (MPI 4.1 §9.5),
        // valid for writing one `int` for this call.
        unsafe { errorcode.write(v) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn MPI_Add_error_string(errorcode: c_int, string: *const c_char) -> c_int {
    with_state("MPI_Add_error_string", MPI_COMM_WORLD, |_| {
        if string.is_null() {
            return Err(Fail::new(MPI_ERR_ARG, "string is a null pointer"));
        }
        // SAFETY: `string` is not null (checked above) and is MPI_Add_error_string's string (MPI 4.1 §9.5),
        // NUL-terminated and readable for this call; it is copied out at once.
        let s = unsafe { std::ffi::CStr::from_ptr(string) }.to_string_lossy();
        Ok(added().set_string(errorcode, &s)?)
    })
}

#[no_mangle]
pub extern "C" fn MPI_Remove_error_class(errorclass: c_int) -> c_int {
    with_state("MPI_Remove_error_class", MPI_COMM_WORLD, |_| Ok(added().remove(errorclass, true)?))
}

#[no_mangle]
pub extern "C" fn MPI_Remove_error_code(errorcode: c_int) -> c_int {
    with_state("MPI_Remove_error_code", MPI_COMM_WORLD, |_| Ok(added().remove(errorcode, false)?))
}

#[no_mangle]
pub extern "C" fn MPI_Remove_error_string(errorcode: c_int) -> c_int {
    with_state("MPI_Remove_error_string", MPI_COMM_WORLD, |_| Ok(added().remove_string(errorcode)?))
}
