//! Partitioned communication (MPI 4.1 chapter 4): a persistent send or
//! receive whose buffer is cut into partitions, the sender marking each
//! ready when it has filled it (`MPI_Pready`, §4.3) and the receiver asking
//! whether one has arrived (`MPI_Parrived`).
//!
//! - **The rules of a start** ([`SendPartitions`]): which partitions are
//!   ready, that none is marked twice, that a send is not started again
//!   while active, and when the message goes. The C calls
//!   (`MPI_Psend_init`, `MPI_Pready*`, `MPI_Parrived`, capi's
//!   `partitioned.rs`) and the Rust API below use the same ones.
//! - **The channel** ([`Channel`]). Partitioned messages match only each
//!   other, never an ordinary send or receive with the same tag (§4.2.2).
//!   So they travel on the communicator's collective context with bit 29
//!   of the tag set: collective messages have bit 30, the library's own
//!   small tags neither. They match in the order of their initializations
//!   per peer and tag, whatever the order of their starts (§4.2.2), so each
//!   takes, at its initialization, its number among those to (or from) the
//!   same peer with the same tag, and the wire tag carries it: 9 bits of
//!   that number (512 such requests alive at once are told apart) and 20 of
//!   the program's tag, which must be below 2^20 here.
//! - **One message.** A partitioned send goes as one message once every
//!   partition is ready; a partitioned receive is one receive of the whole,
//!   and a partition has arrived when they all have (§4.2.1 lets partitions
//!   move in any grouping).
//! - **The Rust API**: [`PartitionedSend`] and [`PartitionedRecv`], on a
//!   [`Scope`] like every request on a borrowed buffer.

use std::marker::PhantomData;

use crate::comm::{Communicator, Process, SimpleCommunicator};
use crate::datatype::Equivalence;
use crate::error::{MpiError, PartitionError, Result};
use crate::request::{Request, Scope};
use crate::status::Status;
use crate::{Rank, Tag};

/// The largest tag a partitioned operation takes here.
pub const PARTITIONED_TAG_UB: Tag = (1 << 20) - 1;

/// A partitioned request's place on the channel: its peer, its tag, and
/// the wire tag that pairs it with its counterpart.
#[derive(Clone, Copy, Debug)]
pub struct Channel {
    peer: Rank,
    tag: Tag,
    wire: Tag,
}

impl Channel {
    /// The place of a partitioned send to `peer` (`send`) or receive from
    /// it, with `tag`, on `comm`: taken at its initialization. `peer` is a
    /// rank of `comm` or [`crate::PROC_NULL`].
    pub fn new(comm: &SimpleCommunicator, peer: Rank, tag: Tag, send: bool) -> Result<Channel> {
        comm.intra_only("partitioned communication")?;
        if peer != crate::PROC_NULL && !(0..comm.size()).contains(&peer) {
            return Err(MpiError::InvalidRank { rank: peer, size: comm.size() });
        }
        if !(0..=PARTITIONED_TAG_UB).contains(&tag) {
            return Err(MpiError::InvalidTag(tag));
        }
        let mut seqs = comm.group.partitioned_seq.borrow_mut();
        let k = seqs.entry((peer, tag, send)).or_insert(0);
        let wire = (1 << 29) | (tag << 9) | (*k & 511) as Tag;
        *k = k.wrapping_add(1);
        Ok(Channel { peer, tag, wire })
    }

    /// The peer.
    pub fn peer(&self) -> Rank {
        self.peer
    }

    /// The program's tag.
    pub fn tag(&self) -> Tag {
        self.tag
    }

    /// The tag on the wire.
    pub(crate) fn wire(&self) -> Tag {
        self.wire
    }

    /// `comm` with its collective context as the point-to-point one: the
    /// channel's sends and receives.
    pub(crate) fn comm(comm: &SimpleCommunicator) -> SimpleCommunicator {
        let mut c = comm.clone();
        c.ctx = comm.coll_ctx();
        c
    }
}

/// Whether `partition` is one of `partitions` (§4.3).
pub fn check_partition(partition: i64, partitions: usize) -> std::result::Result<usize, PartitionError> {
    usize::try_from(partition)
        .ok()
        .filter(|&i| i < partitions)
        .ok_or(PartitionError::NoSuchPartition { partition, partitions })
}

/// The partitions of a partitioned send in its current start (§4.3): which
/// are ready, and whether the message is still to go.
#[derive(Clone, Debug)]
pub struct SendPartitions {
    ready: Vec<bool>,
    /// How many are not ready.
    left: usize,
    /// Started, and some partition not ready yet.
    waiting: bool,
}

impl SendPartitions {
    /// A send of `partitions` partitions, not started.
    pub fn new(partitions: usize) -> SendPartitions {
        SendPartitions { ready: vec![false; partitions], left: 0, waiting: false }
    }

    /// Its partitions.
    pub fn partitions(&self) -> usize {
        self.ready.len()
    }

    /// Started, with partitions not ready: the message has not gone, and
    /// only marking them can make it go.
    pub fn waiting(&self) -> bool {
        self.waiting
    }

    /// Whether `partition` is marked ready in the current start.
    pub fn is_ready(&self, partition: usize) -> bool {
        self.waiting && self.ready.get(partition).copied().unwrap_or(false)
    }

    /// A start (`MPI_Start`): no partition is ready. `Ok(true)`: there are
    /// none, so the message goes now. Refused while the last start waits
    /// for partitions.
    pub fn start(&mut self) -> std::result::Result<bool, PartitionError> {
        if self.waiting {
            return Err(PartitionError::StillActive);
        }
        self.ready.fill(false);
        self.left = self.ready.len();
        self.waiting = self.left > 0;
        Ok(self.left == 0)
    }

    /// Mark `parts` ready: all of them, or none when one is refused (a
    /// partition that does not exist, or is marked a second time), so that
    /// a refused `MPI_Pready_list` or `_range` can be retried as it was.
    /// `Ok(true)`: the last partition is ready, and the message goes now.
    pub fn mark(&mut self, parts: impl IntoIterator<Item = i64>) -> std::result::Result<bool, PartitionError> {
        if !self.waiting {
            return Err(PartitionError::NotStarted);
        }
        let n = self.ready.len();
        let mut marked: Vec<usize> = Vec::new();
        let mut refused = None;
        for i in parts {
            let slot = match check_partition(i, n) {
                Ok(slot) => slot,
                Err(e) => {
                    refused = Some(e);
                    break;
                }
            };
            if self.ready[slot] {
                refused = Some(PartitionError::MarkedTwice { partition: i });
                break;
            }
            self.ready[slot] = true;
            marked.push(slot);
        }
        if let Some(e) = refused {
            for slot in marked {
                self.ready[slot] = false;
            }
            return Err(e);
        }
        self.left -= marked.len();
        self.waiting = self.left > 0;
        Ok(!self.waiting)
    }

    /// The partitions from `low` to `high` (`MPI_Pready_range`).
    pub fn mark_range(&mut self, low: i64, high: i64) -> std::result::Result<bool, PartitionError> {
        if low > high {
            return Err(PartitionError::Range { low, high });
        }
        self.mark(low..=high)
    }
}

/// The number of partitions of `len` elements, each of the same number.
fn partition_count(len: usize, partitions: usize) -> Result<()> {
    let even = match partitions {
        0 => len == 0,
        p => len % p == 0,
    };
    match even {
        true => Ok(()),
        false => Err(PartitionError::Uneven { len, partitions }.into()),
    }
}

/// A partitioned send (`MPI_Psend_init`, MPI 4.1 §4.2) of a buffer lent to
/// the library for `'a`: [`PartitionedSend::start`] it, fill each
/// partition ([`PartitionedSend::partition_mut`]) and mark it ready, and
/// [`PartitionedSend::wait`]. It may be started again once waited for.
/// Dropping it while its message is under way waits for it, and
/// forgetting it leaves the message to its scope's end, as for any
/// [`Request`].
pub struct PartitionedSend<'a, Sc: Scope<'a> + Copy, T: Equivalence> {
    comm: SimpleCommunicator,
    channel: Channel,
    scope: Sc,
    /// The caller's buffer, borrowed mutably for `'a`: written only through
    /// `partition_mut`, which lends no partition marked ready, and none
    /// while the message is under way.
    buf: *mut T,
    len: usize,
    parts: SendPartitions,
    active: Option<Request<'a>>,
    _buf: PhantomData<&'a mut [T]>,
}

impl<'a, Sc: Scope<'a> + Copy, T: Equivalence> PartitionedSend<'a, Sc, T> {
    /// A send of `buf`, cut into `partitions` partitions of the same
    /// number of elements, to `to` with `tag` (at most
    /// [`PARTITIONED_TAG_UB`]). It matches the partitioned receive of the
    /// same rank and tag initialized in the same order (§4.2.2).
    pub fn init(
        scope: Sc,
        to: &Process<'_>,
        buf: &'a mut [T],
        partitions: usize,
        tag: Tag,
    ) -> Result<PartitionedSend<'a, Sc, T>> {
        partition_count(buf.len(), partitions)?;
        let comm = to.comm;
        comm.job_rank(to.rank)?;
        let channel = Channel::new(comm, to.rank, tag, true)?;
        Ok(PartitionedSend {
            comm: Channel::comm(comm),
            channel,
            scope,
            len: buf.len(),
            buf: buf.as_mut_ptr(),
            parts: SendPartitions::new(partitions),
            active: None,
            _buf: PhantomData,
        })
    }

    /// Partition `partition`'s elements, to fill: any partition while the
    /// send is not started or is waited for, and in a start those not yet
    /// marked ready (a ready one may be sent at any time, §4.3).
    pub fn partition_mut(&mut self, partition: usize) -> Result<&mut [T]> {
        let n = self.parts.partitions();
        check_partition(i64::try_from(partition).unwrap_or(i64::MAX), n)?;
        if self.active.is_some() || self.parts.is_ready(partition) {
            return Err(PartitionError::Ready { partition }.into());
        }
        let each = self.len / n;
        // SAFETY: `buf` is the caller's `len` elements, borrowed mutably for
        // 'a by `self`. No message is under way (checked above: the engine
        // reads the buffer only once every partition is ready, and then
        // `active` is set until it is waited for), and this partition is
        // not marked ready, so nothing reads these elements while the
        // returned borrow (of `self`) lives; partitions do not overlap.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.buf.add(partition * each), each) })
    }

    /// Its partitions.
    pub fn partitions(&self) -> usize {
        self.parts.partitions()
    }

    /// Start it (`MPI_Start`): no partition is ready yet. Refused while
    /// the last start is not waited for.
    pub fn start(&mut self) -> Result<()> {
        if self.active.is_some() {
            return Err(PartitionError::StillActive.into());
        }
        if self.parts.start()? {
            self.launch()?;
        }
        Ok(())
    }

    /// Mark `partition` ready (`MPI_Pready`).
    pub fn ready(&mut self, partition: usize) -> Result<()> {
        self.ready_list(&[partition])
    }

    /// Mark `low..=high` ready (`MPI_Pready_range`).
    pub fn ready_range(&mut self, low: usize, high: usize) -> Result<()> {
        let wide = |p: usize| i64::try_from(p).unwrap_or(i64::MAX);
        if self.parts.mark_range(wide(low), wide(high))? {
            self.launch()?;
        }
        Ok(())
    }

    /// Mark each of `partitions` ready (`MPI_Pready_list`): all, or none
    /// when one is refused.
    pub fn ready_list(&mut self, partitions: &[usize]) -> Result<()> {
        if self.parts.mark(partitions.iter().map(|&p| i64::try_from(p).unwrap_or(i64::MAX)))? {
            self.launch()?;
        }
        Ok(())
    }

    /// Every partition is ready: send the whole buffer.
    fn launch(&mut self) -> Result<()> {
        let dest = self.channel.peer();
        // SAFETY: `buf` is the caller's `len` elements of `T`, borrowed
        // mutably for 'a (held through `_buf`). Every partition is ready, so
        // `partition_mut` lends none of them until the request this makes
        // is waited for (`active`); if `self` is forgotten, the request is
        // registered with `scope`, whose end waits for it before 'a ends.
        // So the engine's reads never meet a write, nor outlive the borrow.
        let bytes: &'a [u8] =
            unsafe { std::slice::from_raw_parts(self.buf.cast::<u8>(), self.len * std::mem::size_of::<T>()) };
        let process = self.comm.process_at_rank(dest);
        let r = crate::comm::isend_on(&process, self.scope, bytes, self.channel.wire())?;
        self.active = Some(r);
        Ok(())
    }

    /// Wait for the message of this start to be sent (`MPI_Wait`). Every
    /// partition must be ready: nothing else could mark them while this
    /// waits, so a wait with some not ready is refused rather than hanging.
    pub fn wait(&mut self) -> Result<Status> {
        if self.parts.waiting() {
            return Err(PartitionError::NeverReady { call: "PartitionedSend::wait" }.into());
        }
        match self.active.take() {
            Some(r) => r.wait().map(|s| Status::new(self.channel.peer(), self.channel.tag(), s.bytes())),
            None => Ok(Status::empty()),
        }
    }

    /// Whether this start's message has been sent (`MPI_Test`): its status
    /// once it has, and the request is inactive again.
    pub fn test(&mut self) -> Result<Option<Status>> {
        if self.parts.waiting() {
            return Ok(None);
        }
        match self.active.take() {
            Some(r) => match r.test()? {
                Ok(s) => Ok(Some(Status::new(self.channel.peer(), self.channel.tag(), s.bytes()))),
                Err(r) => {
                    self.active = Some(r);
                    Ok(None)
                }
            },
            None => Ok(Some(Status::empty())),
        }
    }
}

/// A partitioned receive (`MPI_Precv_init`, MPI 4.1 §4.2) into a buffer
/// lent to the library for `'a`: [`PartitionedRecv::start`] it, ask
/// [`PartitionedRecv::arrived`], [`PartitionedRecv::wait`], then read the
/// data with [`PartitionedRecv::data`] until the next start.
pub struct PartitionedRecv<'a, Sc: Scope<'a> + Copy, T: Equivalence> {
    comm: SimpleCommunicator,
    channel: Channel,
    scope: Sc,
    /// The caller's buffer, borrowed mutably for `'a`: touched here only
    /// while no receive is under way (`active` and `arrived` are `None`).
    buf: *mut T,
    len: usize,
    partitions: usize,
    active: Option<Request<'a>>,
    /// A receive that ended in a test (`arrived`), not yet waited for.
    arrived: Option<Result<Status>>,
    _buf: PhantomData<&'a mut [T]>,
}

impl<'a, Sc: Scope<'a> + Copy, T: Equivalence> PartitionedRecv<'a, Sc, T> {
    /// A receive into `buf`, cut into `partitions` partitions of the same
    /// number of elements, from `from` with `tag` (at most
    /// [`PARTITIONED_TAG_UB`]).
    pub fn init(
        scope: Sc,
        from: &Process<'_>,
        buf: &'a mut [T],
        partitions: usize,
        tag: Tag,
    ) -> Result<PartitionedRecv<'a, Sc, T>> {
        partition_count(buf.len(), partitions)?;
        let comm = from.comm;
        comm.job_rank(from.rank)?;
        let channel = Channel::new(comm, from.rank, tag, false)?;
        Ok(PartitionedRecv {
            comm: Channel::comm(comm),
            channel,
            scope,
            len: buf.len(),
            buf: buf.as_mut_ptr(),
            partitions,
            active: None,
            arrived: None,
            _buf: PhantomData,
        })
    }

    /// Its partitions.
    pub fn partitions(&self) -> usize {
        self.partitions
    }

    /// Start it (`MPI_Start`). Refused while the last start is not waited
    /// for.
    pub fn start(&mut self) -> Result<()> {
        if self.active.is_some() || self.arrived.is_some() {
            return Err(PartitionError::StillActive.into());
        }
        let bytes = self.len * std::mem::size_of::<T>();
        // SAFETY: `buf` is the caller's `len` elements of `T`, borrowed
        // mutably for 'a (`init`'s argument, held through `_buf`), and no
        // receive is under way (checked above), so nothing else reads or
        // writes them now: this is the only live view. The request made
        // from it is either kept in `self.active` (dropping it waits) and
        // `data` refuses to read while it is, or, if `self` is forgotten,
        // registered with `scope`, whose end waits for it before 'a ends:
        // the engine's pointer never outlives the borrow.
        let out: &'a mut [u8] = unsafe { std::slice::from_raw_parts_mut(self.buf.cast::<u8>(), bytes) };
        let process = self.comm.process_at_rank(self.channel.peer());
        self.active = Some(crate::comm::irecv_on(&process, self.scope, out, self.channel.wire())?);
        Ok(())
    }

    /// Whether `partition` has arrived (`MPI_Parrived`): all of them have
    /// once the whole message has. An inactive receive's partitions have
    /// all arrived.
    pub fn arrived(&mut self, partition: usize) -> Result<bool> {
        check_partition(i64::try_from(partition).unwrap_or(i64::MAX), self.partitions)?;
        let Some(r) = self.active.take() else { return Ok(true) };
        match r.test() {
            Ok(Ok(s)) => {
                self.arrived = Some(Ok(s));
                Ok(true)
            }
            Ok(Err(r)) => {
                self.active = Some(r);
                Ok(false)
            }
            Err(e) => {
                self.arrived = Some(Err(e));
                Ok(true)
            }
        }
    }

    /// Wait for the whole message (`MPI_Wait`): its status names the
    /// program's tag.
    pub fn wait(&mut self) -> Result<Status> {
        let got = match (self.arrived.take(), self.active.take()) {
            (Some(done), _) => done,
            (None, Some(r)) => r.wait(),
            (None, None) => return Ok(Status::empty()),
        };
        got.map(|s| Status::new(self.channel.peer(), self.channel.tag(), s.bytes()))
    }

    /// The buffer, between a completed receive and the next start.
    pub fn data(&self) -> Result<&[T]> {
        if self.active.is_some() || self.arrived.is_some() {
            return Err(PartitionError::UnderWay.into());
        }
        // SAFETY: `buf` is the caller's `len` elements, borrowed mutably
        // for 'a by `self`, and no receive is under way (checked above): the
        // engine holds no pointer to them, and `&self` keeps `start` from
        // lending them again while this view lives.
        Ok(unsafe { std::slice::from_raw_parts(self.buf, self.len) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_send_goes_when_its_last_partition_is_ready_and_a_refused_call_marks_nothing() {
        let mut p = SendPartitions::new(3);
        assert_eq!(p.mark([0]), Err(PartitionError::NotStarted));
        assert_eq!(p.start(), Ok(false));
        assert!(p.waiting());
        assert_eq!(p.start(), Err(PartitionError::StillActive));
        assert_eq!(p.mark([2, 5]), Err(PartitionError::NoSuchPartition { partition: 5, partitions: 3 }));
        assert_eq!(p.mark([-1]), Err(PartitionError::NoSuchPartition { partition: -1, partitions: 3 }));
        assert_eq!(p.mark([1, 1]), Err(PartitionError::MarkedTwice { partition: 1 }));
        assert_eq!(p.mark_range(2, 1), Err(PartitionError::Range { low: 2, high: 1 }));
        // Nothing of the refused calls stuck: 1 and 2 are free.
        assert_eq!(p.mark_range(1, 2), Ok(false));
        assert_eq!(p.mark([2]), Err(PartitionError::MarkedTwice { partition: 2 }));
        assert_eq!(p.mark([0]), Ok(true));
        assert!(!p.waiting());
        assert_eq!(p.mark([0]), Err(PartitionError::NotStarted));
        // Started again: every partition is not ready.
        assert_eq!(p.start(), Ok(false));
        assert_eq!(p.mark(0..3), Ok(true));
    }

    #[test]
    fn a_send_of_no_partitions_goes_at_its_start() {
        let mut p = SendPartitions::new(0);
        assert_eq!(p.start(), Ok(true));
        assert!(!p.waiting());
        assert_eq!(p.start(), Ok(true));
    }

    #[test]
    fn the_partition_errors_have_the_classes_of_the_standard() {
        assert!(PartitionError::MarkedTwice { partition: 0 }.is_argument());
        assert!(PartitionError::Negative { partitions: -1 }.is_argument());
        assert!(!PartitionError::StillActive.is_argument());
        assert!(!PartitionError::FreeWhileWaiting.is_argument());
        assert_eq!(check_partition(2, 3), Ok(2));
        assert!(check_partition(3, 3).is_err());
    }

    #[test]
    fn buffers_cut_into_partitions_of_one_size() {
        assert!(partition_count(8, 4).is_ok());
        assert!(partition_count(0, 0).is_ok());
        assert!(partition_count(0, 3).is_ok());
        assert!(partition_count(5, 2).is_err());
        assert!(partition_count(1, 0).is_err());
    }
}
