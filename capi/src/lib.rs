//! # libmpi_abi — unmodified C MPI programs on every backend
//!
//! The MPI standard ABI (MPI 5.0, ABI version 1.0; [`abi`]) over the `mpi`
//! crate: a C program compiled once against `capi/include/mpi.h` and
//! linked with `libmpi_abi.so` (through `mpicc`, see `scripts/install.sh`)
//! runs under `dnrun` on the simulated DIMMnet-2, over UDP and over DPDK,
//! because the backend is the launcher's choice, not the program's.
//!
//! This crate translates: handles to the mpi crate's objects, C
//! arguments to Rust ones, errors to error classes. What MPI does with
//! them — datatype layouts, staging and packing, `MPI_IN_PLACE`, request
//! states, groups, info, buffered mode, reductions — is the mpi crate's
//! (`mpi::staged`, `mpi::slot`, `mpi::group`, `mpi::info`,
//! `mpi::bsend`), the code its Rust API runs too.
//!
//! What is here: the environment calls, communicators (`dup`, `split`,
//! `free`), error handlers (`MPI_ERRORS_ARE_FATAL` by default,
//! `MPI_ERRORS_RETURN`, `MPI_ERRORS_ABORT`), point-to-point in blocking,
//! non-blocking and persistent forms with `MPI_PROC_NULL`, wildcards and
//! `MPI_STATUS(ES)_IGNORE`, derived datatypes and packing (`datatype`),
//! the collectives, blocking and non-blocking, with their `v` forms and
//! `MPI_IN_PLACE`, persistent collectives, every large-count `_c` form
//! (`count`, `large`), and one-sided communication (`win`: chapter 12
//! over `mpi::rma`), MPI-IO (`file`), and process creation and
//! connections (`spawn`, `port`). Every function of the MPI 5.0 ABI is
//! exported ([`abi::FUNCTIONS`]), so that a binding built against the
//! whole standard loads.
//!
//! Threads: every level up to `MPI_THREAD_MULTIPLE`, granted as asked.
//! Below it, two threads in MPI at once end the job (the program's error);
//! with it, calls take turns at one lock and a blocking call lets other
//! threads in while it waits ([`threads`]).

#![allow(non_snake_case)]
#![allow(clippy::missing_safety_doc)] // each function's safety is the MPI standard's contract on its arguments
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)] // every unsafe operation says which rule it relies on

/// Entry points that are each a helper called with their own arguments,
/// the call's name first: written out in the invocation as C declares
/// them (capi/tests/signatures.rs checks them against `mpi.h`).
macro_rules! forward {
    ($(pub unsafe extern "C" fn $name:ident($($arg:ident: $ty:ty),*) -> c_int = $helper:ident($($call:expr),*);)*) => {$(
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            // SAFETY: every pointer argument goes to the helper as the caller gave it (at most cast to the pointer
            // type the helper takes, never offset), and the helper's `# Safety` asks of it what the MPI standard asks
            // of this call's caller for that argument: the caller's contract is the helper's.
            unsafe { $helper(stringify!($name), $($call),*) }
        }
    )*};
    ($(pub extern "C" fn $name:ident($($arg:ident: $ty:ty),*) -> c_int = $helper:ident($($call:expr),*);)*) => {$(
        #[no_mangle]
        pub extern "C" fn $name($($arg: $ty),*) -> c_int {
            $helper(stringify!($name), $($call),*)
        }
    )*};
}

pub mod abi;
mod abi_info;
mod arrays;
mod attr;
mod bsend;
mod coll;
mod comm_table;
mod communicator;
mod count;
mod datarep;
mod datatype;
mod env;
mod errh;
mod external;
mod file;
mod greq;
mod group;
mod handle_int;
mod info;
mod inter;
mod keep;
mod large;
mod message;
mod neighbor;
mod op;
mod p2p;
mod partitioned;
mod port;
mod process;
mod session;
mod spawn;
mod status;
mod strings;
mod threads;
mod tool;
mod topo;
mod win;

use parking_lot::MutexGuard;
use std::collections::HashMap;
use std::ffi::c_int;

use abi::*;
use mpi::staged::Staged;
use mpi::{Communicator, MpiError, SimpleCommunicator, Universe};

/// A handle as the ABI passes it: a pointer-sized value (`struct MPI_ABI_X*`).
pub type Handle = usize;

/// A failed call: the MPI error class and what went wrong.
#[derive(Clone, Debug)]
pub(crate) struct Fail {
    class: c_int,
    msg: String,
    /// The status a failed receive has all the same (a truncated message:
    /// its source, tag and the bytes that fit, `MPI_ERROR` set).
    status: Option<Box<MpiStatus>>,
}

impl Fail {
    pub(crate) fn new(class: c_int, msg: impl Into<String>) -> Fail {
        Fail { class, msg: msg.into(), status: None }
    }

    /// The status to report for this failure: the receive's, or an empty
    /// one; `MPI_ERROR` is the class either way.
    pub(crate) fn status(&self) -> MpiStatus {
        MpiStatus { error: self.class, ..self.status.as_deref().copied().unwrap_or_else(MpiStatus::empty) }
    }
}

/// Write what a completed receive says into `out` (unless it is
/// `MPI_STATUS_IGNORE`): its status, or the status a failure carries (a
/// truncated message still has a source, a tag and the bytes that fit,
/// §3.2.5); then its outcome.
///
/// # Safety
/// `out` is null or valid for a write of an `MPI_Status`.
pub(crate) unsafe fn put_outcome(out: *mut MpiStatus, r: R<MpiStatus>) -> R<()> {
    if r.is_ok() || r.as_ref().is_err_and(|f| f.status.is_some()) {
        // SAFETY: `out` is null or valid for writing one MPI_Status for this call (`put_outcome`'s `# Safety`), which
        // is what `put_result` requires.
        unsafe { put_result(out, &r) };
    }
    r.map(drop)
}

impl From<mpi::PartitionError> for Fail {
    fn from(e: mpi::PartitionError) -> Fail {
        Fail::from(MpiError::from(e))
    }
}

impl From<MpiError> for Fail {
    /// The error's class (`MpiError::class`, §9.4) and message; a truncated
    /// receive keeps its status.
    fn from(e: MpiError) -> Fail {
        let status = match &e {
            MpiError::Truncated { status, .. } => Some(Box::new(c_status(status))),
            _ => None,
        };
        Fail { class: e.class().code(), msg: e.to_string(), status }
    }
}

pub(crate) type R<T> = Result<T, Fail>;

/// Hashing for handle tables: our handles are distinct integers, so one
/// multiplication (Fibonacci hashing) spreads them; the default SipHash
/// cost about 100 instructions per lookup, on every MPI call (callgrind,
/// docs/BENCHMARKS.md).
#[derive(Default, Clone, Copy)]
pub(crate) struct HandleHasher(u64);

impl std::hash::Hasher for HandleHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// A table keyed by handle.
pub(crate) type Table<V> = HashMap<Handle, V, std::hash::BuildHasherDefault<HandleHasher>>;

/// A communicator handle's state.
pub(crate) struct CommEntry {
    pub(crate) comm: SimpleCommunicator,
    pub(crate) errhandler: Handle,
    /// `MPI_Comm_set_name`'s name.
    pub(crate) name: String,
    /// User attributes: keyval and value, in the order they were set.
    pub(crate) attrs: attr::Values,
    /// Info hints (`MPI_Comm_set_info`), kept as given: none is acted on.
    pub(crate) info: info::Pairs,
    /// The buffer attached to it (`MPI_Comm_attach_buffer`), if any.
    pub(crate) buffered: mpi::bsend::Buffered,
    /// The duplicate to come, while its `MPI_Comm_idup` is under way: the
    /// handle names no usable communicator until then.
    pub(crate) pending: Option<mpi::dup::DupCell>,
    /// The session it derives from (made from one of its groups, or from
    /// a communicator that was), whose buffer its buffered sends use when
    /// it has none of its own (§3.6).
    pub(crate) session: Option<Handle>,
}

/// A request handle's state: the mpi crate's (`mpi::slot`),
/// with a persistent request's recipe.
pub(crate) type Req = mpi::slot::Slot<Recipe>;
/// The table of requests: persistent ones with their C arguments, and
/// generalized ones with their C callbacks.
pub(crate) type Requests = mpi::slot::Requests<Recipe, greq::Greq, std::hash::BuildHasherDefault<HandleHasher>>;

/// What a persistent request (`MPI_Send_init`, `MPI_Recv_init`, §3.9;
/// `MPI_Bcast_init`, ..., §6.13) does each time it is started.
pub(crate) struct Recipe {
    pub(crate) comm: SimpleCommunicator,
    /// Its communicator's handle, for the buffer a buffered send uses.
    pub(crate) handle: Handle,
    pub(crate) op: PersistentOp,
}

/// The operation of a persistent request.
pub(crate) enum PersistentOp {
    /// Point-to-point, partitioned included (§3.9, §4.2).
    P2p(mpi::persistent::P2p),
    /// A persistent collective (§6.13): the start it repeats, and its place
    /// in the communicator's matching order, taken at initialization.
    Coll(coll::CollStart, std::rc::Rc<mpi::staged::coll::Persistent>),
}

/// Everything between `MPI_Init` and `MPI_Finalize`.
pub(crate) struct State {
    pub(crate) universe: Universe,
    /// `MPI_Comm_get_parent`'s handle (§11.8.2).
    pub(crate) parent: comm_table::ParentHandle,
    pub(crate) comms: comm_table::CommTable,
    /// Requests of every kind (`mpi::slot::Requests`).
    pub(crate) requests: Requests,
    /// Derived datatypes.
    pub(crate) types: Table<datatype::TypeEntry>,
    /// Windows (§12).
    pub(crate) wins: Table<win::WinEntry>,
    /// Open files (§14).
    pub(crate) files: Table<file::FileEntry>,
    /// The error handler of `MPI_FILE_NULL`: new files get it, and calls
    /// about no file use it (`MPI_ERRORS_RETURN` unless set, §14.7).
    pub(crate) file_errhandler: Handle,
    /// Data representations registered (`MPI_Register_datarep`, §14.5.3).
    pub(crate) datareps: mpi::io::Registry,
    /// Their conversion functions, for those registered with any.
    pub(crate) datarep_fns: datarep::Registered,
    /// Names given to predefined datatypes (`MPI_Type_set_name`).
    pub(crate) predefined_names: Table<String>,
    /// Groups: the `MPI_COMM_WORLD` ranks of their members.
    pub(crate) groups: Table<mpi::group::Group>,
    /// User keyvals (§7.7.2).
    pub(crate) keyvals: mpi::attr::Keyvals<attr::Keyval>,
    /// Callbacks the current call runs once it releases the lock.
    pub(crate) deferred: Vec<attr::Deferred>,
    /// Messages matched by `MPI_Mprobe`/`MPI_Improbe`, not yet received.
    pub(crate) messages: Table<mpi::Message>,
    /// `MPI_Alloc_mem`'s blocks, by address, with their layouts.
    pub(crate) mems: Table<std::alloc::Layout>,
    /// User-defined reduction operations (§6.9.5).
    pub(crate) ops: Table<op::UserOp>,
    /// Attributes set on datatypes, predefined or not (§5.1.15).
    pub(crate) type_attrs: Table<attr::Values>,
    /// User error handlers (§9.3).
    /// Buffered mode: the attached buffer and the sends in flight.
    pub(crate) buffered: mpi::bsend::Buffered,
    /// The buffered send behind each `MPI_Ibsend`'s or started
    /// `MPI_Bsend_init`'s request, and its communicator, for
    /// `MPI_Cancel` (`crate::bsend::cancel`).
    pub(crate) bsent: Table<(Handle, mpi::bsend::Sent)>,
    /// `MPI_Comm_idup`s under way: their request, and the communicator
    /// handle whose entry the completion fills in (`comm_table::settle_idup`).
    pub(crate) idups: Vec<(Handle, Handle)>,
    /// Partitioned requests (§4) and where each stands.
    pub(crate) partitioned: Table<p2p::partitions::Partitioned>,
    pub(crate) next_handle: Handle,
    /// Sessions open (`MPI_Session_init`).
    pub(crate) sessions: Table<SessionEntry>,
    /// Groups made from a session's process sets, and the session.
    pub(crate) session_groups: Table<Handle>,
    /// `DN_COMPUTE=measured`: each call charges the computation before it
    /// (`mpi::compute`; the charge is the mpi crate's, on the call's first
    /// reach of the engine, and this layer marks the calls' ends).
    pub(crate) measuring: bool,
}

// SAFETY: the state holds `Rc`s (the mpi crate's communicators and
// requests are single-threaded), and it lives in `STATE`, whose mutex is the
// only way to reach it: no `Rc` is ever handed out of a locked section (a
// blocking call that lets other threads in under MPI_THREAD_MULTIPLE keeps
// its operation in the state, as a request, while it does: crate::threads),
// so at most one thread touches any of them at a time, and the mutex orders
// those accesses. Below MPI_THREAD_MULTIPLE a second thread arriving while
// one holds the lock does not wait: `lock_slow` ends the job
// (sim-tests/c/threads.c is that case; its "serial" form, threads taking
// turns, is the one the mutex orders).
unsafe impl Send for State {}

/// Handles the library makes start here, above every predefined value.
pub(crate) const FIRST_HANDLE: Handle = 0x1_0000;

impl State {
    pub(crate) fn new_handle(&mut self) -> Handle {
        let h = self.next_handle;
        self.next_handle += 16;
        h
    }

    #[inline]
    pub(crate) fn comm(&self, h: Handle) -> R<&CommEntry> {
        match self.comms.get(&h) {
            Some(e) if e.pending.is_none() => Ok(e),
            e => Err(unusable_comm(h, e.is_some())),
        }
    }

    #[inline]
    pub(crate) fn comm_mut(&mut self, h: Handle) -> R<&mut CommEntry> {
        match self.comms.get_mut(&h) {
            Some(e) if e.pending.is_none() => Ok(e),
            e => Err(unusable_comm(h, e.is_some())),
        }
    }
}

impl State {
    /// The entry of communicator `h`, also while an `MPI_Comm_idup` is
    /// still making it: for the calls that touch only the handle's own
    /// properties (its error handler and name), which MPICH, Open MPI and
    /// so mpi4py allow on a pending duplicate.
    pub(crate) fn comm_handle_mut(&mut self, h: Handle) -> R<&mut CommEntry> {
        self.comms.get_mut(&h).ok_or_else(|| unknown_comm(h))
    }

    /// [`State::comm_handle_mut`], to read.
    pub(crate) fn comm_handle(&self, h: Handle) -> R<&CommEntry> {
        self.comms.get(&h).ok_or_else(|| unknown_comm(h))
    }
}

/// The error for a handle that names no communicator, or one that an
/// `MPI_Comm_idup` still under way is making (`pending`).
#[cold]
fn unusable_comm(h: Handle, pending: bool) -> Fail {
    if pending {
        return Fail::new(
            MPI_ERR_COMM,
            format!("{h:#x} is the new communicator of an MPI_Comm_idup that has not completed: complete its request first (MPI 4.1 §7.4.2)"),
        );
    }
    unknown_comm(h)
}

/// The error for a handle that names no communicator.
fn unknown_comm(h: Handle) -> Fail {
    let what = if h == MPI_COMM_NULL { "MPI_COMM_NULL".to_string() } else { format!("{h:#x}") };
    Fail::new(MPI_ERR_COMM, format!("{what} is not a valid communicator (never created, or freed)"))
}

/// The state's lock. It does not poison: a panic while holding it leaves
/// the state as it was between calls (every call completes or fails as a
/// whole), so the next call goes on (and the lock is `parking_lot`'s, whose
/// uncontended take and release are one atomic instruction each, with no
/// poison bookkeeping on the hot path).
#[inline(always)]
fn lock() -> MutexGuard<'static, Option<State>> {
    match process::process().state.try_lock() {
        Some(g) => g,
        None => lock_slow(),
    }
}

/// The lock when `try_lock` did not take it: it is held.
#[cold]
#[inline(never)]
fn lock_slow() -> MutexGuard<'static, Option<State>> {
    // Held by another thread (wait for it), or by this one, running a
    // user-defined operation inside a reduction, where waiting would never
    // end.
    if process::in_user_fn() {
        eprintln!(
            "MPI error: an MPI function was called from inside a user function the library was running (a user-defined reduction operation, §6.9.5, or a data representation's conversion, §14.5.3); only the datatype size and extent queries and MPI_Abort may be; ending the job"
        );
        std::process::exit(MPI_ERR_OTHER.min(125));
    }
    // MPI_THREAD_MULTIPLE: wait for the holder, waking it if it idles.
    if threads::multiple() {
        let counted = threads::arriving();
        let g = process::process().state.lock();
        threads::arrived(counted);
        return g;
    }
    // Held by another thread: two threads are in MPI at once, which the
    // thread level granted (below MPI_THREAD_MULTIPLE) makes erroneous
    // (§11.6). Waiting could deadlock — the holder may be blocked on what
    // this thread was about to send — so end the job, saying why, instead
    // of hanging.
    eprintln!(
        "MPI error: two threads called MPI at the same time, but the thread level granted is below MPI_THREAD_MULTIPLE (MPI_Init_thread's `provided`), so calls from different threads must not overlap; ask MPI_Init_thread for MPI_THREAD_MULTIPLE; ending the job"
    );
    std::process::exit(MPI_ERR_OTHER.min(125))
}

/// What the handler in force does with a failed call on object `obj`
/// (`mpi::errhandler::raise`, MPI 4.1 §9.3): the call returns the code, or,
/// under a fatal handler, the job ends here.
fn report(call: &str, handler: errh::InForce, obj: Handle, rank: Option<i32>, f: Fail) -> c_int {
    process::with_thread(|t| *t.last_error.borrow_mut() = Some((f.class, f.msg.clone())));
    match mpi::errhandler::raise(handler, call, obj, f.class, &f.msg, rank) {
        mpi::errhandler::Outcome::Returns(code) => code,
        mpi::errhandler::Outcome::EndsJob { message, exit } => {
            eprintln!("{message}");
            std::process::exit(exit)
        }
    }
}

/// Whether the library is between `MPI_Init` and `MPI_Finalize`.
pub(crate) fn live() -> bool {
    process::process().life.live()
}

/// Report `f` from a call made before `MPI_Init` or after `MPI_Finalize`
/// that may be (`MPI_Info_*`): the handler then in force is
/// `MPI_ERRORS_ARE_FATAL` (MPI 4.1 §9.3).
#[cold]
pub(crate) fn report_without_state(call: &str, f: Fail) -> c_int {
    report(call, errh::InForce::Fatal, MPI_COMM_WORLD, None, f)
}

/// A call that works with or without the library's state (`MPI_Info_*`,
/// the error handlers' creation and freeing, §11.4.1): between
/// `MPI_Init` and `MPI_Finalize` as every call does, else alone, its
/// errors going to `MPI_ERRORS_ARE_FATAL`, the handler then in force
/// (§9.3).
pub(crate) fn stateless_call(call: &str, f: impl FnOnce() -> R<()>) -> c_int {
    if live() {
        return with_state(call, MPI_COMM_WORLD, |_| f());
    }
    match f() {
        Ok(()) => MPI_SUCCESS,
        Err(e) => report_without_state(call, e),
    }
}

/// Run `body` on the initialised state; a failure goes to `comm`'s error
/// handler (the `MPI_COMM_WORLD` handler when `comm` is not one: MPI 4.1
/// §9.3). Calls before `MPI_Init` or after `MPI_Finalize` fail with the
/// fatal handler, as the standard makes them erroneous.
#[inline(always)]
pub(crate) fn with_state(call: &str, comm: Handle, body: impl FnOnce(&mut State) -> R<()>) -> c_int {
    with_state_then(call, comm, body, &std::cell::Cell::new(false))
}

/// [`with_state`], handing the lock straight to a thread that waits for
/// it if `fair` is set when the call succeeds (a blocking call giving the
/// lock up under `MPI_THREAD_MULTIPLE`: `threads::blocking_call`).
#[inline(always)]
pub(crate) fn with_state_then(
    call: &str,
    comm: Handle,
    body: impl FnOnce(&mut State) -> R<()>,
    fair: &std::cell::Cell<bool>,
) -> c_int {
    let mut guard = lock();
    let Some(st) = guard.as_mut() else {
        let when = if process::process().life.ended() { "after MPI_Finalize" } else { "before MPI_Init" };
        drop(guard);
        return report(call, errh::InForce::Fatal, comm, None, Fail::new(MPI_ERR_OTHER, format!("called {when}")));
    };
    // Under DN_COMPUTE=measured the mpi crate charges the computation
    // before this call when the call first reaches the engine; the end of
    // the call is marked by `Deferred::CallEnds`, which stays in `deferred`
    // while measuring: the test below sends every measured call to
    // `finish_call`, which starts the next burst.
    let result = body(st);
    if result.is_ok() && st.deferred.is_empty() {
        if fair.get() {
            MutexGuard::unlock_fair(guard);
        }
        return MPI_SUCCESS;
    }
    finish_call(call, comm, guard, result, fair.get())
}

/// Let the lock go; `fair`: straight to a thread parked waiting for it, if
/// there is one (a plain unlock lets the releasing thread take it back
/// before the parked one runs).
#[inline(always)]
fn release(guard: MutexGuard<'static, Option<State>>, fair: bool) {
    if fair {
        MutexGuard::unlock_fair(guard);
    } else {
        drop(guard);
    }
}

/// The rest of a call that failed or left callbacks to run: run them
/// without the lock (they may call MPI), then apply the error handler.
#[cold]
#[inline(never)]
fn finish_call(
    call: &str,
    comm: Handle,
    mut guard: MutexGuard<'static, Option<State>>,
    mut result: R<()>,
    fair: bool,
) -> c_int {
    let mut deferred = guard.as_mut().map(|st| std::mem::take(&mut st.deferred)).unwrap_or_default();
    // Under DN_COMPUTE=measured and under MPI_THREAD_MULTIPLE a standing
    // mark ends every call: it runs after the callbacks (part of the call)
    // and stays for the next call.
    let mark = deferred.iter().position(|d| matches!(d, crate::attr::Deferred::CallEnds));
    if let Some(i) = mark {
        deferred.remove(i);
    }
    if !deferred.is_empty() {
        drop(guard);
        let relock = |f: &mut dyn FnMut(&mut State)| {
            if let Some(st) = lock().as_mut() {
                f(st);
            }
        };
        for d in deferred {
            if let Err(f) = d.run(relock) {
                result = result.and(Err(f));
            }
        }
        guard = lock();
    }
    if mark.is_some() {
        if let Some(st) = guard.as_mut() {
            if st.measuring {
                st.universe.call_ends();
            }
            if threads::multiple() {
                threads::ended();
            }
            st.deferred.push(crate::attr::Deferred::CallEnds);
        }
    }
    let Err(f) = result else {
        release(guard, fair);
        return MPI_SUCCESS;
    };
    let (errh, rank) = match guard.as_ref() {
        Some(st) => {
            // The handler of the object the call is about: a communicator,
            // a window (§9.3), a file (or MPI_FILE_NULL's, for a call
            // about no open file, §14.7), else MPI_COMM_WORLD's.
            let errh = match (st.comms.get(&comm), st.wins.get(&comm)) {
                (Some(c), _) => c.errhandler,
                (None, Some(w)) => w.errhandler,
                (None, None) if file::is_file(comm) => st.files.get(&comm).map_or(st.file_errhandler, |f| f.errhandler),
                (None, None) if st.sessions.contains_key(&comm) => st.sessions[&comm].errhandler,
                _ => st.comms.get(&MPI_COMM_WORLD).map_or(MPI_ERRORS_ARE_FATAL, |e| e.errhandler),
            };
            (errh::in_force(errh), st.comms.get(&MPI_COMM_WORLD).map(|e| e.comm.rank()))
        }
        None => (errh::InForce::Fatal, None),
    };
    release(guard, fair);
    // A call about no communicator or window (comm's handler was
    // MPI_COMM_WORLD's) hands the handler MPI_COMM_WORLD.
    report(call, errh, comm, rank, f)
}

/// Read the argument `p` points at, failing with `MPI_ERR_ARG` on a null
/// pointer (the reading side of [`put`]).
///
/// # Safety
/// `p` is null or valid for a read of `T`.
pub(crate) unsafe fn read_arg<T: Copy>(p: *const T, what: &str) -> R<T> {
    if p.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, format!("{what} is a null pointer")));
    }
    // SAFETY: `p` is not null (checked above) and valid for reading one `T` (`read_arg`'s `# Safety`: each caller
    // passes its MPI call's argument, valid for that call), so the read is aligned and in bounds.
    Ok(unsafe { p.read() })
}

/// The `n` values of an array argument: none when `n` is 0 (the pointer
/// is then not read), `MPI_ERR_ARG` for a negative `n` or a null pointer.
///
/// # Safety
/// `p` is null or valid for reads of `n` values of `T`.
pub(crate) unsafe fn array_arg<'a, T>(p: *const T, n: c_int, what: &str) -> R<&'a [T]> {
    let n = usize::try_from(n).map_err(|_| Fail::new(MPI_ERR_ARG, format!("{what}: length {n} is negative")))?;
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, format!("{what} is a null pointer")));
    }
    // SAFETY: `p` is not null (checked above), `n` > 0, and `p` is valid for reads of `n` values of `T` (`array_arg`'s
    // `# Safety`: each caller passes its MPI call's array, valid for that call, and uses the slice within it).
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// Write `v` through `out`, failing with `MPI_ERR_ARG` on a null pointer.
///
/// # Safety
/// `out` is null or valid for a write of `T`.
pub(crate) unsafe fn put<T>(out: *mut T, v: T, what: &str) -> R<()> {
    if out.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, format!("{what} is a null pointer")));
    }
    // SAFETY: `out` is not null (checked above) and valid for writing one `T` (`put`'s `# Safety`: each caller passes
    // its MPI call's out-argument, valid for that call).
    unsafe { out.write(v) };
    Ok(())
}

/// Write a successful single-completion status into a status pointer
/// unless it is `MPI_STATUS_IGNORE`: every field but `MPI_ERROR`, which the
/// standard leaves undefined there (§3.2.5) and which MPICH, and programs
/// tested against it (its mprobe test), leave as the caller set it —
/// except in an empty status, which the standard defines whole (MPICH's
/// rqstatus test).
///
/// # Safety
/// `out` is null or valid for a write of an `MPI_Status`.
pub(crate) unsafe fn put_status(out: *mut MpiStatus, s: MpiStatus) {
    if !out.is_null() {
        // An empty status (a null or inactive request's, §3.7.3) has
        // `MPI_ERROR` = `MPI_SUCCESS` too: it is written whole. (No
        // message has `MPI_ANY_SOURCE` for its source.)
        let empty = s.source == MPI_ANY_SOURCE && s.tag == MPI_ANY_TAG;
        // SAFETY: `out` is not null (checked above) and writable for one MPI_Status (this
        // function's contract); each field is written through the place, nothing is read.
        unsafe {
            (*out).source = s.source;
            (*out).tag = s.tag;
            (*out).internal = s.internal;
            if empty {
                (*out).error = MPI_SUCCESS;
            }
        }
    }
}

/// Write the status of a completed single operation: a success as
/// [`put_status`] does, a failure whole, its `MPI_ERROR` the error's class
/// (a truncated receive's status, as MPICH does).
///
/// # Safety
/// `out` is null or valid for a write of an `MPI_Status`.
pub(crate) unsafe fn put_result(out: *mut MpiStatus, r: &R<MpiStatus>) {
    match r {
        // SAFETY: `out` is null or valid for writing one MPI_Status for this call (`put_result`'s `# Safety`), which is
        // what `put_status` requires.
        Ok(s) => unsafe { put_status(out, *s) },
        Err(f) if !out.is_null() => {
            // SAFETY: `out` is not null (checked by the guard) and valid for writing one MPI_Status for this call
            // (`put_result`'s `# Safety`).
            unsafe { out.write(f.status()) }
        }
        Err(_) => {}
    }
}

/// The outcome of a completed operation, for the C caller.
pub(crate) fn outcome(r: mpi::Result<mpi::Status>) -> R<MpiStatus> {
    Ok(c_status(&r?))
}

/// A status for the C caller from the mpi crate's.
pub(crate) fn c_status(s: &mpi::Status) -> MpiStatus {
    MpiStatus::new(s.source_rank(), s.tag(), s.bytes(), s.is_cancelled())
}

/// Register `r` as a new request handle and write it to `out`.
///
/// # Safety
/// `out` is writable.
pub(crate) unsafe fn new_request(st: &mut State, r: Req, out: *mut Handle) -> R<()> {
    if out.is_null() {
        return Err(Fail::new(MPI_ERR_ARG, "request is a null pointer"));
    }
    let h = st.new_handle();
    st.requests.insert(h, r);
    // SAFETY: `out` is not null (checked above) and valid for writing one handle for this call, as `new_request`'s
    // `# Safety` requires of its callers.
    unsafe { out.write(h) };
    Ok(())
}

/// An open session.
pub(crate) struct SessionEntry {
    pub(crate) errhandler: Handle,
    pub(crate) info: mpi::info::Info,
    /// `MPI_Session_attach_buffer`'s buffer.
    pub(crate) buffered: mpi::bsend::Buffered,
}

impl State {
    pub(crate) fn session(&self, h: Handle) -> R<&SessionEntry> {
        self.sessions.get(&h).ok_or_else(|| not_session(h))
    }

    pub(crate) fn session_mut(&mut self, h: Handle) -> R<&mut SessionEntry> {
        self.sessions.get_mut(&h).ok_or_else(|| not_session(h))
    }

    /// The entry of window `h` (here, below the modules, for the
    /// attribute and error-handler calls of every kind of object).
    pub(crate) fn win_mut(&mut self, h: Handle) -> R<&mut win::WinEntry> {
        self.wins.get_mut(&h).ok_or_else(|| unknown_win(h))
    }
}

/// The error for a handle that names no window.
pub(crate) fn unknown_win(h: Handle) -> Fail {
    let what = if h == MPI_WIN_NULL { "MPI_WIN_NULL".to_string() } else { format!("{h:#x}") };
    Fail::new(MPI_ERR_WIN, format!("{what} is not a valid window (never created, or freed)"))
}

fn not_session(h: Handle) -> Fail {
    let what = if h == MPI_SESSION_NULL { "MPI_SESSION_NULL".to_string() } else { format!("{h:#x}") };
    Fail::new(MPI_ERR_SESSION, format!("{what} is not an open session (never opened, or finalized)"))
}
