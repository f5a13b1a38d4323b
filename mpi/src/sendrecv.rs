//! Send-receive (MPI 4.1 §3.10) over caller's buffers: one operation of
//! a send and a receive, the send started first so that two processes
//! exchanging with each other cannot deadlock however large the messages;
//! it completes when both halves have, and reports the receive's status.

use crate::comm::{Communicator, SimpleCommunicator, Status};
use crate::error::Result;
use crate::slot::Started;
use crate::staged::{irecv, isend, isend_owned, outgoing, Span};
use crate::{Rank, Tag, ANY_SOURCE, PROC_NULL};

/// What a send-receive sends.
#[derive(Clone, Copy, Debug)]
pub enum Outgoing<'a> {
    /// The span's elements at the pointer.
    Buffer(*const u8, &'a Span),
    /// The receive buffer's own elements, copied before the receive may
    /// overwrite them (the `_replace` forms).
    Replace,
}

/// Start a send-receive on `comm`: `send` to `dest` with `sendtag`, and a
/// receive into `recvbuf` (`rspan`) from `source` ([`ANY_SOURCE`] too)
/// with `recvtag` (`None`: any). Either peer may be [`PROC_NULL`]: that
/// half does nothing (and the status is `MPI_PROC_NULL`'s when the
/// receive's is).
///
/// # Safety
/// A [`Outgoing::Buffer`] holds its span's elements, unmodified, and
/// `recvbuf` has room for `rspan`'s (under [`Outgoing::Replace`] holds
/// them too), not otherwise accessed, until the operation completes or is
/// dropped.
#[allow(clippy::too_many_arguments)] // the MPI call's own arguments
pub unsafe fn isendrecv(
    comm: &SimpleCommunicator,
    send: Outgoing<'_>,
    dest: Rank,
    sendtag: Tag,
    recvbuf: *mut u8,
    rspan: &Span,
    source: Rank,
    recvtag: Option<Tag>,
) -> Result<Started> {
    crate::comm::check_tag(sendtag)?;
    let sent = match send {
        _ if dest == PROC_NULL => None,
        // SAFETY: the span's elements at `buf` stay readable and unmodified until the operation completes or is
        // dropped (`# Safety`): what `isend` asks.
        Outgoing::Buffer(buf, span) => Some(unsafe { isend(&comm.process_at_rank(dest), buf, span, sendtag, false) }?),
        Outgoing::Replace => {
            // SAFETY: under `Replace` the receive buffer holds `rspan`'s elements (`# Safety`), read here, before
            // the receive starts.
            let data = unsafe { outgoing(recvbuf, rspan, "send")? }.into_owned();
            Some(isend_owned(&comm.process_at_rank(dest), data, sendtag, false)?)
        }
    };
    let received = match source {
        PROC_NULL => None,
        // SAFETY: `recvbuf` has room for `rspan`'s elements, untouched until the operation completes or is dropped
        // (`# Safety`): what `irecv` asks.
        ANY_SOURCE => Some(unsafe { irecv(&comm.any_process(), recvbuf, rspan, recvtag) }?),
        // SAFETY: as above.
        s => Some(unsafe { irecv(&comm.process_at_rank(s), recvbuf, rspan, recvtag) }?),
    };
    Ok(match (sent, received) {
        (None, None) => Started::Done(Status::proc_null()),
        (None, Some(r)) => Started::Op(r),
        (Some(mut s), None) => {
            s.stage.status = Some(Status::proc_null());
            Started::Op(s)
        }
        (Some(s), Some(mut r)) => {
            r.stage.with.push(s);
            Started::Op(r)
        }
    })
}
