//! Persistent collectives (MPI 4.1 §6.13) in Rust: a collective whose
//! arguments are fixed once, by its initialization, and that is then
//! started as often as the program likes.
//!
//! - **Built once.** The initialization checks the arguments, chooses
//!   the algorithm and builds its schedule, and takes the collective's
//!   place in the communicator's matching order. Every member initializes
//!   the communicator's persistent collectives in the same order, but
//!   may start them in any order (§6.13). Each start runs the same
//!   schedule again.
//! - **Buffers at each start.** In C the buffers are fixed at the
//!   initialization, and the program changes the send buffer's contents
//!   between starts. Here each start lends them, so a program can change
//!   its data while no start is active. A start checks that they have the
//!   sizes given at the initialization.
//! - **One start at a time.** The request a start returns borrows the
//!   persistent collective, so it cannot be started again until that
//!   request has completed (§6.13 makes that erroneous).
//!
//! As with the non-blocking collectives, the library works on its own
//! copies of the data. The result is written into the receive buffer when
//! the request completes. So `mem::forget` on a request is sound: the
//! start still completes with the other members, and no buffer is
//! touched.

use std::marker::PhantomData;

use super::{
    algo, algorithms, allreduce_schedule, alltoall_schedule, bcast_schedule, dims, even_blocks, immediate, CollKind,
    IntoOperation, Operation,
};
use crate::comm::{Process, SimpleCommunicator};
use crate::datatype::{Buffer, BufferMut, Equivalence};
use crate::error::{CollectiveError, MpiError, Result};
use crate::request::Request;
use crate::Rank;

/// What every persistent collective keeps: its communicator, its place in
/// the matching order, its schedule, its operation, and the sizes of its
/// buffers.
struct Core {
    comm: SimpleCommunicator,
    place: Persistent,
    kind: CollKind,
    sched: super::schedule::Schedule,
    op: Option<Operation>,
    send_len: usize,
    recv_len: usize,
}

impl Core {
    fn new(comm: &SimpleCommunicator, kind: CollKind, sched: super::schedule::Schedule, lens: (usize, usize)) -> Core {
        Core {
            comm: comm.clone(),
            place: Persistent::new(comm),
            kind,
            sched,
            op: None,
            send_len: lens.0,
            recv_len: lens.1,
        }
    }

    /// Start it on `send` (the bytes sent) with the result for `out`;
    /// `recv` is the schedule's receive buffer as it starts.
    fn start<'a>(&self, what: &str, send: &[u8], recv: Vec<u8>, out: Option<&'a mut [u8]>) -> Result<Request<'a>> {
        if send.len() != self.send_len {
            return Err(CollectiveError::Persistent {
                call: what.to_string(),
                which: "send",
                now: send.len(),
                then: self.send_len,
            }
            .into());
        }
        if let Some(o) = &out {
            if o.len() != self.recv_len {
                return Err(CollectiveError::Persistent {
                    call: what.to_string(),
                    which: "receive",
                    now: o.len(),
                    then: self.recv_len,
                }
                .into());
            }
        }
        let sched = self.sched.clone();
        self.place
            .start(&self.comm, || immediate(&self.comm, self.kind, sched, send.to_vec(), recv, self.op.clone(), out))
    }
}

/// A persistent barrier (`MPI_Barrier_init`).
pub struct PersistentBarrier(Core);

impl PersistentBarrier {
    /// Start it (`MPI_Start`).
    pub fn start(&mut self) -> Result<Request<'_>> {
        self.0.start("PersistentBarrier::start", &[], Vec::new(), None)
    }
}

/// A persistent broadcast (`MPI_Bcast_init`) of a fixed number of bytes
/// from a fixed root.
pub struct PersistentBroadcast(Core);

impl PersistentBroadcast {
    /// Start it (`MPI_Start`) on `buf`: sent from at the root, received
    /// into elsewhere (when the request completes).
    pub fn start<'a, B: BufferMut + ?Sized>(&'a mut self, buf: &'a mut B) -> Result<Request<'a>> {
        let b = buf.as_bytes_mut();
        let init = b.to_vec();
        self.0.start("PersistentBroadcast::start", &[], init, Some(b))
    }
}

/// A persistent reduction to every member (`MPI_Allreduce_init`) of a
/// fixed number of `T`s.
pub struct PersistentAllReduce<T>(Core, PhantomData<fn(T)>);

impl<T: Equivalence> PersistentAllReduce<T> {
    /// Start it (`MPI_Start`): `send`'s elements are reduced, the result
    /// lands in `recv` when the request completes.
    pub fn start<'a>(&'a mut self, send: &[T], recv: &'a mut [T]) -> Result<Request<'a>> {
        let len = self.0.recv_len;
        let s = bytemuck::cast_slice(send);
        self.0.start("PersistentAllReduce::start", s, vec![0; len], Some(bytemuck::cast_slice_mut::<T, u8>(recv)))
    }
}

/// A persistent gather to every member (`MPI_Allgather_init`) or
/// all-to-all exchange (`MPI_Alltoall_init`), of fixed sizes.
pub struct PersistentExchange(Core);

impl PersistentExchange {
    /// Start it (`MPI_Start`) on `send`, with the result for `recv` when
    /// the request completes.
    pub fn start<'a, S: Buffer + ?Sized, R: BufferMut + ?Sized>(
        &'a mut self,
        send: &S,
        recv: &'a mut R,
    ) -> Result<Request<'a>> {
        let len = self.0.recv_len;
        self.0.start("PersistentExchange::start", send.as_bytes(), vec![0; len], Some(recv.as_bytes_mut()))
    }
}

impl SimpleCommunicator {
    /// Initialize a persistent barrier (`MPI_Barrier_init`, MPI 4.1
    /// §6.13): collective, in the same order on every member as the
    /// communicator's other persistent collectives.
    pub fn barrier_init(&self) -> Result<PersistentBarrier> {
        self.intra_only("barrier_init")?;
        let (n, r) = dims(self);
        Ok(PersistentBarrier(Core::new(self, CollKind::Barrier, algo::barrier(n, r), (0, 0))))
    }

    /// Initialize a persistent reduction of `count` `T`s to every member
    /// (`MPI_Allreduce_init`) with `op`.
    pub fn all_reduce_init<T: Equivalence, O: IntoOperation<T>>(
        &self,
        count: usize,
        op: O,
    ) -> Result<PersistentAllReduce<T>> {
        self.intra_only("all_reduce_init")?;
        let op = op.into_operation()?;
        let (n, r) = dims(self);
        let len = count.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| too_large("all_reduce_init"))?;
        let sched = allreduce_schedule(algorithms(self).allreduce, n, r, len as u64, &op);
        let mut core = Core::new(self, CollKind::Allreduce, sched, (len, len));
        core.op = Some(op);
        Ok(PersistentAllReduce(core, PhantomData))
    }

    /// Initialize a persistent gather to every member
    /// (`MPI_Allgather_init`) of `block` bytes from each.
    pub fn all_gather_init(&self, block: usize) -> Result<PersistentExchange> {
        self.intra_only("all_gather_init")?;
        let (n, r) = dims(self);
        let total = block.checked_mul(n as usize).ok_or_else(|| too_large("all_gather_init"))?;
        let sched = algo::allgather_ring(n, r, &even_blocks(n as usize, block));
        Ok(PersistentExchange(Core::new(self, CollKind::Allgather, sched, (block, total))))
    }

    /// Initialize a persistent all-to-all exchange (`MPI_Alltoall_init`)
    /// of `block` bytes between every pair of members.
    pub fn all_to_all_init(&self, block: usize) -> Result<PersistentExchange> {
        self.intra_only("all_to_all_init")?;
        let (n, r) = dims(self);
        let total = block.checked_mul(n as usize).ok_or_else(|| too_large("all_to_all_init"))?;
        let sched = alltoall_schedule(algorithms(self).alltoall, n, r, block as u64);
        Ok(PersistentExchange(Core::new(self, CollKind::Alltoall, sched, (total, total))))
    }
}

impl Process<'_> {
    /// Initialize a persistent broadcast of `len` bytes from this process
    /// (`MPI_Bcast_init`, MPI 4.1 §6.13).
    pub fn broadcast_init(&self, len: usize) -> Result<PersistentBroadcast> {
        self.comm.intra_only("broadcast_init")?;
        let (n, r) = dims(self.comm);
        let root = self.rank;
        if root < 0 || root >= n as Rank {
            return Err(MpiError::InvalidRank { rank: root, size: n as Rank });
        }
        let sched = bcast_schedule(algorithms(self.comm).bcast, n, r, root as u32, len as u64);
        Ok(PersistentBroadcast(Core::new(self.comm, CollKind::Bcast, sched, (0, len))))
    }
}

fn too_large(call: &'static str) -> MpiError {
    MpiError::TooLarge(crate::error::Overflow::Buffers { call })
}

/// A persistent collective's place in its communicator's matching order.
/// Persistent collectives match in the order of their initializations,
/// whatever the order of their starts (MPI 4.1 §6.13): one process may
/// start a broadcast then a barrier, another the barrier first. So each
/// takes its number among the communicator's persistent collectives at
/// initialization, and its starts are numbered apart from the collectives
/// started in order.
///
/// The place is 12 bits of that number and 2 bits of the start: 4,096
/// persistent collectives of one communicator in use at once are told
/// apart, and so are successive starts of one, whose messages could
/// otherwise meet those a failed start left behind.
#[derive(Debug)]
pub struct Persistent {
    id: u32,
    starts: std::cell::Cell<u32>,
}

impl Persistent {
    /// The next persistent collective's place on `c` (at its
    /// initialization, which every member makes in the same order).
    pub fn new(c: &SimpleCommunicator) -> Persistent {
        let id = c.group.persistent_seq.get();
        c.group.persistent_seq.set(id.wrapping_add(1));
        Persistent { id, starts: std::cell::Cell::new(0) }
    }

    /// Start this persistent collective on `c`: `start` starts the
    /// non-blocking form (one schedule), which takes this collective's
    /// place instead of the next started number.
    pub fn start<T>(&self, c: &SimpleCommunicator, start: impl FnOnce() -> T) -> T {
        let n = self.starts.get();
        self.starts.set(n.wrapping_add(1));
        let place = ((self.id & 0xFFF) << 2) | (n & 3);
        let before = c.group.starting.replace(Some(place));
        let r = start();
        c.group.starting.set(before);
        r
    }
}
