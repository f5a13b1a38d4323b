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

use parking_lot::Mutex;

use crate::{Handle, State};

/// The library's state for one process (one rank).
pub(crate) struct Process {
    /// The MPI state proper: `None` before `MPI_Init` and after `MPI_Finalize`.
    pub(crate) state: Mutex<Option<State>>,
    /// Where the process is in the library's life.
    pub(crate) life: crate::Life,
    /// Info objects, which live apart from the state (§11.4.1).
    pub(crate) infos: Mutex<Option<crate::info::Infos>>,
    /// What a Fortran layer told the library (`MPI_Abi_set_fortran_*`).
    pub(crate) fortran: Mutex<crate::abi_info::Fortran>,
    /// User error handlers, which live apart from the state.
    pub(crate) handlers: Mutex<Option<crate::errh::Handlers>>,
    /// Error classes, codes and strings the program added (§9.5).
    pub(crate) added: Mutex<crate::errh::Added>,
    /// `MPI_THREAD_MULTIPLE`'s hand-over between threads.
    pub(crate) threads: crate::threads::Shared,
    /// The predefined attributes' values (`MPI_Comm_get_attr` hands out
    /// pointers to them).
    pub(crate) attrs: crate::env::Attrs,
    /// The tool interface's sessions (§15.3).
    pub(crate) tool: crate::tool::Tool,
    /// The exit handler that ends sessions is registered (once).
    pub(crate) at_exit: Once,
}

impl Process {
    fn new() -> Process {
        Process {
            state: Mutex::new(None),
            life: crate::Life::default(),
            infos: Mutex::new(None),
            fortran: Mutex::new(crate::abi_info::Fortran::default()),
            handlers: Mutex::new(None),
            added: Mutex::new(crate::errh::Added::default()),
            threads: crate::threads::Shared::default(),
            attrs: crate::env::Attrs::default(),
            tool: crate::tool::Tool::default(),
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
    pub(crate) user_fn_type: RefCell<Option<(Handle, Arc<crate::datatype::Layout>)>>,
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
