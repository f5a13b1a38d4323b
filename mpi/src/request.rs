//! Non-blocking requests (MPI 4.1 §3.7 and §6.12): wait, test, wait_all,
//! wait_any, test_all, for point-to-point operations and non-blocking
//! collectives alike.
//!
//! # Buffers, scopes, and what dropping a request does
//!
//! A non-blocking point-to-point operation works on the caller's buffer
//! itself: the engine sends from it and receives into it, with no copy.
//! Such a request is started inside a [`scope`] (as in rsmpi), which
//! guarantees that the engine is done with every buffer before the buffers
//! can be freed:
//!
//! * waiting or testing a request to completion releases its buffer;
//! * **dropping** an unfinished request waits for it (so the buffer is never
//!   released early); if waiting fails, the engine forgets the buffer;
//! * a request lost without being dropped (`std::mem::forget`) is still
//!   known to its scope, which waits for it when the scope ends: the buffers
//!   outlive the scope, so the engine never writes into freed memory. A
//!   scope ending while its thread panics abandons such requests instead
//!   (the engine forgets their buffers; their messages are lost).
//!
//! A [`StaticScope`] takes `'static` buffers (which cannot be freed while
//! borrowed) and needs no bookkeeping. Non-blocking collectives work on the
//! library's own copies, so their requests need no scope.

use std::cell::Cell;
use std::marker::PhantomData;
use std::rc::Rc;

use adi::{Done, ReqId};

use crate::coll::exec::Exec;
use crate::comm::{Group, Status};
use crate::error::{MpiError, Result};
use crate::universe::{charge_call, charge_request, Context, Locked, Shared};
use crate::{Rank, Tag};
use sealed::ScopeCore;

/// What a non-blocking point-to-point operation's buffer must outlive.
///
/// Sealed: only this crate's scopes ([`LocalScope`], through [`scope`], and
/// [`StaticScope`]) implement it. Soundness rests on it: the engine writes
/// into a borrowed buffer until the request completes, and a request lost
/// with `std::mem::forget` is completed by its scope's end only because
/// every non-`'static` scope tracks its requests. A scope written outside
/// this crate could track nothing and let the buffer be freed under the
/// engine, so none can be written:
///
/// ```compile_fail,E0277
/// struct Careless;
/// impl<'a> mpi::request::Scope<'a> for Careless {}
/// ```
pub trait Scope<'a>: sealed::Sealed {}

/// The half of [`Scope`] that only this crate can name or implement.
pub(crate) mod sealed {
    use std::cell::RefCell;
    use std::rc::Rc;

    use adi::ReqId;

    use crate::universe::Shared;

    /// The requests of one [`LocalScope`] still holding a buffer.
    #[derive(Default)]
    pub struct ScopeCore {
        pub(crate) pending: RefCell<Vec<(Shared, ReqId)>>,
    }

    impl ScopeCore {
        pub(crate) fn register(&self, shared: &Shared, id: ReqId) {
            self.pending.borrow_mut().push((shared.clone(), id));
        }

        pub(crate) fn unregister(&self, shared: &Shared, id: ReqId) {
            self.pending.borrow_mut().retain(|(s, i)| !(*i == id && Shared::ptr_eq(s, shared)));
        }
    }

    /// What a scope tracks: `None` for `'static` buffers, which nothing
    /// can free.
    pub trait Sealed {
        fn core(&self) -> Option<Rc<ScopeCore>>;
    }
}

/// A scope for requests on buffers that live at least as long as `'a`;
/// made only by [`scope`].
pub struct LocalScope<'a> {
    core: Rc<ScopeCore>,
    /// Invariant in `'a`, so that `'a` cannot be shortened to a lifetime
    /// that ends inside the scope.
    _invariant: PhantomData<Cell<&'a mut ()>>,
}

impl<'a> Scope<'a> for &LocalScope<'a> {}

impl sealed::Sealed for &LocalScope<'_> {
    fn core(&self) -> Option<Rc<ScopeCore>> {
        Some(self.core.clone())
    }
}

/// The scope of `'static` buffers: they are never freed, so a lost request
/// can do no harm and nothing is tracked.
#[derive(Clone, Copy, Debug, Default)]
pub struct StaticScope;

impl Scope<'static> for StaticScope {}

impl sealed::Sealed for StaticScope {
    fn core(&self) -> Option<Rc<ScopeCore>> {
        None
    }
}

/// Run `f` with a scope for non-blocking operations on buffers that outlive
/// the call. When `f` returns (or unwinds), every request started in the
/// scope that is still unfinished is completed (or, while panicking,
/// abandoned) before the buffers can be touched by anyone else.
///
/// ```no_run
/// use mpi::traits::*;
/// let universe = mpi::initialize().unwrap();
/// let world = universe.world();
/// let data = [1u8, 2, 3];
/// let mut back = [0u8; 3];
/// mpi::request::scope(|s| {
///     let r = world.process_at_rank(0).immediate_receive_into(s, &mut back[..]).unwrap();
///     world.process_at_rank(0).send(&data[..]).unwrap();
///     r.wait().unwrap();
/// });
/// ```
pub fn scope<'a, F, R>(f: F) -> R
where
    F: FnOnce(&LocalScope<'a>) -> R,
{
    let s = LocalScope { core: Rc::new(ScopeCore::default()), _invariant: PhantomData };
    f(&s)
}

impl Drop for LocalScope<'_> {
    fn drop(&mut self) {
        let pending = std::mem::take(&mut *self.core.pending.borrow_mut());
        for (shared, id) in pending {
            // No call holds the lock across a return to user code, so this
            // waits at most for one pass of the progress thread.
            let mut c = shared.borrow_mut();
            if std::thread::panicking() {
                if let Ok(e) = c.engine() {
                    e.abandon(id);
                }
                continue;
            }
            match c.wait_borrowed(id) {
                // Finalized: the engine is gone and touches nothing.
                Ok(_) | Err(MpiError::Finalized) => {}
                Err(e) => eprintln!("MPI: a request lost before completion failed at the end of its scope: {e}"),
            }
        }
    }
}

pub(crate) enum Target {
    Send { dest: Rank, tag: Tag, bytes: u64 },
    Recv,
}

enum State<'b> {
    /// A point-to-point operation in the engine, on the caller's buffer
    /// (lent to the engine until completion; `scope` knows of it unless the
    /// buffer is `'static`).
    P2p { id: ReqId, target: Target, scope: Option<Rc<ScopeCore>> },
    /// A collective schedule being executed; its result goes to `out`.
    /// `blocking`: started by a blocking call, which has no request to
    /// charge for when it completes.
    Coll { exec: Locked<Exec>, out: Option<&'b mut [u8]>, blocking: bool },
    /// Completed (or failed): nothing left to wait for.
    Finished,
}

/// A pending non-blocking operation.
#[must_use = "a request must be waited for or tested until it completes"]
pub struct Request<'b> {
    shared: Shared,
    state: State<'b>,
    group: Rc<Group>,
    /// The buffer lent to the engine (point-to-point).
    _buf: PhantomData<&'b mut [u8]>,
}

impl<'b> Request<'b> {
    /// A point-to-point request on a buffer lent to the engine for `'b`
    /// (registered with `scope`, which must be the scope the caller's
    /// buffer outlives).
    pub(crate) fn new(
        shared: Shared,
        id: ReqId,
        target: Target,
        group: Rc<Group>,
        scope: Option<Rc<ScopeCore>>,
    ) -> Request<'b> {
        if let Some(s) = &scope {
            s.register(&shared, id);
        }
        Request { shared, state: State::P2p { id, target, scope }, group, _buf: PhantomData }
    }

    /// A non-blocking collective whose execution is already registered with
    /// the progress of every wait; its result goes to `out`.
    pub(crate) fn collective(
        shared: Shared,
        exec: Locked<Exec>,
        out: Option<&'b mut [u8]>,
        group: Rc<Group>,
    ) -> Request<'b> {
        Request { shared, state: State::Coll { exec, out, blocking: false }, group, _buf: PhantomData }
    }

    /// Complete a collective inside the blocking call that started it: no
    /// second MPI call is charged, and no request (a blocking collective
    /// has none).
    pub(crate) fn finish_blocking(mut self) -> Result<()> {
        if let State::Coll { blocking, .. } = &mut self.state {
            *blocking = true;
        }
        self.wait_mut(false).map(drop)
    }

    fn pending(&self, call: &str) -> Result<()> {
        match self.state {
            State::Finished => Err(MpiError::Invalid(format!("{call} on a completed request"))),
            _ => Ok(()),
        }
    }

    /// Whether the operation has ended (a failed one counts: its error is
    /// reported when it is completed).
    fn is_done(&self, c: &mut Context) -> Result<bool> {
        Ok(match &self.state {
            State::P2p { id, .. } => c.engine()?.is_done(*id).unwrap_or(true),
            State::Coll { exec, .. } => exec.borrow().ended(),
            State::Finished => true,
        })
    }

    /// Complete an operation that has ended: free it, deliver its data,
    /// return its status (or its error).
    fn complete(&mut self, c: &mut Context) -> Result<Status> {
        match std::mem::replace(&mut self.state, State::Finished) {
            State::P2p { id, target, scope } => {
                if let Some(s) = scope {
                    s.unregister(&self.shared, id);
                }
                let e = c.engine()?;
                let d = e.wait(id)?;
                charge_request(e);
                Ok(match (target, d) {
                    (Target::Recv, Done::Placed { status }) => self.group.status(status),
                    (Target::Recv, Done::Cancelled) => Status::cancelled(),
                    (Target::Send { dest, tag, bytes }, _) => Status::new(dest, tag, bytes),
                    (Target::Recv, _) => Status::new(-1, 0, 0),
                })
            }
            State::Coll { exec, out, blocking } => {
                let mut ex = exec.borrow_mut();
                ex.outcome()?;
                if !blocking {
                    charge_request(c.engine()?);
                }
                let res = ex.take_recv();
                if let Some(out) = out {
                    let n = out.len().min(res.len());
                    out[..n].copy_from_slice(&res[..n]);
                }
                Ok(Status::new(-1, 0, 0))
            }
            State::Finished => Err(MpiError::Invalid("request already completed".into())),
        }
    }

    /// Block until the operation completes (`MPI_Wait`).
    pub fn wait(mut self) -> Result<Status> {
        self.wait_mut(true)
    }

    /// Wait, charging one MPI call if `charge` (not when the call that
    /// completes several requests has charged already).
    fn wait_mut(&mut self, charge: bool) -> Result<Status> {
        self.pending("wait")?;
        let shared = self.shared.clone();
        let mut c = shared.borrow_mut();
        if charge {
            charge_call(c.engine()?);
        }
        let waited = c.wait_until(|c| self.is_done(c));
        if let Err(e) = waited {
            self.abandon(&mut c);
            return Err(e);
        }
        self.complete(&mut c)
    }

    /// The operation failed or cannot be waited for: finished, and the
    /// engine forgets its buffer (it is never touched again).
    fn abandon(&mut self, c: &mut Context) {
        if let State::P2p { id, scope, .. } = std::mem::replace(&mut self.state, State::Finished) {
            if let Some(s) = scope {
                s.unregister(&self.shared, id);
            }
            if let Ok(e) = c.engine() {
                e.abandon(id);
            }
        }
    }

    /// Cancel a receive (`MPI_Cancel`, MPI 4.1 §3.8.4). The request must
    /// still be completed; its status then says whether the cancellation
    /// won ([`Status::is_cancelled`]: the buffer is untouched) or the
    /// receive had already matched a message (it completes normally).
    /// Sends and collectives cannot be cancelled (an error).
    pub fn cancel(&self) -> Result<()> {
        match &self.state {
            State::P2p { id, target: Target::Recv, .. } => {
                let mut c = self.shared.borrow_mut();
                let e = c.engine()?;
                charge_call(e);
                e.cancel_recv(*id)?;
                Ok(())
            }
            // A send is never withdrawn once started (its data may be on
            // the wire): the cancellation fails, which §3.8.4 allows — the
            // send completes as usual and its status says not cancelled.
            State::P2p { .. } => Ok(()),
            State::Coll { .. } => {
                Err(MpiError::Invalid("cancel of a collective is not allowed (MPI 4.1 §3.8.4)".into()))
            }
            State::Finished => Err(MpiError::Invalid("cancel on a completed request".into())),
        }
    }

    /// Complete the operation if it can (`MPI_Test`): `Ok(Ok(status))` when
    /// done, `Ok(Err(self))` when still pending.
    pub fn test(mut self) -> Result<std::result::Result<Status, Request<'b>>> {
        self.pending("test")?;
        let shared = self.shared.clone();
        let mut c = shared.borrow_mut();
        charge_call(c.engine()?);
        // Drive progress only if it has not ended already (as the engine's
        // own test does): a polling loop pays one pass per call, not more.
        let progressed = (|| {
            if self.is_done(&mut c)? {
                return Ok(true);
            }
            // A collective the device executes needs nothing from the host:
            // testing it is one look at its completion word (KACC's point).
            if let State::Coll { exec, .. } = &self.state {
                if exec.borrow().on_device() {
                    exec.borrow_mut().advance(c.engine()?);
                    return self.is_done(&mut c);
                }
                // With a progress thread, testing a collective looks at its
                // state; the thread makes a pass when its poll period has
                // passed (it runs while this core spins on test too).
                if c.progress == crate::ProgressMode::Thread && !c.thread_due()? {
                    return self.is_done(&mut c);
                }
            }
            c.progress_collectives()?;
            c.engine()?.progress()?;
            c.progress_collectives()?;
            self.is_done(&mut c)
        })();
        match progressed {
            Ok(true) => Ok(Ok(self.complete(&mut c)?)),
            Ok(false) => {
                drop(c);
                Ok(Err(self))
            }
            Err(e) => {
                self.abandon(&mut c);
                Err(e)
            }
        }
    }
}

impl Drop for Request<'_> {
    /// Dropping an unfinished request waits for it; if that fails, or the
    /// thread is panicking, the engine forgets the request's buffer instead.
    fn drop(&mut self) {
        if matches!(self.state, State::Finished) {
            return;
        }
        let shared = self.shared.clone();
        if !std::thread::panicking() {
            match self.wait_mut(true) {
                Ok(_) => return,
                Err(MpiError::Finalized) => {}
                Err(e) => eprintln!("MPI: a request dropped before completion failed: {e}"),
            }
        }
        let mut c = shared.borrow_mut();
        self.abandon(&mut c);
    }
}

/// The shared state of `requests` (they all share one), after charging
/// one MPI call; `None` for an empty list.
fn shared_of(requests: &[Request<'_>], call: &str) -> Result<Option<Shared>> {
    for r in requests {
        r.pending(call)?;
    }
    let Some(r) = requests.first() else { return Ok(None) };
    charge_call(r.shared.borrow_mut().engine()?);
    Ok(Some(r.shared.clone()))
}

fn all_done(requests: &[Request<'_>], c: &mut Context) -> Result<bool> {
    for r in requests {
        if !r.is_done(c)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Wait for every request (`MPI_Waitall`, one MPI call); statuses in order.
/// The first error is returned after every request has been given the
/// chance to finish.
pub fn wait_all(mut requests: Vec<Request<'_>>) -> Result<Vec<Status>> {
    let Some(shared) = shared_of(&requests, "wait_all")? else { return Ok(Vec::new()) };
    let mut c = shared.borrow_mut();
    // Progress until all have ended (an error surfaces per request below).
    let _ = c.wait_until(|c| all_done(&requests, c));
    let mut out = Vec::with_capacity(requests.len());
    let mut first_err = None;
    for r in requests.iter_mut() {
        match r.complete(&mut c) {
            Ok(s) => out.push(s),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    drop(c);
    match first_err {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// Wait for one request (`MPI_Waitany`): removes it from `requests` and
/// returns its former index and status.
pub fn wait_any(requests: &mut Vec<Request<'_>>) -> Result<(usize, Status)> {
    let Some(shared) = shared_of(requests, "wait_any")? else {
        return Err(MpiError::Invalid("wait_any on an empty list".into()));
    };
    let mut c = shared.borrow_mut();
    let mut found = None;
    c.wait_until(|c| {
        for (i, r) in requests.iter().enumerate() {
            if r.is_done(c)? {
                found = Some(i);
                return Ok(true);
            }
        }
        Ok(false)
    })?;
    let i = found.ok_or_else(|| MpiError::Invalid("wait_any found nothing".into()))?;
    let mut r = requests.remove(i);
    let st = r.complete(&mut c);
    drop(c);
    Ok((i, st?))
}

/// Test every request (`MPI_Testall`, one MPI call): all statuses if all
/// completed, otherwise the requests back, still pending.
pub fn test_all(mut requests: Vec<Request<'_>>) -> Result<std::result::Result<Vec<Status>, Vec<Request<'_>>>> {
    let Some(shared) = shared_of(&requests, "test_all")? else { return Ok(Ok(Vec::new())) };
    let mut c = shared.borrow_mut();
    c.progress_collectives()?;
    c.engine()?.progress()?;
    c.progress_collectives()?;
    if all_done(&requests, &mut c)? {
        let mut out = Vec::with_capacity(requests.len());
        for r in requests.iter_mut() {
            out.push(r.complete(&mut c)?);
        }
        Ok(Ok(out))
    } else {
        drop(c);
        Ok(Err(requests))
    }
}
