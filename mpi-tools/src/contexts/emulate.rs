//! What a process gives a program for free and a context must emulate
//! (issue 46). The libc functions whose meaning is "this process" are
//! defined in `dnrun`'s executable (`src/bin/dnrun/interpose.rs`), so that
//! the dynamic loader binds the ranks' calls (and their MPI library's) to
//! them before libc's; what they do for a rank is here:
//!
//! * `exit`, `_exit`, `_Exit` ([`rank_exit`]): a rank's exit ends that
//!   rank only (its exit handlers run first, for `exit`), with its code;
//!   `MPI_Abort` is an exit with the abort's code, which the host turns
//!   into the end of the job, as `dnrun` does for processes.
//! * `__cxa_atexit`, behind C's `atexit` and C++'s static destructors
//!   ([`rank_at_exit`]): a rank's handlers are its own and run when it ends.
//! * `setenv`, `unsetenv`, `putenv`, `clearenv` ([`rank_setenv`] and its
//!   siblings): each rank has an environment of its own (the host switches
//!   `environ` with the rank), which glibc's functions cannot keep apart
//!   (they grow the one array they last made, another rank's).
//! * `write`, `writev` on descriptors 1 and 2 ([`rank_output`]), and C's
//!   `stdout`/`stderr` ([`route_stdio`]: unbuffered streams that write
//!   through the same path): a rank's output is its own, a line at a time,
//!   with `[rank] ` in front under `-l`, as `dnrun` passes on a process's
//!   output.
//! * Faults (`SIGSEGV`, `SIGBUS`, `SIGFPE`, `SIGILL`, `SIGABRT`, `SIGTRAP`,
//!   `SIGSYS`) on a rank's stack end that rank's context (corosensei's trap
//!   return), naming the rank and the signal, a stack overflow as such
//!   ([`catch_faults`]).
//!
//! On any thread other than the host's, or while no rank runs, each
//! answers "not a rank" and the caller does what libc does: `dnrun`'s own
//! calls are unchanged.

use std::ffi::{c_char, c_int, c_void};

use super::host::{self, Ended};

pub use super::host::ExitFn;

/// Whether this thread is running a rank now (the host's thread, inside a
/// rank's context).
pub fn rank_running() -> bool {
    host::current().is_some()
}

/// A rank's `exit` (`quick`: `_exit`, without its exit handlers): ends
/// the running rank and never returns; `false` when no rank runs (the
/// caller exits the process).
pub fn rank_exit(code: c_int, quick: bool) -> bool {
    if host::current().is_none() {
        return false;
    }
    host::ending(quick);
    host::exit_rank(code)
}

/// Register an exit handler for the running rank; `false` when no rank
/// runs (the caller registers it with libc).
pub fn rank_at_exit(f: ExitFn, arg: *mut c_void) -> bool {
    host::current().is_some() && host::with(|h| h.at_exit(f, arg)) == Some(true)
}

/// The running rank's output of `data` on `fd` (1 or 2); `false` when no
/// rank runs, or for another descriptor (the caller writes it).
pub fn rank_output(fd: c_int, data: &[u8]) -> bool {
    if fd != 1 && fd != 2 {
        return false;
    }
    let Some(r) = host::current() else { return false };
    host::with(|h| h.output(r, (fd - 1) as usize, data, false)).is_some()
}

/// A rank's `setenv(name, value, replace)`: `Some(result)`, or `None` when
/// no rank runs (the caller calls libc's).
///
/// # Safety
/// `name` and `value` are NUL-terminated strings (or null, an error).
pub unsafe fn rank_setenv(name: *const c_char, value: *const c_char, replace: bool) -> Option<c_int> {
    host::current()?;
    // SAFETY: the caller's contract.
    let Some(name) = (unsafe { env_name(name) }) else { return Some(invalid()) };
    if value.is_null() {
        return Some(invalid());
    }
    // SAFETY: the caller's contract.
    let value = unsafe { std::ffi::CStr::from_ptr(value) }.to_bytes();
    host::with(|h| h.set_env(name, host::EnvChange::Set { value, replace })).flatten().map(|()| 0)
}

/// A rank's `unsetenv(name)` (see [`rank_setenv`]).
///
/// # Safety
/// `name` is a NUL-terminated string (or null, an error).
pub unsafe fn rank_unsetenv(name: *const c_char) -> Option<c_int> {
    host::current()?;
    // SAFETY: the caller's contract.
    let Some(name) = (unsafe { env_name(name) }) else { return Some(invalid()) };
    host::with(|h| h.set_env(name, host::EnvChange::Unset)).flatten().map(|()| 0)
}

/// A rank's `putenv(entry)` (see [`rank_setenv`]): `NAME=VALUE` becomes part
/// of its environment; `NAME` alone removes it.
///
/// # Safety
/// `entry` is a NUL-terminated string that lives as long as the rank (or null).
pub unsafe fn rank_putenv(entry: *mut c_char) -> Option<c_int> {
    host::current()?;
    if entry.is_null() {
        return Some(invalid());
    }
    // SAFETY: the caller's contract.
    let b = unsafe { std::ffi::CStr::from_ptr(entry) }.to_bytes();
    let change = match b.iter().position(|c| *c == b'=') {
        Some(i) => (b[..i].to_vec(), host::EnvChange::Put(entry)),
        None => (b.to_vec(), host::EnvChange::Unset),
    };
    host::with(|h| h.set_env(&change.0, change.1)).flatten().map(|()| 0)
}

/// A rank's `clearenv()` (see [`rank_setenv`]).
pub fn rank_clearenv() -> Option<c_int> {
    host::current()?;
    host::with(|h| h.set_env(b"", host::EnvChange::Clear)).flatten().map(|()| 0)
}

/// A variable's name, as `setenv` takes it: not empty, no `=`.
///
/// # Safety
/// `name` is null or a NUL-terminated string.
unsafe fn env_name<'a>(name: *const c_char) -> Option<&'a [u8]> {
    if name.is_null() {
        return None;
    }
    // SAFETY: the caller's contract.
    let b = unsafe { std::ffi::CStr::from_ptr(name) }.to_bytes();
    (!b.is_empty() && !b.contains(&b'=')).then_some(b)
}

/// `EINVAL`, as `setenv` reports a bad name.
fn invalid() -> c_int {
    // SAFETY: this thread's errno.
    unsafe { *libc::__errno_location() = libc::EINVAL };
    -1
}

/// Write `n` bytes at `buf` as `write(fd, ...)` would from the running
/// rank (or, with none, to the descriptor).
///
/// # Safety
/// `buf` is readable for `n` bytes.
unsafe fn output(fd: c_int, buf: *const c_void, n: usize) -> isize {
    if n > 0 && !buf.is_null() {
        // SAFETY: the caller's contract.
        let data = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), n) };
        if rank_output(fd, data) {
            return n as isize;
        }
    }
    // SAFETY: the write system call with the caller's arguments.
    unsafe { libc::syscall(libc::SYS_write, fd, buf, n) as isize }
}

// ---- C's stdout and stderr -------------------------------------------------

#[repr(C)]
struct CookieIo {
    read: Option<unsafe extern "C" fn(*mut c_void, *mut c_char, usize) -> isize>,
    write: Option<unsafe extern "C" fn(*mut c_void, *const c_char, usize) -> isize>,
    seek: Option<unsafe extern "C" fn(*mut c_void, *mut i64, c_int) -> c_int>,
    close: Option<unsafe extern "C" fn(*mut c_void) -> c_int>,
}

extern "C" {
    fn fopencookie(cookie: *mut c_void, mode: *const c_char, io: CookieIo) -> *mut libc::FILE;
    static mut stdout: *mut libc::FILE;
    static mut stderr: *mut libc::FILE;
}

unsafe extern "C" fn cookie_write(cookie: *mut c_void, buf: *const c_char, n: usize) -> isize {
    // SAFETY: stdio hands the cookie's write function `n` readable bytes.
    unsafe { output(cookie as usize as c_int, buf.cast(), n) }
}

/// Make C's `stdout` and `stderr` unbuffered streams that write through
/// [`write`], so that what a rank prints with stdio (C's `printf`, C++'s
/// `std::cout`, which is bound to `stdout`) is that rank's, a line at a
/// time. Unbuffered: a stream shared by every rank must hold nothing of
/// one rank's when another runs (the line assembly is per rank).
pub(crate) fn route_stdio() -> std::io::Result<()> {
    for fd in [1usize, 2] {
        let io = CookieIo { read: None, write: Some(cookie_write), seek: None, close: None };
        // SAFETY: fopencookie copies `io`; the cookie is a plain number.
        let f = unsafe { fopencookie(fd as *mut c_void, c"w".as_ptr(), io) };
        if f.is_null() {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `f` is a fresh stream; setvbuf before any output on it.
        unsafe { libc::setvbuf(f, std::ptr::null_mut(), libc::_IONBF, 0) };
        // SAFETY: replacing the process's stdio streams on the host thread
        // before any rank runs; the old ones stay open (they are the
        // descriptors' own), only unused.
        unsafe {
            if fd == 1 {
                libc::fflush(stdout);
                stdout = f;
            } else {
                libc::fflush(stderr);
                stderr = f;
            }
        }
    }
    Ok(())
}

// ---- faults -------------------------------------------------------------------

/// The signals a program's own fault or abort raises.
const FAULTS: [c_int; 7] =
    [libc::SIGSEGV, libc::SIGBUS, libc::SIGFPE, libc::SIGILL, libc::SIGABRT, libc::SIGTRAP, libc::SIGSYS];

/// Size of the host thread's signal stack.
const ALT_STACK: usize = 256 * 1024;

/// Catch faults on the host thread (see the module's documentation).
pub(crate) fn catch_faults() -> std::io::Result<()> {
    // SAFETY: a fresh anonymous mapping for the signal stack; it is never
    // unmapped (the handler may run until the process ends).
    let stack = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            ALT_STACK,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if stack == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    let ss = libc::stack_t { ss_sp: stack, ss_flags: 0, ss_size: ALT_STACK };
    // SAFETY: `ss` describes the mapping above, valid for ever.
    if unsafe { libc::sigaltstack(&ss, std::ptr::null_mut()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    for sig in FAULTS {
        // SAFETY: a zeroed sigaction is a valid start; the handler has the
        // SA_SIGINFO signature.
        let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
        sa.sa_sigaction = on_fault as *const () as usize;
        sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
        // SAFETY: installing a handler for a signal; `sa` is initialized.
        if unsafe { libc::sigaction(sig, &sa, std::ptr::null_mut()) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// A fault: on the running rank's stack, that rank's context returns
/// [`Ended::Signal`]; anywhere else it is the host's own, and kills it.
unsafe extern "C" fn on_fault(sig: c_int, info: *mut libc::siginfo_t, ctx: *mut c_void) {
    let uc = ctx.cast::<libc::ucontext_t>();
    // SAFETY: the kernel passes a valid ucontext for SA_SIGINFO handlers.
    let gregs = unsafe { &mut (*uc).uc_mcontext.gregs };
    let sp = gregs[libc::REG_RSP as usize] as usize;
    let trap = host::current().and_then(|r| host::with(|h| h.trap(r)).flatten());
    if let Some((trap, limit)) = trap.filter(|(t, _)| t.stack_ptr_in_bounds(sp)) {
        // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
        let addr = unsafe { (*info).si_addr() } as usize;
        // The guard region is the lowest of the stack's mapping: a fault
        // there, or a stack pointer already in it, is the stack running out.
        let overflow = matches!(sig, libc::SIGSEGV | libc::SIGBUS)
            && (super::stack::RankStack::in_guard(limit, addr) || super::stack::RankStack::in_guard(limit, sp));
        // SAFETY: `sp` is inside the rank's stack (checked), as the trap
        // return requires; the rank's context is never resumed afterwards
        // (it returns, and the host records it as ended), and the
        // registers it names are set below as corosensei says.
        let regs = unsafe { trap.setup_trap_handler(move || Ended::Signal { sig, overflow }) };
        gregs[libc::REG_RIP as usize] = regs.rip as i64;
        gregs[libc::REG_RSP as usize] = regs.rsp as i64;
        gregs[libc::REG_RBP as usize] = regs.rbp as i64;
        gregs[libc::REG_RDI as usize] = regs.rdi as i64;
        gregs[libc::REG_RSI as usize] = regs.rsi as i64;
        return;
    }
    // The host's own fault: the default action, as if there were no handler.
    // SAFETY: resetting a disposition and re-raising are plain system calls.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        if (*info).si_code <= 0 {
            // Sent (kill, raise, abort): send it again, now fatal.
            libc::raise(sig);
        }
    }
    // A fault the hardware raised happens again on return, now fatal.
}
