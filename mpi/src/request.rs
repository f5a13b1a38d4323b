//! Non-blocking requests (MPI 4.1 §3.7 and §6.12): wait, test, wait_all,
//! wait_any, test_all, for point-to-point operations and non-blocking
//! collectives alike. A request borrows its buffer until it completes;
//! dropping an unfinished request waits for it, so the buffer is never
//! released early.

use std::cell::RefCell;
use std::rc::Rc;

use adi::{Done, ReqId};

use crate::coll::exec::Exec;
use crate::comm::{Group, Status};
use crate::error::{MpiError, Result};
use crate::universe::{charge_call, charge_request, Context, Shared};
use crate::{Rank, Tag};

pub(crate) enum Target<'b> {
    Send { dest: Rank, tag: Tag, bytes: u64 },
    Recv(&'b mut [u8]),
}

enum State<'b> {
    /// A point-to-point operation in the engine.
    P2p { id: ReqId, target: Target<'b> },
    /// A collective schedule being executed; its result goes to `out`.
    /// `blocking`: started by a blocking call, which has no request to
    /// charge for when it completes.
    Coll { exec: Rc<RefCell<Exec>>, out: Option<&'b mut [u8]>, blocking: bool },
    /// Completed (or failed): nothing left to wait for.
    Finished,
}

/// A pending non-blocking operation.
#[must_use = "a request must be waited for or tested until it completes"]
pub struct Request<'b> {
    shared: Shared,
    state: State<'b>,
    group: Rc<Group>,
}

impl<'b> Request<'b> {
    pub(crate) fn new(shared: Shared, id: ReqId, target: Target<'b>, group: Rc<Group>) -> Request<'b> {
        Request { shared, state: State::P2p { id, target }, group }
    }

    /// A non-blocking collective whose execution is already registered with
    /// the progress of every wait; its result goes to `out`.
    pub(crate) fn collective(
        shared: Shared,
        exec: Rc<RefCell<Exec>>,
        out: Option<&'b mut [u8]>,
        group: Rc<Group>,
    ) -> Request<'b> {
        Request { shared, state: State::Coll { exec, out, blocking: false }, group }
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
            State::P2p { id, target } => {
                let e = c.engine()?;
                let d = e.wait(id)?;
                charge_request(e);
                Ok(match (target, d) {
                    (Target::Recv(buf), Done::Received { status, data }) => {
                        buf[..data.len()].copy_from_slice(&data);
                        self.group.status(status)
                    }
                    (Target::Send { dest, tag, bytes }, _) => Status::new(dest, tag, bytes),
                    (Target::Recv(_), Done::Sent) => Status::new(-1, 0, 0),
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
            self.state = State::Finished;
            return Err(e);
        }
        self.complete(&mut c)
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
                self.state = State::Finished;
                Err(e)
            }
        }
    }
}

impl Drop for Request<'_> {
    fn drop(&mut self) {
        if !matches!(self.state, State::Finished) {
            let _ = self.wait_mut(true);
        }
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
