//! Non-blocking requests (MPI 4.1 §3.7): wait, test, wait_all, wait_any,
//! test_all. A request borrows its buffer until it completes; dropping an
//! unfinished request waits for it, so the buffer is never released early.

use std::rc::Rc;

use adi::{Done, ReqId};

use crate::comm::{done_status, Group, Status};
use crate::error::{MpiError, Result};
use crate::universe::{charge_call, Shared};
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
            (Target::Recv(buf), d @ Done::Received { .. }) => {
                let st = done_status(&d, &self.group).unwrap_or(Status::new(-1, 0, 0));
                if let Done::Received { data, .. } = d {
                    buf[..data.len()].copy_from_slice(&data);
                }
                st
            }
            (Target::Send { dest, tag, bytes }, _) => Status::new(*dest, *tag, *bytes),
            (Target::Recv(_), Done::Sent) => Status::new(-1, 0, 0),
        }
    }

    /// Block until the operation completes (`MPI_Wait`).
    pub fn wait(mut self) -> Result<Status> {
        self.wait_mut()
    }

    fn wait_mut(&mut self) -> Result<Status> {
        let Some(id) = self.id else { return Err(MpiError::Invalid("request already completed".into())) };
        let d = {
            let mut c = self.shared.borrow_mut();
            let e = c.engine()?;
            charge_call(e);
            let r = e.wait(id);
            if r.is_err() {
                self.id = None;
            }
            r?
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
                Ok(d) => d,
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

    fn is_done(&self) -> bool {
        match self.id {
            None => true,
            Some(id) => self.shared.borrow_mut().engine().map(|e| e.is_complete(id).unwrap_or(true)).unwrap_or(true),
        }
    }
}

impl Drop for Request<'_> {
    fn drop(&mut self) {
        if self.id.is_some() {
            let _ = self.wait_mut();
        }
    }
}

/// Wait for every request (`MPI_Waitall`); statuses in order. The first
/// error is returned after every request has been given the chance to finish.
pub fn wait_all(requests: Vec<Request<'_>>) -> Result<Vec<Status>> {
    let mut out = Vec::with_capacity(requests.len());
    let mut first_err = None;
    for r in requests {
        match r.wait() {
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
        return Err(MpiError::Invalid("wait_any on an empty list".into()));
    }
    let shared = requests[0].shared.clone();
    let ids: Vec<ReqId> = requests.iter().filter_map(|r| r.id).collect();
    if ids.len() != requests.len() {
        return Err(MpiError::Invalid("wait_any on a completed request".into()));
    }
    {
        let mut c = shared.borrow_mut();
        let e = c.engine()?;
        charge_call(e);
        e.wait_until(|e| ids.iter().any(|id| e.is_complete(*id).unwrap_or(true)))?;
    }
    let i = requests.iter().position(|r| r.is_done()).unwrap_or(0);
    let r = requests.remove(i);
    Ok((i, r.wait()?))
}

/// Test every request (`MPI_Testall`): all statuses if all completed,
/// otherwise the requests back, still pending.
pub fn test_all(requests: Vec<Request<'_>>) -> Result<std::result::Result<Vec<Status>, Vec<Request<'_>>>> {
    if let Some(r) = requests.first() {
        let shared = r.shared.clone();
        let mut c = shared.borrow_mut();
        let e = c.engine()?;
        charge_call(e);
        e.progress()?;
    }
    if requests.iter().all(|r| r.is_done()) {
        wait_all(requests).map(Ok)
    } else {
        Ok(Err(requests))
    }
}
