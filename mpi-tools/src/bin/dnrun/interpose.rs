//! The libc functions `dnrun` answers for the ranks it hosts as contexts
//! (`--rank-mode contexts`; `mpi_tools::contexts::emulate` says what each
//! does for a rank). They are defined here, in the executable, and exported
//! (`build.rs`), so that the dynamic loader binds the ranks' programs and
//! their MPI library to them before libc's. While no rank runs (and always
//! on `dnrun`'s other threads) each does exactly what libc's does.

use std::ffi::{c_int, c_void, CStr};

use std::ffi::c_char;

use mpi_tools::contexts::emulate::{
    rank_at_exit, rank_clearenv, rank_exit, rank_output, rank_putenv, rank_setenv, rank_unsetenv, ExitFn,
};

/// The libc definition of `name`, past the executable's own.
fn real(name: &CStr) -> *mut c_void {
    // SAFETY: dlsym with RTLD_NEXT and a NUL-terminated name only reads
    // the loaded objects' symbol tables.
    unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) }
}

fn exit_group(code: c_int) -> ! {
    // SAFETY: the system call ends the process; it touches no memory.
    unsafe { libc::syscall(libc::SYS_exit_group, code) };
    unreachable!("exit_group returned")
}

/// C's `exit`.
///
/// # Safety
/// As C's `exit`.
#[no_mangle]
pub unsafe extern "C" fn exit(code: c_int) -> ! {
    rank_exit(code, false);
    let f = real(c"exit");
    if f.is_null() {
        exit_group(code);
    }
    // SAFETY: libc's `exit`, whose signature this is.
    let f: unsafe extern "C" fn(c_int) -> ! = unsafe { std::mem::transmute(f) };
    // SAFETY: as C's exit.
    unsafe { f(code) }
}

/// C's `_exit`.
///
/// # Safety
/// As C's `_exit`.
#[no_mangle]
pub unsafe extern "C" fn _exit(code: c_int) -> ! {
    rank_exit(code, true);
    exit_group(code)
}

/// C's `_Exit`, the same as `_exit`.
///
/// # Safety
/// As C's `_Exit`.
#[no_mangle]
pub unsafe extern "C" fn _Exit(code: c_int) -> ! {
    rank_exit(code, true);
    exit_group(code)
}

/// The C++ ABI's `__cxa_atexit`, behind C's `atexit` too.
///
/// # Safety
/// As the Itanium C++ ABI's `__cxa_atexit`.
#[no_mangle]
pub unsafe extern "C" fn __cxa_atexit(f: ExitFn, arg: *mut c_void, dso: *mut c_void) -> c_int {
    if rank_at_exit(f, arg) {
        return 0;
    }
    let real = real(c"__cxa_atexit");
    if real.is_null() {
        return -1;
    }
    type Real = unsafe extern "C" fn(ExitFn, *mut c_void, *mut c_void) -> c_int;
    // SAFETY: libc's `__cxa_atexit`, whose signature this is.
    let real: Real = unsafe { std::mem::transmute::<*mut c_void, Real>(real) };
    // SAFETY: as the caller's contract.
    unsafe { real(f, arg, dso) }
}

/// C's `write`.
///
/// # Safety
/// As C's `write`: `buf` is readable for `n` bytes.
#[no_mangle]
pub unsafe extern "C" fn write(fd: c_int, buf: *const c_void, n: usize) -> isize {
    if n > 0 && !buf.is_null() {
        // SAFETY: the caller's contract.
        if rank_output(fd, unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), n) }) {
            return n as isize;
        }
    }
    // SAFETY: the write system call with the caller's arguments.
    unsafe { libc::syscall(libc::SYS_write, fd, buf, n) as isize }
}

/// C's `writev`.
///
/// # Safety
/// As C's `writev`: `iov` holds `n` readable buffers.
#[no_mangle]
pub unsafe extern "C" fn writev(fd: c_int, iov: *const libc::iovec, n: c_int) -> isize {
    if (fd == 1 || fd == 2) && n > 0 && !iov.is_null() && mpi_tools::contexts::emulate::rank_running() {
        // SAFETY: the caller's contract.
        let parts = unsafe { std::slice::from_raw_parts(iov, n as usize) };
        let mut all = Vec::new();
        for p in parts.iter().filter(|p| !p.iov_base.is_null()) {
            // SAFETY: the caller's contract on each buffer.
            all.extend_from_slice(unsafe { std::slice::from_raw_parts(p.iov_base.cast::<u8>(), p.iov_len) });
        }
        if rank_output(fd, &all) {
            return all.len() as isize;
        }
    }
    // SAFETY: the writev system call with the caller's arguments.
    unsafe { libc::syscall(libc::SYS_writev, fd, iov, n) as isize }
}

/// libc's `name`, of type `F`, or `None`.
fn real_fn<F: Copy>(name: &CStr) -> Option<F> {
    let f = real(name);
    // SAFETY: `F` is the function pointer type of libc's `name` (each
    // caller names its own function's type); a non-null symbol address is
    // that function.
    (!f.is_null()).then(|| unsafe { std::mem::transmute_copy::<*mut c_void, F>(&f) })
}

/// C's `setenv`.
///
/// # Safety
/// As C's `setenv`.
#[no_mangle]
pub unsafe extern "C" fn setenv(name: *const c_char, value: *const c_char, replace: c_int) -> c_int {
    // SAFETY: the caller's contract.
    if let Some(rc) = unsafe { rank_setenv(name, value, replace != 0) } {
        return rc;
    }
    type F = unsafe extern "C" fn(*const c_char, *const c_char, c_int) -> c_int;
    // SAFETY: libc's setenv with the caller's arguments.
    real_fn::<F>(c"setenv").map_or(-1, |f| unsafe { f(name, value, replace) })
}

/// C's `unsetenv`.
///
/// # Safety
/// As C's `unsetenv`.
#[no_mangle]
pub unsafe extern "C" fn unsetenv(name: *const c_char) -> c_int {
    // SAFETY: the caller's contract.
    if let Some(rc) = unsafe { rank_unsetenv(name) } {
        return rc;
    }
    type F = unsafe extern "C" fn(*const c_char) -> c_int;
    // SAFETY: libc's unsetenv with the caller's argument.
    real_fn::<F>(c"unsetenv").map_or(-1, |f| unsafe { f(name) })
}

/// C's `putenv`.
///
/// # Safety
/// As C's `putenv`.
#[no_mangle]
pub unsafe extern "C" fn putenv(entry: *mut c_char) -> c_int {
    // SAFETY: the caller's contract.
    if let Some(rc) = unsafe { rank_putenv(entry) } {
        return rc;
    }
    type F = unsafe extern "C" fn(*mut c_char) -> c_int;
    // SAFETY: libc's putenv with the caller's argument.
    real_fn::<F>(c"putenv").map_or(-1, |f| unsafe { f(entry) })
}

/// C's `clearenv`.
///
/// # Safety
/// As C's `clearenv`.
#[no_mangle]
pub unsafe extern "C" fn clearenv() -> c_int {
    if let Some(rc) = rank_clearenv() {
        return rc;
    }
    type F = unsafe extern "C" fn() -> c_int;
    // SAFETY: libc's clearenv.
    real_fn::<F>(c"clearenv").map_or(-1, |f| unsafe { f() })
}

/// Keep every function above in the executable (the linker would drop what
/// nothing references before it is exported): `main` calls this once.
pub fn keep() -> [usize; 11] {
    [
        setenv as *const () as usize,
        unsetenv as *const () as usize,
        putenv as *const () as usize,
        clearenv as *const () as usize,
        exit as *const () as usize,
        _exit as *const () as usize,
        _Exit as *const () as usize,
        __cxa_atexit as *const () as usize,
        write as *const () as usize,
        writev as *const () as usize,
        mpi_tools::contexts::host_table_address(),
    ]
}
