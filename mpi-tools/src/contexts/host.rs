//! The host's table of ranks: each rank a coroutine with a stack of its own
//! (`corosensei`), switched in user space, and the process-wide things a
//! rank owns switched with it (DESIGN §3, issue 46).
//!
//! Switching a rank in or out costs a few loads and stores: the
//! pointer-sized cells the rank's library registered as rank-local (its
//! per-process state: `simlink::contexts::HostAbi::rank_local`), `errno`,
//! and `environ` (each rank has its own environment, so `getenv` answers
//! per rank). No system call: the whole point.
//!
//! Everything here runs on the host's one thread: the table is a
//! thread-local of that thread, and the C entry points that reach it
//! ([`dn_contexts_host_v1`], and the libc functions of [`super::libc_shim`])
//! find an empty table on any other thread and behave as plain libc there.
//! No borrow of the table is ever held while a rank runs, so a rank's calls
//! back into the host (a `write`, a hand-over) find it free.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void, CString};
use std::path::PathBuf;

use corosensei::stack::Stack;
use corosensei::trap::CoroutineTrapHandler;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use simlink::contexts::{HostAbi, ABI_VERSION};

/// Why a running rank handed the CPU back.
pub(crate) enum Event {
    /// It waits for the model (a hand-over through `HostAbi::suspend`).
    Handoff,
    /// It called `exit` (or `_exit`) with this code; its exit handlers ran.
    Exit(c_int),
}

/// How a rank's context ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    /// `main` returned, or the rank called `exit`, with this code.
    Code(c_int),
    /// A signal the rank caused (a fault, `abort`) ended it; `overflow`
    /// when the fault was in its stack's guard page.
    Signal {
        /// The signal.
        sig: c_int,
        /// It ran past its stack.
        overflow: bool,
    },
}

/// What a rank did when the host last switched to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// It handed the CPU back and waits to be resumed.
    Suspended,
    /// It has ended.
    Ended(Ended),
}

type Context = Coroutine<(), Event, Ended, super::stack::RankStack>;

/// A change to a rank's environment ([`Host::set_env`]).
pub(crate) enum EnvChange<'a> {
    /// `setenv`.
    Set {
        /// The value.
        value: &'a [u8],
        /// Replace an existing value.
        replace: bool,
    },
    /// `putenv`: this `NAME=VALUE` string itself.
    Put(*mut c_char),
    /// `unsetenv`.
    Unset,
    /// `clearenv`.
    Clear,
}

/// A function registered with `__cxa_atexit` (or `atexit`).
pub type ExitFn = unsafe extern "C" fn(*mut c_void);

/// Everything the host keeps for one rank.
struct Rank {
    /// Its context, while suspended (taken out while it runs).
    context: Option<Context>,
    ended: Option<Ended>,
    /// Its suspension point, valid while its context lives.
    yielder: *const Yielder<(), Event>,
    /// How a fault in it makes its context return instead of killing the host.
    trap: Option<CoroutineTrapHandler<Ended>>,
    /// The lowest address of its stack's mapping: the guard region starts there.
    stack_limit: usize,
    /// Its values of the rank-local cells, while switched out.
    saved: Vec<*mut c_void>,
    errno: c_int,
    /// Its `environ` (changed by its own `setenv`).
    environ: *mut *mut c_char,
    /// The strings and the array `environ` first pointed at.
    _env: (Vec<CString>, Vec<*mut c_char>),
    /// What its own `setenv` and `putenv` made: every string and array, kept
    /// for the rank's life (a pointer `getenv` returned stays valid, as
    /// glibc keeps it).
    env_made: (Vec<CString>, Vec<Vec<*mut c_char>>),
    argv: (Vec<CString>, Vec<*mut c_char>),
    /// The copy of the program it loads.
    copy: PathBuf,
    /// Its exit handlers, last registered first to run.
    at_exit: Vec<(ExitFn, *mut c_void)>,
    /// The start of a line on its stdout and on its stderr, waiting for
    /// the newline.
    pending: [Vec<u8>; 2],
}

/// The host's state (see the module's documentation).
pub(crate) struct Host {
    ranks: Vec<Rank>,
    current: Option<usize>,
    /// Cells registered as rank-local.
    cells: Vec<*mut *mut c_void>,
    /// The host's own `environ`, while no rank runs.
    host_environ: *mut *mut c_char,
    /// `[rank] ` before each line of output.
    tag: bool,
    /// The next rank to start.
    next: usize,
    /// Where `main` is in the program, from its load base.
    main_offset: u64,
    stack_size: usize,
}

thread_local! {
    /// The table, on the host's thread only.
    static HOST: RefCell<Option<Host>> = const { RefCell::new(None) };
}

extern "C" {
    static mut environ: *mut *mut c_char;
}

/// What a rank is started with.
pub(crate) struct RankSpec {
    /// Its program copy.
    pub copy: PathBuf,
    /// `argv`, the program's name first.
    pub argv: Vec<CString>,
    /// Its environment, `KEY=VALUE`.
    pub env: Vec<CString>,
}

fn pointers(strings: &[CString]) -> Vec<*mut c_char> {
    strings.iter().map(|s| s.as_ptr().cast_mut()).chain(std::iter::once(std::ptr::null_mut())).collect()
}

/// Make this thread the host of `ranks` (rank `i` is `ranks[i]`).
pub(crate) fn install(ranks: Vec<RankSpec>, main_offset: u64, tag: bool, stack_size: usize) {
    let ranks = ranks
        .into_iter()
        .map(|spec| {
            let env_ptrs = pointers(&spec.env);
            let argv_ptrs = pointers(&spec.argv);
            let mut r = Rank {
                context: None,
                ended: None,
                yielder: std::ptr::null(),
                trap: None,
                stack_limit: 0,
                saved: Vec::new(),
                errno: 0,
                environ: std::ptr::null_mut(),
                _env: (spec.env, env_ptrs),
                env_made: (Vec::new(), Vec::new()),
                argv: (spec.argv, argv_ptrs),
                copy: spec.copy,
                at_exit: Vec::new(),
                pending: [Vec::new(), Vec::new()],
            };
            // The array lives in the Vec's heap buffer, which moving the
            // Vec (into the table) does not move.
            r.environ = r._env.1.as_mut_ptr();
            r
        })
        .collect();
    // SAFETY: reading the process's `environ` pointer on the host thread
    // before any rank runs.
    let host_environ = unsafe { environ };
    HOST.with(|h| {
        *h.borrow_mut() =
            Some(Host { ranks, current: None, cells: Vec::new(), host_environ, tag, next: 0, main_offset, stack_size })
    });
}

/// Take the table down (the ranks' contexts are dropped: the finished ones
/// free their stacks; the suspended ones are reset without running
/// anything more, as a process that is killed runs nothing more).
pub(crate) fn uninstall() {
    let host = HOST.with(|h| h.borrow_mut().take());
    if let Some(mut host) = host {
        for r in &mut host.ranks {
            if let Some(mut c) = r.context.take() {
                // SAFETY: the rank never runs again; what its stack holds
                // is abandoned, as a killed process's is (its objects'
                // destructors do not run, and nothing outside the stack
                // refers into it once the host stops).
                unsafe { c.force_reset() };
            }
        }
    }
}

/// Run `f` on the table, if this thread hosts ranks. Never call a rank's
/// code from `f`.
///
/// After the thread's locals are gone (a library's destructor writing at
/// `exit`, as libgfortran flushes its units) there is no table: `None`.
pub(crate) fn with<T>(f: impl FnOnce(&mut Host) -> T) -> Option<T> {
    HOST.try_with(|h| h.try_borrow_mut().ok().and_then(|mut g| g.as_mut().map(f))).ok().flatten()
}

/// The rank this thread is running now, if it hosts ranks and runs one
/// (never after the thread's locals are gone: see [`with`]).
pub(crate) fn current() -> Option<usize> {
    HOST.try_with(|h| h.try_borrow().ok().and_then(|g| g.as_ref().and_then(|h| h.current))).ok().flatten()
}

impl Host {
    fn switch_in(&mut self, r: usize) {
        self.current = Some(r);
        let rank = &mut self.ranks[r];
        for (k, cell) in self.cells.iter().enumerate() {
            // SAFETY: registered cells are valid for the life of the
            // process (`HostAbi::rank_local`'s contract) and touched only
            // on this thread.
            unsafe { **cell = rank.saved.get(k).copied().unwrap_or(std::ptr::null_mut()) };
        }
        // SAFETY: this thread's errno and the process's environ, on the
        // host thread, with no rank running.
        unsafe {
            *libc::__errno_location() = rank.errno;
            environ = rank.environ;
        }
    }

    fn switch_out(&mut self, r: usize) {
        let rank = &mut self.ranks[r];
        rank.saved.resize(self.cells.len(), std::ptr::null_mut());
        for (k, cell) in self.cells.iter().enumerate() {
            // SAFETY: as in `switch_in`.
            unsafe {
                rank.saved[k] = **cell;
                **cell = std::ptr::null_mut();
            }
        }
        // SAFETY: as in `switch_in`; the rank's `environ` may have been
        // replaced by its own `setenv`, so it is read back.
        unsafe {
            rank.errno = *libc::__errno_location();
            rank.environ = environ;
            environ = self.host_environ;
        }
        self.current = None;
    }

    /// The ranks that have not ended.
    pub(crate) fn running(&self) -> Vec<u32> {
        (0..self.ranks.len() as u32).filter(|&r| self.ranks[r as usize].ended.is_none()).collect()
    }

    /// Change the running rank's environment as `setenv(name, value,
    /// replace)` (`value` `None`: `unsetenv`; `entry` given: `putenv`,
    /// whose string becomes part of the environment itself). glibc's own
    /// functions cannot serve ranks: they grow the one array they last
    /// made, which is another rank's. `None` when no rank runs.
    pub(crate) fn set_env(&mut self, name: &[u8], change: EnvChange) -> Option<()> {
        let r = self.current?;
        // SAFETY: the process's environ on the host thread, while rank `r`
        // runs: a NULL-terminated array of NUL-terminated strings.
        let mut entries: Vec<*mut c_char> = unsafe {
            let mut p = environ;
            let mut v = Vec::new();
            while !p.is_null() && !(*p).is_null() {
                v.push(*p);
                p = p.add(1);
            }
            v
        };
        let key_of = |e: *mut c_char| {
            // SAFETY: an entry of the environment: a NUL-terminated string.
            let b = unsafe { std::ffi::CStr::from_ptr(e) }.to_bytes();
            b.iter().position(|c| *c == b'=').map_or(b, |i| &b[..i]).to_vec()
        };
        let at = entries.iter().position(|e| key_of(*e) == name);
        let rank = &mut self.ranks[r];
        match change {
            EnvChange::Set { value, replace } => {
                if at.is_some() && !replace {
                    return Some(());
                }
                let mut kv = name.to_vec();
                kv.push(b'=');
                kv.extend_from_slice(value);
                let s = CString::new(kv).ok()?;
                let p = s.as_ptr().cast_mut();
                rank.env_made.0.push(s);
                match at {
                    Some(i) => entries[i] = p,
                    None => entries.push(p),
                }
            }
            EnvChange::Put(entry) => match at {
                Some(i) => entries[i] = entry,
                None => entries.push(entry),
            },
            EnvChange::Unset => entries.retain(|e| key_of(*e) != name),
            EnvChange::Clear => entries.clear(),
        }
        entries.push(std::ptr::null_mut());
        rank.env_made.1.push(entries);
        let array = rank.env_made.1.last_mut().map_or(std::ptr::null_mut(), |v| v.as_mut_ptr());
        rank.environ = array;
        // SAFETY: as above; the array lives as long as the rank's entry.
        unsafe { environ = array };
        Some(())
    }

    /// Register an exit handler for the running rank (`false`: no rank runs).
    pub(crate) fn at_exit(&mut self, f: ExitFn, arg: *mut c_void) -> bool {
        match self.current {
            Some(r) => {
                self.ranks[r].at_exit.push((f, arg));
                true
            }
            None => false,
        }
    }

    /// The running rank's output on stream `err` (0: stdout, 1: stderr):
    /// complete lines go out at once, `[rank] ` in front when tagging.
    pub(crate) fn output(&mut self, r: usize, err: usize, data: &[u8], end: bool) {
        let tag = self.tag;
        let pending = &mut self.ranks[r].pending[err];
        crate::job_io::take_lines(pending, data, end, |l| crate::job_io::emit_raw(r as u32, tag, err == 1, l));
    }

    /// The fault handler's view of rank `r`: how to make it return, and
    /// where its stack's guard page is.
    pub(crate) fn trap(&self, r: usize) -> Option<(CoroutineTrapHandler<Ended>, usize)> {
        let rank = &self.ranks[r];
        rank.trap.map(|t| (t, rank.stack_limit))
    }
}

/// Pop the running rank's next exit handler.
fn next_at_exit() -> Option<(ExitFn, *mut c_void)> {
    with(|h| h.current.and_then(|r| h.ranks[r].at_exit.pop())).flatten()
}

/// What a rank does as it ends, on its own stack: its exit handlers, last
/// registered first (C's `exit`), unless `quick`, and the rest of its
/// output.
pub(crate) fn ending(quick: bool) {
    if !quick {
        while let Some((f, arg)) = next_at_exit() {
            // SAFETY: a handler the rank registered, called once, on its
            // own stack, as its C library would at exit.
            unsafe { f(arg) };
        }
        // The rank's own open files (its stdout and stderr are unbuffered).
        // SAFETY: fflush(NULL) flushes every stream; no rank runs another's.
        unsafe { libc::fflush(std::ptr::null_mut()) };
    }
    with(|h| {
        if let Some(r) = h.current {
            h.output(r, 0, &[], true);
            h.output(r, 1, &[], true);
        }
    });
}

/// Leave the running rank for good with `code` (its `exit`): never returns.
pub(crate) fn exit_rank(code: c_int) -> ! {
    let y = with(|h| h.current.map(|r| h.ranks[r].yielder)).flatten();
    if let Some(y) = y.filter(|y| !y.is_null()) {
        // SAFETY: the running rank's yielder, valid while its context
        // lives; the host never resumes a rank that exited.
        unsafe { (*y).suspend(Event::Exit(code)) };
    }
    // Not a rank (or resumed after its exit, which the host never does):
    // end the process by the system call itself (libc's `_exit` is the
    // host's own, which would come back here).
    // SAFETY: the system call ends the process; it touches no memory.
    unsafe { libc::syscall(libc::SYS_exit_group, code) };
    unreachable!("exit_group returned")
}

/// Why the last `dlopen` failed, as the dynamic loader says it.
pub(crate) fn dl_error() -> String {
    // SAFETY: dlerror returns a NUL-terminated message, or null.
    let why = unsafe { libc::dlerror() };
    if why.is_null() {
        return "unknown error".into();
    }
    // SAFETY: non-null and NUL-terminated, valid until the next dl call.
    unsafe { std::ffi::CStr::from_ptr(why) }.to_string_lossy().into_owned()
}

/// The entry of rank `r`'s context: load its copy of the program and run
/// `main`, as the C runtime would.
fn rank_main(r: usize, yielder: &Yielder<(), Event>) -> Ended {
    let found = with(|h| {
        let rank = &mut h.ranks[r];
        rank.yielder = yielder;
        (rank.copy.clone(), rank.argv.1.as_mut_ptr(), rank.argv.0.len() as c_int, rank.environ, h.main_offset)
    });
    let Some((copy, argv, argc, envp, main_offset)) = found else { return Ended::Code(127) };
    let Ok(path) = CString::new(copy.as_os_str().as_encoded_bytes()) else { return Ended::Code(127) };
    // SAFETY: a NUL-terminated path; the copy is a program inspected by
    // `program::inspect` (position-independent, no TLS of its own).
    let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        let msg = format!("dnrun: rank {r} cannot load {}: {}\n", copy.display(), dl_error());
        with(|h| h.output(r, 1, msg.as_bytes(), true));
        return Ended::Code(127);
    }
    let mut map: *mut libc::c_void = std::ptr::null_mut();
    // SAFETY: `handle` is a live handle; RTLD_DI_LINKMAP writes a
    // `struct link_map *` into `map`.
    let base = if unsafe { libc::dlinfo(handle, libc::RTLD_DI_LINKMAP, (&mut map as *mut *mut c_void).cast()) } == 0
        && !map.is_null()
    {
        // SAFETY: `l_addr`, the load base, is the first field of glibc's
        // `struct link_map` (a stable part of its public <link.h>).
        unsafe { *(map as *const usize) }
    } else {
        0
    };
    let main = base.wrapping_add(main_offset as usize);
    type Main = unsafe extern "C" fn(c_int, *mut *mut c_char, *mut *mut c_char) -> c_int;
    // SAFETY: `main` is the program's `main` (its symbol's address from the
    // file, relocated by the load base), which C defines with this
    // signature (the three-argument form is the one the C runtime calls).
    let main: Main = unsafe { std::mem::transmute::<usize, Main>(main) };
    // SAFETY: argv and envp are NULL-terminated arrays of C strings that
    // live as long as the rank's entry in the table.
    let code = unsafe { main(argc, argv, envp) };
    ending(false);
    Ended::Code(code)
}

/// Run rank `r` until it hands the CPU back or ends.
pub(crate) fn resume(r: usize) -> Step {
    let taken = with(|h| {
        let rank = &mut h.ranks[r];
        if rank.ended.is_some() {
            return None;
        }
        let context = match rank.context.take() {
            Some(c) => c,
            None => {
                let stack = super::stack::RankStack::new(h.stack_size).ok()?;
                rank.stack_limit = stack.limit().get();
                let c: Context = Coroutine::with_stack(stack, move |y: &Yielder<(), Event>, ()| rank_main(r, y));
                rank.trap = Some(c.trap_handler());
                c
            }
        };
        h.switch_in(r);
        Some(context)
    })
    .flatten();
    let Some(mut context) = taken else {
        return Step::Ended(with(|h| h.ranks[r].ended).flatten().unwrap_or(Ended::Code(127)));
    };
    let result = context.resume(());
    let step = match result {
        CoroutineResult::Yield(Event::Handoff) => {
            with(|h| h.ranks[r].context = Some(context));
            Step::Suspended
        }
        CoroutineResult::Yield(Event::Exit(code)) => {
            // SAFETY: the rank called exit: like a process, it runs nothing
            // more, and what its stack holds is abandoned without running
            // destructors (exit does not unwind either).
            unsafe { context.force_reset() };
            drop(context);
            Step::Ended(Ended::Code(code))
        }
        CoroutineResult::Return(ended) => {
            drop(context);
            Step::Ended(ended)
        }
    };
    with(|h| {
        h.switch_out(r);
        if let Step::Ended(e) = step {
            let rank = &mut h.ranks[r];
            rank.ended = Some(e);
            rank.trap = None;
            rank.yielder = std::ptr::null();
        }
    });
    step
}

/// Start the next rank that has not run yet (it runs until it attaches to
/// the simulator, or ends); `None` when every rank has started.
pub(crate) fn start_next() -> Option<(usize, Step)> {
    let r = with(|h| {
        let r = h.next;
        (r < h.ranks.len()).then(|| {
            h.next += 1;
            r
        })
    })
    .flatten()?;
    Some((r, resume(r)))
}

// ---- the table a host exports to its ranks (simlink::contexts) ----------

unsafe extern "C" fn abi_suspend() {
    let y = with(|h| h.current.map(|r| h.ranks[r].yielder)).flatten();
    if let Some(y) = y.filter(|y| !y.is_null()) {
        // SAFETY: the running rank's yielder, valid while its context
        // lives; called on that context's stack (only ranks call this).
        unsafe { (*y).suspend(Event::Handoff) };
    }
}

unsafe extern "C" fn abi_rank_local(cell: *mut *mut c_void) {
    with(|h| {
        if !h.cells.contains(&cell) {
            h.cells.push(cell);
        }
    });
}

unsafe extern "C" fn abi_current() -> u32 {
    current().map_or(u32::MAX, |r| r as u32)
}

unsafe extern "C" fn abi_argv() -> *const *const c_char {
    with(|h| h.current.map(|r| h.ranks[r].argv.1.as_ptr() as *const *const c_char))
        .flatten()
        .unwrap_or(std::ptr::null())
}

/// The table `simlink::contexts` looks up by name in a host. Exported from
/// `dnrun`'s executable (mpi-tools/build.rs).
#[no_mangle]
#[used]
#[allow(non_upper_case_globals)]
pub static dn_contexts_host_v1: HostAbi = HostAbi {
    version: ABI_VERSION,
    suspend: abi_suspend,
    rank_local: abi_rank_local,
    current: abi_current,
    argv: abi_argv,
};
