//! Generalized requests from Rust (MPI 4.1 §13.2, `mpi::greq`): reported by
//! the completion calls once the program completes them, cancelled through
//! their callback, freed once both sides are done, and never waited for in
//! vain.

use std::cell::Cell;
use std::rc::Rc;

use mpi::greq::Generalized;
use mpi::request::{test_any, wait_all, wait_any};
use mpi::traits::*;
use mpi::{MpiError, RequestMisuse, SimpleCommunicator, Status};

use crate::{e, R};

/// The program's operation: what it reports, and what it was told.
struct Op {
    report: Status,
    cancelled: Rc<Cell<Option<bool>>>,
    freed: Rc<Cell<u32>>,
}

impl Generalized for Op {
    fn query(&mut self) -> mpi::Result<Status> {
        Ok(self.report)
    }
    fn cancel(&mut self, complete: bool) -> mpi::Result<()> {
        self.cancelled.set(Some(complete));
        Ok(())
    }
}

impl Drop for Op {
    fn drop(&mut self) {
        self.freed.set(self.freed.get() + 1);
    }
}

fn never(r: mpi::Result<impl std::fmt::Debug>, what: &str) -> R {
    match r {
        Err(MpiError::Request(RequestMisuse::NeverCompleted { .. })) => Ok(()),
        other => Err(format!("{what}: not refused as a wait that could never end: {other:?}")),
    }
}

pub fn greq(w: &SimpleCommunicator) -> R {
    let me = w.rank();
    let (cancelled, freed) = (Rc::new(Cell::new(None)), Rc::new(Cell::new(0)));
    let op = |bytes: u64| Op {
        report: Status::reported(me, 40 + bytes as i32, bytes, false),
        cancelled: cancelled.clone(),
        freed: freed.clone(),
    };
    // Tested until the program completes it; then reported as it says.
    let (r, done) = mpi::greq::start(w, op(8));
    let r = match r.test().map_err(e)? {
        Ok(st) => return Err(format!("reported before its completion: {st:?}")),
        Err(r) => r,
    };
    r.cancel().map_err(e)?;
    check!(cancelled.get() == Some(false), "cancel_fn told it was not complete: {:?}", cancelled.get());
    done.complete();
    check!(freed.get() == 0, "freed before it was reported");
    let st = r.wait().map_err(e)?;
    check!(st.source_rank() == me && st.tag() == 48 && st.bytes() == 8, "its status: {st:?}");
    check!(freed.get() == 1, "freed once reported and completed: {}", freed.get());
    // A wait that only the program could end is refused, not a hang.
    let (r, done) = mpi::greq::start(w, op(1));
    never(r.wait(), "wait")?;
    check!(freed.get() == 1, "the program's side still holds it");
    drop(done);
    check!(freed.get() == 2, "freed once both sides let go: {}", freed.get());
    // Beside requests that progress ends: wait_any takes those, wait_all
    // and a wait_any of nothing else are refused.
    let (g, done) = mpi::greq::start(w, op(2));
    let to = w.process_at_rank((me + 1) % w.size());
    let from = w.process_at_rank((me + w.size() - 1) % w.size());
    let mut got = [0u32; 1];
    let mine = [me as u32];
    mpi::request::scope(|sc| -> R {
        let recv = from.immediate_receive_into_with_tag(sc, &mut got[..], 5).map_err(e)?;
        let send = to.immediate_send_with_tag(sc, &mine[..], 5).map_err(e)?;
        let mut list = vec![g, recv, send];
        let mut left = 2;
        while left > 0 {
            let (i, _) = wait_any(&mut list).map_err(e)?;
            check!(i != 0, "the generalized request was reported before its completion");
            left -= 1;
        }
        never(wait_any(&mut list), "wait_any of an incomplete generalized request alone")?;
        check!(test_any(&mut list).map_err(e)?.is_none(), "test_any reports nothing yet");
        done.complete();
        let sts = wait_all(list).map_err(e)?;
        check!(sts.len() == 1 && sts[0].bytes() == 2, "wait_all reports it once complete: {sts:?}");
        Ok(())
    })?;
    check!(got[0] == ((me + w.size() - 1) % w.size()) as u32, "the message beside it: {}", got[0]);
    let (g, _done) = mpi::greq::start(w, op(3));
    never(wait_all(vec![g]), "wait_all of an incomplete generalized request")?;
    w.barrier().map_err(e)?;
    Ok(())
}
