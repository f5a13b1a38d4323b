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

use crate::context::{charge_call, charge_request, Context, Shared};
pub use crate::error::HeldBy;
use crate::error::{MpiError, RequestMisuse, Result};
use crate::members::Group;
use crate::status::Status;
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

    use crate::context::Shared;

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

/// An operation of a layer above point-to-point that a [`Request`] waits
/// for: a collective schedule (`crate::coll`), a one-sided operation
/// waiting for its target's reply (`crate::rma`). The layer owns its
/// state; the request only asks it these questions.
pub(crate) trait Pending {
    /// Whether it has ended (a failed one counts: its error is reported
    /// when it is completed).
    fn is_done(&self, c: &mut Context) -> Result<bool>;
    /// Complete it once ended: deliver its data, give its status or error.
    fn complete(self: Box<Self>, c: &mut Context) -> Result<Status>;
    /// It failed or cannot be waited for: forget it.
    fn abandon(self: Box<Self>, _c: &mut Context) {}
    /// Why `MPI_Cancel` refuses it (MPI 4.1 §3.8.4).
    fn cannot_cancel(&self) -> MpiError;
    /// `MPI_Cancel` of it: refused unless the layer says otherwise.
    fn cancel(&self) -> Result<()> {
        Err(self.cannot_cancel())
    }
    /// Only the program ends it (a generalized request, §13.2), never
    /// progress: a wait that nothing else could end is refused rather than
    /// waiting for ever, and dropping it unfinished just lets it go.
    fn ended_by_program(&self) -> bool {
        false
    }
    /// It is completed inside the blocking call that started it (no
    /// request to charge for).
    fn in_blocking_call(&mut self) {}
    /// A test call's look at it before a progress pass.
    fn look(&self, _c: &mut Context) -> Result<Look> {
        Ok(Look::Host)
    }
}

/// What a test call's look at a [`Pending`] operation found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Look {
    /// A collective the device executes: the look advanced it, and it
    /// needs nothing from the host.
    Device,
    /// A collective the host executes.
    Collective,
    /// Anything else: it needs a progress pass.
    Host,
}

enum State<'b> {
    /// A point-to-point operation in the engine, on the caller's buffer
    /// (lent to the engine until completion; `scope` knows of it unless the
    /// buffer is `'static`).
    P2p { id: ReqId, target: Target, scope: Option<Rc<ScopeCore>> },
    /// An operation of a layer above (a collective, a one-sided one).
    Other(Box<dyn Pending + 'b>),
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

    /// A request for an operation of a layer above point-to-point.
    pub(crate) fn pending(shared: Shared, op: Box<dyn Pending + 'b>, group: Rc<Group>) -> Request<'b> {
        Request { shared, state: State::Other(op), group, _buf: PhantomData }
    }

    /// Complete a collective inside the blocking call that started it: no
    /// second MPI call is charged, and no request (a blocking collective
    /// has none).
    pub(crate) fn finish_blocking(mut self) -> Result<()> {
        if let State::Other(op) = &mut self.state {
            op.in_blocking_call();
        }
        self.wait_mut(false).map(drop)
    }

    fn still_pending(&self, call: &str) -> Result<()> {
        match self.state {
            State::Finished => Err(MpiError::Request(RequestMisuse::Completed { call: call.to_string() })),
            _ => Ok(()),
        }
    }

    /// Whether the operation has ended (a failed one counts: its error is
    /// reported when it is completed).
    pub(crate) fn is_done(&self, c: &mut Context) -> Result<bool> {
        Ok(match &self.state {
            State::P2p { id, .. } => c.engine()?.is_done(*id).unwrap_or(true),
            State::Other(op) => op.is_done(c)?,
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
                let d = e.wait(id).map_err(|e| self.group.error(e))?;
                charge_request(e);
                Ok(match (target, d) {
                    (Target::Recv, Done::Placed { status }) => self.group.status(status),
                    (Target::Recv, Done::Cancelled) => Status::cancelled(),
                    (Target::Send { .. }, Done::Cancelled) => Status::cancelled(),
                    (Target::Send { dest, tag, bytes }, _) => Status::new(dest, tag, bytes),
                    (Target::Recv, _) => Status::new(-1, 0, 0),
                })
            }
            State::Other(op) => op.complete(c),
            State::Finished => Err(MpiError::Request(RequestMisuse::Completed { call: "complete".into() })),
        }
    }

    /// Block until the operation completes (`MPI_Wait`).
    pub fn wait(mut self) -> Result<Status> {
        self.wait_mut(true)
    }

    /// Wait, charging one MPI call if `charge` (not when the call that
    /// completes several requests has charged already).
    fn wait_mut(&mut self, charge: bool) -> Result<Status> {
        self.still_pending("wait")?;
        let shared = self.shared.clone();
        let mut c = shared.borrow_mut();
        if charge {
            charge_call(c.engine()?);
        }
        if matches!(&self.state, State::Other(op) if op.ended_by_program()) && !self.is_done(&mut c)? {
            return Err(never_completed("wait", HeldBy::Generalized, 0));
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
        match std::mem::replace(&mut self.state, State::Finished) {
            State::P2p { id, scope, .. } => {
                if let Some(s) = scope {
                    s.unregister(&self.shared, id);
                }
                if let Ok(e) = c.engine() {
                    e.abandon(id);
                }
            }
            State::Other(op) => op.abandon(c),
            State::Finished => {}
        }
    }

    /// Cancel a receive or a send (`MPI_Cancel`, MPI 4.1 §3.8.4). The
    /// request must still be completed; its status then says whether the
    /// cancellation won ([`Status::is_cancelled`]: a receive's buffer is
    /// untouched, a send's message withdrawn before any receive matched
    /// it) or the operation had already matched (it completes normally).
    /// Collectives and one-sided operations cannot be cancelled (an error).
    pub fn cancel(&self) -> Result<()> {
        match &self.state {
            State::P2p { id, target: Target::Recv, .. } => {
                let mut c = self.shared.borrow_mut();
                let e = c.engine()?;
                charge_call(e);
                e.cancel_recv(*id)?;
                Ok(())
            }
            // A send: the receiver withdraws its message if no receive
            // has matched it; the send completes when it has answered.
            State::P2p { id, .. } => {
                let mut c = self.shared.borrow_mut();
                let e = c.engine()?;
                charge_call(e);
                e.cancel_send(*id)?;
                Ok(())
            }
            State::Other(op) => op.cancel(),
            State::Finished => Err(MpiError::Request(RequestMisuse::Completed { call: "cancel".into() })),
        }
    }

    /// Cancel the operation if it is a receive; anything else goes on
    /// (`MPI_Finalize` with requests left active: a receive nothing will
    /// match must not hold it up, and a send still goes out, for its
    /// receiver to report if it never receives it).
    pub fn cancel_receive(&self) -> Result<()> {
        match &self.state {
            State::P2p { target: Target::Recv, .. } => self.cancel(),
            _ => Ok(()),
        }
    }

    /// Complete the operation if it can (`MPI_Test`): `Ok(Ok(status))` when
    /// done, `Ok(Err(self))` when still pending.
    pub fn test(mut self) -> Result<std::result::Result<Status, Request<'b>>> {
        self.still_pending("test")?;
        let shared = self.shared.clone();
        let mut c = shared.borrow_mut();
        charge_call(c.engine()?);
        // Drive progress only if it has not ended already (as the engine's
        // own test does): a polling loop pays one pass per call, not more.
        let progressed = (|| {
            if self.is_done(&mut c)? {
                return Ok(true);
            }
            test_pass(&mut c, &[&self])?;
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

/// A request that is cancelled, not waited for, if it is dropped before it
/// completes (rsmpi's `CancelGuard`): for a receive the program may give
/// up on, say on an early return with `?`. A plain [`Request`] dropped
/// unfinished waits for its operation, which for a receive nobody will
/// match is for ever; dropped, this guard cancels the receive first (MPI
/// 4.1 §3.8.4: one not yet matched then ends at once, its buffer
/// untouched; one that matched completes), then waits. A send or a
/// collective cannot be cancelled and is waited for as usual.
/// [`CancelGuard::wait`] and [`CancelGuard::test`] complete it normally.
#[must_use = "a guard dropped at once cancels its receive at once"]
pub struct CancelGuard<'b>(Option<Request<'b>>);

impl<'b> From<Request<'b>> for CancelGuard<'b> {
    fn from(r: Request<'b>) -> CancelGuard<'b> {
        CancelGuard(Some(r))
    }
}

impl<'b> CancelGuard<'b> {
    /// The request, the guard disarmed. The option is empty only once
    /// this (which consumes the guard) or the drop has taken it.
    fn take(mut self) -> Request<'b> {
        self.0.take().expect("a guard holds its request until it is consumed")
    }

    /// Wait for the operation (`MPI_Wait`), not cancelling it.
    pub fn wait(self) -> Result<Status> {
        self.take().wait()
    }

    /// Complete the operation if it can (`MPI_Test`): `Ok(Ok(status))`
    /// when done, `Ok(Err(self))` when still pending.
    pub fn test(self) -> Result<std::result::Result<Status, CancelGuard<'b>>> {
        Ok(self.take().test()?.map_err(CancelGuard::from))
    }

    /// The request, without the guard: dropping it waits again.
    pub fn into_request(self) -> Request<'b> {
        self.take()
    }
}

impl Drop for CancelGuard<'_> {
    fn drop(&mut self) {
        if let Some(r) = self.0.take() {
            // A finished request or a send: nothing to cancel, and the
            // drop of `r` below does what a plain request's drop does.
            if matches!(r.state, State::P2p { target: Target::Recv, .. }) {
                if let Err(e) = r.cancel() {
                    eprintln!("MPI: a guarded receive could not be cancelled: {e}");
                }
            }
        }
    }
}

impl Drop for Request<'_> {
    /// Dropping an unfinished request waits for it; if that fails, or the
    /// thread is panicking, the engine forgets the request's buffer instead.
    /// A receive that may never be matched belongs in a [`CancelGuard`].
    fn drop(&mut self) {
        if matches!(self.state, State::Finished) {
            return;
        }
        let shared = self.shared.clone();
        if matches!(&self.state, State::Other(op) if op.ended_by_program()) {
            // Let go, as `MPI_Request_free` does: the program's value goes
            // once the program has completed it too.
            self.state = State::Finished;
            return;
        }
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

/// One progress pass of a test call over `waiting` (none of which has
/// ended): what `MPI_Test` does, and `MPI_Testall`/`any`/`some` once.
fn test_pass(c: &mut Context, waiting: &[&Request<'_>]) -> Result<()> {
    // A collective the device executes needs nothing from the host:
    // testing it is one look at its completion word (KACC's point).
    let mut only_collectives = true;
    let mut device_only = true;
    for r in waiting {
        let look = match &r.state {
            State::Other(op) => op.look(c)?,
            _ => Look::Host,
        };
        only_collectives &= look != Look::Host;
        device_only &= look == Look::Device;
    }
    if device_only {
        return Ok(());
    }
    // With a progress thread, testing a collective looks at its state; the
    // thread makes a pass when its poll period has passed (it runs while
    // this core spins on test too).
    if only_collectives && c.progress == crate::ProgressMode::Thread && !c.thread_due()? {
        return Ok(());
    }
    c.progress()?;
    Ok(())
}

impl Request<'_> {
    /// Complete a request that [`settle`] found ended: its status, or the
    /// error it ended with (then the engine has forgotten its buffer).
    /// Charges the request's processing, not an MPI call: the call that
    /// settled it was charged. On a request that has not ended it waits,
    /// as [`Request::wait`] does.
    pub fn finish(mut self) -> Result<Status> {
        self.still_pending("finish")?;
        let shared = self.shared.clone();
        let mut c = shared.borrow_mut();
        // Ended: complete it with no further progress pass.
        if self.is_done(&mut c)? {
            return self.complete(&mut c);
        }
        drop(c);
        self.wait_mut(false)
    }
}

/// The request of an operation on `MPI_PROC_NULL` (MPI 4.1 §3.10): it
/// is complete from its start, with the null process's status (source
/// `PROC_NULL`, any tag, no bytes), and a cancel of it changes nothing.
struct NullProcess;

impl Pending for NullProcess {
    fn is_done(&self, _c: &mut Context) -> Result<bool> {
        Ok(true)
    }

    fn complete(self: Box<Self>, _c: &mut Context) -> Result<Status> {
        Ok(Status::proc_null())
    }

    fn cannot_cancel(&self) -> MpiError {
        MpiError::Internal { what: "a cancel of an operation on MPI_PROC_NULL was refused".into() }
    }

    fn cancel(&self) -> Result<()> {
        Ok(())
    }
}

impl<'b> Request<'b> {
    /// The request of a non-blocking operation on `MPI_PROC_NULL`:
    /// complete at once (MPI 4.1 §3.10).
    pub(crate) fn proc_null(shared: Shared, group: Rc<Group>) -> Request<'b> {
        Request::pending(shared, Box::new(NullProcess), group)
    }
}

/// A request's part in a call that completes several (MPI 4.1 §3.7.5).
pub enum Part<'r, 'b> {
    /// Takes no part: a null request, or an inactive persistent one.
    Idle,
    /// Complete already: an operation on `MPI_PROC_NULL`, or one an
    /// earlier call found complete and kept.
    Ended,
    /// Ends when its request has, and every request it ends with (the
    /// other half of `MPI_Isendrecv`; usually none, which allocates
    /// nothing: a polling loop's `MPI_Test` stays cheap).
    Waiting(&'r Request<'b>, Vec<&'r Request<'b>>),
    /// Active, but only the program can end it, never progress: a C
    /// generalized request not yet complete (§13.2), a started partitioned
    /// send with partitions not yet ready (§4.2). It never ends inside the
    /// call; a blocking call that only it could end fails
    /// ([`RequestMisuse::NeverCompleted`]) unless another thread may end it
    /// ([`settle_shared`]).
    Held(HeldBy),
}

impl<'r, 'b> Part<'r, 'b> {
    /// The engine requests this part waits for.
    fn requests(&self) -> impl Iterator<Item = &'r Request<'b>> + '_ {
        let (op, with) = match self {
            Part::Waiting(op, with) => (Some(*op), with.as_slice()),
            _ => (None, &[][..]),
        };
        op.into_iter().chain(with.iter().copied())
    }
}

/// How much of a set a completion call waits for (MPI 4.1 §3.7.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    /// Every part (`MPI_Waitall`, `MPI_Testall`).
    All,
    /// At least one part (`MPI_Waitany`, `MPI_Waitsome` and their tests).
    One,
}

/// The completion engine of every call that completes several requests,
/// for the Rust API and the C ABI alike (MPI 4.1 §3.7.5): one MPI call is
/// charged; with `block`, the engine's wait runs (progress, then idle
/// when a pass moved nothing) until `need` is met, else one progress pass
/// is made unless `need` is met already. Returns which parts have ended
/// (an [`Part::Idle`] part never has); nothing is completed: complete
/// each ended request with [`Request::finish`]. A failed operation counts
/// as ended (its error comes from `finish`). With nothing but idle parts
/// it returns at once, all `false` (the call's `MPI_UNDEFINED` case).
///
/// Errors here are the library's own (MPI finalized, the engine failing)
/// or a request already completed in the set (`call` names the call).
pub fn settle(parts: &[Part<'_, '_>], need: Need, block: bool, call: &str) -> Result<Vec<bool>> {
    settle_with(parts, need, block.then_some(&|_| false), call)
}

/// [`settle`] blocking, but giving up when `stop` holds where the wait
/// would otherwise idle: the result may then meet `need` or not. `stop` is
/// told whether anything moved since the wait began (a progress pass did
/// work, or an idle wait ended). For `MPI_THREAD_MULTIPLE`: a thread that
/// waits inside the library lets another in when `stop` says one wants
/// it, and waits again after. Without contention it is exactly
/// `settle(parts, need, true, call)`.
pub fn settle_until(parts: &[Part<'_, '_>], need: Need, call: &str, stop: &dyn Fn(bool) -> bool) -> Result<Vec<bool>> {
    settle_with(parts, need, Some(stop), call)
}

fn settle_with(
    parts: &[Part<'_, '_>],
    need: Need,
    block: Option<&dyn Fn(bool) -> bool>,
    call: &str,
) -> Result<Vec<bool>> {
    let mut shared = None;
    for r in parts.iter().flat_map(Part::requests) {
        r.still_pending(call)?;
        shared.get_or_insert_with(|| r.shared.clone());
    }
    let ended_now = |c: &mut Context| -> Result<Vec<bool>> {
        let mut out = Vec::with_capacity(parts.len());
        for p in parts {
            out.push(match p {
                Part::Idle | Part::Held(_) => false,
                Part::Ended => true,
                Part::Waiting(..) => {
                    let mut all = true;
                    for r in p.requests() {
                        all = all && r.is_done(c)?;
                    }
                    all
                }
            });
        }
        Ok(out)
    };
    let met = |ended: &[bool]| match need {
        Need::All => parts.iter().zip(ended).all(|(p, &e)| e || matches!(p, Part::Idle | Part::Held(_))),
        Need::One => ended.iter().any(|&e| e),
    };
    let Some(shared) = shared else {
        // Nothing in the engine: every part is idle or complete already.
        return Ok(parts.iter().map(|p| matches!(p, Part::Ended)).collect());
    };
    let mut c = shared.borrow_mut();
    charge_call(c.engine()?);
    let ended = ended_now(&mut c)?;
    if met(&ended) {
        return Ok(ended);
    }
    if block.is_some() {
        only_the_program_could_end(parts, &ended, need, call)?;
    }
    let Some(stop) = block else {
        let waiting: Vec<&Request<'_>> =
            parts.iter().zip(&ended).filter(|(_, &e)| !e).flat_map(|(p, _)| p.requests()).collect();
        test_pass(&mut c, &waiting)?;
        return ended_now(&mut c);
    };
    let mut last = ended;
    c.wait_until_or(
        |c| {
            last = ended_now(c)?;
            Ok(met(&last))
        },
        stop,
    )?;
    Ok(last)
}

/// Refuse a wait that only the program could end: a generalized request
/// not yet complete that `need` waits for (all of them, or the only ones
/// left), which nothing can complete while this thread waits.
fn only_the_program_could_end(parts: &[Part<'_, '_>], ended: &[bool], need: Need, call: &str) -> Result<()> {
    let by_program = |r: &&Request<'_>| matches!(&r.state, State::Other(op) if op.ended_by_program());
    let open: Vec<(usize, &Part<'_, '_>)> = (parts.iter().enumerate().zip(ended))
        .filter(|((_, p), e)| !**e && !matches!(p, Part::Idle | Part::Held(_)))
        .map(|(p, _)| p)
        .collect();
    let stuck = |(_, p): &&(usize, &Part<'_, '_>)| p.requests().any(|r| by_program(&r));
    let never = match need {
        Need::All => open.iter().find(stuck),
        Need::One => open.first().filter(|_| open.iter().all(|p| stuck(&p))),
    };
    match never {
        Some(&(index, _)) => Err(never_completed(call, HeldBy::Generalized, index)),
        None => Ok(()),
    }
}

fn never_completed(call: &str, by: HeldBy, index: usize) -> MpiError {
    MpiError::Request(RequestMisuse::NeverCompleted { call: call.into(), by, index })
}

/// The other threads of a process that waits under
/// `MPI_THREAD_MULTIPLE` (MPI 4.1 §11.6.3): whether any exists that
/// could end a [`Part::Held`] request, and when a blocking call gives the
/// lock up to one ([`settle_until`]'s `stop`).
pub struct Threads<'a> {
    /// Whether the process has another thread (asked only when a held
    /// request is all a wait could end).
    pub others_exist: &'a dyn Fn() -> bool,
    /// Whether to give the wait up where it would idle (see [`settle_until`]).
    pub stop: &'a dyn Fn(bool) -> bool,
}

/// What a completion call found ([`settle_shared`]).
#[derive(Debug, PartialEq, Eq)]
pub enum Settled {
    /// Which parts have ended (as [`settle`] returns them).
    Ended(Vec<bool>),
    /// A blocking call under `MPI_THREAD_MULTIPLE` did not meet its need
    /// and gives the lock up to another thread, then calls again; `held`:
    /// a held request is among what it waits for, so it may first wait for
    /// something to happen.
    Again {
        /// A [`Part::Held`] request is among what the call waits for.
        held: bool,
    },
}

/// The completion of every call that completes requests, of the C ABI as
/// of the Rust API (MPI 4.1 §3.7.3-3.7.5), with held requests
/// ([`Part::Held`]) and other threads: [`settle`] when `threads` is
/// `None` (one thread, or a test), else a blocking wait that gives the
/// lock up as [`settle_until`] does and reports [`Settled::Again`] when
/// its need is not met.
///
/// A blocking call whose need only held requests could meet (all of
/// them for [`Need::All`]; every part taking part for [`Need::One`])
/// fails with [`RequestMisuse::NeverCompleted`] unless another thread
/// exists that could end them.
pub fn settle_shared(
    parts: &[Part<'_, '_>],
    need: Need,
    block: bool,
    call: &str,
    threads: Option<&Threads<'_>>,
) -> Result<Settled> {
    let threads = threads.filter(|_| block);
    let held = |p: &Part<'_, '_>| match p {
        Part::Held(by) => Some(*by),
        _ => None,
    };
    if let (true, Some((index, by))) = (block, parts.iter().enumerate().find_map(|(i, p)| Some((i, held(p)?)))) {
        let stuck = need == Need::All || parts.iter().all(|p| matches!(p, Part::Idle | Part::Held(_)));
        if stuck && !threads.is_some_and(|t| (t.others_exist)()) {
            return Err(never_completed(call, by, index));
        }
    }
    let Some(threads) = threads else {
        return settle(parts, need, block, call).map(Settled::Ended);
    };
    let ended = settle_until(parts, need, call, threads.stop)?;
    let done = match need {
        Need::All => parts.iter().zip(&ended).all(|(p, &e)| e || matches!(p, Part::Idle)),
        Need::One => parts.iter().all(|p| matches!(p, Part::Idle)) || ended.iter().any(|&e| e),
    };
    match done {
        true => Ok(Settled::Ended(ended)),
        false => Ok(Settled::Again { held: parts.iter().any(|p| held(p).is_some()) }),
    }
}

/// The parts of a list of Rust requests, all taking part.
fn parts_of<'r, 'b>(requests: &'r [Request<'b>]) -> Vec<Part<'r, 'b>> {
    requests.iter().map(|r| Part::Waiting(r, Vec::new())).collect()
}

/// Wait for every request (`MPI_Waitall`, one MPI call); statuses in order.
/// The first error is returned after every request has been given the
/// chance to finish.
pub fn wait_all(requests: Vec<Request<'_>>) -> Result<Vec<Status>> {
    // Progress until all have ended (an error surfaces per request below).
    let _ = settle(&parts_of(&requests), Need::All, true, "wait_all");
    let mut out = Vec::with_capacity(requests.len());
    let mut first_err = None;
    for r in requests {
        match r.finish() {
            Ok(s) => out.push(s),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// Wait for one request (`MPI_Waitany`): removes it from `requests` and
/// returns its former index and status.
pub fn wait_any(requests: &mut Vec<Request<'_>>) -> Result<(usize, Status)> {
    if requests.is_empty() {
        return Err(MpiError::Request(RequestMisuse::Empty { call: "wait_any" }));
    }
    let ended = settle(&parts_of(requests), Need::One, true, "wait_any")?;
    let i = ended
        .iter()
        .position(|&e| e)
        .ok_or_else(|| MpiError::Internal { what: "wait_any returned with no request ended".into() })?;
    Ok((i, requests.remove(i).finish()?))
}

/// Test for one request (`MPI_Testany`, one MPI call): the first found
/// complete is removed from `requests`, with its former index and status;
/// `None` when none has completed.
pub fn test_any(requests: &mut Vec<Request<'_>>) -> Result<Option<(usize, Status)>> {
    let ended = settle(&parts_of(requests), Need::One, false, "test_any")?;
    let Some(i) = ended.iter().position(|&e| e) else { return Ok(None) };
    Ok(Some((i, requests.remove(i).finish()?)))
}

/// Wait until at least one request completes (`MPI_Waitsome`, one MPI
/// call), and complete every one that has: they are removed from
/// `requests`, and returned with their former indices and outcomes (an
/// operation that failed gives its error in its place, and the others
/// still complete: MPI 4.1 §3.7.5's `MPI_ERR_IN_STATUS`).
pub fn wait_some(requests: &mut Vec<Request<'_>>) -> Result<Vec<(usize, Result<Status>)>> {
    some(requests, true, "wait_some")
}

/// As [`wait_some`] without waiting (`MPI_Testsome`): empty when none has
/// completed.
pub fn test_some(requests: &mut Vec<Request<'_>>) -> Result<Vec<(usize, Result<Status>)>> {
    some(requests, false, "test_some")
}

fn some(requests: &mut Vec<Request<'_>>, block: bool, call: &str) -> Result<Vec<(usize, Result<Status>)>> {
    if requests.is_empty() {
        return Ok(Vec::new());
    }
    let ended = settle(&parts_of(requests), Need::One, block, call)?;
    let mut keep = Vec::with_capacity(requests.len());
    let mut out = Vec::new();
    for (i, (r, e)) in std::mem::take(requests).into_iter().zip(ended).enumerate() {
        if e {
            out.push((i, r.finish()));
        } else {
            keep.push(r);
        }
    }
    *requests = keep;
    Ok(out)
}

/// Test every request (`MPI_Testall`, one MPI call): all statuses if all
/// completed, otherwise the requests back, still pending.
pub fn test_all(requests: Vec<Request<'_>>) -> Result<std::result::Result<Vec<Status>, Vec<Request<'_>>>> {
    let ended = settle(&parts_of(&requests), Need::All, false, "test_all")?;
    if !ended.iter().all(|&e| e) {
        return Ok(Err(requests));
    }
    let mut out = Vec::with_capacity(requests.len());
    for r in requests {
        out.push(r.finish()?);
    }
    Ok(Ok(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    const ALL: Need = Need::All;
    const ONE: Need = Need::One;
    const GREQ: Part<'static, 'static> = Part::Held(HeldBy::Generalized);
    const PARTS: Part<'static, 'static> = Part::Held(HeldBy::Partitions);

    fn never(r: Result<Settled>) -> (String, HeldBy, usize) {
        match r {
            Err(MpiError::Request(RequestMisuse::NeverCompleted { call, by, index })) => (call, by, index),
            other => panic!("not refused as a wait for ever: {other:?}"),
        }
    }

    #[test]
    fn a_blocking_wait_only_held_requests_could_end_is_refused_and_names_it() {
        let (call, by, index) = never(settle_shared(&[Part::Ended, PARTS], ALL, true, "MPI_Waitall", None));
        assert_eq!((call.as_str(), by, index), ("MPI_Waitall", HeldBy::Partitions, 1));
        // For one, only when nothing else takes part.
        assert_eq!(never(settle_shared(&[Part::Idle, GREQ], ONE, true, "MPI_Waitany", None)).2, 1);
        let any = settle_shared(&[Part::Ended, GREQ], ONE, true, "MPI_Waitany", None);
        assert_eq!(any.ok(), Some(Settled::Ended(vec![true, false])));
        let text = MpiError::Request(RequestMisuse::NeverCompleted {
            call: "MPI_Wait".into(),
            by: HeldBy::Generalized,
            index: 0,
        });
        assert!(text.to_string().contains("MPI_Grequest_complete"), "{text}");
    }

    #[test]
    fn a_test_of_held_requests_reports_them_not_ended() {
        let r = settle_shared(&[GREQ, Part::Idle, Part::Ended], ALL, false, "MPI_Testall", None);
        assert_eq!(r.ok(), Some(Settled::Ended(vec![false, false, true])));
        // Threads play no part in a call that does not block.
        let asked = Cell::new(0);
        let others = || {
            asked.set(asked.get() + 1);
            false
        };
        let t = Threads { others_exist: &others, stop: &|_| true };
        let r = settle_shared(&[GREQ], ALL, false, "MPI_Test", Some(&t));
        assert_eq!((r.ok(), asked.get()), (Some(Settled::Ended(vec![false])), 0));
    }

    #[test]
    fn with_other_threads_a_held_wait_gives_the_lock_up_instead() {
        let asked = Cell::new(0);
        let yes = || {
            asked.set(asked.get() + 1);
            true
        };
        let t = Threads { others_exist: &yes, stop: &|_| true };
        let r = settle_shared(&[Part::Ended, PARTS], ALL, true, "MPI_Waitall", Some(&t));
        assert_eq!((r.ok(), asked.get()), (Some(Settled::Again { held: true }), 1));
        // A process whose only thread waits: refused as without threads.
        let t = Threads { others_exist: &|| false, stop: &|_| true };
        assert_eq!(never(settle_shared(&[PARTS], ALL, true, "MPI_Wait", Some(&t))).1, HeldBy::Partitions);
        // Nothing held: the other threads are not asked, and a met need ends.
        let t = Threads { others_exist: &yes, stop: &|_| true };
        let r = settle_shared(&[Part::Idle, Part::Ended], ALL, true, "MPI_Waitall", Some(&t));
        assert_eq!((r.ok(), asked.get()), (Some(Settled::Ended(vec![false, true])), 1));
        let r = settle_shared(&[Part::Idle], ONE, true, "MPI_Waitany", Some(&t));
        assert_eq!(r.ok(), Some(Settled::Ended(vec![false])));
    }
}
