//! Communicators, processes and point-to-point communication (MPI 4.1
//! chapters 3 and 7), named as in the `mpi` crate (rsmpi).

use std::rc::Rc;

use adi::{Source as AdiSource, TagSel};

use crate::context::{charge_call, charge_request, Shared};
use crate::datatype::{Buffer, BufferMut, Equivalence};
use crate::error::{MpiError, Result};
use crate::request::{Request, Scope, Target};
use crate::{Rank, Tag, PROC_NULL, TAG_UB};

mod p2p;
pub mod probe;
pub use p2p::*;

/// Tags the library uses on collective contexts.
mod coll_tag {
    pub const GATHER: i32 = 2;
    pub const BCAST: i32 = 3;
}

pub use crate::status::Status;

pub(crate) use crate::members::Group;

/// A communicator: a group of processes with its own context ids, so its
/// messages never match another communicator's (MPI 4.1 §7.1).
#[derive(Clone)]
pub struct SimpleCommunicator {
    pub(crate) shared: Shared,
    /// The local group: this process and its peers (of an intracommunicator).
    pub(crate) group: Rc<Group>,
    /// Point-to-point context; `ctx + 1` is the collective context.
    pub(crate) ctx: u32,
    pub(crate) rank: Rank,
    /// An intercommunicator's remote group and local communicator
    /// (MPI 4.1 §7.6); `None` for an intracommunicator.
    pub(crate) inter: Option<Rc<Inter>>,
    /// Its process topology (MPI 4.1 chapter 8), if it has one.
    pub(crate) topo: Option<Rc<crate::topology::Topology>>,
}

/// An intercommunicator's other group and local communicator (its
/// calls are in `crate::inter`).
pub(crate) struct Inter {
    /// The remote group, whose ranks sends and receives name.
    pub(crate) remote: Rc<Group>,
    /// The local group as an intracommunicator of its own.
    pub(crate) local: SimpleCommunicator,
    /// This side is the low group: it sends first when the groups exchange.
    pub(crate) low: bool,
}

/// The point-to-point context of `MPI_COMM_SELF` (`+ 1`: its collectives).
/// Splits allocate context ids upwards from 2, two at a time.
pub(crate) const SELF_CTX: u32 = u32::MAX - 1;

/// Color for [`Communicator::split_by_color`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Color {
    /// Join the group of processes with the same value (must be ≥ 0).
    With(i32),
    /// Join no group (`MPI_UNDEFINED`): the call returns `None`.
    Undefined,
}

impl Color {
    /// Shorthand for `Color::With`.
    pub fn with_value(v: i32) -> Color {
        Color::With(v)
    }

    /// What a split's member contributes (`-1` for no group), and the
    /// negative color it was given, if any. A member with a negative color
    /// still takes part, as `MPI_UNDEFINED`, and reports its error after:
    /// the others would otherwise wait for it for ever (§7.4.2).
    pub(crate) fn vote(self) -> (i32, Option<i32>) {
        match self {
            Color::With(v) if v < 0 => (-1, Some(v)),
            Color::With(v) => (v, None),
            Color::Undefined => (-1, None),
        }
    }
}

/// Operations every communicator offers.
pub trait Communicator {
    /// This process's rank.
    fn rank(&self) -> Rank;
    /// Number of processes.
    fn size(&self) -> Rank;
    /// A process of this communicator, for sends and receives.
    /// [`crate::PROC_NULL`] is the null process (MPI 4.1 §3.10): a send
    /// to it or a receive from it completes at once and moves nothing
    /// (a receive reports source `PROC_NULL`, any tag, no bytes), a probe
    /// finds that status, and nothing is charged to simulated time. Its
    /// matched probe (`probe::mprobe`) and partitioned requests
    /// (`crate::partitioned`) are refused, as an invalid rank (the C
    /// library's `MPI_PROC_NULL` takes both).
    fn process_at_rank(&self, r: Rank) -> Process<'_>;
    /// Any process, for wildcard receives and probes.
    fn any_process(&self) -> AnyProcess<'_>;
    /// Block until every process has called it (`MPI_Barrier`).
    fn barrier(&self) -> Result<()>;
    /// A communicator with the same processes and a new context (`MPI_Comm_dup`).
    fn duplicate(&self) -> Result<SimpleCommunicator>;
    /// Split by color, ordering by parent rank (`MPI_Comm_split`).
    fn split_by_color(&self, color: Color) -> Result<Option<SimpleCommunicator>>;
    /// Split by color, ordering by `(key, parent rank)`.
    fn split_by_color_with_key(&self, color: Color, key: i32) -> Result<Option<SimpleCommunicator>>;
}

/// Attribute caching on a communicator (MPI 4.1 §7.7.2): values of any
/// `Clone` type under typed keyvals ([`crate::attr::Keyval`]). A duplicate
/// gets clones of the values whose keyvals say so; the values go when the
/// communicator (all its handles) does.
impl SimpleCommunicator {
    /// Cache `value` under `keyval` (`MPI_Comm_set_attr`): the value it
    /// replaces, if any.
    pub fn set_attr<T: Clone + 'static>(&self, keyval: &crate::attr::Keyval<T>, value: T) -> Option<T> {
        self.group.attrs.set(keyval, value)
    }

    /// A clone of the value cached under `keyval` (`MPI_Comm_get_attr`).
    pub fn attr<T: Clone + 'static>(&self, keyval: &crate::attr::Keyval<T>) -> Option<T> {
        self.group.attrs.get(keyval)
    }

    /// Take the value cached under `keyval` off the communicator
    /// (`MPI_Comm_delete_attr`).
    pub fn delete_attr<T: Clone + 'static>(&self, keyval: &crate::attr::Keyval<T>) -> Option<T> {
        self.group.attrs.delete(keyval)
    }
}

impl SimpleCommunicator {
    /// `MPI_COMM_WORLD`: the job ranks `members` (all of the job, or the
    /// processes of one spawn, §11.8.2), this process job rank `me`.
    pub(crate) fn world(shared: Shared, me: u32, members: std::ops::Range<u32>) -> SimpleCommunicator {
        let rank = me - members.start;
        SimpleCommunicator {
            shared,
            group: Rc::new(Group::new(members.collect())),
            ctx: 0,
            rank: rank as Rank,
            inter: None,
            topo: None,
        }
    }

    /// The job rank of the process a send or receive names: a member of
    /// this group, or of the remote group of an intercommunicator (§7.6).
    pub(crate) fn job_rank(&self, r: Rank) -> Result<u32> {
        let peers = &self.peers().members;
        let bad = || MpiError::InvalidRank { rank: r, size: peers.len() as Rank };
        peers.get(usize::try_from(r).map_err(|_| bad())?).copied().ok_or_else(bad)
    }

    /// The group point-to-point ranks refer to: the remote group of an
    /// intercommunicator, else this one.
    pub(crate) fn peers(&self) -> &Rc<Group> {
        match &self.inter {
            Some(i) => &i.remote,
            None => &self.group,
        }
    }

    fn status(&self, st: adi::Status) -> Status {
        self.peers().status(st)
    }

    pub(crate) fn shared(&self) -> &Shared {
        &self.shared
    }

    pub(crate) fn group(&self) -> Rc<Group> {
        self.group.clone()
    }

    /// The job (`MPI_COMM_WORLD`) rank of each member, in communicator
    /// order: its process group (`MPI_Comm_group`, MPI 4.1 §7.3.2).
    pub fn members(&self) -> &[u32] {
        &self.group.members
    }

    /// The point-to-point context.
    pub(crate) fn ctx(&self) -> u32 {
        self.ctx
    }

    /// The collective context (`ctx + 1`).
    pub(crate) fn coll_ctx(&self) -> u32 {
        self.ctx + 1
    }

    // ---- internal collectives on the collective context -------------------------

    pub(crate) fn coll_send(&self, to: Rank, tag: i32, data: &[u8]) -> Result<()> {
        let dest = self.job_rank(to)?;
        Ok(self.shared.borrow_mut().engine()?.send(dest, tag, self.ctx + 1, data, false)?)
    }

    pub(crate) fn coll_recv(&self, from: Rank, tag: i32) -> Result<Vec<u8>> {
        let src = self.job_rank(from)?;
        let (_, d) =
            self.shared.borrow_mut().engine()?.recv(AdiSource::Rank(src), TagSel::Tag(tag), self.ctx + 1, u64::MAX)?;
        Ok(d)
    }

    /// Everyone's `mine`, in rank order (linear gather to 0, then broadcast).
    pub(crate) fn allgather_bytes(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        let n = self.size();
        let table: Vec<Vec<u8>> = if self.rank == 0 {
            let mut t = vec![mine.to_vec()];
            for r in 1..n {
                t.push(self.coll_recv(r, coll_tag::GATHER)?);
            }
            let flat: Vec<u8> =
                t.iter().flat_map(|e| (e.len() as u32).to_le_bytes().into_iter().chain(e.iter().copied())).collect();
            for r in 1..n {
                self.coll_send(r, coll_tag::BCAST, &flat)?;
            }
            t
        } else {
            self.coll_send(0, coll_tag::GATHER, mine)?;
            let flat = self.coll_recv(0, coll_tag::BCAST)?;
            let mut t = Vec::new();
            let mut at = 0;
            while at + 4 <= flat.len() {
                let l = u32::from_le_bytes([flat[at], flat[at + 1], flat[at + 2], flat[at + 3]]) as usize;
                t.push(
                    flat.get(at + 4..at + 4 + l).ok_or(MpiError::Corrupt { what: "corrupt gather table" })?.to_vec(),
                );
                at += 4 + l;
            }
            t
        };
        if table.len() != n as usize {
            return Err(MpiError::Corrupt { what: "gather table has the wrong number of entries" });
        }
        Ok(table)
    }

    /// A communicator of the processes at `ranks` of this one, in that
    /// order, made by those processes alone: each calls it with the same
    /// `ranks` and `tag`, and the others need not call it at all
    /// (`MPI_Comm_create_group`, MPI 4.1 §7.4.2). `None` on a process not
    /// in `ranks`.
    ///
    /// The first process collects everyone's next free context id and
    /// hands out the largest, so that the new context is unused by every
    /// member, as a split does over the whole communicator.
    pub fn create_from_ranks(&self, ranks: &[Rank], tag: Tag) -> Result<Option<SimpleCommunicator>> {
        self.intra_only("create_from_ranks")?;
        let mut seen = std::collections::HashSet::new();
        for &r in ranks {
            self.job_rank(r)?;
            if !seen.insert(r) {
                return Err(MpiError::Ranks(crate::error::RankError::Twice { rank: r }));
            }
        }
        let Some(me) = ranks.iter().position(|&r| r == self.rank) else {
            return Ok(None);
        };
        check_tag(tag)?;
        // Tags below the collective schedules' (1 << 30) and above the
        // split's (2, 3), one per user tag.
        let t = (1 << 29) | (tag & 0x0FFF_FFFF);
        let next = self.shared.borrow().next_ctx;
        let word = |d: Vec<u8>| -> Result<u32> {
            let b: [u8; 4] = d.try_into().map_err(|_| MpiError::Corrupt { what: "corrupt context agreement" })?;
            Ok(u32::from_le_bytes(b))
        };
        let ctx = if me == 0 {
            let mut ctx = next;
            for &r in &ranks[1..] {
                ctx = ctx.max(word(self.coll_recv(r, t)?)?);
            }
            for &r in &ranks[1..] {
                self.coll_send(r, t, &ctx.to_le_bytes())?;
            }
            ctx
        } else {
            self.coll_send(ranks[0], t, &next.to_le_bytes())?;
            word(self.coll_recv(ranks[0], t)?)?
        };
        crate::context::check_agreed(ctx, 2)?;
        self.shared.borrow_mut().next_ctx = ctx + 2;
        let members = ranks.iter().map(|&r| self.group.members[r as usize]).collect();
        Ok(Some(self.make_child(members, ctx)))
    }

    /// This process alone (`MPI_COMM_SELF`), on context ids that no split
    /// hands out ([`SELF_CTX`]): made locally, with no collective call.
    pub(crate) fn only_me(&self) -> SimpleCommunicator {
        let me = self.group.members[self.rank as usize];
        self.make_child(vec![me], SELF_CTX)
    }

    pub(crate) fn make_child(&self, members: Vec<u32>, ctx: u32) -> SimpleCommunicator {
        let group = Group::new(members);
        let me = self.group.members[self.rank as usize];
        let rank = group.comm_rank(me);
        SimpleCommunicator { shared: self.shared.clone(), group: Rc::new(group), ctx, rank, inter: None, topo: None }
    }
}

pub(crate) fn le_i32(b: &[u8], at: usize) -> i32 {
    i32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
