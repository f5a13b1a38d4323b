//! Non-blocking duplication (`MPI_Comm_idup`, MPI 4.1 §7.4.2).
//!
//! A blocking duplicate agrees on a context id free at every member: the
//! largest of the members' next free ids. That needs every member's
//! answer before anyone can go on, so two ranks that start idups on
//! overlapping communicators in different orders, or that send to each
//! other before waiting, would wait for ever.
//!
//! An idup needs no agreement. The context ids from `DUP_BASE` (2^30) up are
//! shared out among the job's processes: process `p` of `n` owns the
//! blocks of four ids `DUP_BASE + 4 * (p + n * k)`, `k = 0, 1, ...`, and
//! hands them out in order as the *leader* of an idup (rank 0 of an
//! intracommunicator; rank 0 of the low group of an intercommunicator,
//! whose duplicate takes all four ids). No other process ever hands out a
//! leader's ids, and the blocking agreements stay below `DUP_BASE`, so the
//! leader's choice is free everywhere. The leader picks it at the call;
//! the others learn it from a broadcast that runs as a schedule, like any
//! non-blocking collective, over both groups of an intercommunicator.

use std::cell::RefCell;
use std::rc::Rc;

use crate::coll::exec::CollKind;
use crate::comm::{SimpleCommunicator, SELF_CTX};
use crate::error::ContextError;
use crate::staged::Staged;
use crate::{MpiError, Rank, Result, Tag};

use crate::context::DUP_BASE;

/// What an idup-like operation makes (a duplicate; a new communicator or
/// none), once its broadcast has completed.
type Made<T> = Rc<RefCell<Option<Result<T>>>>;

/// An `MPI_Comm_idup` under way: the broadcast of the new context id,
/// and the duplicate it makes when it completes.
pub struct Duplicating {
    staged: Staged,
    made: Made<SimpleCommunicator>,
}

impl Duplicating {
    /// Wait for the duplicate (`MPI_Wait` on the idup's request).
    pub fn wait(self) -> Result<SimpleCommunicator> {
        self.staged.wait()?;
        take(&self.made)
    }

    /// The duplicate if it is made, the operation back if not.
    pub fn test(self) -> Result<std::result::Result<SimpleCommunicator, Duplicating>> {
        match self.staged.test()? {
            Ok(_) => take(&self.made).map(Ok),
            Err(staged) => Ok(Err(Duplicating { staged, made: self.made })),
        }
    }

    /// The operation, for a request table, and the cell the duplicate
    /// appears in when the operation completes ([`DupCell::take`]).
    pub fn into_parts(self) -> (Staged, DupCell) {
        (self.staged, DupCell(self.made))
    }
}

/// Where an idup's duplicate appears once its operation has completed.
pub struct DupCell(Made<SimpleCommunicator>);

impl DupCell {
    /// The duplicate (or why it could not be made), once the operation
    /// has completed; `None` before.
    pub fn take(&self) -> Option<Result<SimpleCommunicator>> {
        self.0.borrow_mut().take()
    }
}

/// A communicator being made from a group without an agreement
/// ([`SimpleCommunicator::immediate_create`],
/// [`SimpleCommunicator::immediate_create_from_ranks`]): the broadcast of
/// its context id, and the communicator (`None` on a process outside the
/// group) once it has completed.
pub struct Creating {
    staged: Staged,
    made: Made<Option<SimpleCommunicator>>,
}

impl Creating {
    /// Wait for the communicator.
    pub fn wait(self) -> Result<Option<SimpleCommunicator>> {
        self.staged.wait()?;
        take(&self.made)
    }

    /// The operation, for a request table, and the cell the communicator
    /// appears in when it completes ([`CreateCell::take`]).
    pub fn into_parts(self) -> (Staged, CreateCell) {
        (self.staged, CreateCell(self.made))
    }
}

/// Where a [`Creating`]'s communicator appears once its operation has
/// completed.
pub struct CreateCell(Made<Option<SimpleCommunicator>>);

impl CreateCell {
    /// The communicator (`None` outside the group) or why it could not be
    /// made, once the operation has completed; `None` before.
    pub fn take(&self) -> Option<Result<Option<SimpleCommunicator>>> {
        self.0.borrow_mut().take()
    }
}

/// The first half of a split under way
/// ([`SimpleCommunicator::immediate_split`]): the gather of every member's
/// color and key.
pub struct SplitVotes {
    staged: Staged,
    made: Made<(SimpleCommunicator, Vec<Rank>, Option<i32>)>,
}

impl SplitVotes {
    /// The gather, for a request table, and what makes the caller's part
    /// once it has completed.
    pub fn into_parts(self) -> (Staged, SplitCell) {
        (self.staged, SplitCell(self.made))
    }
}

/// Where a split's gathered colors appear once the gather has completed.
pub struct SplitCell(Made<(SimpleCommunicator, Vec<Rank>, Option<i32>)>);

impl SplitCell {
    /// The second half of the split, once the gather has completed: the
    /// communicator of the caller's color being made (`None` from it for
    /// `MPI_UNDEFINED`). Every member of the parent calls it, in the same
    /// order as its other idup-like calls on the parent.
    pub fn create(&self) -> Result<Creating> {
        let (parent, ranks, wrong) = take(&self.0)?;
        parent.immediate_create_or_refuse(&ranks, wrong)
    }
}

fn take<T>(made: &Made<T>) -> Result<T> {
    made.borrow_mut().take().unwrap_or_else(|| {
        Err(MpiError::Internal { what: "a communicator's broadcast completed without its communicator".into() })
    })
}

/// Who takes part in a leader's broadcast, and how it is told apart.
struct Broadcast {
    /// The members' job ranks, the leader first.
    members: Vec<u32>,
    /// This process's place among them.
    me: u32,
    /// Its place in its communicator's order ([`CollKind::Dup`]'s own
    /// numbering, or the tag of a group's call, [`CollKind::CreateGroup`]).
    seq: u32,
    kind: CollKind,
    /// The call, for messages.
    call: &'static str,
    /// The tag of a group's call, carried with the id and checked.
    tag: Option<Tag>,
}

impl SimpleCommunicator {
    /// Start duplicating this communicator without waiting for the other
    /// members (`MPI_Comm_idup`, §7.4.2): the duplicate has the same
    /// group (both groups, for an intercommunicator), its topology, and
    /// new contexts. Every member calls it, in the same order as its
    /// other collectives on this communicator.
    pub fn immediate_duplicate(&self) -> Result<Duplicating> {
        // Both groups of an intercommunicator, the low one first: the
        // leader is its rank 0.
        let (members, me) = match &self.inter {
            None => (self.group.members.clone(), self.rank as u32),
            Some(i) => {
                let (low, high) = if i.low {
                    (&self.group.members, &i.remote.members)
                } else {
                    (&i.remote.members, &self.group.members)
                };
                let at = if i.low { 0 } else { low.len() as u32 };
                (low.iter().chain(high.iter()).copied().collect::<Vec<u32>>(), at + self.rank as u32)
            }
        };
        let seq = self.next_dup_seq();
        let parent = self.clone();
        let b = Broadcast { members, me, seq, kind: CollKind::Dup, call: "MPI_Comm_idup", tag: None };
        let (staged, made) = self.leader_broadcast(b, move |ctx| Ok(parent.dup_on(ctx)))?;
        Ok(Duplicating { staged, made })
    }

    /// Start making a communicator of the processes at `ranks` of this
    /// intracommunicator (`MPI_Comm_create`, §7.4.2) without an agreement:
    /// the context id comes from this communicator's rank 0, as an idup's
    /// does, so that threads making communicators from different parents
    /// in different orders on different processes never wait for each
    /// other (`MPI_THREAD_MULTIPLE`). Every member calls it, in the same
    /// order as its idups on this communicator, with the ranks of its own
    /// group: groups may differ between processes if they are disjoint
    /// (they then share the context, which no message can cross). A
    /// process not in `ranks` gets `None`.
    pub fn immediate_create(&self, ranks: &[Rank]) -> Result<Creating> {
        self.immediate_create_or_refuse(ranks, None)
    }

    /// [`Self::immediate_create`], whose communicator is, once made, the
    /// refusal of split color `wrong` if there is one: a member with a
    /// negative color takes part as `MPI_UNDEFINED` to the end, so that the
    /// others' parts are made, and fails then.
    fn immediate_create_or_refuse(&self, ranks: &[Rank], wrong: Option<i32>) -> Result<Creating> {
        self.intra_only("immediate_create")?;
        let members = self.checked_members(ranks)?;
        let inside = ranks.contains(&self.rank);
        let seq = self.next_dup_seq();
        let parent = self.clone();
        let b = Broadcast {
            members: self.group.members.clone(),
            me: self.rank as u32,
            seq,
            kind: CollKind::Dup,
            call: "MPI_Comm_create",
            tag: None,
        };
        let (staged, made) = self.leader_broadcast(b, move |ctx| match wrong {
            Some(color) => Err(crate::error::ArgError::SplitColor { color }.into()),
            None => Ok(inside.then(|| parent.make_child(members, ctx))),
        })?;
        Ok(Creating { staged, made })
    }

    /// Start making a communicator of the processes at `ranks` of this
    /// one, by those processes alone (`MPI_Comm_create_group`, §7.4.2),
    /// without an agreement: `ranks[0]` hands out the context id and
    /// broadcasts it, with `tag`, to the others. Calls under way at once
    /// on overlapping groups must have tags that differ in their low 14
    /// bits (the standard asks only that they differ); a member that
    /// receives another call's id says so instead of using it. `None` on
    /// a process not in `ranks` (which need not call).
    pub fn immediate_create_from_ranks(&self, ranks: &[Rank], tag: Tag) -> Result<Option<Creating>> {
        self.intra_only("immediate_create_from_ranks")?;
        let members = self.checked_members(ranks)?;
        let Some(me) = ranks.iter().position(|&r| r == self.rank) else {
            return Ok(None);
        };
        crate::comm::check_tag(tag)?;
        let parent = self.clone();
        let b = Broadcast {
            members: members.clone(),
            me: me as u32,
            seq: tag as u32,
            kind: CollKind::CreateGroup,
            call: "MPI_Comm_create_group",
            tag: Some(tag),
        };
        let (staged, made) = self.leader_broadcast(b, move |ctx| Ok(Some(parent.make_child(members, ctx))))?;
        Ok(Some(Creating { staged, made }))
    }

    /// Start splitting this intracommunicator by `color`, ordered by
    /// `key` then rank (`MPI_Comm_split`, §7.4.2), without an agreement
    /// that would hold every member until all have answered: first every
    /// member's (color, key) is gathered, as a non-blocking allgather in
    /// the order of this communicator's collectives; then
    /// [`SplitVotes::create`] makes the caller's part as
    /// [`Self::immediate_create`] does, every color on the context id of
    /// this communicator's rank 0 (the groups are disjoint, so they may
    /// share it). Under `MPI_THREAD_MULTIPLE` threads splitting different
    /// communicators in different orders on different processes then
    /// never wait for each other. A negative color takes part as no group
    /// and is refused when the communicator would be made.
    pub fn immediate_split(&self, color: crate::comm::Color, key: i32) -> Result<SplitVotes> {
        self.intra_only("immediate_split")?;
        let (color, wrong) = color.vote();
        let (n, r) = (self.group.members.len() as u32, self.rank as u32);
        let mut mine = color.to_le_bytes().to_vec();
        mine.extend(key.to_le_bytes());
        let blocks: Vec<(u64, u64)> = (0..u64::from(n)).map(|i| (8 * i, 8)).collect();
        let sched = crate::coll::algo::allgather_ring(n, r, &blocks);
        let x = crate::coll::start(self, CollKind::Allgather, sched, mine, vec![0; 8 * n as usize], None)?;
        let parent = self.clone();
        let (staged, made) = self.kept(x, 8 * n as usize, move |table| {
            // The members of this color, by (key, rank).
            let mut group: Vec<(i32, Rank)> = Vec::new();
            for (at, e) in table.chunks_exact(8).enumerate() {
                let c = i32::from_le_bytes([e[0], e[1], e[2], e[3]]);
                if c == color && color >= 0 {
                    group.push((i32::from_le_bytes([e[4], e[5], e[6], e[7]]), at as Rank));
                }
            }
            group.sort_unstable();
            Ok((parent, group.into_iter().map(|g| g.1).collect(), wrong))
        });
        Ok(SplitVotes { staged, made })
    }

    /// The job ranks of `ranks`, which must be distinct ranks of this
    /// communicator.
    fn checked_members(&self, ranks: &[Rank]) -> Result<Vec<u32>> {
        let mut seen = std::collections::HashSet::new();
        let mut members = Vec::with_capacity(ranks.len());
        for &r in ranks {
            members.push(self.job_rank(r)?);
            if !seen.insert(r) {
                return Err(MpiError::Ranks(crate::error::RankError::Twice { rank: r }));
            }
        }
        Ok(members)
    }

    /// The next number of this communicator's idup-like operations.
    fn next_dup_seq(&self) -> u32 {
        let seq = self.group.dup_seq.get();
        self.group.dup_seq.set(seq.wrapping_add(1));
        seq
    }

    /// The leader (`b.members[0]`) hands out the next context id of its
    /// own share and a binomial broadcast, run as a schedule, tells the
    /// other members; `make` builds the result from the id once it has
    /// come and been checked.
    fn leader_broadcast<T: 'static>(
        &self,
        b: Broadcast,
        make: impl FnOnce(u32) -> Result<T> + 'static,
    ) -> Result<(Staged, Made<T>)> {
        let n = b.members.len() as u32;
        let leader = b.members[0];
        let job = self.shared.borrow_mut().engine()?.size();
        // The id, and the tag of a group's call (0 otherwise).
        let mut recv = vec![0u8; 8];
        if b.me == 0 {
            let mut sh = self.shared.borrow_mut();
            let k = sh.next_dup;
            let ctx = u64::from(DUP_BASE) + 4 * (u64::from(leader) + u64::from(job) * u64::from(k));
            if ctx + 8 > u64::from(SELF_CTX) {
                return Err(ContextError::LeaderExhausted { call: b.call.to_string(), leader, given: k }.into());
            }
            sh.next_dup = k + 1;
            recv[..4].copy_from_slice(&(ctx as u32).to_le_bytes());
            recv[4..].copy_from_slice(&b.tag.unwrap_or(0).to_le_bytes());
        }
        let sched = crate::coll::algo::bcast_binomial(n, b.me, 0, 8);
        let x = crate::coll::launch(
            self,
            b.kind,
            crate::coll::exec::Seq::Started(b.seq),
            b.members,
            sched,
            Vec::new(),
            recv,
            None,
        )?;
        let (call, tag) = (b.call, b.tag);
        Ok(self.kept(x, 8, move |got| {
            let word = |at: usize| [got[at], got[at + 1], got[at + 2], got[at + 3]];
            let ctx = u32::from_le_bytes(word(0));
            let sent = i32::from_le_bytes(word(4));
            check_handed(call, ctx, leader, job).and_then(|()| match tag {
                Some(t) if t != sent => {
                    Err(ContextError::OtherCall { call: call.to_string(), leader, sent, tag: t }.into())
                }
                _ => make(ctx),
            })
        }))
    }

    /// Collective `x` as an operation whose `len` result bytes land in a
    /// vector the operation keeps, and the cell `then` fills from them at
    /// its completion.
    fn kept<T: 'static>(
        &self,
        x: crate::context::Locked<crate::coll::exec::Exec>,
        len: usize,
        then: impl FnOnce(&[u8]) -> Result<T> + 'static,
    ) -> (Staged, Made<T>) {
        let mut hold = vec![0u8; len];
        // SAFETY: `hold`'s heap bytes do not move when the vector does; the
        // `Staged` keeps the vector (in its stage, dropped after the
        // request and after `then` has run) until the operation completes,
        // and nothing else refers to it.
        let out: &'static mut [u8] = unsafe { std::slice::from_raw_parts_mut(hold.as_mut_ptr(), len) };
        let at = hold.as_ptr();
        let request = crate::coll::collective_request(self.shared.clone(), x, Some(out), self.group.clone());
        let made: Made<T> = Rc::new(RefCell::new(None));
        let cell = made.clone();
        let mut staged = Staged::keeping(request, vec![hold], None);
        staged.stage.then = Some(Box::new(move || {
            // SAFETY: as for `out`: `at` is the held vector's `len` bytes,
            // alive until after this runs, written by the completion that
            // runs before it; no `&mut` to them is used any more.
            let got = unsafe { std::slice::from_raw_parts(at, len) };
            *cell.borrow_mut() = Some(then(got));
        }));
        (staged, made)
    }

    /// The duplicate on context `ctx`.
    fn dup_on(&self, ctx: u32) -> SimpleCommunicator {
        let c = match &self.inter {
            None => {
                let mut c = self.make_child(self.group.members.clone(), ctx);
                c.topo = self.topo.clone();
                c
            }
            Some(i) => self.inter_from(ctx, self.group.members.clone(), i.remote.members.clone(), i.low),
        };
        self.group.attrs.copy_into(&c.group.attrs);
        c
    }
}

/// Context `ctx` from `leader` must be one it may hand out: checked, since
/// a corrupt or forged message could make it anything.
fn check_handed(call: &str, ctx: u32, leader: u32, job: u32) -> Result<()> {
    let block = ctx.checked_sub(DUP_BASE).map(|d| (d % 4, d / 4));
    if !matches!(block, Some((0, b)) if b % job == leader) || ctx > SELF_CTX - 8 {
        return Err(ContextError::NotTheLeaders { call: call.to_string(), ctx, leader }.into());
    }
    Ok(())
}
