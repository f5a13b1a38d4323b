//! Everything the library keeps per process, in one place (issue 46).
//!
//! A rank is a process, or a user-level context of a host process that
//! runs many ranks (`dnrun --rank-mode contexts`, DESIGN §3). In the
//! second case this library is loaded once for all of them, so nothing a
//! rank owns may live in a `static`: it lives in a [`Process`], and
//! [`process`] finds the current rank's through one pointer that the host
//! switches with the rank (`simlink::contexts::rank_local`). What belongs
//! to a thread of a rank ([`PerThread`]: the last error's text, the user
//! reduction running on it, the `MPI_THREAD_MULTIPLE` hand-over flags)
//! lives behind one thread-local pointer that the host switches the same
//! way, so that each rank's one thread has its own.
//!
//! In an ordinary process both are made on first use and live until the
//! process ends. A test (`tests/one_state_per_rank.rs`) checks that this
//! crate declares no other mutable `static` or thread-local.

use std::cell::{Cell, RefCell};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, Once};

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize};
use std::sync::OnceLock;

use mpi::datatype::Typemap;
use parking_lot::Mutex;

use crate::abi::*;
use crate::{Handle, State};

/// The library's state for one process (one rank).
pub(crate) struct Process {
    /// The MPI state proper: `None` before `MPI_Init` and after `MPI_Finalize`.
    pub(crate) state: Mutex<Option<State>>,
    /// Where the process is in the library's life.
    pub(crate) life: mpi::session::Life,
    /// Info objects, which live apart from the state (§11.4.1).
    pub(crate) infos: Mutex<Option<Infos>>,
    // ---- the parts of a process, each used by its module ----
    /// What a Fortran layer told the library (`MPI_Abi_set_fortran_*`).
    pub(crate) fortran: Mutex<Fortran>,
    /// User error handlers, which live apart from the state.
    pub(crate) handlers: Mutex<Option<Handlers>>,
    /// Error classes, codes and strings the program added (§9.5).
    pub(crate) added: Mutex<Added>,
    /// `MPI_THREAD_MULTIPLE`'s hand-over between threads.
    pub(crate) threads: Shared,
    /// The predefined attributes' values (`MPI_Comm_get_attr` hands out
    /// pointers to them).
    pub(crate) attrs: Attrs,
    /// The tool interface's sessions (§15.3).
    pub(crate) tool: Tool,
    /// The exit handler that ends sessions is registered (once).
    pub(crate) at_exit: Once,
}

impl Process {
    fn new() -> Process {
        Process {
            state: Mutex::new(None),
            life: mpi::session::Life::default(),
            infos: Mutex::new(None),
            fortran: Mutex::new(Fortran::default()),
            handlers: Mutex::new(None),
            added: Mutex::new(Added::default()),
            threads: Shared::default(),
            attrs: Attrs::default(),
            tool: Tool::default(),
            at_exit: Once::new(),
        }
    }
}

/// The current process's (rank's) [`Process`]; null until its first call.
/// In a host of ranks the host saves and restores it with each rank.
static CURRENT: AtomicPtr<Process> = AtomicPtr::new(std::ptr::null_mut());

/// Whether [`CURRENT`] was handed to the host (done once, before any
/// rank's state is made, so that the host sees every value it takes).
static REGISTERED: Once = Once::new();

/// The current process's state: one load on the path of every call.
#[inline(always)]
pub(crate) fn process() -> &'static Process {
    let p = CURRENT.load(Ordering::Acquire);
    if p.is_null() {
        return first_use();
    }
    // SAFETY: every non-null value of CURRENT came from `first_use`'s
    // `Box::into_raw` and is never freed, so it is valid for the rest of
    // the process; `Process` is only shared (its parts lock or are atomic).
    unsafe { &*p }
}

/// The first call of a process (or of a rank, in a host): make its state.
#[cold]
#[inline(never)]
fn first_use() -> &'static Process {
    REGISTERED.call_once(|| {
        // SAFETY: CURRENT is a static (valid for ever) pointer-sized cell
        // with the layout of `*mut c_void`; in a host every rank runs on
        // the host's thread, the only one that touches it then.
        unsafe { simlink::contexts::rank_local(CURRENT.as_ptr().cast::<*mut c_void>()) };
    });
    let fresh = Box::into_raw(Box::new(Process::new()));
    match CURRENT.compare_exchange(std::ptr::null_mut(), fresh, Ordering::AcqRel, Ordering::Acquire) {
        // SAFETY: just made, never freed (see `process`).
        Ok(_) => unsafe { &*fresh },
        Err(other) => {
            // Another thread of this process made it first.
            // SAFETY: `fresh` came from Box::into_raw above and was never shared.
            drop(unsafe { Box::from_raw(fresh) });
            // SAFETY: as in `process`.
            unsafe { &*other }
        }
    }
}

/// What belongs to one thread of a rank.
#[derive(Default)]
pub(crate) struct PerThread {
    /// The last error's class and message, for `MPI_Error_string`.
    pub(crate) last_error: RefCell<Option<(c_int, String)>>,
    /// A user reduction function runs on this thread (under the state's lock).
    pub(crate) in_user_fn: Cell<bool>,
    /// The derived datatype it runs on, and its layout, for its queries.
    pub(crate) user_fn_type: RefCell<Option<(Handle, Arc<Typemap>)>>,
    /// This thread is coming back to its blocking call (`threads::blocking_call`).
    pub(crate) coming_back: Cell<bool>,
    /// This thread's blocking call is giving the lock up.
    pub(crate) yielding: Cell<bool>,
}

/// A thread's [`PerThread`], made on first use and freed with the thread.
struct Slot(Cell<*mut PerThread>);

impl Drop for Slot {
    fn drop(&mut self) {
        let p = self.0.replace(std::ptr::null_mut());
        if !p.is_null() {
            // SAFETY: made by `Box::into_raw` in `with_thread` and owned
            // by this slot alone.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

thread_local! {
    static THREAD: Slot = const { Slot(Cell::new(std::ptr::null_mut())) };
}

/// Run `f` on this thread's [`PerThread`] (the current rank's, in a host).
pub(crate) fn with_thread<T>(f: impl FnOnce(&PerThread) -> T) -> T {
    THREAD.with(|slot| {
        let mut p = slot.0.get();
        if p.is_null() {
            static REGISTERED: Once = Once::new();
            // In a host, ranks run on its one thread: its slot is the one
            // to switch with them (any other thread of a host runs no rank).
            if simlink::contexts::current_rank().is_some() {
                REGISTERED.call_once(|| {
                    // SAFETY: the host thread's slot lives as long as that
                    // thread, which runs every rank and is the only one to
                    // touch it; a `Cell<*mut _>` has the layout of `*mut c_void`.
                    unsafe { simlink::contexts::rank_local(slot.0.as_ptr().cast::<*mut c_void>()) };
                });
            }
            p = Box::into_raw(Box::<PerThread>::default());
            slot.0.set(p);
        }
        // SAFETY: `p` came from Box::into_raw and lives until the slot (or,
        // in a host, the rank's saved copy of it) drops it; only this
        // thread reaches it, and no reference outlives `f`.
        f(unsafe { &*p })
    })
}

/// What a Fortran layer told the library (the process's:
/// `process::Process::fortran`).
#[derive(Default)]
pub(crate) struct Fortran {
    pub(crate) info: Option<mpi::info::Info>,
    /// The literal `.TRUE.` and `.FALSE.` of each LOGICAL size, in bytes.
    pub(crate) booleans: BTreeMap<c_int, (Vec<u8>, Vec<u8>)>,
}

/// A user error-handler function, as C declares it (variadic).
pub(crate) type ErrFn = unsafe extern "C" fn(*mut Handle, *mut c_int, ...);

/// What kind of object a handler serves (§9.3.1-9.3.4).
pub(crate) use mpi::errhandler::ObjectKind as Kind;

/// User handlers, apart from the library's state (the process's:
/// `process::Process::handlers`): the mpi crate's table and rules.
pub(crate) type Handlers = mpi::errhandler::Handlers<ErrFn>;

/// The classes and codes a program added (the process's:
/// `process::Process::added`): `mpi::error_codes`' table, with the ABI's
/// last predefined code and longest string.
pub(crate) struct Added(pub(crate) mpi::error_codes::ErrorCodes);

/// Info objects, apart from the library's state: the standard lets a
/// program make and use them before `MPI_Init` and after `MPI_Finalize`
/// (MPI 4.1 §11.4.1), and a handle made before lives on after.
/// They are the process's (`process::Process::infos`).
pub(crate) struct Infos {
    pub(crate) pairs: crate::Table<mpi::info::Info>,
    pub(crate) made: Handle,
}

/// The process's side of the hand-over between its threads
/// (`process::Process::threads`; each thread's own flags are in
/// `process::PerThread`).
#[derive(Default)]
pub(crate) struct Shared {
    /// `MPI_THREAD_MULTIPLE` was granted.
    pub(crate) multiple: AtomicBool,
    /// How a thread arriving at the lock wakes the one idling inside.
    pub(crate) waker: OnceLock<Option<Arc<dyn adi::Waker>>>,
    /// The counts that decide when a waiting holder gives the lock up
    /// (the mpi crate's rules, `mpi::turns`).
    pub(crate) turns: mpi::turns::Turns,
}

/// Storage for the predefined attributes' values: `MPI_Comm_get_attr`
/// hands out pointers to them (§7.7.2), so they live as long as the
/// process's state (`process::Process::attrs`). `AtomicI32` has `int`'s
/// layout.
pub(crate) struct Attrs {
    pub(crate) tag_ub: std::sync::atomic::AtomicI32,
    pub(crate) host: std::sync::atomic::AtomicI32,
    pub(crate) io: std::sync::atomic::AtomicI32,
    pub(crate) wtime_is_global: std::sync::atomic::AtomicI32,
    pub(crate) universe_size: std::sync::atomic::AtomicI32,
    pub(crate) appnum: std::sync::atomic::AtomicI32,
    pub(crate) lastusedcode: std::sync::atomic::AtomicI32,
}

/// The tool interface's state (the process's: `process::Process::tool`).
pub(crate) struct Tool {
    /// How many `MPI_T_init_thread` calls are not yet finalized (§15.3.4:
    /// they nest).
    pub(crate) open: AtomicI32,
    /// The next performance-variable session handle.
    pub(crate) next_session: AtomicUsize,
}

/// The layout of the derived datatype the running user function was given
/// (it may query it, §6.9.5, while the reduction holds the state).
pub(crate) fn user_fn_type(dt: Handle) -> Option<Typemap> {
    with_thread(|t| t.user_fn_type.borrow().as_ref().filter(|(h, _)| *h == dt).map(|(_, l)| Typemap::clone(l)))
}

/// A user function is running on this thread, holding the state's lock:
/// only the calls that need no state answer (the predefined datatypes'
/// queries, `MPI_Abort`).
pub(crate) fn in_user_fn() -> bool {
    with_thread(|t| t.in_user_fn.get())
}

/// Run `f`, a user function the library calls while it holds the state
/// (a reduction's operation, a data representation's conversion): inside
/// it the datatype queries answer for the predefined types and for `dt`
/// (laid out as `layout`), and any other MPI call ends the job, saying
/// why, instead of waiting for ever on the lock this thread holds.
pub(crate) fn as_user_fn<T>(dt: Handle, layout: Option<&Arc<Typemap>>, f: impl FnOnce() -> T) -> T {
    with_thread(|t| t.in_user_fn.set(true));
    with_thread(|t| *t.user_fn_type.borrow_mut() = layout.map(|l| (dt, l.clone())));
    let out = f();
    with_thread(|t| t.in_user_fn.set(false));
    with_thread(|t| *t.user_fn_type.borrow_mut() = None);
    out
}

impl Default for Added {
    fn default() -> Added {
        Added(mpi::error_codes::ErrorCodes::new(MPI_ERR_LASTCODE, MPI_MAX_ERROR_STRING as usize - 1))
    }
}

impl Default for Attrs {
    fn default() -> Attrs {
        use std::sync::atomic::AtomicI32;
        Attrs {
            tag_ub: AtomicI32::new(mpi::TAG_UB),
            host: AtomicI32::new(MPI_PROC_NULL),
            io: AtomicI32::new(MPI_ANY_SOURCE),
            wtime_is_global: AtomicI32::new(0),
            universe_size: AtomicI32::new(0),
            appnum: AtomicI32::new(0),
            lastusedcode: AtomicI32::new(MPI_ERR_LASTCODE),
        }
    }
}

impl Default for Tool {
    fn default() -> Tool {
        Tool { open: AtomicI32::new(0), next_session: AtomicUsize::new(1) }
    }
}
