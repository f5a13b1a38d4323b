//! Collective operations (MPI 4.1 chapter 6), named as in the `mpi` crate
//! (rsmpi): [`CommunicatorCollectives`] on communicators and [`Root`] on the
//! root process.
//!
//! Every collective is a [`schedule::Schedule`] (seed 002's CAD graph: SEND,
//! RECV, CALC and COPY nodes with explicit dependencies, in flat arrays)
//! built by one algorithm of [`algo`] and run by the one executor
//! (`exec`).
//!
//! ```no_run
//! use mpi::traits::*;
//! use mpi::SystemOperation;
//! # fn main() -> mpi::Result<()> {
//! let universe = mpi::initialize()?;
//! let world = universe.world();
//! let mine = [world.rank() as u64];
//! let mut sum = [0u64];
//! world.all_reduce_into(&mine[..], &mut sum[..], SystemOperation::Sum)?;
//! assert_eq!(sum[0], (0..world.size() as u64).sum::<u64>());
//! # Ok(()) }
//! ```

pub mod algo;
pub mod choice;
mod communicator;
pub(crate) mod exec;
pub(crate) mod live;
pub mod long_double;
pub mod op;
pub mod persistent;
mod raw_op;
pub mod schedule;

pub use op::{Operation, Reducible, SystemOperation, ValueIndex};
pub use raw_op::RawUserFn;

use crate::comm::{Communicator, Process, SimpleCommunicator};
use crate::context::{charge_call, Locked};
use crate::datatype::{Buffer, BufferMut, Equivalence};
use crate::error::{CollectiveError, MpiError, RequestMisuse, Result};
use crate::request::Request;
use crate::{Count, Rank};
use exec::{CollKind, Exec, Seq, Stamp};
use schedule::Schedule;

use choice::{allreduce_schedule, alltoall_schedule, bcast_schedule, gather_schedule, scatter_schedule};
pub use choice::{ALLREDUCE_LARGE, ALLTOALL_SMALL, BCAST_LARGE, GATHER_BINOMIAL, PIPELINE_CHUNK, SCATTER_BINOMIAL};

/// Charge one MPI call, number the collective on `comm` and register its
/// execution with the progress of every wait.
pub(crate) fn start(
    comm: &SimpleCommunicator,
    kind: CollKind,
    sched: Schedule,
    send: Vec<u8>,
    recv: Vec<u8>,
    op: Option<Operation>,
) -> Result<Locked<Exec>> {
    comm.intra_only("this collective")?;
    let members = comm.members().to_vec();
    let seq = comm.next_coll_seq();
    launch(comm, kind, seq, members, sched, send, recv, op)
}

/// [`start`] on `members` (job ranks; the schedule's peers index them)
/// over `comm`'s collective context, numbered `seq` among collectives of
/// its `kind`: an intercommunicator's schedules span both groups.
#[allow(clippy::too_many_arguments)]
pub(crate) fn launch(
    comm: &SimpleCommunicator,
    kind: CollKind,
    seq: Seq,
    members: Vec<u32>,
    sched: Schedule,
    send: Vec<u8>,
    recv: Vec<u8>,
    op: Option<Operation>,
) -> Result<Locked<Exec>> {
    if let Some(o) = op.as_ref().filter(|o| o.elem > 0 && send.len() % o.elem != 0) {
        return Err(CollectiveError::NotElements { bytes: send.len(), elem: o.elem }.into());
    }
    let mut c = comm.shared().borrow_mut();
    charge_call(c.engine()?);
    let mut x = Exec::new(sched, send, recv, op, members, comm.coll_ctx(), Stamp::new(seq, kind))?;
    c.offload(&mut x)?;
    let x = Locked::new(x);
    c.engine()?.add_hook(Box::new(live::Live(x.clone())));
    if let Some(t) = &c.thread {
        t.unpark();
    }
    Ok(x)
}

/// Start `sched` as a non-blocking collective whose result goes to `out`.
pub(crate) fn immediate<'b>(
    comm: &SimpleCommunicator,
    kind: CollKind,
    sched: Schedule,
    send: Vec<u8>,
    recv: Vec<u8>,
    op: Option<Operation>,
    out: Option<&'b mut [u8]>,
) -> Result<Request<'b>> {
    let x = start(comm, kind, sched, send, recv, op)?;
    Ok(collective_request(comm.shared().clone(), x, out, comm.group()))
}

/// The request of a non-blocking collective whose execution is already
/// registered with the progress of every wait; its result goes to `out`.
pub(crate) fn collective_request<'b>(
    shared: crate::context::Shared,
    exec: Locked<Exec>,
    out: Option<&'b mut [u8]>,
    group: std::rc::Rc<crate::members::Group>,
) -> Request<'b> {
    Request::pending(shared, Box::new(Collective { exec, out, blocking: false }), group)
}

/// A collective schedule a request waits for.
struct Collective<'b> {
    exec: Locked<Exec>,
    /// Where its result goes.
    out: Option<&'b mut [u8]>,
    /// Started by a blocking call, which has no request to charge for.
    blocking: bool,
}

impl crate::request::Pending for Collective<'_> {
    fn is_done(&self, _c: &mut crate::context::Context) -> Result<bool> {
        Ok(self.exec.borrow().ended())
    }

    fn complete(self: Box<Self>, c: &mut crate::context::Context) -> Result<crate::Status> {
        let Collective { exec, out, blocking } = *self;
        let mut ex = exec.borrow_mut();
        ex.outcome()?;
        if !blocking {
            crate::context::charge_request(c.engine()?);
        }
        let res = ex.take_recv();
        if let Some(out) = out {
            let n = out.len().min(res.len());
            out[..n].copy_from_slice(&res[..n]);
        }
        Ok(crate::Status::new(-1, 0, 0))
    }

    fn cannot_cancel(&self) -> MpiError {
        MpiError::Request(RequestMisuse::NotCancellable { what: "a collective (MPI 4.1 §3.8.4)" })
    }

    fn in_blocking_call(&mut self) {
        self.blocking = true;
    }

    fn look(&self, c: &mut crate::context::Context) -> Result<crate::request::Look> {
        if !self.exec.borrow().on_device() {
            return Ok(crate::request::Look::Collective);
        }
        self.exec.borrow_mut().advance(c.engine()?);
        Ok(crate::request::Look::Device)
    }
}

/// An operation for elements of type `T`: a [`SystemOperation`] (checked
/// against `T`) or a user [`Operation`] (checked against `T`'s size).
pub trait IntoOperation<T> {
    /// The operation on bytes of `T`.
    fn into_operation(self) -> Result<Operation>;
}

/// Combine two local buffers, `inoutbuf[i] = inbuf[i] op inoutbuf[i]`,
/// with no communication (`MPI_Reduce_local`, MPI 4.1 §6.9.7).
pub fn reduce_local_into<T: Equivalence, O: IntoOperation<T>>(inbuf: &[T], inoutbuf: &mut [T], op: O) -> Result<()> {
    if inbuf.len() != inoutbuf.len() {
        return Err(CollectiveError::LocalLengths { input: inbuf.len(), result: inoutbuf.len() }.into());
    }
    let op = op.into_operation()?;
    (op.f)(bytemuck::cast_slice(inbuf), bytemuck::cast_slice_mut(inoutbuf));
    Ok(())
}

impl<T: Reducible> IntoOperation<T> for SystemOperation {
    fn into_operation(self) -> Result<Operation> {
        Operation::system::<T>(self)
    }
}

impl<T: Equivalence> IntoOperation<T> for &Operation {
    fn into_operation(self) -> Result<Operation> {
        // An operation on elements of several `T` (a derived datatype's,
        // reduced packed, §6.9.2) is one on runs of that many.
        let t = std::mem::size_of::<T>();
        if self.elem == 0 || t == 0 || self.elem % t != 0 {
            return Err(
                CollectiveError::ElementType { elem: self.elem, ty: std::any::type_name::<T>(), size: t }.into()
            );
        }
        Ok(self.clone())
    }
}

fn bytes<T: Equivalence>(v: &[T]) -> &[u8] {
    bytemuck::cast_slice(v)
}

fn same_len(what: &str, a: usize, b: usize) -> Result<()> {
    if a != b {
        return Err(CollectiveError::Buffers { call: what.to_string(), send: a, recv: b }.into());
    }
    Ok(())
}

/// Byte blocks `(offset, length)` from element counts and displacements,
/// each checked against a buffer of `cap` bytes.
fn blocks<T>(what: &str, n: usize, counts: &[Count], displs: &[Count], cap: usize) -> Result<Vec<(u64, u64)>> {
    if counts.len() != n || displs.len() != n {
        return Err(CollectiveError::Arrays {
            call: what.to_string(),
            counts: counts.len(),
            displs: displs.len(),
            size: n,
        }
        .into());
    }
    let sz = std::mem::size_of::<T>() as u64;
    counts
        .iter()
        .zip(displs)
        .enumerate()
        .map(|(i, (&c, &d))| {
            // An empty block moves nothing, wherever it says it is (mpi4py
            // passes displacements past the end of an empty buffer).
            if c == 0 {
                return Ok((0, 0));
            }
            if c < 0 || d < 0 {
                return Err(CollectiveError::Negative {
                    call: what.to_string(),
                    rank: i,
                    count: c.into(),
                    displ: d.into(),
                }
                .into());
            }
            let (off, len) = (d as u64 * sz, c as u64 * sz);
            if off + len > cap as u64 {
                return Err(CollectiveError::Outside {
                    call: what.to_string(),
                    rank: i,
                    count: c.into(),
                    displ: d.into(),
                    elements: cap as u64 / sz.max(1),
                }
                .into());
            }
            Ok((off, len))
        })
        .collect()
}

fn even_blocks(n: usize, len: usize) -> Vec<(u64, u64)> {
    (0..n).map(|i| ((i * len) as u64, len as u64)).collect()
}

fn dims(c: &SimpleCommunicator) -> (u32, u32) {
    (c.size() as u32, c.rank() as u32)
}

/// The algorithms the job's `DN_COLL_*` variables force, as read at
/// `MPI_Init`.
fn algorithms(c: &SimpleCommunicator) -> choice::Algorithms {
    c.shared().borrow().config.algorithms
}

/// Collective operations on a communicator (MPI 4.1 §6.3–§6.11).
pub trait CommunicatorCollectives: Communicator {
    /// Every process's `send`, in rank order, into every process's `recv`
    /// (`MPI_Allgather`; ring algorithm).
    fn all_gather_into<S: Buffer + ?Sized, R: BufferMut + ?Sized>(&self, send: &S, recv: &mut R) -> Result<()>;

    /// `MPI_Allgatherv`: rank `i`'s `send` lands at `displs[i]` (elements) of `recv`.
    fn all_gather_varcount_into<S: Buffer + ?Sized, T: Equivalence>(
        &self,
        send: &S,
        recv: &mut [T],
        counts: &[Count],
        displs: &[Count],
    ) -> Result<()>;

    /// Block `i` of `send` to rank `i`; rank `i`'s block into block `i` of
    /// `recv` (`MPI_Alltoall`; pairwise exchange).
    fn all_to_all_into<S: Buffer + ?Sized, R: BufferMut + ?Sized>(&self, send: &S, recv: &mut R) -> Result<()>;

    /// `MPI_Alltoallv`, counts and displacements in elements.
    #[allow(clippy::too_many_arguments)]
    fn all_to_all_varcount_into<T: Equivalence>(
        &self,
        send: &[T],
        send_counts: &[Count],
        send_displs: &[Count],
        recv: &mut [T],
        recv_counts: &[Count],
        recv_displs: &[Count],
    ) -> Result<()>;

    /// The reduction of every process's `send` into every process's `recv`
    /// (`MPI_Allreduce`; recursive doubling, rank order kept).
    fn all_reduce_into<T: Equivalence, O: IntoOperation<T>>(&self, send: &[T], recv: &mut [T], op: O) -> Result<()>;

    /// Reduce `n · recv.len()` elements and give block `i` to rank `i`
    /// (`MPI_Reduce_scatter_block`).
    fn reduce_scatter_block_into<T: Equivalence, O: IntoOperation<T>>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: O,
    ) -> Result<()>;

    /// Inclusive prefix reduction over ranks `0..=rank` (`MPI_Scan`).
    fn scan_into<T: Equivalence, O: IntoOperation<T>>(&self, send: &[T], recv: &mut [T], op: O) -> Result<()>;

    /// Exclusive prefix reduction over ranks `0..rank` (`MPI_Exscan`); rank
    /// 0's `recv` is left unchanged.
    fn exclusive_scan_into<T: Equivalence, O: IntoOperation<T>>(&self, send: &[T], recv: &mut [T], op: O)
        -> Result<()>;

    /// Non-blocking barrier (`MPI_Ibarrier`).
    fn immediate_barrier(&self) -> Result<Request<'static>>;

    /// Non-blocking [`CommunicatorCollectives::all_gather_into`] (`MPI_Iallgather`).
    /// `send` is copied at once; `recv` stays borrowed until the request completes.
    fn immediate_all_gather_into<'b, S: Buffer + ?Sized, R: BufferMut + ?Sized>(
        &self,
        send: &S,
        recv: &'b mut R,
    ) -> Result<Request<'b>>;

    /// Non-blocking [`CommunicatorCollectives::all_to_all_into`] (`MPI_Ialltoall`).
    fn immediate_all_to_all_into<'b, S: Buffer + ?Sized, R: BufferMut + ?Sized>(
        &self,
        send: &S,
        recv: &'b mut R,
    ) -> Result<Request<'b>>;

    /// Non-blocking [`CommunicatorCollectives::all_reduce_into`] (`MPI_Iallreduce`).
    fn immediate_all_reduce_into<'b, T: Equivalence, O: IntoOperation<T>>(
        &self,
        send: &[T],
        recv: &'b mut [T],
        op: O,
    ) -> Result<Request<'b>>;

    /// Non-blocking [`CommunicatorCollectives::scan_into`] (`MPI_Iscan`).
    fn immediate_scan_into<'b, T: Equivalence, O: IntoOperation<T>>(
        &self,
        send: &[T],
        recv: &'b mut [T],
        op: O,
    ) -> Result<Request<'b>>;

    /// Issue a schedule of your own (seed 002's `issue`; `test` on the
    /// request is its `query`): `send` is copied at once and is the
    /// schedule's `BUF_SEND`; `recv` is `BUF_RECV`, its contents the
    /// initial value, borrowed until the request completes. The schedule is
    /// checked against the buffers and this communicator's size first; an
    /// operation is needed only if it has CALC nodes. Every process of the
    /// communicator must issue its part in the same order as its other
    /// collectives.
    fn immediate_schedule<'b>(
        &self,
        schedule: Schedule,
        send: &[u8],
        recv: &'b mut [u8],
        op: Option<&Operation>,
    ) -> Result<Request<'b>>;

    /// Non-blocking [`CommunicatorCollectives::exclusive_scan_into`] (`MPI_Iexscan`).
    fn immediate_exclusive_scan_into<'b, T: Equivalence, O: IntoOperation<T>>(
        &self,
        send: &[T],
        recv: &'b mut [T],
        op: O,
    ) -> Result<Request<'b>>;

    /// Non-blocking [`CommunicatorCollectives::reduce_scatter_block_into`]
    /// (`MPI_Ireduce_scatter_block`).
    fn immediate_reduce_scatter_block_into<'b, T: Equivalence, O: IntoOperation<T>>(
        &self,
        send: &[T],
        recv: &'b mut [T],
        op: O,
    ) -> Result<Request<'b>>;

    /// Non-blocking [`CommunicatorCollectives::all_gather_varcount_into`] (`MPI_Iallgatherv`).
    fn immediate_all_gather_varcount_into<'b, S: Buffer + ?Sized, T: Equivalence>(
        &self,
        send: &S,
        recv: &'b mut [T],
        counts: &[Count],
        displs: &[Count],
    ) -> Result<Request<'b>>;

    /// Non-blocking [`CommunicatorCollectives::all_to_all_varcount_into`] (`MPI_Ialltoallv`).
    #[allow(clippy::too_many_arguments)]
    fn immediate_all_to_all_varcount_into<'b, T: Equivalence>(
        &self,
        send: &[T],
        send_counts: &[Count],
        send_displs: &[Count],
        recv: &'b mut [T],
        recv_counts: &[Count],
        recv_displs: &[Count],
    ) -> Result<Request<'b>>;
}

impl CommunicatorCollectives for SimpleCommunicator {
    fn all_gather_into<S: Buffer + ?Sized, R: BufferMut + ?Sized>(&self, send: &S, recv: &mut R) -> Result<()> {
        self.immediate_all_gather_into(send, recv)?.finish_blocking()
    }

    fn all_gather_varcount_into<S: Buffer + ?Sized, T: Equivalence>(
        &self,
        send: &S,
        recv: &mut [T],
        counts: &[Count],
        displs: &[Count],
    ) -> Result<()> {
        self.immediate_all_gather_varcount_into(send, recv, counts, displs)?.finish_blocking()
    }

    fn all_to_all_into<S: Buffer + ?Sized, R: BufferMut + ?Sized>(&self, send: &S, recv: &mut R) -> Result<()> {
        self.immediate_all_to_all_into(send, recv)?.finish_blocking()
    }

    fn all_to_all_varcount_into<T: Equivalence>(
        &self,
        send: &[T],
        send_counts: &[Count],
        send_displs: &[Count],
        recv: &mut [T],
        recv_counts: &[Count],
        recv_displs: &[Count],
    ) -> Result<()> {
        self.immediate_all_to_all_varcount_into(send, send_counts, send_displs, recv, recv_counts, recv_displs)?
            .finish_blocking()
    }

    fn all_reduce_into<T: Equivalence, O: IntoOperation<T>>(&self, send: &[T], recv: &mut [T], op: O) -> Result<()> {
        self.immediate_all_reduce_into(send, recv, op)?.finish_blocking()
    }

    fn reduce_scatter_block_into<T: Equivalence, O: IntoOperation<T>>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: O,
    ) -> Result<()> {
        self.immediate_reduce_scatter_block_into(send, recv, op)?.finish_blocking()
    }

    fn scan_into<T: Equivalence, O: IntoOperation<T>>(&self, send: &[T], recv: &mut [T], op: O) -> Result<()> {
        self.immediate_scan_into(send, recv, op)?.finish_blocking()
    }

    fn immediate_barrier(&self) -> Result<Request<'static>> {
        let (n, r) = dims(self);
        immediate(self, CollKind::Barrier, algo::barrier(n, r), Vec::new(), Vec::new(), None, None)
    }

    fn immediate_all_gather_into<'b, S: Buffer + ?Sized, R: BufferMut + ?Sized>(
        &self,
        send: &S,
        recv: &'b mut R,
    ) -> Result<Request<'b>> {
        let (n, r) = dims(self);
        let (s, out) = (send.as_bytes(), recv.as_bytes_mut());
        same_len("immediate_all_gather_into", s.len() * n as usize, out.len())?;
        let sched = algo::allgather_ring(n, r, &even_blocks(n as usize, s.len()));
        let len = out.len();
        immediate(self, CollKind::Allgather, sched, s.to_vec(), vec![0; len], None, Some(out))
    }

    fn immediate_all_to_all_into<'b, S: Buffer + ?Sized, R: BufferMut + ?Sized>(
        &self,
        send: &S,
        recv: &'b mut R,
    ) -> Result<Request<'b>> {
        let (n, r) = dims(self);
        let (s, out) = (send.as_bytes(), recv.as_bytes_mut());
        same_len("immediate_all_to_all_into", s.len(), out.len())?;
        if s.len() % n as usize != 0 {
            return Err(CollectiveError::Unequal {
                call: "immediate_all_to_all_into".into(),
                bytes: s.len(),
                size: n as usize,
            }
            .into());
        }
        let sched = alltoall_schedule(algorithms(self).alltoall, n, r, (s.len() / n as usize) as u64);
        let len = out.len();
        immediate(self, CollKind::Alltoall, sched, s.to_vec(), vec![0; len], None, Some(out))
    }

    fn immediate_all_reduce_into<'b, T: Equivalence, O: IntoOperation<T>>(
        &self,
        send: &[T],
        recv: &'b mut [T],
        op: O,
    ) -> Result<Request<'b>> {
        let op = op.into_operation()?;
        let (n, r) = dims(self);
        let (s, out) = (bytes(send), bytemuck::cast_slice_mut::<T, u8>(recv));
        same_len("immediate_all_reduce_into", s.len(), out.len())?;
        let sched = allreduce_schedule(algorithms(self).allreduce, n, r, s.len() as u64, &op);
        let len = out.len();
        immediate(self, CollKind::Allreduce, sched, s.to_vec(), vec![0; len], Some(op), Some(out))
    }

    fn immediate_scan_into<'b, T: Equivalence, O: IntoOperation<T>>(
        &self,
        send: &[T],
        recv: &'b mut [T],
        op: O,
    ) -> Result<Request<'b>> {
        let op = op.into_operation()?;
        let (n, r) = dims(self);
        let (s, out) = (bytes(send), bytemuck::cast_slice_mut::<T, u8>(recv));
        same_len("immediate_scan_into", s.len(), out.len())?;
        let init = out.to_vec();
        immediate(
            self,
            CollKind::Scan,
            algo::scan_linear(n, r, s.len() as u64, false),
            s.to_vec(),
            init,
            Some(op),
            Some(out),
        )
    }

    fn immediate_schedule<'b>(
        &self,
        schedule: Schedule,
        send: &[u8],
        recv: &'b mut [u8],
        op: Option<&Operation>,
    ) -> Result<Request<'b>> {
        if op.is_none() && schedule.nodes.iter().any(|n| n.kind == schedule::Kind::Calc) {
            return Err(CollectiveError::NoOperation.into());
        }
        let init = recv.to_vec();
        immediate(self, CollKind::Schedule, schedule, send.to_vec(), init, op.cloned(), Some(recv))
    }

    fn immediate_exclusive_scan_into<'b, T: Equivalence, O: IntoOperation<T>>(
        &self,
        send: &[T],
        recv: &'b mut [T],
        op: O,
    ) -> Result<Request<'b>> {
        let op = op.into_operation()?;
        let (n, r) = dims(self);
        let (s, out) = (bytes(send), bytemuck::cast_slice_mut::<T, u8>(recv));
        same_len("immediate_exclusive_scan_into", s.len(), out.len())?;
        let init = out.to_vec();
        immediate(
            self,
            CollKind::Exscan,
            algo::scan_linear(n, r, s.len() as u64, true),
            s.to_vec(),
            init,
            Some(op),
            Some(out),
        )
    }

    fn immediate_reduce_scatter_block_into<'b, T: Equivalence, O: IntoOperation<T>>(
        &self,
        send: &[T],
        recv: &'b mut [T],
        op: O,
    ) -> Result<Request<'b>> {
        let op = op.into_operation()?;
        let (n, r) = dims(self);
        let (s, out) = (bytes(send), bytemuck::cast_slice_mut::<T, u8>(recv));
        same_len("immediate_reduce_scatter_block_into", s.len(), out.len() * n as usize)?;
        let sched = algo::reduce_scatter_block(n, r, out.len() as u64);
        let (total, blk) = (s.len(), out.len());
        let x = start(self, CollKind::ReduceScatterBlock, sched, s.to_vec(), vec![0; total + blk], Some(op))?;
        x.borrow_mut().set_result(total, blk);
        Ok(collective_request(self.shared().clone(), x, Some(out), self.group()))
    }

    fn immediate_all_gather_varcount_into<'b, S: Buffer + ?Sized, T: Equivalence>(
        &self,
        send: &S,
        recv: &'b mut [T],
        counts: &[Count],
        displs: &[Count],
    ) -> Result<Request<'b>> {
        let (n, r) = dims(self);
        let out: &mut [u8] = bytemuck::cast_slice_mut(recv);
        let b = blocks::<T>("immediate_all_gather_varcount_into", n as usize, counts, displs, out.len())?;
        let s = send.as_bytes();
        same_len("immediate_all_gather_varcount_into (own block)", s.len(), b[r as usize].1 as usize)?;
        let init = out.to_vec();
        immediate(self, CollKind::Allgather, algo::allgather_ring(n, r, &b), s.to_vec(), init, None, Some(out))
    }

    fn immediate_all_to_all_varcount_into<'b, T: Equivalence>(
        &self,
        send: &[T],
        send_counts: &[Count],
        send_displs: &[Count],
        recv: &'b mut [T],
        recv_counts: &[Count],
        recv_displs: &[Count],
    ) -> Result<Request<'b>> {
        let (n, r) = dims(self);
        let s = bytes(send);
        let out: &mut [u8] = bytemuck::cast_slice_mut(recv);
        let sb =
            blocks::<T>("immediate_all_to_all_varcount_into (send)", n as usize, send_counts, send_displs, s.len())?;
        let rb = blocks::<T>(
            "immediate_all_to_all_varcount_into (receive)",
            n as usize,
            recv_counts,
            recv_displs,
            out.len(),
        )?;
        same_len(
            "immediate_all_to_all_varcount_into (own block)",
            sb[r as usize].1 as usize,
            rb[r as usize].1 as usize,
        )?;
        let init = out.to_vec();
        immediate(self, CollKind::Alltoall, algo::alltoall_pairwise(n, r, &sb, &rb), s.to_vec(), init, None, Some(out))
    }

    fn exclusive_scan_into<T: Equivalence, O: IntoOperation<T>>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: O,
    ) -> Result<()> {
        self.immediate_exclusive_scan_into(send, recv, op)?.finish_blocking()
    }
}

/// Collective operations with a root (MPI 4.1 §6.4–§6.9), called on the
/// root's [`Process`]: the `_root` variants on the root itself, the others
/// on every other process.
pub trait Root {
    /// The root's rank.
    fn root_rank(&self) -> Rank;

    /// The root's `buf` into everyone's `buf` (`MPI_Bcast`; binomial tree).
    fn broadcast_into<B: BufferMut + ?Sized>(&self, buf: &mut B) -> Result<()>;

    /// Send `send` to the root (`MPI_Gather`, non-root side).
    fn gather_into<S: Buffer + ?Sized>(&self, send: &S) -> Result<()>;

    /// Everyone's `send`, in rank order, into the root's `recv`.
    fn gather_into_root<S: Buffer + ?Sized, R: BufferMut + ?Sized>(&self, send: &S, recv: &mut R) -> Result<()>;

    /// `MPI_Gatherv`, non-root side.
    fn gather_varcount_into<S: Buffer + ?Sized>(&self, send: &S) -> Result<()>;

    /// `MPI_Gatherv` at the root: rank `i`'s data at `displs[i]` (elements).
    fn gather_varcount_into_root<S: Buffer + ?Sized, T: Equivalence>(
        &self,
        send: &S,
        recv: &mut [T],
        counts: &[Count],
        displs: &[Count],
    ) -> Result<()>;

    /// Receive this process's block from the root (`MPI_Scatter`, non-root side).
    fn scatter_into<R: BufferMut + ?Sized>(&self, recv: &mut R) -> Result<()>;

    /// Block `i` of the root's `send` to rank `i`.
    fn scatter_into_root<S: Buffer + ?Sized, R: BufferMut + ?Sized>(&self, send: &S, recv: &mut R) -> Result<()>;

    /// `MPI_Scatterv`, non-root side.
    fn scatter_varcount_into<R: BufferMut + ?Sized>(&self, recv: &mut R) -> Result<()>;

    /// `MPI_Scatterv` at the root: `counts[i]` elements at `displs[i]` to rank `i`.
    fn scatter_varcount_into_root<T: Equivalence, R: BufferMut + ?Sized>(
        &self,
        send: &[T],
        counts: &[Count],
        displs: &[Count],
        recv: &mut R,
    ) -> Result<()>;

    /// Contribute `send` to a reduction at the root (`MPI_Reduce`, non-root side).
    fn reduce_into<T: Equivalence, O: IntoOperation<T>>(&self, send: &[T], op: O) -> Result<()>;

    /// The reduction of everyone's `send` into the root's `recv`.
    fn reduce_into_root<T: Equivalence, O: IntoOperation<T>>(&self, send: &[T], recv: &mut [T], op: O) -> Result<()>;

    /// Non-blocking [`Root::broadcast_into`] (`MPI_Ibcast`); `buf` stays
    /// borrowed until the request completes.
    fn immediate_broadcast_into<'b, B: BufferMut + ?Sized>(&self, buf: &'b mut B) -> Result<Request<'b>>;

    /// Non-blocking [`Root::reduce_into`] (`MPI_Ireduce`, non-root side).
    fn immediate_reduce_into<T: Equivalence, O: IntoOperation<T>>(&self, send: &[T], op: O)
        -> Result<Request<'static>>;

    /// Non-blocking [`Root::reduce_into_root`].
    fn immediate_reduce_into_root<'b, T: Equivalence, O: IntoOperation<T>>(
        &self,
        send: &[T],
        recv: &'b mut [T],
        op: O,
    ) -> Result<Request<'b>>;

    /// Non-blocking [`Root::gather_into`] (`MPI_Igather`, non-root side).
    fn immediate_gather_into<S: Buffer + ?Sized>(&self, send: &S) -> Result<Request<'static>>;

    /// Non-blocking [`Root::gather_into_root`].
    fn immediate_gather_into_root<'b, S: Buffer + ?Sized, R: BufferMut + ?Sized>(
        &self,
        send: &S,
        recv: &'b mut R,
    ) -> Result<Request<'b>>;

    /// Non-blocking [`Root::scatter_into`] (`MPI_Iscatter`, non-root side).
    fn immediate_scatter_into<'b, R: BufferMut + ?Sized>(&self, recv: &'b mut R) -> Result<Request<'b>>;

    /// Non-blocking [`Root::scatter_into_root`].
    fn immediate_scatter_into_root<'b, S: Buffer + ?Sized, R: BufferMut + ?Sized>(
        &self,
        send: &S,
        recv: &'b mut R,
    ) -> Result<Request<'b>>;

    /// Non-blocking [`Root::gather_varcount_into`] (`MPI_Igatherv`, non-root side).
    fn immediate_gather_varcount_into<S: Buffer + ?Sized>(&self, send: &S) -> Result<Request<'static>>;

    /// Non-blocking [`Root::gather_varcount_into_root`].
    fn immediate_gather_varcount_into_root<'b, S: Buffer + ?Sized, T: Equivalence>(
        &self,
        send: &S,
        recv: &'b mut [T],
        counts: &[Count],
        displs: &[Count],
    ) -> Result<Request<'b>>;

    /// Non-blocking [`Root::scatter_varcount_into`] (`MPI_Iscatterv`, non-root side).
    fn immediate_scatter_varcount_into<'b, R: BufferMut + ?Sized>(&self, recv: &'b mut R) -> Result<Request<'b>>;

    /// Non-blocking [`Root::scatter_varcount_into_root`].
    fn immediate_scatter_varcount_into_root<'b, T: Equivalence, R: BufferMut + ?Sized>(
        &self,
        send: &[T],
        counts: &[Count],
        displs: &[Count],
        recv: &'b mut R,
    ) -> Result<Request<'b>>;
}

impl Process<'_> {
    fn check_root(&self, want_root: bool, call: &str) -> Result<(u32, u32, u32)> {
        let (n, r) = dims(self.comm);
        if self.rank < 0 || self.rank >= n as Rank {
            return Err(MpiError::InvalidRank { rank: self.rank, size: n as Rank });
        }
        let root = self.rank as u32;
        if want_root != (r == root) {
            return Err(
                CollectiveError::RootVariant { call: call.to_string(), rank: r, root, root_call: want_root }.into()
            );
        }
        Ok((n, r, root))
    }
}

impl Root for Process<'_> {
    fn root_rank(&self) -> Rank {
        self.rank
    }

    fn broadcast_into<B: BufferMut + ?Sized>(&self, buf: &mut B) -> Result<()> {
        self.immediate_broadcast_into(buf)?.finish_blocking()
    }

    fn gather_into<S: Buffer + ?Sized>(&self, send: &S) -> Result<()> {
        self.immediate_gather_into(send)?.finish_blocking()
    }

    fn gather_into_root<S: Buffer + ?Sized, R: BufferMut + ?Sized>(&self, send: &S, recv: &mut R) -> Result<()> {
        self.immediate_gather_into_root(send, recv)?.finish_blocking()
    }

    fn gather_varcount_into<S: Buffer + ?Sized>(&self, send: &S) -> Result<()> {
        self.immediate_gather_varcount_into(send)?.finish_blocking()
    }

    fn gather_varcount_into_root<S: Buffer + ?Sized, T: Equivalence>(
        &self,
        send: &S,
        recv: &mut [T],
        counts: &[Count],
        displs: &[Count],
    ) -> Result<()> {
        self.immediate_gather_varcount_into_root(send, recv, counts, displs)?.finish_blocking()
    }

    fn scatter_into<R: BufferMut + ?Sized>(&self, recv: &mut R) -> Result<()> {
        self.immediate_scatter_into(recv)?.finish_blocking()
    }

    fn scatter_into_root<S: Buffer + ?Sized, R: BufferMut + ?Sized>(&self, send: &S, recv: &mut R) -> Result<()> {
        self.immediate_scatter_into_root(send, recv)?.finish_blocking()
    }

    fn scatter_varcount_into<R: BufferMut + ?Sized>(&self, recv: &mut R) -> Result<()> {
        self.immediate_scatter_varcount_into(recv)?.finish_blocking()
    }

    fn scatter_varcount_into_root<T: Equivalence, R: BufferMut + ?Sized>(
        &self,
        send: &[T],
        counts: &[Count],
        displs: &[Count],
        recv: &mut R,
    ) -> Result<()> {
        self.immediate_scatter_varcount_into_root(send, counts, displs, recv)?.finish_blocking()
    }

    fn reduce_into<T: Equivalence, O: IntoOperation<T>>(&self, send: &[T], op: O) -> Result<()> {
        self.immediate_reduce_into(send, op)?.finish_blocking()
    }

    fn immediate_broadcast_into<'b, B: BufferMut + ?Sized>(&self, buf: &'b mut B) -> Result<Request<'b>> {
        let (n, r) = dims(self.comm);
        if self.rank < 0 || self.rank >= n as Rank {
            return Err(MpiError::InvalidRank { rank: self.rank, size: n as Rank });
        }
        let b = buf.as_bytes_mut();
        let sched = bcast_schedule(algorithms(self.comm).bcast, n, r, self.rank as u32, b.len() as u64);
        let init = b.to_vec();
        immediate(self.comm, CollKind::Bcast, sched, Vec::new(), init, None, Some(b))
    }

    fn immediate_reduce_into<T: Equivalence, O: IntoOperation<T>>(
        &self,
        send: &[T],
        op: O,
    ) -> Result<Request<'static>> {
        let op = op.into_operation()?;
        let (n, r, root) = self.check_root(false, "immediate_reduce_into")?;
        let s = bytes(send);
        let sched = algo::reduce_binomial(n, r, root, s.len() as u64);
        immediate(self.comm, CollKind::Reduce, sched, s.to_vec(), vec![0; s.len()], Some(op), None)
    }

    fn immediate_reduce_into_root<'b, T: Equivalence, O: IntoOperation<T>>(
        &self,
        send: &[T],
        recv: &'b mut [T],
        op: O,
    ) -> Result<Request<'b>> {
        let op = op.into_operation()?;
        let (n, r, root) = self.check_root(true, "immediate_reduce_into_root")?;
        let (s, out) = (bytes(send), bytemuck::cast_slice_mut::<T, u8>(recv));
        same_len("immediate_reduce_into_root", s.len(), out.len())?;
        let sched = algo::reduce_binomial(n, r, root, s.len() as u64);
        immediate(self.comm, CollKind::Reduce, sched, s.to_vec(), vec![0; s.len()], Some(op), Some(out))
    }

    fn immediate_gather_into<S: Buffer + ?Sized>(&self, send: &S) -> Result<Request<'static>> {
        let (n, r, root) = self.check_root(false, "immediate_gather_into")?;
        let s = send.as_bytes();
        let sched = gather_schedule(algorithms(self.comm).gather, n, r, root, s.len() as u64);
        immediate(self.comm, CollKind::Gather, sched, s.to_vec(), Vec::new(), None, None)
    }

    fn immediate_gather_into_root<'b, S: Buffer + ?Sized, R: BufferMut + ?Sized>(
        &self,
        send: &S,
        recv: &'b mut R,
    ) -> Result<Request<'b>> {
        let (n, r, root) = self.check_root(true, "immediate_gather_into_root")?;
        let (s, out) = (send.as_bytes(), recv.as_bytes_mut());
        same_len("immediate_gather_into_root", s.len() * n as usize, out.len())?;
        let sched = gather_schedule(algorithms(self.comm).gather, n, r, root, s.len() as u64);
        let len = out.len();
        immediate(self.comm, CollKind::Gather, sched, s.to_vec(), vec![0; len], None, Some(out))
    }

    fn immediate_scatter_into<'b, R: BufferMut + ?Sized>(&self, recv: &'b mut R) -> Result<Request<'b>> {
        let (n, r, root) = self.check_root(false, "immediate_scatter_into")?;
        let out = recv.as_bytes_mut();
        let sched = scatter_schedule(algorithms(self.comm).scatter, n, r, root, out.len() as u64);
        let len = out.len();
        immediate(self.comm, CollKind::Scatter, sched, Vec::new(), vec![0; len], None, Some(out))
    }

    fn immediate_scatter_into_root<'b, S: Buffer + ?Sized, R: BufferMut + ?Sized>(
        &self,
        send: &S,
        recv: &'b mut R,
    ) -> Result<Request<'b>> {
        let (n, r, root) = self.check_root(true, "immediate_scatter_into_root")?;
        let (s, out) = (send.as_bytes(), recv.as_bytes_mut());
        same_len("immediate_scatter_into_root", s.len(), out.len() * n as usize)?;
        let sched = scatter_schedule(algorithms(self.comm).scatter, n, r, root, out.len() as u64);
        let len = out.len();
        immediate(self.comm, CollKind::Scatter, sched, s.to_vec(), vec![0; len], None, Some(out))
    }

    fn immediate_gather_varcount_into<S: Buffer + ?Sized>(&self, send: &S) -> Result<Request<'static>> {
        let (n, r, root) = self.check_root(false, "immediate_gather_varcount_into")?;
        let s = send.as_bytes();
        let sched = algo::gather_linear(n, r, root, s.len() as u64, &[]);
        immediate(self.comm, CollKind::Gather, sched, s.to_vec(), Vec::new(), None, None)
    }

    fn immediate_gather_varcount_into_root<'b, S: Buffer + ?Sized, T: Equivalence>(
        &self,
        send: &S,
        recv: &'b mut [T],
        counts: &[Count],
        displs: &[Count],
    ) -> Result<Request<'b>> {
        let (n, r, root) = self.check_root(true, "immediate_gather_varcount_into_root")?;
        let out: &mut [u8] = bytemuck::cast_slice_mut(recv);
        let b = blocks::<T>("immediate_gather_varcount_into_root", n as usize, counts, displs, out.len())?;
        let s = send.as_bytes();
        same_len("immediate_gather_varcount_into_root (own block)", s.len(), b[r as usize].1 as usize)?;
        let init = out.to_vec();
        immediate(
            self.comm,
            CollKind::Gather,
            algo::gather_linear(n, r, root, s.len() as u64, &b),
            s.to_vec(),
            init,
            None,
            Some(out),
        )
    }

    fn immediate_scatter_varcount_into<'b, R: BufferMut + ?Sized>(&self, recv: &'b mut R) -> Result<Request<'b>> {
        let (n, r, root) = self.check_root(false, "immediate_scatter_varcount_into")?;
        let out = recv.as_bytes_mut();
        let sched = algo::scatter_linear(n, r, root, out.len() as u64, &[]);
        let len = out.len();
        immediate(self.comm, CollKind::Scatter, sched, Vec::new(), vec![0; len], None, Some(out))
    }

    fn immediate_scatter_varcount_into_root<'b, T: Equivalence, R: BufferMut + ?Sized>(
        &self,
        send: &[T],
        counts: &[Count],
        displs: &[Count],
        recv: &'b mut R,
    ) -> Result<Request<'b>> {
        let (n, r, root) = self.check_root(true, "immediate_scatter_varcount_into_root")?;
        let s = bytes(send);
        let out = recv.as_bytes_mut();
        let b = blocks::<T>("immediate_scatter_varcount_into_root", n as usize, counts, displs, s.len())?;
        same_len("immediate_scatter_varcount_into_root (own block)", b[r as usize].1 as usize, out.len())?;
        let len = out.len();
        let sched = algo::scatter_linear(n, r, root, len as u64, &b);
        immediate(self.comm, CollKind::Scatter, sched, s.to_vec(), vec![0; len], None, Some(out))
    }

    fn reduce_into_root<T: Equivalence, O: IntoOperation<T>>(&self, send: &[T], recv: &mut [T], op: O) -> Result<()> {
        self.immediate_reduce_into_root(send, recv, op)?.finish_blocking()
    }
}
