//! Non-blocking requests (MPI 4.1 §3.7): wait, test, wait_all, wait_any,
//! test_all. A request borrows its buffer until it completes; dropping an
//! unfinished request waits for it, so the buffer is never released early.

use std::rc::Rc;

use adi::{Done, ReqId};

use crate::comm::{Group, Status};
use crate::error::{MpiError, Result};
use crate::universe::{charge_call, charge_request, Shared};
use crate::{Rank, Tag};

pub(crate) enum Target<'b> {
    Send { dest: Rank, tag: Tag, bytes: u64 },
    Recv(&'b mut [u8]),
}

/// A pending non-blocking operation.
#[must_use = "a request must be waited for or tested until it completes"]
pub struct Request<'b> {
    shared: Shared,
    id: Option<ReqId>,
    target: Target<'b>,
    group: Rc<Group>,
}

impl<'b> Request<'b> {
    pub(crate) fn new(shared: Shared, id: ReqId, target: Target<'b>, group: Rc<Group>) -> Request<'b> {
        Request { shared, id: Some(id), target, group }
    }

    fn finish(&mut self, d: Done) -> Status {
        self.id = None;
        match (&mut self.target, d) {
            (Target::Recv(buf), Done::Received { status, data }) => {
                buf[..data.len()].copy_from_slice(&data);
                self.group.status(status)
            }
            (Target::Send { dest, tag, bytes }, _) => Status::new(*dest, *tag, *bytes),
            (Target::Recv(_), Done::Sent) => Status::new(-1, 0, 0),
        }
    }

    /// Block until the operation completes (`MPI_Wait`).
    pub fn wait(mut self) -> Result<Status> {
        self.wait_mut(true)
    }

    /// Wait, charging one MPI call if `charge` (not when the collective
    /// call that completes several requests has charged already).
    fn wait_mut(&mut self, charge: bool) -> Result<Status> {
        let Some(id) = self.id else { return Err(MpiError::Invalid("request already completed".into())) };
        let d = {
            let mut c = self.shared.borrow_mut();
            let e = c.engine()?;
            if charge {
                charge_call(e);
            }
            let r = e.wait(id);
            if r.is_err() {
                self.id = None;
            }
            let d = r?;
            charge_request(e);
            d
        };
        Ok(self.finish(d))
    }

    /// Complete the operation if it can (`MPI_Test`): `Ok(Ok(status))` when
    /// done, `Ok(Err(self))` when still pending.
    pub fn test(mut self) -> Result<std::result::Result<Status, Request<'b>>> {
        let Some(id) = self.id else { return Err(MpiError::Invalid("request already completed".into())) };
        let d = {
            let mut c = self.shared.borrow_mut();
            let e = c.engine()?;
            charge_call(e);
            match e.test(id) {
                Ok(Some(d)) => {
                    charge_request(e);
                    Some(d)
                }
                Ok(None) => None,
                Err(err) => {
                    self.id = None;
                    return Err(err.into());
                }
            }
        };
        Ok(match d {
            Some(d) => Ok(self.finish(d)),
            None => Err(self),
        })
    }
}

impl Drop for Request<'_> {
    fn drop(&mut self) {
        if self.id.is_some() {
            let _ = self.wait_mut(true);
        }
    }
}

/// Run `f` on the engine of `requests` (they all share one) after charging
/// one MPI call; `None` for an empty list.
fn with_engine<T>(
    requests: &[Request<'_>],
    f: impl FnOnce(&mut adi::Engine) -> std::result::Result<T, adi::AdiError>,
) -> Result<Option<T>> {
    let Some(r) = requests.first() else { return Ok(None) };
    let shared = r.shared.clone();
    let mut c = shared.borrow_mut();
    let e = c.engine()?;
    charge_call(e);
    Ok(Some(f(e)?))
}

/// The engine ids of `requests`, or an error if one has completed already.
fn pending_ids(requests: &[Request<'_>], call: &str) -> Result<Vec<ReqId>> {
    requests.iter().map(|r| r.id.ok_or_else(|| MpiError::Invalid(format!("{call} on a completed request")))).collect()
}

/// Wait for every request (`MPI_Waitall`, one MPI call); statuses in order.
/// The first error is returned after every request has been given the
/// chance to finish.
pub fn wait_all(requests: Vec<Request<'_>>) -> Result<Vec<Status>> {
    let ids = pending_ids(&requests, "wait_all")?;
    // Progress until all are done (an engine error surfaces per request below).
    let _ = with_engine(&requests, |e| e.wait_until(|e| ids.iter().all(|id| e.is_done(*id).unwrap_or(true))));
    let mut out = Vec::with_capacity(requests.len());
    let mut first_err = None;
    for mut r in requests {
        match r.wait_mut(false) {
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
    let ids = pending_ids(requests, "wait_any")?;
    let found = with_engine(requests, |e| {
        let done = |e: &adi::Engine, id: &ReqId| e.is_done(*id).unwrap_or(true);
        e.wait_until(|e| ids.iter().any(|id| done(e, id)))?;
        Ok(ids.iter().position(|id| done(e, id)))
    })?;
    let i = found.flatten().ok_or_else(|| MpiError::Invalid("wait_any on an empty list".into()))?;
    // Completing through the request keeps its id bookkeeping right on error.
    let mut r = requests.remove(i);
    Ok((i, r.wait_mut(false)?))
}

/// Test every request (`MPI_Testall`, one MPI call): all statuses if all
/// completed, otherwise the requests back, still pending.
pub fn test_all(requests: Vec<Request<'_>>) -> Result<std::result::Result<Vec<Status>, Vec<Request<'_>>>> {
    let ids = pending_ids(&requests, "test_all")?;
    let all_done = with_engine(&requests, |e| {
        e.progress()?;
        Ok(ids.iter().all(|id| e.is_done(*id).unwrap_or(true)))
    })?;
    if all_done.unwrap_or(true) {
        let mut out = Vec::with_capacity(requests.len());
        for mut r in requests {
            out.push(r.wait_mut(false)?);
        }
        Ok(Ok(out))
    } else {
        Ok(Err(requests))
    }
}
