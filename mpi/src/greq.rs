//! Generalized requests (MPI 4.1 §13.2): an operation the program carries
//! out itself, outside the library, and completes; the completion calls
//! (`wait`, `test`, `wait_any`, ...) then report it like any other request.
//!
//! The program's three callbacks are a [`Generalized`] value: `query`
//! (`query_fn`) gives the status once complete, `cancel` (`cancel_fn`) is
//! called by [`Request::cancel`], and its `Drop` is `free_fn`, run once the
//! request is completed (or dropped) and completed by the program. The
//! program completes it with the [`Completer`] (`MPI_Grequest_complete`),
//! which it can use once only.
//!
//! Only the program can complete it, and a [`Completer`] is not `Send`: a
//! wait for it before it is complete could never end, so it is refused
//! (`RequestMisuse::NeverCompleted`), like the C library's wait in a
//! single-threaded process.
//!
//! A program that keeps its requests by handle, with callbacks that are
//! not Rust values (the C ABI), keeps its generalized requests in a
//! [`Table`]: the same rules, with the callbacks run by the caller.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::comm::SimpleCommunicator;
use crate::context::Context;
use crate::error::{MpiError, RequestMisuse, Result};
use crate::request::{HeldBy, Part, Pending, Request};
use crate::status::Status;

/// The program's side of a generalized request.
pub trait Generalized {
    /// `query_fn`: the status the request reports once complete, or the
    /// error its completion call returns.
    fn query(&mut self) -> Result<Status> {
        Ok(Status::empty())
    }

    /// `cancel_fn`, called by [`Request::cancel`]; `complete` tells whether
    /// the program has completed the request already.
    fn cancel(&mut self, complete: bool) -> Result<()> {
        let _ = complete;
        Ok(())
    }
}

struct Shared<G> {
    complete: Cell<bool>,
    program: RefCell<G>,
}

/// Completes a generalized request (`MPI_Grequest_complete`), once.
pub struct Completer<G> {
    shared: Rc<Shared<G>>,
}

impl<G> Completer<G> {
    /// The program's operation is done: the request may be reported.
    pub fn complete(self) {
        self.shared.complete.set(true);
    }
}

/// The request's side: asked by the completion calls.
struct Operation<G> {
    shared: Rc<Shared<G>>,
}

impl<G: Generalized> Pending for Operation<G> {
    fn is_done(&self, _c: &mut Context) -> Result<bool> {
        Ok(self.shared.complete.get())
    }

    fn complete(self: Box<Self>, _c: &mut Context) -> Result<Status> {
        self.shared.program.borrow_mut().query()
    }

    fn cannot_cancel(&self) -> MpiError {
        MpiError::Request(crate::error::RequestMisuse::NotCancellable {
            what: "a generalized request but by its cancel callback",
        })
    }

    fn cancel(&self) -> Result<()> {
        let complete = self.shared.complete.get();
        self.shared.program.borrow_mut().cancel(complete)
    }

    fn ended_by_program(&self) -> bool {
        true
    }
}

/// Start a generalized request (`MPI_Grequest_start`) for the operation
/// `program` carries out: the request to complete it with, and the
/// [`Completer`] the program calls when the operation is done. `comm` is
/// the communicator whose process it belongs to (any of them).
pub fn start<G: Generalized + 'static>(comm: &SimpleCommunicator, program: G) -> (Request<'static>, Completer<G>) {
    let shared = Rc::new(Shared { complete: Cell::new(false), program: RefCell::new(program) });
    let op = Box::new(Operation { shared: shared.clone() });
    (Request::pending(comm.shared.clone(), op, comm.peers().clone()), Completer { shared })
}

/// The generalized requests of a program that keeps them by handle (the
/// C ABI's), with the callbacks `C` it registered for each (§13.2):
/// where each stands, and which callback is due when. The table never
/// runs a callback: the caller does, once it has released its lock,
/// since the callbacks call MPI themselves (`MPI_Status_set_elements`).
///
/// - A completion call reports a request once the program has completed
///   it ([`Table::report`]): `query_fn`, then `free_fn` if the call frees
///   it.
/// - `MPI_Request_free` ([`Table::free`]) runs `free_fn` at once if the
///   request is complete, else at its completion ([`Table::complete`]),
///   and the handle is gone at once either way.
/// - `MPI_Cancel` ([`Table::cancel`]) runs `cancel_fn`, told whether it is
///   complete; the program must still complete it.
pub struct Table<C> {
    entries: std::collections::HashMap<usize, Entry<C>>,
}

struct Entry<C> {
    callbacks: C,
    /// `MPI_Grequest_complete` has run.
    complete: bool,
    /// `MPI_Request_free` has run before it completed: freed then.
    freed: bool,
}

impl<C> Default for Table<C> {
    fn default() -> Self {
        Table { entries: Default::default() }
    }
}

impl<C: Copy> Table<C> {
    /// A new request on `handle` (`MPI_Grequest_start`).
    pub fn start(&mut self, handle: usize, callbacks: C) {
        self.entries.insert(handle, Entry { callbacks, complete: false, freed: false });
    }

    /// The part `handle` plays in a completion call, if it is a request
    /// of this table the program has not freed: ended once complete,
    /// held until then ([`Part::Held`]).
    pub fn part(&self, handle: usize) -> Option<Part<'static, 'static>> {
        let e = self.entries.get(&handle).filter(|e| !e.freed)?;
        Some(if e.complete { Part::Ended } else { Part::Held(HeldBy::Generalized) })
    }

    /// Report `handle`, complete, as complete: its callbacks, for
    /// `query_fn` (and `free_fn` if `free`: the call frees it, as
    /// `MPI_Wait` does, and the handle is gone; else it stays, as for
    /// `MPI_Request_get_status`). `None`: no complete request of this table.
    pub fn report(&mut self, handle: usize, free: bool) -> Option<C> {
        let e = self.entries.get(&handle).filter(|e| e.complete && !e.freed)?;
        let callbacks = e.callbacks;
        if free {
            self.entries.remove(&handle);
        }
        Some(callbacks)
    }

    /// `MPI_Request_free` of `handle`, if it is a request of this table:
    /// `Some(Some(callbacks))` when `free_fn` is due now (it is complete),
    /// `Some(None)` when it comes at completion.
    pub fn free(&mut self, handle: usize) -> Option<Option<C>> {
        let e = self.entries.get_mut(&handle).filter(|e| !e.freed)?;
        if !e.complete {
            e.freed = true;
            return Some(None);
        }
        self.entries.remove(&handle).map(|e| Some(e.callbacks))
    }

    /// `MPI_Cancel` of `handle`, if it is a request of this table: its
    /// callbacks, for `cancel_fn`, and whether it is complete.
    pub fn cancel(&self, handle: usize) -> Option<(C, bool)> {
        self.entries.get(&handle).filter(|e| !e.freed).map(|e| (e.callbacks, e.complete))
    }

    /// `MPI_Grequest_complete` of `handle`: `Some(callbacks)` when
    /// `free_fn` is due now (the program freed it already).
    pub fn complete(&mut self, handle: usize) -> Result<Option<C>> {
        let misuse = |m| Err(MpiError::Request(m));
        let Some(e) = self.entries.get_mut(&handle) else {
            return misuse(RequestMisuse::NotGeneralized { handle });
        };
        if e.complete {
            return misuse(RequestMisuse::CompletedTwice { handle });
        }
        e.complete = true;
        match e.freed {
            true => Ok(self.entries.remove(&handle).map(|e| e.callbacks)),
            false => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_held_until_complete_then_reported_once() {
        let mut t = Table::default();
        t.start(7, 'q');
        assert!(matches!(t.part(7), Some(Part::Held(HeldBy::Generalized))));
        assert_eq!(t.report(7, true), None, "not complete: nothing to report");
        assert_eq!(t.cancel(7), Some(('q', false)));
        assert_eq!(t.complete(7).ok(), Some(None));
        assert!(matches!(t.complete(7), Err(MpiError::Request(RequestMisuse::CompletedTwice { handle: 7 }))));
        assert!(matches!(t.part(7), Some(Part::Ended)));
        assert_eq!(t.report(7, false), Some('q'), "MPI_Request_get_status keeps it");
        assert_eq!(t.report(7, true), Some('q'));
        assert!(t.part(7).is_none() && t.report(7, true).is_none(), "gone once reported and freed");
        assert!(matches!(t.complete(7), Err(MpiError::Request(RequestMisuse::NotGeneralized { handle: 7 }))));
    }

    #[test]
    fn a_request_freed_before_completion_is_freed_at_it() {
        let mut t = Table::default();
        t.start(1, 'a');
        t.start(2, 'b');
        assert_eq!(t.free(1), Some(None), "free_fn waits for completion");
        assert!(t.part(1).is_none() && t.cancel(1).is_none(), "the handle is gone for the program");
        assert_eq!(t.free(1), None, "freed twice");
        assert_eq!(t.complete(1).ok(), Some(Some('a')), "free_fn due at completion");
        assert_eq!(t.complete(2).ok(), Some(None));
        assert_eq!(t.free(2), Some(Some('b')), "complete: free_fn due now");
        assert_eq!(t.free(2), None);
    }
}
