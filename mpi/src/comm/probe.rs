//! Probes the C ABI needs beside [`Source::probe`]: matched probes
//! (`MPI_Mprobe`, `MPI_Improbe`; MPI 4.1 §3.8.2), and blocking probes
//! that give up where they would idle while another thread wants the
//! library (`MPI_THREAD_MULTIPLE`).

use super::*;
use crate::context::charge_call;

/// Matched probe (`MPI_Mprobe`, or `MPI_Improbe` when not `block`):
/// the message found is taken out of matching, for [`crate::staged::direct::imrecv`] alone.
pub fn mprobe<S: Source + ?Sized>(from: &S, tag: Option<Tag>, block: bool) -> Result<Option<Message>> {
    let tag = tag_sel(tag)?;
    let comm = from.comm();
    let src = from.adi_source()?;
    let mut c = comm.shared.borrow_mut();
    charge_call(c.engine()?);
    let msg = matched_probe(&mut c, src, tag, comm.ctx, block)?;
    Ok(msg.map(|msg| Message { msg, comm: comm.clone() }))
}

/// Blocking probe (`MPI_Probe`) that gives up (`None`) where it would
/// idle once `stop` holds: another thread wants the library
/// (`MPI_THREAD_MULTIPLE`; `stop` is told whether anything moved since
/// the probe began). Without contention, [`Source::probe`].
pub fn probe_until<S: Source + ?Sized>(
    from: &S,
    tag: Option<Tag>,
    stop: &dyn Fn(bool) -> bool,
) -> Result<Option<Status>> {
    let tag = tag_sel(tag)?;
    if from.is_proc_null() {
        return Ok(Some(Status::proc_null()));
    }
    let comm = from.comm();
    let src = from.adi_source()?;
    let mut c = comm.shared.borrow_mut();
    charge_call(c.engine()?);
    Ok(c.engine()?.probe_until(src, tag, comm.ctx, stop)?.map(|s| comm.status(s)))
}

/// Blocking matched probe ([`mprobe`] with `block`) that gives up
/// (`None`) where it would idle once `stop` holds, as [`probe_until`].
pub fn mprobe_until<S: Source + ?Sized>(
    from: &S,
    tag: Option<Tag>,
    stop: &dyn Fn(bool) -> bool,
) -> Result<Option<Message>> {
    let tag = tag_sel(tag)?;
    let comm = from.comm();
    let src = from.adi_source()?;
    let mut c = comm.shared.borrow_mut();
    charge_call(c.engine()?);
    let msg = c.engine()?.mprobe_until(src, tag, comm.ctx, stop)?;
    Ok(msg.map(|msg| Message { msg, comm: comm.clone() }))
}
