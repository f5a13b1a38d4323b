//! Where each partitioned request stands (MPI 4.1 chapter 4), as the
//! completion calls, `MPI_Start` and `MPI_Request_free` see it: a send
//! waits for its partitions (`mpi::partitioned::SendPartitions` keeps the
//! rules) and goes when the last is ready. The calls that make partitioned
//! requests and mark partitions are `crate::partitioned`.
//!
//! A started send with partitions not yet ready waits for other threads
//! to mark them under `MPI_THREAD_MULTIPLE` (`crate::threads`). Below it,
//! or when the process has no other thread, nobody can mark them while
//! this thread waits: such a wait fails instead of waiting for ever, like
//! a generalized request's (`crate::greq`).

use mpi::partitioned::SendPartitions;
use mpi::request::Part;

use crate::abi::*;
use crate::*;

/// A partitioned request's partitions: a send's in its current start
/// (`mpi::partitioned::SendPartitions`, which keeps the rules), or how
/// many a receive has.
pub(crate) enum Partitioned {
    Send(SendPartitions),
    Recv { partitions: usize },
}

impl Partitioned {
    fn waiting(&self) -> bool {
        matches!(self, Partitioned::Send(p) if p.waiting())
    }
}

/// Whether `h` is a started partitioned send whose partitions are not all
/// ready: no wait can end it.
pub(crate) fn waiting(st: &State, h: Handle) -> bool {
    st.partitioned.get(&h).is_some_and(Partitioned::waiting)
}

/// `MPI_Start` of partitioned request `h`, if it is one (`None`: it is
/// not). A send waits for its partitions; a receive starts as any
/// persistent receive does (`Some(false)`: the caller starts it).
pub(crate) fn start(st: &mut State, h: Handle) -> R<Option<bool>> {
    let idle = matches!(st.requests.get(h).map(Req::part), Some(Part::Idle));
    let Some(p) = st.partitioned.get_mut(&h) else { return Ok(None) };
    if !idle {
        return Err(mpi::PartitionError::StillActive.into());
    }
    let Partitioned::Send(p) = p else { return Ok(Some(false)) };
    if p.start()? {
        launch(st, h)?;
    }
    Ok(Some(true))
}

/// Every partition of send `h` is ready: send the whole buffer.
fn launch(st: &mut State, h: Handle) -> R<()> {
    let Some(Req::Persistent(p)) = st.requests.get_mut(h) else {
        return Err(Fail::new(MPI_ERR_REQUEST, format!("{h:#x} is not a partitioned request")));
    };
    let started = p.start(|Recipe { comm, op, .. }| match op {
        // SAFETY: the program keeps the buffer given to MPI_Psend_init valid and unmodified until each started send
        // completes (MPI 4.1 §4.2): `P2p::launch`'s contract.
        PersistentOp::P2p(op) => unsafe { op.launch(comm) },
        PersistentOp::Coll(..) => Err(mpi::MpiError::Request(mpi::RequestMisuse::NotPartitionedSend)),
    });
    started.map_err(Fail::from)
}

/// Mark `parts` of send `request` ready (all or none:
/// `SendPartitions::mark`), and send it once they all are.
pub(crate) fn ready(
    st: &mut State,
    request: Handle,
    mark: impl FnOnce(&mut SendPartitions) -> mpi::Result<bool>,
) -> R<()> {
    let Some(Partitioned::Send(p)) = st.partitioned.get_mut(&request) else {
        return Err(Fail::new(MPI_ERR_REQUEST, format!("{request:#x} is not a partitioned send (MPI_Psend_init)")));
    };
    if mark(p)? {
        launch(st, request)?;
    }
    Ok(())
}

/// How many started partitioned sends still wait for partitions: their
/// messages never went. `MPI_Finalize` names them.
pub(crate) fn never_sent(st: &State) -> usize {
    st.partitioned.values().filter(|p| p.waiting()).count()
}

/// `MPI_Request_free` of partitioned request `h`: refused while a send
/// waits for its partitions (its message would never go).
pub(crate) fn free(st: &mut State, h: Handle) -> R<()> {
    if waiting(st, h) {
        return Err(mpi::PartitionError::FreeWhileWaiting.into());
    }
    st.partitioned.remove(&h);
    Ok(())
}
