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

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::comm::SimpleCommunicator;
use crate::context::Context;
use crate::error::{MpiError, Result};
use crate::request::{Pending, Request};
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
